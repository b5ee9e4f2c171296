# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The exporters and Prometheus on the gateway instance (converge.yml's second play): every target up in
Prometheus, the gateway's metrics through its HTTP API, the collection's rules loaded, Alertmanager answering, and
every listener where it belongs (exporters on the private address, stub_status and Prometheus on loopback)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import time

import pytest

testinfra_hosts = ['podman://llmfleet-molecule-%s' % os.environ.get('MOLECULE_SCENARIO_NAME', 'gateway')]

PROMETHEUS = 'http://127.0.0.1:9090'
JOBS = ['alertmanager', 'gateway_log', 'nginx', 'node', 'prometheus']


def api(host, path):
    out = host.check_output("curl -fsS -g '%s%s'" % (PROMETHEUS, path))
    return json.loads(out)


def query(host, expr):
    return api(host, '/api/v1/query?query=%s' % expr.replace(' ', '%20').replace('"', '%22'))['data']['result']


def wait_for(check, seconds=60):
    deadline = time.monotonic() + seconds
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(2)


def test_every_target_is_up(host):
    def all_up():
        targets = api(host, '/api/v1/targets?state=active')['data']['activeTargets']
        return targets if targets and all(target['health'] == 'up' for target in targets) else None
    targets = wait_for(all_up)
    assert targets, api(host, '/api/v1/targets?state=active')
    assert sorted(set(target['labels']['job'] for target in targets)) == JOBS
    nodes = set(target['labels'].get('node') for target in targets)
    assert len(nodes) == 1 and None not in nodes, nodes


@pytest.mark.parametrize('expr', ['nginx_connections_active', 'node_cpu_seconds_total{mode="idle"}', 'nginx_up == 1',
                                  'node_reboot_required'])
def test_prometheus_answers_with_the_node_s_metrics(host, expr):
    assert wait_for(lambda: query(host, expr)), expr


def test_the_reboot_required_report_runs_at_boot_and_on_change(host):
    # The role enables the path unit only; its Also= enables the oneshot (run at boot) with it.
    assert host.service('llmfleet-reboot-required.path').is_enabled
    assert host.service('llmfleet-reboot-required.path').is_running
    assert host.service('llmfleet-reboot-required.service').is_enabled


def test_gateway_responses_are_counted_and_grow(host):
    before = wait_for(lambda: query(host, 'sum(llmfleet_gateway_responses_total)'))
    assert before
    host.check_output("for request in 1 2 3 4 5; do curl -s -o /dev/null -H 'Authorization: Bearer lab-key-0123456789abcdef'"
                      " http://127.0.0.1/v1/models; done")
    grown = wait_for(lambda: [r for r in query(host, 'sum(llmfleet_gateway_responses_total)')
                              if float(r['value'][1]) >= float(before[0]['value'][1]) + 5])
    assert grown, (before, query(host, 'sum(llmfleet_gateway_responses_total)'))


def test_the_collection_s_rules_are_loaded(host):
    groups = api(host, '/api/v1/rules?type=alert')['data']['groups']
    assert sorted(group['name'] for group in groups) == ['llmfleet-drift', 'llmfleet-gateway', 'llmfleet-gpu', 'llmfleet-nodes',
                                                         'llmfleet-workers']
    assert all(rule['health'] == 'ok' for group in groups for rule in group['rules'])


def test_alertmanager_answers(host):
    status = json.loads(host.check_output('curl -fsS http://127.0.0.1:9093/api/v2/status'))
    assert status['cluster']['status'] == 'disabled'


def test_listeners_stay_where_they_belong(host):
    address = host.check_output("ip -4 -o addr show scope global | awk '{print $4}' | cut -d/ -f1 | head -1")
    listening = host.check_output('ss -Hltn').split('\n')
    local = set(line.split()[3] for line in listening if line.strip())
    for port in ('9100', '9113', '3903'):
        assert '%s:%s' % (address, port) in local, (port, local)
    for port in ('8080', '9090', '9093'):
        assert '127.0.0.1:%s' % port in local, (port, local)
    assert not any(entry.endswith(':%s' % port) and not entry.startswith(('127.0.0.1:', address + ':'))
                   for entry in local for port in ('8080', '9090', '9093', '9100', '9113', '3903'))
