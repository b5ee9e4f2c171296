# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every input rule of the rdma role, triggered and quiet."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.rdma import RULES, rdma_input_problems
from input_rules import PLATFORM, UNSUPPORTED, Case, assert_every_rule_reached, role_defaults, run_case

VALUES = role_defaults('rdma')
# A lab host: no RDMA device, eth0 is the interface of the default route and so NCCL_SOCKET_IFNAME.
CTX = {'platform': PLATFORM, 'devices': [], 'interfaces': ['eth0', 'lo'], 'management_ifname': 'eth0',
       'socket_ifnames': ['eth0'], 'ib_hca_devices': []}


def _device(name, netdevs, active_ports=1):
    """One device as llmfleet.rocm.rdma_facts reports it."""
    return {'name': name, 'pci_address': '0000:09:00.0', 'netdevs': netdevs, 'active_ports': active_ports, 'verbs': True,
            'link_layer': 'Ethernet', 'ports': [{'port': 1, 'state': 'PORT_ACTIVE' if active_ports else 'PORT_DOWN'}]}


# A GPU node: a management NIC (eno1, the default route) and two RoCE NICs.
GPU_NODE = {'devices': [_device('mlx5_0', ['ens1f0np0']), _device('mlx5_1', ['ens2f0np0'])],
            'interfaces': ['eno1', 'ens1f0np0', 'ens2f0np0', 'lo'], 'management_ifname': 'eno1',
            'socket_ifnames': ['ens1f0np0'], 'ib_hca_devices': ['mlx5_0', 'mlx5_1']}

CASES = [
    Case('unsupported-system', {}, 'rdma-unsupported-system', {'platform': UNSUPPORTED},
         contains='Unsupported system CentOS 9: the rdma role supports'),
    Case('supported-system', {}, 'rdma-unsupported-system', absent=True),
    Case('module-with-space', {'rdma_modules_extra': ['mlx5_ib', 'bnxt re']}, 'rdma-modules-extra-names', contains='"bnxt re"'),
    Case('module-not-a-string', {'rdma_modules_extra': [5]}, 'rdma-modules-extra-names', contains=': 5.'),
    Case('module-names', {'rdma_modules_extra': ['mlx5_ib', 'bnxt_re', 'irdma']}, 'rdma-modules-extra-names', absent=True),
    Case('load-now-string', {'rdma_load_modules_now': 'false'}, 'rdma-load-modules-now-type', contains='"false"'),
    Case('load-now-false', {'rdma_load_modules_now': False}, 'rdma-load-modules-now-type', absent=True),
    Case('load-now-follows', {'rdma_load_modules_now': None}, 'rdma-load-modules-now-type', absent=True),
    Case('ifname-unknown', {'rdma_socket_ifname': 'eth9'}, 'rdma-socket-ifname-unknown', {'socket_ifnames': ['eth9']},
         contains='rdma_socket_ifname names eth9, which this node does not have (it has eth0, lo)'),
    Case('ifname-one-of-two-unknown', {'rdma_socket_ifname': 'eth0,eth1'}, 'rdma-socket-ifname-unknown',
         {'socket_ifnames': ['eth0', 'eth1']}, contains='names eth1, which'),
    Case('ifname-known', {'rdma_socket_ifname': 'eth0'}, 'rdma-socket-ifname-unknown', absent=True),
    # A name picked from the node is the node's own, even if the interface list was read before it appeared.
    Case('ifname-picked', {}, 'rdma-socket-ifname-unknown', {'interfaces': ['lo']}, absent=True),
    Case('no-ifname', {}, 'rdma-no-socket-ifname', {'socket_ifnames': [], 'management_ifname': ''},
         contains='No interface for NCCL_SOCKET_IFNAME'),
    Case('ifname-from-route', {}, 'rdma-no-socket-ifname', absent=True),
    Case('management-with-rdma', {}, 'rdma-management-interface', dict(GPU_NODE, socket_ifnames=['eno1']),
         contains=['NCCL_SOCKET_IFNAME would be eno1', 'RDMA devices (mlx5_0, mlx5_1)',
                   '(interfaces of the RDMA devices: ens1f0np0, ens2f0np0)', 'rdma_allow_management_interface: true']),
    Case('management-with-rdma-no-netdev', {}, 'rdma-management-interface',
         dict(GPU_NODE, devices=[_device('mlx5_0', [])], socket_ifnames=['eno1'], ib_hca_devices=['mlx5_0']),
         contains='network, or set'),
    Case('management-allowed', {'rdma_allow_management_interface': True}, 'rdma-management-interface',
         dict(GPU_NODE, socket_ifnames=['eno1']), absent=True),
    Case('management-without-rdma', {}, 'rdma-management-interface', absent=True),
    Case('fabric-interface', {}, 'rdma-management-interface', GPU_NODE, absent=True),
    Case('hca-unknown', {'rdma_ib_hca': 'mlx5_0,mlx5_9:1'}, 'rdma-ib-hca-unknown', dict(GPU_NODE, ib_hca_devices=['mlx5_0', 'mlx5_9']),
         contains='rdma_ib_hca names mlx5_9, which this node does not have (mlx5_0, mlx5_1)'),
    Case('hca-without-devices', {'rdma_ib_hca': 'mlx5_0'}, 'rdma-ib-hca-unknown', {'ib_hca_devices': ['mlx5_0']},
         contains='(it has no RDMA device)'),
    Case('hca-known', {'rdma_ib_hca': 'mlx5_1:1'}, 'rdma-ib-hca-unknown', dict(GPU_NODE, ib_hca_devices=['mlx5_1']), absent=True),
    Case('plugin-with-space', {'rdma_net_plugin': 'librccl net.so'}, 'rdma-net-plugin',
         contains='rdma_net_plugin "librccl net.so" is not a plugin name or path'),
    Case('plugin-with-dollar', {'rdma_net_plugin': '$HOME/librccl-net.so'}, 'rdma-net-plugin'),
    Case('plugin-path', {'rdma_net_plugin': '/opt/rccl-net/lib/librccl-net.so'}, 'rdma-net-plugin', absent=True),
    Case('plugin-none', {'rdma_net_plugin': ''}, 'rdma-net-plugin', absent=True),
    Case('env-rccl-net-plugin', {'rdma_env_extra': {'RCCL_NET_PLUGIN': 'librccl-net.so'}}, 'rdma-env-rccl-net-plugin',
         contains='set rdma_net_plugin instead'),
    Case('env-other', {'rdma_env_extra': {'NCCL_MIN_NCHANNELS': 112}}, 'rdma-env-rccl-net-plugin', absent=True),
    Case('env-managed', {'rdma_env_extra': {'NCCL_IB_HCA': '=mlx5_0', 'NCCL_DEBUG': 'INFO'}}, 'rdma-env-managed-names',
         contains='rdma_env_extra sets NCCL_IB_HCA, NCCL_DEBUG, which the role sets from its own options'),
    Case('env-unmanaged', {'rdma_env_extra': {'NCCL_IB_GID_INDEX': 3}}, 'rdma-env-managed-names', absent=True),
    Case('env-bad-names', {'rdma_env_extra': {'NCCL-X': '1', '1X': '1', 7: '1'}}, 'rdma-env-names',
         contains=['"NCCL-X"', '"1X"', '7']),
    Case('env-good-names', {'rdma_env_extra': {'NCCL_IB_GID_INDEX': 3, '_PRIVATE': 'x'}}, 'rdma-env-names', absent=True),
    Case('env-quote', {'rdma_env_extra': {'NCCL_ALGO': 'Ring"; rm'}}, 'rdma-env-values',
         contains='rdma_env_extra has values for NCCL_ALGO that are not plain strings or numbers'),
    Case('env-line-break', {'rdma_env_extra': {'A': 'x\nB=y'}}, 'rdma-env-values', contains='values for A '),
    Case('env-backtick', {'rdma_env_extra': {'A': '`id`'}}, 'rdma-env-values'),
    Case('env-list', {'rdma_env_extra': {'A': [1, 2]}}, 'rdma-env-values'),
    Case('env-carriage-return', {'rdma_env_extra': {'A': 'x\rB=y'}}, 'rdma-env-values', contains='control characters'),
    Case('env-tab', {'rdma_env_extra': {'A': 'x\ty'}}, 'rdma-env-values'),
    Case('env-plain', {'rdma_env_extra': {'NCCL_MIN_NCHANNELS': 112, 'NCCL_ALGO': 'Ring,Tree', 'NCCL_X': 0.5}},
         'rdma-env-values', absent=True),
    Case('env-percent-and-space', {'rdma_env_extra': {'A': '100% of a b'}}, 'rdma-env-values', absent=True),

    Case('nccl-debug-two-lines', {'rdma_nccl_debug': 'INFO\nLD_PRELOAD=/tmp/x.so'}, 'rdma-nccl-debug-level',
         contains=['rdma_nccl_debug "INFO\\nLD_PRELOAD=/tmp/x.so"', 'VERSION, WARN, INFO, TRACE']),
    Case('nccl-debug-quote', {'rdma_nccl_debug': 'WARN"'}, 'rdma-nccl-debug-level'),
    Case('nccl-debug-unknown', {'rdma_nccl_debug': 'DEBUG'}, 'rdma-nccl-debug-level'),
    Case('nccl-debug-lower-case', {'rdma_nccl_debug': 'info'}, 'rdma-nccl-debug-level', absent=True),
    Case('nccl-debug-unset', {'rdma_nccl_debug': ''}, 'rdma-nccl-debug-level', absent=True),
]


@pytest.mark.parametrize('case', CASES, ids=[case.id for case in CASES])
def test_rule(case):
    run_case(RULES, VALUES, CTX, case)


def test_defaults_have_no_problem():
    assert rdma_input_problems(VALUES, PLATFORM, devices=[], interfaces=['eth0', 'lo'], management_ifname='eth0',
                               socket_ifnames=['eth0']) == []
    assert rdma_input_problems(VALUES, PLATFORM, **GPU_NODE) == []


def test_every_rule_is_reached():
    assert_every_rule_reached(RULES, CASES)
