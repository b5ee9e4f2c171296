# -*- coding: utf-8 -*-
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.rolling_restart import rolling_restart_steps, worker_restart_plan, rolling_restart_batches
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import max_unavailable


def node(host, count, pending=None):
    endpoints = [{'name': 'llmfleet-worker-%d' % index, 'url': 'http://%s:%d' % (host, 8000 + index)}
                 for index in range(count)]
    values = {'inventory_hostname': host, 'llmfleet_worker_endpoints': endpoints}
    if pending is not None:
        values['llmfleet_workers_pending'] = pending
    return values


def names(batches):
    return [['%s/%s' % (endpoint['node'], endpoint['name']) for endpoint in batch] for batch in batches]


@pytest.mark.parametrize('value, total, expected', [
    ('10%', 8, 1),      # 0.8 rounds down, then at least 1
    ('10%', 40, 4),
    ('25%', 16, 4),
    (' 50% ', 4, 2),
    ('100%', 8, 7),     # never all of them
    (3, 8, 3),
    ('3', 8, 3),
    (8, 8, 7),
    (5, 1, 1),          # a fleet of one worker: that one
    ('10%', 0, 1),
])
def test_max_unavailable(value, total, expected):
    assert max_unavailable(value, total) == expected


@pytest.mark.parametrize('value, reason', [
    (0, 'a count of 1 or more'),
    (-2, 'a count of 1 or more'),
    ('0%', 'from 1 to 100'),
    ('101%', 'from 1 to 100'),
    ('-5%', 'from 1 to 100'),
    ('%', 'from 1 to 100'),
    ('ten', 'a count of 1 or more'),
    (True, 'a count of 1 or more'),
    (None, 'a count of 1 or more'),
    (1.5, 'a count of 1 or more'),
])
def test_max_unavailable_refuses(value, reason):
    with pytest.raises(ValueError, match=reason):
        max_unavailable(value, 8)


def test_only_the_pending_workers_roll_one_at_a_time():
    nodes = [node('gpu-node-1', 2, pending={'llmfleet-worker-1': '/m'}), node('gpu-node-2', 2, pending={}),
             node('gpu-node-3', 1, pending={'llmfleet-worker-0': '/m'})]
    assert names(rolling_restart_batches(nodes, '10%')) == [['gpu-node-1/llmfleet-worker-1'], ['gpu-node-3/llmfleet-worker-0']]


def test_every_worker_rolls_in_batches_of_the_limit():
    nodes = [node('a', 3), node('b', 2, pending={'llmfleet-worker-0': '/m'})]
    assert names(rolling_restart_batches(nodes, 2, only_pending=False)) == [
        ['a/llmfleet-worker-0', 'a/llmfleet-worker-1'], ['a/llmfleet-worker-2', 'b/llmfleet-worker-0'],
        ['b/llmfleet-worker-1']]


def test_the_percentage_is_of_the_whole_fleet_not_of_the_pending_workers():
    nodes = [node('a', 4, pending={'llmfleet-worker-%d' % i: '/m' for i in range(4)}), node('b', 4, pending={})]
    assert [len(batch) for batch in rolling_restart_batches(nodes, '50%')] == [4]
    assert [len(batch) for batch in rolling_restart_batches(nodes, '25%')] == [2, 2]


def test_the_endpoint_keeps_its_fields_and_gains_its_node():
    batch = rolling_restart_batches([node('a', 1, pending={'llmfleet-worker-0': '/m/0'})], 1)[0]
    assert batch == [{'name': 'llmfleet-worker-0', 'url': 'http://a:8000', 'node': 'a', 'restart_mark': '/m/0'}]


def test_nothing_pending_is_no_batch():
    assert rolling_restart_batches([node('a', 2), node('b', 1, pending={})], '10%') == []
    assert rolling_restart_batches([], '10%') == []


def test_a_bad_limit_is_refused_with_its_value():
    with pytest.raises(AnsibleFilterError, match=r'workers_max_unavailable "half" is not usable: it must be a count'):
        rolling_restart_batches([node('a', 2)], 'half', only_pending=False)


@pytest.mark.parametrize('endpoints', ['a string', [{'name': 'w'}], [{'url': 'http://a:1'}], ['w']])
def test_a_bad_endpoint_fact_is_refused(endpoints):
    with pytest.raises(AnsibleFilterError, match='llmfleet_worker_endpoints fact of a is not a list of workers'):
        rolling_restart_batches([{'inventory_hostname': 'a', 'llmfleet_worker_endpoints': endpoints}], 1)


NAMES = ['w-0', 'w-1', 'w-2']
MARKS = {name: '/var/lib/llmfleet/%s.restart-pending' % name for name in NAMES}


def restarts(**kwargs):
    return worker_restart_plan(NAMES, MARKS, **kwargs)


def test_nothing_changed_restarts_nothing():
    assert restarts(states=['active'] * 3, rolling=True) == {'restart': [], 'pending': {}, 'marks': []}


def test_now_restarts_the_changed_units_at_once():
    result = restarts(changed=['w-1'], states=['active'] * 3, rolling=False)
    assert result == {'restart': ['w-1'], 'pending': {}, 'marks': []}


def test_rolling_leaves_running_workers_to_the_roll_and_marks_them():
    result = restarts(changed=['w-0', 'w-2'], states=['active', 'active', 'inactive'], rolling=True)
    assert result['pending'] == {'w-0': MARKS['w-0']}
    assert result['restart'] == ['w-2']


def test_a_worker_that_does_not_run_starts_at_once_even_when_rolling():
    result = restarts(changed=['w-0', 'w-2'], states=['active', 'active', 'failed'], rolling=True)
    assert result['restart'] == ['w-2']
    assert result['pending'] == {'w-0': MARKS['w-0']}
    assert result['marks'] == [{'path': MARKS['w-0'], 'state': 'touch'}]


def test_a_new_key_changes_every_worker():
    result = restarts(everything=True, states=['active', 'inactive', 'reloading'], rolling=True)
    assert result['restart'] == ['w-1']
    assert sorted(result['pending']) == ['w-0', 'w-2']


def test_a_mark_left_by_an_earlier_run_keeps_the_worker_pending_without_writing_it_again():
    reads = {'w-1': {'exists': True}, 'w-0': {'exists': False}}
    result = restarts(states=['active'] * 3, reads=reads, rolling=True)
    assert result == {'restart': [], 'pending': {'w-1': MARKS['w-1']}, 'marks': []}


def test_a_marked_worker_restarted_now_loses_its_mark():
    reads = {'w-1': {'exists': True}}
    result = restarts(states=['active'] * 3, reads=reads, rolling=False)
    assert result == {'restart': ['w-1'], 'pending': {}, 'marks': [{'path': MARKS['w-1'], 'state': 'absent'}]}


def test_missing_states_count_as_not_running():
    assert restarts(changed=['w-2'], states=['active'], rolling=True)['restart'] == ['w-2']


def test_the_roll_carries_each_workers_mark():
    nodes = [node('a', 2, pending={'llmfleet-worker-1': '/m/1'})]
    assert [e['restart_mark'] for batch in rolling_restart_batches(nodes, 1, only_pending=False) for e in batch] == ['', '/m/1']


def test_a_worker_alone_is_restarted():
    batch = [{'node': 'gpu-node-1', 'name': 'llmfleet-worker-0', 'url': 'http://10.0.0.11:8000'},
             {'node': 'gpu-node-2', 'name': 'llmfleet-worker-1', 'url': 'http://10.0.0.12:8001', 'ranks': []}]
    assert rolling_restart_steps(batch) == [{'node': 'gpu-node-1', 'name': 'llmfleet-worker-0', 'state': 'restarted'},
                                            {'node': 'gpu-node-2', 'name': 'llmfleet-worker-1', 'state': 'restarted'}]


def test_an_engine_over_nodes_stops_as_one_and_its_api_rank_starts_last():
    batch = [{'node': 'gpu-a', 'name': 'llmfleet-worker-engine-0', 'url': 'http://10.0.0.11:8000',
              'ranks': [{'node': 'gpu-b', 'name': 'llmfleet-worker-engine-0'},
                        {'node': 'gpu-c', 'name': 'llmfleet-worker-engine-0'}]}]
    assert [(step['node'], step['state']) for step in rolling_restart_steps(batch)] == [
        ('gpu-a', 'stopped'), ('gpu-b', 'restarted'), ('gpu-c', 'restarted'), ('gpu-a', 'started')]
    assert rolling_restart_steps([]) == []
