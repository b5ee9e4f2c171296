# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's stand-in of AMD's Device Metrics Exporter (lab/stubs/amdgpu_exporter.py): AMD's names and labels for
each GPU of a profile, every name the alert rules and dashboards read from AMD's exporter, and the fault switch
(an uncorrectable ECC error on one GPU fires GpuUncorrectableEccErrors for that GPU in promtool, and clears)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

import amdgpu_exporter
import labhost

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
PROFILES = os.path.join(ROOT, 'lab', 'profiles')
RULES = os.path.join(ROOT, 'roles', 'monitoring', 'files', 'llmfleet.rules.yml')
sys.path.insert(0, os.path.join(ROOT, 'tests', 'unit', 'monitoring'))
from promql_names import find_promtool, page_names  # noqa: E402

SHAPE = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'exporters', 'amdgpu-exporter-shape.txt')
_LINE_RE = re.compile(r'^([a-z_]+)\{([^}]*)\} (\S+)$')


@pytest.fixture(scope='module')
def promtool():
    return find_promtool()


def gpus_of(profile):
    with open(os.path.join(PROFILES, profile + '.json')) as handle:
        return labhost.machine(json.load(handle))[1]


def samples(text, name):
    """gpu_id -> (labels text, value) of one metric."""
    found = {}
    for line in text.splitlines():
        match = _LINE_RE.match(line)
        if match and match.group(1) == name:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2)))
            found[labels.get('gpu_id')] = (match.group(2), float(match.group(3)))
    return found


@pytest.mark.parametrize('profile, count, card', [
    ('mi300x-2', 2, 'MI300X'), ('mi300x-8', 8, 'MI300X'), ('mi250x-4', 4, 'MI250X'),
])
def test_one_set_of_metrics_per_gpu(profile, count, card):
    text = amdgpu_exporter.render(gpus_of(profile), 'gpu-node-1')
    health = samples(text, 'gpu_health')
    assert sorted(health) == [str(index) for index in range(count)]
    assert all('card_model="%s"' % card in labels and 'hostname="gpu-node-1"' in labels for labels, _value in health.values())
    assert samples(text, 'gpu_nodes_total')[None][1] == count
    assert all('# TYPE %s gauge' % name in text for name, _help in amdgpu_exporter.METRICS)


def test_it_serves_amd_s_names_and_every_one_the_rules_read():
    served = page_names_of(amdgpu_exporter.render(gpus_of('mi300x-2'), 'h'))
    shape = page_names(SHAPE)
    assert served <= shape, sorted(served - shape)
    with open(RULES) as handle:
        exprs = ' '.join(rule['expr'] for group in yaml.safe_load(handle)['groups'] for rule in group['rules'])
    read = set(re.findall(r'\b((?:gpu|pcie)_[a-z_]+)\b', exprs))
    assert read and read <= served, sorted(read - served)


def page_names_of(text):
    return set(match.group(1) for match in (_LINE_RE.match(line) for line in text.splitlines()) if match)


def test_a_degraded_link_of_the_profile_shows():
    speeds = samples(amdgpu_exporter.render(gpus_of('mi300x-8-findings'), 'h'), 'pcie_speed')
    assert sorted(set(value for _labels, value in speeds.values())) == [16.0, 32.0]


@pytest.mark.parametrize('files, expected', [
    ({'gpu1.json': {'ecc_uncorrect': 2}}, {1: {'gpu_ecc_uncorrect_total': 2.0}}),
    ({'gpu0.json': {'junction_temperature': 108, 'health': 0}}, {0: {'gpu_junction_temperature': 108.0, 'gpu_health': 0.0}}),
    ({'gpu3.json': {'ecc_uncorrect': 'two', 'unknown': 1, 'pcie_replays': True}}, {}),
    ({'gpu2.json': 'not json', 'notes.txt': {'ecc_uncorrect': 1}}, {}),
], ids=['ecc', 'thermal-and-health', 'bad-values-ignored', 'bad-files-ignored'])
def test_fault_switch(tmp_path, files, expected):
    for name, data in files.items():
        (tmp_path / name).write_text(data if isinstance(data, str) else json.dumps(data))
    assert amdgpu_exporter.read_faults(str(tmp_path)) == expected


def test_faults_change_only_their_gpu():
    gpus = gpus_of('mi300x-2')
    text = amdgpu_exporter.render(gpus, 'h', {1: {'gpu_ecc_uncorrect_total': 2.0}})
    ecc = samples(text, 'gpu_ecc_uncorrect_total')
    assert (ecc['0'][1], ecc['1'][1]) == (0.0, 2.0)


@pytest.mark.parametrize('config, port', [({}, 5000), ({'ServerPort': 5005}, 5005), ({'ServerPort': 'x'}, 5000), ([], 5000)])
def test_server_port(config, port):
    assert amdgpu_exporter.server_port(config) == port


def test_an_injected_ecc_error_fires_its_alert_for_that_gpu_and_clears(promtool, tmp_path):
    """Three scrapes before the fault, six with it (one a minute), then the fault cleared: promtool evaluates the
    collection's rule over the stand-in's own values and labels."""
    gpus = gpus_of('mi300x-2')
    clean = samples(amdgpu_exporter.render(gpus, 'gpu-node-1'), 'gpu_ecc_uncorrect_total')
    faulty = samples(amdgpu_exporter.render(gpus, 'gpu-node-1', {1: {'gpu_ecc_uncorrect_total': 2.0}}), 'gpu_ecc_uncorrect_total')
    series = []
    for gpu_id in ('0', '1'):
        values = [clean[gpu_id][1]] * 3 + [faulty[gpu_id][1]] * 6 + [clean[gpu_id][1]] * 12
        series.append({'series': 'gpu_ecc_uncorrect_total{%s,job="amd_gpu",node="gpu-node-1",instance="10.89.77.201:5000"}'
                                 % clean[gpu_id][0], 'values': ' '.join('%g' % value for value in values)})
    labels = dict(re.findall(r'(\w+)="([^"]*)"', faulty['1'][0]))
    labels.update({'job': 'amd_gpu', 'node': 'gpu-node-1', 'instance': '10.89.77.201:5000', 'severity': 'critical'})
    cases = {'rule_files': [RULES], 'evaluation_interval': '1m', 'tests': [{
        'interval': '1m', 'input_series': series,
        'alert_rule_test': [
            {'eval_time': '2m', 'alertname': 'GpuUncorrectableEccErrors', 'exp_alerts': []},
            {'eval_time': '4m', 'alertname': 'GpuUncorrectableEccErrors', 'exp_alerts': [{
                'exp_labels': labels,
                'exp_annotations': {
                    'summary': 'GPU 1 of gpu-node-1 counted uncorrectable ECC errors',
                    'description': 'gpu_ecc_uncorrect_total of GPU 1 on gpu-node-1 rose within the last 5 minutes.'
                                   ' Drain its workers and run the validation playbook on the node.'}}]},
            {'eval_time': '20m', 'alertname': 'GpuUncorrectableEccErrors', 'exp_alerts': []},
        ]}]}
    path = tmp_path / 'ecc.test.yml'
    path.write_text(yaml.safe_dump(cases))
    proc = subprocess.run([promtool, 'test', 'rules', str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout


# --- the stub package amdgpu-exporter in the stub repository ---------------------------------

def test_stub_package_has_amd_s_units_and_the_stand_in(tmp_path):
    from labctl import packages
    spec = packages.repo_spec()
    versions = packages.package_versions(spec, '7.1.1', 'noble')
    assert versions['amdgpu-exporter'] == '%s-%s~24.04' % (spec['exporter']['release'], spec['exporter']['revision'])
    packages.stage_package(spec, 'amdgpu-exporter', '7.1.1', 'noble', versions, str(tmp_path))
    exporter = (tmp_path / 'lib/systemd/system/amd-metrics-exporter.service').read_text()
    assert 'ExecStart=/usr/bin/python3 /usr/lib/amdgpu-exporter-lab/amdgpu_exporter.py' in exporter
    assert 'Wants=gpuagent.service' in exporter and 'After=gpuagent.service' in exporter
    assert (tmp_path / 'lib/systemd/system/gpuagent.service').exists()
    assert (tmp_path / 'usr/local/etc/metrics/gpuagent.conf').exists()
    for module in (amdgpu_exporter, labhost):
        name = os.path.basename(module.__file__.replace('.pyc', '.py'))
        with open(os.path.join(ROOT, 'lab', 'stubs', name), 'rb') as handle:
            assert (tmp_path / 'usr/lib/amdgpu-exporter-lab' / name).read_bytes() == handle.read(), 'installed beside each other'
    assert 'enable gpuagent.service amd-metrics-exporter.service' in (tmp_path / 'DEBIAN/postinst').read_text()
    assert 'Package: amdgpu-exporter' in (tmp_path / 'DEBIAN/control').read_text()


def test_stub_package_builds(tmp_path):
    from labctl import packages
    spec = packages.repo_spec()
    versions = packages.package_versions(spec, '7.1.1', 'jammy')
    work = tmp_path / 'work'
    work.mkdir()
    packages.build_debs(spec, spec['exporter_packages'], '7.1.1', 'jammy', versions, str(tmp_path / 'repo'), str(work))
    deb = tmp_path / 'repo' / packages.pool_path('amdgpu-exporter', versions['amdgpu-exporter'], 'amd64')
    info = subprocess.run(['dpkg-deb', '-f', str(deb), 'Package', 'Version'], stdout=subprocess.PIPE, universal_newlines=True,
                          check=True).stdout
    assert info == 'Package: amdgpu-exporter\nVersion: %s\n' % versions['amdgpu-exporter']


def test_the_repository_is_rebuilt_when_the_stand_in_changes():
    from labctl import repository
    names = set(os.path.relpath(path, ROOT) for path in repository.source_files())
    assert set(['lab/stubs/amdgpu_exporter.py', 'lab/stubs/labhost.py']) <= names


# --- labctl fault ----------------------------------------------------------------------------

def _fault_args(argv):
    from labctl import cli
    return cli.build_parser().parse_args(['fault'] + argv)


@pytest.mark.parametrize('argv, document', [
    (['gpu-node-1', '--gpu', '1', '--ecc-uncorrect', '2'], {'ecc_uncorrect': 2}),
    (['gpu-node-2', '--gpu', '0', '--junction-temperature', '108', '--health', '0'], {'junction_temperature': 108.0, 'health': 0}),
    (['gpu-node-1', '--gpu', '1', '--clear'], None),
], ids=['ecc', 'thermal', 'clear'])
def test_fault_command(monkeypatch, tmp_path, argv, document):
    from labctl import faults
    args = _fault_args(argv)
    assert faults.fault_document(args) == document
    calls = []
    monkeypatch.setattr(faults, 'podman', lambda *a, **kw: calls.append((a, kw)) or (0, ''))
    monkeypatch.setattr(faults, 'say', lambda text: None)
    faults.apply(args.host, args.gpu, document)
    (argv_, kwargs), = calls
    assert argv_[argv_.index('exec') + 1 + (1 if document else 0)] == 'llmfleet-lab-' + args.host
    path = '/run/llmfleet-lab/faults/gpu%d.json' % args.gpu
    if document is None:
        assert argv_[-3:] == ('rm', '-f', path)
    else:
        assert json.loads(kwargs['input_data'].decode()) == document
        # The stand-in reads what the command writes.
        (tmp_path / ('gpu%d.json' % args.gpu)).write_bytes(kwargs['input_data'])
        assert set(amdgpu_exporter.read_faults(str(tmp_path))[args.gpu]) == set(amdgpu_exporter.FAULT_KEYS[key] for key in document)


def test_fault_command_needs_a_fault():
    from labctl import common, faults
    with pytest.raises(common.LabError, match='give a fault'):
        faults.fault_document(_fault_args(['gpu-node-1', '--gpu', '0']))


def test_the_switch_and_the_stand_in_agree_on_the_keys():
    from labctl import faults
    assert set(key for key, _kind in faults.OPTIONS) == set(amdgpu_exporter.FAULT_KEYS) == set(labhost.FAULT_KEYS)
