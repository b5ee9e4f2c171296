# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The merge of several tools' answers into the facts contract."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils._gpu_facts import merge, rocm_version_from_file


def gpu(**fields):
    return fields


def test_only_rocminfo_reports_every_agent_and_reads_numa_from_sysfs():
    parsed = {'rocminfo': {'gpus': [
        gpu(node=2, gfx_target='gfx942', marketing_name='AMD Instinct MI300X', compute_units=304, pci_address='0000:1c:00.0'),
        gpu(node=1, gfx_target='gfx942', marketing_name='AMD Instinct MI300X', compute_units=304, pci_address='0000:0c:00.0'),
    ]}}
    numa = {'0000:0c:00.0': 0, '0000:1c:00.0': 1}
    facts, warnings = merge(parsed, read_numa_node=numa.get, rocm_version_text='7.1.1-38\n')
    assert facts['gpu_count'] == 2
    assert facts['gfx_targets'] == ['gfx942']
    assert facts['rocm_version'] == '7.1.1'
    assert facts['sources'] == ['rocminfo']
    assert [g['pci_address'] for g in facts['gpus']] == ['0000:0c:00.0', '0000:1c:00.0']
    assert [g['numa_node'] for g in facts['gpus']] == [0, 1]
    assert [g['index'] for g in facts['gpus']] == [0, 1]
    assert set(facts['gpus'][0]) == {'index', 'gfx_target', 'marketing_name', 'vram_bytes', 'numa_node',
                                     'pci_address', 'compute_units', 'integrated'}


def test_fields_come_from_the_tool_that_knows_them_matched_by_pci_address():
    parsed = {
        'amd-smi': {'driver_version': '6.14.14', 'rocm_version': '7.1.1', 'gpus': [
            gpu(gpu=0, gfx_target='gfx942', marketing_name='AMD Instinct MI300X', numa_node=1, pci_address='0000:1c:00.0',
                vram_bytes=206141652992),
            gpu(gpu=1, gfx_target='gfx942', marketing_name='AMD Instinct MI300X', numa_node=0, pci_address='0000:0c:00.0',
                vram_bytes=206141652992),
        ]},
        'rocminfo': {'gpus': [
            gpu(node=1, gfx_target='gfx942', compute_units=304, pci_address='0000:0c:00.0', integrated=False),
            gpu(node=2, gfx_target='gfx942', compute_units=300, pci_address='0000:1c:00.0', integrated=False),
        ]},
    }
    facts, warnings = merge(parsed, read_numa_node=lambda address: pytest.fail('sysfs read although amd-smi knew the node'))
    assert facts['sources'] == ['amd-smi', 'rocminfo']
    assert facts['driver_version'] == '6.14.14'
    assert facts['rocm_version'] == '7.1.1'
    first, second = facts['gpus']
    assert (first['pci_address'], first['numa_node'], first['compute_units']) == ('0000:0c:00.0', 0, 304)
    assert (second['pci_address'], second['numa_node'], second['compute_units']) == ('0000:1c:00.0', 1, 300)
    assert first['integrated'] is False


def test_a_tool_that_sees_fewer_gpus_does_not_hide_the_others():
    parsed = {
        'rocm-smi': {'gpus': [gpu(card=0, gfx_target='gfx90a', numa_node=0)]},
        'rocminfo': {'gpus': [gpu(gfx_target='gfx1036', integrated=True), gpu(gfx_target='gfx90a', integrated=False)]},
    }
    facts, warnings = merge(parsed)
    assert facts['gpu_count'] == 2
    assert facts['gfx_targets'] == ['gfx1036', 'gfx90a']
    # Counts differ and no PCI addresses: nothing is paired by guesswork, and the user is told.
    assert [g['numa_node'] for g in facts['gpus']] == [None, None]
    assert warnings == ['rocm-smi reports 1 GPU(s) that rocminfo does not (gfx90a); they are left out of the facts.']


def test_gpus_at_addresses_the_base_tool_does_not_know_are_named():
    parsed = {
        'amd-smi': {'gpus': [gpu(gpu=0, gfx_target='gfx1151', pci_address='0000:c4:00.0')]},
        'rocminfo': {'gpus': [gpu(gfx_target='gfx1151', pci_address='0000:c5:00.0', integrated=True)]},
    }
    facts, warnings = merge(parsed)
    assert facts['gpu_count'] == 1
    assert facts['gpus'][0]['integrated'] is None
    assert warnings == ['rocminfo reports 1 GPU(s) that amd-smi does not (0000:c5:00.0); they are left out of the facts.']


def test_partitions_sharing_an_address_keep_their_order():
    parts = [gpu(gfx_target='gfx942', pci_address='0000:0c:00.0', compute_units=38) for _partition in range(8)]
    facts, warnings = merge({'rocminfo': {'gpus': parts}})
    assert facts['gpu_count'] == 8
    assert [g['index'] for g in facts['gpus']] == list(range(8))


def test_no_tool_answered_is_an_empty_fleet_node():
    facts, warnings = merge({})
    assert warnings == []
    assert facts == {'gpu_count': 0, 'gfx_targets': [], 'rocm_version': None, 'driver_version': None,
                     'sources': [], 'gpus': []}


@pytest.mark.parametrize('text, expected', [
    ('7.1.1-38\n', '7.1.1'),
    ('6.2.0-66', '6.2.0'),
    ('7.0', '7.0'),
    ('', None),
    (None, None),
    ('garbage', None),
], ids=['with-build', 'rocm6', 'two-part', 'empty', 'absent', 'garbage'])
def test_rocm_version_file(text, expected):
    assert rocm_version_from_file(text) == expected
