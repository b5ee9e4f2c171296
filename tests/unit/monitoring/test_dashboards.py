# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Grafana dashboards (roles/monitoring/files/dashboards) and the alert rules read only metrics the fleet's
exporters serve: every panel's PromQL is parsed by promtool and its metric names are looked up in real /metrics
pages (vLLM 0.32 and SGLang captures, Debian's node and nginx exporters, AMD's exporter's names)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess

import pytest
import yaml

from promql_names import PROMETHEUS_NAMES, grafana_to_promql, metric_names, served_names

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..', '..'))
DASHBOARDS_DIR = os.path.join(ROOT, 'roles', 'monitoring', 'files', 'dashboards')
RULES = os.path.join(ROOT, 'roles', 'monitoring', 'files', 'llmfleet.rules.yml')
DASHBOARDS = sorted(name for name in os.listdir(DASHBOARDS_DIR) if name.endswith('.json'))
# Metrics of the collection's own making: the gateway's log metrics (the exporters role's mtail program)
# and the GPU nodes' ROCm version (the exporters role's textfile for the node exporter).
OWN_NAMES = frozenset(['llmfleet_gateway_responses_total', 'llmfleet_gateway_upstream_failures_total', 'llmfleet_rocm_info'])
SERVED = served_names()
KNOWN = set(PROMETHEUS_NAMES) | OWN_NAMES
for _names in SERVED.values():
    KNOWN |= _names


def load(name):
    with open(os.path.join(DASHBOARDS_DIR, name)) as handle:
        return json.load(handle)


def panels(board):
    return [panel for panel in board['panels'] if panel['type'] != 'row']


def expressions():
    """(id, expression) of every panel target of every dashboard and of every rule."""
    found = []
    for name in DASHBOARDS:
        for panel in panels(load(name)):
            for target in panel['targets']:
                found.append(('%s:%s:%s' % (name[:-5], panel['title'], target['refId']), grafana_to_promql(target['expr'])))
    with open(RULES) as handle:
        for group in yaml.safe_load(handle)['groups']:
            for rule in group['rules']:
                found.append(('rules:%s' % rule['alert'], rule['expr']))
    return found


EXPRESSIONS = expressions()


def test_the_three_dashboards_are_there():
    assert DASHBOARDS == ['llmfleet-fleet.json', 'llmfleet-gpus.json', 'llmfleet-serving.json']


@pytest.mark.parametrize('name', DASHBOARDS)
def test_dashboard_shape(name):
    board = load(name)
    assert board['uid'] == name[:-5]
    assert board['title'].startswith('LLM fleet: ')
    assert 'datasource' in [item['name'] for item in board['templating']['list']]
    ids = [panel['id'] for panel in board['panels']]
    assert len(ids) == len(set(ids)), 'panel ids repeat'
    assert len(panels(board)) >= 8
    for panel in panels(board):
        assert panel['datasource'] == {'type': 'prometheus', 'uid': '${datasource}'}, panel['title']
        assert panel['targets'] and all(target['expr'].strip() for target in panel['targets']), panel['title']
        grid = panel['gridPos']
        assert grid['x'] + grid['w'] <= 24, panel['title']


@pytest.mark.parametrize('where, expr', EXPRESSIONS, ids=[where for where, _expr in EXPRESSIONS])
def test_every_metric_is_served(where, expr):
    names = metric_names(expr)
    assert names, '%s reads no metric: %s' % (where, expr)
    unknown = [name for name in names if name not in KNOWN]
    assert not unknown, '%s reads %s, which no exporter of the fleet serves' % (where, unknown)


def test_promtool_parses_every_panel_expression(promtool, tmp_path):
    """Every panel's PromQL (Grafana's variables replaced) as a recording rule: promtool parses each with Prometheus's parser."""
    rules = [{'record': 'llmfleet:panel_%d' % index, 'expr': expr} for index, (where, expr) in enumerate(EXPRESSIONS)
             if not where.startswith('rules:')]
    path = tmp_path / 'panels.rules.yml'
    path.write_text(yaml.safe_dump({'groups': [{'name': 'panels', 'rules': rules}]}))
    proc = subprocess.run([promtool, 'check', 'rules', str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout
    assert 'SUCCESS: %d rules found' % len(rules) in proc.stdout


@pytest.mark.parametrize('name, expected', [
    ('gpu_health', 'amd_gpu'), ('gpu_ecc_uncorrect_total', 'amd_gpu'), ('gpu_junction_temperature', 'amd_gpu'),
    ('vllm:kv_cache_usage_perc', 'vllm'), ('vllm:time_to_first_token_seconds_bucket', 'vllm'),
    ('vllm:num_requests_waiting', 'vllm'), ('sglang:num_queue_reqs', 'sglang'),
    ('node_cpu_seconds_total', 'node'), ('node_filesystem_avail_bytes', 'node'),
    ('nginx_connections_active', 'nginx'), ('nginx_up', 'nginx'),
])
def test_the_pages_serve_what_the_rules_rely_on(name, expected):
    assert name in SERVED[expected]


@pytest.mark.parametrize('name', ['vllm:gpu_cache_usage_perc', 'gpu_temperature', 'nginx_http_requests_5xx_total'])
def test_names_no_exporter_serves_are_unknown(name):
    """vLLM's old KV cache gauge is gone: a dashboard that used it would be caught."""
    assert name not in KNOWN


@pytest.mark.parametrize('expr, names', [
    ('delta(gpu_ecc_uncorrect_total[5m]) > 0', ['gpu_ecc_uncorrect_total']),
    ('histogram_quantile(0.95, sum by (le, node) (rate(vllm:time_to_first_token_seconds_bucket{model=~"a|b"}[5m])))',
     ['vllm:time_to_first_token_seconds_bucket']),
    ('up{job="workers"} == 1 unless on (instance) (vllm:num_requests_running or sglang:num_running_reqs)',
     ['sglang:num_running_reqs', 'up', 'vllm:num_requests_running']),
    ('count(gpu_health == 0) or vector(0)', ['gpu_health']),
    ('node_filesystem_avail_bytes{fstype!~"tmpfs|by(x)"} / node_filesystem_size_bytes < 0.05',
     ['node_filesystem_avail_bytes', 'node_filesystem_size_bytes']),
    ('predict_linear(node_filesystem_avail_bytes[6h], 24 * 3600) < 0', ['node_filesystem_avail_bytes']),
    ('topk by (model) (1, count by (model, engine_version) (up))', ['up']),
], ids=['delta', 'histogram', 'unless-on', 'vector', 'matcher-with-parens', 'numbers', 'topk-by'])
def test_metric_names(expr, names):
    assert metric_names(expr) == names
