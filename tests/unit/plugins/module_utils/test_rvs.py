# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the rvs log parser.

``test_fixture`` runs once per real capture under tests/unit/fixtures/rvs/.
The tests below edit those captures, or use small hand-written lines, to
pin down one rule each; the hand-written lines are not captures.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from capture_notes import capture, check_note

from ansible_collections.llmfleet.rocm.plugins.module_utils import _rvs as rvs
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError
from ansible_collections.llmfleet.rocm.plugins.module_utils._rvs import parse_rvs

FIXTURE_TOOL = 'rvs'

GST = 'mi355x-gst-fp4-rvs1.6.75.txt'
GST_MI300X = 'mi300x-gst-single-acceptance.txt'


def test_fixture(note):
    check_note(note, rvs)


@pytest.mark.parametrize('text', ['', ' \n', 'Segmentation fault\n', 'usage: rvs [-h] ...\n'],
                         ids=['empty', 'blank', 'garbage', 'usage'])
def test_unrecognised_output_is_parse_error(text):
    with pytest.raises(ParseError):
        parse_rvs(text)


@pytest.mark.parametrize('value', [None, 7, ['x']], ids=['none', 'int', 'list'])
def test_non_text_is_parse_error(value):
    with pytest.raises(ParseError, match='expected the text'):
        parse_rvs(value)


@pytest.mark.parametrize('other', [('rccl_tests', 'mi350x-8gpu-single-process-rocm7.0.txt'),
                                   ('transferbench', 'mi350x-p2p-rocm7.0.txt'),
                                   ('amd_smi_health', 'static-ras-vbios-mi210.json')],
                         ids=['rccl-tests', 'transferbench', 'amd-smi'])
def test_another_tools_output_is_parse_error(other):
    with pytest.raises(ParseError, match='Action name'):
        parse_rvs(capture(*other))


def test_action_without_module_line_is_parse_error():
    text = capture('rvs', GST_MI300X)
    lines = [line for line in text.splitlines() if 'Module name' not in line]
    with pytest.raises(ParseError, match='no "Module name'):
        parse_rvs('\n'.join(lines))


def test_log_cut_before_met_has_no_verdict():
    text = capture('rvs', GST_MI300X)
    result = parse_rvs(text[:text.index('Target GFLOPS')])
    assert result['passed'] is None
    assert result['actions'][0]['gpus'][0]['met'] is None
    assert result['actions'][0]['gpus'][0]['gflops_max'] == 1687129.0


def test_met_false_fails_the_action_and_the_log():
    text = capture('rvs', GST_MI300X).replace('met: TRUE', 'met: FALSE')
    result = parse_rvs(text)
    assert result['actions'][0]['passed'] is False
    assert result['passed'] is False


def test_summary_fail_wins_over_the_lines():
    text = capture('rvs', GST).replace('| GST            | PASS            |', '| GST            | FAIL            |')
    result = parse_rvs(text)
    assert result['actions'][0]['summary_result'] == 'FAIL'
    assert result['actions'][0]['passed'] is False
    assert result['passed'] is False


def test_iet_pass_false_fails():
    text = capture('rvs', 'mi300x-iet-single-acceptance.txt')
    text = text.replace('[GPU:: 23018] pass: TRUE', '[GPU:: 23018] pass: FALSE')
    action = parse_rvs(text)['actions'][0]
    assert action['passed'] is False
    assert [gpu['passed'] for gpu in action['gpus']] == [True, False, True]


def test_zero_bandwidth_fails_pebb_without_summary():
    text = capture('rvs', 'mi355x-pebb-single-rvs1.6.75.txt')
    text = text[:text.index('+====')].replace('h2d::true d2h::false 54.034 GBps', 'h2d::true d2h::false 0.000 GBps')
    action = parse_rvs(text)['actions'][0]
    assert action['summary_result'] is None
    assert action['passed'] is False


def test_peqt_results():
    text = ('[RESULT] [1105558.986882] Action name :pcie_act_1\n'
            '[RESULT] [1105558.988288] Module name :peqt\n'
            '[RESULT] [1105559.33461 ] [pcie_act_1] peqt true\n'
            '[RESULT] [1105559.33492 ] Action name :pcie_act_2\n'
            '[RESULT] [1105559.33501 ] Module name :peqt\n'
            '[RESULT] [1105559.651564] [pcie_act_2] peqt false\n')
    result = parse_rvs(text)
    assert [action['passed'] for action in result['actions']] == [True, False]
    assert result['passed'] is False


def test_unknown_module_lines_are_counted_not_guessed():
    text = ('[RESULT] [209228.305186] Action name :metrics_monitor\n'
            '[RESULT] [209228.305186] Module name :gm\n'
            '[RESULT] [209228.305186] [metrics_monitor] gm 28851 temp violations 0\n')
    action = parse_rvs(text)['actions'][0]
    assert action['other_lines'] == 1
    assert action['passed'] is None


def test_rvs_error_before_any_action_is_tool_error():
    line = 'RVS-ERROR [CLI] No platform support for the detected GPU or no GPU detected !'
    with pytest.raises(ToolError) as excinfo:
        parse_rvs(line + '\n')
    assert excinfo.value.line == line
    assert excinfo.value.hint == rvs.HINT_RVS


def test_error_lines_during_a_run_fail_it():
    text = capture('rvs', GST_MI300X) + '[ERROR ] [1102004.1] [gst-1215Tflops-4K4K8K-rand-fp8] hipMalloc failed\n'
    result = parse_rvs(text)
    assert result['errors'] == ['[ERROR ] [1102004.1] [gst-1215Tflops-4K4K8K-rand-fp8] hipMalloc failed']
    assert result['passed'] is False
