# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""rdma_facts run as Ansible runs it, with a stand-in ibv_devinfo and a sysfs tree built per test."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil

import pytest

SYSTEM_BIN_DIRS = ['/usr/bin', '/usr/sbin', '/sbin', '/bin']


def run(node, **params):
    params.setdefault('sysfs_path', node.sysfs)
    return node.run('rdma_facts', **params)


def rdma_device(node, name, pci_address, netdevs, ports):
    """/sys/class/infiniband/<name> with device -> the PCI function, its net/ interfaces, and ports/<n>/{state,link_layer}."""
    function = os.path.join(node.sysfs, 'devices', 'pci0000:00', '0000:00:03.1', pci_address)
    for netdev in netdevs:
        os.makedirs(os.path.join(function, 'net', netdev))
    if not netdevs:
        os.makedirs(function)
    root = os.path.join(node.sysfs, 'class', 'infiniband', name)
    os.makedirs(root)
    os.symlink(os.path.relpath(function, root), os.path.join(root, 'device'))
    node.write(os.path.join(root, 'fw_ver'), '2.40.7000\n')
    node.write(os.path.join(root, 'node_guid'), '248a:0703:00f6:3370\n')
    for number, (state, link_layer) in ports.items():
        node.write(os.path.join(root, 'ports', str(number), 'state'), state + '\n')
        node.write(os.path.join(root, 'ports', str(number), 'link_layer'), link_layer + '\n')


def no_system_tool():
    return not (shutil.which('ibv_devinfo') or any(os.path.exists(os.path.join(d, 'ibv_devinfo')) for d in SYSTEM_BIN_DIRS))


def test_devices_from_ibv_devinfo_with_netdevs_from_sysfs(node):
    node.tool('ibv_devinfo', {'': ('ibv_devinfo/cx3-roce-2port-tensorflow-gdr.txt', 0, 'out')})
    rdma_device(node, 'mlx4_0', '0000:05:00.0', ['ens1', 'ens1d1'], {1: ('4: ACTIVE', 'Ethernet'), 2: ('4: ACTIVE', 'Ethernet')})
    result = run(node)
    assert result.get('failed') is not True, result
    calls = node.calls()
    assert [call['argv'] for call in calls] == [[os.path.join(node.bin, 'ibv_devinfo')]]
    assert all(call['LC_ALL'] == 'C' and call['LANG'] == 'C' for call in calls)
    rdma = result['ansible_facts']['rdma']
    assert rdma['tool'] == 'ibv_devinfo'
    assert rdma['sources'] == ['ibv_devinfo', 'sysfs']
    assert rdma['device_count'] == 1
    device = rdma['devices'][0]
    assert device['name'] == 'mlx4_0'
    assert device['pci_address'] == '0000:05:00.0'
    assert device['netdevs'] == ['ens1', 'ens1d1']
    assert device['verbs'] is True
    assert device['link_layer'] == 'Ethernet'
    assert device['active_ports'] == 2
    assert [port['active_mtu'] for port in device['ports']] == [1024, 1024]


def test_two_ib_hcas_with_a_down_port(node):
    node.tool('ibv_devinfo', {'': ('ibv_devinfo/cx3-ib-2hca-2port.txt', 0, 'out')})
    rdma = run(node)['ansible_facts']['rdma']
    assert [device['name'] for device in rdma['devices']] == ['mlx4_0', 'mlx4_1']
    assert [device['active_ports'] for device in rdma['devices']] == [1, 1]
    assert rdma['devices'][0]['netdevs'] == [] and rdma['devices'][0]['pci_address'] is None
    assert rdma['sources'] == ['ibv_devinfo']


def test_no_ib_devices_is_an_empty_list_not_a_failure(node):
    node.tool('ibv_devinfo', {'': ('ibv_devinfo/pib-no-userspace-driver.txt', 255, 'err')})
    result = run(node)
    assert result.get('failed') is not True, result
    assert result['ansible_facts']['rdma']['devices'] == []
    assert result['ansible_facts']['rdma']['tool'] == 'ibv_devinfo'
    assert len([w for w in result['warnings'] if 'no userspace device-specific driver' in str(w)]) == 2


def test_no_uverbs_and_no_kernel_device_is_a_node_without_rdma(node):
    node.tool('ibv_devinfo', {'': ('ibv_devinfo/debian12-container-no-uverbs.txt', 255, 'err')})
    result = run(node)
    assert result.get('failed') is not True, result
    assert result['ansible_facts']['rdma']['devices'] == []
    assert any('lists no RDMA device' in str(warning) for warning in result['warnings']), result


def test_no_uverbs_with_kernel_devices_fails_with_the_tools_line(node):
    node.tool('ibv_devinfo', {'': ('ibv_devinfo/debian12-container-no-uverbs.txt', 255, 'err')})
    rdma_device(node, 'mlx5_0', '0000:09:00.0', ['enp9s0np0'], {1: ('4: ACTIVE', 'Ethernet')})
    result = run(node)
    assert result['failed'] is True
    assert result['tool_line'] == 'Failed to get IB devices list: Function not implemented'


def test_kernel_devices_ibv_devinfo_cannot_open_are_listed_and_warned_about(node):
    node.tool('ibv_devinfo', {'': ('ibv_devinfo/no-devices-missing-providers.txt', 255, 'err')})
    rdma_device(node, 'mlx5_0', '0000:09:00.0', ['enp9s0np0'], {1: ('4: ACTIVE', 'Ethernet')})
    result = run(node)
    assert result.get('failed') is not True, result
    device = result['ansible_facts']['rdma']['devices'][0]
    assert (device['name'], device['verbs'], device['netdevs']) == ('mlx5_0', False, ['enp9s0np0'])
    assert device['ports'][0]['state'] == 'PORT_ACTIVE'
    assert any('ibverbs-providers' in str(warning) for warning in result['warnings']), result


def test_output_that_is_not_ibv_devinfo_fails_with_the_command(node):
    node.tool('ibv_devinfo', {'': ('lspci/cx7-8-nics-pp.txt', 0, 'out')})
    result = run(node)
    assert result['failed'] is True
    assert 'cannot read' in result['msg'] and 'ibv_devinfo' in result['msg']


def test_a_failing_run_with_devices_fails(node):
    node.tool('ibv_devinfo', {'': ('ibv_devinfo/cx3-ib-2hca-2port.txt', 1, 'out')})
    result = run(node)
    assert result['failed'] is True
    assert 'exited with 1' in result['msg']


@pytest.mark.skipif(not no_system_tool(), reason='this machine has ibv_devinfo installed')
def test_without_ibv_devinfo_the_devices_come_from_sysfs(node):
    rdma_device(node, 'mlx5_1', '0000:23:00.0', ['enp35s0np0'], {1: ('1: DOWN', 'InfiniBand')})
    result = run(node)
    rdma = result['ansible_facts']['rdma']
    assert rdma['tool'] is None and rdma['sources'] == ['sysfs'] and result['commands'] == []
    device = rdma['devices'][0]
    assert device['verbs'] is None
    assert (device['link_layer'], device['active_ports'], device['fw_ver']) == ('InfiniBand', 0, '2.40.7000')
    assert device['ports'] == [{'port': 1, 'state': 'PORT_DOWN', 'active': False, 'active_mtu': None, 'link_layer': 'InfiniBand'}]


@pytest.mark.skipif(not no_system_tool(), reason='this machine has ibv_devinfo installed')
def test_without_anything_the_list_is_empty(node):
    rdma = run(node)['ansible_facts']['rdma']
    assert rdma == {'tool': None, 'sources': [], 'device_count': 0, 'devices': []}
