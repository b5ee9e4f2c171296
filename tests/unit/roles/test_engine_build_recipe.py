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

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.build_plan import build_plan  # noqa: E402

COMMON = {'rocm_version': '7.2.3', 'arch': ['gfx942'], 'python': '3.12', 'system': 'Ubuntu 22', 'env': {}}
LAB = 'http://llmfleet-lab-repo:8080/sources/'
# molecule/build/molecule.yml's group_vars: the lab's stand-in repositories at their main branches (triton_kernels
# from the stand-in Triton's python/triton_kernels/triton_kernels).
LAB_VARS = {'engine_build_pytorch_repo': LAB + 'pytorch.git', 'engine_build_pytorch_ref': 'main',
            'engine_build_triton_repo': LAB + 'triton.git', 'engine_build_triton_ref': 'main',
            'engine_build_torchvision_repo': LAB + 'torchvision.git', 'engine_build_torchvision_ref': 'main',
            'engine_build_torchaudio_repo': LAB + 'torchaudio.git', 'engine_build_torchaudio_ref': 'main',
            'engine_build_triton_kernels_repo': LAB + 'triton.git', 'engine_build_triton_kernels_ref': 'main',
            'engine_build_vllm_repo': LAB + 'vllm.git', 'engine_build_vllm_ref': 'main'}
AMDSMI = '/opt/rocm/share/amd_smi'
# What the find loop over the path components reads of the builder's amd_smi directory.
TREES = [{'item': {'name': 'amdsmi', 'path': AMDSMI},
          'files': [{'path': AMDSMI + '/pyproject.toml', 'checksum': '1' * 40},
                    {'path': AMDSMI + '/amdsmi/__init__.py', 'checksum': '2' * 40}]}]


def _value(expression, overrides=None, variables_file='roles/engine_build/vars/main.yml'):
    variables = {'ansible_facts': {'python': {'version': {'major': 3, 'minor': 12}}}, 'groups': {'gpu_nodes': []},
                 'hostvars': {}, 'engine_build_rocm_arch': ['gfx942']}
    variables.update(_trusted(_load('roles/engine_build/defaults/main.yml')))
    variables.update(_trusted(_load(variables_file)))
    variables.update(overrides or {})
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template('{{ %s }}' % expression))


def _sources(components):
    return [(component['name'], component.get('repo', component.get('path')), component.get('ref'))
            for component in components]


def _plan(components, trees=None):
    commits = [None if component.get('path') else '0' * 40 for component in components]
    return build_plan(components, COMMON, commits, trees=TREES if trees is None else trees)


def _key(components, trees=None):
    return _plan(components, trees)['key']


def test_the_defaults_build_vllm_0_32_0_with_its_own_recipe():
    assert _sources(_value('_engine_build_components')) == [
        ('pytorch', 'https://github.com/ROCm/pytorch.git', '733fca1'),
        ('triton', 'https://github.com/ROCm/triton.git', '669b31a'),
        ('torchvision', 'https://github.com/pytorch/vision.git', 'v0.28.0'),
        ('torchaudio', 'https://github.com/pytorch/audio.git', 'v2.11.0'),
        ('amdsmi', AMDSMI, None),
        ('triton_kernels', 'https://github.com/ROCm/triton.git', '669b31acc1dd1b3fd93286afd5db67f65d9f7557'),
        ('vllm', 'https://github.com/vllm-project/vllm.git', 'v0.32.0'),
    ]


def test_triton_kernels_is_an_export_that_vllms_build_reads():
    stages = dict((stage['name'], stage) for stage in _plan(_value('_engine_build_components'))['stages'])
    # vLLM 0.32.0's cmake/external_projects/triton_kernels.cmake takes TRITON_KERNELS_SRC_DIR as the package directory
    # itself (<checkout>/python/triton_kernels/triton_kernels) and clones nothing then.
    assert stages['triton_kernels']['export'] == 'python/triton_kernels/triton_kernels'
    assert stages['triton_kernels']['steps'] == [] and not stages['triton_kernels']['install']
    assert stages['vllm']['source_env'] == {'TRITON_KERNELS_SRC_DIR': 'triton_kernels'}
    # amdsmi: pip wheel of a copy of the ROCm directory, as upstream's build_amdsmi stage; its digest is its commit.
    assert stages['amdsmi']['path'] == AMDSMI and stages['amdsmi']['repo'] is None
    assert stages['amdsmi']['steps'] == [['python3', '-m', 'pip', 'wheel', '--no-deps', '--wheel-dir=dist', '.']]
    assert len(stages['amdsmi']['commit']) == 40


def test_torch_torchvision_and_torchaudio_are_built_with_the_recipes_gcc():
    toolchain = {'toolchain_compiler_env': {'CC': 'gcc-13', 'CXX': 'g++-13'}}
    components = dict((c['name'], c) for c in _value('_engine_build_components', toolchain))
    for name in ('pytorch', 'torchvision', 'torchaudio'):
        assert components[name]['env']['CC'] == 'gcc-13' and components[name]['env']['CXX'] == 'g++-13', name
        assert components[name]['install'], '%s: the later stages build against it' % name
    assert components['pytorch']['env']['USE_ROCM'] == '1'
    for name in ('triton', 'amdsmi', 'vllm'):
        assert 'CC' not in components[name]['env'], name
    # Before the toolchain ran (the role's own preflight): no compiler yet, nothing fails.
    assert _value('_engine_build_components')[0]['env'] == {'USE_ROCM': '1'}
    # The compiler is in the stage keys: gcc 13 against the system's gcc is another build.
    assert _key(_value('_engine_build_components', toolchain)) != _key(_value('_engine_build_components'))


def test_a_changed_amdsmi_directory_changes_the_key_from_its_stage_on():
    components = _value('_engine_build_components')
    moved = [dict(TREES[0], files=TREES[0]['files'] + [{'path': AMDSMI + '/amdsmi/libamd_smi.so', 'checksum': '3' * 40}])]
    before, after = _plan(components), _plan(components, trees=moved)
    assert before['key'] != after['key']
    unchanged = [s['name'] for s, t in zip(before['stages'], after['stages']) if s['key'] == t['key']]
    assert unchanged == ['pytorch', 'triton', 'torchvision', 'torchaudio']
    # What an earlier build in place leaves there is no part of it.
    leftovers = [{'path': AMDSMI + '/amdsmi/__pycache__/x.pyc', 'checksum': '4' * 40},
                 {'path': AMDSMI + '/build/lib/amdsmi/x.py', 'checksum': '5' * 40}]
    cached = [dict(TREES[0], files=TREES[0]['files'] + leftovers)]
    assert _key(components, trees=cached) == before['key']


def test_the_optional_components_take_the_recipes_refs():
    components = _value('_engine_build_components', {'engine_build_aiter': True, 'engine_build_flash_attention': True})
    assert _sources(components)[4:6] == [
        ('flash_attention', 'https://github.com/Dao-AILab/flash-attention.git', '0e60e394'),
        ('aiter', 'https://github.com/ROCm/aiter.git', 'v0.1.24.post1'),
    ]
    # the recipe's steps and environment stay the role's
    assert components[5]['env']['PREBUILD_KERNELS'] == '1' and components[5]['steps'][-1][:2] == ['python3', 'setup.py']


def test_the_users_value_wins():
    components = _value('_engine_build_components', {'engine_build_pytorch_ref': 'release/2.13'})
    assert _sources(components)[0] == ('pytorch', 'https://github.com/ROCm/pytorch.git', 'release/2.13')


def test_the_labs_build_keeps_its_stand_in_sources():
    assert _sources(_value('_engine_build_components', LAB_VARS)) == [
        ('pytorch', LAB + 'pytorch.git', 'main'), ('triton', LAB + 'triton.git', 'main'),
        ('torchvision', LAB + 'torchvision.git', 'main'), ('torchaudio', LAB + 'torchaudio.git', 'main'),
        ('amdsmi', AMDSMI, None), ('triton_kernels', LAB + 'triton.git', 'main'), ('vllm', LAB + 'vllm.git', 'main')]
    assert _value('_engine_build_sources', LAB_VARS)['problems'] == []


def test_the_lab_scenario_sets_every_stand_in_source():
    """molecule/build gives every source the recipe would (its vLLM ref is a branch: no recipe)."""
    with open(os.path.join(ROOT, 'molecule', 'build', 'molecule.yml')) as handle:
        group_vars = yaml.safe_load(handle)['provisioner']['inventory']['group_vars']['all']
    given = dict((name, value.replace('${LLMFLEET_LAB_REPO_URL:-http://llmfleet-lab-repo:8080}/sources/', LAB))
                 for name, value in group_vars.items() if name.startswith('engine_build_') and name.endswith(('_repo', '_ref')))
    assert given == LAB_VARS


def test_another_release_builds_other_sources_under_another_key():
    default = _value('_engine_build_components')
    older = _value('_engine_build_components', {'engine_build_vllm_ref': 'v0.30.0'})
    assert _sources(older)[:2] == [('pytorch', 'https://github.com/ROCm/pytorch.git', '6bbd260'),
                                   ('triton', 'https://github.com/ROCm/triton.git', 'f0b55c0')]
    assert _key(older) != _key(default)


@pytest.mark.parametrize('component,field', [
    ('torch', 'ref'), ('torch', 'repo'), ('triton', 'ref'), ('aiter', 'ref'), ('flash_attention', 'repo'),
    ('torchvision', 'ref'), ('torchaudio', 'repo'), ('triton_kernels', 'ref'),
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


def test_the_python_check_reads_each_gpu_nodes_engine_variables():
    """_engine_build_fleet_engines: host -> [engine_python, engine_python_version, engine_version] where the inventory
    sets them, "" where it does not (the engine role's defaults then)."""
    hostvars = {'gpu-node-1': {'engine_python_version': '3.11'},
                'gpu-node-2': {'engine_python': '/opt/python3.12/bin/python3.12', 'engine_version': '0.31.0'}}
    found = _value('_engine_build_fleet_engines', {'groups': {'gpu_nodes': ['gpu-node-1', 'gpu-node-2']}, 'hostvars': hostvars})
    assert found == {'gpu-node-1': ['', '3.11', ''], 'gpu-node-2': ['/opt/python3.12/bin/python3.12', '', '0.31.0']}
