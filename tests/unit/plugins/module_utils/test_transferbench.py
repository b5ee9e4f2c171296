# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the TransferBench parser.

``test_fixture`` runs once per real capture under tests/unit/fixtures/transferbench/.
The tests below cut, mix and edit those captures, or use small hand-written
lines, to pin down one rule each; the hand-written lines are not captures.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from capture_notes import capture, check_note

from ansible_collections.llmfleet.rocm.plugins.module_utils import _transferbench as transferbench
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError
from ansible_collections.llmfleet.rocm.plugins.module_utils._transferbench import parse_transferbench

FIXTURE_TOOL = 'transferbench'

A2A = 'mi350x-a2a-rocm7.0.txt'
P2P = 'mi350x-p2p-rocm7.0.txt'
CONFIG = 'mi350x-example-cfg-rocm7.0.txt'


def test_fixture(note):
    check_note(note, transferbench)


@pytest.mark.parametrize('text', ['', '\n \n', 'Segmentation fault\n', 'TransferBench v1.62.00\n'],
                         ids=['empty', 'blank', 'garbage', 'banner-only'])
def test_unrecognised_output_is_parse_error(text):
    with pytest.raises(ParseError):
        parse_transferbench(text)


@pytest.mark.parametrize('value', [None, 3.5, {'a': 1}], ids=['none', 'float', 'dict'])
def test_non_text_is_parse_error(value):
    with pytest.raises(ParseError, match='expected the text'):
        parse_transferbench(value)


@pytest.mark.parametrize('other', [('rccl_tests', 'mi350x-8gpu-single-process-rocm7.0.txt'),
                                   ('rvs', 'mi355x-pbqt-single-rvs1.6.75.txt'),
                                   ('amd_smi_health', 'topology-json-two-gpu-pcie-rocm6.1.1.json')],
                         ids=['rccl-tests', 'rvs', 'amd-smi'])
def test_another_tools_output_is_parse_error(other):
    with pytest.raises(ParseError, match='found none'):
        parse_transferbench(capture(*other))


@pytest.mark.parametrize('name, marker, match', [
    (A2A, 'GPU 05   51.185', 'incomplete'),
    (A2A, 'Aggregate bandwidth (CPU Timed)', 'incomplete'),
    (P2P, 'Averages (During UniDir)', 'Averages'),
    (P2P, '  GPU 04 <-  ', 'Averages'),
    (CONFIG, ' Aggregate (CPU)  |   58.541', 'Test 2'),
], ids=['a2a-rows', 'a2a-totals', 'p2p-unidir-averages', 'p2p-bidir-rows', 'config-aggregate'])
def test_cut_report_is_parse_error(name, marker, match):
    text = capture('transferbench', name)
    with pytest.raises(ParseError, match=match):
        parse_transferbench(text[:text.index(marker)])


def test_row_with_a_missing_figure_is_parse_error():
    text = capture('transferbench', A2A).replace('51.178     50.907     ', '51.178     ', 1)
    with pytest.raises(ParseError, match='expected 10 figures'):
        parse_transferbench(text)


def test_row_with_a_word_is_parse_error():
    text = capture('transferbench', P2P).replace('57.39', 'fast', 1)
    with pytest.raises(ParseError, match='GB/s or N/A'):
        parse_transferbench(text)


def test_a2a_without_its_header_is_parse_error():
    with pytest.raises(ParseError, match='matrix header'):
        parse_transferbench('Summary:\nGPU 00 N/A 43.666\n')


def test_error_line_is_tool_error():
    text = capture('transferbench', A2A) + '[ERROR] Unable to allocate memory on GPU 03\n'
    with pytest.raises(ToolError) as excinfo:
        parse_transferbench(text)
    assert excinfo.value.line == '[ERROR] Unable to allocate memory on GPU 03'
    assert excinfo.value.hint == transferbench.HINT_ERROR


def test_warnings_are_kept():
    text = capture('transferbench', A2A) + '[WARN] It is recommended to run TransferBench with one rank per host\n'
    assert parse_transferbench(text)['warnings'] == [
        '[WARN] It is recommended to run TransferBench with one rank per host']


def test_reports_of_one_output_are_all_read():
    text = '\n'.join(capture('transferbench', name) for name in (A2A, P2P, CONFIG))
    result = parse_transferbench(text)
    assert result['a2a']['average_gbs'] == 51.417
    assert result['p2p']['unidirectional']['averages']['gpu_gpu'] == 57.32
    assert [test['test'] for test in result['config']] == [1, 2, 3, 4, 5, 6]


def test_show_iterations_rows_are_skipped():
    """SHOW_ITERATIONS=1 adds min/max/sd rows under each source (ROCm/TransferBench#50)."""
    text = ('Unidirectional copy peak bandwidth GB/s [Local read / Remote write] (GPU-Executor: GFX)\n'
            ' SRC+EXE\\DST    CPU 00    GPU 00    GPU 01\n'
            '  GPU 00  ->     15.54     19.80      9.88\n'
            '  GPU 00 min     14.24     18.77      9.82\n'
            '  GPU 00 max     17.95     20.63      9.95\n'
            '  GPU 00  sd   3.3e-01   9.6e-02   3.4e-02\n'
            '                           CPU->CPU  CPU->GPU  GPU->CPU  GPU->GPU\n'
            'Averages (During UniDir):       N/A       N/A     15.54      9.88\n')
    matrix = parse_transferbench(text)['p2p']['unidirectional']
    assert len(matrix['links']) == 3
    assert matrix['averages'] == {'cpu_cpu': None, 'cpu_gpu': None, 'gpu_cpu': 15.54, 'gpu_gpu': 9.88}
    assert matrix['min_gpu_gpu_gbs'] == 9.88
