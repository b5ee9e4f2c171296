# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's stand-in sources keep up with the engine_build recipe, and the build tools with the toolchain pins."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess
import sys

import pytest
import yaml

# lab/ (conftest.py)
from labctl import buildstage, common

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SOURCES = os.path.join(ROOT, 'lab', 'build', 'sources')


def _recipe():
    with open(os.path.join(ROOT, 'roles', 'engine_build', 'vars', 'main.yml')) as handle:
        return yaml.safe_load(handle)['_engine_build_recipe']


def test_buildtools_are_the_toolchain_pins():
    with open(os.path.join(ROOT, 'roles', 'toolchain', 'defaults', 'main.yml')) as handle:
        pins = yaml.safe_load(handle)['toolchain_python_packages']
    assert buildstage.toolchain_pins() == pins


@pytest.mark.parametrize('component', ['pytorch', 'triton', 'torchvision', 'torchaudio', 'vllm'])
def test_the_stand_ins_have_every_file_the_recipe_calls(component):
    step = _recipe()[component]
    root = os.path.join(SOURCES, component)
    source_dir = [os.path.join(root, sub) for sub in step['subdir']
                  if os.path.exists(os.path.join(root, sub, 'setup.py'))]
    assert source_dir, '%s: no subdir candidate holds setup.py' % component
    for argv in step['steps']:
        for arg in argv[1:]:
            if not arg.startswith('-') and (arg.endswith('.py') or arg.endswith('.txt')):
                assert os.path.exists(os.path.join(source_dir[0], arg)), '%s: the recipe calls %s' % (component, arg)


def test_the_stand_in_triton_holds_the_directory_vllms_build_reads():
    """The lab's triton_kernels stage exports python/triton_kernels/triton_kernels of the stand-in Triton."""
    export = _recipe()['triton_kernels']['export']
    assert os.path.isfile(os.path.join(SOURCES, 'triton', export, '__init__.py'))


def test_the_stand_in_vllm_refuses_a_build_without_the_triton_kernels_directory(tmp_path):
    work = str(tmp_path / 'vllm')
    subprocess.check_call(['cp', '-r', os.path.join(SOURCES, 'vllm'), work])
    subprocess.check_call(['cp', os.path.join(SOURCES, 'fake_build.py'), work])
    # The stand-in torch of the build environment, as the recipe's earlier stage installs it.
    torch = tmp_path / 'site' / 'torch'
    torch.mkdir(parents=True)
    (torch / '__init__.py').write_text('__version__ = "2.10.0a0+gitabc"\ndef build_record():\n    return {"commit": "abc"}\n')
    env = dict((k, v) for k, v in os.environ.items() if k not in ('TRITON_KERNELS_SRC_DIR',))
    env.update(VLLM_TARGET_DEVICE='rocm', PYTHONPATH=str(tmp_path / 'site'))
    proc = subprocess.run([sys.executable, 'setup.py', 'bdist_wheel'], cwd=work, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 1 and 'TRITON_KERNELS_SRC_DIR is None' in proc.stdout


def test_recipe_hash_follows_the_files():
    assert buildstage.recipe_hash() == buildstage.recipe_hash()
    assert [rel for rel, _path in buildstage._tree_files('vllm')] == [
        'fake_build.py', 'requirements/rocm.txt', 'setup.py', 'vllm/__init__.py']


@pytest.mark.parametrize('env, refused', [
    ({}, "VLLM_TARGET_DEVICE is None: this build is for ROCm"),
    ({'VLLM_TARGET_DEVICE': 'cuda'}, "VLLM_TARGET_DEVICE is 'cuda': this build is for ROCm"),
    ({'VLLM_TARGET_DEVICE': 'rocm'}, 'torch is not installed in the build environment'),
], ids=['unset', 'cuda', 'no-torch'])
def test_the_stand_in_vllm_refuses_a_build_for_the_wrong_target(tmp_path, env, refused):
    work = str(tmp_path / 'vllm')
    subprocess.check_call(['cp', '-r', os.path.join(SOURCES, 'vllm'), work])
    subprocess.check_call(['cp', os.path.join(SOURCES, 'fake_build.py'), work])
    clean = dict((k, v) for k, v in os.environ.items() if k not in ('VLLM_TARGET_DEVICE', 'PYTHONPATH'))
    clean.update(env)
    proc = subprocess.run([sys.executable, 'setup.py', 'bdist_wheel'], cwd=work, env=clean,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 1 and refused in proc.stdout


def test_reset_gives_the_first_commits_and_advance_adds_one(tmp_path, monkeypatch):
    """In a temporary .lab: --reset alone advances nothing; --advance NAME adds one commit to NAME only."""
    lab = tmp_path / 'lab'
    monkeypatch.setattr(common, 'LAB', str(lab))
    monkeypatch.setattr(common, 'LOG_PATH', str(lab / 'labctl.log'))
    monkeypatch.setattr(buildstage, 'LAB', str(lab))
    monkeypatch.setattr(buildstage, 'REPO', str(lab / 'repo'))

    def commits(name):
        bare = str(lab / 'repo' / 'sources' / (name + '.git'))
        return subprocess.check_output(['git', '-C', bare, 'rev-list', 'main'], universal_newlines=True).split()

    buildstage.sources(reset=True)
    first = dict((name, commits(name)) for name in buildstage.COMPONENTS)
    assert all(len(first[name]) == 1 for name in buildstage.COMPONENTS)
    buildstage.sources()
    assert dict((name, commits(name)) for name in buildstage.COMPONENTS) == first, 'unchanged recipe: nothing new'
    buildstage.sources(advance_name='vllm', build_seconds=7)
    assert len(commits('vllm')) == 2 and commits('vllm')[1] == first['vllm'][0]
    assert commits('triton') == first['triton'] and commits('pytorch') == first['pytorch']
    assert (lab / 'build-sources' / 'vllm' / 'BUILD_SECONDS').read_text() == '7\n'
    buildstage.sources(reset=True)
    assert dict((name, commits(name)) for name in buildstage.COMPONENTS) == first, 'reproducible first commits'
    buildstage.sources(advance_name='rccl-tests', build_seconds=3)
    assert len(commits('rccl-tests')) == 2 and commits('rccl-tests')[1] == first['rccl-tests'][0]
    assert (lab / 'build-sources' / 'rccl-tests' / 'BUILD_SECONDS').read_text() == '3\n'
    with pytest.raises(common.LabError, match='--advance takes one of pytorch, triton, torchvision, torchaudio, vllm, rccl-tests'):
        buildstage.sources(advance_name='llvm')
