# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.worker_plan import cpu_list, engine_flags, is_private_address, worker_commands, worker_plan


def rocm(numa_nodes):
    return {'gpus': [{'index': index, 'numa_node': node} for index, node in enumerate(numa_nodes)]}


# A 2-socket 8 x MI300X host: 96 CPUs per socket, GPUs 0-3 on node 0 and 4-7 on node 1.
MI300X_8 = rocm([0, 0, 0, 0, 1, 1, 1, 1])
TWO_SOCKETS = {'nodes': [{'id': 0, 'cpus': list(range(0, 96))}, {'id': 1, 'cpus': list(range(96, 192))}]}


def test_dp_gives_each_gpu_a_worker_port_and_disjoint_cpus_of_its_node():
    plan = worker_plan(MI300X_8, TWO_SOCKETS, mode='dp', port_base=8000)
    assert [w['port'] for w in plan] == list(range(8000, 8008))
    assert [w['gpus'] for w in plan] == [[i] for i in range(8)]
    assert [w['numa_nodes'] for w in plan] == [[0]] * 4 + [[1]] * 4
    assert [w['cpus'] for w in plan] == ['0-23', '24-47', '48-71', '72-95', '96-119', '120-143', '144-167', '168-191']


def test_tp_is_one_server_over_every_gpu_bound_to_both_nodes():
    plan = worker_plan(MI300X_8, TWO_SOCKETS, mode='tp')
    assert len(plan) == 1
    assert plan[0]['gpus'] == list(range(8)) and plan[0]['numa_nodes'] == [0, 1] and plan[0]['cpus'] == '0-191'


def test_hybrid_makes_replicas_of_tp_groups():
    plan = worker_plan(MI300X_8, TWO_SOCKETS, mode='hybrid', tp_size=4, port_base=9000)
    assert [(w['name'], w['port'], w['gpus'], w['cpus']) for w in plan] == [
        ('llmfleet-worker-0', 9000, [0, 1, 2, 3], '0-95'), ('llmfleet-worker-1', 9001, [4, 5, 6, 7], '96-191')]


def test_hybrid_refuses_a_tp_size_that_does_not_divide_the_gpus():
    with pytest.raises(AnsibleFilterError, match='workers_tp_size 3 does not divide the 8 GPUs'):
        worker_plan(MI300X_8, TWO_SOCKETS, mode='hybrid', tp_size=3)


def test_a_subset_of_gpus_keeps_its_indices():
    plan = worker_plan(MI300X_8, TWO_SOCKETS, mode='dp', gpus=[5])
    assert [(w['gpus'], w['port'], w['cpus']) for w in plan] == [([5], 8000, '96-191')]


def test_unknown_gpu_index_is_refused():
    with pytest.raises(AnsibleFilterError, match=r'workers_gpus names GPU\(s\) 9'):
        worker_plan(MI300X_8, TWO_SOCKETS, gpus=[9])


def test_gpu_on_a_node_the_machine_lacks_is_not_pinned():
    plan = worker_plan(rocm([1, None]), {'nodes': [{'id': 0, 'cpus': [0, 1]}]})
    assert [(w['numa_nodes'], w['cpus']) for w in plan] == [([], ''), ([], '')]


def test_more_workers_than_cpus_on_a_node_is_refused():
    with pytest.raises(AnsibleFilterError, match='NUMA node 0 has 2 CPU'):
        worker_plan(rocm([0, 0, 0]), {'nodes': [{'id': 0, 'cpus': [0, 1]}]})


def test_uneven_split_gives_the_first_workers_one_more():
    plan = worker_plan(rocm([0, 0, 0]), {'nodes': [{'id': 0, 'cpus': list(range(8))}]})
    assert [w['cpus'] for w in plan] == ['0-2', '3-5', '6-7']


@pytest.mark.parametrize('cpus, text', [([0, 1, 2, 3, 8], '0-3,8'), ([5], '5'), ([], ''), ([3, 1, 2], '1-3')],
                         ids=['range-and-single', 'single', 'empty', 'unsorted'])
def test_cpu_list(cpus, text):
    assert cpu_list(cpus) == text


@pytest.mark.parametrize('address, private', [
    ('127.0.0.1', True), ('10.1.2.3', True), ('192.168.0.5', True), ('172.20.0.2', True), ('fd00::1', True),
    ('8.8.8.8', False), ('0.0.0.0', False), ('not-an-address', False)],
    ids=['loopback', '10/8', '192.168/16', '172.16/12', 'ula', 'public', 'any', 'garbage'])
def test_is_private_address(address, private):
    assert is_private_address(address) is private


def test_engine_flags_render_sorted_with_bare_and_dropped_flags():
    assert engine_flags({'port': 8000, 'enforce-eager': True, 'block-size': None, 'trust-remote-code': False,
                         'served-model-name': ['a', 'b']}) == ['--enforce-eager', '--port', '8000', '--served-model-name', 'a', 'b']


VLLM_NAMES = {'host': 'host', 'port': 'port', 'tp': 'tensor-parallel-size'}


def test_worker_commands_pin_with_numactl_and_add_tp_only_for_groups():
    plan = worker_plan(MI300X_8, TWO_SOCKETS, mode='hybrid', tp_size=4)
    workers = worker_commands(plan, ['/venv/bin/vllm', 'serve', '/models/m'], VLLM_NAMES, {'max-model-len': 4096}, '10.0.0.5')
    assert workers[1]['prefix'] == ['/usr/bin/numactl', '--physcpubind=96-191', '--membind=1']
    assert workers[1]['argv'] == ['/venv/bin/vllm', 'serve', '/models/m', '--host', '10.0.0.5', '--max-model-len', '4096',
                                  '--port', '8001', '--tensor-parallel-size', '4']
    assert workers[1]['endpoint'] == {'name': 'llmfleet-worker-1', 'address': '10.0.0.5', 'port': 8001, 'gpus': [4, 5, 6, 7],
                                      'url': 'http://10.0.0.5:8001', 'model': None, 'model_path': None, 'engine': None,
                                      'engine_version': None, 'venv': None, 'health_url': 'http://10.0.0.5:8001/health'}
    single = worker_commands(worker_plan(MI300X_8, TWO_SOCKETS, gpus=[0]), ['vllm'], VLLM_NAMES, {}, 'fd00::5')
    assert single[0]['argv'] == ['vllm', '--host', 'fd00::5', '--port', '8000']
    assert single[0]['endpoint']['url'] == 'http://[fd00::5]:8000'


def test_worker_commands_put_what_the_workers_run_on_in_every_endpoint():
    identity = {'model': 'tiny-llama', 'model_path': '/models/tiny-llama', 'engine': 'vllm', 'engine_version': '0.32.0',
                'venv': '/opt/llmfleet/engines/vllm-0.32.0-3f1c2a9e0b7d', 'other': 'left out'}
    plan = worker_plan(MI300X_8, TWO_SOCKETS, mode='hybrid', tp_size=4)
    workers = worker_commands(plan, ['vllm'], VLLM_NAMES, {}, '10.0.0.5', identity=identity)
    expected = dict(identity)
    del expected['other']
    for worker in workers:
        endpoint = worker['endpoint']
        assert dict((key, endpoint[key]) for key in expected) == expected
        assert 'other' not in endpoint
    assert [worker['endpoint']['name'] for worker in workers] == ['llmfleet-worker-0', 'llmfleet-worker-1']
    # The caller's dict is not shared between endpoints.
    workers[0]['endpoint']['model'] = 'changed'
    assert workers[1]['endpoint']['model'] == 'tiny-llama'


@pytest.mark.parametrize('engine, url', [
    ('vllm', 'http://10.0.0.5:8000/health'),
    ('sglang', 'http://10.0.0.5:8000/health_generate'),
    (None, 'http://10.0.0.5:8000/health'),
], ids=['vllm', 'sglang-generates-one-token', 'unknown'])
def test_each_endpoint_names_its_engines_readiness_url(engine, url):
    plan = worker_plan(MI300X_8, TWO_SOCKETS, gpus=[0])
    endpoint = worker_commands(plan, ['engine'], VLLM_NAMES, {}, '10.0.0.5', identity={'engine': engine})[0]['endpoint']
    assert (endpoint['engine'], endpoint['health_url']) == (engine, url)


def test_worker_commands_without_pinning_or_numa_have_no_prefix():
    plan = worker_plan(MI300X_8, TWO_SOCKETS, gpus=[0])
    assert worker_commands(plan, ['vllm'], VLLM_NAMES, {}, '127.0.0.1', numa_pinning=False)[0]['prefix'] == []
    unpinned = worker_plan(rocm([None]), None)
    assert worker_commands(unpinned, ['vllm'], VLLM_NAMES, {}, '127.0.0.1')[0]['prefix'] == []


def test_worker_commands_derive_aiter_per_node_and_the_affinity_variable_per_worker():
    # GPUs 0-3 on NUMA node 0, GPU 4 on a node the machine does not have: workers 0-3 pinned, worker 4 not.
    plan = worker_plan(rocm([0, 0, 0, 0, 7]), TWO_SOCKETS)
    workers = worker_commands(plan, ['vllm'], VLLM_NAMES, {}, '10.0.0.5', aiter=True, gfx_targets=['gfx942'],
                              cache_root='/var/lib/llmfleet/cache/')
    assert workers[0]['env'] == {'VLLM_ROCM_USE_AITER': '1', 'HSA_OVERRIDE_CPU_AFFINITY_DEBUG': '0',
                                 'AITER_JIT_DIR': '/var/lib/llmfleet/cache/llmfleet-worker-0/aiter'}
    assert workers[4]['env'] == {'VLLM_ROCM_USE_AITER': '1', 'AITER_JIT_DIR': '/var/lib/llmfleet/cache/llmfleet-worker-4/aiter'}
    unpinned = worker_commands(plan, ['vllm'], VLLM_NAMES, {}, '10.0.0.5', numa_pinning=False, aiter=True,
                               gfx_targets=['gfx90a'])
    assert [worker['env'] for worker in unpinned] == [{'VLLM_ROCM_USE_AITER': '0'}] * 5
    # Nothing said (a caller of the filter before issue 36): AITER off.
    assert worker_commands(plan, ['vllm'], VLLM_NAMES, {}, '10.0.0.5')[4]['env'] == {'VLLM_ROCM_USE_AITER': '0'}
    # The user's names are left to the user.
    user = worker_commands(plan, ['vllm'], VLLM_NAMES, {}, '10.0.0.5', aiter=False, gfx_targets=['gfx942'],
                           env={'VLLM_ROCM_USE_AITER': '1', 'HSA_OVERRIDE_CPU_AFFINITY_DEBUG': '1'})
    assert user[0]['env'] == {'AITER_JIT_DIR': '/var/lib/llmfleet/cache/llmfleet-worker-0/aiter'}
