# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""wheel_build and wheel_build_status as Ansible runs them: refused input, check mode, the states a follower sees."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys

import pytest

from ansible_collections.llmfleet.rocm.plugins.action.wheel_build_status import progress_text

STAGE = {'name': 'vllm', 'key': 'b' * 16, 'repo': 'https://example.invalid/vllm.git', 'ref': 'main', 'commit': 'c' * 40,
         'subdir': [''], 'steps': [['python3', 'setup.py', 'bdist_wheel']], 'env': {}, 'install': False}


def build_args(tmp_path, **changes):
    args = dict(build_dir=str(tmp_path / 'build'), key='a' * 16, stages=[STAGE], document={'format': 1},
                python=sys.executable)
    args.update(changes)
    return args


@pytest.mark.parametrize('changes, message', [
    ({'key': 'current'}, "key 'current' is not a directory name"),
    ({'key': '../x'}, 'is not a directory name'),
    ({'stages': [dict(STAGE, commit='')]}, 'stage 1 (vllm) lacks commit'),
    ({'stages': [dict(STAGE, steps=['python3 setup.py bdist_wheel'])]}, 'every step must be a non-empty argument list'),
    ({'stages': [dict(STAGE, repo='')]}, 'stage 1 (vllm) lacks repo'),
    ({'stages': [dict(STAGE, steps=[])]}, 'and there must be one'),
    ({'stages': [dict(STAGE, export='python/triton_kernels/triton_kernels')]},
     'exports python/triton_kernels/triton_kernels and has no steps'),
    ({'keep': 0}, 'keep must be 1 or more'),
    ({'python': '/nonexistent/python3'}, 'is not an executable Python'),
], ids=['reserved-key', 'path-key', 'unresolved-commit', 'step-as-string', 'no-repo', 'no-steps', 'export-with-steps',
        'keep-zero', 'no-python'])
def test_wheel_build_refuses_bad_input_before_anything(node, tmp_path, changes, message):
    result = node.run('wheel_build', **build_args(tmp_path, **changes))
    assert result['failed'] is True and message in result['msg']
    assert not os.path.exists(str(tmp_path / 'build'))


def test_wheel_build_takes_a_path_stage_and_an_export_stage(node, tmp_path):
    """A directory on the builder instead of a repository (amdsmi), a checkout's directory and no steps (triton_kernels)."""
    path_stage = dict(STAGE, name='amdsmi', repo=None, ref=None, path='/opt/rocm/share/amd_smi')
    export_stage = dict(STAGE, name='triton_kernels', export='python/triton_kernels/triton_kernels', steps=[])
    result = node.run('wheel_build', _ansible_check_mode=True, **build_args(tmp_path, stages=[path_stage, export_stage, STAGE]))
    assert result.get('failed') is not True and result['changed'] is True


def test_wheel_build_in_check_mode_reports_the_build_it_would_run(node, tmp_path):
    result = node.run('wheel_build', _ansible_check_mode=True, **build_args(tmp_path))
    assert result['changed'] is True and result['wheelhouse'] == str(tmp_path / 'build' / 'wheelhouse' / ('a' * 16))
    assert not os.path.exists(str(tmp_path / 'build'))
    (tmp_path / 'build' / 'wheelhouse' / ('a' * 16)).mkdir(parents=True)
    (tmp_path / 'build' / 'wheelhouse' / ('a' * 16) / 'COMPLETE').write_text('done\n')
    assert node.run('wheel_build', _ansible_check_mode=True, **build_args(tmp_path))['changed'] is False


def write_status(tmp_path, **status):
    build = tmp_path / 'build'
    (build / 'logs' / 'k').mkdir(parents=True, exist_ok=True)
    log = build / 'logs' / 'k' / '01-vllm.log'
    log.write_text('==> compiling\n[3/9] hipcc kernel.hip\n')
    data = {'key': 'k', 'pid': os.getpid(), 'state': 'running', 'stage': 'vllm', 'stage_index': 1,
            'started': '2026-11-30T10:00:00+0000', 'log_dir': str(build / 'logs' / 'k'),
            'stages': [{'name': 'vllm', 'state': 'building', 'log': str(log)}]}
    data.update(status)
    (build / 'status.json').write_text(json.dumps(data))
    return str(build)


@pytest.mark.parametrize('status, key, state', [
    ({}, 'k', 'running'),
    ({'pid': 2 ** 22 + 7}, 'k', 'killed'),
    ({'state': 'failed', 'failed_log': '/x.log'}, 'k', 'failed'),
    ({}, 'other', 'waiting'),
    ({'pid': 2 ** 22 + 7}, 'other', 'none'),
], ids=['running', 'process-gone', 'failed', 'another-key-holds-the-builder', 'stale-other-key'])
def test_wheel_build_status_states(node, tmp_path, status, key, state):
    build_dir = write_status(tmp_path, **status)
    result = node.run('wheel_build_status', build_dir=build_dir, key=key)
    assert result['state'] == state and result['changed'] is False
    if state in ('running', 'killed'):
        assert result['stage'] == 'vllm' and result['tail'] == ['==> compiling', '[3/9] hipcc kernel.hip']


def test_wheel_build_status_of_a_complete_key_is_done(node, tmp_path):
    build_dir = write_status(tmp_path, key='other')
    os.makedirs(os.path.join(build_dir, 'wheelhouse', 'k'))
    with open(os.path.join(build_dir, 'wheelhouse', 'k', 'COMPLETE'), 'w') as handle:
        handle.write('done\n')
    result = node.run('wheel_build_status', build_dir=build_dir, key='k')
    assert result['state'] == 'done' and result['complete'] is True


def test_wheel_build_status_of_an_empty_directory(node, tmp_path):
    result = node.run('wheel_build_status', build_dir=str(tmp_path / 'nothing'), key='k')
    assert result['state'] == 'none' and result['tail'] == [] and result['complete'] is False


def test_progress_text_names_the_stage_the_time_and_the_log():
    text = progress_text('gpu-node-1', {
        'key': 'k', 'state': 'running', 'stage': 'triton', 'stage_index': 2, 'elapsed': 3725,
        'stages': [{'name': 'pytorch', 'state': 'reused'}, {'name': 'triton', 'state': 'building'},
                   {'name': 'vllm', 'state': 'pending'}],
        'log': '/b/logs/k/02-triton.log', 'tail': ['[10/20] compiling']})
    assert text.splitlines() == [
        '[gpu-node-1] build k: stage 2/3 triton, 1 h 02 min (pytorch reused, triton building)',
        '    log /b/logs/k/02-triton.log:',
        '      | [10/20] compiling']
