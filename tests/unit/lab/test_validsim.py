# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's simulated validation tools (lab/stubs/validsim.py, and amd-smi's health commands in gpusim.py): what they print for every profile goes through
the collection's parsers and the threshold judge (plugins/module_utils/_validate_thresholds.py). A healthy profile
passes every judged figure; the degraded profile gives exactly its three problems. The stub packages that install
the tools are staged under tmp_path and their entry scripts run (rccl-tests' all_reduce_perf is built from the
stand-in sources instead: test_rccl_tests_build.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils import (
    _amd_smi_health as amd_smi_health, _lspci as lspci, _rccl_tests as rccl_tests, _rvs as rvs, _transferbench as transferbench,
    _validate_thresholds as validate_thresholds)
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ToolError

# lab/stubs/ and lab/ (conftest.py)
import gpusim
import labhost
import validsim
from labctl import packages

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PROFILES = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, 'lab', 'profiles', '*.json')))
HEALTHY = [name for name in PROFILES if not name.endswith('-findings')]
DEGRADED = 'mi300x-8-degraded-findings'
CONF = os.path.join(ROOT, 'lab', 'stubs', 'rvs_conf')
NO_FAULTS = os.path.join(ROOT, 'lab', 'profiles', 'no-such-dir')


def profile(name):
    with open(os.path.join(ROOT, 'lab', 'profiles', name + '.json')) as handle:
        return json.load(handle)


def state(name, **kwargs):
    kwargs.setdefault('driver', '6.16.6')
    return labhost.State(profile=profile(name), **kwargs)


def ok(result):
    out, err, rc = result
    assert rc == 0 and err == '', err
    return out


def amd_smi(st, *args):
    out, err, rc = gpusim.render_amd_smi(st, list(args) + ['--json'], faults_dir=NO_FAULTS)
    assert rc == 0 and err == '', err
    return out


def pcie_links(st):
    """{device, speed_gts, width} of the tested GPUs from the lspci stub, as the judge takes them."""
    tested = set(gpu['pci'] for gpu in validsim.tested_gpus(st))
    devices = lspci.parse_lspci(ok(gpusim.render_lspci(st, ['-D', '-nn', '-vvv'])))['devices']
    return [{'device': dev['address'], 'speed_gts': dev['pcie']['link_speed_gts'], 'width': dev['pcie']['link_width']}
            for dev in devices if dev['address'] in tested]


def results_of(name):
    """The parsed outputs of a whole validation run on a profile, and its GPU model."""
    st = state(name)
    gpus = validsim.tested_gpus(st)
    model = gpus[0]['model']
    run = {
        'rccl_all_reduce': rccl_tests.parse_rccl_tests(ok(validsim.render_all_reduce(
            st, ['-b', '8', '-e', '8G', '-f', '2', '-g', str(len(gpus))]))),
        'transferbench': {'p2p': transferbench.parse_transferbench(ok(validsim.render_transferbench(st, ['p2p'])))['p2p']},
        # Every configuration the model's table names, from the stub's copies.
        'rvs': rvs.parse_rvs(''.join(ok(validsim.render_rvs(st, ['-c', os.path.join(CONF, os.path.relpath(
            rule['conf'], validate_thresholds.RVS_CONF))])) for rule in validate_thresholds.thresholds_for(model)['rvs'].values()
            if rule['conf'])),
        'pcie_links': pcie_links(st),
        'amd_smi_metric': amd_smi_health.parse_amd_smi_metric_json(amd_smi(st, 'metric')),
        'amd_smi_bad_pages': amd_smi_health.parse_amd_smi_bad_pages_json(amd_smi(st, 'bad-pages')),
    }
    if len(gpus) > 1:
        run['transferbench']['a2a'] = transferbench.parse_transferbench(
            ok(validsim.render_transferbench(st, ['a2a'])))['a2a']
    return run, model


def not_ok(findings):
    return [finding for finding in findings if finding['level'] != 'ok']


# ---------------------------------------------------------------------------------------------
# healthy profiles: everything parses, every judged figure passes

@pytest.mark.parametrize('name', HEALTHY)
def test_a_healthy_profile_passes_every_judged_figure(name):
    run, model = results_of(name)
    findings = validate_thresholds.judge(run, model)
    assert [f for f in findings if f['level'] == 'error'] == []
    # What stays a warning is what the profile cannot run as the threshold's command: fewer GPUs than the
    # all-reduce figure's ranks, or MI210's same-socket pairs with no pairs (one MI210).
    for finding in not_ok(findings):
        assert 'not judged' in finding['message'], finding['message']
    judged = [f for f in findings if f['level'] == 'ok']
    assert set(['health.ecc_uncorrectable', 'pcie.link']) <= set(f['id'] for f in judged)
    assert all(action['passed'] is True for action in run['rvs']['actions'])
    assert set(action['module'] for action in run['rvs']['actions']) == set(['gst', 'iet', 'pebb', 'pbqt', 'peqt',
                                                                             'babel'])
    if len(validsim.tested_gpus(state(name))) == 8:
        assert 'rccl.all_reduce.busbw' in [f['id'] for f in judged]


def test_the_8_gpu_all_reduce_is_the_capture():
    result = results_of('mi300x-8')[0]['rccl_all_reduce']
    assert result['header']['ngpus'] == 8 and len(result['devices']) == 8 and len(result['rows']) == 31
    assert result['largest']['in_place']['busbw_gbs'] == 315.84 and result['avg_busbw_gbs'] == 102.138
    assert result['largest']['out_of_place']['algbw_gbs'] == pytest.approx(180.88, abs=0.02)
    assert [device['name'] for device in result['devices']] == ['AMD Instinct MI300X'] * 8


@pytest.mark.parametrize('name', PROFILES)
def test_amd_smi_health_outputs_parse_and_agree_with_lspci(name):
    st = state(name)
    metric = amd_smi_health.parse_amd_smi_metric_json(amd_smi(st, 'metric'))['gpus']
    assert [gpu['gpu'] for gpu in metric] == [gpu['index'] for gpu in st.gpus]
    links = dict((link['device'], link) for link in pcie_links(st))
    for gpu, reading in zip(st.gpus, metric):
        if gpu['apu']:
            assert reading['pcie'] is None and reading['ecc'] is None
            continue
        assert (reading['pcie']['speed_gts'], reading['pcie']['width']) == (
            links[gpu['pci']]['speed_gts'], links[gpu['pci']]['width'])
        assert reading['power']['throttled'] is False
        assert reading['ecc']['uncorrectable'] == int((gpu.get('faults') or {}).get('ecc_uncorrect', 0))
    firmware = amd_smi_health.parse_amd_smi_firmware_json(amd_smi(st, 'firmware'))['gpus']
    assert len(set(json.dumps(gpu['firmware'], sort_keys=True) for gpu in firmware if gpu['gpu'] in
                   [g['index'] for g in validsim.tested_gpus(st)])) == 1, 'the same firmware on every Instinct GPU'
    topology = amd_smi_health.parse_amd_smi_topology_json(amd_smi(st, 'topology'))['gpus']
    assert [gpu['pci_address'] for gpu in topology] == [gpu['pci'] for gpu in st.gpus]
    static = amd_smi_health.parse_amd_smi_static_health_json(ok(gpusim.render_amd_smi(st, ['static', '--json'])))
    for gpu, entry in zip(st.gpus, static['gpus']):
        assert (entry['ras'] is None) == gpu['apu']
    pages = amd_smi_health.parse_amd_smi_bad_pages_json(amd_smi(st, 'bad-pages'))['gpus']
    assert all(gpu['retired'] == [] and gpu['pending'] == [] for gpu in pages)


def test_metric_sections_are_those_asked_for():
    st = state('mi300x-2')
    entry = json.loads(amd_smi(st, 'metric', '-e', '-P'))['gpu_data'][0]
    assert sorted(entry) == ['ecc', 'gpu', 'pcie']
    out, err, rc = gpusim.render_amd_smi(st, ['metric', '-v', '--json'], faults_dir=NO_FAULTS)
    assert rc == 2 and out == '' and '-v' in err


def test_the_fault_switch_file_shows_in_amd_smi(tmp_path):
    (tmp_path / 'gpu1.json').write_text(json.dumps({'ecc_uncorrect': 2, 'ecc_correct': 3, 'junction_temperature': 108}))
    st = state('mi300x-2')
    out = ok(gpusim.render_amd_smi(st, ['metric', '--json'], faults_dir=str(tmp_path)))
    gpus = amd_smi_health.parse_amd_smi_metric_json(out)['gpus']
    assert gpus[0]['ecc']['uncorrectable'] == 0
    assert (gpus[1]['ecc']['uncorrectable'], gpus[1]['ecc']['correctable']) == (2, 3)
    assert gpus[1]['ecc_blocks']['UMC']['correctable'] == 3 and gpus[1]['temperature_c']['hotspot'] == 108.0


def test_one_gpu_has_no_all_to_all_and_too_many_ranks_fail():
    st = state('mi210-plus-igpu')
    with pytest.raises(ToolError, match='at least 2 GPUs'):
        transferbench.parse_transferbench(validsim.render_transferbench(st, ['a2a'])[0])
    out, _err, rc = validsim.render_all_reduce(st, ['-b', '8', '-e', '8G', '-f', '2', '-g', '4'])
    assert rc != 0
    with pytest.raises(ToolError, match='invalid device ordinal'):
        rccl_tests.parse_rccl_tests(out)


# ---------------------------------------------------------------------------------------------
# all_reduce_perf under Open MPI's mpirun: a process per -g GPUs, on one host or across hosts

ALL_REDUCE_8G = ('-b', '8', '-e', '8G', '-f', '2', '-g', '1')
CROSS_NODE_CAPTURE = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'rccl_tests', 'mi210-16rank-2node-rocm6.3.3.txt')
CROSS_NODE_8G_IN_PLACE = 15.17  # that capture's in-place bus bandwidth at 4 GiB, which its 8 GiB row repeats


def mpi_env(monkeypatch, rank, size, local_rank, local_size):
    """Open MPI's environment of one process, as mpirun sets it."""
    for name, value in zip(validsim.OMPI_ENV, (rank, size, local_rank, local_size)):
        monkeypatch.setenv(name, str(value))


def mpi_process(monkeypatch, st, host, rank, size, local_rank, local_size, args=ALL_REDUCE_8G):
    """(stdout, stderr, rc) of one process of an mpirun job (pid 1000 + its MPI rank)."""
    mpi_env(monkeypatch, rank, size, local_rank, local_size)
    return validsim.render_all_reduce(st, args, host=host, pid=1000 + rank)


def mpirun(monkeypatch, hosts, args=ALL_REDUCE_8G):
    """What ``mpirun -H a:n,b:m ... all_reduce_perf`` prints: hosts is [(host, state, processes)], MPI ranks by
    slot in that order. The other processes' rank lines come between rank 0's own and its table (rank 0 waits
    for them there)."""
    size = sum(count for _host, _st, count in hosts)
    outputs = []
    for host, st, count in hosts:
        for local_rank in range(count):
            outputs.append(ok(mpi_process(monkeypatch, st, host, len(outputs), size, local_rank, count, args)))
    before, table = outputs[0].split(validsim.ALL_REDUCE_TABLE_START, 1)
    return before + ''.join(outputs[1:]) + validsim.ALL_REDUCE_TABLE_START + table


def with_fabric(name, scale):
    prof = profile(name)
    if scale is not None:
        prof['fabric_busbw_scale'] = scale
    return labhost.State(profile=prof, driver='6.16.6')


@pytest.mark.parametrize('scale', [None, 0.25])
def test_an_mpirun_job_across_two_hosts_parses_with_every_rank_and_the_fabric_curve(monkeypatch, scale):
    # As the collection runs it: mpirun -np 10 -H 10.89.77.201:8,10.89.77.202:2 ... all_reduce_perf ... -g 1
    first, second = with_fabric('mi300x-8', scale), with_fabric('mi300x-2', scale)
    result = rccl_tests.parse_rccl_tests(mpirun(monkeypatch, [('10.89.77.201', first, 8), ('10.89.77.202', second, 2)]))
    assert result['header']['ngpus'] == 1 and len(result['devices']) == 10
    buses = [gpu['pci'][:-2] for gpu in validsim.tested_gpus(first)] + [gpu['pci'][:-2] for gpu in validsim.tested_gpus(second)]
    assert [(d['rank'], d['pid'], d['host'], d['device'], d['bus_id'], d['name']) for d in result['devices']] == [
        (rank, 1000 + rank, '10.89.77.20%d' % (1 if rank < 8 else 2), rank if rank < 8 else rank - 8, buses[rank],
         'AMD Instinct MI300X') for rank in range(10)]
    factor = 1.0 if scale is None else scale
    # The two-node capture's bus bandwidths, scaled by the profile's fabric_busbw_scale, and its 4 GiB figures at 8 GiB.
    capture = rccl_tests.parse_rccl_tests(open(CROSS_NODE_CAPTURE).read())
    assert [row['size'] for row in result['rows']] == [row['size'] for row in capture['rows']] + [8589934592]
    for row, captured in zip(result['rows'], capture['rows'] + [capture['largest']]):
        for part in ('out_of_place', 'in_place'):
            assert row[part]['busbw_gbs'] == pytest.approx(captured[part]['busbw_gbs'] * factor, abs=0.0051)
    largest = result['largest']['in_place']
    assert result['largest']['size'] == 8589934592
    assert largest['busbw_gbs'] == pytest.approx(CROSS_NODE_8G_IN_PLACE * factor, abs=0.0051)
    # algbw = busbw * n / (2 (n - 1)) with n the job's 10 ranks, not one process's or one host's
    assert largest['algbw_gbs'] == pytest.approx(CROSS_NODE_8G_IN_PLACE * factor * 10 / 18, abs=0.01)


def test_an_mpirun_job_across_hosts_with_several_gpus_a_process(monkeypatch):
    # -g 2: 4 processes on the first host (its devices 0-7), 1 on the second (devices 0-1): ranks 0-9.
    args = ALL_REDUCE_8G[:-1] + ('2',)
    result = rccl_tests.parse_rccl_tests(mpirun(monkeypatch, [('lab-a', state('mi300x-8'), 4),
                                                              ('lab-b', state('mi300x-2'), 1)], args))
    assert result['header']['ngpus'] == 2
    assert [(d['rank'], d['pid'], d['host'], d['device']) for d in result['devices']] == [
        (rank, 1000 + rank // 2, 'lab-a' if rank < 8 else 'lab-b', rank % 8) for rank in range(10)]
    assert result['largest']['in_place']['busbw_gbs'] == CROSS_NODE_8G_IN_PLACE


def test_an_mpirun_job_on_one_host_has_the_single_node_figures(monkeypatch):
    st = state('mi300x-8')
    job = rccl_tests.parse_rccl_tests(mpirun(monkeypatch, [('lab-a', st, 8)]))
    for name in validsim.OMPI_ENV:
        monkeypatch.delenv(name)
    single = rccl_tests.parse_rccl_tests(ok(validsim.render_all_reduce(st, ALL_REDUCE_8G[:-1] + ('8',), host='lab-a')))
    assert (job['header']['ngpus'], single['header']['ngpus']) == (1, 8)
    assert job['rows'] == single['rows'] and job['avg_busbw_gbs'] == single['avg_busbw_gbs'] == 102.138
    assert [dict(d, pid=None) for d in job['devices']] == [dict(d, pid=None) for d in single['devices']]
    # The fabric's scale is not the node's: the degraded profile's rccl_busbw_scale still counts.
    degraded = rccl_tests.parse_rccl_tests(mpirun(monkeypatch, [('lab-a', state(DEGRADED), 8)]))
    assert degraded['largest']['in_place']['busbw_gbs'] == pytest.approx(315.84 * 0.9, abs=0.01)


def test_a_non_zero_rank_prints_only_its_rank_lines(monkeypatch):
    st = state('mi300x-8')
    bus = [gpu['pci'][:-2] for gpu in validsim.tested_gpus(st)]
    assert mpi_process(monkeypatch, st, 'lab-a', 3, 10, 3, 8) == (
        '#  Rank  3 Group  0 Pid   1003 on lab-a device  3 [%s] AMD Instinct MI300X\n' % bus[3], '', 0)
    # -g 2, the second process on the second host (MPI rank 5 of 6): ranks 10 and 11 on its devices 2 and 3.
    out = ok(mpi_process(monkeypatch, st, 'lab-b', 5, 6, 1, 2, ALL_REDUCE_8G[:-1] + ('2',)))
    assert out == ''.join('#  Rank %2d Group  0 Pid   1005 on lab-b device %2d [%s] AMD Instinct MI300X\n'
                          % (rank, device, bus[device]) for rank, device in ((10, 2), (11, 3)))


def test_a_local_rank_beyond_the_hosts_gpus_fails_in_that_process(monkeypatch):
    st = state('mi300x-2')
    # A third process on a host of two GPUs: that process says so (no header: only rank 0 prints one) and fails.
    assert mpi_process(monkeypatch, st, 'lab-b', 10, 11, 2, 3) == (
        "lab-b: Test HIP failure common.cu:1279 'invalid device ordinal'\n .. lab-b pid 1010: Test failure "
        "common.cu:1158\n", '', 3)
    assert mpi_process(monkeypatch, st, 'lab-b', 3, 4, 1, 2, ALL_REDUCE_8G[:-1] + ('2',))[2] == 3, 'devices 2 and 3'
    # MPI rank 0 failing prints its header first, as the single process does; the collection reads the failure.
    out, _err, rc = mpi_process(monkeypatch, st, 'lab-a', 0, 2, 0, 1, ALL_REDUCE_8G[:-1] + ('4',))
    assert rc == 3 and out.startswith('# nThread 1 nGpus 4 ')
    with pytest.raises(ToolError, match='invalid device ordinal'):
        rccl_tests.parse_rccl_tests(out + ok(mpi_process(monkeypatch, state('mi300x-8'), 'lab-b', 1, 2, 0, 1)))


def test_under_mpirun_rank_0_prints_up_to_its_table_and_waits_for_the_others_lines(monkeypatch, capsys):
    waits = []
    monkeypatch.setattr(validsim.time, 'sleep', waits.append)
    st = state('mi300x-8')
    for name in validsim.OMPI_ENV:
        monkeypatch.delenv(name, raising=False)
    single = validsim.render('all_reduce_perf', st, ALL_REDUCE_8G)
    assert (waits, capsys.readouterr().out) == ([], ''), 'a single process prints at once, through gpusim.main'
    assert ok(single).count('#  Rank') == 1
    mpi_env(monkeypatch, 0, 10, 0, 8)
    table = ok(validsim.render('all_reduce_perf', st, ALL_REDUCE_8G))
    printed = capsys.readouterr().out
    assert waits == [validsim.MPI_RANK_LINES_WAIT]
    assert printed.startswith('# nThread 1 nGpus 1 ') and printed.endswith(' AMD Instinct MI300X\n')
    assert printed.count('#  Rank') == 1 and table.startswith(validsim.ALL_REDUCE_TABLE_START)
    result = rccl_tests.parse_rccl_tests(printed + table)
    assert [(d['host'], d['pid']) for d in result['devices']] == [(socket.gethostname(), os.getpid())]
    assert result['largest']['in_place']['busbw_gbs'] == CROSS_NODE_8G_IN_PLACE
    # Any other rank: its rank line, after a shorter wait (rank 0's header comes first), printed by gpusim.main.
    mpi_env(monkeypatch, 9, 10, 1, 2)
    out = ok(validsim.render('all_reduce_perf', st, ALL_REDUCE_8G))
    assert waits[1:] == [validsim.MPI_OTHER_RANKS_WAIT] and capsys.readouterr().out == ''
    assert validsim.MPI_OTHER_RANKS_WAIT < validsim.MPI_RANK_LINES_WAIT
    assert re.match(r'^#  Rank  9 Group  0 Pid +%d on \S+ device  1 \[[0-9a-f:]+\] AMD Instinct MI300X\n$' % os.getpid(), out)


@pytest.mark.skipif(not shutil.which('mpirun'), reason='no mpirun (Debian: openmpi-bin)')
def test_a_real_mpirun_runs_the_stand_in(tmp_path):
    """Open MPI's mpirun on this machine, one host: the processes' outputs come together as the parser reads them."""
    sysroot = tmp_path / 'sys' / 'module' / 'amdgpu'
    sysroot.mkdir(parents=True)
    (sysroot / 'initstate').write_text('live\n')
    (sysroot / 'version').write_text('6.16.6\n')
    (tmp_path / 'kfd').write_text('')
    env = dict((key, value) for key, value in os.environ.items() if not key.startswith(('OMPI_', 'PMIX_')))
    env.update(LLMFLEET_LAB_GPU_PROFILE=os.path.join(ROOT, 'lab', 'profiles', 'mi300x-8.json'),
               LLMFLEET_LAB_SYSROOT=str(tmp_path / 'sys'), LLMFLEET_LAB_KFD=str(tmp_path / 'kfd'),
               LLMFLEET_LAB_FAULTS=str(tmp_path / 'faults'))
    # What the built all_reduce_perf's __main__.py does (lab/build/sources/rccl-tests/lab_build.py).
    main = ('import sys; sys.path.insert(0, %r); import gpusim; sys.exit(gpusim.main("all_reduce_perf", sys.argv[1:], '
            '"/opt/rocm"))' % os.path.join(ROOT, 'lab', 'stubs'))
    proc = subprocess.run(['mpirun', '--allow-run-as-root', '--oversubscribe', '-np', '4', sys.executable, '-c', main]
                          + list(ALL_REDUCE_8G), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = rccl_tests.parse_rccl_tests(proc.stdout)
    assert sorted((d['rank'], d['device']) for d in result['devices']) == [(rank, rank) for rank in range(4)]
    assert proc.stdout.count('# nThread') == 1 and result['largest']['in_place']['busbw_gbs'] == 315.84


def test_without_the_driver_the_tools_fail_as_the_parsers_expect():
    st = state('mi300x-2', driver=None, loaded=False)
    with pytest.raises(ToolError):
        rvs.parse_rvs(validsim.render_rvs(st, ['-c', os.path.join(CONF, 'babel.conf')])[0])
    with pytest.raises(ToolError):
        transferbench.parse_transferbench(validsim.render_transferbench(st, ['p2p'])[0])
    assert gpusim.render_amd_smi(st, ['metric', '--json'])[1] == gpusim.AMD_SMI_DRIVER_ERRORS


# ---------------------------------------------------------------------------------------------
# the degraded profile: its three problems and nothing else

def test_the_degraded_profile_gives_exactly_its_three_problems():
    run, model = results_of(DEGRADED)
    problems = sorted(not_ok(validate_thresholds.judge(run, model)), key=lambda f: f['id'])
    assert [(f['level'], f['id']) for f in problems] == [
        ('error', 'health.ecc_uncorrectable'), ('error', 'pcie.link'), ('error', 'rccl.all_reduce.busbw')]
    ecc, link, all_reduce = problems
    gpus = labhost.machine(profile(DEGRADED))[1]
    assert ecc['gpu'] == 6 and gpus[6]['pci'] == '0000:cd:00.0' and ecc['figure'] == 1
    assert link['gpu'] == '0000:5f:00.0' and link['figure'] == '32.0 GT/s x8' and '0000:5f:00.0' in link['message']
    # The all-reduce is one figure of the whole node: the judge names no GPU for it.
    assert all_reduce['gpu'] is None and all_reduce['figure'] < 304.0 == all_reduce['threshold']
    assert all_reduce['figure'] == pytest.approx(315.84 * 0.9, abs=0.01)


def test_the_degraded_profile_is_mi300x_8_but_for_its_problems():
    base, degraded = profile('mi300x-8'), profile(DEGRADED)
    assert degraded['cpus'] == base['cpus'] and degraded['rccl_busbw_scale'] < 304.0 / 315.84
    strip = ('pcie_link', 'faults')
    assert [dict((k, v) for k, v in gpu.items() if k not in strip) for gpu in degraded['gpus']] == base['gpus']
    assert [gpu['pci'] for gpu in degraded['gpus'] if 'pcie_link' in gpu] == ['0000:5f:00.0']
    assert [gpu['pci'] for gpu in degraded['gpus'] if 'faults' in gpu] == ['0000:cd:00.0']


def test_the_x8_link_halves_that_gpus_host_bandwidth_and_rvs_still_passes():
    st = state(DEGRADED)
    action = rvs.parse_rvs(ok(validsim.render_rvs(st, ['-c', os.path.join(CONF, 'MI300X', 'pebb_single.conf')])))
    action = action['actions'][0]
    near = dict((t['gpu']['pci_address'], t['gbps']) for t in action['transfers'] if t['cpu'] == 0)
    assert near['0000:5f:00.0'] == pytest.approx(near['0000:1b:00.0'] / 2, abs=0.002)
    assert action['passed'] is True


# ---------------------------------------------------------------------------------------------
# the stub packages

SPEC = packages.repo_spec()
TOOLS = {'rocm-validation-suite': ('opt/rocm-7.1.1/bin/rvs', ['-c', '{conf}']),
         'transferbench': ('opt/rocm-7.1.1/bin/TransferBench', ['p2p']),
         'amd-smi-lib': ('opt/rocm-7.1.1/libexec/amdsmi_cli/amdsmi_cli.py', ['metric', '--json'])}
PARSERS = {'rocm-validation-suite': rvs.parse_rvs, 'transferbench': transferbench.parse_transferbench,
           'amd-smi-lib': amd_smi_health.parse_amd_smi_metric_json}


def test_validation_packages_have_their_real_names_and_a_tool_layout():
    layouts = packages.package_layouts()['layouts']
    for name, kind in (('rocm-validation-suite', 'tool:rvs'), ('transferbench', 'tool:transferbench')):
        assert SPEC['packages'][name]['files'] == kind
        copies = [entry['copy'] for entry in layouts[kind]['files'] if 'copy' in entry]
        assert set(['stubs/gpusim.py', 'stubs/validsim.py', 'stubs/labhost.py']) <= set(copies), 'the entry script needs all three'
    amd_smi_copies = [entry.get('copy') for entry in layouts['tool:amd-smi']['files']]
    assert set(['stubs/gpusim.py', 'stubs/labhost.py']) <= set(amd_smi_copies), 'amd-smi is gpusim\'s, on labhost'
    # rccl-tests is built from source (lab/build/sources/rccl-tests, test_rccl_tests_build.py), not a package.
    assert 'rccl-tests' not in SPEC['packages'] and not [kind for kind in layouts if 'rccl-tests' in kind]
    assert not [entry for layout in layouts.values() for entry in layout.get('files', []) if 'rccl-tests' in entry['path']]
    versions = packages.package_versions(SPEC, '7.1.1', 'noble')
    assert versions['rccl-dev'].split('.70101-')[0] == SPEC['releases']['7.1.1']['versions']['rccl']


def test_every_rvs_conf_of_the_threshold_table_is_shipped():
    shipped = set(entry['path'].replace('{prefix}', '/opt/rocm') for entry in
                  packages.package_layouts()['layouts']['tool:rvs']['files'] if 'copy' in entry)
    for name in HEALTHY:
        model = validsim.tested_gpus(state(name))[0]['model']
        for rule in validate_thresholds.thresholds_for(model)['rvs'].values():
            if rule['conf']:
                assert rule['conf'] in shipped, rule['conf']


@pytest.mark.parametrize('name', sorted(TOOLS))
def test_staged_entry_scripts_print_what_the_parsers_read(tmp_path, name):
    versions = packages.package_versions(SPEC, '7.1.1', 'noble')
    root = tmp_path / 'root'
    root.mkdir()
    packages.stage_package(SPEC, name, '7.1.1', 'noble', versions, str(root))
    sysroot = tmp_path / 'sys' / 'module' / 'amdgpu'
    sysroot.mkdir(parents=True)
    (sysroot / 'initstate').write_text('live\n')
    (sysroot / 'version').write_text('6.16.6\n')
    (tmp_path / 'kfd').write_text('')
    path, args = TOOLS[name]
    script = root / path
    # The entry script puts its libdir (an absolute path of the installed package) on sys.path: the staged one here.
    libdir = re.search(r"sys.path.insert\(0, '([^']+)'\)", script.read_text()).group(1)
    libdir = str(root / libdir.lstrip('/'))
    conf = root / 'opt/rocm-7.1.1/share/rocm-validation-suite/conf/MI300X/gst_single.conf'
    env = dict(os.environ, PYTHONPATH=libdir, LLMFLEET_LAB_GPU_PROFILE=os.path.join(ROOT, 'lab', 'profiles', 'mi300x-2.json'),
               LLMFLEET_LAB_SYSROOT=str(tmp_path / 'sys'), LLMFLEET_LAB_KFD=str(tmp_path / 'kfd'),
               LLMFLEET_LAB_FAULTS=str(tmp_path / 'faults'))
    proc = subprocess.run([sys.executable, str(script)] + [arg.format(conf=conf) for arg in args], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert PARSERS[name](proc.stdout)
