# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node maintenance (a reboot, a driver or kernel change): which GPU nodes go out together, a few at a time.

A unit is what leaves the fleet as one: a GPU node, or every member of a multi-node group (workers_multinode_group),
whose engine stops when any member does. ``maintenance_batches`` takes the units that have work pending, at most
``llmfleet_nodes_max_unavailable`` units per batch (a count, or a percentage of the fleet's units), and refuses a
budget that would take every unit out at once. A fleet of one unit can only be maintained as an outage, which the
operator accepts explicitly."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import as_int, max_unavailable, show


def node_units(nodes):
    """The GPU nodes' variables, in inventory order (each with inventory_hostname and, for a member of a multi-node
    engine, workers_multinode_group) -> the units: ``[{'name', 'nodes'}]``, a group's members together under the
    group's name, at the place of its first member."""
    units = []
    groups = {}
    for node in nodes or []:
        if not isinstance(node, Mapping) or not node.get('inventory_hostname'):
            raise AnsibleFilterError('node_units: each node is a mapping with inventory_hostname, not %s' % show(node))
        host = node['inventory_hostname']
        group = node.get('workers_multinode_group') or None
        if group is None:
            units.append({'name': host, 'nodes': [host]})
        elif group in groups:
            groups[group]['nodes'].append(host)
        else:
            groups[group] = {'name': group, 'nodes': [host]}
            units.append(groups[group])
    return units


def _budget(limit, total):
    """llmfleet_nodes_max_unavailable -> units per batch, of `total` units; ValueError with the reason. As the worker
    roll's budget (max_unavailable), but every unit at once is refused, not cut to all but one."""
    text = limit.strip() if isinstance(limit, str) else limit
    if isinstance(text, str) and text.endswith('%'):
        every = as_int(text[:-1]) == 100
    else:
        every = (as_int(text) or 0) >= total
    if every and total > 1:
        raise ValueError('it would take all %d units of the fleet out at once; at most %d' % (total, total - 1))
    return max_unavailable(limit, total)


def maintenance_batches(nodes, pending, limit, outage_accepted=False):
    """The GPU nodes' variables (node_units), `pending` (host -> the reasons it needs maintenance; hosts without
    reasons need none), `limit` (llmfleet_nodes_max_unavailable) and whether the operator accepted an outage ->

    ``{'size': units per batch, 'units': number of units, 'outage': whether a batch is the whole fleet,
    'batches': [[{'name', 'nodes', 'reasons': {host: [reasons]}, 'endpoints', 'unknown'}]]}``, the units with pending
    work in inventory order; ``endpoints``: the unit's workers (its nodes' llmfleet_worker_endpoints, each with its
    ``node``), ``unknown``: its nodes without that fact (their workers cannot be drained).

    Refused with a message: a budget of 0, of every unit, or not a count or percentage; pending work on a fleet of
    one unit (that unit out is the fleet out) without outage_accepted."""
    units = node_units(nodes)
    pending = pending or {}
    if not isinstance(pending, dict):
        raise AnsibleFilterError('maintenance_batches: pending is a mapping of host -> reasons, not %s' % show(pending))
    try:
        size = _budget(limit, len(units))
    except ValueError as error:
        raise AnsibleFilterError('llmfleet_nodes_max_unavailable %s is not usable: %s' % (show(limit), error))
    by_host = dict((node['inventory_hostname'], node) for node in nodes or [])
    due = []
    for unit in units:
        reasons = dict((host, list(pending[host])) for host in unit['nodes'] if pending.get(host))
        if reasons:
            endpoints = [dict(endpoint, node=host) for host in unit['nodes']
                         for endpoint in by_host[host].get('llmfleet_worker_endpoints') or []]
            unknown = [host for host in unit['nodes'] if by_host[host].get('llmfleet_worker_endpoints') is None]
            due.append(dict(unit, reasons=reasons, endpoints=endpoints, unknown=unknown))
    outage = bool(due) and len(units) == 1
    if outage and not outage_accepted:
        raise AnsibleFilterError(
            '%s is the whole serving fleet: taking it out for maintenance (%s) is an outage. Accept it with '
            'llmfleet_maintenance_outage_accepted: true, or add serving nodes first.'
            % (units[0]['name'], '; '.join('%s: %s' % (host, ', '.join(reasons))
                                           for host, reasons in due[0]['reasons'].items())))
    return {'size': size, 'units': len(units), 'outage': outage,
            'batches': [due[start:start + size] for start in range(0, len(due), size)]}
