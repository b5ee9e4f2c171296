# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the lspci parser and the PCIe topology helpers, on real captures and on edge cases."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils._lspci import (
    DEVICE_FIELDS,
    gpu_nic_affinity,
    is_amd_gpu,
    parents_from_sysfs_path,
    parse_lspci,
    summarize,
)
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError

FIXTURE_TOOL = 'lspci'
FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'lspci')
ERRORS = {'ToolError': ToolError, 'ParseError': ParseError}
SPECIAL_KEYS = ('acs_enabled', 'acs_source_validation', 'bars')


def _fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def _check_device(device, wanted):
    where = device['address']
    for key, value in wanted.items():
        if key == 'acs_enabled':
            assert device['acs'] is not None, '%s has no ACS capability' % where
            assert device['acs']['enabled'] == value, where
        elif key == 'acs_source_validation':
            assert device['acs']['source_validation'] is value, where
        elif key == 'bars':
            by_index = dict((region['index'], region) for region in device['bars'])
            if not value:
                assert device['bars'] == [], where
            for region in value:
                got = by_index[region['index']]
                for region_key, region_value in region.items():
                    assert got[region_key] == region_value, '%s BAR %d %s: %r' % (where, region['index'], region_key, got[region_key])
        elif key == 'pcie' and isinstance(value, dict):
            assert device['pcie'] is not None, '%s has no PCIe capability' % where
            for pcie_key, pcie_value in value.items():
                assert device['pcie'][pcie_key] == pcie_value, '%s pcie.%s is %r' % (where, pcie_key, device['pcie'][pcie_key])
        else:
            assert key in DEVICE_FIELDS, 'unknown field %s in the note' % key
            assert device[key] == value, '%s: %s is %r, expected %r' % (where, key, device[key], value)


def test_fixture(note):
    if 'error' in note:
        with pytest.raises(ERRORS[note['error']]) as caught:
            parse_lspci(note['text'])
        assert re.search(note['error_match'], str(caught.value)), str(caught.value)
        return
    result = parse_lspci(note['text'])
    expected = note['expected']
    devices = result['devices']
    assert len(devices) == expected['device_count']
    for device in devices:
        assert set(device) == set(DEVICE_FIELDS)
    assert result['capabilities_readable'] is expected['capabilities_readable']
    summary = summarize(devices)
    for key in ('gpus', 'nics', 'bridges_with_acs', 'downgraded_links'):
        assert summary[key] == expected[key], '%s is %r' % (key, summary[key])
    by_address = dict((device['address'], device) for device in devices)
    for wanted in expected.get('devices', []):
        assert wanted['address'] in by_address, '%s missing' % wanted['address']
        _check_device(by_address[wanted['address']], wanted)


# AMD's table "Specifying NIC GPUs for Peer-to-Peer RDMA Transfer" in the same document as the fixtures.
AMD_GPU_NIC_TABLE = {
    '0000:05:00.0': '0000:09:00.0', '0000:2b:00.0': '0000:23:00.0', '0000:5b:00.0': '0000:53:00.0',
    '0000:65:00.0': '0000:69:00.0', '0000:7d:00.0': '0000:8f:00.0', '0000:a5:00.0': '0000:9c:00.0',
    '0000:d5:00.0': '0000:cd:00.0', '0000:e7:00.0': '0000:f1:00.0',
}


def test_affinity_pairs_each_mi300x_with_the_nic_amd_names():
    devices = parse_lspci(_fixture('mi300x-8-gpus-pp.txt'))['devices'] + parse_lspci(_fixture('cx7-8-nics-pp.txt'))['devices']
    affinity = gpu_nic_affinity(devices)
    assert [entry['gpu'] for entry in affinity] == sorted(AMD_GPU_NIC_TABLE)
    for entry in affinity:
        assert entry['same_switch'] == [AMD_GPU_NIC_TABLE[entry['gpu']]], entry
        assert entry['same_root_port'] == [AMD_GPU_NIC_TABLE[entry['gpu']]], entry
        assert entry['same_numa_node'] == []
    first = affinity[0]
    assert first['root_port'] == '0000:00:01.1' and first['switch'] == '0000:01:00.0'


def test_affinity_without_chains_shares_nothing():
    devices = parse_lspci(_fixture('vega10-nonroot-access-denied.txt'))['devices']
    assert gpu_nic_affinity(devices) == [{
        'gpu': '0000:03:00.0', 'numa_node': None, 'root_port': None, 'switch': None,
        'same_switch': [], 'same_root_port': [], 'same_numa_node': [],
    }]


def test_affinity_same_root_port_but_not_same_switch():
    devices = parse_lspci(_fixture('mi300x-8-gpus-pp.txt'))['devices'][:1]
    nic = dict(parse_lspci(_fixture('cx7-8-nics-pp.txt'))['devices'][0])
    nic['path'] = ['0000:00:01.1']  # directly on the GPU's root port, no switch
    nic['numa_node'] = None
    entry = gpu_nic_affinity(devices + [nic])[0]
    assert entry['same_switch'] == [] and entry['same_root_port'] == [nic['address']]


@pytest.mark.parametrize('path, address, parents', [
    pytest.param('/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:02:00.0/0000:03:00.0/0000:04:00.0/0000:05:00.0',
                 '0000:05:00.0', ['0000:00:01.1', '0000:01:00.0', '0000:02:00.0', '0000:03:00.0', '0000:04:00.0'], id='mi300x'),
    pytest.param('/sys/devices/pci0000:c0/0000:c0:03.1/0000:c1:00.0', '0000:c1:00.0', ['0000:c0:03.1'], id='root-port'),
    pytest.param('/sys/devices/pci0000:00/0000:00:02.0', '00:02.0', [], id='on-root-bus'),
    pytest.param('/sys/devices/pci10000:00/10000:00:02.0/10000:01:00.0', '10000:01:00.0', ['10000:00:02.0'], id='vmd-domain'),
    pytest.param('/sys/devices/virtual/net/lo', '0000:05:00.0', None, id='not-pci'),
    pytest.param('/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0', '0000:05:00.0', None, id='other-device'),
])
def test_parents_from_sysfs_path(path, address, parents):
    assert parents_from_sysfs_path(path, address) == parents


def test_empty_output_is_no_devices():
    assert parse_lspci('') == {'devices': [], 'capabilities_readable': True, 'warnings': []}


def test_pcilib_warnings_are_kept_with_devices():
    text = 'pcilib: sysfs_read_vpd: read failed: Input/output error\n' + _fixture('mi100-rocm4.0-vvv-single.txt')
    result = parse_lspci(text)
    assert len(result['devices']) == 1
    assert result['warnings'] == ['pcilib: sysfs_read_vpd: read failed: Input/output error']


def test_no_pci_bus_is_a_tool_error():
    with pytest.raises(ToolError) as caught:
        parse_lspci('pcilib: Cannot open /proc/bus/pci\nlspci: Cannot find any working access method.\n')
    assert 'Cannot open /proc/bus/pci' in caught.value.line
    assert '/sys' in caught.value.hint


@pytest.mark.parametrize('text, match', [
    pytest.param('hello world\n', 'unexpected line', id='garbage'),
    pytest.param('\tControl: I/O+ Mem+\n', 'before any device', id='indented-first'),
    pytest.param('00:01.1/00.0 Processing accelerators: Advanced Micro Devices, Inc. [AMD/ATI] Device 74a1\n', 'with -PP',
                 id='single-P-path'),
    pytest.param('0000:c1:00.0 Ethernet controller [0200]: Intel Corporation Ethernet Controller 10G X550T [8086:1563] (rev 01)\n'
                 '\tCapabilities: [a0] Express (v2) Endpoint, MSI 00\n\t\tLnkSta:\tSpeed fast, Width wide\n', 'unrecognised LnkSta',
                 id='bad-lnksta'),
    pytest.param('0000:c1:00.0 Ethernet controller [0200]: Intel Corporation Ethernet Controller 10G X550T [8086:1563] (rev 01)\n'
                 '\tNUMA node: five\n', 'NUMA node', id='bad-numa-node'),
    pytest.param('0000:c1:00.0 Ethernet controller [0200]: Intel Corporation Ethernet Controller 10G X550T [8086:1563] (rev 01)\n'
                 '\tRegion 0: Memory somewhere\n', 'region', id='bad-region'),
])
def test_unknown_output_is_a_parse_error(text, match):
    with pytest.raises(ParseError) as caught:
        parse_lspci(text)
    assert re.search(match, str(caught.value)), str(caught.value)


def test_header_with_domain_nn_and_pp_path():
    line = ('0000:00:01.1/01:00.0/02:00.0/03:00.0/04:00.0/05:00.0 Processing accelerators [1200]: '
            'Advanced Micro Devices, Inc. [AMD/ATI] Aqua Vanjaram [Instinct MI300X] [1002:74a1]\n')
    device = parse_lspci(line)['devices'][0]
    assert device['address'] == '0000:05:00.0'
    assert device['path'][0] == '0000:00:01.1' and device['path'][-1] == '0000:04:00.0'
    assert (device['class_id'], device['vendor_id'], device['device_id']) == ('1200', '1002', '74a1')
    assert device['description'] == 'Advanced Micro Devices, Inc. [AMD/ATI] Aqua Vanjaram [Instinct MI300X]'
    assert is_amd_gpu(device)


def test_unassigned_and_disabled_regions():
    text = ('01:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Lexa XT [Radeon PRO WX 2100] '
            '(prog-if 00 [VGA controller])\n'
            '\tRegion 0: Memory at 600000000 (64-bit, prefetchable) [size=256M]\n'
            '\tRegion 4: I/O ports at <unassigned> [disabled]\n')
    bars = parse_lspci(text)['devices'][0]['bars']
    assert bars[0]['size_bytes'] == 256 * 1024 ** 2
    assert bars[1] == {'index': 4, 'type': 'io', 'address': '<unassigned>', 'bits': None, 'prefetchable': False,
                       'disabled': True, 'size_bytes': None}


def test_amd_cpu_devices_are_not_gpus():
    # Vendor 1022 is AMD's CPU side ([AMD]); the XDNA NPU is a processing accelerator but not a GPU.
    text = '0000:04:00.0 Processing accelerators [1180]: Advanced Micro Devices, Inc. [AMD] XDNA [1022:1502]\n'
    device = parse_lspci(text)['devices'][0]
    assert not is_amd_gpu(device)
