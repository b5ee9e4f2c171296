# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's alert rules: promtool accepts them, every case of llmfleet.rules.test.yml
passes, and every alert has a case that expects it to fire, names the node and has a severity,
a summary and a description."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, '..', '..', '..'))
RULES = os.path.join(ROOT, 'roles', 'monitoring', 'files', 'llmfleet.rules.yml')
CASES = os.path.join(HERE, 'llmfleet.rules.test.yml')
SEVERITIES = ('critical', 'warning', 'info')


def load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def alert_rules():
    return [rule for group in load(RULES)['groups'] for rule in group['rules'] if 'alert' in rule]


ALERTS = {rule['alert']: rule for rule in alert_rules()}


def run(promtool, *args, cwd=HERE):
    return subprocess.run([promtool] + list(args), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)


def fired_in_cases():
    """alertname -> the number of evaluations that expect it firing."""
    counts = {}
    for test in load(CASES)['tests']:
        for check in test.get('alert_rule_test') or []:
            if check.get('exp_alerts'):
                counts[check['alertname']] = counts.get(check['alertname'], 0) + 1
    return counts


def test_promtool_check_rules(promtool):
    proc = run(promtool, 'check', 'rules', RULES)
    assert proc.returncode == 0, proc.stdout
    assert 'SUCCESS: %d rules found' % len(ALERTS) in proc.stdout


def test_promtool_test_rules(promtool):
    proc = run(promtool, 'test', 'rules', os.path.basename(CASES))
    assert proc.returncode == 0, proc.stdout
    assert 'SUCCESS' in proc.stdout


def test_promtool_test_rules_fails_on_a_wrong_expectation(promtool, tmp_path):
    """The cases are judged: one expected alert label changed makes promtool fail."""
    cases = load(CASES)
    cases['rule_files'] = [RULES]
    first = cases['tests'][0]['alert_rule_test'][1]['exp_alerts'][0]['exp_labels']
    first['gpu_id'] = '0'
    target = tmp_path / 'wrong.test.yml'
    target.write_text(yaml.safe_dump(cases))
    proc = run(promtool, 'test', 'rules', str(target), cwd=str(tmp_path))
    assert proc.returncode != 0
    assert 'GpuUncorrectableEccErrors' in proc.stdout


@pytest.mark.parametrize('alert', sorted(ALERTS))
def test_every_alert_has_a_firing_case(alert):
    assert fired_in_cases().get(alert, 0) >= 1, '%s has no case in %s that expects it to fire' % (alert, CASES)


@pytest.mark.parametrize('alert', sorted(ALERTS))
def test_every_alert_names_the_node_and_says_what_to_do(alert):
    rule = ALERTS[alert]
    assert rule['labels']['severity'] in SEVERITIES
    assert set(rule['annotations']) == {'summary', 'description'}
    assert '$labels.node' in rule['annotations']['summary']


@pytest.mark.parametrize('alert', sorted(name for name, rule in ALERTS.items() if 'gpu_' in rule['expr'] or 'pcie_' in rule['expr']))
def test_gpu_alerts_name_the_gpu_and_never_rate_a_gauge(alert):
    """AMD's exporter serves its error totals as gauges: delta(), not rate() or increase()."""
    rule = ALERTS[alert]
    if alert != 'GpuExporterDown':
        assert '$labels.gpu_id' in rule['annotations']['summary']
    assert 'rate(' not in rule['expr'] and 'increase(' not in rule['expr']
