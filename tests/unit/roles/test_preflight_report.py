# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight role's reports on the controller (roles/preflight/tasks/report.yml), run by ansible-playbook for two
nodes played by localhost: <preflight_report_dir>/<host>.json and .txt with the judged findings, mode 0644, the
directory made when missing and left as it is when present, never a change, written in check mode, and no diff.

The readings are the healthy node of the preflight filter's tests (tests/unit/plugins/filter/test_preflight.py), given
as the role's _preflight_findings_inputs (an extra variable), with a low disk on one node so that it has a finding.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import json
import os
import stat
import subprocess
import sys

from role_files import ROOT

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.preflight_findings import preflight_findings, preflight_readings

PLAYBOOK = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
HOSTS = ('node-a', 'node-b')


def _filter_cases():
    path = os.path.join(ROOT, 'tests', 'unit', 'plugins', 'filter', 'test_preflight.py')
    spec = importlib.util.spec_from_file_location('preflight_filter_cases', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CASES = _filter_cases()


def _inputs(host):
    inputs = CASES.healthy()
    inputs['host'] = host
    if host == 'node-b':
        CASES._disk(10)(inputs)
    return inputs


def run_report(tmp_path, report_dir, *extra, cwd=None):
    """Run the role's report tasks for both nodes; the result of ansible-playbook and its recap per host."""
    inventory = tmp_path / 'inventory.yml'
    inventory.write_text(json.dumps({'all': {'hosts': dict((host, {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
        'report_test_inputs': _inputs(host)}) for host in HOSTS)}}))
    play = tmp_path / 'play.yml'
    play.write_text(json.dumps([{'hosts': 'all', 'gather_facts': False, 'tasks': [
        {'name': 'Write the reports', 'ansible.builtin.include_role': {'name': 'llmfleet.rocm.preflight', 'tasks_from': 'report'}}]}]))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'), ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, '.collections'),
               ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0')
    # An extra variable outranks the role's vars/main.yml, which builds the inputs from what gather.yml registers.
    proc = subprocess.run([PLAYBOOK, '-i', str(inventory), str(play), '-e', 'preflight_report_dir=' + report_dir,
                           '-e', '{"_preflight_findings_inputs": "{{ report_test_inputs }}"}']
                          + list(extra), cwd=cwd or str(tmp_path), env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recap = dict((line.split()[0], line) for line in proc.stdout.splitlines() if 'unreachable=' in line)
    return proc, recap


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_each_node_gets_its_json_and_readable_report(tmp_path):
    reports = tmp_path / 'reports' / 'deeper'
    _proc, recap = run_report(tmp_path, str(reports) + '//')
    assert sorted(os.listdir(str(reports))) == ['node-a.json', 'node-a.txt', 'node-b.json', 'node-b.txt']
    for host in HOSTS:
        findings = preflight_findings(_inputs(host))
        data = json.loads((reports / (host + '.json')).read_text())
        assert data == {
            'host': host, 'stopping_levels': ['fail'],
            'counts': dict((level, sum(1 for f in findings if f['level'] == level)) for level in ('fail', 'warn', 'info')),
            'findings': findings, 'readings': json.loads(json.dumps(preflight_readings(_inputs(host))))}
        assert (reports / (host + '.json')).read_text().endswith('}\n')
        text = (reports / (host + '.txt')).read_text()
        assert text.startswith('#') and '\nPreflight of %s\n' % host in text
        for path in (reports / (host + '.json'), reports / (host + '.txt')):
            assert _mode(str(path)) == 0o644
        assert ' changed=0 ' in recap[host]
    assert data['counts']['fail'] == 1 and '[fail] disk-space-low' in text
    assert 'No findings.' in (reports / 'node-a.txt').read_text()


def test_the_reports_are_rewritten_only_when_they_differ_in_check_mode_too_with_no_diff(tmp_path):
    reports = tmp_path / 'reports'
    reports.mkdir()
    os.chmod(str(reports), 0o2770)
    run_report(tmp_path, str(reports))
    inodes = dict((name, os.stat(str(reports / name)).st_ino) for name in os.listdir(str(reports)))
    os.utime(str(reports / 'node-a.txt'), (0, 0))
    run_report(tmp_path, str(reports))
    assert dict((name, os.stat(str(reports / name)).st_ino) for name in os.listdir(str(reports))) == inodes
    assert os.stat(str(reports / 'node-a.txt')).st_mtime == 0
    # An existing directory keeps its own mode.
    assert _mode(str(reports)) == 0o2770
    # A report that differs, or its mode alone, is put right, in check mode too, and neither is a change nor a diff.
    (reports / 'node-a.json').write_text('{}\n')
    os.chmod(str(reports / 'node-b.txt'), 0o600)
    proc, recap = run_report(tmp_path, str(reports), '--check', '--diff')
    assert json.loads((reports / 'node-a.json').read_text())['host'] == 'node-a'
    assert _mode(str(reports / 'node-b.txt')) == 0o644
    assert '--- before' not in proc.stdout and '+++ after' not in proc.stdout
    assert all(' changed=0 ' in line for line in recap.values())


def test_a_relative_directory_is_taken_from_where_ansible_playbook_runs(tmp_path):
    (tmp_path / 'here').mkdir()
    run_report(tmp_path, 'out/reports', cwd=str(tmp_path / 'here'))
    assert sorted(os.listdir(str(tmp_path / 'here' / 'out' / 'reports'))) == ['node-a.json', 'node-a.txt', 'node-b.json', 'node-b.txt']
