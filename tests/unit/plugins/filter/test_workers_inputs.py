# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every input rule of the workers role, triggered and quiet."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.workers import RULES, workers_input_problems
from input_rules import PLATFORM, UNSUPPORTED, Case, assert_every_rule_reached, role_defaults, run_case

# The default bind address is templated from the node's facts; a run renders it to the node's address.
VALUES = dict(role_defaults('workers'), workers_bind_address='10.0.0.11')

# A 2-socket 8 x MI300X node: GPUs 0-3 on NUMA node 0, 4-7 on node 1, 96 CPUs per socket.
ROCM = {'gpu_count': 8, 'gpus': [{'index': index, 'numa_node': index // 4} for index in range(8)]}
NUMA = {'nodes': [{'id': 0, 'cpus': list(range(0, 96))}, {'id': 1, 'cpus': list(range(96, 192))}]}
# What `ss -Hltnpe` prints on a converged node: sshd (root: no uid), and the role's own worker (uid 999, llmfleet's in
# the getent_passwd facts), held by its API server and engine core.
LISTENING = (
    'LISTEN 0      128          0.0.0.0:22        0.0.0.0:* users:(("sshd",pid=700,fd=3)) ino:1700 sk:1 cgroup:/system.slice/ssh.service <->\n'
    'LISTEN 0      4096       10.0.0.11:8000      0.0.0.0:* users:(("VLLM::EngineCor",pid=902,fd=21),("vllm",pid=901,fd=21))'
    ' uid:999 ino:1901 sk:2 cgroup:/system.slice/llmfleet-worker-0.service <->\n')
PASSWD = {'llmfleet': ['x', '999', '999', '', '/var/lib/llmfleet', '/usr/sbin/nologin']}
NGINX_8001 = (
    'LISTEN 0      511          0.0.0.0:8001      0.0.0.0:* users:(("nginx",pid=801,fd=6),("nginx",pid=800,fd=6)) ino:1800 sk:3 <->\n'
    'LISTEN 0      511             [::]:8001         [::]:* users:(("nginx",pid=801,fd=7),("nginx",pid=800,fd=7)) ino:1801 sk:4 v6only:1 <->\n')
# The capture of tests/unit/fixtures/ss (README.md there): port 18000 is held by uid 65534 (VLLM::APIServer and
# VLLM::EngineCor), 18002 by root's "nginx: master", 2024 by a program ss cannot see.
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', 'ss',
                       'listening-debian12-iproute2-6.1.txt')) as _handle:
    CAPTURED = _handle.read()
NOBODY = {'nobody': ['x', '65534', '65534', 'nobody', '/nonexistent', '/usr/sbin/nologin']}
ONE_CPU_PER_NODE = {'nodes': [{'id': 0, 'cpus': [0]}, {'id': 1, 'cpus': [1]}]}
CTX = {'platform': PLATFORM, 'rocm': ROCM, 'numa': NUMA, 'listening': LISTENING, 'passwd': PASSWD, 'host': 'gpu-node-1'}

CASES = [
    Case('unsupported-system', {}, 'workers-unsupported-system', {'platform': UNSUPPORTED}, contains='CentOS 9'),
    Case('supported-system', {}, 'workers-unsupported-system', absent=True),

    Case('public-address', {'workers_bind_address': '8.8.8.8'}, 'workers-bind-address-public', contains=['"8.8.8.8"', '127.0.0.1']),
    Case('every-address', {'workers_bind_address': '0.0.0.0'}, 'workers-bind-address-public', contains='"0.0.0.0"'),
    Case('not-an-address', {'workers_bind_address': 'gpu-node-1'}, 'workers-bind-address-public'),
    Case('loopback', {'workers_bind_address': '127.0.0.1'}, 'workers-bind-address-public', absent=True),
    Case('private-v6', {'workers_bind_address': 'fd00::11'}, 'workers-bind-address-public', absent=True),

    Case('gpu-the-node-lacks', {'workers_gpus': [0, 9]}, 'workers-gpus-unknown', contains=['[0, 9]', 'GPU(s) 9', 'gpu-node-1', '8: 0-7']),
    Case('gpu-as-string', {'workers_gpus': ['0']}, 'workers-gpus-unknown', contains='"0"'),
    Case('gpus-the-node-has', {'workers_gpus': [0, 7]}, 'workers-gpus-unknown', absent=True),

    Case('tp-size-not-a-divisor', {'workers_mode': 'hybrid', 'workers_tp_size': 3}, 'workers-tp-size-divides',
         contains=['workers_tp_size 3', 'the 8 GPUs served on gpu-node-1', '1, 2, 4, 8']),
    Case('tp-size-zero', {'workers_mode': 'hybrid', 'workers_tp_size': 0}, 'workers-tp-size-divides'),
    Case('tp-size-of-served-gpus', {'workers_mode': 'hybrid', 'workers_tp_size': 2, 'workers_gpus': [0, 1, 2]},
         'workers-tp-size-divides', contains='the 3 GPUs'),
    Case('tp-size-divides', {'workers_mode': 'hybrid', 'workers_tp_size': 4}, 'workers-tp-size-divides', absent=True),
    Case('tp-size-as-extra-var', {'workers_mode': 'hybrid', 'workers_tp_size': '2'}, 'workers-tp-size-divides', absent=True),
    Case('tp-size-ignored-in-dp', {'workers_mode': 'dp', 'workers_tp_size': 3}, 'workers-tp-size-divides', absent=True),

    Case('port-base-privileged', {'workers_port_base': 80}, 'workers-port-base-range', contains=['workers_port_base 80', '1024 to 65527']),
    Case('port-base-too-high', {'workers_port_base': 65530}, 'workers-port-base-range', contains='the 8 GPUs served on gpu-node-1'),
    Case('port-base-highest', {'workers_port_base': 65527}, 'workers-port-base-range', absent=True),
    Case('port-base-as-extra-var', {'workers_port_base': '9000'}, 'workers-port-base-range', absent=True),

    Case('memory-share-zero', {'workers_gpu_memory_utilization': 0}, 'workers-gpu-memory-utilization-range', contains='(0, 1]'),
    Case('memory-share-percent', {'workers_gpu_memory_utilization': 90}, 'workers-gpu-memory-utilization-range', contains=' 90 '),
    Case('memory-share-whole', {'workers_gpu_memory_utilization': 1}, 'workers-gpu-memory-utilization-range', absent=True),
    Case('memory-share-as-extra-var', {'workers_gpu_memory_utilization': '0.85'}, 'workers-gpu-memory-utilization-range', absent=True),

    Case('model-path-two-lines', {'workers_model_path': '/models/m\nExecStartPre=/bin/sh'}, 'workers-unit-values-one-line',
         contains='workers_model_path "/models/m\\nExecStartPre=/bin/sh"'),
    Case('env-value-two-lines', {'workers_env': {'FOO': 'a\nUser=root'}}, 'workers-unit-values-one-line',
         contains='workers_env entry "FOO"'),
    Case('extra-flag-list-two-lines', {'workers_extra_flags': {'served-model-name': ['a', 'b\nc']}}, 'workers-unit-values-one-line',
         contains='workers_extra_flags entry "served-model-name"'),
    Case('one-line-values', {'workers_env': {'VLLM_CPU_OMP_THREADS_BIND': '0'},
                             'workers_extra_flags': {'enforce-eager': True, 'max-model-len': 512}},
         'workers-unit-values-one-line', absent=True),

    Case('env-name-with-space', {'workers_env': {'A B': '1'}}, 'workers-unit-names', contains='"A B"'),
    Case('env-name-with-equals', {'workers_rocm_env': {'A=B': '1'}}, 'workers-unit-names', contains='"A=B"'),
    Case('flag-name-with-space', {'workers_extra_flags': {'max-model-len 1 --trust-remote-code': True}}, 'workers-unit-names',
         contains='trust-remote-code'),
    Case('hostile-values-good-names',
         {'workers_env': {'PCT': '100%', 'DOLLAR': '$HOME', 'SPACE': 'a b', 'QUOTE': 'say "hi"'},
          'workers_extra_flags': {'--max-model-len': 512, 'served-model-name': 'x%y'}},
         'workers-unit-names', absent=True),
    # The acceptance check of issue 11: -e '{"workers_env": {"A": "1\nExecStartPre=+/usr/bin/id"}}'.
    Case('env-value-adds-a-root-directive', {'workers_env': {'A': '1\nExecStartPre=+/usr/bin/id'}}, 'workers-unit-values-one-line',
         contains=['workers_env entry "A"', 'ExecStartPre=+/usr/bin/id', 'give it on one line']),

    Case('user-with-space', {'workers_user': 'llm fleet'}, 'workers-user-name', contains='workers_user "llm fleet"'),
    Case('user-with-specifier', {'workers_user': '%u'}, 'workers-user-name', contains='"%u"'),
    Case('user-plain', {'workers_user': 'svc_llm-1'}, 'workers-user-name', absent=True),

    Case('api-key-flag', {'workers_extra_flags': {'api-key': 'k' * 20}}, 'workers-extra-flags-api-key',
         contains=['"api-key"', 'llmfleet_worker_api_key', '/proc']),
    Case('api-key-flag-dashes', {'workers_extra_flags': {'--api_key': 'k' * 20}}, 'workers-extra-flags-api-key', contains='"--api_key"'),
    Case('sglang-config-flag', {'workers_engine': 'sglang', 'workers_extra_flags': {'config': '/etc/x.yaml'}},
         'workers-extra-flags-api-key', contains=['"config"', 'api-key and config']),
    Case('vllm-config-flag', {'workers_extra_flags': {'config': '/etc/x.yaml'}}, 'workers-extra-flags-api-key', absent=True),

    Case('sglang-metrics-off', {'workers_engine': 'sglang', 'workers_extra_flags': {'enable-metrics': False}},
         'workers-extra-flags-sglang-metrics', contains=['"enable-metrics" to false', '/metrics', 'sglang:num_running_reqs']),
    Case('sglang-metrics-null-underscores', {'workers_engine': 'sglang', 'workers_extra_flags': {'enable_metrics': None}},
         'workers-extra-flags-sglang-metrics', contains='"enable_metrics"'),
    Case('sglang-metrics-on', {'workers_engine': 'sglang', 'workers_extra_flags': {'enable-metrics': True}},
         'workers-extra-flags-sglang-metrics', absent=True),
    Case('vllm-metrics-flag-off', {'workers_extra_flags': {'enable-metrics': False}}, 'workers-extra-flags-sglang-metrics',
         absent=True),
    Case('api-key-in-env', {'workers_env': {'VLLM_API_KEY': 'k' * 20}}, 'workers-env-api-key',
         contains=['workers_env sets VLLM_API_KEY', 'llmfleet_worker_api_key']),
    Case('api-key-in-rocm-env', {'workers_rocm_env': {'VLLM_API_KEY': 'k' * 20}}, 'workers-env-api-key',
         contains='workers_rocm_env sets VLLM_API_KEY'),
    Case('other-env', {'workers_env': {'VLLM_API_KEY_FILE': 'x'}}, 'workers-env-api-key', absent=True),

    Case('api-key-short', {}, 'workers-api-key-format', {'api_key': 'short'}, contains='llmfleet_worker_api_key is not'),
    Case('api-key-two-lines', {}, 'workers-api-key-format', {'api_key': 'k' * 20 + '\nExecStartPre=/bin/id'}),
    Case('api-key-quote', {}, 'workers-api-key-format', {'api_key': 'k' * 20 + '"'}),
    Case('api-key-dollar', {}, 'workers-api-key-format', {'api_key': 'k' * 20 + '$HOME'}),
    Case('api-key-none', {}, 'workers-api-key-format', {'api_key': None}),
    Case('api-key-fine', {}, 'workers-api-key-format', {'api_key': 'aB3' * 16}, absent=True),
    Case('api-key-not-given', {}, 'workers-api-key-format', absent=True),

    Case('rdma-as-string', {'workers_rdma': 'yes'}, 'workers-rdma-type', contains='workers_rdma "yes"'),
    Case('rdma-null', {'workers_rdma': None}, 'workers-rdma-type', absent=True),
    Case('rdma-on', {'workers_rdma': True}, 'workers-rdma-type', absent=True),

    Case('multinode-group-not-a-name', {'workers_multinode_group': 'gpu nodes'}, 'workers-multinode',
         contains='workers_multinode_group "gpu nodes"'),
    Case('multinode-sglang', {'workers_multinode_group': 'pairs', 'workers_engine': 'sglang'}, 'workers-multinode',
         contains='workers_engine is "sglang"'),
    Case('multinode-privileged-port', {'workers_multinode_group': 'pairs', 'workers_multinode_master_port': 80, 'workers_engine': 'vllm'},
         'workers-multinode', contains='workers_multinode_master_port 80'),
    Case('multinode-size-zero', {'workers_multinode_group': 'pairs', 'workers_multinode_pipeline_parallel_size': 0, 'workers_engine': 'vllm'},
         'workers-multinode', contains='workers_multinode_pipeline_parallel_size 0'),
    Case('multinode-fine', {'workers_multinode_group': 'pairs', 'workers_multinode_tensor_parallel_size': '8', 'workers_engine': 'vllm'},
         'workers-multinode', absent=True),
    Case('multinode-off', {'workers_multinode_master_port': 'x'}, 'workers-multinode', absent=True),
    Case('multinode-ray-token-short', {'workers_multinode_group': 'pairs', 'workers_engine': 'vllm',
                                       'workers_multinode_backend': 'ray', 'workers_ray_auth_token': 'abc\nRAY'},
         'workers-multinode', contains=['workers_ray_auth_token is not at least 16 characters', 'not shown']),
    Case('multinode-ray-token-empty', {'workers_multinode_group': 'pairs', 'workers_engine': 'vllm',
                                       'workers_multinode_backend': 'ray', 'workers_ray_auth_token': ''},
         'workers-multinode', contains='workers_ray_auth_token'),
    Case('multinode-ray-token-fine', {'workers_multinode_group': 'pairs', 'workers_engine': 'vllm',
                                      'workers_multinode_backend': 'ray', 'workers_ray_auth_token': 'f' * 64},
         'workers-multinode', absent=True),
    Case('multinode-mp-no-token', {'workers_multinode_group': 'pairs', 'workers_engine': 'vllm',
                                   'workers_ray_auth_token': ''}, 'workers-multinode', absent=True),

    Case('restart-unknown', {'workers_restart': 'later'}, 'workers-restart', contains=['workers_restart "later"', 'auto']),
    Case('restart-rolling', {'workers_restart': 'rolling'}, 'workers-restart', absent=True),
    Case('restart-now', {'workers_restart': 'now'}, 'workers-restart', absent=True),

    Case('max-unavailable-zero', {'workers_max_unavailable': 0}, 'workers-max-unavailable',
         contains=['workers_max_unavailable 0', 'a count of 1 or more']),
    Case('max-unavailable-percent-over', {'workers_max_unavailable': '150%'}, 'workers-max-unavailable',
         contains=['"150%"', 'from 1 to 100']),
    Case('max-unavailable-word', {'workers_max_unavailable': 'half'}, 'workers-max-unavailable', contains='"half"'),
    Case('max-unavailable-count', {'workers_max_unavailable': 2}, 'workers-max-unavailable', absent=True),
    Case('max-unavailable-percent', {'workers_max_unavailable': '25%'}, 'workers-max-unavailable', absent=True),

    Case('numa-cpus-short', {}, 'workers-numa-cpus-short', {'numa': ONE_CPU_PER_NODE},
         contains=['gpu-node-1', 'NUMA node 0 has 1 CPU(s) for 4 workers', 'workers_mode']),
    Case('numa-cpus-enough-for-tp', {'workers_mode': 'tp'}, 'workers-numa-cpus-short', {'numa': ONE_CPU_PER_NODE}, absent=True),
    Case('numa-cpus-enough', {}, 'workers-numa-cpus-short', absent=True),

    Case('port-taken', {}, 'workers-ports-taken', {'listening': LISTENING + NGINX_8001},
         contains='Port(s) 8001 of the planned workers are taken by nginx on gpu-node-1: choose another workers_port_base (now 8000)'),
    Case('port-taken-by-ssh', {'workers_port_base': 20}, 'workers-ports-taken', contains=['22', 'sshd']),
    Case('port-taken-by-a-nameless-program', {}, 'workers-ports-taken',
         {'listening': 'LISTEN 0 128 0.0.0.0:8002 0.0.0.0:* ino:60 sk:1c5 cgroup:/ <->'},
         contains='Port(s) 8002 of the planned workers are taken by a program ss cannot name on gpu-node-1'),
    Case('port-of-own-worker', {}, 'workers-ports-taken', absent=True),
    # Another user's worker on the port is not ours, even when its program is.
    Case('port-of-another-users-worker', {}, 'workers-ports-taken', {'passwd': {'llmfleet': ['x', '998', '998', '', '/', '']}},
         contains='Port(s) 8000 of the planned workers are taken by VLLM::EngineCor, vllm on gpu-node-1'),
    # A first run: the user does not exist yet (getent's fail_key: false gives null), so no socket is the workers'.
    Case('port-before-the-user-exists', {}, 'workers-ports-taken', {'passwd': {'llmfleet': None}}, contains='8000'),
    Case('port-taken-beyond-the-plan', {'workers_mode': 'tp'}, 'workers-ports-taken', {'listening': LISTENING + NGINX_8001},
         absent=True),
    Case('ports-of-the-capture', {'workers_port_base': 18000}, 'workers-ports-taken', {'listening': CAPTURED},
         contains=['Port(s) 18000, 18001, 18002, 18003, 18004, 18005, 18006 of the planned workers are taken by'
                   ' VLLM::EngineCor, VLLM::APIServer, nginx: master, sshd, python3 on gpu-node-1']),
    Case('ports-of-the-capture-own', {'workers_port_base': 18000, 'workers_user': 'nobody', 'workers_gpus': [0, 1]},
         'workers-ports-taken', {'listening': CAPTURED, 'passwd': NOBODY}, absent=True),
    Case('ports-of-the-capture-nameless', {'workers_port_base': 2024, 'workers_gpus': [0]}, 'workers-ports-taken',
         {'listening': CAPTURED}, contains='Port(s) 2024 of the planned workers are taken by a program ss cannot name'),
    Case('sockets-unreadable', {}, 'workers-ports-taken', {'listening': 'State Recv-Q Send-Q Local Address:Port'},
         contains=['The listening sockets of gpu-node-1 cannot be judged', 'line 1 of `ss -Hltnpe`', "'State Recv-Q"]),
]


@pytest.mark.parametrize('case', CASES, ids=[case.id for case in CASES])
def test_rule(case):
    run_case(RULES, VALUES, CTX, case)


def test_defaults_have_no_problem():
    assert workers_input_problems(VALUES, PLATFORM, rocm=ROCM, numa=NUMA, listening=LISTENING, passwd=PASSWD, host='gpu-node-1') == []


def test_the_lab_nodes_have_no_problem():
    # inventories/sandbox: one worker on GPU 0 of a node whose NUMA node is unknown.
    values = dict(VALUES, workers_gpus=[0], workers_extra_flags={'enforce-eager': True, 'kv-cache-memory-bytes': 268435456})
    rocm = {'gpu_count': 2, 'gpus': [{'index': 0, 'numa_node': None}, {'index': 1, 'numa_node': None}]}
    assert workers_input_problems(values, PLATFORM, rocm=rocm, numa={'nodes': [{'id': 0, 'cpus': [0, 1]}]},
                                  listening=LISTENING, passwd=PASSWD, host='gpu-node-2') == []


def test_bad_gpus_speak_once():
    # The plan's own error for unknown GPUs is not repeated by the NUMA and port rules.
    problems = workers_input_problems(dict(VALUES, workers_gpus=[9]), PLATFORM, rocm=ROCM, numa=NUMA, listening=LISTENING, passwd=PASSWD)
    assert len(problems) == 1 and 'workers_gpus [9]' in problems[0]


def test_the_key_is_never_shown():
    secret = 'S3cret' * 4 + '"'
    problems = workers_input_problems(VALUES, PLATFORM, rocm=ROCM, numa=NUMA, listening=LISTENING, passwd=PASSWD, api_key=secret)
    assert len(problems) == 1 and 'S3cret' not in problems[0]


def test_every_rule_is_reached():
    assert_every_rule_reached(RULES, CASES)


def test_a_bad_ray_token_is_never_shown():
    values = dict(VALUES, workers_multinode_group='pairs', workers_multinode_backend='ray', workers_engine='vllm',
                  workers_ray_auth_token='short-secret')
    problems = workers_input_problems(values, PLATFORM, rocm=ROCM, numa=NUMA)
    assert any('workers_ray_auth_token' in problem for problem in problems)
    assert not any('short-secret' in problem for problem in problems)
