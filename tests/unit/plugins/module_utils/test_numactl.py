# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the numactl --hardware parser and the sysfs helpers, on real captures and on edge cases."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils._numactl import (
    NO_NUMA,
    parse_cpulist,
    parse_distance_line,
    parse_node_meminfo,
    parse_numactl_hardware,
)
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError

FIXTURE_TOOL = 'numactl'
NODE_KEYS = set(['id', 'cpus', 'memory_mb', 'free_mb'])


def test_fixture(note):
    if 'error' in note:
        with pytest.raises(ParseError) as caught:
            parse_numactl_hardware(note['text'])
        assert re.search(note['error_match'], str(caught.value)), str(caught.value)
        return
    result = parse_numactl_hardware(note['text'])
    expected = note['expected']
    nodes = result['nodes']
    assert result['available'] is expected['available']
    assert len(nodes) == expected['node_count']
    for node in nodes:
        assert set(node) == NODE_KEYS
        assert node['cpus'] == sorted(set(node['cpus']))
    ids = [node['id'] for node in nodes]
    assert ids == sorted(ids)
    if 'node_ids' in expected:
        assert ids == expected['node_ids']
    if 'cpu_count' in expected:
        assert sum(len(node['cpus']) for node in nodes) == expected['cpu_count']
    by_id = dict((node['id'], node) for node in nodes)
    for wanted in expected['nodes']:
        for key, value in wanted.items():
            assert by_id[wanted['id']][key] == value, 'node %d %s is %r' % (wanted['id'], key, by_id[wanted['id']][key])
    for node_id, cpu in expected.get('first_cpus', {}).items():
        assert by_id[node_id]['cpus'][0] == cpu
    for node_id, cpu in expected.get('last_cpus', {}).items():
        assert by_id[node_id]['cpus'][-1] == cpu
    assert result['distances'] == expected['distances']
    for index, row in enumerate(result['distances']):
        assert row[index] == 10, 'the distance of a node to itself is 10'


def test_no_numa_is_not_an_error():
    # The line numactl.c prints (then exit 1) when numa_available() fails.
    assert parse_numactl_hardware(NO_NUMA + '\n') == {'available': False, 'nodes': [], 'distances': [], 'warnings': []}


def test_libnuma_warnings_are_kept():
    text = ('libnuma: Warning: cpu argument 0-7 is out of range\navailable: 1 nodes (0)\nnode 0 cpus: 0 1\n'
            'node 0 size: 16383 MB\nnode 0 free: 530 MB\nnode distances:\nnode   0 \n  0:  10 \n')
    result = parse_numactl_hardware(text)
    assert result['warnings'] == ['libnuma: Warning: cpu argument 0-7 is out of range']
    assert result['nodes'][0]['cpus'] == [0, 1]


def test_missing_distance_table():
    text = 'available: 1 nodes (0)\nnode 0 cpus: 0 1\nnode 0 size: 16383 MB\nnode 0 free: 530 MB\nNo distance information available.\n'
    assert parse_numactl_hardware(text)['distances'] == []


def test_memory_not_available():
    text = 'available: 1 nodes (0)\nnode 0 cpus: 0 1\nnode 0 size: <not available>\nnode 0 free: <not available>\n'
    node = parse_numactl_hardware(text)['nodes'][0]
    assert node['memory_mb'] is None and node['free_mb'] is None


@pytest.mark.parametrize('text, match', [
    pytest.param('', 'empty', id='empty'),
    pytest.param('numactl: command not found\n', 'available: N nodes', id='garbage'),
    pytest.param('available: 2 nodes (0-1)\nnode 0 cpus: 0 1\nnode 0 size: 10 MB\nnode 0 free: 5 MB\n', 'do not match',
                 id='node-missing'),
    pytest.param('available: 1 nodes (0)\nnode 0 cpus: 0 one\n', 'bad CPU list item', id='bad-cpu'),
    pytest.param('available: 1 nodes (0)\nnode 0 cpus: 0-3 (5)\n', 'does not hold 5', id='bad-count'),
    pytest.param('available: 1 nodes (0)\nnode 0 cpus: 0\nnode 0 size: lots\n', 'unexpected line', id='bad-size'),
    pytest.param('available: 2 nodes (0-1)\nnode 0 cpus: 0\nnode 1 cpus: 1\nnode distances:\nnode   0   1\n  0:  10  20\n',
                 'does not cover', id='short-matrix'),
    pytest.param('available: 1 nodes (0)\nnode 0 cpus: 0\nnode distances:\nnode   0\n  0:  ten\n', 'distance table',
                 id='bad-matrix'),
])
def test_unknown_output_is_a_parse_error(text, match):
    with pytest.raises(ParseError) as caught:
        parse_numactl_hardware(text)
    assert re.search(match, str(caught.value)), str(caught.value)


@pytest.mark.parametrize('text, cpus', [
    pytest.param('0-3,8-9\n', [0, 1, 2, 3, 8, 9], id='sysfs-cpulist'),
    pytest.param(' 0 1 2', [0, 1, 2], id='numactl-list'),
    pytest.param('0-15 (16)', list(range(16)), id='compressed'),
    pytest.param('', [], id='empty'),
    pytest.param(None, [], id='unreadable'),
])
def test_parse_cpulist(text, cpus):
    assert parse_cpulist(text) == cpus


def test_parse_node_meminfo():
    text = ('Node 0 MemTotal:       263846888 kB\nNode 0 MemFree:        261000000 kB\n'
            'Node 0 MemUsed:          2846888 kB\n')
    assert parse_node_meminfo(text) == (257662, 254882)
    assert parse_node_meminfo(None) == (None, None)


@pytest.mark.parametrize('text, row', [
    pytest.param('10 32\n', [10, 32], id='two'),
    pytest.param('', None, id='empty'),
    pytest.param('ten', None, id='garbage'),
])
def test_parse_distance_line(text, row):
    assert parse_distance_line(text) == row
