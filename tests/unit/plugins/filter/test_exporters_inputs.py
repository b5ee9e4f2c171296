# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every input rule of the exporters role, triggered and quiet."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.exporters import RULES, exporters_input_problems
from input_rules import MIRRORED, PLATFORM, UNSUPPORTED, Case, assert_every_rule_reached, role_defaults, run_case

# The defaults without the fleet's mirror (templated defaults stay strings here).
VALUES = dict(role_defaults('exporters'), exporters_listen_address='10.89.77.201',
              exporters_amdgpu_exporter_repo_base_url='https://repo.radeon.com',
              exporters_amdgpu_exporter_repo_key_url='https://repo.radeon.com/rocm/rocm.gpg.key')
CTX = {'platform': PLATFORM, 'rocm_version': '7.1.1', 'gateway': False}
GATEWAY = {'gateway': True}

CASES = [
    Case('exporter-repository-off-mirror', {'exporters_amdgpu_exporter_repo_base_url': 'https://repo.radeon.com'},
         'exporters-outside-mirror', {'platform': MIRRORED}, contains='exporters_amdgpu_exporter_repo_base_url'),
    Case('exporter-repository-on-mirror', {'exporters_amdgpu_exporter_repo_base_url': 'http://mirror-1:8080/amd',
                                           'exporters_amdgpu_exporter_repo_key_url': 'http://mirror-1:8080/amd/rocm/rocm.gpg.key'},
         'exporters-outside-mirror', {'platform': MIRRORED}, absent=True),
    Case('unsupported-system', {}, 'exporters-unsupported-system', {'platform': UNSUPPORTED},
         contains='Unsupported system CentOS 9: the exporters role supports'),
    Case('supported-system', {}, 'exporters-unsupported-system', absent=True),

    Case('listen-everywhere', {'exporters_listen_address': '0.0.0.0'}, 'exporters-listen-address', contains='"0.0.0.0"'),
    Case('listen-public', {'exporters_listen_address': '8.8.8.8'}, 'exporters-listen-address'),
    Case('listen-two-lines', {'exporters_listen_address': '10.0.0.1\nARGS=x'}, 'exporters-listen-address'),
    Case('listen-loopback', {'exporters_listen_address': '127.0.0.1'}, 'exporters-listen-address', absent=True),
    Case('listen-ipv6-private', {'exporters_listen_address': 'fd00::11'}, 'exporters-listen-address', absent=True),

    Case('port-zero', {'exporters_node_exporter_port': 0}, 'exporters-ports', contains='exporters_node_exporter_port is 0'),
    Case('port-word', {'exporters_amdgpu_exporter_port': 'x'}, 'exporters-ports'),
    Case('log-port-negative', {'exporters_gateway_log_port': -1}, 'exporters-ports', contains='or 0 (none)'),
    Case('ports-clash-gateway', {'exporters_nginx_exporter_port': 9100}, 'exporters-ports', GATEWAY,
         contains='exporters_node_exporter_port and exporters_nginx_exporter_port are both 9100'),
    Case('ports-clash-not-a-gateway', {'exporters_nginx_exporter_port': 9100}, 'exporters-ports', absent=True),
    Case('log-port-off', {'exporters_gateway_log_port': 0}, 'exporters-ports', GATEWAY, absent=True),

    Case('group-with-dash', {'exporters_gpu_group': 'gpu-nodes'}, 'exporters-group-names', contains='"gpu-nodes"'),
    Case('group-names', {'exporters_gateway_group': 'edge_gateways'}, 'exporters-group-names', absent=True),

    Case('version-float', {'exporters_amdgpu_exporter_version': 1.4}, 'exporters-amdgpu-version', contains='(quoted)'),
    Case('version-path', {'exporters_amdgpu_exporter_version': '1.4.0/../x'}, 'exporters-amdgpu-version'),
    Case('version', {'exporters_amdgpu_exporter_version': '1.3.1'}, 'exporters-amdgpu-version', absent=True),

    Case('base-url-slash', {'exporters_amdgpu_exporter_repo_base_url': 'https://mirror.example/'}, 'exporters-amdgpu-urls',
         contains='without a trailing /'),
    Case('key-url-file', {'exporters_amdgpu_exporter_repo_key_url': 'file:///tmp/k'}, 'exporters-amdgpu-urls'),
    Case('mirror-urls', {'exporters_amdgpu_exporter_repo_base_url': 'http://10.89.77.1:8080'}, 'exporters-amdgpu-urls', absent=True),

    Case('field-lower-case', {'exporters_amdgpu_exporter_fields': ['gpu_junction_temperature']}, 'exporters-amdgpu-names',
         contains='"gpu_junction_temperature"'),
    Case('labels-string', {'exporters_amdgpu_exporter_labels': 'CARD_MODEL'}, 'exporters-amdgpu-names', contains='not a list'),
    Case('fields-and-labels', {'exporters_amdgpu_exporter_fields': ['GPU_JUNCTION_TEMPERATURE', 'GPU_ECC_UNCORRECT_TOTAL'],
                               'exporters_amdgpu_exporter_labels': ['GPU_UUID', 'SERIAL_NUMBER', 'CARD_MODEL']},
         'exporters-amdgpu-names', absent=True),

    Case('custom-label-quote', {'exporters_amdgpu_exporter_custom_labels': {'rack': 'r1"'}}, 'exporters-amdgpu-custom-labels',
         contains='"rack": "r1\\""'),
    Case('custom-label-reserved', {'exporters_amdgpu_exporter_custom_labels': {'__name__': 'x'}}, 'exporters-amdgpu-custom-labels'),
    Case('custom-label-number', {'exporters_amdgpu_exporter_custom_labels': {'rack': 7}}, 'exporters-amdgpu-custom-labels'),
    Case('custom-labels-list', {'exporters_amdgpu_exporter_custom_labels': ['rack']}, 'exporters-amdgpu-custom-labels',
         contains='not a mapping'),
    Case('custom-labels', {'exporters_amdgpu_exporter_custom_labels': {'rack': 'r12', 'cluster': 'east-1'}},
         'exporters-amdgpu-custom-labels', absent=True),

    Case('threshold-negative', {'exporters_amdgpu_exporter_health_thresholds': {'GPU_ECC_UNCORRECT_UMC': -1}},
         'exporters-amdgpu-health-thresholds', contains='"GPU_ECC_UNCORRECT_UMC": -1'),
    Case('threshold-lower-case', {'exporters_amdgpu_exporter_health_thresholds': {'gpu_ecc': 1}}, 'exporters-amdgpu-health-thresholds'),
    Case('thresholds-list', {'exporters_amdgpu_exporter_health_thresholds': [1]}, 'exporters-amdgpu-health-thresholds',
         contains='not a mapping'),
    Case('thresholds', {'exporters_amdgpu_exporter_health_thresholds': {'GPU_ECC_UNCORRECT_SEM': 0, 'GPU_ECC_UNCORRECT_UMC': '4'}},
         'exporters-amdgpu-health-thresholds', absent=True),

    Case('rocm-version-odd', {}, 'exporters-rocm-version', {'rocm_version': '7.1.1"} 1\nx'}, contains='not a version'),
    Case('rocm-version-unknown', {}, 'exporters-rocm-version', {'rocm_version': ''}, absent=True),
    Case('rocm-version', {}, 'exporters-rocm-version', absent=True),
]


@pytest.mark.parametrize('case', CASES, ids=[case.id for case in CASES])
def test_rule(case):
    run_case(RULES, VALUES, CTX, case)


@pytest.mark.parametrize('gateway', [False, True], ids=['gpu-node', 'gateway'])
def test_defaults_have_no_problem(gateway):
    assert exporters_input_problems(VALUES, PLATFORM, rocm_version='7.1.1', gateway=gateway) == []


def test_every_rule_is_reached():
    assert_every_rule_reached(RULES, CASES)
