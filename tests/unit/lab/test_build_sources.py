# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's stand-in sources keep up with the engine_build recipe, and the build tools with the toolchain pins."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.machinery
import importlib.util
import os
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SOURCES = os.path.join(ROOT, 'lab', 'build', 'sources')


def _labbuild():
    path = os.path.join(ROOT, 'lab', 'build', 'labbuild.py')
    loader = importlib.machinery.SourceFileLoader('llmfleet_lab_build_test', path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def _recipe():
    with open(os.path.join(ROOT, 'roles', 'engine_build', 'vars', 'main.yml')) as handle:
        return yaml.safe_load(handle)['_engine_build_recipe']


def test_buildtools_are_the_toolchain_pins():
    with open(os.path.join(ROOT, 'roles', 'toolchain', 'defaults', 'main.yml')) as handle:
        pins = yaml.safe_load(handle)['toolchain_python_packages']
    assert _labbuild().toolchain_pins() == pins


@pytest.mark.parametrize('component', ['pytorch', 'triton', 'vllm'])
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


def test_recipe_hash_follows_the_files():
    labbuild = _labbuild()
    assert labbuild.recipe_hash() == labbuild.recipe_hash()
    assert [rel for rel, _path in labbuild._tree_files('vllm')] == [
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
