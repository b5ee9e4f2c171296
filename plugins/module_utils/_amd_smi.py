# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for AMD's ``amd-smi`` tool: ``static --json``, ``list --json`` and ``version``.

Everything here is pure: text in, dicts out. No Ansible imports.

The JSON layout of ``amd-smi`` moved between releases and the parsers accept
every shape seen in real captures:

* a top-level list of per-GPU objects (``[{"gpu": 0, "asic": {...}, ...}]``),
  which older releases print and several newer builds still do;
* the same list wrapped in an object, ``{"gpu_data": [...]}``;
* quantities either as plain numbers (older releases, megabytes for sizes),
  as strings with a unit (``"196592 MB"``) or as ``{"value": x, "unit": "MB"}``;
* ``"N/A"`` (or an ``AMDSMI_STATUS_*`` string) wherever a value is unknown.

``amd-smi`` prints warnings on stdout before the JSON (missing render/video
group membership, Python ``SyntaxWarning`` lines from its own package); they
are returned in ``warnings`` and do not stop the parse. When the tool prints
an error instead of data the parsers raise ``ToolError`` quoting its line;
output in no known shape raises ``ParseError``.
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

TOOL = 'amd-smi'

# Tool error lines, by what the user has to do about them. Checked in this
# order: the first pattern that matches any line decides the hint.
_PERMISSION_RE = re.compile(
    r'(?P<permission>AMDSMI_STATUS_NO_PERM|PermissionError|Permission denied|requires elevation'
    r'|missing the following required groups)',
    re.IGNORECASE)
_DRIVER_RE = re.compile(
    r'(?P<driver>AMDSMI_STATUS_DRIVER_NOT_LOADED|Unable to detect any GPU devices'
    r'|driver not initiali[sz]ed|amdgpu not found in modules)',
    re.IGNORECASE)
_RUNTIME_RE = re.compile(
    r'(?P<runtime>AMDSMI_STATUS_[A-Z_]+|AmdSmi[A-Za-z]*Exception'
    r'|^\s*(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception):)')
_ERROR_RULES = (
    (_PERMISSION_RE, HINT_PERMISSION),
    (_DRIVER_RE, HINT_DRIVER),
    (_RUNTIME_RE, HINT_RUNTIME),
)

# A value amd-smi prints when it could not read something.
_UNKNOWN_RE = re.compile(r'^(?:N/?A|NONE|UNKNOWN|AMDSMI_STATUS_\w+.*)?$', re.IGNORECASE)
_INT_RE = re.compile(r'^(?P<int>[+-]?[0-9]+)$')
# amdgpu versions: "6.14.14", "6.12.12", or, for the in-kernel driver, the
# kernel release ("7.0.0-3-pve", "6.17.1-300.fc43.x86_64") or the whole
# kernel banner with its spaces removed ("Linuxversion6.14.0-24-generic(buildd@...").
_DRIVER_VERSION_RE = re.compile(r'^(?:Linux\s*version\s*)?(?P<version>[0-9]+(?:\.[0-9]+)+[^\s()|]*)', re.IGNORECASE)
_VERSION_LINE_RE = re.compile(r'^\s*(?P<line>AMDSMI Tool\s*:.*)$', re.IGNORECASE)
_VERSION_FIELD_RE = re.compile(r'^\s*(?P<key>[^:]+?)\s*:\s*(?P<value>.*?)\s*$')
_VERSION_KEYS = {
    'amdsmi tool': 'tool_version',
    'amdsmi library version': 'library_version',
    'rocm version': 'rocm_version',
    'amdgpu version': 'driver_version',
}

_NOT_FOUND = object()


def _as_text(text):
    """Return the tool output as str; bytes are decoded, anything else is refused."""
    if isinstance(text, bytes):
        return text.decode('utf-8', 'replace')
    if not isinstance(text, str):
        raise ParseError(TOOL, 'expected the text the tool printed, got %s' % type(text).__name__)
    return text


def _clean(value):
    """A string value, or None where amd-smi says it does not know (N/A, AMDSMI_STATUS_*)."""
    if value is None or isinstance(value, (bool, dict, list)):
        return None
    text = str(value).strip()
    if _UNKNOWN_RE.match(text):
        return None
    return text


def _to_int(value):
    """An int from a number, a numeric string or a {"value": x} object; None otherwise."""
    if isinstance(value, dict):
        value = value.get('value')
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else None
    match = _INT_RE.match(str(value).strip())
    if match:
        return int(match.group('int'))
    return None


def _size_bytes(value, default_unit='MB'):
    """Bytes from ``{"value": 65520, "unit": "MB"}``, ``65520`` (MB) or ``"65520 MB"``; None if unknown."""
    unit = default_unit
    if isinstance(value, dict):
        unit = _clean(value.get('unit')) or default_unit
        value = value.get('value')
    if value is None or isinstance(value, (bool, dict, list)):
        return None
    if isinstance(value, (int, float)):
        if value < 0:
            return None
        return size_to_bytes('%s %s' % (value, unit))
    text = _clean(value)
    if text is None:
        return None
    return size_to_bytes(text, unit)


def _section(entry, name):
    """A sub-object of a GPU entry, or {} when amd-smi printed "N/A" or left it out."""
    value = entry.get(name)
    return value if isinstance(value, dict) else {}


def normalize_driver_version(value):
    """The amdgpu version amd-smi printed, or None.

    With the in-kernel driver amd-smi prints the kernel release or the kernel
    banner with its spaces removed; the release is kept, the banner is cut
    down to it (``Linuxversion6.14.0-24-generic(...)`` -> ``6.14.0-24-generic``).
    """
    text = _clean(value)
    if text is None:
        return None
    match = _DRIVER_VERSION_RE.match(text)
    if not match:
        return None
    return match.group('version')


def _find_error(lines):
    """(line, hint) for the first tool error among ``lines``, by hint priority; None if there is none."""
    for pattern, hint in _ERROR_RULES:
        for line in lines:
            if pattern.search(line):
                return line.strip(), hint
    return None


def _raise_for_errors(lines):
    found = _find_error(lines)
    if found:
        raise ToolError(TOOL, found[0], found[1])


def _split_json(text):
    """Find the JSON document amd-smi printed.

    Returns ``(document, other_lines)`` where ``other_lines`` are the
    non-empty lines around it (warnings), or ``(_NOT_FOUND, lines)``. The
    document must start at the beginning of a line and be followed only by
    whitespace or further plain lines (returned as warnings too); a cut-off
    document is not found.
    """
    decoder = json.JSONDecoder()
    offset = 0
    for line in text.splitlines(True):
        if line[:1] in ('[', '{'):
            try:
                document, end = decoder.raw_decode(text, offset)
            except ValueError:
                document, end = _NOT_FOUND, None
            if document is not _NOT_FOUND:
                rest = text[end:]
                # A fragment of a larger document follows a nested value; a cut-off document never decodes.
                if rest.lstrip()[:1] not in (',', ']', '}', ':'):
                    others = [x.strip() for x in (text[:offset] + '\n' + rest).splitlines() if x.strip()]
                    return document, others
        offset += len(line)
    return _NOT_FOUND, [x.strip() for x in text.splitlines() if x.strip()]


def _load(text, what):
    """(document, warnings) from amd-smi JSON output; ToolError or ParseError when there is none."""
    text = _as_text(text)
    if not text.strip():
        raise ParseError(TOOL, 'no output from "%s"' % what)
    document, others = _split_json(text)
    if document is _NOT_FOUND:
        _raise_for_errors(others)
        first = others[0] if others else ''
        raise ParseError(TOOL, 'expected the JSON printed by "%s" (complete, starting on its own line), found: %r'
                         % (what, first[:160]))
    return document, others


def _gpu_entries(document, what):
    """The list of per-GPU objects, from a bare list or from {"gpu_data": [...]}."""
    if isinstance(document, dict):
        if 'gpu_data' not in document:
            raise ParseError(TOOL, '"%s" printed a JSON object without "gpu_data" (keys: %s)'
                             % (what, ', '.join(sorted(str(k) for k in document)[:10])))
        entries = document['gpu_data']
    else:
        entries = document
    if not isinstance(entries, list):
        raise ParseError(TOOL, '"%s" printed JSON that is not a list of GPUs (%s)' % (what, type(entries).__name__))
    for entry in entries:
        if not isinstance(entry, dict):
            raise ParseError(TOOL, '"%s" printed a GPU entry that is not an object: %r' % (what, entry))
        if _to_int(entry.get('gpu')) is None:
            raise ParseError(TOOL, '"%s" printed a GPU entry without a numeric "gpu" index: %r'
                             % (what, sorted(entry)[:10]))
    return entries


def _check_data(entries, warnings):
    """No GPUs and an error line among the warnings means the tool failed."""
    if not entries:
        _raise_for_errors(warnings)


def load_gpu_entries(text, what, single=False):
    """(per-GPU objects, warnings) of amd-smi JSON output, checked: the prologue of every amd-smi parser.

    ``single`` takes one bare GPU object (``{"gpu": 0, ...}``, as some commands print for one GPU) as a list of one.
    """
    document, warnings = _load(text, what)
    if single and isinstance(document, dict) and 'gpu' in document:
        document = [document]
    entries = _gpu_entries(document, what)
    _check_data(entries, warnings)
    return entries, warnings


def _static_gpu(entry):
    asic = _section(entry, 'asic')
    bus = _section(entry, 'bus')
    numa = _section(entry, 'numa')
    vram = _section(entry, 'vram')
    partition = _section(entry, 'partition')
    numa_node = _to_int(numa.get('node'))
    if numa_node is not None and numa_node < 0:
        numa_node = None
    vram_size = vram.get('size', vram.get('vram_size'))
    return {
        'gpu': _to_int(entry.get('gpu')),
        'gfx_target': normalize_gfx(_clean(asic.get('target_graphics_version'))),
        'marketing_name': _clean(asic.get('market_name')),
        'numa_node': numa_node,
        'vram_bytes': _size_bytes(vram_size),
        'pci_address': normalize_pci_address(_clean(bus.get('bdf'))),
        'compute_units': _to_int(asic.get('num_compute_units')),
        'compute_partition': _clean(partition.get('compute_partition')),
        'memory_partition': _clean(partition.get('memory_partition')),
        'uuid': _clean(entry.get('uuid')),
    }


def parse_amd_smi_static_json(text):
    """Parse ``amd-smi static --json``.

    Returns ``{'driver_version': str or None, 'gpus': [...], 'warnings': [...]}``
    with the GPUs ordered by their amd-smi index; each GPU has ``gpu``,
    ``gfx_target``, ``marketing_name``, ``numa_node``, ``vram_bytes``,
    ``pci_address``, ``compute_units``, ``compute_partition``,
    ``memory_partition`` and ``uuid`` (None where amd-smi does not say).
    """
    what = 'amd-smi static --json'
    entries, warnings = load_gpu_entries(text, what)
    gpus = sorted((_static_gpu(entry) for entry in entries), key=lambda gpu: gpu['gpu'])
    driver_version = None
    for entry in sorted(entries, key=lambda item: _to_int(item.get('gpu'))):
        driver = _section(entry, 'driver')
        driver_version = normalize_driver_version(driver.get('version', driver.get('driver_version')))
        if driver_version:
            break
    return {'driver_version': driver_version, 'gpus': gpus, 'warnings': warnings}


def parse_amd_smi_list_json(text):
    """Parse ``amd-smi list --json``.

    Returns ``{'gpus': [...], 'warnings': [...]}`` ordered by index; each GPU
    has ``gpu``, ``pci_address``, ``uuid``, ``kfd_id``, ``node_id`` and
    ``partition_id`` (None where amd-smi does not print them).
    """
    what = 'amd-smi list --json'
    entries, warnings = load_gpu_entries(text, what)
    gpus = []
    for entry in entries:
        gpus.append({
            'gpu': _to_int(entry.get('gpu')),
            'pci_address': normalize_pci_address(_clean(entry.get('bdf'))),
            'uuid': _clean(entry.get('uuid')),
            'kfd_id': _to_int(entry.get('kfd_id')),
            'node_id': _to_int(entry.get('node_id')),
            'partition_id': _to_int(entry.get('partition_id')),
        })
    gpus.sort(key=lambda gpu: gpu['gpu'])
    return {'gpus': gpus, 'warnings': warnings}


def _version_from_line(line):
    result = {'tool_version': None, 'library_version': None, 'rocm_version': None, 'driver_version': None}
    for field in line.split('|'):
        match = _VERSION_FIELD_RE.match(field)
        if not match:
            continue
        key = _VERSION_KEYS.get(' '.join(match.group('key').lower().split()))
        if key == 'driver_version':
            result[key] = normalize_driver_version(match.group('value'))
        elif key:
            result[key] = _clean(match.group('value'))
    if result['tool_version'] is None:
        raise ParseError(TOOL, 'version line without a tool version: %r' % line[:160])
    return result


def _version_from_json(document):
    if isinstance(document, list) and len(document) == 1:
        document = document[0]
    if not isinstance(document, dict) or 'version' not in document:
        raise ParseError(TOOL, '"amd-smi version --json" printed JSON without a "version" key: %r' % (document,))
    result = {
        'tool_version': _clean(document.get('version')),
        'library_version': _clean(document.get('amdsmi_library_version')),
        'rocm_version': _clean(document.get('rocm_version')),
        'driver_version': normalize_driver_version(document.get('amdgpu_version')),
    }
    if result['tool_version'] is None:
        raise ParseError(TOOL, '"amd-smi version --json" printed no tool version: %r' % (document,))
    return result


def parse_amd_smi_version(text):
    """Parse ``amd-smi version`` (text) or ``amd-smi version --json``.

    Returns ``{'tool_version', 'library_version', 'rocm_version',
    'driver_version', 'warnings'}``; values are None where amd-smi says N/A.
    ``driver_version`` is the amdgpu version when the tool prints it. The
    version line is printed even when the driver is missing; the driver
    errors printed before it are returned in ``warnings``.
    """
    text = _as_text(text)
    if not text.strip():
        raise ParseError(TOOL, 'no output from "amd-smi version"')
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for index, line in enumerate(lines):
        match = _VERSION_LINE_RE.match(line)
        if match:
            result = _version_from_line(match.group('line'))
            result['warnings'] = lines[:index] + lines[index + 1:]
            return result
    document, others = _split_json(text)
    if document is not _NOT_FOUND:
        result = _version_from_json(document)
        result['warnings'] = others
        return result
    _raise_for_errors(lines)
    raise ParseError(TOOL, 'expected an "AMDSMI Tool: ... | ROCm version: ..." line, found: %r' % lines[0][:160])
