# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the text output of ``rocminfo`` (plain or ``--support``).

rocminfo has no machine-readable output: it prints a header, then one block
per HSA agent (CPU, GPU, DSP/AIE), each introduced by ``Agent N`` between
rows of asterisks, and ends with ``*** Done ***``. When the runtime cannot
start it prints its reasons instead (module not loaded, /dev/kfd not
accessible, an HSA call failure). This module turns either form into data or
a precise error. Pure functions only; no Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import (
    APU_GFX_TARGETS,
    HINT_DRIVER,
    HINT_PERMISSION,
    HINT_RUNTIME,
    ParseError,
    ToolError,
    normalize_gfx,
    pci_address_from_bdfid,
)

TOOL = 'rocminfo'

HINT_NO_KFD = ('/dev/kfd does not exist: the amdgpu driver has not created the compute device (check '
               '"lsmod | grep amdgpu" and "dmesg | grep -i kfd"), or, inside a container, /dev/kfd and /dev/dri '
               'were not passed in (--device /dev/kfd --device /dev/dri).')
HINT_KFD_REFUSED = ('The amdgpu driver refused to open /dev/kfd: check "dmesg | grep -i kfd" for the reason (a GPU the '
                    'installed driver does not support, failed firmware loading, or another driver holding the device).')
HINT_NO_USER = ('rocminfo could not look up the user it runs as (no passwd entry for the UID, common in containers '
                'started with an arbitrary --user): run it as a named user in the "render" and "video" groups.')
HINT_WSL = ('rocminfo runs under WSL, where GPUs are reached through the Windows driver: install AMD\'s driver with '
            'WSL support and the ROCm packages for WSL, or run on a bare-metal Linux host.')

# Colour codes: real escapes, and the caret form (^[[31m) they take when pasted from a terminal.
_ANSI_RE = re.compile(r'(?:\x1b|\^\[)\[[0-9;]*[A-Za-z]')
_AGENT_RE = re.compile(r'^\s*Agent\s+(?P<num>[0-9]+)\s*$')
_STARS_RE = re.compile(r'^\s*\*{3,}\s*$')
_DONE_RE = re.compile(r'^\s*\*\*\*\s*Done\s*\*\*\*')
# "  Key:   value" with the key ending at the first colon; the value may hold colons.
_FIELD_RE = re.compile(r'^\s*(?P<key>[A-Za-z][^:]*?)\s*:(?P<value>.*)$')
_INT_RE = re.compile(r'^\s*(?P<num>[0-9]+)')
_DOMAIN_RE = re.compile(r'^\s*(?:0x(?P<hex>[0-9a-fA-F]+)|(?P<dec>[0-9]+))')
_RUNTIME_RE = re.compile(r'^\s*Runtime Version:\s*(?P<version>[0-9]+\.[0-9]+)\b', re.MULTILINE)
_SIZE_RE = re.compile(r'^\s*(?P<num>[0-9]+)\s*(?:\(0x[0-9a-fA-F]+\))?\s*(?P<unit>[KMG]?B)\b')
_UUID_RE = re.compile(r'^GPU-(?P<hex>[0-9a-fA-F]+)$')

# Lines rocminfo prints instead of agents, most specific first.
_NOT_LOADED_RE = re.compile(r'ROCk module is NOT loaded.*$', re.MULTILINE)
_KFD_OPEN_RE = re.compile(r'Unable to open /dev/kfd read-write: *(?P<reason>[^\n]*)$', re.MULTILINE)
_NOT_MEMBER_RE = re.compile(r'\S+ is not member of "?[A-Za-z_-]+"? group.*$', re.MULTILINE)
_NO_USER_RE = re.compile(r'Failed to get user name to check for \S+ group membership.*$', re.MULTILINE)
_HSA_FAIL_RE = re.compile(r'hsa api call failure at[^\n]*$', re.MULTILINE)
_CALL_RETURNED_RE = re.compile(r'Call returned [^\n]*$', re.MULTILINE)
_WSL_RE = re.compile(r'^\s*WSL environment detected', re.MULTILINE)
_KFD_PERMISSION_REASONS = ('Permission denied', 'Operation not permitted')


def _normalize(text):
    if text is None:
        raise ParseError(TOOL, 'no output at all')
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    if not isinstance(text, str):
        raise ParseError(TOOL, 'expected text, got %s' % type(text).__name__)
    text = text.replace('\r\n', '\n').replace('\r', '\n')
    return _ANSI_RE.sub('', text)


def _split_agents(lines):
    """Return [(agent number, [lines])] for every ``Agent N`` block."""
    agents = []
    current = None
    for line in lines:
        match = _AGENT_RE.match(line)
        if match:
            current = (int(match.group('num')), [])
            agents.append(current)
            continue
        if current is None:
            continue
        if _DONE_RE.match(line):
            current = None
            continue
        if _STARS_RE.match(line):
            continue
        current[1].append(line)
    return agents


def _fields(block):
    """First value of each key in an agent block (agent-level keys precede pools and ISAs)."""
    fields = {}
    for line in block:
        match = _FIELD_RE.match(line)
        if match:
            key = match.group('key').strip()
            if key not in fields:
                fields[key] = match.group('value').strip()
    return fields


def _leading_int(value):
    if value is None:
        return None
    match = _INT_RE.match(value)
    return int(match.group('num')) if match else None


def _coarse_grained_bytes(block):
    """Size of the first GLOBAL, COARSE GRAINED pool of an agent, in bytes, or None."""
    in_coarse_pool = False
    for line in block:
        match = _FIELD_RE.match(line)
        if not match:
            continue
        key = match.group('key').strip()
        value = match.group('value').strip()
        if key == 'Segment':
            segment, _sep, flags = value.partition(';')
            flags = flags.split(':', 1)[-1]
            flag_set = set(flag.strip() for flag in flags.split(','))
            # Pasted terminal junk may follow the flags ("FINE GRAINED   [296/1815]"): compare words, not whole strings.
            in_coarse_pool = segment.strip() == 'GLOBAL' and any(flag.split()[:2] == ['COARSE', 'GRAINED'] for flag in flag_set if flag)
        elif key == 'Size' and in_coarse_pool:
            size = _SIZE_RE.match(value)
            if not size:
                raise ParseError(TOOL, 'memory pool size %r is not in any known form' % value)
            unit = {'B': 1, 'KB': 1024, 'MB': 1024 ** 2, 'GB': 1024 ** 3}[size.group('unit')]
            return int(size.group('num')) * unit
    return None


def _gpu_from_block(number, block, fields):
    name = fields.get('Name')
    if not name:
        raise ParseError(TOOL, 'GPU agent %d has no Name line' % number)
    gfx = normalize_gfx(name)
    if gfx is None:
        raise ParseError(TOOL, 'GPU agent %d has Name "%s", which is not a known gfx target' % (number, name))
    node = _leading_int(fields.get('Node'))
    if node is None:
        raise ParseError(TOOL, 'GPU agent %d (%s) has no numeric Node line (found %r)' % (number, name, fields.get('Node')))

    bdfid = _leading_int(fields.get('BDFID'))
    domain = 0
    if fields.get('Domain') is not None:
        dom = _DOMAIN_RE.match(fields['Domain'])
        if not dom:
            raise ParseError(TOOL, 'GPU agent %d has Domain %r, which is not a number' % (number, fields['Domain']))
        domain = int(dom.group('hex'), 16) if dom.group('hex') else int(dom.group('dec'))
    # The runtime prints BDFID 0 when it does not know the location; 0000:00:00.0 is never a GPU.
    pci_address = pci_address_from_bdfid(bdfid, domain) if bdfid else None

    uuid = None
    uuid_match = _UUID_RE.match(fields.get('Uuid') or '')
    if uuid_match:
        uuid = 'GPU-' + uuid_match.group('hex').lower()

    if 'Memory Properties' in fields:
        integrated = 'APU' in fields['Memory Properties'].split()
    else:
        integrated = gfx in APU_GFX_TARGETS

    return {
        'node': node,
        'gfx_target': gfx,
        'marketing_name': fields.get('Marketing Name') or None,
        'compute_units': _leading_int(fields.get('Compute Unit')),
        'pci_address': pci_address,
        'vram_bytes': _coarse_grained_bytes(block),
        'uuid': uuid,
        'integrated': integrated,
    }


def _hsa_failure(text):
    """ToolError for an HSA call failure, or None."""
    failure = _HSA_FAIL_RE.search(text)
    if not failure:
        return None
    returned = _CALL_RETURNED_RE.search(text, failure.start())
    line = returned.group(0) if returned else failure.group(0)
    return ToolError(TOOL, line, HINT_WSL if _WSL_RE.search(text) else HINT_RUNTIME)


def _startup_error(text):
    """ToolError for the reasons rocminfo prints when it cannot list agents, or None."""
    match = _NOT_LOADED_RE.search(text)
    if match:
        return ToolError(TOOL, match.group(0), HINT_DRIVER)
    match = _KFD_OPEN_RE.search(text)
    if match:
        reason = match.group('reason').strip()
        if reason in _KFD_PERMISSION_REASONS:
            member = _NOT_MEMBER_RE.search(text)
            line = match.group(0) if not member else '%s (%s)' % (match.group(0).strip(), member.group(0).strip())
            return ToolError(TOOL, line, HINT_PERMISSION)
        if reason == 'No such file or directory':
            return ToolError(TOOL, match.group(0), HINT_NO_KFD)
        return ToolError(TOOL, match.group(0), HINT_KFD_REFUSED)
    match = _NOT_MEMBER_RE.search(text)
    if match:
        return ToolError(TOOL, match.group(0), HINT_PERMISSION)
    hsa = _hsa_failure(text)
    if hsa:
        return hsa
    match = _NO_USER_RE.search(text)
    if match:
        return ToolError(TOOL, match.group(0), HINT_NO_USER)
    return None


def parse_rocminfo(text):
    """Parse rocminfo output into ``{'runtime_version': str or None, 'gpus': [...]}``.

    ``gpus`` lists the GPU agents in rocminfo's order (CPU, DSP and AIE agents
    are skipped), each a dict with ``node`` (rocminfo's agent Node, not the
    NUMA node), ``gfx_target`` (LLVM name), ``marketing_name``,
    ``compute_units``, ``pci_address`` (from BDFID and Domain; partitions of
    one device differ in the function number), ``vram_bytes`` (the GLOBAL
    COARSE GRAINED pool), ``uuid`` (None for ``GPU-XX``) and ``integrated``.
    Output with agents but no GPU agent gives ``gpus: []``.

    Raises ToolError when rocminfo printed an error instead of agents (or an
    HSA call failed part way), ParseError when the text is not rocminfo
    output or a GPU agent cannot be read without guessing.
    """
    text = _normalize(text)
    if not text.strip():
        raise ParseError(TOOL, 'the output is empty')
    agents = _split_agents(text.split('\n'))

    if not agents:
        error = _startup_error(text)
        if error:
            raise error
        snippet = text.strip().split('\n', 1)[0][:120]
        raise ParseError(TOOL, 'no HSA agent blocks ("Agent N") found; output starts with %r' % snippet)

    # A module check can fail inside containers (no lsmod) while the runtime works, and a user-name
    # lookup can fail harmlessly; only an HSA call failure makes listed agents untrustworthy.
    error = _hsa_failure(text)
    if error:
        raise error

    runtime = _RUNTIME_RE.search(text)
    gpus = []
    for number, block in agents:
        fields = _fields(block)
        device_type = fields.get('Device Type')
        if not device_type:
            raise ParseError(TOOL, 'agent %d has no Device Type line' % number)
        if device_type.split()[0] != 'GPU':
            continue
        gpus.append(_gpu_from_block(number, block, fields))

    return {
        'runtime_version': runtime.group('version') if runtime else None,
        'gpus': gpus,
    }
