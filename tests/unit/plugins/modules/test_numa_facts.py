# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""numa_facts run as Ansible runs it, with a stand-in numactl and a sysfs tree built per test."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil

import pytest

SYSTEM_BIN_DIRS = ['/usr/bin', '/usr/sbin', '/sbin', '/bin']
# The line numactl.c's hardware() prints before exit(1) when numa_available() fails.
NO_NUMA_LINE = 'No NUMA available on this system\n'


def run(node, **params):
    params.setdefault('sysfs_path', node.sysfs)
    return node.run('numa_facts', **params)


def sysfs_node(node, node_id, cpulist, total_kb, free_kb, distance):
    base = os.path.join(node.sysfs, 'devices', 'system', 'node', 'node%d' % node_id)
    node.write(os.path.join(base, 'cpulist'), cpulist + '\n')
    node.write(os.path.join(base, 'meminfo'), 'Node %d MemTotal:       %d kB\nNode %d MemFree:        %d kB\n'
               % (node_id, total_kb, node_id, free_kb))
    node.write(os.path.join(base, 'distance'), distance + '\n')


def no_numa_capture(tmp_path):
    path = tmp_path / 'no-numa.txt'
    path.write_text(NO_NUMA_LINE)
    return str(path)


def no_system_tool():
    return not (shutil.which('numactl') or any(os.path.exists(os.path.join(d, 'numactl')) for d in SYSTEM_BIN_DIRS))


def test_numactl_runs_with_exact_argv_and_c_locale(node):
    node.tool('numactl', {'--hardware': ('numactl/2node-epyc9375f-smt-off.txt', 0, 'out')})
    result = run(node)
    assert result.get('failed') is not True, result
    calls = node.calls()
    assert [call['argv'] for call in calls] == [[os.path.join(node.bin, 'numactl'), '--hardware']]
    assert all(call['LC_ALL'] == 'C' and call['LANG'] == 'C' for call in calls)
    numa = result['ansible_facts']['numa']
    assert (numa['available'], numa['source'], numa['node_count'], numa['cpu_count']) == (True, 'numactl', 2, 64)
    assert numa['nodes'][1] == {'id': 1, 'cpus': list(range(32, 64)), 'memory_mb': 774028, 'free_mb': 684984}
    assert numa['distances'] == [[10, 32], [32, 10]]


def test_sparse_nodes_keep_their_ids(node):
    node.tool('numactl', {'--hardware': ('numactl/6node-sparse-gpu-memory-nodes.txt', 0, 'out')})
    numa = run(node)['ansible_facts']['numa']
    assert [item['id'] for item in numa['nodes']] == [0, 8, 252, 253, 254, 255]
    assert numa['nodes'][2]['cpus'] == []


def test_no_numa_from_numactl_falls_back_to_sysfs_nodes(node, tmp_path):
    node.tool('numactl', {'--hardware': (no_numa_capture(tmp_path), 1, 'out')})
    sysfs_node(node, 0, '0-3', 16777216, 8388608, '10')
    result = run(node)
    assert result.get('failed') is not True, result
    numa = result['ansible_facts']['numa']
    assert (numa['available'], numa['source']) == (False, 'sysfs')
    assert numa['nodes'] == [{'id': 0, 'cpus': [0, 1, 2, 3], 'memory_mb': 16384, 'free_mb': 8192}]
    assert numa['distances'] == [[10]]


def test_no_numa_anywhere_gives_one_node_with_the_online_cpus(node, tmp_path):
    node.tool('numactl', {'--hardware': (no_numa_capture(tmp_path), 1, 'out')})
    node.write(os.path.join(node.sysfs, 'devices', 'system', 'cpu', 'online'), '0-7\n')
    numa = run(node)['ansible_facts']['numa']
    assert (numa['available'], numa['source'], numa['node_count'], numa['cpu_count']) == (False, 'cpu', 1, 8)
    assert numa['nodes'] == [{'id': 0, 'cpus': list(range(8)), 'memory_mb': None, 'free_mb': None}]
    assert numa['distances'] == []


def test_output_that_is_not_numactl_fails_with_the_command(node):
    node.tool('numactl', {'--hardware': ('ibv_devinfo/cx3-ib-2hca-2port.txt', 0, 'out')})
    result = run(node)
    assert result['failed'] is True
    assert 'cannot read' in result['msg'] and 'numactl' in result['msg'] and '--hardware' in result['msg']


def test_a_failing_run_with_nodes_fails(node):
    node.tool('numactl', {'--hardware': ('numactl/1node-nodejs-benchmark-host.txt', 1, 'out')})
    result = run(node)
    assert result['failed'] is True
    assert 'exited with 1' in result['msg']


@pytest.mark.skipif(not no_system_tool(), reason='this machine has numactl installed')
def test_without_numactl_the_nodes_come_from_sysfs(node):
    sysfs_node(node, 0, '0-7,16-23', 33554432, 1048576, '10 32')
    sysfs_node(node, 1, '8-15,24-31', 33554432, 2097152, '32 10')
    result = run(node)
    numa = result['ansible_facts']['numa']
    assert result['commands'] == []
    assert (numa['available'], numa['source'], numa['node_count'], numa['cpu_count']) == (True, 'sysfs', 2, 32)
    assert numa['nodes'][0]['cpus'] == list(range(8)) + list(range(16, 24))
    assert numa['nodes'][1]['free_mb'] == 2048
    assert numa['distances'] == [[10, 32], [32, 10]]
