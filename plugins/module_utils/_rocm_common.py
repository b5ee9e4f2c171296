# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared pieces of the ROCm tool parsers: errors and GPU architecture names.

Everything here is pure: text or numbers in, values out. No Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re


class ToolError(Exception):
    """A ROCm tool reported an error instead of data.

    ``line`` is the tool's own line, quoted back to the user; ``hint`` says what
    to do about it.
    """

    def __init__(self, tool, line, hint):
        self.tool = tool
        self.line = line.strip()
        self.hint = hint
        super(ToolError, self).__init__('%s reported: "%s". %s' % (tool, self.line, hint))


class ParseError(Exception):
    """A tool's output was not in any format the parser knows.

    Raised instead of guessing. ``tool`` names the tool, ``detail`` says what
    was expected and what was found.
    """

    def __init__(self, tool, detail):
        self.tool = tool
        self.detail = detail
        super(ParseError, self).__init__('unrecognised %s output: %s' % (tool, detail))


# Hints shared by every tool's error patterns.
HINT_DRIVER = ('The amdgpu kernel driver is not loaded: install amdgpu-dkms for the running kernel, '
               'reboot (or run "modprobe amdgpu"), and check "dmesg | grep amdgpu".')
HINT_PERMISSION = ('The user cannot open /dev/kfd or /dev/dri/renderD*: add it to the "render" and "video" '
                   'groups (for example with the rocm role\'s rocm_group_users) and log in again.')
HINT_RUNTIME = ('The ROCm runtime could not initialise the GPUs: check "dmesg" for amdgpu errors and that '
                'the installed ROCm user space matches the amdgpu driver.')

# LLVM AMDGPU processor names (llvm.org/docs/AMDGPUUsage.html, "Processors").
KNOWN_GFX_TARGETS = frozenset([
    'gfx600', 'gfx601', 'gfx602', 'gfx700', 'gfx701', 'gfx702', 'gfx703', 'gfx704', 'gfx705',
    'gfx801', 'gfx802', 'gfx803', 'gfx805', 'gfx810',
    'gfx900', 'gfx902', 'gfx904', 'gfx906', 'gfx908', 'gfx909', 'gfx90a', 'gfx90c',
    'gfx940', 'gfx941', 'gfx942', 'gfx950',
    'gfx1010', 'gfx1011', 'gfx1012', 'gfx1013',
    'gfx1030', 'gfx1031', 'gfx1032', 'gfx1033', 'gfx1034', 'gfx1035', 'gfx1036',
    'gfx1100', 'gfx1101', 'gfx1102', 'gfx1103', 'gfx1150', 'gfx1151', 'gfx1152', 'gfx1153',
    'gfx1200', 'gfx1201',
])

# Targets that only exist as integrated GPUs (APUs).
APU_GFX_TARGETS = frozenset([
    'gfx801', 'gfx810', 'gfx902', 'gfx909', 'gfx90c', 'gfx1013', 'gfx1033', 'gfx1035', 'gfx1036',
    'gfx1103', 'gfx1150', 'gfx1151', 'gfx1152', 'gfx1153',
])

_GFX_RE = re.compile(r'^gfx(?P<digits>[0-9]+)(?P<suffix>[0-9a-f]?)$')


def gfx_from_target_version(version):
    """Turn the KFD ``gfx_target_version`` number (90010, 90402) into an LLVM name."""
    version = int(version)
    major = version // 10000
    minor = (version // 100) % 100
    stepping = version % 100
    return 'gfx%d%d%x' % (major, minor, stepping)


def normalize_gfx(name):
    """Return the real LLVM target for a name a tool printed.

    Tools print either the LLVM name (``gfx90a``) or a decimal spelling of the
    KFD version (``gfx9010`` for 9.0.10, ``gfx11000`` for 11.0.0). Feature
    suffixes (``gfx90a:sramecc+:xnack-``) are dropped. Returns None when the
    name is not a known target in either spelling.
    """
    if name is None:
        return None
    base = str(name).strip().lower().split(':', 1)[0]
    if base in KNOWN_GFX_TARGETS:
        return base
    match = _GFX_RE.match(base)
    if not match:
        return None
    digits = match.group('digits') + match.group('suffix')
    if not digits.isdigit():
        return None
    # Decimal KFD spelling: major (1 or 2 digits), minor (1 digit), stepping (decimal).
    for major_len in (1, 2):
        if len(digits) < major_len + 2:
            continue
        major = int(digits[:major_len])
        minor = int(digits[major_len])
        stepping = int(digits[major_len + 1:])
        if stepping > 15:
            continue
        candidate = 'gfx%d%d%x' % (major, minor, stepping)
        if candidate in KNOWN_GFX_TARGETS:
            return candidate
    return None


def pci_address_from_bdfid(bdfid, domain=0):
    """Build ``0000:0c:00.0`` from rocminfo's ``BDFID`` (bus << 8 | device << 3 | function)."""
    bdfid = int(bdfid)
    bus = (bdfid >> 8) & 0xff
    device = (bdfid >> 3) & 0x1f
    function = bdfid & 0x7
    return '%04x:%02x:%02x.%x' % (int(domain), bus, device, function)


_PCI_RE = re.compile(r'^(?:(?P<domain>[0-9a-fA-F]{1,8}):)?(?P<bus>[0-9a-fA-F]{1,2}):(?P<dev>[0-9a-fA-F]{1,2})\.(?P<fn>[0-7])$')


def normalize_pci_address(text):
    """Return a PCI address as ``dddd:bb:dd.f`` in lower case, or None if it is not one."""
    if text is None:
        return None
    match = _PCI_RE.match(str(text).strip())
    if not match:
        return None
    domain = int(match.group('domain') or '0', 16)
    return '%04x:%02x:%02x.%s' % (domain, int(match.group('bus'), 16), int(match.group('dev'), 16), match.group('fn'))


_SIZE_RE = re.compile(r'^\s*(?P<num>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>[KMGT]i?B|B|KB|MB|GB|TB)?\s*$', re.IGNORECASE)
_UNITS = {'b': 1, 'kb': 1024, 'kib': 1024, 'mb': 1024 ** 2, 'mib': 1024 ** 2,
          'gb': 1024 ** 3, 'gib': 1024 ** 3, 'tb': 1024 ** 4, 'tib': 1024 ** 4}


def size_to_bytes(text, default_unit='B'):
    """Convert ``196592 MB`` / ``206141652992`` / ``201310208KB`` to bytes (binary units, as ROCm tools mean them)."""
    if text is None:
        return None
    match = _SIZE_RE.match(str(text))
    if not match:
        return None
    unit = (match.group('unit') or default_unit).lower()
    return int(float(match.group('num')) * _UNITS[unit])
