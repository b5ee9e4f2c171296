# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the rccl-tests parser.

``test_fixture`` runs once per real capture under tests/unit/fixtures/rccl_tests/
(see tests/unit/conftest.py and capture_notes.py). The tests below cut,
mix and edit those captures, or use small hand-written lines, to pin down
one rule each; the hand-written lines are not captures.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from capture_notes import capture, check_note

from ansible_collections.llmfleet.rocm.plugins.module_utils import _rccl_tests as rccl_tests
from ansible_collections.llmfleet.rocm.plugins.module_utils._rccl_tests import parse_rccl_tests
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError

FIXTURE_TOOL = 'rccl_tests'

MI350X = 'mi350x-8gpu-single-process-rocm7.0.txt'


def test_fixture(note):
    check_note(note, rccl_tests)


# --- unrecognised output: ParseError, never a traceback or a guess --------------------------------

@pytest.mark.parametrize('text', ['', '  \n\n', 'Segmentation fault (core dumped)\n',
                                  'usage: all_reduce_perf [-t,--nthreads <num threads>] ...\n'],
                         ids=['empty', 'blank', 'garbage', 'usage'])
def test_unrecognised_output_is_parse_error(text):
    with pytest.raises(ParseError):
        parse_rccl_tests(text)


@pytest.mark.parametrize('value', [None, 42, ['a']], ids=['none', 'int', 'list'])
def test_non_text_is_parse_error(value):
    with pytest.raises(ParseError, match='expected the text'):
        parse_rccl_tests(value)


def test_bytes_are_decoded():
    assert parse_rccl_tests(capture('rccl_tests', MI350X).encode('utf-8'))['avg_busbw_gbs'] == 111.827


@pytest.mark.parametrize('other', [('transferbench', 'mi350x-a2a-rocm7.0.txt'),
                                   ('rvs', 'mi355x-gst-fp4-rvs1.6.75.txt'),
                                   ('amd_smi_health', 'metric-power-json-rocm6.1.0.json')],
                         ids=['transferbench', 'rvs', 'amd-smi'])
def test_another_tools_output_is_parse_error(other):
    with pytest.raises(ParseError, match='column header'):
        parse_rccl_tests(capture(*other))


@pytest.mark.parametrize('marker', ['  8589934592', '# Out of bounds values', '# Avg bus bandwidth'],
                         ids=['before-last-row', 'before-out-of-bounds', 'before-average'])
def test_report_cut_before_its_average_is_parse_error(marker):
    text = capture('rccl_tests', MI350X)
    with pytest.raises(ParseError, match='Avg bus bandwidth'):
        parse_rccl_tests(text[:text.index(marker)])


def test_row_cut_in_the_middle_is_parse_error():
    text = capture('rccl_tests', MI350X)
    cut = text.index('  8589934592') + 60
    with pytest.raises(ParseError, match='columns where the header has 13'):
        parse_rccl_tests(text[:cut] + '\n# Avg bus bandwidth    : 1.0\n')


def test_average_without_a_table_is_parse_error():
    with pytest.raises(ParseError, match='no table'):
        parse_rccl_tests('# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 12.5\n')


def test_unknown_column_header_is_parse_error():
    text = '#       size         count      type   redop    root     time   algbw   busbw   other\n'
    with pytest.raises(ParseError, match='expected the column header'):
        parse_rccl_tests(text)


def test_non_numeric_figure_is_parse_error():
    text = capture('rccl_tests', MI350X).replace('41644  206.27', '41644  fast', 1)
    with pytest.raises(ParseError, match='algbw'):
        parse_rccl_tests(text)


# --- tool errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize('line, hint', [
    ("host: Test HIP failure common.cu:1288 'no ROCm-capable device is detected'", rccl_tests.HINT_FAILURE),
    ("host: Test NCCL failure common.cu:1010 'unhandled system error (run with NCCL_DEBUG=INFO for details)'",
     rccl_tests.HINT_FAILURE),
    ("gpu-1-1: Test CUDA failure common.cu:1304 'CUDA-capable device(s) is/are busy or unavailable'",
     rccl_tests.HINT_BUSY),
    (' .. host pid 1234: Test failure common.cu:1189', rccl_tests.HINT_FAILURE),
], ids=['hip-no-device', 'nccl-system-error', 'busy', 'bare-test-failure'])
def test_failure_before_the_report_is_tool_error(line, hint):
    text = capture('rccl_tests', MI350X)
    head = text[:text.index('#                                                              out-of-place')]
    with pytest.raises(ToolError) as excinfo:
        parse_rccl_tests(head + line + '\n')
    assert excinfo.value.hint == hint
    assert excinfo.value.tool == 'rccl-tests'
    assert excinfo.value.line == line.strip()


def test_failure_after_a_complete_report_is_kept_not_raised():
    text = capture('rccl_tests', MI350X) + " .. host pid 1: Test failure common.cu:1189\n"
    assert parse_rccl_tests(text)['failures'] == ['.. host pid 1: Test failure common.cu:1189']


# --- formats -------------------------------------------------------------------------------------

def test_mpi_tag_output_prefix_is_removed():
    text = ''.join('[1,0]<stdout>:' + line + '\n' for line in capture('rccl_tests', MI350X).splitlines())
    result = parse_rccl_tests(text)
    assert result['avg_busbw_gbs'] == 111.827
    assert result['largest']['in_place']['busbw_gbs'] == 367.51


def test_verdict_of_nccl_tests_min_bw_is_read():
    text = capture('rccl_tests', MI350X)
    text = text.replace('# Avg bus bandwidth    : 111.827 ', '# Avg bus bandwidth    : 111.827 FAILED')
    assert parse_rccl_tests(text)['avg_busbw_ok'] is False


def test_wrong_column_na_without_validation_is_none():
    """rccl-tests run with -c 0 prints N/A in the #wrong columns (two-node MI300X runs do)."""
    text = capture('rccl_tests', MI350X).replace(
        '  8589934592    2147483648     float     sum      -1    41644  206.27  360.97      0    40903  210.01  367.51'
        '      0',
        '  8589934592    2147483648     float     sum      -1    41644  206.27  360.97    N/A    40903  210.01  367.51'
        '    N/A')
    largest = parse_rccl_tests(text)['largest']
    assert largest['out_of_place']['wrong'] is None
    assert largest['in_place']['wrong'] is None


def test_old_error_column_format():
    """rccl-tests before the #wrong column (ROCm/rccl#929, MI250X, 2023) printed a float "error" and no root."""
    text = ('#                                                       out-of-place                       in-place\n'
            '#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n'
            '#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n'
            '           8             2     float     sum    25.06    0.00    0.00  4e-07    25.95    0.00    0.00  4e-07\n'
            '# Out of bounds values : 0 OK\n'
            '# Avg bus bandwidth    : 0.0\n')
    row = parse_rccl_tests(text)['rows'][0]
    assert row['root'] is None
    assert row['out_of_place']['error'] == 4e-07
    assert row['out_of_place']['wrong'] is None


def test_out_of_place_only_table():
    text = ('#       size         count      type   redop    root     time   algbw   busbw #wrong\n'
            '17179869184    4294967296     float     sum      -1  62123.4  276.55  483.96      3\n'
            '# Out of bounds values : 3 FAILED\n'
            '# Avg bus bandwidth    : 483.96\n')
    result = parse_rccl_tests(text)
    assert result['rows'][0]['in_place'] is None
    assert result['wrong_total'] == 3
    assert result['out_of_bounds_ok'] is False
