# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""No filter. The names plugins/filter/firewall_inputs.py, exporters_inputs.py and monitoring_inputs.py
import from here, until the input checks move to plugins/plugin_utils.

What they are: plugins/plugin_utils/firewall_rules.py. Delete this file when nothing imports from it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.firewall_rules import (
    ALLOW_KEYS, PROTOS, address_problems, admits, allow_ports, gateway_ports, host_vars, is_comment, is_group_name,
    multinode_ports, node_value, parse_cidr, port_spec, ssh_connection, ssh_port, worker_port_count, worker_ports,
)

__all__ = ['ALLOW_KEYS', 'FilterModule', 'PROTOS', 'address_problems', 'admits', 'allow_ports', 'gateway_ports', 'host_vars',
           'is_comment', 'is_group_name', 'multinode_ports', 'node_value', 'parse_cidr', 'port_spec', 'ssh_connection',
           'ssh_port', 'worker_port_count', 'worker_ports']


class FilterModule(object):
    def filters(self):
        return {}
