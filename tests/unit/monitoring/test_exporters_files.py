# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The exporters role's files: the gateway's log metrics program counts what the alert rules read (Debian's mtail
runs it once over a sample of the gateway's log), the textfile metrics pass promtool check metrics, and every
file with an exporter's arguments has one line of them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shutil
import subprocess

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
ROLE = os.path.join(ROOT, 'roles', 'exporters')
PROGRAM = os.path.join(ROLE, 'files', 'etc', 'mtail', 'llmfleet-gateway.mtail')
SAMPLE = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'exporters', 'gateway-access-sample.log')
UNPACKED_MTAIL = os.path.join(ROOT, '.cache', 'mtail', 'root', 'usr', 'bin', 'mtail')
_SAMPLE_LINE_RE = re.compile(r'^([a-z_:]+)\{([^}]*)\} ([0-9.e+]+)$')


@pytest.fixture(scope='module')
def mtail():
    for candidate in (os.environ.get('LLMFLEET_MTAIL'), UNPACKED_MTAIL, shutil.which('mtail')):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail('no mtail: run tests/tools/mtail.sh (it unpacks Debian\'s mtail package into .cache/mtail/) or set LLMFLEET_MTAIL')


def _load(name):
    with open(os.path.join(ROLE, name)) as handle:
        return yaml.safe_load(handle)


def render(source, changes=None):
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template
    variables = dict((key, trust_as_template(value) if isinstance(value, str) else value) for key, value in _load('vars/main.yml').items())
    variables.update(_load('defaults/main.yml'))
    variables.update({'exporters_listen_address': '10.89.77.211', 'ansible_managed': 'Ansible managed', 'inventory_hostname': 'gateway-1',
                      'groups': {'gpu_nodes': ['gpu-node-1'], 'gateways': ['gateway-1']},
                      'ansible_facts': {'rocm': {'rocm_version': '7.1.1'}}})
    variables.update(changes or {})
    with open(os.path.join(ROLE, 'templates', source)) as handle:
        return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(handle.read()))


@pytest.fixture(scope='module')
def counted(mtail, tmp_path_factory):
    progs = tmp_path_factory.mktemp('progs')
    shutil.copy(PROGRAM, str(progs))
    proc = subprocess.run([mtail, '--one_shot', '--one_shot_format', 'prometheus', '--progs', str(progs), '--logs', SAMPLE,
                           '--logtostderr'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stderr
    samples = {}
    for line in proc.stdout.splitlines():
        match = _SAMPLE_LINE_RE.match(line)
        if match:
            labels = dict(item.split('=', 1) for item in match.group(2).split(','))
            labels.pop('prog', None)
            key = (match.group(1),) + tuple(sorted((k, v.strip('"')) for k, v in labels.items()))
            samples[key] = float(match.group(3))
    return samples


@pytest.mark.parametrize('key, value', [
    (('llmfleet_gateway_responses_total', ('status', '200')), 2),
    (('llmfleet_gateway_responses_total', ('status', '502')), 1),
    (('llmfleet_gateway_responses_total', ('status', '404')), 1),
    (('llmfleet_gateway_upstream_failures_total', ('upstream', '10.89.77.201:8001')), 2),
], ids=['served', 'bad-gateway', 'not-found', 'failed-worker'])
def test_gateway_log_metrics(counted, key, value):
    assert counted.get(key) == value, counted


def test_a_worker_that_answered_has_no_failure(counted):
    assert ('llmfleet_gateway_upstream_failures_total', ('upstream', '10.89.77.201:8000')) not in counted


def test_textfile_metrics_pass_promtool(promtool, tmp_path):
    rocm = render('var/lib/prometheus/node-exporter/llmfleet-rocm.prom.j2')
    unit = render('etc/systemd/system/llmfleet-reboot-required.service.j2')
    printf = re.search(r'printf "([^"]*)"', unit).group(1).replace('\\n', '\n').replace('%%s', '1').replace('%s', '1')
    for name, text in (('rocm', rocm), ('reboot', printf)):
        proc = subprocess.run([promtool, 'check', 'metrics'], input=text, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, check=False)
        assert proc.returncode == 0, '%s: %s' % (name, proc.stdout)
    assert 'llmfleet_rocm_info{rocm_version="7.1.1"} 1' in rocm
    assert 'node_reboot_required 1' in printf


@pytest.mark.parametrize('source, expected', [
    ('etc/default/prometheus-node-exporter.j2', '--web.listen-address=10.89.77.211:9100'),
    ('etc/default/prometheus-nginx-exporter.j2', '-nginx.scrape-uri=http://127.0.0.1:8080/stub_status -web.listen-address=10.89.77.211:9113'),
], ids=['node-exporter', 'nginx-exporter'])
def test_exporter_arguments_are_one_line(source, expected):
    text = render(source)
    args = [line for line in text.splitlines() if not line.startswith('#')]
    assert len(args) == 1 and args[0].startswith('ARGS="') and expected in args[0]


def test_ipv6_listen_address_is_bracketed():
    assert '--web.listen-address=[fd00::11]:9100' in render('etc/default/prometheus-node-exporter.j2', {'exporters_listen_address': 'fd00::11'})


def test_stub_status_listens_on_loopback_only():
    text = render('etc/nginx/conf.d/llmfleet-stub-status.conf.j2')
    assert re.findall(r'listen ([^;]+);', text) == ['127.0.0.1:8080']


@pytest.mark.parametrize('changes, expected', [
    ({}, {'ServerPort': 5000, 'GPUConfig': {}}),
    ({'exporters_amdgpu_exporter_fields': ['GPU_JUNCTION_TEMPERATURE'], 'exporters_amdgpu_exporter_custom_labels': {'rack': 'r1'},
      'exporters_amdgpu_exporter_health_thresholds': {'GPU_ECC_UNCORRECT_UMC': 1}},
     {'ServerPort': 5000, 'GPUConfig': {'Fields': ['GPU_JUNCTION_TEMPERATURE'], 'CustomLabels': {'rack': 'r1'},
                                        'HealthThresholds': {'GPU_ECC_UNCORRECT_UMC': 1}}}),
], ids=['defaults', 'fields-labels-thresholds'])
def test_amd_exporter_configuration(changes, expected):
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template
    variables = dict((key, trust_as_template(value) if isinstance(value, str) else value) for key, value in _load('vars/main.yml').items())
    variables.update(_load('defaults/main.yml'))
    variables.update(changes)
    assert Templar(loader=DataLoader(), variables=variables).template(variables['_exporters_amdgpu_config']) == expected


def test_the_collection_s_own_metrics_are_made_by_the_role():
    """The names the rules and dashboards read beside the exporters' own (test_dashboards.OWN_NAMES)."""
    with open(PROGRAM) as handle:
        program = handle.read()
    assert 'counter llmfleet_gateway_responses_total by status' in program
    assert 'counter llmfleet_gateway_upstream_failures_total by upstream' in program
    assert 'llmfleet_rocm_info{' in render('var/lib/prometheus/node-exporter/llmfleet-rocm.prom.j2')


def test_enabling_the_reboot_required_path_enables_its_oneshot(tmp_path):
    # The role enables only the path unit (tasks/service.yml); its Also= must enable the oneshot, which runs at boot.
    # systemctl --root installs into a directory tree without a running systemd.
    systemctl = shutil.which('systemctl')
    if systemctl is None:
        pytest.skip('no systemctl on this machine')
    unit_dir = tmp_path / 'etc' / 'systemd' / 'system'
    unit_dir.mkdir(parents=True)
    for name in ('llmfleet-reboot-required.service', 'llmfleet-reboot-required.path'):
        (unit_dir / name).write_text(render('etc/systemd/system/%s.j2' % name))
    proc = subprocess.run([systemctl, '--root', str(tmp_path), 'enable', 'llmfleet-reboot-required.path'],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout
    wants = unit_dir / 'multi-user.target.wants'
    assert sorted(os.listdir(str(wants))) == ['llmfleet-reboot-required.path', 'llmfleet-reboot-required.service']
