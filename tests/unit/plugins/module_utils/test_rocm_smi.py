# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the rocm-smi parsers, on real captures and on edge cases."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils import _rocm_common as rocm_common
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_smi import (
    GPU_FIELDS,
    parse_rocm_smi_json,
    parse_rocm_smi_text,
)

FIXTURE_TOOL = 'rocm_smi'

PARSERS = {
    'parse_rocm_smi_text': parse_rocm_smi_text,
    'parse_rocm_smi_json': parse_rocm_smi_json,
}
ERRORS = {'ToolError': ToolError, 'ParseError': ParseError}


def _check_subset(gpu, wanted, where):
    for key, value in wanted.items():
        assert key in GPU_FIELDS, '%s: unknown field %s in the note' % (where, key)
        assert gpu[key] == value, '%s: %s is %r, expected %r' % (where, key, gpu[key], value)


def test_fixture(note):
    parser = PARSERS[note['parser']]
    if 'error' in note:
        with pytest.raises(ERRORS[note['error']]) as caught:
            parser(note['text'])
        assert re.search(note['error_match'], str(caught.value)), str(caught.value)
        if 'hint' in note:
            assert caught.value.hint == getattr(rocm_common, note['hint'])
        return

    result = parser(note['text'])
    expected = note['expected']
    gpus = result['gpus']
    assert len(gpus) == expected['gpu_count']
    assert [gpu['card'] for gpu in gpus] == sorted(gpu['card'] for gpu in gpus)
    for gpu in gpus:
        assert set(gpu) == set(GPU_FIELDS)
    if 'driver_version' in expected:
        assert result['driver_version'] == expected['driver_version']
    for gpu in gpus:
        _check_subset(gpu, expected.get('all', {}), 'card %d' % gpu['card'])
    by_card = dict((gpu['card'], gpu) for gpu in gpus)
    for wanted in expected.get('gpus', []):
        assert wanted['card'] in by_card, 'card %d missing' % wanted['card']
        _check_subset(by_card[wanted['card']], wanted, 'card %d' % wanted['card'])


# ---------------------------------------------------------------- edge cases

CONCISE6 = (
    '============================ ROCm System Management Interface ============================\n'
    '====================================== Concise Info ======================================\n'
    'Device  Node  IDs              Temp        Power     Partitions          SCLK    MCLK    Fan  Perf  PwrCap  VRAM%  GPU%\n'
    '              (DID,     GUID)  (Junction)  (Socket)  (Mem, Compute, ID)\n'
    '==========================================================================================\n'
    '0       2     0x74a1,   28851  48.0\u00b0C      135.0W    NPS1, SPX, 0        124Mhz  900Mhz  0%   auto  750.0W  0%     0%\n'
    '1       3     0x74a1,   43178  42.0\u00b0C      131.0W    NPS4, CPX, 3        145Mhz  900Mhz  0%   auto  750.0W  0%     0%\n'
    '==========================================================================================\n'
    '================================== End of ROCm SMI Log ===================================\n'
)


@pytest.mark.parametrize('text, match', [
    pytest.param('hello world\nthis is not rocm-smi\n', 'no rocm-smi banner', id='garbage'),
    pytest.param('', 'empty', id='empty'),
    pytest.param('   \n\n', 'empty', id='blank-lines'),
    pytest.param('{"card0": {"Card Series": "x"}}', 'no rocm-smi banner', id='json-given-to-text-parser'),
])
def test_text_unrecognised_is_parse_error(text, match):
    with pytest.raises(ParseError, match=match):
        parse_rocm_smi_text(text)


def test_text_none_is_parse_error():
    with pytest.raises(ParseError):
        parse_rocm_smi_text(None)


@pytest.mark.parametrize('text, match', [
    pytest.param('', 'empty', id='empty'),
    pytest.param('{"card0": {"Card Series": "AMD Instinct MI300X", "GFX Ver', 'invalid JSON', id='truncated'),
    pytest.param('[1, 2, 3]', 'no JSON object', id='array-not-object'),
    pytest.param('{"card0": "AMD"}', 'not an object', id='card-not-object'),
    pytest.param('{}', 'no "cardN" or "system" entry', id='empty-object'),
    pytest.param('{"gpu_data": []}', 'no "cardN" or "system" entry', id='amd-smi-shape'),
    pytest.param('GPU[0]\t\t: Card Series: \t\tAMD Instinct MI300X\n', 'no JSON object', id='text-given-to-json-parser'),
    pytest.param('NOT_SUPPORTED: Cannot print JSON/CSV output for concise output\n', 'refused JSON', id='concise-json-refused'),
])
def test_json_unrecognised_is_parse_error(text, match):
    with pytest.raises(ParseError, match=match):
        parse_rocm_smi_json(text)


def test_crlf_text():
    result = parse_rocm_smi_text(CONCISE6.replace('\n', '\r\n'))
    assert [(g['card'], g['node'], g['memory_partition'], g['compute_partition']) for g in result['gpus']] == [
        (0, 2, 'NPS1', 'SPX'), (1, 3, 'NPS4', 'CPX')]


def test_crlf_json():
    text = '{\r\n  "card0": {\r\n    "PCI Bus": "0000:C4:00.0"\r\n  },\r\n  "system": {"Driver version": "6.8.5"}\r\n}\r\n'
    result = parse_rocm_smi_json(text)
    assert result['driver_version'] == '6.8.5'
    assert result['gpus'][0]['pci_address'] == '0000:c4:00.0'


def test_bytes_input():
    result = parse_rocm_smi_text(CONCISE6.encode('utf-8'))
    assert len(result['gpus']) == 2


def test_real_escape_sequences_are_stripped():
    text = CONCISE6.replace('              (DID,', '\x1b[3m              (DID,').replace('(Mem, Compute, ID)\n', '(Mem, Compute, ID)\x1b[0m\n')
    assert len(parse_rocm_smi_text(text)['gpus']) == 2


def test_several_sections_in_one_run():
    """One run with --showproductname --showtoponuma --showmeminfo vram --showbus --showdriverversion."""
    text = (
        '============================ ROCm System Management Interface ============================\n'
        '============================== Version of System Component ===============================\n'
        'Driver version: 6.10.5\n'
        '==========================================================================================\n'
        '=================================== Memory Usage (Bytes) =================================\n'
        'GPU[0]\t\t: VRAM Total Memory (B): 206141652992\n'
        'GPU[0]\t\t: VRAM Total Used Memory (B): 297771008\n'
        '==========================================================================================\n'
        '======================================= PCI Bus ID =======================================\n'
        'GPU[0]\t\t: PCI Bus: 0000:0C:00.0\n'
        '==========================================================================================\n'
        '====================================== Product Info ======================================\n'
        'GPU[0]\t\t: Card Series: \t\tAMD Instinct MI300X\n'
        'GPU[0]\t\t: Card Model: \t\t0x74a1\n'
        'GPU[0]\t\t: Card SKU: \t\tM3000100\n'
        'GPU[0]\t\t: Node ID: \t\t2\n'
        'GPU[0]\t\t: GFX Version: \t\tgfx942\n'
        '==========================================================================================\n'
        '======================================= Numa Nodes =======================================\n'
        'GPU[0]\t\t: (Topology) Numa Node: 1\n'
        'GPU[0]\t\t: (Topology) Numa Affinity: 1\n'
        '=============================== Current Compute Partition ================================\n'
        'GPU[0]\t\t: Compute Partition: CPX\n'
        '================================ Current Memory Partition ================================\n'
        'GPU[0]\t\t: Memory Partition: NPS4\n'
        '================================== End of ROCm SMI Log ===================================\n'
    )
    assert parse_rocm_smi_text(text) == {'driver_version': '6.10.5', 'gpus': [{
        'card': 0, 'gfx_target': 'gfx942', 'marketing_name': 'AMD Instinct MI300X', 'numa_node': 1,
        'vram_bytes': 206141652992, 'pci_address': '0000:0c:00.0', 'node': 2,
        'compute_partition': 'CPX', 'memory_partition': 'NPS4'}]}


@pytest.mark.parametrize('printed, target', [
    pytest.param('gfx9010', 'gfx90a', id='gfx9010'),
    pytest.param('gfx942', 'gfx942', id='gfx942'),
    pytest.param('gfx11003', 'gfx1103', id='gfx11003'),
    pytest.param('N/A', None, id='not-available'),
    pytest.param('gfx9999', None, id='unknown-target'),
])
def test_gfx_version_spellings(printed, target):
    text = 'GPU[0]\t\t: GFX Version: \t\t%s\n' % printed
    assert parse_rocm_smi_text(text)['gpus'][0]['gfx_target'] == target


@pytest.mark.parametrize('lines, name', [
    pytest.param(['Card series: \t\tAldebaran/MI200 [Instinct MI210]', 'Card model: \t\t0x740f'], 'Instinct MI210', id='pci-ids-brackets'),
    pytest.param(['Card series: \t\tFiji [Radeon R9 FURY / NANO Series]', 'Card model: \t\tRadeon R9 FURY X'], 'Radeon R9 FURY X',
                 id='old-card-model-is-a-name'),
    pytest.param(['Card Series: \t\tAMD Instinct MI300X', 'Device Name: \t\tAMD Instinct MI300X OAM'], 'AMD Instinct MI300X OAM',
                 id='device-name-wins'),
    pytest.param(['Card Series: \t\tN/A', 'Card Model: \t\t0x74a1', 'Card SKU: \t\tM3000100'], None, id='no-real-name'),
])
def test_marketing_name_choice(lines, name):
    text = ''.join('GPU[0]\t\t: %s\n' % line for line in lines)
    assert parse_rocm_smi_text(text)['gpus'][0]['marketing_name'] == name


def test_numa_minus_one_is_unknown():
    text = 'GPU[0]\t\t: (Topology) Numa Node: -1\nGPU[0]\t\t: (Topology) Numa Affinity: -1\n'
    assert parse_rocm_smi_text(text)['gpus'][0]['numa_node'] is None


def test_gpus_ordered_by_card():
    text = 'GPU[10]\t\t: PCI Bus: 0000:0A:00.0\nGPU[2]\t\t: PCI Bus: 0000:02:00.0\nGPU[1]\t\t: PCI Bus: 0000:01:00.0\n'
    assert [g['card'] for g in parse_rocm_smi_text(text)['gpus']] == [1, 2, 10]


def test_driver_version_only():
    text = ('====== ROCm System Management Interface ======\n====== Version of System Component ======\n'
            'Driver version: 6.8.5\n==============\n====== End of ROCm SMI Log ======\n')
    assert parse_rocm_smi_text(text) == {'driver_version': '6.8.5', 'gpus': []}


def test_low_power_warning_with_data_is_not_an_error():
    text = 'WARNING: AMD GPU device(s) is/are in a low-power state. Check power control/runtime_status\n\n' + CONCISE6
    assert len(parse_rocm_smi_text(text)['gpus']) == 2


def test_error_line_with_data_is_ignored():
    text = 'ERROR:root:ROCm SMI returned 8 (the expected value is 0)\n' + CONCISE6
    assert len(parse_rocm_smi_text(text)['gpus']) == 2


@pytest.mark.parametrize('text, hint, line', [
    pytest.param('ERROR:root:Driver not initialized (amdgpu not found in modules)\n', 'HINT_DRIVER',
                 'ERROR:root:Driver not initialized (amdgpu not found in modules)', id='driver-not-initialized'),
    pytest.param('ERROR: Driver not initialized (amdgpu not found in modules)\n', 'HINT_DRIVER',
                 'ERROR: Driver not initialized (amdgpu not found in modules)', id='driver-not-initialized-logging-configured'),
    pytest.param('ERROR:root:ROCm SMI returned 4 (the expected value is 0)\n', 'HINT_PERMISSION',
                 'ERROR:root:ROCm SMI returned 4 (the expected value is 0)', id='rsmi-permission-status'),
    pytest.param("PermissionError: [Errno 13] Permission denied: '/sys/class/drm/card0/device/pp_dpm_sclk'\n", 'HINT_PERMISSION',
                 "PermissionError: [Errno 13] Permission denied: '/sys/class/drm/card0/device/pp_dpm_sclk'", id='python-permission-error'),
    pytest.param('====== ROCm System Management Interface ======\nWARNING: No AMD GPUs specified\n'
                 '====== Concise Info ======\nGPU  Temp (DieEdge)  AvgPwr  SCLK  MCLK  Fan  Perf  PwrCap  VRAM%  GPU%\n'
                 '==============\n====== End of ROCm SMI Log ======\n', 'HINT_DRIVER', 'WARNING: No AMD GPUs specified',
                 id='no-amd-gpus-with-banner'),
    pytest.param('ERROR: No DRM devices available. Exiting\n', 'HINT_DRIVER', 'ERROR: No DRM devices available. Exiting',
                 id='no-drm-devices'),
    pytest.param('Traceback (most recent call last):\n  File "/opt/rocm/bin/rocm-smi", line 3, in <module>\nOSError: boom\n',
                 'HINT_RUNTIME', 'Traceback (most recent call last):', id='rocm-smi-crashed'),
])
def test_text_tool_errors(text, hint, line):
    with pytest.raises(ToolError) as caught:
        parse_rocm_smi_text(text)
    assert caught.value.line == line
    assert caught.value.hint == getattr(rocm_common, hint)
    assert line in str(caught.value)


@pytest.mark.parametrize('text, hint', [
    pytest.param('cat: /sys/module/amdgpu/initstate: No such file or directory\n'
                 'ERROR:root:Driver not initialized (amdgpu not found in modules)\n', 'HINT_DRIVER', id='driver-not-initialized'),
    pytest.param('WARNING: No JSON data to report\n', 'HINT_DRIVER', id='no-json-data'),
    pytest.param('WARNING: No AMD GPUs specified\n{"card0": {"Card Ser', 'HINT_DRIVER', id='no-gpus-and-truncated'),
])
def test_json_tool_errors(text, hint):
    with pytest.raises(ToolError) as caught:
        parse_rocm_smi_json(text)
    assert caught.value.hint == getattr(rocm_common, hint)


def test_json_with_warning_before_and_system_driver_version():
    text = ('WARNING: AMD GPU device(s) is/are in a low-power state. Check power control/runtime_status\n\n'
            '{"card0": {"Card series": "AMD INSTINCT MI250 (MCM) OAM AC MBA", "PCI Bus": "0000:2F:00.0", '
            '"VRAM Total Memory (B)": "68702699520", "(Topology) Numa Node": "3", "GFX Version": "gfx9010", '
            '"Compute Partition": "SPX", "Memory Partition": "NPS1"}, '
            '"card1": {"Card series": "AMD INSTINCT MI250 (MCM) OAM AC MBA", "PCI Bus": "0000:32:00.0", '
            '"(Topology) Numa Node": "-1"}, "system": {"Driver version": "6.2.4"}}\n')
    result = parse_rocm_smi_json(text)
    assert result['driver_version'] == '6.2.4'
    first, second = result['gpus']
    assert first == {'card': 0, 'gfx_target': 'gfx90a', 'marketing_name': 'AMD INSTINCT MI250 (MCM) OAM AC MBA', 'numa_node': 3,
                     'vram_bytes': 68702699520, 'pci_address': '0000:2f:00.0', 'node': None,
                     'compute_partition': 'SPX', 'memory_partition': 'NPS1'}
    assert second['card'] == 1 and second['numa_node'] is None and second['pci_address'] == '0000:32:00.0'


def test_json_system_only():
    assert parse_rocm_smi_json('{"system": {"Driver version": "6.14.14"}}') == {'driver_version': '6.14.14', 'gpus': []}


def test_json_cards_ordered_numerically():
    text = '{"card10": {}, "card2": {}, "card1": {}}'
    assert [g['card'] for g in parse_rocm_smi_json(text)['gpus']] == [1, 2, 10]


def test_json_trailing_output_after_object():
    text = '{"card0": {"Node ID": "2"}}\nWARNING: something after the JSON\n'
    assert parse_rocm_smi_json(text)['gpus'][0]['node'] == 2
