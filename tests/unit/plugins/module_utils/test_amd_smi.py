# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the amd-smi parsers.

``test_fixture`` runs once per real capture under tests/unit/fixtures/amd_smi/
(see tests/unit/conftest.py). The focused tests below use small hand-written
inputs to pin down one rule each; they are not captures.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils import _amd_smi as amd_smi
from ansible_collections.llmfleet.rocm.plugins.module_utils import _rocm_common as rocm_common
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError

FIXTURE_TOOL = 'amd_smi'

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', 'amd_smi')
ERRORS = {'ToolError': ToolError, 'ParseError': ParseError}

GROUP_WARNING = 'WARNING: User is missing the following required groups: render, video. Please add user to these groups.'


def _capture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def _assert_subset(expected, actual, where='result'):
    """Every key/item in ``expected`` must be in ``actual``; lists must match in length and order."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), '%s: expected a dict, got %r' % (where, actual)
        for key, value in expected.items():
            assert key in actual, '%s: missing key %r' % (where, key)
            _assert_subset(value, actual[key], '%s.%s' % (where, key))
    elif isinstance(expected, list):
        assert isinstance(actual, list), '%s: expected a list, got %r' % (where, actual)
        assert len(expected) == len(actual), '%s: expected %d items, got %d: %r' % (where, len(expected), len(actual), actual)
        for index, (want, got) in enumerate(zip(expected, actual)):
            _assert_subset(want, got, '%s[%d]' % (where, index))
    else:
        assert expected == actual, '%s: expected %r, got %r' % (where, expected, actual)


def test_fixture(note):
    """Each real capture parses to its note's ``expected``, or raises its ``error`` with ``error_match`` in it."""
    parser = getattr(amd_smi, note['parser'])
    if 'error' in note:
        with pytest.raises(ERRORS[note['error']]) as excinfo:
            parser(note['text'])
        assert note['error_match'] in str(excinfo.value)
        if 'error_hint' in note:
            assert excinfo.value.hint == getattr(rocm_common, note['error_hint'])
    else:
        _assert_subset(note['expected'], parser(note['text']))


# --- unrecognised output: always ParseError, never a traceback ---------------------------------

PARSERS = [amd_smi.parse_amd_smi_static_json, amd_smi.parse_amd_smi_list_json, amd_smi.parse_amd_smi_version]
PARSER_IDS = ['static', 'list', 'version']


@pytest.mark.parametrize('parser', PARSERS, ids=PARSER_IDS)
@pytest.mark.parametrize('text', ['', '   \n\n', 'Segmentation fault (core dumped)\n', 'usage: amd-smi [-h] ...\n'],
                         ids=['empty', 'blank-lines', 'garbage', 'usage-text'])
def test_unrecognised_output_is_parse_error(parser, text):
    with pytest.raises(ParseError):
        parser(text)


@pytest.mark.parametrize('parser', PARSERS, ids=PARSER_IDS)
@pytest.mark.parametrize('value', [None, 42, ['a']], ids=['none', 'int', 'list'])
def test_non_text_input_is_parse_error(parser, value):
    with pytest.raises(ParseError):
        parser(value)


@pytest.mark.parametrize('parser, capture', [
    (amd_smi.parse_amd_smi_static_json, 'mi210-gfx90a-static-gpu-data.json'),
    (amd_smi.parse_amd_smi_static_json, 'strix-halo-gfx1151-static-list-fedora.json'),
    (amd_smi.parse_amd_smi_list_json, 'strix-halo-gfx1151-list-fedora.json'),
], ids=['static-gpu-data', 'static-list', 'list'])
@pytest.mark.parametrize('fraction', [0.1, 0.5, 0.9], ids=['cut-10pc', 'cut-50pc', 'cut-90pc'])
def test_truncated_json_is_parse_error(parser, capture, fraction):
    text = _capture(capture)
    with pytest.raises(ParseError, match='JSON'):
        parser(text[:int(len(text) * fraction)])


@pytest.mark.parametrize('document', [
    {'gpus': []},
    {'gpu_data': {'gpu': 0}},
    [1, 2],
    [{'asic': {'market_name': 'AMD Instinct MI300X'}}],
    [{'gpu': 'N/A'}],
    'just a string',
    42,
], ids=['object-without-gpu-data', 'gpu-data-not-list', 'list-of-numbers', 'entry-without-gpu', 'gpu-index-na',
        'json-string', 'json-number'])
@pytest.mark.parametrize('parser', PARSERS[:2], ids=PARSER_IDS[:2])
def test_wrong_json_shape_is_parse_error(parser, document):
    with pytest.raises(ParseError):
        parser(json.dumps(document, indent=4))


def test_indented_json_is_not_taken_for_the_document():
    """Only a document starting at column 0 counts, so a cut-off list never yields its first element."""
    text = '[\n{\n    "gpu": 0\n}\n,\n'
    with pytest.raises(ParseError):
        amd_smi.parse_amd_smi_list_json(text)


# --- tool errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize('line, hint', [
    ('ERROR:root:Unable to detect any GPU devices, check amdgpu version and module status (sudo modprobe amdgpu)',
     rocm_common.HINT_DRIVER),
    ('AmdSmiLibraryException: Error code:\n\t54 | AMDSMI_STATUS_DRIVER_NOT_LOADED - Driver not loaded', rocm_common.HINT_DRIVER),
    ('\t10 | AMDSMI_STATUS_NO_PERM - Permission Denied', rocm_common.HINT_PERMISSION),
    ('PermissionError: [Errno 13] Permission denied: \'/dev/kfd\'', rocm_common.HINT_PERMISSION),
    ('amdsmi.amdsmi_exception.AmdSmiLibraryException: Error code:\n\t32 | AMDSMI_STATUS_INIT_ERROR - Initialization error',
     rocm_common.HINT_RUNTIME),
    ('Traceback (most recent call last):\n  File "/opt/rocm/bin/amd-smi", line 1\nKeyError: \'gpu\'', rocm_common.HINT_RUNTIME),
], ids=['no-gpu-devices', 'driver-not-loaded', 'no-perm', 'permission-denied-kfd', 'init-error', 'traceback'])
@pytest.mark.parametrize('parser', PARSERS, ids=PARSER_IDS)
def test_error_lines_are_tool_errors(parser, line, hint):
    with pytest.raises(ToolError) as excinfo:
        parser(line + '\n')
    assert excinfo.value.hint == hint
    assert excinfo.value.tool == 'amd-smi'
    assert excinfo.value.line in line


def test_traceback_quotes_the_exception_line():
    with pytest.raises(ToolError) as excinfo:
        amd_smi.parse_amd_smi_static_json('Traceback (most recent call last):\n  File "x", line 1\nKeyError: \'gpu\'\n')
    assert excinfo.value.line == "KeyError: 'gpu'"


def test_driver_error_before_truncated_json_is_tool_error():
    text = 'ERROR: Unable to detect any GPU devices, check amdgpu version and module status (sudo modprobe amdgpu)\n[\n    {\n'
    with pytest.raises(ToolError) as excinfo:
        amd_smi.parse_amd_smi_static_json(text)
    assert excinfo.value.hint == rocm_common.HINT_DRIVER


@pytest.mark.parametrize('parser', PARSERS[:2], ids=PARSER_IDS[:2])
def test_empty_gpu_list_after_an_error_is_tool_error(parser):
    text = 'ERROR: Unable to get devices, driver not initialized (amdgpu not found in modules)\n[]\n'
    with pytest.raises(ToolError) as excinfo:
        parser(text)
    assert excinfo.value.hint == rocm_common.HINT_DRIVER


@pytest.mark.parametrize('parser', PARSERS[:2], ids=PARSER_IDS[:2])
def test_group_warning_with_no_gpus_is_permission_error(parser):
    with pytest.raises(ToolError) as excinfo:
        parser(GROUP_WARNING + '\n{\n    "gpu_data": []\n}\n')
    assert excinfo.value.hint == rocm_common.HINT_PERMISSION


@pytest.mark.parametrize('parser', PARSERS[:2], ids=PARSER_IDS[:2])
def test_empty_gpu_list_without_errors_is_no_gpus(parser):
    assert parser('[]\n')['gpus'] == []
    assert parser('{\n    "gpu_data": []\n}\n')['gpus'] == []


def test_cpu_only_error_line_is_not_fatal():
    """amd-smi complains about amd_hsmp (CPU telemetry) on hosts without it; the GPU data still counts."""
    text = ('ERROR: Unable to detect any CPU devices, check amd_hsmp version and module status (sudo modprobe amd_hsmp)\n'
            '[\n    {\n        "gpu": 0,\n        "bdf": "0000:0c:00.0"\n    }\n]\n')
    result = amd_smi.parse_amd_smi_list_json(text)
    assert result['gpus'][0]['pci_address'] == '0000:0c:00.0'
    assert result['warnings'] == [text.splitlines()[0]]


# --- warnings before the JSON ----------------------------------------------------------------------

def test_group_warning_before_json_is_returned_not_fatal():
    text = GROUP_WARNING + '\n' + _capture('strix-halo-gfx1151-list-fedora.json')
    result = amd_smi.parse_amd_smi_list_json(text)
    assert result['warnings'] == [GROUP_WARNING]
    assert result['gpus'][0]['kfd_id'] == 42905


def test_python_syntax_warnings_before_gpu_data_are_returned():
    """Shape seen in nathaninline/ajean#39 (RX 7800 XT, Python 3.14): two SyntaxWarnings, then {"gpu_data": ...}."""
    preamble = ("/usr/lib/python3.14/site-packages/amdsmi/amdsmi_interface.py:3569: SyntaxWarning: 'return' in a 'finally' block\n"
                "  return return_dictionary\n")
    result = amd_smi.parse_amd_smi_static_json(preamble + _capture('mi210-gfx90a-static-gpu-data.json'))
    assert result['gpus'][0]['gfx_target'] == 'gfx90a'
    assert result['warnings'] == [preamble.splitlines()[0], 'return return_dictionary']


def test_text_after_the_json_is_a_warning():
    result = amd_smi.parse_amd_smi_list_json('[\n    {"gpu": 0}\n]\nsome trailing note\n')
    assert result['warnings'] == ['some trailing note']


# --- static: value/unit variants, N/A, ordering ----------------------------------------------------

def _static(**sections):
    entry = {'gpu': 0}
    entry.update(sections)
    return json.dumps([entry], indent=4)


@pytest.mark.parametrize('size, expected', [
    ({'value': 196592, 'unit': 'MB'}, 196592 * 1024 ** 2),
    ({'value': 192, 'unit': 'GB'}, 192 * 1024 ** 3),
    ({'value': 65520.0, 'unit': 'MB'}, 65520 * 1024 ** 2),
    ({'value': 196592}, 196592 * 1024 ** 2),
    (196592, 196592 * 1024 ** 2),
    ('196592 MB', 196592 * 1024 ** 2),
    ('196592', 196592 * 1024 ** 2),
    ({'value': 'N/A', 'unit': 'MB'}, None),
    ('N/A', None),
    (None, None),
    (-1, None),
    ({'value': 16, 'unit': 'GT/s'}, None),
], ids=['value-unit-mb', 'value-unit-gb', 'float-value', 'value-no-unit', 'plain-number-mb', 'string-with-unit',
        'numeric-string', 'value-na', 'na', 'null', 'negative', 'unknown-unit'])
def test_vram_size_variants(size, expected):
    gpu = amd_smi.parse_amd_smi_static_json(_static(vram={'type': 'HBM', 'size': size}))['gpus'][0]
    assert gpu['vram_bytes'] == expected


@pytest.mark.parametrize('numa, expected', [
    ({'node': 3, 'affinity': 3}, 3),
    ({'node': 0, 'affinity': -1}, 0),
    ({'node': -1, 'affinity': -1}, None),
    ({'node': 'N/A', 'affinity': 'N/A'}, None),
    ('N/A', None),
    ({'node': '1'}, 1),
], ids=['node-3', 'node-0-affinity-minus-1', 'node-minus-1', 'node-na', 'section-na', 'string-number'])
def test_numa_node_variants(numa, expected):
    assert amd_smi.parse_amd_smi_static_json(_static(numa=numa))['gpus'][0]['numa_node'] == expected


def test_na_sections_and_values_become_none():
    text = _static(asic='N/A', bus={'bdf': 'N/A'}, vram='N/A', partition='N/A', driver='N/A', numa='N/A')
    result = amd_smi.parse_amd_smi_static_json(text)
    assert result['driver_version'] is None
    assert result['gpus'] == [{
        'gpu': 0, 'gfx_target': None, 'marketing_name': None, 'numa_node': None, 'vram_bytes': None,
        'pci_address': None, 'compute_units': None, 'compute_partition': None, 'memory_partition': None, 'uuid': None,
    }]


def test_mi300x_style_entry_with_partitions():
    text = _static(
        asic={'market_name': 'AMD Instinct MI300X', 'num_compute_units': 304, 'target_graphics_version': 'gfx942'},
        bus={'bdf': '0000:0C:00.0'},
        partition={'compute_partition': 'SPX', 'memory_partition': 'NPS1', 'partition_id': 0},
        numa={'node': 0, 'affinity': 0},
        vram={'type': 'HBM', 'vendor': 'N/A', 'size': {'value': 196592, 'unit': 'MB'}},
        driver={'name': 'amdgpu', 'version': '6.12.12'},
        uuid='c0ff74a1-0000-1000-80b1-06985c515c91',
    )
    result = amd_smi.parse_amd_smi_static_json(text)
    assert result['driver_version'] == '6.12.12'
    assert result['gpus'][0] == {
        'gpu': 0, 'gfx_target': 'gfx942', 'marketing_name': 'AMD Instinct MI300X', 'numa_node': 0,
        'vram_bytes': 206141652992, 'pci_address': '0000:0c:00.0', 'compute_units': 304,
        'compute_partition': 'SPX', 'memory_partition': 'NPS1', 'uuid': 'c0ff74a1-0000-1000-80b1-06985c515c91',
    }


@pytest.mark.parametrize('target, expected', [
    ('gfx942', 'gfx942'),
    ('gfx90a', 'gfx90a'),
    ('gfx9010', 'gfx90a'),
    ('gfx942:sramecc+:xnack-', 'gfx942'),
    ('N/A', None),
    ('gfx9999', None),
], ids=['gfx942', 'gfx90a', 'decimal-spelling', 'feature-suffix', 'na', 'unknown'])
def test_gfx_target_is_normalised(target, expected):
    text = _static(asic={'target_graphics_version': target})
    assert amd_smi.parse_amd_smi_static_json(text)['gpus'][0]['gfx_target'] == expected


def test_gpus_are_ordered_by_index_and_driver_comes_from_the_first():
    entries = [
        {'gpu': 2, 'bus': {'bdf': '0000:46:00.0'}, 'driver': {'version': '6.10.5'}},
        {'gpu': 0, 'bus': {'bdf': '0000:05:00.0'}, 'driver': {'version': '6.12.12'}},
        {'gpu': 1, 'bus': {'bdf': '0000:26:00.0'}, 'driver': {'version': 'N/A'}},
    ]
    result = amd_smi.parse_amd_smi_static_json(json.dumps({'gpu_data': entries}, indent=4))
    assert [gpu['gpu'] for gpu in result['gpus']] == [0, 1, 2]
    assert [gpu['pci_address'] for gpu in result['gpus']] == ['0000:05:00.0', '0000:26:00.0', '0000:46:00.0']
    assert result['driver_version'] == '6.12.12'


@pytest.mark.parametrize('printed, expected', [
    ('6.12.12', '6.12.12'),
    ('6.14.14', '6.14.14'),
    ('7.0.0-3-pve', '7.0.0-3-pve'),
    ('6.17.1-300.fc43.x86_64', '6.17.1-300.fc43.x86_64'),
    ('Linuxversion6.8.0-79-generic(buildd@lcy02-amd64-049)(x86_64-linux-gnu-gcc-13)#79-UbuntuSMP', '6.8.0-79-generic'),
    ('N/A', None),
    ('AMDSMI_STATUS_NOT_SUPPORTED', None),
    ('not a version', None),
    (None, None),
], ids=['dkms', 'dkms-7.0', 'pve-kernel', 'fedora-kernel', 'kernel-banner', 'na', 'status', 'junk', 'null'])
def test_driver_version_normalisation(printed, expected):
    assert amd_smi.normalize_driver_version(printed) == expected


def test_bytes_input_is_accepted():
    result = amd_smi.parse_amd_smi_list_json(_capture('strix-halo-gfx1151-list-fedora.json').encode('utf-8'))
    assert result['gpus'][0]['uuid'] == '00ff1586-0000-1000-8000-000000000000'


# --- list ----------------------------------------------------------------------------------------

def test_list_partitioned_gpus_share_a_bdf():
    """A CPX MI300X lists each partition as its own gpu with the same BDF and its own partition_id."""
    entries = [{'gpu': index, 'bdf': '0000:0c:00.0', 'uuid': 'c0ff74a1-0000-1000-80b1-06985c515c91',
                'kfd_id': 1000 + index, 'node_id': 2 + index, 'partition_id': index} for index in range(8)]
    result = amd_smi.parse_amd_smi_list_json(json.dumps(entries[::-1], indent=4))
    assert [gpu['partition_id'] for gpu in result['gpus']] == list(range(8))
    assert {gpu['pci_address'] for gpu in result['gpus']} == {'0000:0c:00.0'}


def test_list_na_values_and_gpu_data_wrapper():
    text = json.dumps({'gpu_data': [{'gpu': 0, 'bdf': 'N/A', 'uuid': 'N/A', 'kfd_id': 'N/A', 'node_id': 'N/A',
                                     'partition_id': 'N/A'}]}, indent=4)
    assert amd_smi.parse_amd_smi_list_json(text)['gpus'] == [
        {'gpu': 0, 'pci_address': None, 'uuid': None, 'kfd_id': None, 'node_id': None, 'partition_id': None}]


# --- version -------------------------------------------------------------------------------------

@pytest.mark.parametrize('text', [
    '[\n    {\n        "tool": "AMDSMI Tool",\n        "version": "26.2.0+021c61fc",\n        "amdsmi_library_version": "26.2.0",\n'
    '        "rocm_version": "7.0.2",\n        "amdgpu_version": "6.16.6",\n        "amd_hsmp_driver_version": "N/A"\n    }\n]\n',
    '{\n    "tool": "AMDSMI Tool",\n    "version": "26.2.0+021c61fc",\n    "amdsmi_library_version": "26.2.0",\n'
    '    "rocm_version": "7.0.2",\n    "amdgpu_version": "6.16.6"\n}\n',
], ids=['json-list', 'json-object'])
def test_version_json_form(text):
    """Keys as written by amd-smi's version command (amdsmi_cli); no real capture of the JSON form was found."""
    assert amd_smi.parse_amd_smi_version(text) == {
        'tool_version': '26.2.0+021c61fc', 'library_version': '26.2.0', 'rocm_version': '7.0.2',
        'driver_version': '6.16.6', 'warnings': []}


def test_version_line_with_group_warning():
    text = ('AMDSMI Tool: 25.3.0+ede62f2 | AMDSMI Library version: 25.3.0 | ROCm version: 6.4.0 | amdgpu version: 6.12.12 | '
            'amd_hsmp version: N/A\n' + GROUP_WARNING + '\n')
    result = amd_smi.parse_amd_smi_version(text)
    assert result['rocm_version'] == '6.4.0'
    assert result['driver_version'] == '6.12.12'
    assert result['warnings'] == [GROUP_WARNING]


@pytest.mark.parametrize('text', [
    'AMDSMI Tool: N/A | ROCm version: 6.4.0\n',
    '[\n    {\n        "tool": "AMDSMI Tool"\n    }\n]\n',
    '{\n    "gpu_data": []\n}\n',
], ids=['tool-na', 'json-without-version', 'json-other-command'])
def test_version_without_tool_version_is_parse_error(text):
    with pytest.raises(ParseError):
        amd_smi.parse_amd_smi_version(text)
