# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel releases, numeric sysctls and CPU sockets."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils._kernel import count_sockets, parse_kernel_version, parse_sysctl_int


@pytest.mark.parametrize('release, version', [
    ('6.8.0-45-generic', (6, 8, 0)),
    ('6.1.0-28-amd64', (6, 1, 0)),
    ('6.18.44-fc-v857', (6, 18, 44)),
    ('5.15', (5, 15, 0)),
    ('6.8-rc1', (6, 8, 0)),
    ('custom-kernel', None),
    (None, None),
], ids=['ubuntu', 'debian', 'firecracker', 'two-parts', 'rc', 'no-version', 'none'])
def test_kernel_version(release, version):
    assert parse_kernel_version(release) == version


@pytest.mark.parametrize('text, value', [('0\n', 0), ('1', 1), (' 2 \n', 2), ('', None), (None, None), ('on\n', None)],
                         ids=['zero', 'one', 'spaces', 'empty', 'missing', 'word'])
def test_sysctl_int(text, value):
    assert parse_sysctl_int(text) == value


def test_sockets():
    assert count_sockets(['0\n', '0\n', '1\n', '1\n']) == 2
    assert count_sockets(['0\n', None, 'x']) == 1
    assert count_sockets([]) is None and count_sockets(['-1\n']) is None
