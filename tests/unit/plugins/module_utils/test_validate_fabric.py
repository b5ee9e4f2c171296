# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The all-reduce across a group's nodes: the plan, Open MPI's command, the verdict, and the module on a fake node."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import copy
import os
import shlex

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.validate_fleet import validate_fabric_plan, validate_fleet_table
from ansible_collections.llmfleet.rocm.plugins.module_utils._rccl_tests import parse_rccl_tests
from ansible_collections.llmfleet.rocm.plugins.module_utils._validate_fabric import (
    fabric_plan, judge_fabric, mpirun_argv, parse_env_file)

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'fixtures')
ENV = '# NCCL/RCCL environment\nNCCL_SOCKET_IFNAME="=ens5"\nNCCL_IB_HCA="=mlx5_0,mlx5_1"\nHSA_NO_SCRATCH_RECLAIM="1"\n'
OPTIONS = {'require_rdma': True, 'threshold': None, 'line_rate_fraction': 0.7}


def _rdma(*rates):
    return {'devices': [{'name': 'mlx5_%d' % index, 'active_ports': 1 if rate else 0, 'active_rate_gbps': rate}
                        for index, rate in enumerate(rates)]}


def _node(name, address, group='all', gpus=8, env=ENV, rdma=None, interface='ens5'):
    return {'name': name, 'group': group, 'env_text': env, 'gpus': gpus,
            'rdma': _rdma(400.0, 400.0) if rdma is None else rdma,
            'interfaces': {interface: {'ipv4': {'address': address, 'netmask': '255.255.255.0'}}}}


def _read(name):
    with open(os.path.join(FIXTURES, 'rccl_tests', name)) as handle:
        return handle.read()


def test_the_env_file_reads_as_the_rdma_role_writes_it():
    assert parse_env_file(ENV) == {'NCCL_SOCKET_IFNAME': '=ens5', 'NCCL_IB_HCA': '=mlx5_0,mlx5_1', 'HSA_NO_SCRATCH_RECLAIM': '1'}
    with pytest.raises(ValueError, match='line 2 of the RCCL environment'):
        parse_env_file('A="1"\nexport B=2\n')


def test_a_group_of_two_rdma_nodes_runs_with_the_policy_threshold():
    plan = fabric_plan([_node('node-1', '10.0.0.1'), _node('node-2', '10.0.0.2', rdma=_rdma(400.0, 200.0))], OPTIONS)
    group = plan['all']
    assert group['skip'] is None and group['findings'] == []
    assert group['members'] == ['node-1', 'node-2'] and group['launcher'] == 'node-1'
    assert [(host['address'], host['slots']) for host in group['hosts']] == [('10.0.0.1', 8), ('10.0.0.2', 8)]
    assert group['np'] == 16 and group['networks'] == ['10.0.0.0/24']
    # The slowest member: 600 Gb/s = 75 GB/s; 0.7 of it.
    assert group['threshold']['value'] == 52.5
    assert 'policy' in group['threshold']['source'] and '75' in group['threshold']['source']


def test_groups_are_planned_apart_and_a_node_alone_is_left_out():
    nodes = [_node('a-1', '10.0.0.1', group='rack-a'), _node('b-1', '10.0.1.1', group='rack-b'),
             _node('a-2', '10.0.0.2', group='rack-a')]
    plan = fabric_plan(nodes, OPTIONS)
    assert list(plan) == ['rack-a']
    assert plan['rack-a']['members'] == ['a-1', 'a-2']


def test_a_given_threshold_wins_and_an_unknown_rate_leaves_it_unset():
    nodes = [_node('node-1', '10.0.0.1'), _node('node-2', '10.0.0.2', rdma=_rdma(None))]
    nodes[1]['rdma']['devices'][0]['active_ports'] = 1
    assert fabric_plan(nodes, OPTIONS)['all']['threshold'] is None
    given = dict(OPTIONS, threshold={'value': 300, 'source': 'site run 2026-11'})
    assert fabric_plan(nodes, given)['all']['threshold'] == {'value': 300.0, 'source': 'site run 2026-11'}


@pytest.mark.parametrize('change, reason', [
    ({'env': None}, 'node-2 has no /etc/llmfleet/rccl.env'),
    ({'env': 'HSA_NO_SCRATCH_RECLAIM="1"\n'}, 'node-2: its rccl.env names no interface in NCCL_SOCKET_IFNAME'),
    ({'env': 'NCCL_SOCKET_IFNAME="^lo,docker"\n'}, 'node-2: its rccl.env names no interface in NCCL_SOCKET_IFNAME'),
    ({'env': 'NCCL_SOCKET_IFNAME=ens5\n'}, 'node-2: line 1 of the RCCL environment is not NAME="value"'),
    ({'rdma': {'devices': []}}, 'node-2 has no RDMA device with an active port'),
    ({'interface': 'ens6'}, 'node-2: its fabric interface ens5 has no IPv4 address'),
    ({'gpus': 0}, 'node-2: the node validation found no Instinct GPU'),
])
def test_a_group_that_cannot_run_says_why(change, reason):
    plan = fabric_plan([_node('node-1', '10.0.0.1'), _node('node-2', '10.0.0.2', **change)], OPTIONS)
    group = plan['all']
    assert reason in group['skip'] and group['hosts'][0]['name'] == 'node-1' and len(group['hosts']) == 1
    assert [item['level'] for item in group['findings']] == ['warning']
    assert group['findings'][0]['message'].startswith('the all-reduce across node-1, node-2 (group all) did not run: ')


def test_without_rdma_it_runs_over_sockets_when_allowed():
    nodes = [_node('node-1', '10.0.0.1', rdma={'devices': []}), _node('node-2', '10.0.0.2', rdma={'devices': []})]
    plan = fabric_plan(nodes, dict(OPTIONS, require_rdma=False))
    assert plan['all']['skip'] is None and plan['all']['threshold'] is None


def test_mpirun_gives_each_member_its_own_environment():
    env2 = ENV.replace('=ens5', '=ens6')
    plan = fabric_plan([_node('node-1', '10.0.0.1', gpus=8), _node('node-2', '10.0.1.2', gpus=2, env=env2, interface='ens6')],
                       OPTIONS)
    argv = mpirun_argv('/usr/bin/mpirun', plan['all'], '/opt/rccl-tests/current/bin/all_reduce_perf', '-i key -p 22')
    start, second = ' '.join(argv).split(' : ')
    head, first = start.split(' -np ', 1)
    first = '-np ' + first
    assert head.startswith('/usr/bin/mpirun --allow-run-as-root --tag-output --bind-to numa')
    assert ' --bind-to none ' in ' '.join(mpirun_argv('mpirun', plan['all'], 'p', 'a', bind_to='none'))
    assert '--mca plm_rsh_args -i key -p 22' in head and '--mca plm_rsh_no_tree_spawn 1' in head
    assert '--mca oob_tcp_if_include 10.0.0.0/24,10.0.1.0/24' in head
    assert '-np 8 -H 10.0.0.1:8 ' in first and '-x NCCL_SOCKET_IFNAME==ens5' in first
    assert '-np 2 -H 10.0.1.2:2 ' in second and '-x NCCL_SOCKET_IFNAME==ens6' in second
    for part in (first, second):
        assert part.endswith('/opt/rccl-tests/current/bin/all_reduce_perf -b 8 -e 8G -f 2 -g 1')


def _group(np=16, members=('node-1', 'node-2'), threshold=None):
    return {'group': 'all', 'members': list(members), 'np': np, 'threshold': threshold}


def _result(busbw, hosts, wrong=0):
    devices = [{'host': host, 'rank': rank} for rank, host in enumerate(hosts)]
    row = {'size': 8589934592, 'in_place': {'busbw_gbs': busbw}, 'out_of_place': {'busbw_gbs': busbw}}
    return {'devices': devices, 'rows': [row], 'wrong_total': wrong, 'out_of_bounds': 0}


def _levels(findings):
    return dict((item['id'], item['level']) for item in findings)


def test_the_verdict_judges_ranks_wrong_values_and_bandwidth():
    hosts = ['host-a'] * 8 + ['host-b'] * 8
    threshold = {'value': 52.5, 'source': 'policy'}
    assert _levels(judge_fabric(_result(60.0, hosts), _group(threshold=threshold))) == {
        'fabric.all_reduce.wrong': 'ok', 'fabric.all_reduce.busbw': 'ok'}
    slow = judge_fabric(_result(40.0, hosts), _group(threshold=threshold))
    assert _levels(slow)['fabric.all_reduce.busbw'] == 'error'
    message = [item for item in slow if item['level'] == 'error'][0]['message']
    assert 'node-1, node-2' in message and '40.0 GB/s, below 52.5 (policy)' in message and 'pairs of nodes' in message
    unjudged = judge_fabric(_result(40.0, hosts), _group())
    assert _levels(unjudged)['fabric.all_reduce.busbw'] == 'warning' and 'validate_fabric_threshold' in unjudged[-1]['message']
    assert _levels(judge_fabric(_result(60.0, hosts, wrong=3), _group(threshold=threshold)))['fabric.all_reduce.wrong'] == 'error'


def test_a_run_on_one_host_only_is_an_error():
    """A real 8-rank run on one node (mpirun): judged as a group of two, it lacks the second member's ranks."""
    result = parse_rccl_tests(_read('mi350x-8rank-mpirun-rocm7.0.txt'))
    findings = judge_fabric(result, _group(np=16, threshold={'value': 100.0, 'source': 's'}))
    ranks = [item for item in findings if item['id'] == 'fabric.all_reduce.ranks'][0]
    assert ranks['level'] == 'error' and 'listed 8 ranks on 1 hosts' in ranks['message'] and 'expected 16 on 2' in ranks['message']


def test_a_real_two_node_run_without_8_gib_is_not_taken_for_judged():
    """The real 2 x 8 MI210 run stops at 4 GiB: every rank is there, but the 8 GiB figure is missing."""
    result = parse_rccl_tests(_read('mi210-16rank-2node-rocm6.3.3.txt'))
    levels = _levels(judge_fabric(result, _group(np=16, threshold={'value': 10.0, 'source': 's'})))
    assert levels == {'fabric.all_reduce.wrong': 'ok', 'fabric.all_reduce.busbw': 'error'}


def _hostvars():
    def host(address, group='all'):
        return {'validate_fabric_group': group, '_validate_result': {'gpus': 8, 'findings': [], 'model': 'm'},
                '_validate_fabric_env': {'content': base64.b64encode(ENV.encode()).decode()},
                'ansible_facts': {'rdma': _rdma(400.0), 'ens5': {'ipv4': {'address': address, 'netmask': '255.255.0.0'}}}}
    return {'node-1': host('10.1.0.1'), 'node-2': host('10.1.0.2')}


def test_the_filter_reads_the_hosts_and_refuses_a_bad_threshold():
    plan = validate_fabric_plan(['node-1', 'node-2'], _hostvars())
    assert plan['all']['np'] == 16 and plan['all']['threshold']['value'] == 35.0
    assert plan['all']['hosts'][1]['env']['NCCL_IB_HCA'] == '=mlx5_0,mlx5_1'
    with pytest.raises(AnsibleFilterError, match='validate_fabric_threshold must be a mapping'):
        validate_fabric_plan(['node-1', 'node-2'], _hostvars(), threshold=300)


def test_the_fleet_table_fails_every_member_of_a_slow_group():
    hostvars = _hostvars()
    slow = judge_fabric(_result(20.0, ['a'] * 8 + ['b'] * 8), _group(threshold={'value': 35.0, 'source': 'policy'}))
    for name in hostvars:
        hostvars[name]['_validate_fabric_findings'] = copy.deepcopy(slow)
    table = validate_fleet_table(['node-1', 'node-2'], hostvars)
    assert table['failed'] == ['node-1', 'node-2']
    assert [row['check'] for row in table['rows']] == ['fabric.all_reduce.busbw', 'fabric.all_reduce.busbw']


def _plan_for_module():
    return fabric_plan([_node('node-1', '10.0.0.1'), _node('node-2', '10.0.0.2')], dict(OPTIONS, threshold={'value': 10, 'source': 's'}))['all']


def _ssh_args(root):
    words = ['-i', root + '/id', '-p', '22', '-o', 'BatchMode=yes', '-o', 'IdentitiesOnly=yes', '-o', 'StrictHostKeyChecking=yes',
             '-o', 'UserKnownHostsFile=' + root + '/known_hosts', '-o', 'GlobalKnownHostsFile=/dev/null']
    return ' '.join(shlex.quote(word) for word in words)


def test_the_module_runs_mpirun_and_writes_the_group_reports(node):
    group = _plan_for_module()
    argv = mpirun_argv('mpirun', group, '/opt/rccl-tests/current/bin/all_reduce_perf', _ssh_args(node.root))
    node.tool('mpirun', {' '.join(argv[1:]): ('rccl_tests/mi210-16rank-2node-rocm6.3.3.txt', 0, 'out')})
    report_dir = os.path.join(node.root, 'reports')
    result = node.run('fabric_validate', group=group, program='/opt/rccl-tests/current/bin/all_reduce_perf',
                      ssh_key=node.root + '/id', known_hosts=node.root + '/known_hosts', report_dir=report_dir)
    assert not result.get('failed'), result
    assert _levels(result['findings']) == {'fabric.all_reduce.wrong': 'ok', 'fabric.all_reduce.busbw': 'error'}
    assert node.calls()[0]['LC_ALL'] == 'C'
    assert sorted(os.listdir(report_dir)) == ['junit.xml', 'raw', 'report.json', 'summary.txt']
    with open(os.path.join(report_dir, 'summary.txt')) as handle:
        assert handle.read().startswith('fabric all FAILED (members: node-1, node-2)')


def test_a_failed_launch_is_a_failed_finding_with_the_programs_lines(node, tmp_path):
    group = _plan_for_module()
    argv = mpirun_argv('mpirun', group, '/opt/rccl-tests/current/bin/all_reduce_perf', _ssh_args(node.root))
    refused = tmp_path / 'refused.txt'
    refused.write_text(u'Permission denied (publickey).\nORTE was unable to reliably start one or more daemons.\n')
    node.tool('mpirun', {' '.join(argv[1:]): (str(refused), 1, 'err')})
    result = node.run('fabric_validate', group=group, program='/opt/rccl-tests/current/bin/all_reduce_perf',
                      ssh_key=node.root + '/id', known_hosts=node.root + '/known_hosts', report_dir=str(tmp_path / 'r'))
    assert not result.get('failed'), result
    [finding] = result['failed_checks']
    assert 'mpirun exited with 1' in finding['message'] and 'Permission denied (publickey)' in finding['message']


def test_the_module_refuses_a_group_that_cannot_run(node, tmp_path):
    group = dict(_plan_for_module(), skip='node-2 has no RDMA device with an active port')
    result = node.run('fabric_validate', group=group, program='/p', ssh_key='/k', known_hosts='/h', report_dir=str(tmp_path))
    assert result['failed'] and 'group all cannot run: node-2 has no RDMA' in result['msg']
    result = node.run('fabric_validate', group={'group': 'x'}, program='/p', ssh_key='/k', known_hosts='/h', report_dir=str(tmp_path))
    assert result['failed'] and 'group lacks members, hosts, np, networks' in result['msg']
