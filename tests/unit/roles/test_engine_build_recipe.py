# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine_build role's components as a run templates them (its own defaults and vars through Ansible's Templar):
the sources come from the recipe table unless the user sets them, and the build key moves with every one of them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os

import pytest
import yaml

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from role_files import ROOT, load_yaml as _load, trusted as _trusted  # the collection loader is installed by role_files

from ansible_collections.llmfleet.rocm.plugins.filter.build import build_plan  # noqa: E402

COMMON = {'rocm_version': '7.2.3', 'arch': ['gfx942'], 'python': '3.12', 'system': 'Ubuntu 22', 'env': {}}
LAB = 'http://llmfleet-lab-repo:8080/sources/'
# molecule/build/molecule.yml's group_vars: the lab's stand-in repositories at their main branches.
LAB_VARS = {'engine_build_pytorch_repo': LAB + 'pytorch.git', 'engine_build_pytorch_ref': 'main',
            'engine_build_triton_repo': LAB + 'triton.git', 'engine_build_triton_ref': 'main',
            'engine_build_vllm_repo': LAB + 'vllm.git', 'engine_build_vllm_ref': 'main'}


def _value(expression, overrides=None, variables_file='roles/engine_build/vars/main.yml'):
    variables = {'ansible_facts': {'python': {'version': {'major': 3, 'minor': 12}}}, 'groups': {'gpu_nodes': []},
                 'hostvars': {}, 'engine_build_rocm_arch': ['gfx942']}
    variables.update(_trusted(_load('roles/engine_build/defaults/main.yml')))
    variables.update(_trusted(_load(variables_file)))
    variables.update(overrides or {})
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template('{{ %s }}' % expression))


def _sources(components):
    return [(component['name'], component['repo'], component['ref']) for component in components]


def _key(components):
    return build_plan(components, COMMON, ['0' * 40] * len(components))['key']


def test_the_defaults_build_vllm_0_32_0_with_its_own_recipe():
    assert _sources(_value('_engine_build_components')) == [
        ('pytorch', 'https://github.com/ROCm/pytorch.git', '733fca1'),
        ('triton', 'https://github.com/ROCm/triton.git', '669b31a'),
        ('vllm', 'https://github.com/vllm-project/vllm.git', 'v0.32.0'),
    ]


def test_the_optional_components_take_the_recipes_refs():
    components = _value('_engine_build_components', {'engine_build_aiter': True, 'engine_build_flash_attention': True})
    assert _sources(components)[2:4] == [
        ('flash_attention', 'https://github.com/Dao-AILab/flash-attention.git', '0e60e394'),
        ('aiter', 'https://github.com/ROCm/aiter.git', 'v0.1.24.post1'),
    ]
    # the recipe's steps and environment stay the role's
    assert components[3]['env']['PREBUILD_KERNELS'] == '1' and components[3]['steps'][-1][:2] == ['python3', 'setup.py']


def test_the_users_value_wins():
    components = _value('_engine_build_components', {'engine_build_pytorch_ref': 'release/2.13'})
    assert _sources(components)[0] == ('pytorch', 'https://github.com/ROCm/pytorch.git', 'release/2.13')


def test_the_labs_build_keeps_its_stand_in_sources():
    assert _sources(_value('_engine_build_components', LAB_VARS)) == [
        ('pytorch', LAB + 'pytorch.git', 'main'), ('triton', LAB + 'triton.git', 'main'), ('vllm', LAB + 'vllm.git', 'main')]
    assert _value('_engine_build_sources', LAB_VARS)['problems'] == []


def test_another_release_builds_other_sources_under_another_key():
    default = _value('_engine_build_components')
    older = _value('_engine_build_components', {'engine_build_vllm_ref': 'v0.30.0'})
    assert _sources(older)[:2] == [('pytorch', 'https://github.com/ROCm/pytorch.git', '6bbd260'),
                                   ('triton', 'https://github.com/ROCm/triton.git', 'f0b55c0')]
    assert _key(older) != _key(default)


@pytest.mark.parametrize('component,field', [
    ('torch', 'ref'), ('torch', 'repo'), ('triton', 'ref'), ('aiter', 'ref'), ('flash_attention', 'repo'),
])
def test_a_changed_table_value_changes_the_build_key(tmp_path, component, field):
    """The same commits (ls-remote's answer is the same here): the key still moves with the recipe's repository or ref."""
    switches = {'engine_build_aiter': True, 'engine_build_flash_attention': True}
    before = _value('_engine_build_components', switches)
    variables = _load('roles/engine_build/vars/main.yml')
    changed = copy.deepcopy(variables)
    entry = changed['_engine_build_releases']['0.32.0']
    target = entry['torch'] if component == 'torch' else entry['components'][component]
    target[field] = target[field] + '-moved'
    path = tmp_path / 'vars.yml'
    path.write_text(yaml.safe_dump(changed))
    after = _value('_engine_build_components', switches, variables_file=str(path))
    assert after != before
    assert _key(after) != _key(before)


def test_a_users_value_over_the_recipes_changes_the_build_key():
    assert _key(_value('_engine_build_components', {'engine_build_triton_ref': 'f0b55c0'})) != _key(
        _value('_engine_build_components'))


def test_the_check_passes_the_table():
    """tasks/preflight.yml gives the checks the role's table (the rule engine_build-recipe speaks only then)."""
    with open(os.path.join(ROOT, 'roles', 'engine_build', 'tasks', 'preflight.yml')) as handle:
        assert 'releases=_engine_build_releases' in handle.read()
