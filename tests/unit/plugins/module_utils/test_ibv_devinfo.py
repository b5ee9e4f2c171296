# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the ibv_devinfo parser and the sysfs helpers, on real captures and on edge cases."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils._ibv_devinfo import (
    DEVICE_FIELDS,
    PORT_FIELDS,
    parse_ibv_devinfo,
    parse_sysfs_port_rate,
    parse_sysfs_port_state,
    sysfs_device,
    sysfs_port,
)
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError

FIXTURE_TOOL = 'ibv_devinfo'
ERRORS = {'ToolError': ToolError, 'ParseError': ParseError}


def test_fixture(note):
    if 'error' in note:
        with pytest.raises(ERRORS[note['error']]) as caught:
            parse_ibv_devinfo(note['text'])
        assert re.search(note['error_match'], str(caught.value)), str(caught.value)
        return
    result = parse_ibv_devinfo(note['text'])
    expected = note['expected']
    devices = result['devices']
    assert len(devices) == expected['device_count']
    if 'warning_count' in expected:
        assert len(result['warnings']) == expected['warning_count']
    for device in devices:
        assert set(device) == set(DEVICE_FIELDS)
        for port in device['ports']:
            assert set(port) == set(PORT_FIELDS)
    by_name = dict((device['name'], device) for device in devices)
    for wanted in expected['devices']:
        device = by_name[wanted['name']]
        for key, value in wanted.items():
            if key == 'ports':
                by_number = dict((port['port'], port) for port in device['ports'])
                for port in value:
                    got = by_number[port['port']]
                    for port_key, port_value in port.items():
                        where = '%s port %d %s' % (device['name'], port['port'], port_key)
                        assert got[port_key] == port_value, '%s is %r' % (where, got[port_key])
            else:
                assert device[key] == value, '%s: %s is %r' % (device['name'], key, device[key])


@pytest.mark.parametrize('text, line', [
    pytest.param('Failed to get IB devices list: Function not implemented\n',
                 'Failed to get IB devices list: Function not implemented', id='no-uverbs'),
    pytest.param("IB device 'mlx5_9' wasn't found\n", "IB device 'mlx5_9' wasn't found", id='unknown-device'),
])
def test_tool_errors_quote_the_line(text, line):
    with pytest.raises(ToolError) as caught:
        parse_ibv_devinfo(text)
    assert caught.value.line == line


@pytest.mark.parametrize('text, match', [
    pytest.param('', 'no hca_id', id='empty'),
    pytest.param('bash: ibv_devinfo: command not found\n', 'before any hca_id', id='garbage'),
    pytest.param('hello world\n', 'unexpected line', id='no-colon'),
    pytest.param('\tport:\t1\n', 'before any hca_id', id='port-first'),
    pytest.param('hca_id:\tmlx5_0\n\tphys_port_cnt:\t\t\tone\n', 'not a number', id='bad-number'),
    pytest.param('hca_id:\tmlx5_0\nNo IB devices found\n', 'both devices', id='contradiction'),
])
def test_unknown_output_is_a_parse_error(text, match):
    with pytest.raises(ParseError) as caught:
        parse_ibv_devinfo(text)
    assert re.search(match, str(caught.value)), str(caught.value)


def test_verbose_continuation_lines_are_ignored():
    # Layout of "ibv_devinfo -v": capability flag names on lines of their own.
    text = ('hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\tdevice_cap_flags:\t\t0x21361c36\n'
            '\t\t\t\t\tBAD_PKEY_CNTR\n\t\t\t\t\tBAD_QKEY_CNTR\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n'
            '\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0e42:a1ff:fe1d:d12a, RoCE v1\n\t\t\tlink_layer:\t\tEthernet\n')
    device = parse_ibv_devinfo(text)['devices'][0]
    assert device['link_layer'] == 'Ethernet'
    assert device['ports'][0]['active'] is True


@pytest.mark.parametrize('text, state', [
    pytest.param('4: ACTIVE\n', ('PORT_ACTIVE', 4), id='active'),
    pytest.param('1: DOWN\n', ('PORT_DOWN', 1), id='down'),
    pytest.param('', (None, None), id='unreadable'),
])
def test_sysfs_port_state(text, state):
    assert parse_sysfs_port_state(text) == state


@pytest.mark.parametrize('text, rate', [
    pytest.param('400 Gb/sec (4X NDR)\n', (400.0, '4X', 'NDR'), id='ndr'),
    pytest.param('200 Gb/sec (4X HDR)\n', (200.0, '4X', 'HDR'), id='hdr'),
    pytest.param('100 Gb/sec (4X EDR)\n', (100.0, '4X', 'EDR'), id='edr'),
    pytest.param('25 Gb/sec (1X EDR)\n', (25.0, '1X', 'EDR'), id='edr-1x'),
    pytest.param('56 Gb/sec (4X FDR)\n', (56.0, '4X', 'FDR'), id='fdr'),
    pytest.param('40 Gb/sec (4X FDR10)\n', (40.0, '4X', 'FDR10'), id='fdr10'),
    pytest.param('40 Gb/sec (4X QDR)\n', (40.0, '4X', 'QDR'), id='qdr-roce'),
    pytest.param('10 Gb/sec (4X SDR)\n', (10.0, '4X', 'SDR'), id='sdr-down-port'),
    pytest.param('2.5 Gb/sec (1X SDR)\n', (2.5, '1X', 'SDR'), id='sdr-1x-half'),
    pytest.param('800 Gb/sec (4X XDR)\n', (800.0, '4X', 'XDR'), id='xdr'),
    pytest.param('200 Gb/sec (2X NDR)\n', (200.0, '2X', 'NDR'), id='ndr-2x'),
    pytest.param('120 Gb/sec (12X QDR)\n', (120.0, '12X', 'QDR'), id='qdr-12x'),
    pytest.param('10 Gb/sec (4X)\n', (10.0, '4X', None), id='no-speed-name'),
    pytest.param('', (None, None, None), id='empty'),
    pytest.param('\n', (None, None, None), id='blank'),
    pytest.param(None, (None, None, None), id='unreadable'),
])
def test_sysfs_port_rate(text, rate):
    parsed = parse_sysfs_port_rate(text)
    assert parsed == rate
    assert parsed[0] is None or isinstance(parsed[0], float)


@pytest.mark.parametrize('text', [
    pytest.param('garbage\n', id='garbage'),
    pytest.param('400 Gb/s (4X NDR)\n', id='other-unit'),
    pytest.param('400 Gb/sec\n', id='no-width'),
    pytest.param('2.25 Gb/sec (1X SDR)\n', id='not-half'),
    pytest.param('-1 Gb/sec (4X SDR)\n', id='negative'),
    pytest.param('4: ACTIVE\n', id='state-text'),
])
def test_unknown_sysfs_port_rate_is_a_parse_error(text):
    with pytest.raises(ParseError) as caught:
        parse_sysfs_port_rate(text)
    assert 'port rate' in str(caught.value) and text.strip() in str(caught.value), str(caught.value)


def test_sysfs_port_rate_in_the_port():
    assert sysfs_port(1, '4: ACTIVE\n', 'InfiniBand\n', '400 Gb/sec (4X NDR)\n')['rate_gbps'] == 400.0
    assert sysfs_port(1, '4: ACTIVE\n', 'InfiniBand\n', None)['rate_gbps'] is None
    assert sysfs_port(1, '4: ACTIVE\n', 'InfiniBand\n')['rate_gbps'] is None
    with pytest.raises(ParseError):
        sysfs_port(1, '4: ACTIVE\n', 'InfiniBand\n', 'fast\n')


def test_ibv_devinfo_ports_have_no_rate():
    text = 'hca_id:\tmlx5_0\n\tport:\t1\n\t\tstate:\t\t\tPORT_ACTIVE (4)\n'
    assert parse_ibv_devinfo(text)['devices'][0]['ports'][0]['rate_gbps'] is None


def test_sysfs_device_from_files():
    ports = [sysfs_port(1, '4: ACTIVE\n', 'Ethernet\n'), sysfs_port(2, '1: DOWN\n', 'Ethernet\n')]
    device = sysfs_device('mlx5_0', '28.39.1002\n', '946d:ae03:00f4:5c9a\n', ports)
    assert set(device) == set(DEVICE_FIELDS)
    assert device['phys_port_cnt'] == 2 and device['link_layer'] == 'Ethernet'
    assert [port['active'] for port in device['ports']] == [True, False]
    assert device['ports'][0]['active_mtu'] is None
