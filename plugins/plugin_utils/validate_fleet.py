# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet's validation table (``validate_fleet_table``) from each node's llmfleet.rocm.node_validate result, and the
plan of the all-reduce across each group's nodes (``validate_fabric_plan``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.module_utils._validate_fabric import fabric_plan
from ansible_collections.llmfleet.rocm.plugins.module_utils._validate_report import fleet_table


def validate_fleet_table(names, hostvars, result_name='_validate_result', fabric_name='_validate_fabric_findings'):
    """The nodes' results (``hostvars[node][result_name]``, with their group's ``fabric_name``) -> rows, failed nodes,
    markdown and csv."""
    nodes = []
    for name in names:
        result = hostvars[name].get(result_name)
        if not result or 'findings' not in result:
            raise AnsibleFilterError('validate_fleet_table: %s has no validation result (%s)' % (name, result_name))
        nodes.append({'node': name, 'model': result.get('model'),
                      'findings': list(result['findings']) + list(hostvars[name].get(fabric_name) or []),
                      'firmware': result.get('firmware') or {}})
    return fleet_table(nodes)


def validate_fabric_plan(names, hostvars, require_rdma=True, threshold=None, line_rate_fraction=0.7,
                         env_name='_validate_fabric_env', result_name='_validate_result'):
    """The groups of the nodes (``validate_fabric_group``) and how each one's all-reduce across nodes runs."""
    nodes = []
    for name in names:
        host = hostvars[name]
        env = host.get(env_name) or {}
        text = None
        if env.get('content') is not None:
            text = base64.b64decode(env['content']).decode('utf-8', 'replace')
        facts = host.get('ansible_facts') or {}
        nodes.append({'name': name, 'group': host.get('validate_fabric_group', 'all'), 'env_text': text,
                      'rdma': facts.get('rdma'), 'interfaces': facts, 'gpus': (host.get(result_name) or {}).get('gpus')})
    if threshold is not None and (not isinstance(threshold, dict) or 'value' not in threshold):
        raise AnsibleFilterError('validate_fabric_threshold must be a mapping with value (GB/s) and source, got %r' % (threshold,))
    return fabric_plan(nodes, {'require_rdma': bool(require_rdma), 'threshold': threshold,
                               'line_rate_fraction': float(line_rate_fraction)})
