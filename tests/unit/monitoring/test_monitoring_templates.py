# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The monitoring role's templates rendered as the role renders them (ansible's Templar, the role's defaults and
vars/main.yml), with the targets of monitoring_scrape_targets written beside them: promtool check config accepts
the result, and it scrapes what the alert rules and dashboards expect."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.prometheus_targets import monitoring_scrape_targets

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
ROLE = os.path.join(ROOT, 'roles', 'monitoring')
GROUPS = {'gpu_nodes': ['gpu-node-1'], 'gateways': ['gateway-1'], 'monitoring': ['monitor-1']}
HOSTVARS = {
    'gpu-node-1': {'llmfleet_private_address': '10.89.77.201',
                   'llmfleet_worker_endpoints': [{'name': 'llmfleet-worker-0', 'address': '10.89.77.201', 'port': 8000,
                                                  'gpus': [0], 'model': 'tiny-llama', 'engine': 'vllm',
                                                  'engine_version': '0.32.0'}]},
    'gateway-1': {'llmfleet_private_address': '10.89.77.211'},
    'monitor-1': {'llmfleet_private_address': '10.89.77.221'},
}


def _load(name):
    with open(os.path.join(ROLE, name)) as handle:
        return yaml.safe_load(handle)


def _trusted(value, trust):
    if isinstance(value, str):
        return trust(value)
    if isinstance(value, list):
        return [_trusted(item, trust) for item in value]
    return value


def render(tmp_path, changes=None):
    """Render prometheus.yml, alertmanager.yml and the /etc/default files into tmp_path (as monitoring_config_dir)."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template
    variables = dict((key, _trusted(value, trust_as_template)) for key, value in _load('vars/main.yml').items())
    variables.update(_load('defaults/main.yml'))
    variables.update({'monitoring_config_dir': str(tmp_path), 'ansible_managed': 'Ansible managed',
                      'inventory_hostname': 'monitor-1'})
    variables.update(changes or {})
    templar = Templar(loader=DataLoader(), variables=variables)
    rendered = {}
    for source in ('etc/prometheus/prometheus.yml.j2', 'etc/prometheus/alertmanager.yml.j2', 'etc/default/prometheus.j2',
                   'etc/default/prometheus-alertmanager.j2'):
        with open(os.path.join(ROLE, 'templates', source)) as handle:
            rendered[os.path.basename(source)[:-3]] = templar.template(trust_as_template(handle.read()))
    (tmp_path / 'prometheus.yml').write_text(rendered['prometheus.yml'])
    (tmp_path / 'alertmanager.yml').write_text(rendered['alertmanager.yml'])
    targets = monitoring_scrape_targets(variables, HOSTVARS, GROUPS)
    (tmp_path / 'llmfleet' / 'targets').mkdir(parents=True)
    (tmp_path / 'llmfleet' / 'rules').mkdir(parents=True)
    for job, groups in targets.items():
        (tmp_path / 'llmfleet' / 'targets' / ('%s.json' % job)).write_text(json.dumps(groups, indent=4) + '\n')
    shutil.copy(os.path.join(ROLE, 'files', 'llmfleet.rules.yml'), str(tmp_path / 'llmfleet' / 'rules'))
    return rendered


@pytest.mark.parametrize('changes', [
    {},
    {'monitoring_listen_address': 'fd00::5', 'monitoring_alertmanager_listen_address': '10.89.77.221',
     'monitoring_scrape_interval': '30s', 'monitoring_evaluation_interval': '1m', 'monitoring_retention': '52w'},
], ids=['defaults', 'private-addresses'])
def test_promtool_accepts_the_configuration_and_its_files(promtool, tmp_path, changes):
    render(tmp_path, changes)
    proc = subprocess.run([promtool, 'check', 'config', str(tmp_path / 'prometheus.yml')], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout
    assert 'SUCCESS: 23 rules found' in proc.stdout


def test_every_job_of_the_rules_is_scraped(tmp_path):
    config = yaml.safe_load(render(tmp_path)['prometheus.yml'])
    jobs = [job['job_name'] for job in config['scrape_configs']]
    assert jobs == ['prometheus', 'alertmanager', 'node', 'amd_gpu', 'nginx', 'gateway_log', 'workers']
    assert config['rule_files'] == [str(tmp_path / 'llmfleet' / 'rules' / '*.yml')]
    assert config['alerting']['alertmanagers'][0]['static_configs'][0]['targets'] == ['127.0.0.1:9093']


@pytest.mark.parametrize('changes, receiver, url', [
    ({}, 'none', None),
    ({'monitoring_alertmanager_webhook_url': 'https://hooks.example.internal/alerts'}, 'webhook',
     'https://hooks.example.internal/alerts'),
], ids=['no-webhook', 'webhook'])
def test_alertmanager_routes(tmp_path, changes, receiver, url):
    config = yaml.safe_load(render(tmp_path, changes)['alertmanager.yml'])
    assert config['route']['receiver'] == receiver
    assert [item['name'] for item in config['receivers']] == [receiver]
    if url:
        assert config['receivers'][0]['webhook_configs'] == [{'url': url, 'send_resolved': True}]


@pytest.mark.parametrize('changes, prometheus, alertmanager', [
    ({}, '--web.listen-address=127.0.0.1:9090', '--web.listen-address=127.0.0.1:9093'),
    ({'monitoring_listen_address': 'fd00::5', 'monitoring_alertmanager_listen_port': 19093},
     '--web.listen-address=[fd00::5]:9090', '--web.listen-address=127.0.0.1:19093'),
], ids=['loopback', 'ipv6'])
def test_listen_arguments(tmp_path, changes, prometheus, alertmanager):
    rendered = render(tmp_path, changes)
    assert prometheus in rendered['prometheus']
    assert alertmanager in rendered['prometheus-alertmanager']
    assert rendered['prometheus-alertmanager'].rstrip().endswith('--cluster.listen-address="')
    for name in ('prometheus', 'prometheus-alertmanager'):
        assert len([line for line in rendered[name].splitlines() if line.startswith('ARGS=')]) == 1
