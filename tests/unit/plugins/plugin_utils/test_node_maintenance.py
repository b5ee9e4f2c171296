# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node maintenance: units (a multi-node group goes as one), batches within llmfleet_nodes_max_unavailable, and the
refused budgets and outages."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.node_maintenance import maintenance_batches, node_units


def _nodes(*specs):
    """'a' for a node alone, 'b@g' for a member of the multi-node group g."""
    nodes = []
    for spec in specs:
        host, _sep, group = spec.partition('@')
        nodes.append({'inventory_hostname': host, 'workers_multinode_group': group or None})
    return nodes


def _names(plan):
    return [[unit['name'] for unit in batch] for batch in plan['batches']]


def test_a_group_is_one_unit_at_its_first_member():
    assert node_units(_nodes('a', 'b@g', 'c', 'd@g')) == [
        {'name': 'a', 'nodes': ['a']}, {'name': 'g', 'nodes': ['b', 'd']}, {'name': 'c', 'nodes': ['c']}]


def test_only_units_with_work_are_batched_one_at_a_time_by_default():
    plan = maintenance_batches(_nodes('a', 'b', 'c', 'd'), {'b': ['reboot-required'], 'd': ['driver 7.1.1']}, 1)
    assert _names(plan) == [['b'], ['d']]
    assert plan['size'] == 1 and plan['units'] == 4 and plan['outage'] is False
    assert plan['batches'][1][0]['reasons'] == {'d': ['driver 7.1.1']}


def test_a_group_goes_together_when_any_member_needs_work():
    plan = maintenance_batches(_nodes('a', 'b@g', 'c@g', 'd'), {'c': ['kernel command line']}, 1)
    assert plan['batches'] == [[{'name': 'g', 'nodes': ['b', 'c'], 'reasons': {'c': ['kernel command line']},
                                 'endpoints': [], 'unknown': ['b', 'c']}]]


@pytest.mark.parametrize('limit, size, batches', [
    (2, 2, [['a', 'b'], ['c', 'd'], ['e']]),
    ('2', 2, [['a', 'b'], ['c', 'd'], ['e']]),
    ('40%', 2, [['a', 'b'], ['c', 'd'], ['e']]),
    # A percentage rounds down, to one unit at least.
    ('10%', 1, [['a'], ['b'], ['c'], ['d'], ['e']]),
])
def test_the_budget_is_a_count_or_a_percentage_of_the_units(limit, size, batches):
    pending = dict((host, ['reboot-required']) for host in 'abcde')
    plan = maintenance_batches(_nodes('a', 'b', 'c', 'd', 'e'), pending, limit)
    assert plan['size'] == size and _names(plan) == batches


@pytest.mark.parametrize('limit, message', [
    (0, 'a count of 1 or more'),
    ('-1', 'a count of 1 or more'),
    (True, 'a count of 1 or more'),
    ('all', 'a count of 1 or more'),
    ('0%', 'from 1 to 100'),
    ('100%', 'all 3 units of the fleet out at once; at most 2'),
    (3, 'all 3 units of the fleet out at once; at most 2'),
    (5, 'all 3 units of the fleet out at once; at most 2'),
])
def test_a_budget_of_none_or_of_every_unit_is_refused(limit, message):
    with pytest.raises(AnsibleFilterError) as error:
        maintenance_batches(_nodes('a', 'b', 'c'), {'a': ['reboot-required']}, limit)
    assert 'llmfleet_nodes_max_unavailable' in str(error.value) and message in str(error.value)


def test_a_fleet_of_one_group_is_an_outage_that_must_be_accepted():
    nodes = _nodes('a@g', 'b@g')
    with pytest.raises(AnsibleFilterError) as error:
        maintenance_batches(nodes, {'b': ['reboot-required']}, 1)
    assert 'g is the whole serving fleet' in str(error.value) and 'b: reboot-required' in str(error.value)
    assert 'llmfleet_maintenance_outage_accepted' in str(error.value)
    plan = maintenance_batches(nodes, {'b': ['reboot-required']}, 1, outage_accepted=True)
    assert plan['outage'] is True and _names(plan) == [['g']]


def test_nothing_pending_is_no_batch_and_no_outage():
    assert maintenance_batches(_nodes('a@g', 'b@g'), {'a': []}, 1) == {
        'size': 1, 'units': 1, 'outage': False, 'batches': []}


@pytest.mark.parametrize('nodes, pending', [([{'name': 'a'}], {}), (['a'], {}), (_nodes('a', 'b'), ['a'])])
def test_malformed_input_is_refused_with_a_message(nodes, pending):
    with pytest.raises(AnsibleFilterError):
        maintenance_batches(nodes, pending, 1)


def test_a_unit_carries_its_workers_with_their_node_and_names_nodes_whose_workers_are_unknown():
    nodes = _nodes('a', 'b@g', 'c@g')
    nodes[1]['llmfleet_worker_endpoints'] = [{'name': 'llmfleet-worker-engine-0', 'url': 'http://10.0.0.2:8000',
                                              'ranks': [{'node': 'c', 'name': 'llmfleet-worker-engine-1'}]}]
    nodes[2]['llmfleet_worker_endpoints'] = []
    nodes[0]['llmfleet_worker_endpoints'] = [{'name': 'llmfleet-worker-0', 'url': 'http://10.0.0.1:8000'}]
    plan = maintenance_batches(nodes, {'c': ['/var/run/reboot-required exists']}, 1)
    (unit,), = plan['batches']
    assert unit['endpoints'] == [dict(nodes[1]['llmfleet_worker_endpoints'][0], node='b')]
    assert unit['unknown'] == []
    del nodes[0]['llmfleet_worker_endpoints']
    plan = maintenance_batches(nodes, {'a': ['the amdgpu driver was installed or changed']}, 1)
    assert plan['batches'][0][0]['endpoints'] == [] and plan['batches'][0][0]['unknown'] == ['a']


def test_hostvars_are_taken_as_any_mapping():
    class HostVars(Mapping):
        def __init__(self, data):
            self._data = data

        def __getitem__(self, key):
            return self._data[key]

        def __iter__(self):
            return iter(self._data)

        def __len__(self):
            return len(self._data)

    nodes = [HostVars(node) for node in _nodes('a', 'b')]
    assert _names(maintenance_batches(nodes, {'a': ['x']}, 1)) == [['a']]
