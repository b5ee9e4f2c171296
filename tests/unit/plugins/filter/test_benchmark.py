# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scaling benchmark's input rules, its shapes and what the gateway drains for each."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.benchmark import (
    RULES, benchmark_client_endpoint, benchmark_gateway_drained, benchmark_input_problems, benchmark_nodes, benchmark_shapes)
from input_rules import Case, assert_every_rule_reached, role_defaults, run_case

VALUES = dict(role_defaults('benchmark'), benchmark_client='node-1')


def _node(name, gpus=8, workers_gpus=None, mode='dp', tp_size=1, group=None, members=None, mn_tp=None, mn_pp=None):
    return {'name': name, 'gpus': list(range(gpus)), 'workers_gpus': workers_gpus or [], 'workers_mode': mode,
            'workers_tp_size': tp_size, 'workers_multinode_group': group, 'multinode_members': list(members or []),
            'workers_multinode_tensor_parallel_size': mn_tp, 'workers_multinode_pipeline_parallel_size': mn_pp}


def _group(name, names, gpus=8, workers_gpus=None, tp=None, pp=None):
    """The members of one multi-node group, as benchmark_nodes reads them (every member names the group alike)."""
    return [_node(node, gpus, workers_gpus, group=name, members=names, mn_tp=tp, mn_pp=pp) for node in names]


# Two nodes of 8 GPUs, served one worker per GPU.
FLEET = [_node('node-1'), _node('node-2')]
# The sandbox: two simulated nodes (8 and 2 GPUs), one CPU worker each on GPU 0.
SANDBOX = [_node('node-1', 8, [0]), _node('node-2', 2, [0])]
CTX = {'nodes': FLEET, 'engine': 'vllm', 'dataset_found': False}
# Two 8-GPU nodes serving one engine (tp 8 x pp 2, the defaults) and a node of 8 GPUs that serves alone.
MIXED = _group('llama405b', ['node-1', 'node-2']) + [_node('node-3')]
# The sandbox serving one engine over both nodes (tp 2 x pp 1 over GPU 0 of each).
SANDBOX_GROUP = _group('gpu_nodes', ['node-1', 'node-2'], workers_gpus=[0], tp=2, pp=1)

CASES = [
    Case('counts-default', {}, 'benchmark-gpu-counts', absent=True),
    Case('counts-empty', {'benchmark_gpu_counts': []}, 'benchmark-gpu-counts', contains='benchmark_gpu_counts is []'),
    Case('counts-zero', {'benchmark_gpu_counts': [0, 2]}, 'benchmark-gpu-counts', contains='positive GPU counts'),
    Case('counts-bool', {'benchmark_gpu_counts': [True]}, 'benchmark-gpu-counts'),
    Case('counts-string', {'benchmark_gpu_counts': '1,2'}, 'benchmark-gpu-counts', contains='"1,2"'),
    Case('counts-twice', {'benchmark_gpu_counts': [2, 2]}, 'benchmark-gpu-counts', contains='names a count twice'),
    Case('modes-default', {}, 'benchmark-modes', absent=True),
    Case('modes-pp', {'benchmark_modes': ['dp', 'pp']}, 'benchmark-modes',
         contains='benchmark_modes names "pp", which the benchmark does not have for the engine vllm'),
    Case('modes-sglang', {'benchmark_modes': ['ep']}, 'benchmark-modes', {'engine': 'sglang'}, contains='for the engine sglang'),
    Case('modes-empty', {'benchmark_modes': []}, 'benchmark-modes', contains='non-empty list of dp, tp and multinode'),
    Case('modes-multinode', {'benchmark_modes': ['multinode']}, 'benchmark-modes', {'nodes': MIXED}, absent=True),
    Case('modes-twice', {'benchmark_modes': ['dp', 'dp']}, 'benchmark-modes', contains='names a mode twice'),
    Case('tp-fits', {'benchmark_gpu_counts': [1, 2, 4, 8]}, 'benchmark-tp-counts', absent=True),
    # 16 GPUs is the whole fleet: a count dp can have, but no single node holds it.
    Case('tp-above-node', {'benchmark_gpu_counts': [16]}, 'benchmark-tp-counts',
         contains=['benchmark_gpu_counts has 16 with tp', 'the largest node serves on 8 GPUs', 'leave 16 out']),
    Case('tp-not-dividing', {'benchmark_gpu_counts': [3]}, 'benchmark-tp-counts',
         contains=['3 divides no node\'s served GPUs (node-1: 8, node-2: 8)']),
    Case('tp-beyond-fleet', {'benchmark_gpu_counts': [32]}, 'benchmark-tp-counts', absent=True),
    Case('dp-only-16', {'benchmark_gpu_counts': [16], 'benchmark_modes': ['dp']}, 'benchmark-tp-counts', absent=True),
    Case('tp-sandbox', {'benchmark_gpu_counts': [2], 'benchmark_modes': ['tp']}, 'benchmark-tp-counts', {'nodes': SANDBOX},
         contains='the largest node serves on 1 GPU:'),
    # tp runs on the nodes that serve alone: 16 is beyond them (a note), 8 fits node-3.
    Case('tp-group-members-left-out', {'benchmark_gpu_counts': [8, 16]}, 'benchmark-tp-counts', {'nodes': MIXED}, absent=True),
    Case('tp-solo-nodes-only', {'benchmark_gpu_counts': [3]}, 'benchmark-tp-counts', {'nodes': MIXED},
         contains='3 divides no node\'s served GPUs (node-3: 8)'),
    # A multi-node group the benchmark measures as one engine.
    Case('group-fine', {}, 'benchmark-multinode-group', {'nodes': MIXED}, absent=True),
    Case('group-sandbox', {'benchmark_modes': ['multinode']}, 'benchmark-multinode-group', {'nodes': SANDBOX_GROUP},
         absent=True),
    Case('group-without-multinode-mode', {'benchmark_modes': ['dp']}, 'benchmark-multinode-group',
         {'nodes': _group('g', ['node-1', 'node-2'], tp=3) + [_node('node-3')]}, absent=True),
    Case('group-sizes-not-gpus', {}, 'benchmark-multinode-group', {'nodes': _group('g', ['node-1', 'node-2'], tp=4, pp=1)},
         contains=['benchmark_modes has multinode, but the group g has tensor parallel 4 x pipeline parallel 1 = 4 ranks',
                   'its 2 members serve 8 GPUs each (16)']),
    Case('group-sizes-differ', {}, 'benchmark-multinode-group',
         {'nodes': [_node('node-1', group='g', members=['node-1', 'node-2'], mn_tp=8),
                    _node('node-2', group='g', members=['node-1', 'node-2'], mn_tp=16, mn_pp=1)]},
         contains='the members of the group g give different parallel sizes (node-1: tp 8, pp null, node-2: tp 16, pp 1)'),
    Case('group-gpus-differ', {}, 'benchmark-multinode-group',
         {'nodes': [_node('node-1', 8, group='g', members=['node-1', 'node-2']),
                    _node('node-2', 8, [0, 1, 2, 3], group='g', members=['node-1', 'node-2'])]},
         contains='serve different numbers of GPUs (node-1: 8, node-2: 4)'),
    Case('group-member-not-gpu-node', {}, 'benchmark-multinode-group',
         {'nodes': [_node('node-1', group='g', members=['node-1', 'cpu-1'])]},
         contains='the group g has members that are not GPU nodes (cpu-1)'),
    Case('group-member-serves-alone', {}, 'benchmark-multinode-group',
         {'nodes': [_node('node-1', group='g', members=['node-1', 'node-2']), _node('node-2')]},
         contains='node-2 is a member of the group g but serves without it (workers_multinode_group null)'),
    Case('group-names-a-group-it-is-not-in', {}, 'benchmark-multinode-group',
         {'nodes': _group('g', ['node-1', 'node-2']) + [_node('node-3', group='g', members=['node-1', 'node-2'])]},
         contains='node-3 names the group g but is not a member of it'),
    Case('group-unknown', {}, 'benchmark-multinode-group', {'nodes': [_node('node-1', group='nosuch'), _node('node-2')]},
         contains='node-1 names the group "nosuch" in workers_multinode_group, which the inventory does not have'),
    # Settings that leave no shape to run.
    Case('measure-default', {}, 'benchmark-nothing-to-measure', absent=True),
    Case('measure-group-only', {}, 'benchmark-nothing-to-measure', {'nodes': SANDBOX_GROUP}, absent=True),
    Case('measure-group-without-multinode', {'benchmark_modes': ['dp', 'tp']}, 'benchmark-nothing-to-measure',
         {'nodes': SANDBOX_GROUP},
         contains=['benchmark_modes ["dp", "tp"] with benchmark_gpu_counts [1, 2, 4, 8] leaves nothing to measure',
                   'every GPU node serves in a multi-node group (gpu_nodes (node-1, node-2))',
                   'Add multinode to benchmark_modes to measure the engine of the group gpu_nodes.']),
    Case('measure-multinode-without-group', {'benchmark_modes': ['multinode']}, 'benchmark-nothing-to-measure',
         contains=['no GPU node serves in a multi-node group (workers_multinode_group)',
                   'Set workers_multinode_group on the members of a group, or measure dp or tp.']),
    Case('measure-counts-beyond-solo-nodes', {'benchmark_gpu_counts': [16], 'benchmark_modes': ['dp']},
         'benchmark-nothing-to-measure', {'nodes': MIXED},
         contains='dp-n16: 16 GPUs, but the nodes that serve alone (in no multi-node group) serve on 8.'),
    Case('sweep-rate', {'benchmark_sweep': 'request_rate', 'benchmark_loads_per_gpu': [0.5, 2]}, 'benchmark-sweep', absent=True),
    Case('sweep-unknown', {'benchmark_sweep': 'qps'}, 'benchmark-sweep', contains='benchmark_sweep is "qps"'),
    Case('loads-default', {}, 'benchmark-loads', absent=True),
    Case('loads-empty', {'benchmark_loads_per_gpu': []}, 'benchmark-loads', contains='non-empty list of positive numbers'),
    Case('loads-negative', {'benchmark_loads_per_gpu': [1, -2]}, 'benchmark-loads'),
    Case('loads-decreasing', {'benchmark_loads_per_gpu': [8, 1]}, 'benchmark-loads', contains='is not increasing'),
    Case('loads-fraction', {'benchmark_loads_per_gpu': [0.5, 1]}, 'benchmark-loads', contains='whole numbers'),
    Case('counts-positive', {}, 'benchmark-counts-positive', absent=True),
    Case('input-len-zero', {'benchmark_input_len': 0}, 'benchmark-counts-positive', contains='benchmark_input_len is 0'),
    Case('timeout-string', {'benchmark_point_timeout': 'soon'}, 'benchmark-counts-positive',
         contains='benchmark_point_timeout is "soon"'),
    Case('gain-default', {}, 'benchmark-saturation-gain', absent=True),
    Case('gain-one', {'benchmark_saturation_gain': 1}, 'benchmark-saturation-gain', contains='benchmark_saturation_gain is 1'),
    Case('dataset-random', {}, 'benchmark-dataset', absent=True),
    Case('dataset-unknown', {'benchmark_dataset': 'sonnet'}, 'benchmark-dataset', contains='benchmark_dataset is "sonnet"'),
    Case('sharegpt-no-path', {'benchmark_dataset': 'sharegpt'}, 'benchmark-dataset', contains='needs benchmark_dataset_path'),
    Case('sharegpt-missing', {'benchmark_dataset': 'sharegpt', 'benchmark_dataset_path': '/data/sharegpt.json'},
         'benchmark-dataset', contains='benchmark_dataset_path "/data/sharegpt.json" is not a file on the controller'),
    Case('sharegpt-found', {'benchmark_dataset': 'sharegpt', 'benchmark_dataset_path': '/data/sharegpt.json'},
         'benchmark-dataset', {'dataset_found': True}, absent=True),
    Case('client-node', {}, 'benchmark-client', absent=True),
    Case('client-headless-member', {'benchmark_client': 'node-2'}, 'benchmark-client', {'nodes': MIXED}, absent=True),
    Case('client-gateway', {'benchmark_client': 'gateway-1'}, 'benchmark-client',
         contains='benchmark_client is "gateway-1", not a host of the gpu_nodes group'),
]


@pytest.mark.parametrize('case', CASES, ids=[case.id for case in CASES])
def test_rule(case):
    run_case(RULES, VALUES, CTX, case)


def test_every_rule_is_reached():
    assert_every_rule_reached(RULES, CASES)


def test_defaults_pass_on_a_fleet_of_8_gpu_nodes():
    assert benchmark_input_problems(VALUES, FLEET) == []


def _plan(nodes, **changes):
    values = dict(VALUES, **changes)
    assert benchmark_input_problems(values, nodes) == []
    return benchmark_shapes(values, nodes, model_heads=32)


def test_sandbox_dp_one_and_two_use_one_worker_per_node_and_change_no_node():
    plan = _plan(SANDBOX, benchmark_gpu_counts=[1, 2, 4, 8], benchmark_modes=['dp'], benchmark_loads_per_gpu=[1, 2, 4],
                 benchmark_min_prompts=8, benchmark_prompts_per_load=4)
    assert [shape['name'] for shape in plan['shapes']] == ['dp-n1', 'dp-n2']
    assert plan['shapes'][0]['members'] == [{'node': 'node-1', 'keep': 1, 'overrides': None}]
    assert plan['shapes'][1]['members'] == [{'node': 'node-1', 'keep': 1, 'overrides': None},
                                            {'node': 'node-2', 'keep': 1, 'overrides': None}]
    assert plan['skipped'] == ['dp-n4: 4 GPUs, but the fleet serves on 2.', 'dp-n8: 8 GPUs, but the fleet serves on 2.']
    assert plan['overridden'] == []
    # The load grows with N; at least benchmark_min_prompts requests, one warm-up per stream.
    assert plan['shapes'][1]['points'] == [{'load': 2, 'num_prompts': 8, 'warmups': 2}, {'load': 4, 'num_prompts': 16, 'warmups': 4},
                                           {'load': 8, 'num_prompts': 32, 'warmups': 8}]


def test_dp_and_tp_on_8_gpu_nodes():
    plan = _plan(FLEET)
    assert [shape['name'] for shape in plan['shapes']] == ['dp-n1', 'dp-n2', 'dp-n4', 'dp-n8', 'tp-n2', 'tp-n4', 'tp-n8']
    assert plan['skipped'] == ['tp-n1: one one-GPU server, the shape dp-n1 measures.',
                               'multinode: no GPU node serves in a multi-node group (workers_multinode_group).']
    assert plan['groups'] == []
    # dp fills the first node first and keeps its one-GPU workers as they are.
    assert plan['shapes'][3]['members'] == [{'node': 'node-1', 'keep': 8, 'overrides': None}]
    # tp runs one server over the first N GPUs of the first node: that node serves differently for it.
    assert plan['shapes'][5]['members'] == [{'node': 'node-1', 'keep': 1,
                                             'overrides': {'workers_mode': 'tp', 'workers_gpus': [0, 1, 2, 3]}}]
    assert plan['overridden'] == ['node-1']
    assert [point['load'] for point in plan['shapes'][3]['points']] == [8, 64, 256, 1024, 2048]
    assert plan['shapes'][3]['points'][-1] == {'load': 2048, 'num_prompts': 16384, 'warmups': 64}


def test_dp_over_two_nodes():
    plan = _plan([_node('node-1', 4), _node('node-2', 4)], benchmark_gpu_counts=[6], benchmark_modes=['dp'])
    assert plan['shapes'][0]['members'] == [{'node': 'node-1', 'keep': 4, 'overrides': None},
                                            {'node': 'node-2', 'keep': 2, 'overrides': None}]


def test_a_node_the_inventory_serves_with_tp_gets_dp_workers_for_dp_and_keeps_its_server_for_its_tp():
    nodes = [_node('node-1', 8, mode='tp')]
    plan = _plan(nodes, benchmark_gpu_counts=[2, 8], benchmark_client='node-1')
    by_name = dict((shape['name'], shape) for shape in plan['shapes'])
    assert by_name['dp-n2']['members'] == [{'node': 'node-1', 'keep': 2,
                                            'overrides': {'workers_mode': 'dp', 'workers_gpus': [0, 1]}}]
    assert by_name['tp-n8']['members'] == [{'node': 'node-1', 'keep': 1, 'overrides': None}]


def test_hybrid_groups_of_the_count_are_kept():
    plan = _plan([_node('node-1', 8, mode='hybrid', tp_size=4)], benchmark_gpu_counts=[4], benchmark_modes=['tp'])
    assert plan['shapes'][0]['members'] == [{'node': 'node-1', 'keep': 1, 'overrides': None}]


def test_tp_only_measures_its_own_n1():
    plan = _plan(FLEET, benchmark_gpu_counts=[1], benchmark_modes=['tp'])
    assert plan['shapes'][0]['members'] == [{'node': 'node-1', 'keep': 1, 'overrides': None}]


def test_tp_counts_the_model_cannot_split_are_left_out():
    values = dict(VALUES, benchmark_gpu_counts=[2, 8], benchmark_modes=['tp'])
    plan = benchmark_shapes(values, FLEET, model_heads=12)
    assert [shape['name'] for shape in plan['shapes']] == ['tp-n2']
    assert plan['skipped'] == ["tp-n8: the model's 12 attention heads do not split over 8 GPUs."]


def test_request_rate_loads_stay_fractional():
    plan = _plan(FLEET, benchmark_gpu_counts=[2], benchmark_modes=['dp'], benchmark_sweep='request_rate',
                 benchmark_loads_per_gpu=[0.5, 4], benchmark_min_prompts=4, benchmark_prompts_per_load=8)
    assert plan['shapes'][0]['points'] == [{'load': 1.0, 'num_prompts': 8, 'warmups': 1}, {'load': 8, 'num_prompts': 64, 'warmups': 8}]


def test_no_warmup():
    plan = _plan(FLEET, benchmark_gpu_counts=[1], benchmark_modes=['dp'], benchmark_warmup=False)
    assert all(point['warmups'] == 0 for point in plan['shapes'][0]['points'])


def test_no_node_is_an_error():
    with pytest.raises(AnsibleFilterError, match='no GPU node'):
        benchmark_shapes(VALUES, [])


class _Host(dict):
    """A stand-in for one host of Ansible's hostvars (a mapping with get)."""


def _hostvars():
    def endpoints(address, count):
        return [{'url': 'http://%s:%d' % (address, 8000 + index)} for index in range(count)]
    return {'node-1': _Host(llmfleet_worker_endpoints=endpoints('10.0.0.1', 2), workers_gpus=[0, 1], workers_mode='dp',
                            ansible_facts={'rocm': {'gpus': [{'index': 0}, {'index': 1}]}}),
            'node-2': _Host(llmfleet_worker_endpoints=endpoints('10.0.0.2', 2),
                            ansible_facts={'rocm': {'gpus': [{'index': 0}, {'index': 1}]}})}


def test_nodes_from_hostvars():
    alone = {'workers_multinode_group': None, 'multinode_members': [], 'workers_multinode_tensor_parallel_size': None,
             'workers_multinode_pipeline_parallel_size': None}
    assert benchmark_nodes(['node-1', 'node-2'], _hostvars()) == [
        dict(alone, name='node-1', gpus=[0, 1], workers_gpus=[0, 1], workers_mode='dp', workers_tp_size=1),
        dict(alone, name='node-2', gpus=[0, 1], workers_gpus=[], workers_mode='dp', workers_tp_size=1)]


def test_nodes_of_a_group_from_hostvars():
    hostvars = _group_hostvars()
    nodes = benchmark_nodes(['node-1', 'node-2', 'node-3'], hostvars, {'g': ['node-1', 'node-2'], 'all': ['x']})
    assert [node['workers_multinode_group'] for node in nodes] == ['g', 'g', None]
    assert nodes[1]['multinode_members'] == ['node-1', 'node-2'] and nodes[2]['multinode_members'] == []
    assert nodes[0]['workers_multinode_tensor_parallel_size'] == 2 and nodes[0]['workers_multinode_pipeline_parallel_size'] == 1
    # Without Ansible's groups, each host's own.
    hostvars['node-1']['groups'] = {'g': ['node-1', 'node-2']}
    assert benchmark_nodes(['node-1'], hostvars)[0]['multinode_members'] == ['node-1', 'node-2']


def test_the_gateway_drains_every_worker_but_the_shapes():
    shape = {'name': 'dp-n3', 'members': [{'node': 'node-1', 'keep': 2, 'overrides': None},
                                          {'node': 'node-2', 'keep': 1, 'overrides': None}]}
    assert benchmark_gateway_drained(shape, ['node-1', 'node-2'], _hostvars()) == ['10.0.0.2:8001']
    shape = {'name': 'dp-n1', 'members': [{'node': 'node-1', 'keep': 1, 'overrides': None}]}
    assert benchmark_gateway_drained(shape, ['node-1', 'node-2'], _hostvars()) == [
        '10.0.0.1:8001', '10.0.0.2:8000', '10.0.0.2:8001']


def test_a_node_with_too_few_workers_for_its_shape_is_an_error():
    shape = {'name': 'dp-n3', 'members': [{'node': 'node-1', 'keep': 3, 'overrides': None}]}
    with pytest.raises(AnsibleFilterError, match='node-1 serves 2 worker'):
        benchmark_gateway_drained(shape, ['node-1', 'node-2'], _hostvars())


def _group_hostvars():
    """The sandbox's two nodes serving one engine (node-1 rank 0, node-2 headless) and a third node serving alone."""
    group = dict(workers_multinode_group='g', workers_multinode_tensor_parallel_size=2, workers_multinode_pipeline_parallel_size=1,
                 workers_gpus=[0], ansible_facts={'rocm': {'gpus': [{'index': 0}, {'index': 1}]}})
    head = {'url': 'http://10.0.0.1:8000', 'venv': '/opt/llmfleet/venv', 'model': 'tiny-llama', 'model_path': '/m',
            'ranks': [{'node': 'node-2', 'name': 'llmfleet-worker-engine-0'}]}
    return {'node-1': _Host(group, llmfleet_worker_endpoints=[head]),
            'node-2': _Host(group, llmfleet_worker_endpoints=[]),
            'node-3': _Host(llmfleet_worker_endpoints=[{'url': 'http://10.0.0.3:8000', 'venv': '/opt/other'}],
                            ansible_facts={'rocm': {'gpus': [{'index': 0}]}})}


def test_a_group_is_one_shape_and_never_taken_apart():
    plan = _plan(MIXED, benchmark_gpu_counts=[1, 8, 16])
    by_name = dict((shape['name'], shape) for shape in plan['shapes'])
    assert sorted(by_name) == ['dp-n1', 'dp-n8', 'multinode-n16', 'tp-n8']
    # dp and tp on the node that serves alone only.
    assert [member['node'] for shape in plan['shapes'] if shape['mode'] != 'multinode' for member in shape['members']] == [
        'node-3'] * 3
    # The group: one engine over its 16 GPUs (tp 8 x pp 2, the defaults), kept at rank 0, nothing overridden.
    assert by_name['multinode-n16']['members'] == [{'node': 'node-1', 'keep': 1, 'overrides': None}]
    assert by_name['multinode-n16']['group'] == {'name': 'llama405b', 'members': ['node-1', 'node-2'], 'head': 'node-1',
                                                 'tp': 8, 'pp': 2, 'gpus': 16}
    assert [point['load'] for point in by_name['multinode-n16']['points']] == [16, 128, 512, 2048, 4096]
    assert plan['groups'] == [by_name['multinode-n16']['group']]
    assert plan['overridden'] == ['node-3']
    assert plan['skipped'] == ['dp-n16: 16 GPUs, but the nodes that serve alone (in no multi-node group) serve on 8.',
                               'tp-n1: one one-GPU server, the shape dp-n1 measures.',
                               'tp-n16: 16 GPUs, but the nodes that serve alone (in no multi-node group) serve on 8.']


def test_the_sandbox_group_is_measured_as_one_engine_over_two_nodes():
    plan = _plan(SANDBOX_GROUP, benchmark_gpu_counts=[2], benchmark_modes=['dp', 'multinode'], benchmark_loads_per_gpu=[1],
                 benchmark_min_prompts=8)
    assert [shape['name'] for shape in plan['shapes']] == ['multinode-n2']
    assert plan['shapes'][0]['group'] == {'name': 'gpu_nodes', 'members': ['node-1', 'node-2'], 'head': 'node-1', 'tp': 2,
                                          'pp': 1, 'gpus': 2}
    assert plan['shapes'][0]['points'] == [{'load': 2, 'num_prompts': 16, 'warmups': 2}]
    assert plan['skipped'] == ['dp: every GPU node serves in a multi-node group (gpu_nodes (node-1, node-2)), which the'
                               ' benchmark measures as one engine (multinode) and does not take apart; dp shapes run on'
                               ' nodes that serve alone.']
    assert plan['overridden'] == []


def test_two_groups_of_as_many_gpus_are_measured_once():
    nodes = _group('a', ['node-1', 'node-2']) + _group('b', ['node-3', 'node-4']) + _group('c', ['node-5', 'node-6', 'node-7'])
    plan = _plan(nodes, benchmark_modes=['multinode'])
    measured = [(shape['name'], shape['group']['name']) for shape in plan['shapes']]
    assert measured == [('multinode-n16', 'a'), ('multinode-n24', 'c')]
    assert plan['skipped'] == ["multinode-n16 (group b): one engine over 16 GPUs is measured already, the group a's."]
    assert [group['name'] for group in plan['groups']] == ['a', 'b', 'c']


def test_the_gateway_keeps_the_group_at_rank_0_and_drains_it_for_the_other_shapes():
    hostvars = _group_hostvars()
    names = ['node-1', 'node-2', 'node-3']
    group_shape = {'name': 'multinode-n2', 'members': [{'node': 'node-1', 'keep': 1, 'overrides': None}]}
    assert benchmark_gateway_drained(group_shape, names, hostvars) == ['10.0.0.3:8000']
    dp_shape = {'name': 'dp-n1', 'members': [{'node': 'node-3', 'keep': 1, 'overrides': None}]}
    assert benchmark_gateway_drained(dp_shape, names, hostvars) == ['10.0.0.1:8000']


def test_the_client_takes_its_own_worker_or_its_groups():
    hostvars = _group_hostvars()
    nodes = benchmark_nodes(['node-1', 'node-2', 'node-3'], hostvars, {'g': ['node-1', 'node-2']})
    assert benchmark_client_endpoint('node-3', nodes, hostvars)['venv'] == '/opt/other'
    assert benchmark_client_endpoint('node-1', nodes, hostvars)['url'] == 'http://10.0.0.1:8000'
    # A headless member has no endpoint of its own: its group's rank 0 gives the venv, model and tokenizer.
    assert benchmark_client_endpoint('node-2', nodes, hostvars) == hostvars['node-1']['llmfleet_worker_endpoints'][0]


def test_a_client_without_a_worker_is_an_error():
    hostvars = _group_hostvars()
    hostvars['node-1']['llmfleet_worker_endpoints'] = []
    nodes = benchmark_nodes(['node-1', 'node-2', 'node-3'], hostvars, {'g': ['node-1', 'node-2']})
    with pytest.raises(AnsibleFilterError, match='node-1 publishes no worker .* for its group g, of which the client node-2'):
        benchmark_client_endpoint('node-2', nodes, hostvars)
    with pytest.raises(AnsibleFilterError, match='the client gateway-1 is not a GPU node'):
        benchmark_client_endpoint('gateway-1', nodes, hostvars)
