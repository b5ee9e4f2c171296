# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet's validation table (``validate_fleet_table``) from each node's llmfleet.rocm.node_validate result."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.module_utils.validate_report import fleet_table


def validate_fleet_table(names, hostvars, result_name='_validate_result'):
    """The nodes' results (``hostvars[node][result_name]``) -> rows, failed nodes, markdown and csv."""
    nodes = []
    for name in names:
        result = hostvars[name].get(result_name)
        if not result or 'findings' not in result:
            raise AnsibleFilterError('validate_fleet_table: %s has no validation result (%s)' % (name, result_name))
        nodes.append({'node': name, 'model': result.get('model'), 'findings': result['findings'],
                      'firmware': result.get('firmware') or {}})
    return fleet_table(nodes)


class FilterModule(object):
    def filters(self):
        return {'validate_fleet_table': validate_fleet_table}
