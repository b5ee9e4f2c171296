# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One engine over a group's nodes: each member's rank, flags and environment, and the refusals."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.worker_plan import worker_commands, workers_multinode_plan, workers_ray_status
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.multinode import multinode_plan, ray_status

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', 'ray_status')
ENV = '# NCCL/RCCL environment\nNCCL_SOCKET_IFNAME="=ens5"\nNCCL_IB_HCA="=mlx5_0,mlx5_1"\n'


def _node(name, address, gpus=8, env=ENV, interface='ens5', **alike):
    node = {'name': name, 'env_text': env, 'gpus': gpus, 'rocm_version': '7.1.1', 'venv': 'vllm-0.32.0-6a03233d5e8b',
            'model': 'a18e57',
            'interfaces': {'eno1': {'ipv4': {'address': '192.168.0.%s' % address.split('.')[-1]}},
                           interface.replace('-', '_'): {'ipv4': {'address': address}}}}
    node.update(alike)
    return node


MEMBERS = [_node('gpu-a', '10.1.0.11'), _node('gpu-b', '10.1.0.12')]


def test_rank_zero_serves_and_the_others_run_headless():
    head = multinode_plan(MEMBERS, 'gpu-a')
    other = multinode_plan(MEMBERS, 'gpu-b')
    assert head['problems'] == [] and other['problems'] == []
    assert (head['rank'], other['rank']) == (0, 1)
    assert head['head'] == other['head'] == 'gpu-a'
    # The fabric interface's address, not the management one.
    assert head['master_addr'] == other['master_addr'] == '10.1.0.11'
    assert head['flags'] == {'tensor-parallel-size': 8, 'pipeline-parallel-size': 2, 'nnodes': 2, 'node-rank': 0,
                             'master-addr': '10.1.0.11', 'master-port': 29501, 'distributed-executor-backend': 'mp',
                             'headless': False}
    assert other['flags']['node-rank'] == 1 and other['flags']['headless'] is True
    assert other['env'] == {'VLLM_HOST_IP': '10.1.0.12', 'GLOO_SOCKET_IFNAME': 'ens5'}
    assert [member['address'] for member in head['members']] == ['10.1.0.11', '10.1.0.12']


def test_device_names_may_differ_between_members():
    other = _node('gpu-b', '10.1.0.12', env='NCCL_SOCKET_IFNAME="=ens6"\nNCCL_IB_HCA="=bnxt_re0"\n', interface='ens6')
    assert multinode_plan([MEMBERS[0], other], 'gpu-b')['problems'] == []


def test_a_mapping_of_records_in_inventory_order():
    plan = multinode_plan({'gpu-a': dict(MEMBERS[0]), 'gpu-b': dict(MEMBERS[1])}, 'gpu-b')
    assert plan['problems'] == [] and plan['rank'] == 1 and plan['head'] == 'gpu-a'


def test_sizes_and_port_from_the_inventory():
    # As an extra var gives them: text.
    plan = multinode_plan(MEMBERS, 'gpu-b', tp_size='16', pp_size=1, master_port='29600')
    assert plan['problems'] == []
    assert (plan['tp'], plan['pp'], plan['flags']['master-port']) == (16, 1, 29600)


def test_an_interface_with_a_dash_is_found_under_its_fact_name():
    members = [_node('gpu-a', '10.1.0.11', env='NCCL_SOCKET_IFNAME="=enp1s0-f0"\n', interface='enp1s0-f0'),
               _node('gpu-b', '10.1.0.12', env='NCCL_SOCKET_IFNAME="=enp1s0-f0"\n', interface='enp1s0-f0')]
    assert multinode_plan(members, 'gpu-a')['env']['GLOO_SOCKET_IFNAME'] == 'enp1s0-f0'


@pytest.mark.parametrize('members, host, kwargs, expected', [
    (MEMBERS, 'gpu-c', {}, 'gpu-c is not a member'),
    (MEMBERS[:1], 'gpu-a', {}, 'has one member'),
    ([MEMBERS[0], _node('gpu-b', '10.1.0.12', env=None)], 'gpu-a', {}, 'gpu-b has no /etc/llmfleet/rccl.env'),
    ([MEMBERS[0], _node('gpu-b', '10.1.0.12', env='NCCL_SOCKET_IFNAME="^lo,docker"\n')], 'gpu-a', {},
     'gpu-b: its rccl.env names no interface in NCCL_SOCKET_IFNAME'),
    ([MEMBERS[0], _node('gpu-b', '10.1.0.12', env='NCCL_SOCKET_IFNAME=ens5\n')], 'gpu-a', {}, 'is not NAME="value"'),
    ([MEMBERS[0], _node('gpu-b', '10.1.0.12', env='NCCL_SOCKET_IFNAME="=ens6"\n')], 'gpu-a', {},
     'gpu-b: its fabric interface ens6 has no IPv4 address'),
    ([MEMBERS[0], _node('gpu-b', '10.1.0.12', gpus=2)], 'gpu-a', {}, 'different numbers of GPUs (gpu-a 8, gpu-b 2)'),
    ([MEMBERS[0], _node('gpu-b', '10.1.0.12', rocm_version='7.0.2')], 'gpu-a', {},
     'different ROCm releases (gpu-a 7.1.1, gpu-b 7.0.2): install one release'),
    ([MEMBERS[0], _node('gpu-b', '10.1.0.12', venv='vllm-0.32.0-0123456789ab')], 'gpu-a', {},
     'different engine venvs (gpu-a vllm-0.32.0-6a03233d5e8b, gpu-b vllm-0.32.0-0123456789ab)'),
    ([MEMBERS[0], _node('gpu-b', '10.1.0.12', model='')], 'gpu-a', {}, "different models (the engine role's marker) (gpu-a a18e57, gpu-b unknown)"),
    ([MEMBERS[0], _node('gpu-b', '10.1.0.12', env=ENV + 'NCCL_IB_GID_INDEX="3"\n')], 'gpu-a', {},
     'different RCCL settings (/etc/llmfleet/rccl.env) (gpu-a {}, gpu-b {NCCL_IB_GID_INDEX=3})'),
    (MEMBERS, 'gpu-a', {'tp_size': 8, 'pp_size': 1}, 'is 8 ranks, but the 2 members serve 8 GPUs each (16)'),
    ({'gpu-a': MEMBERS[0], 'gpu-b': None}, 'gpu-a', {}, 'gpu-b is a member of the group but not in this run'),
    (MEMBERS, 'gpu-a', {'tp_size': 0}, 'workers_multinode_tensor_parallel_size 0 must be'),
    (MEMBERS, 'gpu-a', {'pp_size': 'two'}, "workers_multinode_pipeline_parallel_size 'two' must be"),
    (MEMBERS, 'gpu-a', {'pp_size': True}, 'workers_multinode_pipeline_parallel_size True must be'),
])
def test_refusals_name_the_member_and_the_fix(members, host, kwargs, expected):
    problems = multinode_plan(members, host, **kwargs)['problems']
    assert any(expected in problem for problem in problems), problems


def test_the_filter_refuses_what_is_not_a_list():
    with pytest.raises(AnsibleFilterError, match='list of the group'):
        workers_multinode_plan('gpu-a', 'gpu-a')


PLAN = [{'name': 'llmfleet-worker-0', 'index': 0, 'port': 8000, 'gpus': list(range(8)), 'numa_nodes': [], 'cpus': ''}]
NAMES = {'host': 'host', 'port': 'port', 'tp': 'tensor-parallel-size'}


def test_a_headless_member_listens_nowhere_and_has_no_endpoint():
    part = multinode_plan(MEMBERS, 'gpu-b')
    worker = worker_commands(PLAN, ['vllm', 'serve', '/m'], NAMES, {'served-model-name': 'm'}, '10.0.0.12',
                             identity={'engine': 'vllm'}, multinode=part)[0]
    assert worker['endpoint'] is None
    assert '--host' not in worker['argv'] and '--port' not in worker['argv']
    assert worker['argv'][3:] == ['--distributed-executor-backend', 'mp', '--headless', '--master-addr', '10.1.0.11',
                                  '--master-port', '29501', '--nnodes', '2', '--node-rank', '1',
                                  '--pipeline-parallel-size', '2', '--served-model-name', 'm',
                                  '--tensor-parallel-size', '8']


def test_rank_zero_keeps_its_api_and_endpoint():
    part = multinode_plan(MEMBERS, 'gpu-a', tp_size=16, pp_size=1)
    worker = worker_commands(PLAN, ['vllm', 'serve', '/m'], NAMES, {}, '10.0.0.11', identity={'engine': 'vllm'},
                             multinode=part)[0]
    assert worker['endpoint']['url'] == 'http://10.0.0.11:8000'
    # The roll restarts the other ranks with it.
    assert worker['endpoint']['ranks'] == [{'node': 'gpu-b', 'name': 'llmfleet-worker-0'}]
    assert worker['argv'][worker['argv'].index('--tensor-parallel-size') + 1] == '16'
    assert '--headless' not in worker['argv'] and '--host' in worker['argv']


RAY_MEMBERS = [dict(member, ray=True) for member in MEMBERS]


def test_ray_every_member_runs_a_ray_node_and_rank_zero_the_engine_on_it():
    head = multinode_plan(RAY_MEMBERS, 'gpu-a', backend='ray', ray_temp_dir='/run/llmfleet-ray')
    other = multinode_plan(RAY_MEMBERS, 'gpu-b', backend='ray', ray_temp_dir='/run/llmfleet-ray')
    assert head['problems'] == [] and other['problems'] == []
    # No --nnodes with Ray (vLLM 0.32 refuses the pair): the driver places every rank on the cluster.
    assert head['flags'] == {'tensor-parallel-size': 8, 'pipeline-parallel-size': 2, 'distributed-executor-backend': 'ray',
                             'headless': False}
    assert head['ray']['head'] is True and other['ray']['head'] is False
    assert head['ray']['address'] == other['ray']['address'] == '10.1.0.11:6379'
    assert head['env'] == {'VLLM_HOST_IP': '10.1.0.11', 'GLOO_SOCKET_IFNAME': 'ens5'}
    common = ['--node-manager-port', '6380', '--object-manager-port', '6381', '--runtime-env-agent-port', '6382',
              '--dashboard-agent-grpc-port', '6383', '--dashboard-agent-listen-port', '6384', '--metrics-export-port', '6385',
              '--min-worker-port', '10002', '--max-worker-port', '19999']
    assert head['ray']['args'] == ['start', '--block', '--disable-usage-stats', '--node-ip-address', '10.1.0.11',
                                   '--num-gpus', '8', '--temp-dir', '/run/llmfleet-ray',
                                   '--head', '--port', '6379', '--include-dashboard=false'] + common
    # ray start refuses --include-dashboard on a node that is not the head.
    assert other['ray']['args'] == ['start', '--block', '--disable-usage-stats', '--node-ip-address', '10.1.0.12',
                                    '--num-gpus', '8', '--temp-dir', '/run/llmfleet-ray',
                                    '--address', '10.1.0.11:6379'] + common


def test_ray_ports_from_the_inventory():
    plan = multinode_plan(RAY_MEMBERS, 'gpu-b', backend='ray', ray_port='7000', ray_worker_ports=' 20000-20999 ')
    assert plan['problems'] == [] and plan['ray']['address'] == '10.1.0.11:7000'
    args = plan['ray']['args']
    assert args[args.index('--metrics-export-port') + 1] == '7006'
    assert args[-4:] == ['--min-worker-port', '20000', '--max-worker-port', '20999']


def test_mp_plans_no_ray_and_ignores_its_settings():
    plan = multinode_plan(MEMBERS, 'gpu-a', ray_port='not a port')
    assert plan['problems'] == [] and plan['ray'] is None and plan['backend'] == 'mp'


@pytest.mark.parametrize('members, kwargs, expected', [
    (MEMBERS, {'backend': 'ray'}, 'the engine venv of gpu-a, gpu-b has no Ray (bin/ray): build Ray'),
    ([RAY_MEMBERS[0], MEMBERS[1]], {'backend': 'ray'}, 'the engine venv of gpu-b has no Ray'),
    (RAY_MEMBERS, {'backend': 'slurm'}, "workers_multinode_backend 'slurm' must be one of mp, ray"),
    (RAY_MEMBERS, {'backend': 'ray', 'ray_port': 80}, 'workers_ray_port 80 and workers_ray_worker_ports'),
    (RAY_MEMBERS, {'backend': 'ray', 'ray_port': 65530}, 'must be a port 1024-65529'),
    (RAY_MEMBERS, {'backend': 'ray', 'ray_worker_ports': '19999-10002'}, "workers_ray_worker_ports '19999-10002'"),
    (RAY_MEMBERS, {'backend': 'ray', 'ray_worker_ports': '10002'}, "workers_ray_worker_ports '10002'"),
    # The range may not hold Ray's own fixed ports (6379-6385).
    (RAY_MEMBERS, {'backend': 'ray', 'ray_worker_ports': '6385-7000'}, 'leaves out workers_ray_port'),
    (RAY_MEMBERS, {'backend': 'ray', 'ray_worker_ports': '5000-6379'}, 'leaves out workers_ray_port'),
])
def test_ray_refusals(members, kwargs, expected):
    problems = multinode_plan(members, 'gpu-a', **kwargs)['problems']
    assert any(expected in problem for problem in problems), problems


@pytest.mark.parametrize('worker_ports', ['6386-7000', '5000-6378'])
def test_ray_worker_ports_beside_its_own_are_fine(worker_ports):
    assert multinode_plan(RAY_MEMBERS, 'gpu-a', backend='ray', ray_worker_ports=worker_ports)['problems'] == []


def test_ray_head_runs_its_ray_node_then_the_engine_and_a_roll_restarts_every_ray_node():
    part = multinode_plan(RAY_MEMBERS, 'gpu-a', backend='ray')
    head = worker_commands(PLAN, ['vllm', 'serve', '/m'], NAMES, {}, '10.0.0.11', identity={'engine': 'vllm'},
                           multinode=part, ray_command=['/opt/venv/bin/ray'], ray_name='llmfleet-worker-ray')
    assert [(worker['name'], worker['kind']) for worker in head] == [('llmfleet-worker-ray', 'ray'),
                                                                     ('llmfleet-worker-0', 'engine')]
    ray, engine = head
    assert ray['endpoint'] is None and ray['port'] is None and ray['gpus'] == list(range(8))
    assert ray['argv'] == ['/opt/venv/bin/ray'] + part['ray']['args'] and ray['flags'] == part['ray']['args']
    assert engine['argv'][3:] == ['--distributed-executor-backend', 'ray', '--host', '10.0.0.11',
                                  '--pipeline-parallel-size', '2', '--port', '8000', '--tensor-parallel-size', '8']
    assert engine['endpoint']['ranks'] == [{'node': 'gpu-a', 'name': 'llmfleet-worker-ray'},
                                           {'node': 'gpu-b', 'name': 'llmfleet-worker-ray'}]


def test_ray_other_members_run_only_their_ray_node():
    part = multinode_plan(RAY_MEMBERS, 'gpu-b', backend='ray')
    plan = worker_commands(PLAN, ['vllm', 'serve', '/m'], NAMES, {}, '10.0.0.12', identity={'engine': 'vllm'},
                           multinode=part, ray_command=['/opt/venv/bin/ray'])
    assert [(worker['name'], worker['kind'], worker['endpoint']) for worker in plan] == [('llmfleet-worker-ray', 'ray', None)]
    assert '--address' in plan[0]['argv']


def test_ray_status_counts_the_nodes_of_a_real_capture():
    with open(os.path.join(FIXTURES, 'one-node-2.60.0.txt')) as handle:
        status = ray_status(handle.read())
    assert status == {'active': ['node_546897504f6ad78d44aeac6986da27da489eb5fada31aec24ac50be3'], 'pending': [],
                      'failures': []}


def test_ray_status_lists_both_members_of_the_sandbox_cluster():
    with open(os.path.join(FIXTURES, 'two-nodes-2.60.0.txt')) as handle:
        status = ray_status(handle.read())
    assert status['active'] == ['node_d7755c1776b7db0f412683b26d89a32dfe96bd179b55b9e8763547bf',
                                'node_a7e3ec361a3a3746bd560bde27f04c1f086121fb5f8dc9ed07f458cf']
    assert status['pending'] == [] and status['failures'] == []


def test_ray_status_pending_nodes_and_failures():
    text = ('Node status\n---\nActive:\n 1 node_aa11\n 1 node_bb22\nPending:\n 1 node_cc33\nRecent failures:\n'
            ' node_dd44: raylet died\n\nResources\n---\nTotal Usage:\n 0.0/2.0 CPU\n')
    assert ray_status(text) == {'active': ['node_aa11', 'node_bb22'], 'pending': ['node_cc33'],
                                'failures': ['node_dd44: raylet died']}
    assert ray_status('') == {'active': [], 'pending': [], 'failures': []}
    assert workers_ray_status(None) == {'active': [], 'pending': [], 'failures': []}
