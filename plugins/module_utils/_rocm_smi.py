# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for ``rocm-smi`` output (text and ``--json``).

Both parsers return the same shape::

    {'driver_version': str or None,
     'gpus': [{'card': int, 'gfx_target': str or None, 'marketing_name': str or None,
               'numa_node': int or None, 'vram_bytes': int or None,
               'pci_address': str or None, 'node': int or None,
               'compute_partition': str or None, 'memory_partition': str or None}, ...]}

with ``gpus`` ordered by card (rocm-smi's device index, ``GPU[N]`` / ``cardN``).

The text parser reads any mix of the sections rocm-smi prints: the concise
table (ROCm 5 ``GPU  Temp ...`` layout and the ROCm 6/7 ``Device  Node  IDs``
layout with the ``Partitions (Mem, Compute, ID)`` column), ``--showproductname``,
``--showtoponuma`` (also inside ``--showtopo``), ``--showmeminfo vram``,
``--showbus``, ``--showdriverversion``, ``--showid``, the partition sections and
``-a``. Lines it does not know inside a recognised output are skipped (rocm-smi
interleaves warnings such as the low-power notice with its data); output with
no rocm-smi structure at all is a ParseError, and a known error line with no
GPU data is a ToolError that quotes the line.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import (
    HINT_DRIVER,
    HINT_PERMISSION,
    HINT_RUNTIME,
    ParseError,
    ToolError,
    normalize_gfx,
    normalize_pci_address,
    size_to_bytes,
)

TOOL = 'rocm-smi'

GPU_FIELDS = ('card', 'gfx_target', 'marketing_name', 'numa_node', 'vram_bytes', 'pci_address',
              'node', 'compute_partition', 'memory_partition')

# Colour escapes: real ones, and the caret spelling `watch` shows for them.
_ANSI_RE = re.compile(r'(?:\x1b\[|\^\[\[?)[0-9;]*[A-Za-z]')
_BANNER_RE = re.compile(r'ROCm System Management Interface|End of ROCm SMI Log')
_RULE_RE = re.compile(r'^(?P<fill>[=\-_]{3,})(?P<title>[^=]*?)[=\-_]*\W*$')
_CONCISE5_HEADER_RE = re.compile(r'^GPU\s+Temp\b')
_CONCISE6_HEADER_RE = re.compile(r'^Device\s+Node\s+IDs\b')
_CONCISE5_ROW_RE = re.compile(r'^(?P<card>\d+)\s+\S')
_CONCISE6_ROW_RE = re.compile(
    r'^(?P<card>\d+)\s+(?P<node>\d+|N/A)\s+(?P<did>0x[0-9a-fA-F]+|N/A),\s+(?P<guid>\d+|N/A)\s+(?P<rest>.*)$')
_PARTITIONS_RE = re.compile(r'(?:^|\s)(?P<mem>[A-Za-z0-9/]+),\s+(?P<compute>[A-Za-z0-9/]+),\s+(?P<pid>\d+|N/A)(?:\s|$)')
_GPU_LINE_RE = re.compile(r'^GPU\s?\[?(?P<card>\d+)\]?\s*:\s*(?P<body>.*)$')
_KEY_VALUE_RE = re.compile(r'^(?P<key>[^:]+?)\s*:\s*(?P<value>.*)$')
_DRIVER_RE = re.compile(r'^Driver version\s*:\s*(?P<version>\S.*?)\s*$', re.IGNORECASE)
_HEX_ID_RE = re.compile(r'^0x[0-9a-fA-F]+$')
_BRACKET_NAME_RE = re.compile(r'^[^\[\]]*\[(?P<name>[^\[\]]+)\]\s*$')
_INT_RE = re.compile(r'^-?\d+$')
_JSON_CARD_RE = re.compile(r'^card:?(?P<card>\d+)$', re.IGNORECASE)

# Known error lines, most specific first: (pattern, hint). The first pattern
# that matches any line wins, and that line is quoted.
_ERROR_PATTERNS = (
    (re.compile(r'Driver not initialized|amdgpu not found in modules', re.IGNORECASE), HINT_DRIVER),
    (re.compile(r'ROCm SMI returned 4\b|RSMI_STATUS_PERMISSION|Permission denied', re.IGNORECASE), HINT_PERMISSION),
    (re.compile(r'ROCm SMI returned \d+', re.IGNORECASE), HINT_RUNTIME),
    (re.compile(r'rsmi_init\(\) failed|Failed to initialize rocm_smi|librocm_smi64\.so', re.IGNORECASE), HINT_RUNTIME),
    (re.compile(r'No AMD GPUs specified|WARNING: No AMD GPUs|No DRM devices (?:detected|available)|'
                r'No JSON data to report', re.IGNORECASE), HINT_DRIVER),
    (re.compile(r'^Traceback \(most recent call last\)'), HINT_RUNTIME),
)

# rocm-smi's own names for the values we keep, lower case, per version.
_NAME_KEYS = {
    'marketing name': 0,
    'market name': 0,
    'device name': 1,
    'card model': 2,
    'card series': 3,
}
_GFX_KEYS = ('gfx version',)
_NODE_KEYS = ('node id',)
_NUMA_KEYS = ('(topology) numa node',)
_VRAM_KEYS = ('vram total memory (b)',)
_PCI_KEYS = ('pci bus',)
_COMPUTE_PARTITION_KEYS = ('compute partition', 'current compute partition')
_MEMORY_PARTITION_KEYS = ('memory partition', 'current memory partition', 'nps mode', 'current nps mode')
_MISSING = frozenset(['', 'n/a', 'none', 'unknown', 'unsupported', 'not supported'])


def _empty_gpu(card):
    gpu = dict((field, None) for field in GPU_FIELDS)
    gpu['card'] = card
    gpu['_names'] = {}
    return gpu


def _value(text):
    """Strip a value and map rocm-smi's placeholders to None."""
    if text is None:
        return None
    text = str(text).strip()
    if text.lower() in _MISSING:
        return None
    return text


def _to_int(text):
    text = _value(text)
    if text is None or not _INT_RE.match(text):
        return None
    return int(text)


def _set_once(gpu, field, value):
    if value is not None and gpu.get(field) is None:
        gpu[field] = value


def _partition(text):
    text = _value(text)
    return text.upper() if text is not None else None


def _apply_key(gpu, key, value):
    """Store one ``key: value`` pair that rocm-smi printed for a GPU."""
    key = ' '.join(key.lower().split())
    if key in _NAME_KEYS:
        value = _value(value)
        if value is not None:
            gpu['_names'].setdefault(_NAME_KEYS[key], value)
    elif key in _GFX_KEYS:
        _set_once(gpu, 'gfx_target', normalize_gfx(_value(value)))
    elif key in _NODE_KEYS:
        _set_once(gpu, 'node', _to_int(value))
    elif key in _NUMA_KEYS:
        numa = _to_int(value)
        _set_once(gpu, 'numa_node', numa if numa is not None and numa >= 0 else None)
    elif key in _VRAM_KEYS:
        value = _value(value)
        _set_once(gpu, 'vram_bytes', size_to_bytes(value, 'B') if value is not None else None)
    elif key in _PCI_KEYS:
        _set_once(gpu, 'pci_address', normalize_pci_address(_value(value)))
    elif key in _COMPUTE_PARTITION_KEYS:
        _set_once(gpu, 'compute_partition', _partition(value))
    elif key in _MEMORY_PARTITION_KEYS:
        _set_once(gpu, 'memory_partition', _partition(value))


def _product_name(names):
    """Pick the most specific real product name among the ones rocm-smi printed.

    Order: a marketing/device name (ROCm 6+ ``Device Name``, from the KFD
    market name), then ``Card Model`` when it is a name rather than a PCI id
    (old releases), then ``Card Series``. A pci.ids style ``Codename [Product]``
    series is reduced to the product in brackets. ``Card SKU`` is a board part
    number (D67301, M3000100), never a product name.
    """
    for rank in sorted(names):
        name = names[rank]
        if _HEX_ID_RE.match(name):
            continue
        match = _BRACKET_NAME_RE.match(name)
        if match:
            name = match.group('name').strip()
        if name:
            return name
    return None


def _finish(gpus, driver_version):
    result = []
    for card in sorted(gpus):
        gpu = gpus[card]
        gpu['marketing_name'] = _product_name(gpu.pop('_names'))
        result.append(gpu)
    return {'driver_version': driver_version, 'gpus': result}


def _find_error(lines):
    """Return (line, hint) of the most specific known error line, or None."""
    for pattern, hint in _ERROR_PATTERNS:
        for line in lines:
            if pattern.search(line):
                return line.strip(), hint
    return None


def _lines(text, parser):
    if text is None:
        raise ParseError(TOOL, '%s got no output at all' % parser)
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    text = _ANSI_RE.sub('', text.replace('\r\n', '\n').replace('\r', '\n'))
    return [line.rstrip() for line in text.split('\n')]


def parse_rocm_smi_text(text):
    """Parse the text output of one or several ``rocm-smi`` runs."""
    lines = _lines(text, 'parse_rocm_smi_text')
    if not any(line.strip() for line in lines):
        raise ParseError(TOOL, 'the output is empty')

    gpus = {}
    driver_version = None
    recognised = False
    table = None       # None, 'v5' or 'v6' while inside a concise table
    table_rows = 0

    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if _BANNER_RE.search(line):
            recognised = True

        rule = _RULE_RE.match(line)
        if rule:
            if table is not None and (table_rows or rule.group('title').strip()):
                table = None
            continue

        if _CONCISE6_HEADER_RE.match(line):
            table, table_rows, recognised = 'v6', 0, True
            continue
        if _CONCISE5_HEADER_RE.match(line):
            table, table_rows, recognised = 'v5', 0, True
            continue

        if table == 'v6':
            row = _CONCISE6_ROW_RE.match(line)
            if row:
                table_rows += 1
                card = int(row.group('card'))
                gpu = gpus.setdefault(card, _empty_gpu(card))
                _set_once(gpu, 'node', _to_int(row.group('node')))
                parts = _PARTITIONS_RE.search(row.group('rest'))
                if parts:
                    _set_once(gpu, 'memory_partition', _partition(parts.group('mem')))
                    _set_once(gpu, 'compute_partition', _partition(parts.group('compute')))
                continue
        elif table == 'v5':
            row = _CONCISE5_ROW_RE.match(line)
            if row:
                table_rows += 1
                card = int(row.group('card'))
                gpus.setdefault(card, _empty_gpu(card))
                continue

        driver = _DRIVER_RE.match(line)
        if driver:
            recognised = True
            driver_version = _value(driver.group('version')) or driver_version
            continue

        gpu_line = _GPU_LINE_RE.match(line)
        if gpu_line:
            recognised = True
            card = int(gpu_line.group('card'))
            gpu = gpus.setdefault(card, _empty_gpu(card))
            pair = _KEY_VALUE_RE.match(gpu_line.group('body'))
            if pair:
                _apply_key(gpu, pair.group('key'), pair.group('value'))

    if not gpus:
        error = _find_error(lines)
        if error:
            raise ToolError(TOOL, error[0], error[1])
        if not recognised:
            first = next(line.strip() for line in lines if line.strip())
            raise ParseError(TOOL, 'no rocm-smi banner, table or GPU[N] line found; first line: "%s"' % first[:200])
    return _finish(gpus, driver_version)


def parse_rocm_smi_json(text):
    """Parse ``rocm-smi ... --json`` output.

    rocm-smi prints one JSON object: ``{"card0": {...}, "system": {"Driver
    version": ...}}``, keys being the same labels as the text output (their
    case changed between releases: ``Card series`` in ROCm 5, ``Card Series``
    in ROCm 6). Warning lines printed before it (stderr merged into stdout)
    are skipped.
    """
    lines = _lines(text, 'parse_rocm_smi_json')
    if not any(line.strip() for line in lines):
        raise ParseError(TOOL, 'the output is empty')
    joined = '\n'.join(lines)

    start = None
    for match in re.finditer(r'(?m)^\s*\{', joined):
        start = match.start()
        break
    if start is None:
        error = _find_error(lines)
        if error:
            raise ToolError(TOOL, error[0], error[1])
        not_supported = [line.strip() for line in lines if line.strip().startswith('NOT_SUPPORTED')]
        if not_supported:
            raise ParseError(TOOL, 'rocm-smi refused JSON for the requested flags: "%s"' % not_supported[0])
        raise ParseError(TOOL, 'no JSON object found in the output')

    try:
        data, _end = json.JSONDecoder().raw_decode(joined[start:].lstrip())
    except ValueError as exc:
        error = _find_error(lines)
        if error:
            raise ToolError(TOOL, error[0], error[1])
        raise ParseError(TOOL, 'invalid JSON: %s' % exc)

    gpus = {}
    driver_version = None
    known = False
    for key, value in data.items():
        card_match = _JSON_CARD_RE.match(str(key))
        if card_match:
            if not isinstance(value, dict):
                raise ParseError(TOOL, 'entry "%s" is not an object' % key)
            known = True
            card = int(card_match.group('card'))
            gpu = gpus.setdefault(card, _empty_gpu(card))
            for field, field_value in value.items():
                if isinstance(field_value, (dict, list)):
                    continue
                _apply_key(gpu, str(field).rstrip(':'), field_value)
        elif str(key).lower() == 'system':
            if not isinstance(value, dict):
                raise ParseError(TOOL, 'entry "system" is not an object')
            known = True
            for field, field_value in value.items():
                if ' '.join(str(field).lower().split()) == 'driver version' and not isinstance(field_value, (dict, list)):
                    driver_version = _value(field_value)
    if not known:
        raise ParseError(TOOL, 'the JSON object has no "cardN" or "system" entry (keys: %s)' % ', '.join(sorted(str(k) for k in data)[:10]))
    return _finish(gpus, driver_version)
