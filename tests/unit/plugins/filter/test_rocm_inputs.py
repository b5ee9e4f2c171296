# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every input rule of the rocm role, triggered and quiet."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.rocm_release import rocm_version_code
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.rocm import RULES, rocm_input_problems
from input_rules import MIRRORED, PLATFORM, UNSUPPORTED, Case, assert_every_rule_reached, role_defaults, run_case

# The defaults without the fleet's mirror (templated defaults stay strings here).
VALUES = dict(role_defaults('rocm'), rocm_repo_base_url='https://repo.radeon.com',
              rocm_repo_key_url='https://repo.radeon.com/rocm/rocm.gpg.key')
CTX = {'platform': PLATFORM, 'release_checks': None, 'packages': None}
ROCM = 'https://repo.radeon.com/rocm/apt/7.1.1'
AMDGPU = 'https://repo.radeon.com/amdgpu/30.20.1/ubuntu'
GRAPHICS = 'https://repo.radeon.com/graphics/7.1.1/ubuntu'


def _checks(rocm_status=200, amdgpu_status=200, graphics_status=200):
    """What the uri HEAD loop registers, one result per repository (the items of rocm_repositories)."""
    return [{'item': {'name': 'rocm', 'kind': 'rocm', 'uri': ROCM}, 'status': rocm_status, 'changed': False},
            {'item': {'name': 'amdgraphics', 'kind': 'graphics', 'uri': GRAPHICS}, 'status': graphics_status,
             'changed': False},
            {'item': {'name': 'amdgpu', 'kind': 'amdgpu', 'uri': AMDGPU}, 'status': amdgpu_status, 'changed': False}]


def _packages(rocm_core=None):
    """llmfleet_platform.packages (name -> version), with rocm-core at a version or absent."""
    packages = {'bash': '5.2.15-2+b7'}
    if rocm_core:
        packages['rocm-core'] = rocm_core
    return packages


CASES = [
    Case('repository-off-mirror', {'rocm_repo_base_url': 'https://repo.radeon.com',
                                   'rocm_repo_key_url': 'http://mirror-1:8080/amd/rocm/rocm.gpg.key'}, 'rocm-outside-mirror',
         {'platform': MIRRORED}, contains='rocm_repo_base_url "https://repo.radeon.com"'),
    Case('repository-on-mirror', {'rocm_repo_base_url': 'http://mirror-1:8080/amd',
                                  'rocm_repo_key_url': 'http://mirror-1:8080/amd/rocm/rocm.gpg.key'}, 'rocm-outside-mirror',
         {'platform': MIRRORED}, absent=True),
    Case('repository-no-mirror', {'rocm_repo_base_url': 'https://repo.radeon.com'}, 'rocm-outside-mirror', absent=True),
    Case('mirror-prefix-is-not-a-path', {'rocm_repo_base_url': 'http://mirror-1:80800/amd'}, 'rocm-outside-mirror',
         {'platform': MIRRORED}),
    Case('unsupported-system', {}, 'rocm-unsupported-system', {'platform': UNSUPPORTED},
         contains=['Unsupported system CentOS 9', 'Debian 12, Ubuntu 22.04, Ubuntu 24.04']),
    Case('supported-system', {}, 'rocm-unsupported-system', absent=True),
    Case('version-word', {'rocm_version': 'latest'}, 'rocm-version-format',
         contains='rocm_version "latest" is not a ROCm release such as 7.1.1 (6.0 or newer)'),
    Case('version-too-old', {'rocm_version': '5.7.1'}, 'rocm-version-format', contains='"5.7.1"'),
    Case('version-unquoted', {'rocm_version': 7.1}, 'rocm-version-format', contains='7.1'),
    Case('version-two-parts', {'rocm_version': '7.1'}, 'rocm-version-format', absent=True),
    Case('version-six', {'rocm_version': '6.0'}, 'rocm-version-format', absent=True),
    Case('amdgpu-word', {'rocm_amdgpu_version': 'latest'}, 'rocm-amdgpu-version-format',
         contains='rocm_amdgpu_version "latest" is not an amdgpu release such as 30.20.1'),
    Case('amdgpu-without-driver', {'rocm_amdgpu_version': 'latest', 'rocm_install_driver': False}, 'rocm-amdgpu-version-format',
         absent=True),
    Case('amdgpu-release', {'rocm_amdgpu_version': '30.10.2'}, 'rocm-amdgpu-version-format', absent=True),
    Case('base-url-ftp', {'rocm_repo_base_url': 'ftp://mirror.example/rocm'}, 'rocm-repo-base-url',
         contains='rocm_repo_base_url "ftp://mirror.example/rocm" is not an http(s) URL'),
    Case('base-url-space', {'rocm_repo_base_url': 'https://mirror example'}, 'rocm-repo-base-url'),
    Case('base-url-mirror', {'rocm_repo_base_url': 'http://mirror.example:8080/amd/'}, 'rocm-repo-base-url', absent=True),
    Case('pin-zero', {'rocm_pin_priority': 0}, 'rocm-pin-priority-range', contains='rocm_pin_priority 0 is outside 1..32767'),
    Case('pin-zero-string', {'rocm_pin_priority': '0'}, 'rocm-pin-priority-range', contains='rocm_pin_priority 0 is outside'),
    Case('pin-too-high', {'rocm_pin_priority': 40000}, 'rocm-pin-priority-range'),
    Case('pin-word', {'rocm_pin_priority': 'high'}, 'rocm-pin-priority-range', contains='"high"'),
    Case('pin-600', {'rocm_pin_priority': 600}, 'rocm-pin-priority-range', absent=True),
    Case('packages-empty', {'rocm_packages': []}, 'rocm-packages-empty', contains='[rocm]'),
    Case('packages-runtime', {'rocm_packages': ['rocm-hip-runtime']}, 'rocm-packages-empty', absent=True),
    Case('gfx-unknown', {'rocm_expected_gfx_targets': ['gfx9010', 'mi300x']}, 'rocm-expected-gfx-targets-unknown',
         contains='rocm_expected_gfx_targets has unknown targets gfx9010, mi300x'),
    Case('gfx-odd-name', {'rocm_expected_gfx_targets': ['gfx942', 'MI 300']}, 'rocm-expected-gfx-targets-unknown',
         contains='"MI 300"'),
    Case('gfx-known', {'rocm_expected_gfx_targets': ['gfx942', 'gfx90a']}, 'rocm-expected-gfx-targets-unknown', absent=True),
    Case('count-zero', {'rocm_expected_gpu_count': 0}, 'rocm-expected-gpu-count',
         contains='rocm_expected_gpu_count 0 must be a positive number of GPUs or null'),
    Case('count-word', {'rocm_expected_gpu_count': 'eight'}, 'rocm-expected-gpu-count', contains='"eight"'),
    Case('count-eight', {'rocm_expected_gpu_count': 8}, 'rocm-expected-gpu-count', absent=True),
    Case('count-any', {'rocm_expected_gpu_count': None}, 'rocm-expected-gpu-count', absent=True),
    Case('kernel-managed-string', {'rocm_kernel_managed': 'no'}, 'rocm-kernel-managed-type', contains='"no"'),
    Case('kernel-managed-false', {'rocm_kernel_managed': False}, 'rocm-kernel-managed-type', absent=True),
    Case('kernel-managed-follows', {'rocm_kernel_managed': None}, 'rocm-kernel-managed-type', absent=True),
    Case('release-missing', {'rocm_version': '7.9.9'}, 'rocm-release-missing',
         {'release_checks': _checks(rocm_status=404)},
         contains=[ROCM + ' has no jammy suite (HTTP 404)', 'rocm_version ("7.9.9")', 'https://repo.radeon.com/rocm/apt/']),
    Case('both-missing', {}, 'rocm-release-missing', {'release_checks': _checks(404, 404)},
         contains=[ROCM + ', ' + AMDGPU + ' has no jammy suite',
                   'rocm_version ("7.2.3") against https://repo.radeon.com/rocm/apt/; rocm_amdgpu_version ("30.30.3")']),
    Case('graphics-missing', {}, 'rocm-release-missing', {'release_checks': _checks(graphics_status=404)},
         contains=[GRAPHICS + ' has no jammy suite', 'rocm_version ("7.2.3") against https://repo.radeon.com/graphics/',
                   'rocm_graphics_repository: false']),
    Case('graphics-type', {'rocm_graphics_repository': 'yes'}, 'rocm-graphics-repository-type',
         contains='rocm_graphics_repository "yes" must be true, false or null'),
    Case('graphics-off', {'rocm_graphics_repository': False}, 'rocm-graphics-repository-type', absent=True),
    Case('graphics-follows', {'rocm_graphics_repository': None}, 'rocm-graphics-repository-type', absent=True),
    Case('releases-exist', {}, 'rocm-release-missing', {'release_checks': _checks()}, absent=True),
    Case('releases-not-read', {}, 'rocm-release-missing', {'release_checks': None}, absent=True),
    Case('downgrade', {'rocm_version': '7.0.2'}, 'rocm-downgrade', {'packages': _packages('7.1.1.70101-38~24.04')},
         contains=['ROCm 7.1.1 is installed and rocm_version asks for the older "7.0.2"',
                   'Set rocm_allow_downgrade=true to downgrade']),
    Case('downgrade-allowed', {'rocm_version': '7.0.2', 'rocm_allow_downgrade': True}, 'rocm-downgrade',
         {'packages': _packages('7.1.1.70101-38~24.04')}, absent=True),
    Case('upgrade', {'rocm_version': '7.1.1'}, 'rocm-downgrade', {'packages': _packages('7.0.2.70002-56~24.04')}, absent=True),
    Case('upgrade-refused', {'rocm_version': '7.2.3'}, 'rocm-upgrade', {'packages': _packages('7.1.1.70101-38~24.04')},
         contains=['ROCm 7.1.1 is installed and rocm_version asks for "7.2.3"', 'Set rocm_allow_upgrade=true for this run',
                   'set rocm_version to 7.1.1 to keep it']),
    Case('upgrade-allowed', {'rocm_version': '7.2.3', 'rocm_allow_upgrade': True}, 'rocm-upgrade',
         {'packages': _packages('7.1.1.70101-38~24.04')}, absent=True),
    Case('upgrade-not-installed', {'rocm_version': '7.2.3'}, 'rocm-upgrade', {'packages': _packages()}, absent=True),
    Case('upgrade-same-release', {'rocm_version': '7.1.1'}, 'rocm-upgrade', {'packages': _packages('7.1.1.70101-38~24.04')},
         absent=True),
    Case('same-release', {'rocm_version': '7.1.1'}, 'rocm-downgrade', {'packages': _packages('7.1.1.70101-38~24.04')},
         absent=True),
    Case('not-installed', {}, 'rocm-downgrade', {'packages': _packages()}, absent=True),
]


@pytest.mark.parametrize('case', CASES, ids=[case.id for case in CASES])
def test_rule(case):
    run_case(RULES, VALUES, CTX, case)


def test_defaults_have_no_problem():
    assert rocm_input_problems(VALUES, PLATFORM) == []
    assert rocm_input_problems(VALUES, PLATFORM, release_checks=_checks(), packages=_packages('7.2.3.70203-1~24.04')) == []


def test_every_rule_is_reached():
    assert_every_rule_reached(RULES, CASES)


# The amdgpu series AMD pairs with each ROCm series of the collection: its AMD GPU Driver (amdgpu) documentation
# (30.30.3 for ROCm 7.2.3), and the lab's packages (30.10.2 with 7.0.2, 30.20.1 with 7.1.1).
AMDGPU_SERIES = {'7.0': '30.10', '7.1': '30.20', '7.2': '30.30'}


def test_the_default_driver_is_the_one_amd_pairs_with_the_default_release():
    defaults = role_defaults('rocm')
    series = '.'.join(defaults['rocm_version'].split('.')[:2])
    assert defaults['rocm_amdgpu_version'].rsplit('.', 1)[0] == AMDGPU_SERIES[series]
    assert (defaults['rocm_version'], defaults['rocm_amdgpu_version']) == ('7.2.3', '30.30.3')
    assert rocm_version_code(defaults['rocm_version']) == '70203'
