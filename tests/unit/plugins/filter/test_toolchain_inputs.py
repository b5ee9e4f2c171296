# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every input rule of the toolchain role, triggered and quiet."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmfleet.rocm.plugins.filter.toolchain_inputs import RULES, toolchain_input_problems
from input_rules import PLATFORM, UNSUPPORTED, Case, assert_every_rule_reached, role_defaults, run_case

VALUES = role_defaults('toolchain')
CTX = {'platform': PLATFORM, 'rocm_release': '7.1.1'}

CASES = [
    Case('unsupported-system', {}, 'toolchain-unsupported-system', {'platform': UNSUPPORTED}, contains='CentOS 9'),
    Case('supported-system', {}, 'toolchain-unsupported-system', absent=True),
    Case('no-release', {}, 'toolchain-no-rocm-release', {'rocm_release': ''}, contains='driver.yml'),
    Case('release-known', {}, 'toolchain-no-rocm-release', absent=True),
    Case('release-two-parts', {}, 'toolchain-rocm-release-format', {'rocm_release': '7.1'}, contains='"7.1"'),
    Case('release-three-parts', {}, 'toolchain-rocm-release-format', {'rocm_release': '7.0.2'}, absent=True),
    Case('unpinned-tool', {'toolchain_python_packages': ['pip==26.3', 'cmake>=3.26']}, 'toolchain-python-packages-unpinned',
         contains='"cmake>=3.26"'),
    Case('pinned-tools', {'toolchain_python_packages': ['pip==26.3', 'Cython==3.3.1']}, 'toolchain-python-packages-unpinned',
         absent=True),
    Case('relative-dir', {'toolchain_dir': 'opt/toolchain'}, 'toolchain-dir-absolute', contains='"opt/toolchain"'),
    Case('root-dir', {'toolchain_dir': '/'}, 'toolchain-dir-absolute'),
    Case('absolute-dir', {'toolchain_dir': '/srv/toolchain'}, 'toolchain-dir-absolute', absent=True),
]


@pytest.mark.parametrize('case', CASES, ids=[case.id for case in CASES])
def test_rule(case):
    run_case(RULES, VALUES, CTX, case)


def test_defaults_have_no_problem():
    assert toolchain_input_problems(VALUES, PLATFORM, '7.1.1') == []


def test_every_rule_is_reached():
    assert_every_rule_reached(RULES, CASES)
