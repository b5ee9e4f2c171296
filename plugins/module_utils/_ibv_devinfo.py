# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``ibv_devinfo`` (rdma-core) output and for the RDMA device files in sysfs.

Everything here is pure: text in, dicts out. No Ansible imports.

``ibv_devinfo`` prints one ``hca_id:`` stanza per RDMA device with
``key: value`` lines, and one ``port:`` block per port. ``-v`` adds more keys
and continuation lines, which are ignored. When no device can be opened it
prints ``No IB devices found`` on stderr and exits 255: that is an empty
list, not an error. ``libibverbs: Warning:`` and ``Failed to open device``
lines are passed on as warnings.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError

TOOL = 'ibv_devinfo'

HINT_VERBS = ('libibverbs cannot list RDMA devices: load the ib_uverbs and rdma_ucm kernel modules '
              '(the rdma role does) and install rdma-core and ibverbs-providers.')
HINT_DEVICE = 'The named RDMA device does not exist: list the devices with "ibv_devinfo -l" or "rdma link show".'

DEVICE_FIELDS = ('name', 'transport', 'fw_ver', 'node_guid', 'sys_image_guid', 'vendor_id', 'vendor_part_id',
                 'hw_ver', 'board_id', 'phys_port_cnt', 'link_layer', 'ports')
PORT_FIELDS = ('port', 'state', 'state_id', 'active', 'max_mtu', 'active_mtu', 'sm_lid', 'port_lid', 'port_lmc',
               'link_layer', 'rate_gbps')

_LINE_RE = re.compile(r'^(?P<key>[A-Za-z_][A-Za-z0-9_ \[\]]*?):\s*(?P<value>.*)$')
_ENUM_RE = re.compile(r'^(?P<name>\S+) \((?P<id>-?\d+)\)$')
_NO_DEVICES = 'No IB devices found'
_WARNING_RES = (
    re.compile(r'^libibverbs: Warning: .*$'),
    re.compile(r'^Failed to open device.*$'),
    re.compile(r'^Failed to query (?:device|port).*$'),
)
_ERROR_RES = (
    (re.compile(r'^Failed to get IB devices list.*$'), HINT_VERBS),
    (re.compile(r"^IB device '.*' wasn't found$"), HINT_DEVICE),
)
_STATE_NAMES = {0: 'PORT_NOP', 1: 'PORT_DOWN', 2: 'PORT_INIT', 3: 'PORT_ARMED', 4: 'PORT_ACTIVE', 5: 'PORT_ACTIVE_DEFER'}
_INT_DEVICE_KEYS = ('vendor_part_id', 'phys_port_cnt')
_INT_PORT_KEYS = ('sm_lid', 'port_lid')


def _enum(value):
    """``PORT_ACTIVE (4)`` -> ('PORT_ACTIVE', 4); ``4096 (5)`` -> ('4096', 5); plain values -> (value, None)."""
    match = _ENUM_RE.match(value)
    if match:
        return match.group('name'), int(match.group('id'))
    return value, None


def _int(value, what):
    try:
        return int(value, 0)
    except ValueError:
        raise ParseError(TOOL, '%s is %r, not a number' % (what, value))


def _new_port(number):
    port = dict((field, None) for field in PORT_FIELDS)
    port['port'] = number
    return port


def _finish_device(device):
    layers = sorted(set(port['link_layer'] for port in device['ports'] if port['link_layer']))
    device['link_layer'] = layers[0] if len(layers) == 1 else None
    return device


def parse_ibv_devinfo(text):
    """Parse ``ibv_devinfo`` output into ``{'devices': [...], 'warnings': [...]}``.

    Each device has DEVICE_FIELDS; each port PORT_FIELDS (MTUs in bytes,
    ``active`` True for PORT_ACTIVE, ``link_layer`` None when the provider does
    not report one, ``rate_gbps`` None: ibv_devinfo does not print the rate,
    sysfs has it). ``link_layer`` of the device is the ports' common link
    layer, or None when they differ or are unknown.
    """
    if text is None:
        raise ParseError(TOOL, 'no output')
    devices = []
    warnings = []
    device = None
    port = None
    saw_no_devices = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if any(pattern.match(line) for pattern in _WARNING_RES):
            warnings.append(line)
            continue
        if line == _NO_DEVICES:
            saw_no_devices = True
            continue
        for pattern, hint in _ERROR_RES:
            if pattern.match(line):
                raise ToolError(TOOL, line, hint)
        match = _LINE_RE.match(line)
        if not match:
            if device is None:
                raise ParseError(TOOL, 'unexpected line %r' % line[:120])
            continue  # continuation lines of ibv_devinfo -v (capability flag names)
        key, value = match.group('key'), match.group('value').strip()
        if key == 'hca_id':
            if device is not None:
                devices.append(_finish_device(device))
            device = dict((field, None) for field in DEVICE_FIELDS)
            device['name'] = value
            device['ports'] = []
            port = None
            continue
        if device is None:
            raise ParseError(TOOL, 'line %r before any hca_id' % line[:120])
        if key == 'port':
            port = _new_port(_int(value, 'port number'))
            device['ports'].append(port)
            continue
        if port is None:
            if key == 'transport':
                device['transport'] = _enum(value)[0]
            elif key in _INT_DEVICE_KEYS:
                device[key] = _int(value, '%s of %s' % (key, device['name']))
            elif key in DEVICE_FIELDS:
                device[key] = value
            continue
        if key == 'state':
            name, number = _enum(value)
            port['state'] = name if number is None else _STATE_NAMES.get(number, name)
            port['state_id'] = number
            port['active'] = port['state'] == 'PORT_ACTIVE'
        elif key in ('max_mtu', 'active_mtu'):
            port[key] = _int(_enum(value)[0], '%s of %s port %d' % (key, device['name'], port['port']))
        elif key in _INT_PORT_KEYS:
            port[key] = _int(value, '%s of %s port %d' % (key, device['name'], port['port']))
        elif key in ('port_lmc', 'link_layer'):
            port[key] = value
    if device is not None:
        devices.append(_finish_device(device))
    if devices and saw_no_devices:
        raise ParseError(TOOL, 'both devices and "%s"' % _NO_DEVICES)
    if not devices and not saw_no_devices:
        raise ParseError(TOOL, 'no hca_id stanza and no "%s" line' % _NO_DEVICES)
    return {'devices': devices, 'warnings': warnings}


_SYSFS_STATE_RE = re.compile(r'^(?P<id>\d+): (?P<name>[A-Z_]+)$')


def parse_sysfs_port_state(text):
    """``/sys/class/infiniband/<dev>/ports/<n>/state`` (``4: ACTIVE``) -> ('PORT_ACTIVE', 4)."""
    match = _SYSFS_STATE_RE.match((text or '').strip())
    if not match:
        return None, None
    number = int(match.group('id'))
    return _STATE_NAMES.get(number, 'PORT_' + match.group('name')), number


# The kernel's rate_show: "<Gb/s> Gb/sec (<width>X <speed>)", the Gb/s an integer or "<n>.5" (2.5 for 1X SDR).
# Kernels before the SDR name was added, and simulated devices, print no speed name: "10 Gb/sec (4X)".
_SYSFS_RATE_RE = re.compile(r'^(?P<gbps>\d+(?:\.5)?) Gb/sec \((?P<width>\d+X)(?: (?P<speed>[A-Za-z0-9]+))?\)$')


def parse_sysfs_port_rate(text):
    """``/sys/class/infiniband/<dev>/ports/<n>/rate`` (``400 Gb/sec (4X NDR)``) -> (400.0, '4X', 'NDR').

    Empty or unreadable -> (None, None, None). The speed name is None when the
    kernel prints none (``10 Gb/sec (4X)``). Any other text is a ParseError. A
    port that is not active often reads ``10 Gb/sec (4X SDR)``: the rate means
    something for active ports only.
    """
    text = (text or '').strip()
    if not text:
        return None, None, None
    match = _SYSFS_RATE_RE.match(text)
    if not match:
        raise ParseError(TOOL, 'port rate %r is not "<Gb/s> Gb/sec (<width>X <speed>)"' % text[:120])
    return float(match.group('gbps')), match.group('width'), match.group('speed')


def sysfs_port(number, state_text, link_layer_text, rate_text=None):
    """A port dict (PORT_FIELDS) from the sysfs ``state``, ``link_layer`` and ``rate`` files; None fields stay None.

    A ``rate`` text that parse_sysfs_port_rate does not know raises its ParseError.
    """
    port = _new_port(number)
    port['rate_gbps'] = parse_sysfs_port_rate(rate_text)[0]
    port['state'], port['state_id'] = parse_sysfs_port_state(state_text)
    if port['state'] is not None:
        port['active'] = port['state'] == 'PORT_ACTIVE'
    link_layer = (link_layer_text or '').strip()
    port['link_layer'] = link_layer or None
    return port


def sysfs_device(name, fw_ver_text, node_guid_text, ports):
    """A device dict (DEVICE_FIELDS) built from sysfs files; what sysfs does not hold stays None."""
    device = dict((field, None) for field in DEVICE_FIELDS)
    device.update(name=name, fw_ver=(fw_ver_text or '').strip() or None,
                  node_guid=(node_guid_text or '').strip() or None, ports=list(ports))
    device['phys_port_cnt'] = len(device['ports'])
    return _finish_device(device)
