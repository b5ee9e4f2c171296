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
    """/sys/class/infiniband/<name> with device -> the PCI function, its net/ interfaces, and ports/<n>/{state,link_layer}.

    ``ports`` maps a port number to (state, link_layer) or (state, link_layer, rate); without a rate (or with
    None) the port has no ``rate`` file, as when the kernel cannot read it.
    """
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
    for number, files in ports.items():
        state, link_layer, rate = (tuple(files) + (None,))[:3]
        node.write(os.path.join(root, 'ports', str(number), 'state'), state + '\n')
        node.write(os.path.join(root, 'ports', str(number), 'link_layer'), link_layer + '\n')
        if rate is not None:
            node.write(os.path.join(root, 'ports', str(number), 'rate'), rate + '\n')


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


def test_port_rates_from_sysfs_with_ibv_devinfo(node):
    node.tool('ibv_devinfo', {'': ('ibv_devinfo/cx3-roce-2port-tensorflow-gdr.txt', 0, 'out')})
    rdma_device(node, 'mlx4_0', '0000:05:00.0', ['ens1', 'ens1d1'],
                {1: ('4: ACTIVE', 'Ethernet', '40 Gb/sec (4X QDR)'), 2: ('4: ACTIVE', 'Ethernet', '2.5 Gb/sec (1X SDR)')})
    result = run(node)
    assert result.get('failed') is not True, result
    device = result['ansible_facts']['rdma']['devices'][0]
    assert device['verbs'] is True
    assert [port['rate_gbps'] for port in device['ports']] == [40.0, 2.5]
    assert device['active_rate_gbps'] == 42.5
    assert [port['active_mtu'] for port in device['ports']] == [1024, 1024]


def test_an_active_port_without_a_rate_makes_the_device_rate_unknown(node):
    node.tool('ibv_devinfo', {'': ('ibv_devinfo/cx3-roce-2port-tensorflow-gdr.txt', 0, 'out')})
    rdma_device(node, 'mlx4_0', '0000:05:00.0', ['ens1', 'ens1d1'],
                {1: ('4: ACTIVE', 'Ethernet', '100 Gb/sec (4X EDR)'), 2: ('4: ACTIVE', 'Ethernet')})
    device = run(node)['ansible_facts']['rdma']['devices'][0]
    assert [port['rate_gbps'] for port in device['ports']] == [100.0, None]
    assert device['active_rate_gbps'] is None


def test_a_rate_in_an_unknown_format_is_null_and_warned_about(node):
    node.tool('ibv_devinfo', {'': ('ibv_devinfo/no-devices-missing-providers.txt', 255, 'err')})
    rdma_device(node, 'mlx5_0', '0000:09:00.0', ['enp9s0np0'], {1: ('4: ACTIVE', 'Ethernet', 'very fast')})
    result = run(node)
    assert result.get('failed') is not True, result
    device = result['ansible_facts']['rdma']['devices'][0]
    assert device['verbs'] is False and device['ports'][0]['rate_gbps'] is None and device['active_rate_gbps'] is None
    assert any('rate of mlx5_0 port 1' in str(warning) and 'very fast' in str(warning)
               for warning in result['warnings']), result


def test_devices_only_ibv_devinfo_lists_have_no_rate(node):
    node.tool('ibv_devinfo', {'': ('ibv_devinfo/cx3-ib-2hca-2port.txt', 0, 'out')})
    rdma = run(node)['ansible_facts']['rdma']
    assert [port['rate_gbps'] for device in rdma['devices'] for port in device['ports']] == [None] * 4
    assert [device['active_rate_gbps'] for device in rdma['devices']] == [None, None]


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
    assert device['ports'] == [{'port': 1, 'state': 'PORT_DOWN', 'active': False, 'active_mtu': None, 'link_layer': 'InfiniBand',
                                'rate_gbps': None}]
    assert device['active_rate_gbps'] == 0.0


@pytest.mark.skipif(not no_system_tool(), reason='this machine has ibv_devinfo installed')
def test_without_ibv_devinfo_the_port_rates_come_from_sysfs(node):
    rdma_device(node, 'mlx5_0', '0000:09:00.0', ['ibp9s0'],
                {1: ('4: ACTIVE', 'InfiniBand', '400 Gb/sec (4X NDR)'), 2: ('4: ACTIVE', 'InfiniBand', '200 Gb/sec (4X HDR)'),
                 3: ('1: DOWN', 'InfiniBand', '10 Gb/sec (4X SDR)')})
    rdma_device(node, 'mlx5_1', '0000:23:00.0', ['enp35s0np0'], {1: ('1: DOWN', 'InfiniBand', '10 Gb/sec (4X SDR)')})
    rdma = run(node)['ansible_facts']['rdma']
    assert rdma['tool'] is None
    first, second = rdma['devices']
    assert [port['rate_gbps'] for port in first['ports']] == [400.0, 200.0, 10.0]
    assert (first['active_ports'], first['active_rate_gbps']) == (2, 600.0)
    assert second['ports'][0]['rate_gbps'] == 10.0
    assert (second['active_ports'], second['active_rate_gbps']) == (0, 0.0)


@pytest.mark.skipif(not no_system_tool(), reason='this machine has ibv_devinfo installed')
def test_without_anything_the_list_is_empty(node):
    rdma = run(node)['ansible_facts']['rdma']
    assert rdma == {'tool': None, 'sources': [], 'device_count': 0, 'devices': []}
