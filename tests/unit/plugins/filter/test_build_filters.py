# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.build_plan import (
    build_arch_datacenter, build_arch_list, build_arch_problems, build_max_jobs, build_plan)


@pytest.mark.parametrize('value, expected', [
    ('gfx942;gfx90a', ['gfx90a', 'gfx942']),
    ('gfx942, gfx942 gfx950', ['gfx942', 'gfx950']),
    (['gfx942', ['gfx90a', 'gfx942']], ['gfx90a', 'gfx942']),
    ([], []),
    (None, []),
], ids=['semicolons', 'mixed-separators-duplicates', 'nested-lists-from-facts', 'empty', 'none'])
def test_build_arch_list(value, expected):
    assert build_arch_list(value) == expected


@pytest.mark.parametrize('arch, problems', [
    (['gfx942', 'gfx90a'], []),
    (['gfx90a:xnack-', 'gfx942:sramecc+:xnack+'], []),
    (['gfx9010', 'gfx942'], ['gfx9010']),
    (['mi300x'], ['mi300x']),
    (['gfx942:turbo+'], ['gfx942:turbo+']),
], ids=['known', 'target-features', 'rocm-smi-spelling', 'marketing-name', 'unknown-feature'])
def test_build_arch_problems(arch, problems):
    assert build_arch_problems(arch) == problems


def test_build_arch_datacenter_leaves_out_radeon_targets():
    assert build_arch_datacenter('gfx90a;gfx942;gfx1100;gfx1201;gfx950') == ['gfx90a', 'gfx942', 'gfx950']


@pytest.mark.parametrize('cpus, memory_mb, expected', [
    (192, 1572864, 192),
    (2, 24000, 2),
    (64, 32768, 7),
    (16, 2048, 1),
], ids=['mi300x-node-cores-bound', 'lab-host', 'memory-bound', 'tiny-at-least-one'])
def test_build_max_jobs(cpus, memory_mb, expected):
    assert build_max_jobs(cpus, memory_mb) == expected


def test_build_max_jobs_with_other_job_memory():
    assert build_max_jobs(64, 32768, memory_per_job_mb=2048, reserved_memory_mb=0) == 16


@pytest.mark.parametrize('args, message', [
    (('many', 1024), 'must be integers'),
    ((4, 4096, 0), 'memory_per_job_mb'),
], ids=['not-a-number', 'zero-per-job'])
def test_build_max_jobs_refuses(args, message):
    with pytest.raises(AnsibleFilterError, match=message):
        build_max_jobs(*args)


COMPONENTS = [
    {'name': 'pytorch', 'repo': 'https://example.invalid/pytorch.git', 'ref': 'main', 'install': True,
     'steps': [['python3', 'tools/amd_build/build_amd.py'], ['python3', 'setup.py', 'bdist_wheel', '--dist-dir=dist']]},
    {'name': 'triton', 'repo': 'https://example.invalid/triton.git', 'ref': 'main', 'subdir': ['', 'python'],
     'install': True, 'steps': [['python3', 'setup.py', 'bdist_wheel', '--dist-dir=dist']]},
    {'name': 'vllm', 'repo': 'https://example.invalid/vllm.git', 'ref': 'v0.32.0', 'env': {'VLLM_TARGET_DEVICE': 'rocm'},
     'steps': [['python3', 'setup.py', 'bdist_wheel', '--dist-dir=dist']]},
]
COMMON = {'rocm_version': '7.1.1', 'arch': ['gfx90a', 'gfx942'], 'python': '3.11', 'system': 'Ubuntu 24', 'env': {}}
COMMITS = ['a' * 40, 'b' * 40, 'c' * 40]


def plan(components=None, common=None, commits=None):
    return build_plan(components or COMPONENTS, common or COMMON, commits or COMMITS)


def stage_keys(result):
    return [stage['key'] for stage in result['stages']]


def test_build_plan_is_stable_and_fills_defaults():
    first, again = plan(), plan(copy.deepcopy(COMPONENTS), dict(COMMON), list(COMMITS))
    assert first['key'] == again['key'] and len(first['key']) == 16
    pytorch = first['stages'][0]
    assert pytorch['subdir'] == [''] and pytorch['env'] == {} and pytorch['commit'] == 'a' * 40
    assert first['stages'][2]['install'] is False
    assert first['document']['common'] == COMMON
    assert [stage['name'] for stage in first['document']['stages']] == ['pytorch', 'triton', 'vllm']


def test_a_changed_vllm_commit_changes_only_the_vllm_stage():
    base, moved = plan(), plan(commits=['a' * 40, 'b' * 40, 'd' * 40])
    assert moved['key'] != base['key']
    assert stage_keys(moved)[:2] == stage_keys(base)[:2]
    assert stage_keys(moved)[2] != stage_keys(base)[2]


def test_a_changed_pytorch_commit_changes_every_later_stage():
    base, moved = plan(), plan(commits=['e' * 40, 'b' * 40, 'c' * 40])
    assert all(old != new for old, new in zip(stage_keys(base), stage_keys(moved)))


@pytest.mark.parametrize('change', [
    {'arch': ['gfx942']}, {'rocm_version': '7.0.2'}, {'python': '3.12'}, {'env': {'USE_FLASH_ATTENTION': '1'}},
], ids=['architecture', 'rocm', 'python', 'build-option'])
def test_common_inputs_change_every_stage(change):
    base, changed = plan(), plan(common=dict(COMMON, **change))
    assert changed['key'] != base['key']
    assert all(old != new for old, new in zip(stage_keys(base), stage_keys(changed)))


def test_extra_packages_change_the_key_and_no_stage():
    base = plan()
    extra = build_plan(COMPONENTS, COMMON, COMMITS, extra_packages=['ray==2.60.0'])
    assert extra['key'] != base['key'] and stage_keys(extra) == stage_keys(base)
    assert extra['document']['extra_packages'] == ['ray==2.60.0'] and 'extra_packages' not in base['document']
    with pytest.raises(AnsibleFilterError, match='extra_packages must be a list'):
        build_plan(COMPONENTS, COMMON, COMMITS, extra_packages=[''])


def test_a_changed_recipe_step_changes_the_key():
    components = copy.deepcopy(COMPONENTS)
    components[2]['steps'].insert(0, ['python3', '-m', 'pip', 'install', '-r', 'requirements/rocm.txt'])
    assert plan(components)['key'] != plan()['key']


@pytest.mark.parametrize('components, common, commits, message', [
    ([], COMMON, [], 'non-empty list'),
    (COMPONENTS, 'gfx942', COMMITS, 'common must be a dictionary'),
    (COMPONENTS, COMMON, COMMITS[:2], 'one commit per component'),
    ([{'name': 'vllm', 'repo': 'x', 'ref': 'main'}], COMMON, ['c' * 40], 'lacks steps'),
], ids=['no-components', 'common-not-dict', 'commits-short', 'no-steps'])
def test_build_plan_refuses(components, common, commits, message):
    with pytest.raises(AnsibleFilterError, match=message):
        build_plan(components, common, commits)
