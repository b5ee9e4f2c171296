# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probes and the verdict of benchmarks/faults.yml (the faults themselves happen in the lab)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.machinery
import importlib.util
import json
import os

import pytest

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'benchmarks', 'faults_probe.py')
LOADER = importlib.machinery.SourceFileLoader('faults_probe', PATH)
SPEC = importlib.util.spec_from_loader('faults_probe', LOADER)
probe = importlib.util.module_from_spec(SPEC)
LOADER.exec_module(probe)

VENV = '/opt/llmfleet/engines/vllm-0.32.0-0123456789ab'
ALT = '/opt/llmfleet/engines/vllm-0.32.0-ba9876543210'
# /proc/<pid>/cmdline of a lab worker's API server (the unit's ExecStart after the venv's shebang).
ARGV = [VENV + '/bin/python3', VENV + '/bin/vllm', 'serve', '/var/lib/llmfleet/models/tiny-llama', '--api-key-env', '--enforce-eager',
        '--host', '10.89.77.201', '--kv-cache-memory-bytes', '268435456', '--max-model-len=512', '--port', '8000']


def test_cmdline_is_split_at_nul_and_a_retitled_process_is_its_title():
    assert probe.parse_cmdline(b'/usr/bin/python3\0-m\0vllm\0') == ['/usr/bin/python3', '-m', 'vllm']
    assert probe.parse_cmdline(b'VLLM::EngineCore') == ['VLLM::EngineCore']
    assert probe.parse_cmdline(b'') == []


def test_engine_cores_are_found_by_their_title():
    argvs = {10: ARGV, 11: ['VLLM::EngineCore'], 12: ['/usr/bin/python3', '-c', 'from multiprocessing.resource_tracker'],
             13: ['VLLM::EngineCore_DP1'], 14: []}
    assert probe.engine_core_pids(argvs) == [11, 13]


def test_a_units_cgroup_is_looked_up_unified_then_v1():
    assert probe.cgroup_dirs('/system.slice/llmfleet-worker-0.service') == [
        '/sys/fs/cgroup/system.slice/llmfleet-worker-0.service',
        '/sys/fs/cgroup/systemd/system.slice/llmfleet-worker-0.service']


def test_flags_are_read_from_the_command_line():
    assert probe.flags_of(ARGV) == {'api-key-env': True, 'enforce-eager': True, 'host': '10.89.77.201',
                                    'kv-cache-memory-bytes': '268435456', 'max-model-len': '512', 'port': '8000'}
    assert probe.flags_of(['VLLM::EngineCore']) == {}


@pytest.mark.parametrize('argv, venv', [
    (ARGV, VENV),
    (['/usr/bin/numactl', '--physcpubind=0-3', '--membind=0', VENV + '/bin/vllm', 'serve'], VENV),
    (['VLLM::EngineCore'], None),
    (['/usr/bin/python3', '/usr/local/bin/tool'], None),
], ids=['shebang', 'numactl-before', 'retitled', 'no-venv'])
def test_the_venv_is_the_one_with_pyvenv_cfg(argv, venv):
    assert probe.venv_of(argv, exists=lambda path: path in (VENV + '/pyvenv.cfg', ALT + '/pyvenv.cfg')) == venv


def test_the_engine_roles_marker_is_read_after_its_first_line():
    text = 'llmfleet engine venv, complete\n' + json.dumps({'wheelhouse': 'http://repo:8080/wheels/alternate/'}, indent=4) + '\n'
    assert probe.parse_marker(text) == {'wheelhouse': 'http://repo:8080/wheels/alternate/'}
    assert probe.parse_marker('llmfleet engine venv, complete\nnot json') is None
    assert probe.parse_marker('') is None


class Worker:
    """Answers of a worker as probe.http gives them, by path."""

    def __init__(self, health=200, token=(200, '{"choices": [{"text": "x"}]}')):
        self.health, self.token, self.keys = health, token, []

    def __call__(self, url, body=None, key=None, timeout=10.0):
        if url.endswith('/health'):
            return (self.health, '') if self.health else (0, 'Connection refused')
        self.keys.append(key)
        return self.token


@pytest.mark.parametrize('worker, result', [
    (Worker(), (True, '')),
    (Worker(health=0), (False, '/health: Connection refused')),
    (Worker(health=503), (False, '/health: HTTP 503')),
    (Worker(token=(401, 'Unauthorized')), (False, 'one token: HTTP 401 Unauthorized')),
    (Worker(token=(200, '{"choices": []}')), (False, 'one token: no choices in the answer')),
], ids=['serves', 'refused', 'unhealthy', 'wrong-key', 'no-token'])
def test_a_worker_serves_when_health_and_one_token_answer(worker, result):
    assert probe.serves('http://10.0.0.1:8000', 'tiny-llama', 'k' * 48, ask=worker) == result
    assert set(worker.keys) <= {'k' * 48}


def test_watch_records_each_outage_from_the_first_failure_to_the_first_answer():
    watch = probe.Watch('http://w:8000', 100.0)
    assert watch.sample(True, '', 100.0, 100.1) == 'serves'
    assert not watch.back()
    assert watch.sample(False, '/health: Connection refused', 101.0, 101.0) == 'does not serve: /health: Connection refused'
    assert watch.sample(False, '/health: HTTP 503', 101.5, 101.5) is None
    assert watch.sample(True, '', 140.0, 140.4) == 'serves again after 39.4 s (/health: Connection refused)'
    assert watch.back()
    assert watch.state['outages'] == [{'down_at': 101.0, 'up_at': 140.4, 'seconds': 39.4,
                                       'error': '/health: Connection refused'}]
    assert (watch.state['tries'], watch.state['answered'], watch.state['last_error']) == (4, 2, '/health: HTTP 503')


def test_a_watch_that_starts_on_a_dead_worker_counts_that_outage():
    watch = probe.Watch('http://w:8000', 0.0)
    watch.sample(False, '/health: Connection refused', 0.5, 0.5)
    watch.sample(True, '', 9.0, 9.5)
    assert watch.back() and watch.state['outages'][0]['seconds'] == 9.0


def test_watch_and_proof_take_the_key_from_a_file_only(tmp_path):
    key = tmp_path / 'worker-key'
    key.write_text('s3cret\n')
    assert probe.read_key(str(key)) == 's3cret'
    actions = dict((a.dest, a) for a in probe.build_parser()._subparsers._group_actions[0].choices['watch']._actions)
    assert 'key_file' in actions and 'key' not in actions and 'api_key' not in actions


def load(failed=0, completed=100, errors=None):
    return {'completed': completed, 'failed': failed, 'num_prompts': completed + failed, 'duration': 120.04,
            'max_concurrency': 4, 'errors': errors if errors is not None else [''] * completed + ['boom\ntrace'] * failed}


def proofs(**workers):
    """{name: fields} -> the proof results of one node."""
    base = {'main_pid': 100, 'venv': VENV, 'flags': probe.flags_of(ARGV), 'wheelhouse': 'http://repo/wheels/latest/',
            'engine_cores': [101], 'version': '0.32.0'}
    return [{'workers': [dict(base, name=name, **fields) for name, fields in sorted(workers.items())]}]


def kill_case(**overrides):
    case = {'case': 'kill_api_server', 'worker': 'llmfleet-worker-0', 'node': 'gpu-node-2', 'allowed_failed': 4,
            'load': load(failed=2, completed=298), 'kill': {'pid': 100, 'killed_at': 1000.0},
            'watch': {'outages': [{'down_at': 1000.3, 'up_at': 1046.8, 'seconds': 46.5, 'error': 'refused'}]},
            'before': proofs(**{'llmfleet-worker-0': {}}), 'after': proofs(**{'llmfleet-worker-0': {'main_pid': 200}})}
    case.update(overrides)
    return case


def serve_case(name='changed_flag', after=None, **overrides):
    case = {'case': name, 'worker': 'llmfleet-worker-0', 'node': 'gpu-node-2', 'allowed_failed': 4, 'load': load(),
            'flags': {'max-num-seqs': 64}, 'wheelhouse': 'http://repo/wheels/alternate/', 'serve_rc': 0,
            'serve_log': 'benchmark-results/faults-changed_flag-serve.log',
            'watch': {'outages': [{'down_at': 10.0, 'up_at': 52.0, 'seconds': 42.0, 'error': 'refused'}]},
            'before': proofs(**{'llmfleet-worker-0': {}, 'llmfleet-worker-1': {}}),
            'after': after or proofs(**{'llmfleet-worker-0': {'main_pid': 300, 'flags': dict(probe.flags_of(ARGV), **{'max-num-seqs': '64'})},
                                        'llmfleet-worker-1': {'main_pid': 301, 'flags': dict(probe.flags_of(ARGV), **{'max-num-seqs': '64'})}})}
    case.update(overrides)
    return case


def test_a_kill_that_fails_only_requests_in_flight_passes_with_its_time_to_serve():
    figures, problems = probe.judge(kill_case())
    assert problems == []
    assert (figures['failed'], figures['allowed_failed'], figures['seconds_to_serve']) == (2, 4, 46.8)
    assert (figures['main_pid_before'], figures['main_pid'], figures['killed_pid']) == (100, 200, 100)
    assert figures['errors'] == [{'error': 'boom', 'count': 2}]


@pytest.mark.parametrize('case, problem', [
    (kill_case(load=load(failed=5, completed=295)), '5 requests failed, 4 allowed (5x boom)'),
    (kill_case(watch={'outages': []}), 'never stopped serving (the kill had no effect)'),
    (kill_case(watch={'outages': [{'down_at': 1000.3, 'up_at': None, 'seconds': None, 'error': 'refused'}],
                      'last_error': 'refused'}, watch_timeout=600), 'did not serve again within 600 s (last: refused)'),
    (kill_case(after=proofs(**{'llmfleet-worker-0': {}})), 'still runs the killed API server 100'),
    (kill_case(case='kill_engine_core', kill={'pid': 101, 'killed_at': 1000.0}), 'still runs the killed engine core 101'),
    (kill_case(after=proofs(**{'llmfleet-worker-0': {'main_pid': 200, 'venv': ALT}})), 'came back with another venv'),
    (kill_case(after=proofs(**{'llmfleet-worker-0': {'main_pid': 0}})), 'runs no process after the case'),
    (kill_case(after=proofs(**{'llmfleet-worker-0': {'main_pid': 200, 'version': None}})), 'reports no engine version'),
    (kill_case(load=None), 'no result of the load'),
    (kill_case(load_finished_early=True), 'raise faults_load_seconds.kill_api_server'),
], ids=['too-many-failed', 'no-outage', 'not-back', 'same-api-server', 'same-engine-core', 'other-venv', 'no-process',
        'no-version', 'no-load', 'load-too-short'])
def test_kill_cases_fail_on_what_was_not_expected(case, problem):
    _figures, problems = probe.judge(case)
    assert any(problem in text for text in problems), problems


def test_a_changed_flag_that_every_worker_runs_without_a_failed_request_passes():
    figures, problems = probe.judge(serve_case())
    assert problems == []
    assert (figures['failed'], figures['allowed_failed'], figures['seconds_to_serve'], figures['outages']) == (0, 0, 42.0, 1)


def test_an_engine_switch_to_the_other_wheelhouse_passes():
    after = proofs(**{'llmfleet-worker-0': {'main_pid': 300, 'venv': ALT, 'wheelhouse': 'http://repo/wheels/alternate/'},
                      'llmfleet-worker-1': {'main_pid': 301, 'venv': ALT, 'wheelhouse': 'http://repo/wheels/alternate/'}})
    figures, problems = probe.judge(serve_case('engine_switch', after=after))
    assert problems == [] and figures['venv'] == ALT
    # The marker holds the URL with one slash at the end, as the engine role writes it; the case's may have none.
    assert probe.judge(serve_case('engine_switch', after=after, wheelhouse='http://repo/wheels/alternate'))[1] == []


@pytest.mark.parametrize('case, problem', [
    (serve_case(load=load(failed=1, completed=99)), '1 requests failed, 0 allowed'),
    (serve_case(serve_rc=2), 'serve.yml failed (rc=2): see benchmark-results/faults-changed_flag-serve.log'),
    (serve_case(watch={'outages': []}), 'never stopped serving (serve.yml did not restart it)'),
    (serve_case(after=proofs(**{'llmfleet-worker-0': {'main_pid': 300, 'flags': dict(probe.flags_of(ARGV), **{'max-num-seqs': '64'})},
                                'llmfleet-worker-1': {'main_pid': 301}})), 'llmfleet-worker-1 runs without --max-num-seqs 64'),
    (serve_case(before=proofs(**{'llmfleet-worker-0': {'flags': {'max-num-seqs': '64'}}})), 'before the case already'),
    (serve_case('engine_switch'), 'from the wheelhouse http://repo/wheels/latest/, not http://repo/wheels/alternate/'),
    (serve_case('engine_switch', after=proofs(**{'llmfleet-worker-0': {'wheelhouse': 'http://repo/wheels/alternate/'}})),
     'still runs the venv ' + VENV),
], ids=['failed-request', 'serve-failed', 'not-restarted', 'flag-missing', 'flag-already-set', 'old-wheelhouse', 'old-venv'])
def test_serve_cases_fail_on_what_was_not_expected(case, problem):
    _figures, problems = probe.judge(case)
    assert any(problem in text for text in problems), problems


def test_report_prints_a_table_and_collects_the_problems(tmp_path):
    load_file = tmp_path / 'faults-kill_api_server-load.json'
    load_file.write_text(json.dumps(load(failed=2, completed=298)))
    case = kill_case(load_file=str(load_file))
    del case['load']
    cases = tmp_path / 'cases.json'
    cases.write_text(json.dumps([case, serve_case(serve_rc=1)]))
    out = tmp_path / 'faults.json'
    result = probe.cmd_report(type('Args', (), {'cases': str(cases), 'out': str(out), 'over_start_most': 10.0}))
    assert json.loads(out.read_text())['problems'] == result['problems']
    assert [row['case'] for row in result['cases']] == ['kill_api_server', 'changed_flag']
    assert result['problems'] == ['changed_flag: playbooks/serve.yml failed (rc=1): see benchmark-results/faults-changed_flag-serve.log']
    head, first, second, note = result['table']
    assert note == 'kill_api_server: served again 46.8 s after the kill, +4.8 s over a planned restart (42.0 s; goal: +10 s at most)'
    assert result['cases'][0]['over_start_s'] == 4.8
    # The same way back against a goal of 4 s is a problem.
    late = probe.report([dict(kill_case(), load=load(failed=2, completed=298)), serve_case()], 4)
    assert 'kill_api_server: served again 46.8 s after the kill, more than 4 s over a planned restart (42.0 s)' in late['problems']
    assert head.split()[:4] == ['case', 'worker', 'failed', 'allowed']
    assert first.split()[:6] == ['kill_api_server', 'llmfleet-worker-0', '2', '4', '298', '46.8']
    assert second.split()[:6] == ['changed_flag', 'llmfleet-worker-0', '0', '0', '100', '42.0']


def test_the_parent_pid_is_read_after_the_command_name():
    assert probe.parent_of('4242 (VLLM::EngineCo) S 4100 4242 4242 0 -1 4194560') == 4100
    assert probe.parent_of('17 (a) b) (c) R 1 17 17 0') == 1
