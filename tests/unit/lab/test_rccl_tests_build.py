# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's stand-in rccl-tests (lab/build/sources/rccl-tests): labctl makes it a git repository with the simulated
GPU layer inside; its Makefile, run as a builder runs rccl-tests' own, refuses what a real build refuses (no hipcc, no
RCCL header or library, MPI=1 without mpi.h), else writes the binaries into $(BUILDDIR) and a record of what it saw.
Its all_reduce_perf, moved anywhere, prints validsim's report for the profile of the host. The ROCm tree it builds
against is the stub packages hipcc, rccl and rccl-dev, staged under tmp_path."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import shutil
import socket
import subprocess
import zipfile

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils import _rccl_tests as rccl_tests

# lab/stubs/ and lab/ (conftest.py)
import labhost
import validsim
from labctl import buildstage, cli, common, packages

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PROFILES = os.path.join(ROOT, 'lab', 'profiles')
ARCHS = '--offload-arch=gfx942 --offload-arch=gfx90a'
ALL_REDUCE_ARGS = ['-b', '8', '-e', '8G', '-f', '2', '-g', '2']


@pytest.fixture(scope='module')
def served(tmp_path_factory):
    """labctl's rccl-tests.git in a temporary .lab; returns (bare repository, first commit)."""
    lab = tmp_path_factory.mktemp('lab')
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(common, 'LAB', str(lab))
        patch.setattr(common, 'LOG_PATH', str(lab / 'labctl.log'))
        patch.setattr(buildstage, 'LAB', str(lab))
        patch.setattr(buildstage, 'REPO', str(lab / 'repo'))
        head = buildstage.create('rccl-tests')
    return str(lab / 'repo' / 'sources' / 'rccl-tests.git'), head


@pytest.fixture
def checkout(served, tmp_path):
    work = str(tmp_path / 'rccl-tests')
    subprocess.check_call(['git', 'clone', '--quiet', served[0], work])
    return work


@pytest.fixture(scope='module')
def staged_rocm(tmp_path_factory):
    """The stub packages hipcc, rccl and rccl-dev of ROCm 7.1.1 staged into one root."""
    root = tmp_path_factory.mktemp('rocm-root')
    spec = packages.repo_spec()
    versions = packages.package_versions(spec, '7.1.1', 'noble')
    for name in ('hipcc', 'rccl', 'rccl-dev'):
        packages.stage_package(spec, name, '7.1.1', 'noble', versions, str(root))
    return str(root / 'opt' / 'rocm-7.1.1')


@pytest.fixture
def rocm(staged_rocm, tmp_path):
    """A copy of the staged ROCm tree (a test may remove parts of it) and a fake MPI_HOME with include/mpi.h."""
    path = str(tmp_path / 'rocm-7.1.1')
    shutil.copytree(staged_rocm, path, symlinks=True)
    mpi_home = tmp_path / 'openmpi'
    (mpi_home / 'include').mkdir(parents=True)
    (mpi_home / 'include' / 'mpi.h').write_text('/* stand-in of Open MPI\'s header */\n')
    return path, str(mpi_home)


def make(checkout, tmp_path, *variables, **env):
    environ = dict((key, value) for key, value in os.environ.items()
                   if key not in ('ROCM_PATH', 'MPI', 'MPI_HOME', 'NCCL_HOME', 'CUSTOM_RCCL_LIB', 'BUILDDIR', 'HIPCC',
                                  'HIPCC_COMPILE_FLAGS_APPEND', 'MAKEFLAGS', 'MFLAGS'))
    environ['LLMFLEET_LAB_BUILDS_LOG'] = str(tmp_path / 'builds.log')
    environ.update(env)
    return subprocess.run(['make', '-j', '4'] + list(variables), cwd=checkout, env=environ, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)


def production(rocm_path, mpi_home):
    """The collection's invocation (MPI_HOME and NCCL_HOME as on a Debian 12 builder, here the staged trees)."""
    return ['MPI=1', 'MPI_HOME=%s' % mpi_home, 'NCCL_HOME=%s' % rocm_path, 'ROCM_PATH=%s' % rocm_path]


def run_tool(path, tmp_path, profile, args):
    sysroot = tmp_path / 'sys' / 'module' / 'amdgpu'
    sysroot.mkdir(parents=True, exist_ok=True)
    (sysroot / 'initstate').write_text('live\n')
    (sysroot / 'version').write_text('6.16.6\n')
    (tmp_path / 'kfd').write_text('')
    env = dict((key, value) for key, value in os.environ.items() if key != 'PYTHONPATH')
    env.update(LLMFLEET_LAB_GPU_PROFILE=os.path.join(PROFILES, profile + '.json'), LLMFLEET_LAB_SYSROOT=str(tmp_path / 'sys'),
               LLMFLEET_LAB_KFD=str(tmp_path / 'kfd'), LLMFLEET_LAB_FAULTS=str(tmp_path / 'faults'))
    return subprocess.run([path] + args, cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)


def without_pids(text):
    return re.sub(r'Pid +\d+', 'Pid N', text)


def test_labctl_serves_rccl_tests_with_the_stubs_inside(served, checkout):
    assert 'rccl-tests' in buildstage.COMPONENTS
    rels = [rel for rel, _path in buildstage._tree_files('rccl-tests')]
    assert rels == ['Makefile', 'fake_build.py', 'lab_build.py', 'stubs/gpusim.py', 'stubs/labhost.py', 'stubs/validsim.py']
    for name in ('gpusim.py', 'labhost.py', 'validsim.py'):
        with open(os.path.join(ROOT, 'lab', 'stubs', name), 'rb') as handle:
            assert open(os.path.join(checkout, 'stubs', name), 'rb').read() == handle.read(), 'copied from lab/stubs/'
    assert not os.path.exists(os.path.join(ROOT, 'lab', 'build', 'sources', 'rccl-tests', 'stubs')), 'no second copy in git'
    head = subprocess.check_output(['git', '-C', checkout, 'rev-parse', 'HEAD'], universal_newlines=True).strip()
    assert head == served[1]


def test_the_recipe_hash_covers_the_bundled_stubs(tmp_path, monkeypatch):
    before = buildstage.recipe_hash()
    stubs = tmp_path / 'lab'
    shutil.copytree(os.path.join(ROOT, 'lab', 'stubs'), str(stubs / 'stubs'))
    with open(str(stubs / 'stubs' / 'validsim.py'), 'a') as handle:
        handle.write('# changed\n')
    monkeypatch.setattr(buildstage, 'LAB_SRC', str(stubs))
    assert buildstage.recipe_hash() != before


def test_make_builds_every_binary_and_all_reduce_perf_prints_validsims_report(checkout, rocm, tmp_path, served):
    rocm_path, mpi_home = rocm
    proc = make(checkout, tmp_path, *production(rocm_path, mpi_home), HIPCC_COMPILE_FLAGS_APPEND=ARCHS)
    assert proc.returncode == 0, proc.stderr
    build = os.path.join(checkout, 'build')
    names = ['all_reduce_perf', 'all_gather_perf', 'broadcast_perf', 'reduce_scatter_perf', 'reduce_perf', 'alltoall_perf',
             'scatter_perf', 'gather_perf', 'sendrecv_perf', 'alltoallv_perf']
    assert sorted(os.listdir(build)) == sorted(names + ['_llmfleet_build.json'])
    for name in names:
        path = os.path.join(build, name)
        assert os.access(path, os.X_OK)
        with open(path, 'rb') as handle:
            assert handle.readline() == b'#!/usr/bin/python3\n'
        assert sorted(zipfile.ZipFile(path).namelist()) == ['__main__.py', 'gpusim.py', 'labhost.py', 'validsim.py']

    # Installed elsewhere (as the collection unpacks it) with the checkout gone, it still runs.
    key_bin = tmp_path / 'opt' / 'rccl-tests' / 'key' / 'bin'
    shutil.copytree(build, str(key_bin))
    shutil.rmtree(checkout)
    for profile in ('mi300x-2', 'mi300x-8', 'mi250x-4'):
        count = len(validsim.tested_gpus(labhost.State(profile=json.load(open(os.path.join(PROFILES, profile + '.json'))),
                                                       driver='6.16.6')))
        args = ['-b', '8', '-e', '8G', '-f', '2', '-g', str(count)]
        proc = run_tool(str(key_bin / 'all_reduce_perf'), tmp_path, profile, args)
        assert proc.returncode == 0 and proc.stderr == '', proc.stderr
        with open(os.path.join(PROFILES, profile + '.json')) as handle:
            state = labhost.State(profile=json.load(handle), driver='6.16.6', rocm_version='7.1.1')
        out, _err, _rc = validsim.render_all_reduce(state, args, host=socket.gethostname(), pid=1)
        assert without_pids(proc.stdout) == without_pids(out)
        assert rccl_tests.parse_rccl_tests(proc.stdout), 'the collection parses it'
    proc = run_tool(str(key_bin / 'all_reduce_perf'), tmp_path, 'mi300x-2', ['-g', '4'])
    assert proc.returncode == 3 and "'invalid device ordinal'" in proc.stdout, 'more GPUs than the profile has'
    proc = run_tool(str(key_bin / 'alltoall_perf'), tmp_path, 'mi300x-2', ALL_REDUCE_ARGS)
    assert proc.returncode == 2 and 'alltoall_perf: not simulated by the llmfleet lab' in proc.stderr


def test_the_build_record_and_the_builds_log(checkout, rocm, tmp_path, served):
    rocm_path, mpi_home = rocm
    proc = make(checkout, tmp_path, *production(rocm_path, mpi_home), HIPCC_COMPILE_FLAGS_APPEND=ARCHS)
    assert proc.returncode == 0, proc.stderr
    with open(os.path.join(checkout, 'build', '_llmfleet_build.json')) as handle:
        record = json.load(handle)
    assert record['component'] == 'rccl-tests' and record['commit'] == served[1]
    assert (record['MPI'], record['MPI_HOME'], record['NCCL_HOME'], record['ROCM_PATH']) == ('1', mpi_home, rocm_path, rocm_path)
    assert record['HIPCC_COMPILE_FLAGS_APPEND'] == ARCHS and record['offload_archs'] == ['gfx942', 'gfx90a']
    assert record['CUSTOM_RCCL_LIB'] is None and record['BUILDDIR'] == os.path.join(checkout, 'build')
    assert record['found'] == {'hipcc': 'HIP version: 7.1.52802-lab', 'rccl.h': os.path.join(rocm_path, 'include/rccl/rccl.h'),
                               'librccl.so': os.path.join(rocm_path, 'lib/librccl.so'),
                               'mpi.h': os.path.join(mpi_home, 'include/mpi.h')}
    assert record['simulated'] == ['all_reduce_perf']
    log = (tmp_path / 'builds.log').read_text().splitlines()
    assert [line.split()[1:4] for line in log] == [['rccl-tests', 'start', served[1]], ['rccl-tests', 'end', served[1]]]


def test_builddir_is_honoured_and_clean_removes_it(checkout, rocm, tmp_path):
    rocm_path, _mpi_home = rocm
    out = tmp_path / 'out' / 'rccl'
    proc = make(checkout, tmp_path, 'ROCM_PATH=%s' % rocm_path, 'BUILDDIR=%s' % out,
                HIPCC_COMPILE_FLAGS_APPEND='--offload-arch=gfx942,gfx90a:xnack+')
    assert proc.returncode == 0, proc.stderr
    assert (out / 'all_reduce_perf').is_file() and not os.path.exists(os.path.join(checkout, 'build'))
    record = json.loads((out / '_llmfleet_build.json').read_text())
    assert record['MPI'] == '0' and record['found']['mpi.h'] is None and record['NCCL_HOME'] is None
    assert record['offload_archs'] == ['gfx942', 'gfx90a:xnack+']
    # A relative BUILDDIR is the checkout's, as in rccl-tests' Makefile ($(abspath ...)).
    proc = make(checkout, tmp_path, 'ROCM_PATH=%s' % rocm_path, 'BUILDDIR=rel/dir')
    assert proc.returncode == 0, proc.stderr
    assert os.path.isfile(os.path.join(checkout, 'rel', 'dir', 'all_reduce_perf'))
    assert 'no --offload-arch in HIPCC_COMPILE_FLAGS_APPEND' in proc.stdout
    assert make(checkout, tmp_path, 'BUILDDIR=%s' % out, 'clean').returncode == 0
    assert not out.exists() and out.parent.exists()


def test_custom_rccl_lib_is_the_library_linked(checkout, rocm, tmp_path):
    rocm_path, _mpi_home = rocm
    os.unlink(os.path.join(rocm_path, 'lib', 'librccl.so'))
    custom = tmp_path / 'rccl-build' / 'librccl.so'
    custom.parent.mkdir()
    custom.write_text('')
    proc = make(checkout, tmp_path, 'ROCM_PATH=%s' % rocm_path, 'CUSTOM_RCCL_LIB=%s' % custom)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(open(os.path.join(checkout, 'build', '_llmfleet_build.json')).read())
    assert record['found']['librccl.so'] == str(custom) and record['CUSTOM_RCCL_LIB'] == str(custom)


@pytest.mark.parametrize('missing, message', [
    ('bin/hipcc', '{rocm}/bin/hipcc: No such file or directory (the HIP compiler: package hipcc'),
    ('include/rccl/rccl.h', "src/common.h: fatal error: 'rccl/rccl.h' file not found (searched {rocm}/rccl/rccl.h, "
                            "{rocm}/include/rccl/rccl.h; package rccl-dev"),
    ('lib/librccl.so', 'ld.lld: error: unable to find library -lrccl (searched {rocm}, {rocm}/lib for librccl.so;'),
    ('mpi.h', "src/common.h: fatal error: 'mpi.h' file not found (MPI=1: searched {mpi}/include/mpi.h"),
], ids=['hipcc', 'rccl.h', 'librccl', 'mpi.h'])
def test_a_missing_input_fails_the_build_as_a_real_one_would(checkout, rocm, tmp_path, missing, message):
    rocm_path, mpi_home = rocm
    if missing == 'mpi.h':
        os.unlink(os.path.join(mpi_home, 'include', 'mpi.h'))
    else:
        os.unlink(os.path.join(rocm_path, missing))
    proc = make(checkout, tmp_path, *production(rocm_path, mpi_home), HIPCC_COMPILE_FLAGS_APPEND=ARCHS)
    assert proc.returncode != 0
    assert 'stand-in build: ' + message.format(rocm=rocm_path, mpi=mpi_home) in proc.stderr
    assert not os.path.exists(os.path.join(checkout, 'build')), 'nothing built'
    assert not (tmp_path / 'builds.log').exists(), 'a refused build is not logged'


def test_without_mpi_no_mpi_h_is_needed_and_a_broken_hipcc_or_arch_is_refused(checkout, rocm, tmp_path):
    rocm_path, mpi_home = rocm
    os.unlink(os.path.join(mpi_home, 'include', 'mpi.h'))
    assert make(checkout, tmp_path, 'ROCM_PATH=%s' % rocm_path, 'MPI_HOME=%s' % mpi_home).returncode == 0
    proc = make(checkout, tmp_path, 'ROCM_PATH=%s' % rocm_path, HIPCC_COMPILE_FLAGS_APPEND='--offload-arch=sm_90')
    assert proc.returncode != 0 and "unsupported --offload-arch 'sm_90'" in proc.stderr
    hipcc = os.path.join(rocm_path, 'bin', 'hipcc')
    os.unlink(hipcc)
    with open(hipcc, 'w') as handle:
        handle.write('#!/bin/sh\necho broken >&2\nexit 1\n')
    os.chmod(hipcc, 0o755)
    proc = make(checkout, tmp_path, 'ROCM_PATH=%s' % rocm_path)
    assert proc.returncode != 0 and '%s --version failed (rc 1): broken' % hipcc in proc.stderr


def test_build_seconds_makes_the_build_last_with_progress(checkout, rocm, tmp_path):
    rocm_path, _mpi_home = rocm
    with open(os.path.join(checkout, 'BUILD_SECONDS'), 'w') as handle:
        handle.write('2\n')
    proc = make(checkout, tmp_path, 'ROCM_PATH=%s' % rocm_path, HIPCC_COMPILE_FLAGS_APPEND=ARCHS)
    assert proc.returncode == 0, proc.stderr
    assert '[1/2] compiling the stand-in kernels of rccl-tests for gfx942,gfx90a' in proc.stdout
    assert '[2/2] compiling' in proc.stdout


def test_the_same_commit_gives_the_same_binaries(checkout, rocm, tmp_path):
    rocm_path, _mpi_home = rocm
    first, second = tmp_path / 'one', tmp_path / 'two'
    for out in (first, second):
        assert make(checkout, tmp_path, 'ROCM_PATH=%s' % rocm_path, 'BUILDDIR=%s' % out).returncode == 0
    assert (first / 'all_reduce_perf').read_bytes() == (second / 'all_reduce_perf').read_bytes()


def test_labctl_up_makes_the_source_repositories_when_their_recipe_changed(monkeypatch, tmp_path):
    """up serves rccl-tests.git to the sandbox: it calls sources() (a no-op when the recipe is unchanged)."""
    calls = []
    monkeypatch.setattr(common, 'LAB', str(tmp_path))
    monkeypatch.setattr(common, 'LOG_PATH', str(tmp_path / 'labctl.log'))
    monkeypatch.setattr(cli.shutil, 'which', lambda name: '/usr/bin/' + name)
    monkeypatch.setattr(cli.image, 'ensure', lambda: 'tag')
    monkeypatch.setattr(cli.repository, 'build', lambda: calls.append('repo'))
    monkeypatch.setattr(cli.buildstage, 'sources', lambda **kwargs: calls.append(('sources', kwargs)))
    monkeypatch.setattr(cli.model, 'build', lambda: calls.append('model'))
    monkeypatch.setattr(cli.hosts, 'start_hosts', lambda tag: calls.append('hosts'))
    cli.cmd_up(None)
    assert calls == ['repo', ('sources', {}), 'model', 'hosts']
