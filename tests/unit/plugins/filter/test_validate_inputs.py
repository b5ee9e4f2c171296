# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every input rule of the validate role, triggered and quiet; the fleet table."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv
import io

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.validate_fleet import validate_fleet_table
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.validate import (
    BUILD_RULES, RULES, validate_build_problems, validate_input_problems)
from input_rules import PLATFORM, UNSUPPORTED, Case, assert_every_rule_reached, role_defaults, run_case

# The publish directory's default is a template (the controller's $HOME): as the run renders it.
VALUES = dict(role_defaults('validate'), validate_rccl_tests_publish_dir='/home/ops/llmfleet-tools')
CTX = {'platform': PLATFORM, 'gateways': ['gateway-1']}
NODE = {'distribution': 'Debian', 'distribution_major_version': '12', 'rocm': {'rocm_version': '7.1.1', 'gfx_targets': ['gfx942']}}
BUILD_CTX = dict(CTX, builder='node-1', rocm='7.1.1', system='Debian 12', arch=['gfx942'], fleet={'node-1': NODE, 'node-2': NODE})

CASES = [
    Case('unsupported-system', {}, 'validate-unsupported-system', {'platform': UNSUPPORTED}, contains='Unsupported system CentOS 9'),
    Case('supported-system', {}, 'validate-unsupported-system', absent=True),
    Case('thresholds-default', {}, 'validate-threshold-names', absent=True),
    Case('threshold-known', {'validate_thresholds': {'rccl_all_reduce': {'value': 290.0, 'source': 'site run'}}},
         'validate-threshold-names', absent=True),
    Case('threshold-unknown', {'validate_thresholds': {'allreduce': {'value': 290}}}, 'validate-threshold-names',
         contains=['validate_thresholds names "allreduce"', 'rccl_all_reduce']),
    Case('threshold-not-mapping', {'validate_thresholds': {'rccl_all_reduce': 290}}, 'validate-threshold-names',
         contains='validate_thresholds.rccl_all_reduce is 290'),
    Case('threshold-value-text', {'validate_thresholds': {'rccl_all_reduce': {'value': 'fast'}}}, 'validate-threshold-names',
         contains='validate_thresholds.rccl_all_reduce.value is "fast"'),
    Case('thresholds-list', {'validate_thresholds': ['rccl_all_reduce']}, 'validate-threshold-names', contains='give a mapping'),
    Case('health-default', {}, 'validate-health-names', absent=True),
    Case('health-known', {'validate_health_thresholds': {'ecc_correctable': {'value': 10}}}, 'validate-health-names', absent=True),
    Case('health-unknown', {'validate_health_thresholds': {'ecc': {'value': 1}}}, 'validate-health-names',
         contains='validate_health_thresholds names "ecc"'),
    Case('health-negative', {'validate_health_thresholds': {'ecc_correctable': {'value': -1}}}, 'validate-health-names',
         contains='a whole number from 0'),
    Case('health-not-mapping', {'validate_health_thresholds': 3}, 'validate-health-names', contains='validate_health_thresholds is 3'),
    Case('partitions-default', {}, 'validate-partitions', absent=True),
    Case('partitions-set', {'validate_expected_partitions': {'compute': 'spx', 'memory': 'NPS1'}}, 'validate-partitions', absent=True),
    Case('partition-unknown', {'validate_expected_partitions': {'compute': 'XPX', 'memory': ''}}, 'validate-partitions',
         contains='validate_expected_partitions.compute is "XPX": choose one of SPX'),
    Case('partition-memory-unknown', {'validate_expected_partitions': {'compute': '', 'memory': 'NPS3'}}, 'validate-partitions',
         contains='memory is "NPS3"'),
    Case('partition-extra-key', {'validate_expected_partitions': {'compute': '', 'nps': 'NPS1'}}, 'validate-partitions',
         contains='give {compute: "", memory: ""}'),
    Case('report-dir', {}, 'validate-report-dir', absent=True),
    Case('report-dir-relative', {'validate_report_dir': 'validate'}, 'validate-report-dir', contains='validate_report_dir is "validate"'),
    Case('report-dir-root', {'validate_report_dir': '/'}, 'validate-report-dir', contains='not /'),
    Case('timeout', {}, 'validate-timeout', absent=True),
    Case('timeout-zero', {'validate_timeout': 0}, 'validate-timeout', contains='validate_timeout is 0'),
    Case('drain-with-gateways', {'validate_drain': True}, 'validate-drain-without-gateways', absent=True),
    Case('drain-without-gateways', {'validate_drain': True}, 'validate-drain-without-gateways', {'gateways': []},
         contains='needs the gateways group'),
    Case('drain-on-failure-without-gateways', {'validate_on_failure': 'drain'}, 'validate-drain-without-gateways',
         {'gateways': []}),
    Case('fail-without-gateways', {}, 'validate-drain-without-gateways', {'gateways': []}, absent=True),
    Case('fabric-group', {'validate_fabric_group': 'rack-a.rail_1'}, 'validate-fabric-group', absent=True),
    Case('fabric-group-path', {'validate_fabric_group': '../etc'}, 'validate-fabric-group', contains='validate_fabric_group is "../etc"'),
    Case('fabric-group-dots', {'validate_fabric_group': '..'}, 'validate-fabric-group', contains='give a name of letters'),
    Case('fabric-threshold-policy', {}, 'validate-fabric-threshold', absent=True),
    Case('fabric-threshold-given', {'validate_fabric_threshold': {'value': 320, 'source': 'site run'}}, 'validate-fabric-threshold',
         absent=True),
    Case('fabric-threshold-number', {'validate_fabric_threshold': 320}, 'validate-fabric-threshold',
         contains='validate_fabric_threshold is 320'),
    Case('fabric-threshold-zero', {'validate_fabric_threshold': {'value': 0}}, 'validate-fabric-threshold', contains='above 0'),
    Case('fabric-threshold-source-line', {'validate_fabric_threshold': {'value': 1, 'source': 'a\nb'}}, 'validate-fabric-threshold'),
    Case('fabric-threshold-extra', {'validate_fabric_threshold': {'value': 1, 'ranks': 16}}, 'validate-fabric-threshold'),
    Case('fabric-fraction', {'validate_fabric_line_rate_fraction': 1}, 'validate-fabric-fraction', absent=True),
    Case('fabric-fraction-percent', {'validate_fabric_line_rate_fraction': 70}, 'validate-fabric-fraction',
         contains='validate_fabric_line_rate_fraction is 70'),
    Case('fabric-fraction-zero', {'validate_fabric_line_rate_fraction': 0}, 'validate-fabric-fraction'),
    Case('fabric-ssh-port', {'validate_fabric_ssh_port': 2222}, 'validate-fabric-ssh-port', absent=True),
    Case('fabric-ssh-port-big', {'validate_fabric_ssh_port': 70000}, 'validate-fabric-ssh-port',
         contains='validate_fabric_ssh_port is 70000'),
    Case('fabric-mpi', {}, 'validate-fabric-needs-mpi', absent=True),
    Case('fabric-without-mpi', {'validate_rccl_tests_mpi': False}, 'validate-fabric-needs-mpi',
         contains='set validate_rccl_tests_build: true and validate_rccl_tests_mpi: true'),
    Case('fabric-without-build', {'validate_rccl_tests_build': False}, 'validate-fabric-needs-mpi'),
    Case('no-fabric-without-mpi', {'validate_rccl_tests_mpi': False, 'validate_checks': ['health', 'rccl']},
         'validate-fabric-needs-mpi', absent=True),
    Case('rccl-source', {}, 'validate-rccl-source', absent=True),
    Case('rccl-source-commit', {'validate_rccl_tests_ref': 'ae3e6357cb3514d5649b3b5dfaa80cb2d2af3532'}, 'validate-rccl-source',
         absent=True),
    Case('rccl-repo-empty', {'validate_rccl_tests_repo': ''}, 'validate-rccl-source', contains='validate_rccl_tests_repo is ""'),
    Case('rccl-ref-blank', {'validate_rccl_tests_ref': 'develop main'}, 'validate-rccl-source',
         contains='validate_rccl_tests_ref is "develop main": give one git URL or ref'),
    Case('rccl-ref-newline', {'validate_rccl_tests_ref': 'develop\nx'}, 'validate-rccl-source'),
    Case('rccl-dirs', {}, 'validate-rccl-dirs', absent=True),
    Case('rccl-build-dir-relative', {'validate_rccl_tests_build_dir': 'build'}, 'validate-rccl-dirs',
         contains='validate_rccl_tests_build_dir is "build": give an absolute directory'),
    Case('rccl-dir-root', {'validate_rccl_tests_dir': '/'}, 'validate-rccl-dirs', contains='validate_rccl_tests_dir is "/"'),
    Case('rccl-publish-unrendered', {'validate_rccl_tests_publish_dir': '~/tools'}, 'validate-rccl-dirs',
         contains='validate_rccl_tests_publish_dir is "~/tools"'),
    Case('rccl-keep', {'validate_rccl_tests_keep': 1}, 'validate-rccl-keep', absent=True),
    Case('rccl-keep-zero', {'validate_rccl_tests_keep': 0}, 'validate-rccl-keep', contains='validate_rccl_tests_keep is 0'),
    Case('rccl-packages', {}, 'validate-rccl-packages', absent=True),
    Case('rccl-package-line', {'validate_rccl_tests_build_packages': ['git', 'make\nrm']}, 'validate-rccl-packages',
         contains='validate_rccl_tests_build_packages holds "make\\nrm"'),
    Case('rccl-package-option', {'validate_packages': ['-y']}, 'validate-rccl-packages', contains='validate_packages holds "-y"'),
    Case('rccl-arch-nodes', {}, 'validate-rccl-arch', absent=True),
    Case('rccl-arch-set', {'validate_rccl_tests_arch': ['gfx942', 'gfx90a']}, 'validate-rccl-arch', absent=True),
    Case('rccl-arch-unknown', {'validate_rccl_tests_arch': ['gfx942', 'mi300x']}, 'validate-rccl-arch',
         contains='validate_rccl_tests_arch names "mi300x"'),
]

BUILD_CASES = [
    Case('build-rocm', {}, 'validate-build-rocm', absent=True),
    Case('build-rocm-none', {}, 'validate-build-rocm', {'rocm': ''}, contains='the builder node-1 has no ROCm release'),
    Case('build-arch', {}, 'validate-build-arch', absent=True),
    Case('build-arch-none', {}, 'validate-build-arch', {'arch': []}, contains='no GPU target to build rccl-tests for'),
    Case('build-fleet', {}, 'validate-build-fleet-match', absent=True),
    Case('build-fleet-other-rocm', {}, 'validate-build-fleet-match',
         {'fleet': {'node-1': NODE, 'node-2': dict(NODE, rocm={'rocm_version': '7.0.2', 'gfx_targets': ['gfx942']})}},
         contains='node-2 runs ROCm 7.0.2 on Debian 12, the builder node-1 ROCm 7.1.1 on Debian 12'),
    Case('build-fleet-other-system', {}, 'validate-build-fleet-match',
         {'fleet': {'node-2': dict(NODE, distribution='Ubuntu', distribution_major_version='24')}},
         contains='node-2 runs ROCm 7.1.1 on Ubuntu 24'),
    Case('build-fleet-unread', {}, 'validate-build-fleet-match', {'fleet': {'node-3': {'distribution': 'Debian'}}},
         contains='node-3: its GPUs were not read'),
]


@pytest.mark.parametrize('case', CASES, ids=[case.id for case in CASES])
def test_rule(case):
    run_case(RULES, VALUES, CTX, case)


@pytest.mark.parametrize('case', BUILD_CASES, ids=[case.id for case in BUILD_CASES])
def test_build_rule(case):
    run_case(BUILD_RULES, VALUES, BUILD_CTX, case)


def test_every_rule_is_reached():
    assert_every_rule_reached(RULES, CASES)
    assert_every_rule_reached(BUILD_RULES, BUILD_CASES)


def test_the_defaults_pass():
    assert validate_input_problems(VALUES, PLATFORM, gateways=['gateway-1']) == []
    assert validate_build_problems(VALUES, PLATFORM, 'node-1', '7.1.1', 'Debian 12', ['gfx942'], BUILD_CTX['fleet'],
                                   gateways=['gateway-1']) == []


def test_the_build_checks_the_role_inputs_too():
    problems = validate_build_problems(dict(VALUES, validate_rccl_tests_dir='opt'), PLATFORM, 'node-1', '', 'Debian 12',
                                       ['gfx942'], {}, gateways=['gateway-1'])
    assert len(problems) == 2 and problems[0].startswith('validate_rccl_tests_dir is "opt"')
    assert problems[1].startswith('the builder node-1 has no ROCm release')


def _finding(level, check_id, gpu=None, message='m'):
    return {'level': level, 'id': check_id, 'gpu': gpu, 'figure': 1, 'threshold': 2, 'source': 's', 'message': message}


def _hostvars():
    ok = [_finding('ok', 'pcie.link', 0), _finding('warning', 'health.throttled', 1, 'GPU 1 is throttled')]
    bad = [_finding('ok', 'pcie.link', 0), _finding('error', 'rccl.all_reduce.busbw', None, 'bus bandwidth 284.3 < 304, "a|b"')]
    return {'node-1': {'_validate_result': {'model': 'AMD Instinct MI300X', 'findings': ok, 'firmware': {'SMC': '1.0'}}},
            'node-2': {'_validate_result': {'model': 'AMD Instinct MI300X', 'findings': bad, 'firmware': {'SMC': '1.0'}}},
            'node-3': {'_validate_result': {'model': 'AMD Instinct MI300X', 'findings': ok, 'firmware': {'SMC': '0.9'}}}}


def test_the_fleet_table_fails_the_slow_node_and_the_one_with_other_firmware():
    table = validate_fleet_table(['node-1', 'node-2', 'node-3'], _hostvars())
    assert table['failed'] == ['node-2', 'node-3']
    verdicts = [(row['node'], row['check'], row['verdict']) for row in table['rows']]
    assert verdicts == [('node-1', 'health.throttled', 'WARN'), ('node-1', 'all (2)', 'PASS'),
                        ('node-2', 'rccl.all_reduce.busbw', 'FAIL'),
                        ('node-3', 'health.throttled', 'WARN'), ('node-3', 'firmware.fleet.SMC', 'FAIL')]
    assert 'node-3 has SMC firmware 0.9, most nodes of the group 1.0' in table['rows'][-1]['message']
    rows = list(csv.DictReader(io.StringIO(table['csv'])))
    assert rows[2]['message'] == 'bus bandwidth 284.3 < 304, "a|b"' and rows[2]['verdict'] == 'FAIL'
    assert '"a\\|b"' in table['markdown'] and table['markdown'].count('\n') == len(table['rows']) + 2


def test_a_node_without_a_result_is_an_error():
    with pytest.raises(AnsibleFilterError, match='node-4 has no validation result'):
        validate_fleet_table(['node-4'], {'node-4': {}})
