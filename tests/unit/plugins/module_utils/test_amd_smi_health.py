# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the amd-smi health parsers.

``test_fixture`` runs once per real capture under tests/unit/fixtures/amd_smi_health/.
No public capture of ``amd-smi metric --json`` with ECC counters, of
``firmware --json`` or of ``bad-pages --json`` was found: the tests below
use small hand-written documents in the shapes amd-smi's own CLI code
writes (amdsmi_cli/amdsmi_commands.py); they are not captures.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from capture_notes import capture, check_note

from ansible_collections.llmfleet.rocm.plugins.module_utils import _amd_smi_health as amd_smi_health
from ansible_collections.llmfleet.rocm.plugins.module_utils import _rocm_common as rocm_common
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError

FIXTURE_TOOL = 'amd_smi_health'

PARSERS = [amd_smi_health.parse_amd_smi_metric_json, amd_smi_health.parse_amd_smi_static_health_json,
           amd_smi_health.parse_amd_smi_firmware_json, amd_smi_health.parse_amd_smi_bad_pages_json,
           amd_smi_health.parse_amd_smi_topology_json]
PARSER_IDS = ['metric', 'static', 'firmware', 'bad-pages', 'topology']

# amd-smi metric --json of the gpu_data era, every section the health checks read (hand-written).
METRIC = {'gpu_data': [
    {'gpu': 1,
     'power': {'socket_power': {'value': 745, 'unit': 'W'}, 'gfx_voltage': 'N/A', 'throttle_status': 'THROTTLED',
               'power_management': 'ENABLED'},
     'temperature': {'edge': 'N/A', 'hotspot': {'value': 78, 'unit': 'C'}, 'mem': {'value': 61, 'unit': 'C'}},
     'pcie': {'width': 16, 'speed': {'value': 32, 'unit': 'GT/s'}, 'replay_count': 3, 'nak_sent_count': 'N/A'},
     'ecc': {'total_correctable_count': 12, 'total_uncorrectable_count': 1, 'total_deferred_count': 0,
             'cache_correctable_count': 0, 'cache_uncorrectable_count': 0},
     'ecc_blocks': {'UMC': {'correctable_count': 12, 'uncorrectable_count': 1, 'deferred_count': 0}},
     'throttle': {'accumulation_counter': 3808991, 'ppt_violation_status': 'ACTIVE',
                  'prochot_violation_status': 'NOT ACTIVE', 'hbm_thermal_violation_status': 'N/A',
                  'socket_thermal_violation_status': ['NOT ACTIVE', 'ACTIVE']}},
    {'gpu': 0, 'ecc': {'total_correctable_count': 'N/A', 'total_uncorrectable_count': 'N/A',
                       'cache_correctable_count': 'N/A', 'cache_uncorrectable_count': 'N/A'}},
]}


def test_fixture(note):
    check_note(note, amd_smi_health)


@pytest.mark.parametrize('parser', PARSERS, ids=PARSER_IDS)
@pytest.mark.parametrize('text', ['', '\n\n', 'Segmentation fault (core dumped)\n', 'usage: amd-smi [-h] ...\n'],
                         ids=['empty', 'blank', 'garbage', 'usage'])
def test_unrecognised_output_is_parse_error(parser, text):
    with pytest.raises(ParseError):
        parser(text)


@pytest.mark.parametrize('parser', PARSERS, ids=PARSER_IDS)
@pytest.mark.parametrize('other', [('rccl_tests', 'mi350x-8gpu-single-process-rocm7.0.txt'),
                                   ('rvs', 'mi355x-pbqt-single-rvs1.6.75.txt')], ids=['rccl-tests', 'rvs'])
def test_another_tools_output_is_parse_error(parser, other):
    with pytest.raises(ParseError, match='JSON'):
        parser(capture(*other))


@pytest.mark.parametrize('parser', PARSERS, ids=PARSER_IDS)
def test_truncated_json_is_parse_error(parser):
    text = capture('amd_smi_health', 'topology-json-two-gpu-pcie-rocm6.1.1.json')
    with pytest.raises(ParseError, match='JSON'):
        parser(text[:len(text) // 2])


@pytest.mark.parametrize('parser', PARSERS, ids=PARSER_IDS)
def test_tool_error_is_tool_error(parser):
    """The same AMDSMI_STATUS_NO_PERM capture the facts parsers are tested on (tests/unit/fixtures/amd_smi/)."""
    with pytest.raises(ToolError) as excinfo:
        parser(capture('amd_smi', 'error-no-perm-mi300x-vf-rocm7.1.txt'))
    assert excinfo.value.hint == rocm_common.HINT_PERMISSION
    assert 'AMDSMI_STATUS_NO_PERM' in excinfo.value.line


@pytest.mark.parametrize('parser', PARSERS, ids=PARSER_IDS)
@pytest.mark.parametrize('document', [{'gpus': []}, [1], [{'power': {}}]], ids=['no-gpu-data', 'numbers', 'no-index'])
def test_wrong_json_shape_is_parse_error(parser, document):
    with pytest.raises(ParseError):
        parser(json.dumps(document, indent=4))


def test_metric_sections_are_typed():
    gpus = amd_smi_health.parse_amd_smi_metric_json(json.dumps(METRIC, indent=4))['gpus']
    assert [gpu['gpu'] for gpu in gpus] == [0, 1]
    assert gpus[0]['ecc'] == {'correctable': None, 'uncorrectable': None, 'deferred': None,
                              'cache_correctable': None, 'cache_uncorrectable': None}
    assert gpus[0]['power'] is None and gpus[0]['pcie'] is None
    gpu = gpus[1]
    assert gpu['ecc'] == {'correctable': 12, 'uncorrectable': 1, 'deferred': 0, 'cache_correctable': 0,
                          'cache_uncorrectable': 0}
    assert gpu['ecc_blocks'] == {'UMC': {'correctable': 12, 'uncorrectable': 1, 'deferred': 0}}
    assert gpu['temperature_c'] == {'edge': None, 'hotspot': 78.0, 'mem': 61.0}
    assert gpu['power'] == {'socket_power_w': 745.0, 'power_management': 'ENABLED', 'throttle_status': 'THROTTLED',
                            'throttled': True}
    assert gpu['violations'] == {'hbm_thermal': None, 'ppt': True, 'prochot': False, 'socket_thermal': True}
    assert gpu['pcie'] == {'width': 16, 'speed_gts': 32.0, 'replay_count': 3, 'l0_to_recovery_count': None,
                           'replay_roll_over_count': None, 'nak_sent_count': None, 'nak_received_count': None}


@pytest.mark.parametrize('value, expected', [
    ({'value': 745, 'unit': 'W'}, 745.0), ('745 W', 745.0), (745, 745.0), ({'value': 745000, 'unit': 'mW'}, 745.0),
    ({'value': 1, 'unit': 'kJ'}, None), ('N/A', None), (True, None),
], ids=['object', 'string', 'number', 'milliwatts', 'unknown-unit', 'na', 'bool'])
def test_socket_power_units(value, expected):
    document = [{'gpu': 0, 'power': {'socket_power': value}}]
    power = amd_smi_health.parse_amd_smi_metric_json(json.dumps(document))['gpus'][0]['power']
    assert power['socket_power_w'] == expected


def test_warning_lines_before_the_json_are_kept():
    warning = 'WARNING: User is missing the following required groups: render, video.'
    text = warning + '\n' + json.dumps(METRIC, indent=4)
    assert amd_smi_health.parse_amd_smi_metric_json(text)['warnings'] == [warning]


@pytest.mark.parametrize('document, expected', [
    ([{'gpu': 0, 'fw_list': [{'fw_id': 'SMU', 'fw_version': '85.118.0'}, {'fw_id': 'VCN', 'fw_version': 'N/A'}]}],
     {'SMU': '85.118.0', 'VCN': None}),
    ({'gpu': 0, 'fw_list': [{'FW 0': {'fw_id': 'CP_MEC1', 'fw_version': '177'}}]}, {'CP_MEC1': '177'}),
    ([{'gpu': 0, 'fw_list': 'N/A'}], None),
], ids=['list', 'numbered-entries', 'na'])
def test_firmware(document, expected):
    gpus = amd_smi_health.parse_amd_smi_firmware_json(json.dumps(document, indent=4))['gpus']
    assert gpus == [{'gpu': 0, 'firmware': expected}]


@pytest.mark.parametrize('document', [[{'gpu': 0, 'fw_list': [{'fw_version': '1'}]}],
                                      [{'gpu': 0, 'fw_list': ['SMU']}],
                                      [{'gpu': 0, 'fw_list': 'SMU 85'}]], ids=['no-id', 'string-entry', 'string-list'])
def test_firmware_in_another_shape_is_parse_error(document):
    with pytest.raises(ParseError, match='firmware|fw_list'):
        amd_smi_health.parse_amd_smi_firmware_json(json.dumps(document, indent=4))


def test_bad_pages():
    document = [
        {'gpu': 0, 'retired': 'No bad pages found.', 'pending': 'No bad pages found.', 'un_res': 'No bad pages found.'},
        {'gpu': 1, 'retired': {'page_address': '0x5e7c1000', 'page_size': 4096, 'status': 'RESERVED'},
         'pending': [{'page_address': 1589644288, 'page_size': 4096, 'status': 'PENDING'},
                     {'page_address': '0x5e7c3000', 'page_size': 4096, 'status': 'PENDING'}],
         'un_res': 'N/A'},
    ]
    gpus = amd_smi_health.parse_amd_smi_bad_pages_json(json.dumps(document, indent=4))['gpus']
    assert gpus[0] == {'gpu': 0, 'retired': [], 'pending': [], 'unreservable': []}
    assert gpus[1]['retired'] == [{'page_address': 0x5e7c1000, 'page_size': 4096, 'status': 'RESERVED'}]
    assert [page['page_address'] for page in gpus[1]['pending']] == [1589644288, 0x5e7c3000]
    assert gpus[1]['unreservable'] is None


@pytest.mark.parametrize('value', ['3 pages', ['0x1000']], ids=['sentence', 'list-of-strings'])
def test_bad_pages_in_another_shape_is_parse_error(value):
    with pytest.raises(ParseError, match='retired'):
        amd_smi_health.parse_amd_smi_bad_pages_json(json.dumps([{'gpu': 0, 'retired': value}], indent=4))


def test_topology_xgmi_links():
    """The "links" layout of the ROCm 6.1.1 changelog's new-format example, on an XGMI pair."""
    document = [{'gpu': 0, 'bdf': '0000:01:00.0', 'links': [
        {'gpu': 1, 'bdf': '0001:01:00.0', 'weight': 15, 'link_status': 'ENABLED', 'link_type': 'XGMI',
         'num_hops': 1, 'bandwidth': '50000-100000'},
        {'gpu': 0, 'bdf': '0000:01:00.0', 'weight': 0, 'link_status': 'ENABLED', 'link_type': 'SELF', 'num_hops': 0,
         'bandwidth': 'N/A'}]}]
    gpu = amd_smi_health.parse_amd_smi_topology_json(json.dumps(document, indent=4))['gpus'][0]
    assert gpu['links'][1] == {'gpu': 1, 'pci_address': '0001:01:00.0', 'link_type': 'XGMI', 'enabled': True,
                               'hops': 1, 'weight': 15}


@pytest.mark.parametrize('entry', [{'gpu': 0, 'links': [{'bdf': 'x'}]}, {'gpu': 0, 'link_type': {'peer_1': 'XGMI'}},
                                   {'gpu': 0, 'bdf': '0000:01:00.0'}],
                         ids=['link-without-gpu', 'peer-key', 'no-links'])
def test_topology_in_another_shape_is_parse_error(entry):
    with pytest.raises(ParseError):
        amd_smi_health.parse_amd_smi_topology_json(json.dumps([entry], indent=4))
