# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every input rule of the firewall role, triggered and quiet."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.firewall import RULES, firewall_input_problems
from input_rules import PLATFORM, UNSUPPORTED, Case, assert_every_rule_reached, role_defaults, run_case

VALUES = role_defaults('firewall')
# The templated defaults, as a run resolves them.
VALUES.update({'firewall_admin_cidrs': ['10.89.77.1/32', '2001:db8:1::/48'], 'firewall_ssh_port': 22,
               'firewall_gateway_client_cidrs': ['0.0.0.0/0', '::/0']})


def facts(address):
    # The controller's session as a lab host sees it: from the lab bridge, on sshd's port 22 (the 127.0.0.1:22xx
    # forwards are the controller's side).
    return {'ansible_facts': {'default_ipv4': {'address': address}, 'env': {'SSH_CONNECTION': '10.89.77.1 51000 %s 22' % address}},
            'ansible_port': 2201}


# The sandbox's shape: two GPU nodes, one gateway.
HOSTVARS = {
    'gpu-node-1': dict(facts('10.89.77.201'), workers_gpus=[0], rocm_expected_gpu_count=8),
    'gpu-node-2': dict(facts('10.89.77.202'), workers_gpus=[0], rocm_expected_gpu_count=2),
    'gateway-1': dict(facts('10.89.77.211'), gateway_tls_certificate='/etc/ssl/llmfleet-lab/gateway.crt'),
}
GROUPS = {'all': sorted(HOSTVARS), 'ungrouped': [], 'gpu_nodes': ['gpu-node-1', 'gpu-node-2'], 'gateways': ['gateway-1']}
CTX = {'platform': PLATFORM, 'hostvars': HOSTVARS, 'groups': GROUPS, 'host': 'gpu-node-1'}


def hostvars_with(host, **changes):
    result = copy.deepcopy(HOSTVARS)
    result[host].update(changes)
    return result


def without_facts(host):
    result = copy.deepcopy(HOSTVARS)
    del result[host]['ansible_facts']
    return result


GATEWAY = {'host': 'gateway-1'}
ALLOW = {'ports': [29500, '30000-30100'], 'proto': 'tcp', 'from_groups': ['gpu_nodes'], 'comment': 'engine ranks'}

CASES = [
    Case('unsupported-system', {}, 'firewall-unsupported-system', {'platform': UNSUPPORTED}, contains='CentOS 9'),
    Case('supported-system', {}, 'firewall-unsupported-system', absent=True),
    Case('admin-empty', {'firewall_admin_cidrs': []}, 'firewall-admin-cidrs-empty', contains='firewall_admin_cidrs is empty'),
    Case('admin-missing', {'firewall_admin_cidrs': None}, 'firewall-admin-cidrs-empty'),
    Case('admin-set', {}, 'firewall-admin-cidrs-empty', absent=True),
    Case('admin-not-cidr', {'firewall_admin_cidrs': ['10.0.0.0/33', 'ssh.example.org']}, 'firewall-admin-cidrs-invalid',
         contains=['"10.0.0.0/33"', '"ssh.example.org"']),
    Case('admin-injection', {'firewall_admin_cidrs': ['10.0.0.0/8 } accept; #']}, 'firewall-admin-cidrs-invalid',
         contains='accept'),
    Case('admin-not-list', {'firewall_admin_cidrs': '10.0.0.0/8'}, 'firewall-admin-cidrs-invalid'),
    Case('admin-v4-v6-host-bits', {'firewall_admin_cidrs': ['10.89.77.1/24', 'fd00::1']}, 'firewall-admin-cidrs-invalid',
         absent=True),
    Case('ssh-port-zero', {'firewall_ssh_port': 0}, 'firewall-ssh-port', contains='0'),
    Case('ssh-port-text', {'firewall_ssh_port': '22; accept'}, 'firewall-ssh-port', contains='"22; accept"'),
    Case('ssh-port-string', {'firewall_ssh_port': '2222'}, 'firewall-ssh-port', absent=True),
    Case('ssh-port-from-session', {'firewall_ssh_port': None}, 'firewall-ssh-port', absent=True),
    Case('controller-outside', {'firewall_admin_cidrs': ['192.0.2.0/24', '2001:db8:1::/48']}, 'firewall-controller-locked-out',
         contains=['from 10.89.77.1', 'firewall_admin_cidrs']),
    Case('controller-wrong-port', {'firewall_ssh_port': 2201}, 'firewall-controller-locked-out',
         contains=['arrived on port 22', 'firewall_ssh_port is 2201']),
    Case('controller-inside-network', {'firewall_admin_cidrs': ['10.89.77.0/24'], 'firewall_ssh_port': None},
         'firewall-controller-locked-out', absent=True),
    Case('controller-session-unknown', {'firewall_admin_cidrs': ['192.0.2.0/24'], 'firewall_ssh_port': 2201},
         'firewall-controller-locked-out', {'hostvars': hostvars_with('gpu-node-1', ansible_facts={'default_ipv4': {
             'address': '10.89.77.201'}, 'env': {'SSH_CONNECTION': 'garbage'}})}, absent=True),
    Case('clients-empty', {'firewall_gateway_client_cidrs': []}, 'firewall-gateway-client-cidrs', contains='empty'),
    Case('clients-bad', {'firewall_gateway_client_cidrs': ['any']}, 'firewall-gateway-client-cidrs', contains='"any"'),
    Case('clients-narrow', {'firewall_gateway_client_cidrs': ['198.51.100.0/24']}, 'firewall-gateway-client-cidrs', absent=True),
    Case('group-dash', {'firewall_worker_group': 'gpu-nodes'}, 'firewall-group-names', contains='firewall_worker_group'),
    Case('group-brace', {'firewall_gateway_group': 'gw}'}, 'firewall-group-names', contains='firewall_gateway_group'),
    Case('groups-fine', {}, 'firewall-group-names', absent=True),
    Case('confirm-short', {'firewall_confirm_timeout': 5}, 'firewall-timeouts', contains='firewall_confirm_timeout'),
    Case('reconnect-too-long', {'firewall_reconnect_timeout': 25}, 'firewall-timeouts', contains='at least 10 less'),
    Case('reconnect-text', {'firewall_reconnect_timeout': 'soon'}, 'firewall-timeouts', contains='"soon"'),
    Case('timeouts-fine', {'firewall_confirm_timeout': 60, 'firewall_reconnect_timeout': '50'}, 'firewall-timeouts', absent=True),
    Case('port-count-zero', {'firewall_worker_port_count': 0}, 'firewall-worker-ports', contains='firewall_worker_port_count'),
    Case('port-base-text', {}, 'firewall-worker-ports', {'hostvars': hostvars_with('gpu-node-1', workers_port_base='80;')},
         contains='"80;"'),
    Case('port-range-too-high', {}, 'firewall-worker-ports',
         {'hostvars': hostvars_with('gpu-node-1', workers_port_base=65535, workers_gpus=[0, 1])}, contains='65535'),
    Case('mode-unknown', {}, 'firewall-worker-ports', {'hostvars': hostvars_with('gpu-node-1', workers_mode='pp')},
         contains='"pp"'),
    Case('expected-count-text', {}, 'firewall-worker-ports',
         {'hostvars': hostvars_with('gpu-node-1', workers_gpus=[], rocm_expected_gpu_count='eight')}, contains='"eight"'),
    Case('port-count-explicit', {'firewall_worker_port_count': 16}, 'firewall-worker-ports', absent=True),
    Case('gateway-not-judged-on-workers', {}, 'firewall-worker-ports',
         {'host': 'gateway-1', 'hostvars': hostvars_with('gateway-1', workers_port_base='x')}, absent=True),
    Case('multinode-ports-word', {'firewall_multinode_ports': 'ephemeral'}, 'firewall-multinode-ports',
         contains=['firewall_multinode_ports "ephemeral"', '32768-60999']),
    Case('multinode-ports-reversed', {'firewall_multinode_ports': '60999-32768'}, 'firewall-multinode-ports'),
    Case('multinode-group-not-a-name', {}, 'firewall-multinode-ports',
         {'hostvars': hostvars_with('gpu-node-1', workers_multinode_group='gpu nodes;')}, contains='"gpu nodes;"'),
    Case('multinode-master-port-range', {}, 'firewall-multinode-ports',
         {'hostvars': hostvars_with('gpu-node-1', workers_multinode_group='gpu_nodes', workers_multinode_master_port='1-9')},
         contains='workers_multinode_master_port of gpu-node-1 ("1-9")'),
    Case('multinode-ray-worker-ports', {}, 'firewall-multinode-ports',
         {'hostvars': hostvars_with('gpu-node-1', workers_multinode_group='gpu_nodes', workers_multinode_backend='ray',
                                    workers_ray_worker_ports='many')},
         contains='workers_ray_port and workers_ray_worker_ports of gpu-node-1 (6379, "many")'),
    Case('multinode-ray-fine', {}, 'firewall-multinode-ports',
         {'hostvars': hostvars_with('gpu-node-1', workers_multinode_group='gpu_nodes', workers_multinode_backend='ray',
                                    workers_multinode_master_port='x')}, absent=True),
    Case('multinode-fine', {'firewall_multinode_ports': '40000-41000'}, 'firewall-multinode-ports',
         {'hostvars': hostvars_with('gpu-node-1', workers_multinode_group='gpu_nodes')}, absent=True),
    Case('multinode-port-not-judged-alone', {}, 'firewall-multinode-ports',
         {'hostvars': hostvars_with('gpu-node-1', workers_multinode_master_port='x')}, absent=True),
    Case('gateway-port-text', {}, 'firewall-gateway-ports',
         dict(GATEWAY, hostvars=hostvars_with('gateway-1', gateway_listen_port='80 accept')), contains='"80 accept"'),
    Case('gateway-tls-port-zero', {}, 'firewall-gateway-ports', dict(GATEWAY, hostvars=hostvars_with('gateway-1', gateway_tls_port=0))),
    Case('gateway-no-plain-http', {}, 'firewall-gateway-ports', dict(GATEWAY, hostvars=hostvars_with('gateway-1', gateway_listen_port=0)),
         absent=True),
    Case('allow-not-mapping', {'firewall_allow': ['29500']}, 'firewall-allow-shape', contains='must be a mapping'),
    Case('allow-unknown-key', {'firewall_allow': [dict(ALLOW, action='accept')]}, 'firewall-allow-shape', contains='action'),
    Case('allow-proto', {'firewall_allow': [dict(ALLOW, proto='sctp')]}, 'firewall-allow-shape', contains='"sctp"'),
    Case('allow-fine', {'firewall_allow': [ALLOW]}, 'firewall-allow-shape', absent=True),
    Case('allow-port-zero', {'firewall_allow': [dict(ALLOW, ports=[0])]}, 'firewall-allow-ports', contains='[0]'),
    Case('allow-port-range-backwards', {'firewall_allow': [dict(ALLOW, ports=['9000-8000'])]}, 'firewall-allow-ports'),
    Case('allow-port-injection', {'firewall_allow': [dict(ALLOW, ports=['22 } accept'])]}, 'firewall-allow-ports'),
    Case('allow-no-ports', {'firewall_allow': [dict(ALLOW, ports=[])]}, 'firewall-allow-ports'),
    Case('allow-single-port', {'firewall_allow': [dict(ALLOW, ports=29500)]}, 'firewall-allow-ports', absent=True),
    Case('allow-no-source', {'firewall_allow': [{'ports': [1], 'comment': 'x'}]}, 'firewall-allow-sources', contains='no source'),
    Case('allow-group-string', {'firewall_allow': [dict(ALLOW, from_groups='gpu_nodes')]}, 'firewall-allow-sources',
         contains='"gpu_nodes"'),
    Case('allow-group-mapping', {'firewall_allow': [dict(ALLOW, from_groups=[{'gpu_nodes': 1}])]}, 'firewall-allow-sources',
         contains='from_groups'),
    Case('allow-bad-cidr', {'firewall_allow': [dict(ALLOW, from_cidrs=['10.0.0.0/8; drop'])]}, 'firewall-allow-sources',
         contains='drop'),
    Case('allow-cidrs-only', {'firewall_allow': [{'ports': [9100], 'from_cidrs': ['192.0.2.10'], 'comment': 'metrics'}]},
         'firewall-allow-sources', absent=True),
    Case('comment-newline', {'firewall_allow': [dict(ALLOW, comment='x\ntcp dport 1-65535 accept')]}, 'firewall-allow-comment',
         contains='\\n'),
    Case('comment-quote', {'firewall_allow': [dict(ALLOW, comment='x" accept #')]}, 'firewall-allow-comment'),
    Case('comment-semicolon-brace', {'firewall_allow': [dict(ALLOW, comment='x; } table ip t {')]}, 'firewall-allow-comment'),
    Case('comment-too-long', {'firewall_allow': [dict(ALLOW, comment='x' * 101)]}, 'firewall-allow-comment'),
    Case('comment-plain', {'firewall_allow': [dict(ALLOW, comment='vLLM ranks (data parallel), 10.0.0.0/8')]},
         'firewall-allow-comment', absent=True),
    Case('gateway-unknown', {}, 'firewall-peer-addresses', {'hostvars': without_facts('gateway-1')},
         contains=['gateway-1', 'llmfleet_private_address']),
    Case('gateway-bad-address', {}, 'firewall-peer-addresses',
         {'hostvars': hostvars_with('gateway-1', llmfleet_private_address='10.89.77.211 } accept')}, contains='gateway-1'),
    Case('self-unknown', {}, 'firewall-peer-addresses', {'hostvars': without_facts('gpu-node-1')}, contains='gpu-node-1'),
    Case('allow-group-peer-unknown', {'firewall_allow': [ALLOW]}, 'firewall-peer-addresses', {'host': 'gateway-1',
         'hostvars': without_facts('gpu-node-2')}, contains='gpu-node-2'),
    Case('gateway-needs-no-workers', {}, 'firewall-peer-addresses', {'host': 'gateway-1', 'hostvars': without_facts('gpu-node-2')},
         absent=True),
    Case('private-address-given', {}, 'firewall-peer-addresses',
         {'hostvars': dict(without_facts('gateway-1'), **{'gateway-1': {'llmfleet_private_address': 'fd00::211'}})}, absent=True),
]


@pytest.mark.parametrize('case', CASES, ids=[case.id for case in CASES])
def test_rule(case):
    run_case(RULES, VALUES, CTX, case)


@pytest.mark.parametrize('host', sorted(HOSTVARS))
def test_sandbox_shape_has_no_problem(host):
    assert firewall_input_problems(VALUES, PLATFORM, hostvars=HOSTVARS, groups=GROUPS, host=host) == []


def test_defaults_refuse_only_the_empty_admin_ranges():
    defaults = role_defaults('firewall')
    defaults.update({'firewall_gateway_client_cidrs': ['0.0.0.0/0', '::/0']})
    problems = firewall_input_problems(defaults, PLATFORM, hostvars=HOSTVARS, groups=GROUPS, host='gpu-node-1')
    assert len(problems) == 1 and problems[0].startswith('firewall_admin_cidrs is empty')


def test_every_rule_is_reached():
    assert_every_rule_reached(RULES, CASES)
