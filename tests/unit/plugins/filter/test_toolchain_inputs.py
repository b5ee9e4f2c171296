# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every input rule of the toolchain role, triggered and quiet."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.llmfleet.rocm.plugins.filter.build import build_toolchain
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.toolchain import RULES, toolchain_input_problems
from input_rules import PLATFORM, ROOT, UNSUPPORTED, Case, assert_every_rule_reached, role_defaults, run_case

VALUES = role_defaults('toolchain')
CTX = {'platform': PLATFORM, 'rocm_release': '7.1.1'}
with open(os.path.join(ROOT, 'roles', 'engine_build', 'vars', 'main.yml')) as _handle:
    RELEASES = yaml.safe_load(_handle)['_engine_build_releases']


def _plan(system, release='0.32.0', **asked):
    """What the build_toolchain filter answers for a system (the role's _toolchain_plan)."""
    return build_toolchain(system, release=release, releases=RELEASES, **asked)


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
    Case('python-relative', {'toolchain_python': 'python3.12'}, 'toolchain-python-path', contains='"python3.12"'),
    Case('python-from-the-table', {}, 'toolchain-python-path', absent=True),
    Case('python-given', {'toolchain_python': '/opt/python3.12/bin/python3.12'}, 'toolchain-python-path', absent=True),
    # Debian 12 for vLLM 0.32.0: no gcc 13 (its own Python 3.11 is inside the release's range).
    Case('debian-12-no-gcc-13', {}, 'toolchain-unavailable', {'plan': _plan('Debian-12')},
         contains=['Debian 12 cannot give gcc 13', 'toolchain_gcc_version', '"12"']),
    Case('debian-12-gcc-12-asked', {'toolchain_gcc_version': '12'}, 'toolchain-unavailable',
         {'plan': _plan('Debian-12', gcc_version='12')}, absent=True),
    Case('ubuntu-22.04-python-3.11-asked', {'toolchain_python_version': '3.11'}, 'toolchain-unavailable',
         {'plan': _plan('Ubuntu-22', python_version='3.11')},
         contains=['Ubuntu 22.04 cannot give Python 3.11', 'toolchain_python_version', 'toolchain_python to the path']),
    Case('ubuntu-22.04-from-the-ppas', {}, 'toolchain-unavailable', {'plan': _plan('Ubuntu-22')}, absent=True),
    Case('no-release-no-recipe', {}, 'toolchain-unavailable', {'plan': _plan('Debian-12', release='')}, absent=True),
    Case('unsupported-system-said-once', {}, 'toolchain-unavailable', {'platform': UNSUPPORTED, 'plan': _plan('CentOS-9')},
         absent=True),
    Case('python-below-the-range', {'toolchain_vllm_release': '0.32.0', 'toolchain_python': '/opt/py/bin/python3'},
         'toolchain-python-range', {'python_found': '3.10', 'python_path': '/opt/py/bin/python3'},
         contains=['/opt/py/bin/python3 is Python 3.10, outside vLLM 0.32.0\'s requires-python >=3.11,<3.15']),
    Case('python-inside-the-range', {'toolchain_vllm_release': '0.32.0'}, 'toolchain-python-range', {'python_found': '3.12'},
         absent=True),
    Case('python-no-release', {}, 'toolchain-python-range', {'python_found': '3.10'}, absent=True),
]


@pytest.mark.parametrize('case', CASES, ids=[case.id for case in CASES])
def test_rule(case):
    run_case(RULES, VALUES, CTX, case)


def test_defaults_have_no_problem():
    assert toolchain_input_problems(VALUES, PLATFORM, '7.1.1') == []


def test_every_rule_is_reached():
    assert_every_rule_reached(RULES, CASES)
