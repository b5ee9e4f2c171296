# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Secure Boot state on real mokutil outputs (tests/unit/fixtures/mokutil) and efivarfs bytes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils._secure_boot import parse_efivar, parse_mokutil, secure_boot_reading

FIXTURE_TOOL = 'mokutil'


def test_capture(note):
    expected = note['expected']
    state, shim, unknown = parse_mokutil(note['text'])
    assert (state, shim, unknown) == (expected['state'], expected['shim_validation'], expected['unknown'])
    assert secure_boot_reading(note['text'])['state'] == expected['reading']


def test_mokutil_colours_are_removed():
    # mokutil wraps its lines in ANSI colours even into a pipe (lcp/mokutil src/mokutil.c:
    # printf(ANSI_COLOR_GREEN "SecureBoot enabled\n" ANSI_COLOR_RESET), then RED for shim's state).
    text = '\x1b[32mSecureBoot enabled\n\x1b[0m\x1b[31mSecureBoot validation is disabled in shim\n\x1b[0m'
    assert parse_mokutil(text) == ('enabled', False, [])
    assert secure_boot_reading(text)['detail'] == 'SecureBoot enabled / SecureBoot validation is disabled in shim'


@pytest.mark.parametrize('raw, state', [
    (b'\x06\x00\x00\x00\x01', 'enabled'),
    (b'\x06\x00\x00\x00\x00', 'disabled'),
    (b'\x06\x00\x00\x00', None),
    (b'\x06\x00\x00\x00\x07', None),
], ids=['on', 'off', 'short', 'odd-value'])
def test_efivar(raw, state):
    assert parse_efivar(raw)[0] == state


@pytest.mark.parametrize('mokutil, efivar, looked, state, source', [
    ('SecureBoot enabled\n', None, False, 'enabled', 'mokutil'),
    ('EFI variables are not supported on this system\n', None, True, 'no-efi', 'mokutil'),
    (None, b'\x06\x00\x00\x00\x01', True, 'enabled', 'efivar'),
    (None, b'\x06\x00\x00\x00', True, 'unknown', 'efivar'),
    (None, None, True, 'no-efi', None),
    ('', None, True, 'no-efi', None),
    ('Cannot determine secure boot state.\n', None, True, 'unknown', None),
    ('Cannot determine secure boot state.\n', b'\x06\x00\x00\x00\x00', True, 'disabled', 'efivar'),
    ('Something new\n', None, False, 'unknown', None),
], ids=['mokutil-on', 'mokutil-no-efi', 'efivar-on', 'efivar-odd', 'nothing-at-all', 'mokutil-silent',
        'mokutil-undetermined', 'undetermined-then-efivar', 'mokutil-new-text'])
def test_reading(mokutil, efivar, looked, state, source):
    reading = secure_boot_reading(mokutil, efivar, looked)
    assert (reading['state'], reading['source']) == (state, source)
    if mokutil == 'Something new\n':
        assert reading['detail'] == 'mokutil printed: Something new'
