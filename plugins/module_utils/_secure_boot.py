# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Secure Boot state: ``mokutil --sb-state`` when it answers, else the UEFI variable ``SecureBoot``.

mokutil colours its lines (ANSI escapes, also into a pipe); they are removed before matching.
The efivarfs file of ``SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c`` holds 4 bytes of
attributes and then the value, one byte: 1 on, 0 off. Pure: text and bytes in, values out.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

EFIVAR_NAME = 'SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c'
STATES = ('enabled', 'disabled', 'no-efi', 'unknown')

_ANSI_RE = re.compile(r'\x1b\[[0-9;]*[A-Za-z]')
_MOKUTIL_PATTERNS = (
    (re.compile(r'^SecureBoot enabled$'), 'enabled'),
    (re.compile(r'^SecureBoot disabled$'), 'disabled'),
    (re.compile(r'^SecureBoot validation is disabled in shim$'), 'shim-validation-off'),
    (re.compile(r'^Platform is in Setup Mode$'), 'setup-mode'),
    (re.compile(r"^This system doesn't support Secure Boot"), 'unsupported'),
    (re.compile(r'^EFI variables are not supported on this system'), 'no-efi'),
    (re.compile(r'^Cannot determine secure boot state'), 'undetermined'),
    (re.compile(r'^Failed to read "?(?:SecureBoot|SetupMode)"? variable'), 'undetermined'),
    (re.compile(r'^Strange data size'), 'ignore'),
)


def _lines(text):
    return [line for line in (_ANSI_RE.sub('', raw).strip() for raw in (text or '').splitlines()) if line]


def parse_mokutil(text):
    """``mokutil --sb-state`` output -> ``(state, shim validation on?, unrecognised lines)``.

    state: enabled, disabled, no-efi, unsupported, undetermined, or None when nothing was recognised.
    In Setup Mode the firmware enforces nothing, so "enabled" there counts as disabled.
    """
    state, shim_validation, unknown, setup_mode = None, None, [], False
    for line in _lines(text):
        for pattern, meaning in _MOKUTIL_PATTERNS:
            if pattern.match(line):
                break
        else:
            unknown.append(line)
            continue
        if meaning == 'shim-validation-off':
            shim_validation = False
        elif meaning == 'setup-mode':
            setup_mode = True
        elif meaning != 'ignore' and state is None:
            state = meaning
    if state == 'enabled' and shim_validation is None:
        shim_validation = True
    if setup_mode and state == 'enabled':
        state = 'disabled'
    return state, shim_validation, unknown


def parse_efivar(raw):
    """The efivarfs bytes of SecureBoot -> ``(state, detail)``; state None when they are not 4 + 1 bytes."""
    if len(raw) == 5 and raw[4:5] in (b'\x00', b'\x01'):
        return ('enabled' if raw[4:5] == b'\x01' else 'disabled'), 'EFI variable SecureBoot = %d' % ord(raw[4:5])
    return None, 'EFI variable SecureBoot has %d bytes, not the 5 expected' % len(raw)


def secure_boot_reading(mokutil_text=None, efivar=None, efivar_looked=False):
    """The node's Secure Boot state: ``{state, source, shim_validation, detail}``.

    ``mokutil_text`` is what ``mokutil --sb-state`` printed (None when it is not installed or printed
    nothing); ``efivar`` the bytes of the EFI variable (None when the file is missing) and
    ``efivar_looked`` whether it was looked for. state is enabled, disabled, no-efi (legacy BIOS
    boot or no efivarfs) or unknown.
    """
    reading = {'state': 'unknown', 'source': None, 'shim_validation': None, 'detail': ''}
    if mokutil_text is not None and not _lines(mokutil_text):
        mokutil_text = None
    if mokutil_text is not None:
        state, shim, unknown = parse_mokutil(mokutil_text)
        if state in ('enabled', 'disabled'):
            reading.update(state=state, source='mokutil', shim_validation=shim, detail=' / '.join(_lines(mokutil_text)))
            return reading
        if state in ('no-efi', 'unsupported'):
            reading.update(state='no-efi' if state == 'no-efi' else 'disabled', source='mokutil',
                           detail='mokutil: ' + ('EFI variables are not supported on this system' if state == 'no-efi'
                                                 else "this system doesn't support Secure Boot"))
            return reading
        reading['detail'] = 'mokutil printed: %s' % ' / '.join(unknown or _lines(mokutil_text))
    if efivar is not None:
        state, detail = parse_efivar(efivar)
        reading.update(source='efivar', detail=detail)
        if state is not None:
            reading['state'] = state
        return reading
    if mokutil_text is None and efivar_looked:
        reading.update(state='no-efi', detail='no mokutil and no SecureBoot EFI variable (legacy BIOS boot, or efivarfs not mounted)')
    return reading
