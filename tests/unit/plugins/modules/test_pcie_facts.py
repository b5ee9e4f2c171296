# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""pcie_facts run as Ansible runs it, with a stand-in lspci that prints captured outputs.

The sysfs tree the module reads the PCIe chains from is built per test, laid
out like the kernel's: /sys/devices/pci<domain>:<bus>/<root port>/.../<device>
and /sys/bus/pci/devices/<device> as a symlink into it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil

import pytest

LSPCI_ARGS = '-D -nn -vvv'
FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures')
SYSTEM_BIN_DIRS = ['/usr/bin', '/usr/sbin', '/sbin', '/bin']

# PCIe paths of AMD's MI300X x8 example (ROCm/system-acceptance-docs, docs/network/topology-mapping.md).
MI300X_CHAINS = {
    '0000:05:00.0': ['0000:00:01.1', '0000:01:00.0', '0000:02:00.0', '0000:03:00.0', '0000:04:00.0'],
    '0000:09:00.0': ['0000:00:01.1', '0000:01:00.0', '0000:02:01.0'],
    '0000:2b:00.0': ['0000:18:01.1', '0000:19:00.0', '0000:1a:04.0', '0000:29:00.0', '0000:2a:00.0'],
    '0000:23:00.0': ['0000:18:01.1', '0000:19:00.0', '0000:1a:03.0'],
}


def run(node, **params):
    params.setdefault('sysfs_path', node.sysfs)
    return node.run('pcie_facts', **params)


def sysfs_device(node, address, parents):
    """Create /sys/devices/pci<dom>:<bus>/<parents...>/<address> and the /sys/bus/pci/devices link to it."""
    root = parents[0] if parents else address
    host = 'pci%s:%s' % (root[:4], root[5:7])
    target = os.path.join(node.sysfs, 'devices', host, *(list(parents) + [address]))
    if not os.path.isdir(target):
        os.makedirs(target)
    links = os.path.join(node.sysfs, 'bus', 'pci', 'devices')
    if not os.path.isdir(links):
        os.makedirs(links)
    os.symlink(os.path.relpath(target, links), os.path.join(links, address))


def combined_capture(tmp_path, *names):
    """One stand-in output made of several captures, for a host the captures describe together."""
    path = tmp_path / 'combined-lspci.txt'
    text = ''
    for name in names:
        with open(os.path.join(FIXTURES, 'lspci', name)) as handle:
            text += handle.read()
    path.write_text(text)
    return str(path)


def test_exact_argv_c_locale_and_chains_from_sysfs(node):
    node.tool('lspci', {LSPCI_ARGS: ('lspci/g482-z54-rome-x550-nic-root-ports.txt', 0, 'out')})
    for function in ('0000:c1:00.0', '0000:c1:00.1'):
        sysfs_device(node, function, ['0000:c0:03.1'])
    result = run(node)
    assert result.get('failed') is not True, result
    assert result['changed'] is False
    calls = node.calls()
    assert [call['argv'] for call in calls] == [[os.path.join(node.bin, 'lspci'), '-D', '-nn', '-vvv']]
    assert all(call['LC_ALL'] == 'C' and call['LANG'] == 'C' for call in calls)
    assert result['commands'] == [[os.path.join(node.bin, 'lspci'), '-D', '-nn', '-vvv']]
    pcie = result['ansible_facts']['pcie']
    assert pcie['source'] == 'lspci'
    assert pcie['topology_source'] == 'sysfs'
    assert pcie['capabilities_readable'] is True
    assert pcie['nics'] == ['0000:c1:00.0', '0000:c1:00.1']
    assert pcie['gpus'] == []
    assert pcie['bridges_with_acs'] == ['0000:c0:07.1', '0000:c0:08.1']
    assert pcie['downgraded_links'] == ['0000:c0:03.1']
    by_address = dict((device['address'], device) for device in pcie['devices'])
    assert by_address['0000:c1:00.0']['path'] == ['0000:c0:03.1']
    assert by_address['0000:c0:07.1']['path'] is None
    assert by_address['0000:c1:00.0']['numa_node'] == 5
    assert by_address['0000:c0:07.1']['acs']['source_validation'] is True


def test_gpu_and_nic_on_one_switch_are_paired_from_sysfs(node, tmp_path):
    capture = combined_capture(tmp_path, 'mi300x-8-gpus-pp.txt', 'cx7-8-nics-pp.txt')
    node.tool('lspci', {LSPCI_ARGS: (capture, 0, 'out')})
    for address, parents in MI300X_CHAINS.items():
        sysfs_device(node, address, parents)
    pcie = run(node)['ansible_facts']['pcie']
    assert pcie['topology_source'] == 'sysfs'
    assert len(pcie['gpus']) == 8 and len(pcie['nics']) == 8
    affinity = dict((entry['gpu'], entry) for entry in pcie['gpu_nic_affinity'])
    assert affinity['0000:05:00.0']['same_switch'] == ['0000:09:00.0']
    assert affinity['0000:05:00.0']['switch'] == '0000:01:00.0'
    assert affinity['0000:2b:00.0']['same_switch'] == ['0000:23:00.0']


def test_chains_from_lspci_paths_when_sysfs_has_none(node, tmp_path):
    capture = combined_capture(tmp_path, 'mi300x-8-gpus-pp.txt', 'cx7-8-nics-pp.txt')
    node.tool('lspci', {LSPCI_ARGS: (capture, 0, 'out')})
    pcie = run(node)['ansible_facts']['pcie']
    assert pcie['topology_source'] == 'lspci'
    affinity = dict((entry['gpu'], entry) for entry in pcie['gpu_nic_affinity'])
    assert affinity['0000:e7:00.0']['same_switch'] == ['0000:f1:00.0']
    assert affinity['0000:a5:00.0']['same_switch'] == ['0000:9c:00.0']


def test_without_root_the_module_warns_and_reports_no_link_state(node):
    node.tool('lspci', {LSPCI_ARGS: ('lspci/vega10-nonroot-access-denied.txt', 0, 'out')})
    result = run(node)
    pcie = result['ansible_facts']['pcie']
    assert pcie['capabilities_readable'] is False
    assert pcie['gpus'] == ['0000:03:00.0']
    assert all(device['pcie'] is None for device in pcie['devices'])
    assert any('become' in str(warning) for warning in result['warnings']), result


def test_output_that_is_not_lspci_fails_with_the_command(node):
    node.tool('lspci', {LSPCI_ARGS: ('numactl/1node-nodejs-benchmark-host.txt', 0, 'out')})
    result = run(node)
    assert result['failed'] is True
    assert 'cannot read' in result['msg'] and '-D -nn -vvv' in result['msg']
    assert 'Traceback' not in result['msg']


def test_unknown_options_are_rejected(node):
    result = run(node, tools=['lspci'])
    assert result['failed'] is True
    assert 'tools' in result['msg']


def test_without_lspci_there_are_no_devices_and_a_warning(node):
    if any(os.path.exists(os.path.join(directory, 'lspci')) for directory in SYSTEM_BIN_DIRS) or shutil.which('lspci'):
        pytest.skip('this machine has lspci installed')
    result = run(node)
    assert result.get('failed') is not True, result
    pcie = result['ansible_facts']['pcie']
    assert pcie['source'] is None and pcie['devices'] == [] and pcie['gpus'] == []
    assert result['commands'] == []
    assert any('pciutils' in str(warning) for warning in result['warnings'])
