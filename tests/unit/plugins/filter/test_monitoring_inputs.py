# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every input rule of the monitoring role, triggered and quiet."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.monitoring import RULES, monitoring_input_problems
from input_rules import PLATFORM, UNSUPPORTED, Case, assert_every_rule_reached, role_defaults, run_case

VALUES = role_defaults('monitoring')
GROUPS = {'gpu_nodes': ['gpu-node-1'], 'gateways': ['gateway-1'], 'monitoring': ['monitor-1']}
HOSTVARS = {
    'gpu-node-1': {'llmfleet_private_address': '10.89.77.201',
                   'llmfleet_worker_endpoints': [{'name': 'llmfleet-worker-0', 'address': '10.89.77.201', 'port': 8000,
                                                  'gpus': [0], 'model': 'tiny-llama', 'engine': 'vllm',
                                                  'engine_version': '0.32.0'}]},
    'gateway-1': {'ansible_facts': {'default_ipv4': {'address': '10.89.77.211'}}},
    'monitor-1': {'ansible_facts': {'default_ipv4': {'address': '10.89.77.221'}}},
}
CTX = {'platform': PLATFORM, 'hostvars': HOSTVARS, 'groups': GROUPS}


def _hostvars(host, **changes):
    hostvars = copy.deepcopy(HOSTVARS)
    hostvars[host].update(changes)
    return hostvars


CASES = [
    Case('unsupported-system', {}, 'monitoring-unsupported-system', {'platform': UNSUPPORTED},
         contains='Unsupported system CentOS 9: the monitoring role supports'),
    Case('supported-system', {}, 'monitoring-unsupported-system', absent=True),

    Case('listen-everywhere', {'monitoring_listen_address': '0.0.0.0'}, 'monitoring-listen-address',
         contains='monitoring_listen_address is "0.0.0.0"'),
    Case('listen-public', {'monitoring_alertmanager_listen_address': '8.8.8.8'}, 'monitoring-listen-address',
         contains='monitoring_alertmanager_listen_address is "8.8.8.8"'),
    Case('listen-hostname', {'monitoring_listen_address': 'monitor-1'}, 'monitoring-listen-address'),
    Case('listen-private', {'monitoring_listen_address': '10.89.77.221', 'monitoring_alertmanager_listen_address': 'fd00::5'},
         'monitoring-listen-address', absent=True),

    Case('port-zero', {'monitoring_listen_port': 0}, 'monitoring-listen-ports', contains='monitoring_listen_port is 0'),
    Case('port-word', {'monitoring_alertmanager_listen_port': 'http'}, 'monitoring-listen-ports'),
    Case('ports-same', {'monitoring_alertmanager_listen_port': 9090}, 'monitoring-listen-ports', contains='give two ports'),
    Case('ports-same-other-addresses', {'monitoring_alertmanager_listen_port': 9090,
                                        'monitoring_alertmanager_listen_address': '10.89.77.221'},
         'monitoring-listen-ports', absent=True),

    Case('duration-no-unit', {'monitoring_scrape_interval': '15'}, 'monitoring-durations', contains='monitoring_scrape_interval is "15"'),
    Case('duration-two-lines', {'monitoring_retention': '15d\n--web.enable-admin-api'}, 'monitoring-durations'),
    Case('duration-int', {'monitoring_evaluation_interval': 30}, 'monitoring-durations'),
    Case('durations', {'monitoring_scrape_interval': '30s', 'monitoring_retention': '52w'}, 'monitoring-durations', absent=True),

    Case('webhook-not-url', {'monitoring_alertmanager_webhook_url': 'hooks.example'}, 'monitoring-webhook-url'),
    Case('webhook-quote', {'monitoring_alertmanager_webhook_url': 'http://h/"x'}, 'monitoring-webhook-url'),
    Case('webhook-url', {'monitoring_alertmanager_webhook_url': 'https://hooks.example.internal/alerts'}, 'monitoring-webhook-url',
         absent=True),

    Case('config-dir-relative', {'monitoring_config_dir': 'etc/prometheus'}, 'monitoring-paths', contains='monitoring_config_dir'),
    Case('config-dir-space', {'monitoring_config_dir': '/etc/prom etheus'}, 'monitoring-paths'),
    Case('dashboards-relative', {'monitoring_dashboards_dir': 'dashboards'}, 'monitoring-paths', contains='monitoring_dashboards_dir'),
    Case('dashboards-dir', {'monitoring_dashboards_dir': '/var/lib/grafana/dashboards/llmfleet'}, 'monitoring-paths', absent=True),

    Case('node-groups-string', {'monitoring_node_groups': 'gpu_nodes'}, 'monitoring-group-names', contains='not a list'),
    Case('group-with-dash', {'monitoring_gpu_group': 'gpu-nodes'}, 'monitoring-group-names', contains='"gpu-nodes"'),
    Case('group-names', {'monitoring_node_groups': ['all']}, 'monitoring-group-names', absent=True),

    Case('target-address-unknown', {}, 'monitoring-targets', {'hostvars': _hostvars('gateway-1', ansible_facts={})},
         contains='The private address of gateway-1 is unknown'),
    Case('target-worker-port', {}, 'monitoring-targets',
         {'hostvars': _hostvars('gpu-node-1', llmfleet_worker_endpoints=[{'name': 'w', 'address': '10.0.0.1', 'port': 0}])},
         contains='is not a port'),
    Case('target-exporter-port', {}, 'monitoring-targets', {'hostvars': _hostvars('gpu-node-1', exporters_amdgpu_exporter_port=70000)},
         contains='exporters_amdgpu_exporter_port of gpu-node-1'),
    Case('targets', {}, 'monitoring-targets', absent=True),
]


@pytest.mark.parametrize('case', CASES, ids=[case.id for case in CASES])
def test_rule(case):
    run_case(RULES, VALUES, CTX, case)


def test_defaults_have_no_problem():
    assert monitoring_input_problems(VALUES, PLATFORM, hostvars=HOSTVARS, groups=GROUPS) == []


def test_every_rule_is_reached():
    assert_every_rule_reached(RULES, CASES)
