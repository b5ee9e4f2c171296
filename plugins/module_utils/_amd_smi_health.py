# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Health readings from ``amd-smi``'s JSON output: ECC, temperatures, power, throttling,
retired pages, firmware and links.

Everything here is pure: text in, dicts out. No Ansible imports. The JSON
loading, warning lines, tool-error detection and value cleaning are those of
``amd_smi`` (imported, not copied), so every shape and error that the facts
parsers accept is accepted here too: a bare list of GPUs or ``{"gpu_data":
[...]}``, quantities as numbers, ``"12 W"`` strings or ``{"value", "unit"}``
objects, and ``"N/A"`` for what the GPU does not report (returned as None).

Parsers:

* ``parse_amd_smi_metric_json``: ``amd-smi metric --json`` (or a subset such
  as ``metric -p -t -e --json``): ECC totals and blocks, temperatures, power
  and throttle status, violation status, PCIe link and replay counters;
* ``parse_amd_smi_static_health_json``: the health-related part of
  ``amd-smi static --json``: VBIOS, RAS/ECC configuration, limits;
* ``parse_amd_smi_firmware_json``: ``amd-smi firmware --json``;
* ``parse_amd_smi_bad_pages_json``: ``amd-smi bad-pages --json`` (retired,
  pending and unreservable pages);
* ``parse_amd_smi_topology_json``: ``amd-smi topology --json`` in the
  ROCm 6.1 per-GPU maps and in the later ``links`` list.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.module_utils._amd_smi import (
    TOOL,
    _clean,
    _section,
    _to_int,
    load_gpu_entries,
)
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, normalize_pci_address

_FLOAT_RE = re.compile(r'^\s*(?P<num>[+-]?[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>[A-Za-z%/]+)?\s*$')
_POWER_UNITS = {'w': 1.0, 'mw': 1e-3, 'uw': 1e-6}
_ECC_TOTALS = (
    ('correctable', ('total_correctable_count', 'correctable_count', 'correctable')),
    ('uncorrectable', ('total_uncorrectable_count', 'uncorrectable_count', 'uncorrectable')),
    ('deferred', ('total_deferred_count', 'deferred_count', 'deferred')),
    ('cache_correctable', ('cache_correctable_count',)),
    ('cache_uncorrectable', ('cache_uncorrectable_count',)),
)
_ECC_BLOCK = (('correctable', 'correctable_count'), ('uncorrectable', 'uncorrectable_count'),
              ('deferred', 'deferred_count'))
_PCIE_INTS = ('replay_count', 'l0_to_recovery_count', 'replay_roll_over_count', 'nak_sent_count',
              'nak_received_count')
_NO_BAD_PAGES = 'no bad pages found'
_ADDRESS_RE = re.compile(r'^(?:0[xX][0-9a-fA-F]+|[1-9][0-9]*|0)$')
_GPU_KEY_RE = re.compile(r'^gpu_(?P<index>\d+)$')


def _to_float(value, unit_scale=None):
    """A float from a number, ``"12.5 W"`` or ``{"value": 12.5, "unit": "W"}``; None when unknown.

    ``unit_scale`` maps lower-case units to a factor (for example mW to W);
    a unit it does not know makes the value None rather than a wrong figure.
    """
    unit = None
    if isinstance(value, dict):
        unit = _clean(value.get('unit'))
        value = value.get('value')
    if value is None or isinstance(value, (bool, dict, list)):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        text = _clean(value)
        if text is None:
            return None
        match = _FLOAT_RE.match(text)
        if not match:
            return None
        number = float(match.group('num'))
        unit = unit or match.group('unit')
    if unit_scale is not None and unit is not None:
        scale = unit_scale.get(unit.lower())
        if scale is None:
            return None
        number *= scale
    return number


def _status(value):
    """ACTIVE/NOT ACTIVE (or a list of them, one per partition) as a bool; None when unknown."""
    if isinstance(value, list):
        flags = [_status(item) for item in value]
        known = [flag for flag in flags if flag is not None]
        return any(known) if known else None
    text = _clean(value)
    if text is None:
        return None
    text = text.upper()
    if text in ('ACTIVE', 'TRUE', 'YES'):
        return True
    if text in ('NOT ACTIVE', 'INACTIVE', 'FALSE', 'NO'):
        return False
    return None


def _first(section, names):
    for name in names:
        if name in section:
            return section[name]
    return None


def _ecc(entry):
    ecc = _section(entry, 'ecc')
    if not ecc:
        return None
    return dict((key, _to_int(_first(ecc, names))) for key, names in _ECC_TOTALS)


def _ecc_blocks(entry):
    blocks = _section(entry, 'ecc_blocks')
    result = {}
    for name in sorted(blocks):
        block = blocks[name]
        if isinstance(block, dict):
            result[name] = dict((key, _to_int(block.get(field))) for key, field in _ECC_BLOCK)
    return result


def _temperatures(entry):
    temperature = _section(entry, 'temperature')
    return dict((name, _to_float(temperature[name], {'c': 1.0})) for name in sorted(temperature))


def _power(entry):
    power = _section(entry, 'power')
    if not power:
        return None
    throttle = _clean(power.get('throttle_status'))
    throttled = None
    if throttle is not None:
        throttled = {'THROTTLED': True, 'UNTHROTTLED': False}.get(throttle.upper())
    return {
        'socket_power_w': _to_float(power.get('socket_power'), _POWER_UNITS),
        'power_management': _clean(power.get('power_management')),
        'throttle_status': throttle,
        'throttled': throttled,
    }


def _violations(entry):
    throttle = _section(entry, 'throttle')
    result = {}
    for key in sorted(throttle):
        if key.endswith('_violation_status'):
            result[key[:-len('_violation_status')]] = _status(throttle[key])
    return result


def _pcie(entry):
    pcie = _section(entry, 'pcie')
    if not pcie:
        return None
    result = {
        'width': _to_int(pcie.get('width')),
        'speed_gts': _to_float(pcie.get('speed'), {'gt/s': 1.0}),
    }
    for key in _PCIE_INTS:
        result[key] = _to_int(pcie.get(key))
    return result


def parse_amd_smi_metric_json(text):
    """Parse ``amd-smi metric --json`` (all of it or some of its sections).

    Returns ``{'gpus': [...], 'warnings': [...]}`` ordered by index; each GPU
    has ``gpu``, ``ecc`` (correctable, uncorrectable, deferred,
    cache_correctable, cache_uncorrectable; None when the section is
    absent), ``ecc_blocks`` ({block: correctable, uncorrectable, deferred}),
    ``temperature_c`` ({sensor: degrees}), ``power`` (socket_power_w,
    power_management, throttle_status, throttled; None when absent),
    ``violations`` ({prochot/ppt/socket_thermal/...: active}) and ``pcie``
    (width, speed_gts and the replay/recovery/NAK counters; None when
    absent). Counters are ints, readings floats, None where amd-smi says N/A.
    """
    what = 'amd-smi metric --json'
    entries, warnings = load_gpu_entries(text, what)
    gpus = []
    for entry in entries:
        gpus.append({
            'gpu': _to_int(entry.get('gpu')),
            'ecc': _ecc(entry),
            'ecc_blocks': _ecc_blocks(entry),
            'temperature_c': _temperatures(entry),
            'power': _power(entry),
            'violations': _violations(entry),
            'pcie': _pcie(entry),
        })
    gpus.sort(key=lambda gpu: gpu['gpu'])
    return {'gpus': gpus, 'warnings': warnings}


def parse_amd_smi_static_health_json(text):
    """The health-related part of ``amd-smi static --json``.

    Returns ``{'gpus': [...], 'warnings': [...]}``; each GPU has ``gpu``,
    ``vbios`` (name, version, part_number, build_date), ``ras``
    (eeprom_version, bad_page_threshold, poison_schema, ecc_blocks_enabled:
    {block: bool}; None when amd-smi printed no RAS section) and ``limits``
    (power_cap_w and the slowdown/shutdown temperatures in degrees C).
    """
    what = 'amd-smi static --json'
    entries, warnings = load_gpu_entries(text, what)
    gpus = []
    for entry in entries:
        vbios = _section(entry, 'vbios')
        ras = _section(entry, 'ras')
        limit = _section(entry, 'limit')
        ras_result = None
        if ras:
            state = ras.get('ecc_block_state') if isinstance(ras.get('ecc_block_state'), dict) else {}
            ras_result = {
                'eeprom_version': _clean(ras.get('eeprom_version')),
                'bad_page_threshold': _to_int(ras.get('bad_page_threshold')),
                'poison_schema': _clean(ras.get('poison_schema')),
                'ecc_blocks_enabled': dict((name, {'ENABLED': True, 'DISABLED': False}.get(
                    (_clean(value) or '').upper())) for name, value in sorted(state.items())),
            }
        limits = {'power_cap_w': _to_float(limit.get('socket_power', limit.get('max_power')), _POWER_UNITS)}
        for key in sorted(limit):
            if key.endswith('_temperature'):
                limits[key + '_c'] = _to_float(limit[key], {'c': 1.0})
        gpus.append({
            'gpu': _to_int(entry.get('gpu')),
            'vbios': {
                'name': _clean(vbios.get('name')),
                'version': _clean(vbios.get('version', vbios.get('vbios_version'))),
                'part_number': _clean(vbios.get('part_number')),
                'build_date': _clean(vbios.get('build_date')),
            },
            'ras': ras_result,
            'limits': limits,
        })
    gpus.sort(key=lambda gpu: gpu['gpu'])
    return {'gpus': gpus, 'warnings': warnings}


def parse_amd_smi_firmware_json(text):
    """Parse ``amd-smi firmware --json``.

    amd-smi prints ``{"gpu": 0, "fw_list": [{"fw_id": "SMU", "fw_version":
    "..."}, ...]}`` per GPU (older releases wrap each entry as ``{"FW 0":
    {...}}``). Returns ``{'gpus': [{'gpu', 'firmware': {fw_id: version}}],
    'warnings'}``; ``firmware`` is None when amd-smi printed ``"N/A"``.
    """
    what = 'amd-smi firmware --json'
    entries, warnings = load_gpu_entries(text, what, single=True)
    gpus = []
    for entry in entries:
        fw_list = entry.get('fw_list')
        firmware = None
        if isinstance(fw_list, list):
            firmware = {}
            for item in fw_list:
                if isinstance(item, dict) and len(item) == 1 and isinstance(list(item.values())[0], dict):
                    item = list(item.values())[0]
                if not isinstance(item, dict):
                    raise ParseError(TOOL, '"%s" printed a firmware entry that is not an object: %r' % (what, item))
                name = _clean(item.get('fw_id', item.get('fw_name')))
                if name is None:
                    raise ParseError(TOOL, '"%s" printed a firmware entry without "fw_id": %r' % (what, item))
                firmware[name] = _clean(item.get('fw_version'))
        elif _clean(fw_list) is not None:
            raise ParseError(TOOL, '"%s" printed "fw_list" as %r, expected a list' % (what, fw_list))
        gpus.append({'gpu': _to_int(entry.get('gpu')), 'firmware': firmware})
    gpus.sort(key=lambda gpu: gpu['gpu'])
    return {'gpus': gpus, 'warnings': warnings}


def _address(value):
    """A page address printed as a number or as "0x..." text; None when unknown."""
    text = _clean(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if text is not None and _ADDRESS_RE.match(text):
        return int(text, 0)
    return None


def _pages(value, what, key):
    """A list of pages; [] for "No bad pages found.", None for N/A (not readable)."""
    if isinstance(value, dict):
        value = [value]
    if isinstance(value, list):
        pages = []
        for page in value:
            if not isinstance(page, dict):
                raise ParseError(TOOL, '"%s" printed a %s page that is not an object: %r' % (what, key, page))
            pages.append({
                'page_address': _address(page.get('page_address')),
                'page_size': _to_int(page.get('page_size')),
                'status': _clean(page.get('status')),
            })
        return pages
    text = _clean(value)
    if text is None:
        return None
    if text.strip('.').lower() == _NO_BAD_PAGES:
        return []
    raise ParseError(TOOL, '"%s" printed %s as %r: expected a list of pages or "No bad pages found."'
                     % (what, key, value))


def parse_amd_smi_bad_pages_json(text):
    """Parse ``amd-smi bad-pages --json``.

    The shape is that of amd-smi's own ``bad_pages`` command
    (amdsmi_cli/amdsmi_commands.py): per GPU ``retired``, ``pending`` and
    ``un_res`` are a page object, a list of them, ``"No bad pages found."``
    or ``"N/A"``. Returns ``{'gpus': [{'gpu', 'retired', 'pending',
    'unreservable'}], 'warnings'}`` with lists of pages (page_address,
    page_size, status), [] when there are none and None when the GPU could
    not say.
    """
    what = 'amd-smi bad-pages --json'
    entries, warnings = load_gpu_entries(text, what)
    gpus = []
    for entry in entries:
        gpus.append({
            'gpu': _to_int(entry.get('gpu')),
            'retired': _pages(entry.get('retired'), what, 'retired'),
            'pending': _pages(entry.get('pending'), what, 'pending'),
            'unreservable': _pages(entry.get('un_res'), what, 'un_res'),
        })
    gpus.sort(key=lambda gpu: gpu['gpu'])
    return {'gpus': gpus, 'warnings': warnings}


def _link_enabled(value):
    text = _clean(value)
    if text is None:
        return None
    return {'ENABLED': True, 'DISABLED': False}.get(text.upper())


def _links_from_maps(entry, what):
    """ROCm 6.1: per-GPU maps keyed "gpu_N" for link_accessibility, weight, hops, link_type."""
    maps = dict((name, _section(entry, name)) for name in ('link_accessibility', 'weight', 'hops', 'link_type'))
    peers = set()
    for section in maps.values():
        for key in section:
            match = _GPU_KEY_RE.match(key)
            if not match:
                raise ParseError(TOOL, '"%s" printed a peer key %r, expected "gpu_<index>"' % (what, key))
            peers.add(int(match.group('index')))
    links = []
    for peer in sorted(peers):
        key = 'gpu_%d' % peer
        links.append({
            'gpu': peer,
            'pci_address': None,
            'link_type': _clean(maps['link_type'].get(key)),
            'enabled': _link_enabled(maps['link_accessibility'].get(key)),
            'hops': _to_int(maps['hops'].get(key)),
            'weight': _to_int(maps['weight'].get(key)),
        })
    return links


def parse_amd_smi_topology_json(text):
    """Parse ``amd-smi topology --json`` (both layouts).

    Returns ``{'gpus': [{'gpu', 'pci_address', 'links': [...]}], 'warnings'}``;
    each link has the peer ``gpu``, its ``pci_address``, ``link_type`` (SELF,
    XGMI, PCIE), ``enabled`` (link status or accessibility), ``hops`` and
    ``weight`` (None where not printed).
    """
    what = 'amd-smi topology --json'
    entries, warnings = load_gpu_entries(text, what)
    gpus = []
    for entry in entries:
        if isinstance(entry.get('links'), list):
            links = []
            for link in entry['links']:
                if not isinstance(link, dict) or _to_int(link.get('gpu')) is None:
                    raise ParseError(TOOL, '"%s" printed a link without a numeric "gpu": %r' % (what, link))
                links.append({
                    'gpu': _to_int(link.get('gpu')),
                    'pci_address': normalize_pci_address(_clean(link.get('bdf'))),
                    'link_type': _clean(link.get('link_type')),
                    'enabled': _link_enabled(link.get('link_status')),
                    'hops': _to_int(link.get('num_hops')),
                    'weight': _to_int(link.get('weight')),
                })
        elif any(name in entry for name in ('link_accessibility', 'link_type', 'hops', 'weight')):
            links = _links_from_maps(entry, what)
        else:
            raise ParseError(TOOL, '"%s" printed a GPU without "links" or "link_type" (keys: %s)'
                             % (what, ', '.join(sorted(str(key) for key in entry)[:10])))
        links.sort(key=lambda link: link['gpu'])
        gpus.append({'gpu': _to_int(entry.get('gpu')), 'pci_address': normalize_pci_address(_clean(entry.get('bdf'))),
                     'links': links})
    gpus.sort(key=lambda gpu: gpu['gpu'])
    return {'gpus': gpus, 'warnings': warnings}
