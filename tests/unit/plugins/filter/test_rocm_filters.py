# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.rocm_release import rocm_release, rocm_version_code, unknown_gfx_targets


@pytest.mark.parametrize('text, expected', [
    ('7.1.1.70101-38~24.04', '7.1.1'),
    ('6.2.0.60200-66~22.04', '6.2.0'),
    ('7.0', '7.0.0'),
    ('1:6.16.6.30200000-2238411.24.04', '6.16.6'),
    ('', None),
    (None, None),
    ('rocm', None),
], ids=['rocm-core-7.1.1', 'rocm-core-6.2', 'two-part', 'epoch', 'empty', 'none', 'word'])
def test_rocm_release(text, expected):
    assert rocm_release(text) == expected


@pytest.mark.parametrize('version, code', [('7.1.1', '70101'), ('6.2.0', '60200'), ('7.0', '70000'), ('6.10.12', '61012')],
                         ids=['7.1.1', '6.2.0', 'two-part', 'two-digit-parts'])
def test_rocm_version_code(version, code):
    assert rocm_version_code(version) == code


def test_rocm_version_code_rejects_garbage():
    with pytest.raises(AnsibleFilterError, match='not a ROCm version'):
        rocm_version_code('latest')


@pytest.mark.parametrize('targets, unknown', [
    (['gfx942', 'gfx90a'], []),
    (['gfx942', 'gfx9010', 'mi300x'], ['gfx9010', 'mi300x']),
    ('gfx942;gfx950', []),
    ('gfx942;gfx943', ['gfx943']),
], ids=['known', 'alias-and-product-name', 'string-list', 'string-unknown'])
def test_unknown_gfx_targets(targets, unknown):
    assert unknown_gfx_targets(targets) == unknown
