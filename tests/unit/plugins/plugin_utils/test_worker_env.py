# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The workers' AITER setting and CPU-affinity variable, per node (issue 36, Deliver item 5)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.worker_env import AITER_TARGETS, aiter_supported, worker_env

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..'))
CACHE = '/var/lib/llmfleet/cache/llmfleet-worker-0'


@pytest.mark.parametrize('targets, on', [
    (['gfx942'], True),         # MI300X, MI300A, MI325X
    (['gfx950'], True),         # MI350X, MI355X
    (['gfx942', 'gfx950'], True),
    (['gfx90a'], False),        # MI210, MI250, MI250X
    (['gfx908'], False),        # MI100
    (['gfx942', 'gfx90a'], False),  # a mixed node
    ([], False),                # no GPU target known
    ([None], False),
])
def test_aiter_on_only_where_built_and_every_target_is_supported(targets, on):
    env = worker_env(True, targets, CACHE, pinned=False)
    assert env['VLLM_ROCM_USE_AITER'] == ('1' if on else '0')
    assert env.get('AITER_JIT_DIR') == (CACHE + '/aiter' if on else None)
    assert aiter_supported(targets) is on


@pytest.mark.parametrize('targets', [['gfx942'], ['gfx950'], ['gfx90a']])
def test_aiter_off_where_the_engine_has_none(targets):
    assert worker_env(False, targets, CACHE, pinned=False) == {'VLLM_ROCM_USE_AITER': '0'}


def test_the_targets_given_narrow_the_supported_ones():
    assert worker_env(True, ['gfx950'], CACHE, False, targets=['gfx942'])['VLLM_ROCM_USE_AITER'] == '0'
    assert worker_env(True, ['gfx942'], CACHE, False, targets=['gfx942'])['VLLM_ROCM_USE_AITER'] == '1'


@pytest.mark.parametrize('value, jit', [('1', True), ('true', True), ('True', True), ('0', False), ('false', False),
                                        ('', False)])
def test_a_users_setting_wins_and_decides_the_jit_directory(value, jit):
    # Off where derived (gfx90a), the user turns it on; on where derived (gfx942), the user turns it off.
    for built, targets in ((False, ['gfx90a']), (True, ['gfx942'])):
        env = worker_env(built, targets, CACHE, pinned=False, explicit={'VLLM_ROCM_USE_AITER': value})
        assert 'VLLM_ROCM_USE_AITER' not in env
        assert env.get('AITER_JIT_DIR') == (CACHE + '/aiter' if jit else None)


def test_a_users_jit_directory_and_affinity_setting_win():
    explicit = {'AITER_JIT_DIR': '/srv/aiter', 'HSA_OVERRIDE_CPU_AFFINITY_DEBUG': '1'}
    assert worker_env(True, ['gfx942'], CACHE, pinned=True, explicit=explicit) == {'VLLM_ROCM_USE_AITER': '1'}


@pytest.mark.parametrize('pinned', [True, False])
def test_helper_threads_follow_the_binding_only_where_pinned(pinned):
    env = worker_env(False, ['gfx90a'], CACHE, pinned=pinned)
    assert env.get('HSA_OVERRIDE_CPU_AFFINITY_DEBUG') == ('0' if pinned else None)


def test_the_targets_are_aiters_and_the_build_default_agrees():
    assert AITER_TARGETS == ('gfx942', 'gfx950')
    with open(os.path.join(ROOT, 'roles', 'engine_build', 'defaults', 'main.yml')) as handle:
        build = yaml.safe_load(handle)
    with open(os.path.join(ROOT, 'roles', 'workers', 'defaults', 'main.yml')) as handle:
        workers = yaml.safe_load(handle)
    # The workers follow the build's switch; where it is not set in their play they assume engine_build's default.
    assert workers['workers_aiter'] == "{{ engine_build_aiter | default(%s) }}" % str(build['engine_build_aiter']).lower()
    assert build['engine_build_aiter_arch'] == list(AITER_TARGETS)
    assert workers['workers_aiter_targets'] == "{{ engine_build_aiter_arch | default(%s) }}" % list(AITER_TARGETS)
