# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the rocminfo parser: every captured output, then focused edge cases."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils import _rocm_common as rocm_common
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocminfo import parse_rocminfo

FIXTURE_TOOL = 'rocminfo'
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', FIXTURE_TOOL)
GPU_KEYS = {'node', 'gfx_target', 'marketing_name', 'compute_units', 'pci_address', 'vram_bytes', 'uuid', 'integrated'}


def _capture(name):
    with open(os.path.join(FIXTURES, name + '.txt'), encoding='utf-8') as handle:
        return handle.read()


def test_fixture(note):
    assert note['parser'] == 'parse_rocminfo'
    if 'error' in note:
        error_class = getattr(rocm_common, note['error'])
        with pytest.raises(error_class) as excinfo:
            parse_rocminfo(note['text'])
        assert re.search(note['error_match'], str(excinfo.value)), str(excinfo.value)
        if isinstance(excinfo.value, ToolError):
            # The quoted line is the tool's own words, found in the capture.
            assert excinfo.value.line.split(' (')[0] in note['text']
        return

    result = parse_rocminfo(note['text'])
    expected = note['expected']
    json.dumps(result)  # plain data only
    assert set(result) == {'runtime_version', 'gpus'}
    for gpu in result['gpus']:
        assert set(gpu) == GPU_KEYS
    assert len(result['gpus']) == expected['gpu_count']
    assert [gpu['gfx_target'] for gpu in result['gpus']] == expected['gfx_targets']
    if 'runtime_version' in expected:
        assert result['runtime_version'] == expected['runtime_version']
    if 'gpus' in expected:
        assert len(expected['gpus']) == len(result['gpus'])
        for index, (want, got) in enumerate(zip(expected['gpus'], result['gpus'])):
            subset = dict((key, got[key]) for key in want)
            assert subset == want, 'GPU %d' % index
    # Every GPU agent stays distinct, partitions included.
    nodes = [gpu['node'] for gpu in result['gpus']]
    assert len(set(nodes)) == len(nodes)
    addresses = [gpu['pci_address'] for gpu in result['gpus'] if gpu['pci_address']]
    assert len(set(addresses)) == len(addresses)


@pytest.mark.parametrize('text', [
    pytest.param('', id='empty-string'),
    pytest.param('   \n\n', id='whitespace-only'),
    pytest.param('Segmentation fault\n', id='segfault-only'),
    pytest.param('bash: rocminfo: command not found\n', id='command-not-found'),
    pytest.param('<html><body>502 Bad Gateway</body></html>', id='garbage-html'),
    pytest.param('=====================\nHSA System Attributes\n=====================\nRuntime Version:         1.14\n',
                 id='header-without-agents'),
])
def test_not_rocminfo_output_is_parse_error(text):
    with pytest.raises(ParseError):
        parse_rocminfo(text)


def test_none_is_parse_error():
    with pytest.raises(ParseError):
        parse_rocminfo(None)


def test_bytes_input_is_accepted():
    text = _capture('rx7900xtx-gfx1100-rocm6.2.2-support')
    assert parse_rocminfo(text.encode('utf-8')) == parse_rocminfo(text)


def test_unknown_gfx_name_is_parse_error_naming_it():
    text = _capture('rx7900xtx-gfx1100-rocm6.2.2-support')
    text = text.replace('  Name:                    gfx1100   ', '  Name:                    gfx9999   ', 1)
    with pytest.raises(ParseError, match='gfx9999'):
        parse_rocminfo(text)


def test_decimal_kfd_spelling_is_normalised():
    text = _capture('mi250x-1gcd-rocm6.2.1-support').replace('  Name:                    gfx90a\n', '  Name:                    gfx9010\n', 1)
    assert parse_rocminfo(text)['gpus'][0]['gfx_target'] == 'gfx90a'


def test_crlf_input_gives_the_same_result():
    text = _capture('mi210-x4-rocm6.2.4-support-tmux')
    assert parse_rocminfo(text.replace('\n', '\r\n')) == parse_rocminfo(text)


def test_real_ansi_colour_codes_are_stripped():
    text = '\x1b[31mROCk module is NOT loaded, possibly no GPU devices\x1b[0m\n'
    with pytest.raises(ToolError) as excinfo:
        parse_rocminfo(text)
    assert excinfo.value.line == 'ROCk module is NOT loaded, possibly no GPU devices'
    assert excinfo.value.hint == rocm_common.HINT_DRIVER


def test_cpu_only_machine_returns_no_gpus():
    text = _capture('mi300x-8-rocm6.2.3-support')
    cpu_only = text[:text.index('*******\nAgent 3\n')] + '*** Done ***\n'
    assert parse_rocminfo(cpu_only) == {'runtime_version': '1.14', 'gpus': []}


def test_dsp_agent_is_skipped():
    text = _capture('strix-halo-gfx1151-npu-rocm7.1-prompt')
    assert 'Device Type:             DSP' in text
    assert [gpu['gfx_target'] for gpu in parse_rocminfo(text)['gpus']] == ['gfx1151']


def test_agent_without_device_type_is_parse_error():
    text = _capture('mi250x-1gcd-rocm6.2.1-support').replace('  Device Type:             GPU\n', '', 1)
    with pytest.raises(ParseError, match='agent 5 has no Device Type'):
        parse_rocminfo(text)


def test_gpu_without_numeric_node_is_parse_error():
    text = _capture('mi250x-1gcd-rocm6.2.1-support').replace('  Node:                    4\n', '  Node:                    N/A\n', 1)
    with pytest.raises(ParseError, match='Node'):
        parse_rocminfo(text)


def test_old_output_without_bdfid_has_no_pci_address():
    text = _capture('rx470-gfx803-rocm1.9-prompts').replace('  BDFID:                   256\n', '', 1)
    gpu = parse_rocminfo(text)['gpus'][0]
    assert gpu['pci_address'] is None
    assert gpu['gfx_target'] == 'gfx803'


def test_bdfid_zero_on_a_gpu_means_unknown():
    text = _capture('rx470-gfx803-rocm1.9-prompts').replace('  BDFID:                   256\n', '  BDFID:                   0\n', 1)
    assert parse_rocminfo(text)['gpus'][0]['pci_address'] is None


def test_domain_line_is_used_when_printed():
    text = _capture('mi250x-1gcd-rocm6.2.1-support').replace(
        '  BDFID:                   53504\n', '  BDFID:                   53504\n  Domain:                  1\n', 1)
    assert parse_rocminfo(text)['gpus'][0]['pci_address'] == '0001:d1:00.0'


def test_empty_marketing_name_is_none():
    text = _capture('rx7900xtx-gfx1100-rocm6.2.2-support').replace(
        '  Marketing Name:          Radeon RX 7900 XTX                 \n', '  Marketing Name:                                             \n', 1)
    assert parse_rocminfo(text)['gpus'][0]['marketing_name'] is None


def test_cpx_partitions_share_uuid_but_not_node_or_address():
    gpus = parse_rocminfo(_capture('mi300x-cpx-excerpt-rocm6.3'))['gpus']
    assert gpus[0]['uuid'] == gpus[1]['uuid']
    assert [gpu['node'] for gpu in gpus] == [2, 3]
    assert [gpu['pci_address'] for gpu in gpus] == ['0000:05:00.0', '0000:05:00.1']


def test_user_name_warning_before_agents_is_not_an_error():
    text = _capture('mi250x-1gcd-rocm6.2.1-support')
    first_line_end = text.index('\n') + 1
    text = text[:first_line_end] + 'Failed to get user name to check for video group membership\n' + text[first_line_end:]
    assert len(parse_rocminfo(text)['gpus']) == 1


def test_user_name_failure_alone_is_tool_error():
    text = 'ROCk module is loaded\nFailed to get user name to check for video group membership\n'
    with pytest.raises(ToolError, match='Failed to get user name'):
        parse_rocminfo(text)


def test_hsa_failure_after_agents_is_tool_error():
    text = _capture('mi300x-8-rocm6.2.3-support')
    text = text[:text.index('*******\nAgent 4\n')] + (
        'hsa api call failure at: /src/rocminfo/rocminfo.cc:1142\n'
        'Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.\n')
    with pytest.raises(ToolError) as excinfo:
        parse_rocminfo(text)
    assert excinfo.value.line.startswith('Call returned HSA_STATUS_ERROR_OUT_OF_RESOURCES')
    assert excinfo.value.hint == rocm_common.HINT_RUNTIME


def test_old_single_line_hsa_failure_is_tool_error():
    text = 'hsa api call failure at line 900, file: /data/jenkins/rocminfo/rocminfo.cc. Call returned 4104\n'
    with pytest.raises(ToolError, match='Call returned 4104'):
        parse_rocminfo(text)


@pytest.mark.parametrize('reason, hint', [
    pytest.param('Permission denied', rocm_common.HINT_PERMISSION, id='permission-denied'),
    pytest.param('Operation not permitted', rocm_common.HINT_PERMISSION, id='operation-not-permitted'),
    pytest.param('Invalid argument', None, id='invalid-argument'),
])
def test_kfd_open_failure_hints(reason, hint):
    text = 'ROCk module is loaded\nUnable to open /dev/kfd read-write: %s\nuser is member of render group\n' % reason
    with pytest.raises(ToolError) as excinfo:
        parse_rocminfo(text)
    assert excinfo.value.line == 'Unable to open /dev/kfd read-write: %s' % reason
    if hint is not None:
        assert excinfo.value.hint == hint
    else:
        assert 'dmesg' in excinfo.value.hint


def test_vram_is_the_coarse_grained_pool_not_the_first_pool():
    text = _capture('mi250x-1gcd-rocm6.2.1-support')
    gpu_part = text.index('Agent 5')
    head, tail = text[:gpu_part], text[gpu_part:]
    tail = tail.replace('      Segment:                 GLOBAL; FLAGS: COARSE GRAINED\n      Size:                    67092480(0x3ffc000) KB\n',
                        '      Segment:                 GLOBAL; FLAGS: FINE GRAINED\n      Size:                    1024(0x400) KB\n', 1)
    tail = tail.replace('GLOBAL; FLAGS: EXTENDED FINE GRAINED', 'GLOBAL; FLAGS: COARSE GRAINED', 1)
    assert parse_rocminfo(head + tail)['gpus'][0]['vram_bytes'] == 67092480 * 1024


def test_gpu_without_coarse_grained_pool_has_no_vram():
    text = _capture('mi250x-1gcd-rocm6.2.1-support')
    gpu_part = text.index('Agent 5')
    tail = text[gpu_part:].replace('COARSE GRAINED', 'FINE GRAINED')
    assert parse_rocminfo(text[:gpu_part] + tail)['gpus'][0]['vram_bytes'] is None


def test_unreadable_pool_size_is_parse_error():
    text = _capture('mi250x-1gcd-rocm6.2.1-support')
    gpu_part = text.index('Agent 5')
    tail = text[gpu_part:].replace('67092480(0x3ffc000) KB', 'lots', 1)
    with pytest.raises(ParseError, match='lots'):
        parse_rocminfo(text[:gpu_part] + tail)


def test_non_text_input_is_parse_error():
    with pytest.raises(ParseError):
        parse_rocminfo(42)
