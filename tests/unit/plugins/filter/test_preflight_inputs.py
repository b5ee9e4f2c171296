# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every input rule of the preflight role, triggered and quiet."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.preflight import RULES, preflight_input_problems
from input_rules import PLATFORM, UNSUPPORTED, Case, assert_every_rule_reached, role_defaults, run_case

VALUES = dict(role_defaults('preflight'), preflight_report_dir='/srv/ansible/preflight-reports')
CTX = {'platform': PLATFORM}

CASES = [
    Case('min-kernel-word', {'preflight_min_kernel': 'latest'}, 'preflight-min-kernel-format', contains='"latest"'),
    Case('min-kernel-number', {'preflight_min_kernel': 5.15}, 'preflight-min-kernel-format', contains='5.15'),
    Case('min-kernel-three-parts', {'preflight_min_kernel': '6.8.0'}, 'preflight-min-kernel-format', absent=True),
    Case('disk-path-relative', {'preflight_disk_path': 'opt'}, 'preflight-disk-path-absolute', contains='"opt"'),
    Case('disk-path-root', {'preflight_disk_path': '/'}, 'preflight-disk-path-absolute', absent=True),
    Case('min-free-negative', {'preflight_min_free_gib': -1}, 'preflight-min-free-gib', contains='-1'),
    Case('min-free-word', {'preflight_min_free_gib': 'lots'}, 'preflight-min-free-gib', contains='"lots"'),
    Case('min-free-off', {'preflight_min_free_gib': 0}, 'preflight-min-free-gib', absent=True),
    Case('expected-zero', {'preflight_expected_gpu_count': 0}, 'preflight-expected-gpu-count', contains='0 must be'),
    Case('expected-word', {'preflight_expected_gpu_count': 'eight'}, 'preflight-expected-gpu-count', contains='"eight"'),
    Case('expected-eight', {'preflight_expected_gpu_count': 8}, 'preflight-expected-gpu-count', absent=True),
    Case('expected-any', {'preflight_expected_gpu_count': None}, 'preflight-expected-gpu-count', absent=True),
    Case('accepted-unknown', {'preflight_accepted_findings': ['gpu-none', 'gpu-gone']}, 'preflight-accepted-findings-unknown',
         contains=['"gpu-gone"', 'pcie-link-speed-downgraded']),
    Case('accepted-known', {'preflight_accepted_findings': ['gpu-none', 'pcie-link-speed-downgraded']},
         'preflight-accepted-findings-unknown', absent=True),
    Case('report-dir-empty', {'preflight_report_dir': ' '}, 'preflight-report-dir-empty', contains='preflight_write_report: false'),
    Case('report-dir-empty-no-report', {'preflight_report_dir': '', 'preflight_write_report': False}, 'preflight-report-dir-empty',
         absent=True),
]


@pytest.mark.parametrize('case', CASES, ids=[case.id for case in CASES])
def test_rule(case):
    run_case(RULES, VALUES, CTX, case)


def test_defaults_have_no_problem():
    assert preflight_input_problems(VALUES, PLATFORM) == []


def test_an_unsupported_system_is_a_finding_not_an_input_problem():
    assert preflight_input_problems(VALUES, UNSUPPORTED) == []


def test_every_rule_is_reached():
    assert_every_rule_reached(RULES, CASES)
