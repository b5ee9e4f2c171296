# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rolling restart of the fleet's workers: which of a node's workers restart now and which wait for the roll
(``worker_restart_plan``), which go out together, a few at a time (``rolling_restart_batches``), and the unit steps
that restart one batch (``rolling_restart_steps``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import max_unavailable, show


def _endpoints(node):
    endpoints = node.get('llmfleet_worker_endpoints') or []
    if not isinstance(endpoints, list) or not all(isinstance(e, dict) and e.get('name') and e.get('url')
                                                  for e in endpoints):
        raise AnsibleFilterError('the llmfleet_worker_endpoints fact of %s is not a list of workers with a name and a url'
                                 ' (run playbooks/serve.yml)' % node.get('inventory_hostname', 'a node'))
    return endpoints


def rolling_restart_batches(nodes, limit, only_pending=True):
    """The GPU nodes' variables (each with inventory_hostname, llmfleet_worker_endpoints and, from the workers role's
    rolling restarts, llmfleet_workers_pending: name -> restart mark) -> batches of endpoints (each with its node and
    its restart mark, "" for none, added), at most
    `limit` (workers_max_unavailable, of every worker of the fleet) per batch. only_pending: only the workers the
    workers role left for the roll; else every worker."""
    fleet = []
    for node in nodes or []:
        host = node.get('inventory_hostname')
        pending = node.get('llmfleet_workers_pending') or {}
        for endpoint in _endpoints(node):
            if not only_pending or endpoint['name'] in pending:
                fleet.append(dict(endpoint, node=host, restart_mark=pending.get(endpoint['name'], '')))
    total = sum(len(_endpoints(node)) for node in nodes or [])
    try:
        size = max_unavailable(limit, total)
    except ValueError as error:
        raise AnsibleFilterError('workers_max_unavailable %s is not usable: %s' % (show(limit), error))
    return [fleet[start:start + size] for start in range(0, len(fleet), size)]


def rolling_restart_steps(batch):
    """A batch of the roll -> the unit steps that restart it, in order: ``[{node, name, state}]``.

    A worker alone is restarted. The API rank of an engine over several nodes (its endpoint lists the other ranks in
    ``ranks``) is stopped first, the other ranks are restarted, and it is started last: the engine stops as one and its
    ranks meet again under the new first rank, with no rank restarted under a running engine."""
    steps = []
    for endpoint in batch or []:
        ranks = endpoint.get('ranks') or []
        if not ranks:
            steps.append({'node': endpoint['node'], 'name': endpoint['name'], 'state': 'restarted'})
            continue
        steps.append({'node': endpoint['node'], 'name': endpoint['name'], 'state': 'stopped'})
        steps.extend({'node': rank['node'], 'name': rank['name'], 'state': 'restarted'} for rank in ranks)
        steps.append({'node': endpoint['node'], 'name': endpoint['name'], 'state': 'started'})
    return steps


# systemctl is-active states of a worker that serves, or is about to: its change waits for the roll.
_SERVING = ('active', 'reloading')


def worker_restart_plan(names, marks, changed=None, everything=False, states=None, reads=None, rolling=False):
    """Which of a node's workers (`names`, the plan's order) restart now and which wait for the roll.

    marks: name -> path of its restart mark (the file that keeps a change waiting for the roll across runs);
    changed: names whose unit changed in this run; everything: a change of every worker (a new key, a model
    replaced in place); states: `systemctl is-active` output lines, one per name; reads: name -> stat of its
    mark; rolling: the workers role's restart mode is rolling.
    -> {'restart': names to restart now, 'pending': {name: mark} left for the roll,
        'marks': [{'path', 'state'}] of the marks to write (touch) or remove (absent)}."""
    states = list(states or [])
    reads = reads or {}
    result = {'restart': [], 'pending': {}, 'marks': []}
    for index, name in enumerate(names or []):
        marked = bool((reads.get(name) or {}).get('exists'))
        if not (everything or name in (changed or []) or marked):
            continue
        state = states[index].strip() if index < len(states) else ''
        if rolling and state in _SERVING:
            result['pending'][name] = marks[name]
            if not marked:
                result['marks'].append({'path': marks[name], 'state': 'touch'})
        else:
            result['restart'].append(name)
            if marked:
                result['marks'].append({'path': marks[name], 'state': 'absent'})
    return result
