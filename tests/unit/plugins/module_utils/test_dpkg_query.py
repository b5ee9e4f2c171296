# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""dpkg-query --show with the collection's format, on a lab capture and on each status dpkg prints."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils._dpkg_query import parse_dpkg_query
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError

FIXTURE_TOOL = 'dpkg_query'


def test_capture(note):
    installed = parse_dpkg_query(note['text'])
    expected = note['expected']
    assert len(installed) == expected['count']
    assert sorted(name for name, package in installed.items() if package['held']) == expected['held']
    for name, version in expected['versions'].items():
        assert installed[name]['version'] == version


@pytest.mark.parametrize('status, installed, held', [
    ('ii ', True, False),
    ('hi ', True, True),
    ('rc ', False, False),     # removed, its configuration files left
    ('iU ', False, False),     # unpacked, not configured
    ('iF ', False, False),     # configuration failed
    ('un ', False, False),     # known, never installed
    ('iiR', True, False),      # installed, reinstallation required
])
def test_each_status(status, installed, held):
    parsed = parse_dpkg_query('pkg\t1.0-1\t%s\n' % status)
    assert ('pkg' in parsed) is installed
    if installed:
        assert parsed['pkg'] == {'version': '1.0-1', 'held': held}


def test_empty_output_is_no_package():
    assert parse_dpkg_query('') == {}


@pytest.mark.parametrize('text', [
    'pkg 1.0-1 ii\n',                        # spaces, not the tab format asked for
    'pkg\t1.0-1\n',                          # a field missing
    'pkg\t1.0-1\tzz \n',                     # no dpkg status
    'Desired=Unknown/Install/Remove/Purge\n',  # dpkg -l's table, not --show
])
def test_other_output_is_a_parse_error(text):
    with pytest.raises(ParseError, match='is not'):
        parse_dpkg_query(text)
