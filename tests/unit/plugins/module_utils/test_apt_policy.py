# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""apt-cache policy on real captures (tests/unit/fixtures/apt_cache_policy) and the Ubuntu layout."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils import _rocm_common as rocm_common
from ansible_collections.llmfleet.rocm.plugins.module_utils._apt_policy import available, parse_apt_policy

FIXTURE_TOOL = 'apt_cache_policy'

# The layout of an Ubuntu 22.04 node, as apt 2.4 prints it (the same blocks and two-space fields as Debian's).
UBUNTU_KERNEL = '6.8.0-45-generic'
UBUNTU_BOTH = (
    'linux-headers-{k}:\n  Installed: (none)\n  Candidate: 6.8.0-45.45~22.04.1\n  Version table:\n'
    '     6.8.0-45.45~22.04.1 500\n        500 http://archive.ubuntu.com/ubuntu jammy-updates/main amd64 Packages\n'
    'linux-modules-extra-{k}:\n  Installed: 6.8.0-45.45~22.04.1\n  Candidate: 6.8.0-45.45~22.04.1\n  Version table:\n'
    ' *** 6.8.0-45.45~22.04.1 500\n        500 http://archive.ubuntu.com/ubuntu jammy-updates/main amd64 Packages\n'
    '        100 /var/lib/dpkg/status\n'
).format(k=UBUNTU_KERNEL)


def test_capture(note):
    if 'error' in note:
        error = getattr(rocm_common, note['error'])
        with pytest.raises(error) as caught:
            parse_apt_policy(note['text'], note['packages'])
        assert re.search(note['error_match'], str(caught.value)), str(caught.value)
        return
    assert parse_apt_policy(note['text'], note['packages']) == note['expected']


def test_ubuntu_layout_with_an_architecture_suffix():
    text = UBUNTU_BOTH.replace('linux-modules-extra-%s:' % UBUNTU_KERNEL, 'linux-modules-extra-%s:amd64:' % UBUNTU_KERNEL)
    parsed = parse_apt_policy(text, ['linux-headers-' + UBUNTU_KERNEL, 'linux-modules-extra-' + UBUNTU_KERNEL])
    assert parsed['linux-headers-' + UBUNTU_KERNEL] == {'known': True, 'installed': None, 'candidate': '6.8.0-45.45~22.04.1'}
    assert parsed['linux-modules-extra-' + UBUNTU_KERNEL]['installed'] == '6.8.0-45.45~22.04.1'
    assert all(available(entry) for entry in parsed.values())


def test_warnings_and_notices_are_not_errors():
    parsed = parse_apt_policy('W: Target Packages is configured multiple times\n' + UBUNTU_BOTH, ['linux-headers-' + UBUNTU_KERNEL])
    assert parsed['linux-headers-' + UBUNTU_KERNEL]['known'] is True


def test_unknown_text_is_refused():
    with pytest.raises(rocm_common.ParseError, match='not apt-cache policy output'):
        parse_apt_policy('Paketliste wird gelesen...\n', ['linux-headers-6.1.0-99-amd64'])


def test_available():
    assert available({'installed': None, 'candidate': '1.0'}) and available({'installed': '1.0', 'candidate': None})
    assert not available({'known': False, 'installed': None, 'candidate': None})
