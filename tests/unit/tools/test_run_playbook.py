# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tools/run_playbook.py for real: ansible-runner drives tiny playbooks with `connection: local` on
localhost (files written under the test's tmp dir only), and the table and messages it prints."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.machinery
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

pytest.importorskip('ansible_runner')

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TOOL = os.path.join(ROOT, 'tools', 'run_playbook.py')
SECRET = 'not-a-real-secret-5f1e0c'


def _tool():
    loader = importlib.machinery.SourceFileLoader('run_playbook', TOOL)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


tool = _tool()

# Changes a file on the first run, nothing on the second; asserts what the run's Ansible sees.
CONVERGES = '''\
- name: Converge a tmp dir
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Check what ansible-runner passed on
      ansible.builtin.assert:
        that:
          - lookup('ansible.builtin.config', 'HOST_KEY_CHECKING') | bool
          - lookup('ansible.builtin.config', 'CONFIG_FILE') == ansible_cfg
          - lookup('ansible.builtin.config', 'CACHE_PLUGIN_CONNECTION') is search('/[.]cache/facts$')
        quiet: true
      vars:
        ansible_cfg: "{{ lookup('ansible.builtin.env', 'ANSIBLE_CONFIG') }}"
    - name: Write the marker file
      ansible.builtin.copy:
        content: "converged\\n"
        dest: "{{ playbook_dir }}/marker.txt"
        mode: "0644"
'''

# Changes something on every run: one plain task and a no_log loop whose item is a secret.
ALWAYS_CHANGES = '''\
- name: Never converge
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Write the marker file
      ansible.builtin.copy:
        content: "stable\\n"
        dest: "{{ playbook_dir }}/marker.txt"
        mode: "0644"
    - name: Report a change every time
      ansible.builtin.command: /bin/true
      changed_when: true
    - name: Report a secret change every time
      ansible.builtin.command: /bin/true
      changed_when: true
      no_log: true
      loop:
        - "%s"
''' % SECRET

FAILS = '''\
- name: Fail
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Stop here
      ansible.builtin.fail:
        msg: the task failed on purpose
    - name: Never reached
      ansible.builtin.debug:
        msg: not reached
'''

REACHES_NOTHING = '''\
- name: Reach a closed port
  hosts: closed
  gather_facts: false
  tasks:
    - name: Ping
      ansible.builtin.ping:
'''


@pytest.fixture
def project(tmp_path):
    """A tmp dir with an inventory of localhost and a place for the runner's private data dir and log."""
    (tmp_path / 'hosts.ini').write_text(
        'localhost ansible_connection=local ansible_python_interpreter=%s\n'
        '[closed]\nclosed-host ansible_host=127.0.0.1 ansible_port=1 ansible_connection=ssh\n' % sys.executable)
    return tmp_path


def run(project, playbook_text, *options, env=None, inventory='hosts.ini'):
    (project / 'play.yml').write_text(playbook_text)
    argv = [sys.executable, TOOL, '-i', str(project / inventory), '--private-data-dir', str(project / 'pdd'),
            '--log', str(project / 'play.log')] + list(options) + [str(project / 'play.yml')]
    environment = dict(os.environ, **(env or {}))
    result = subprocess.run(argv, cwd=str(project), env=environment, capture_output=True, text=True, timeout=120, check=False)
    log = (project / 'play.log').read_text() if (project / 'play.log').exists() else ''
    return result, log


def stats_rows(text):
    """{(run number, host): {column: value}} from the tool's stats tables."""
    rows, run_number, headings = {}, None, None
    for line in text.splitlines():
        match = re.match(r'==> per-host stats of run (\d+) of \d+', line)
        if match:
            run_number, headings = int(match.group(1)), None
        elif run_number and line.startswith('  ') and line.split():
            cells = line.split()
            if cells[0] == 'host':
                headings = cells[1:]
            elif headings:
                rows[(run_number, cells[0])] = dict(zip(headings, (int(cell) for cell in cells[1:])))
        else:
            run_number = None if not line.startswith('  ') else run_number
    return rows


def sandbox_summary(project):
    """The summary lines of tests/sandbox.sh ("tasks changed in this converge: N"), run on the tool's log."""
    with open(os.path.join(ROOT, 'tests', 'sandbox.sh')) as handle:
        script = handle.read()
    block = re.search(r'^if \[ -f "\$logs/site.log" \]; then\n.*?^fi$', script, re.S | re.M).group(0)
    shutil.copy(str(project / 'play.log'), str(project / 'site.log'))
    result = subprocess.run(['bash', '-c', block], env=dict(os.environ, logs=str(project)),
                            capture_output=True, text=True, timeout=30, check=True)
    return result.stdout


def test_converges_once_then_twice_changes_nothing(project):
    result, log = run(project, CONVERGES, '--twice', env={'ANSIBLE_HOST_KEY_CHECKING': 'False'})
    assert result.returncode == 0, result.stdout + result.stderr
    rows = stats_rows(result.stdout)
    assert rows[(1, 'localhost')] == {'ok': 2, 'changed': 1, 'failed': 0, 'unreachable': 0, 'skipped': 0, 'rescued': 0}
    assert rows[(2, 'localhost')]['changed'] == 0
    assert 'OK: ' in result.stdout and 'the second run changed nothing' in result.stdout
    assert (project / 'marker.txt').read_text() == 'converged\n'
    # The log: the play output without colours (PLAY RECAP lines as ansible-playbook prints them) and the tables.
    assert '\x1b[' not in log and '\r' not in log
    assert re.findall(r'localhost +: ok=\d+ +changed=(\d+)', log) == ['1', '0']
    assert stats_rows(log) == rows
    assert '==> run 1 of 2: ' in log and '==> run 2 of 2: ' in log
    # env/envvars as a CI job's private data dir has it.
    envvars = (project / 'pdd' / 'env' / 'envvars').read_text()
    assert "ANSIBLE_HOST_KEY_CHECKING: 'True'" in envvars
    assert 'ANSIBLE_CONFIG: %s' % os.path.join(ROOT, 'ansible.cfg') in envvars
    assert sorted(os.listdir(project / 'pdd' / 'env')) == ['envvars']
    # tests/sandbox.sh reads the PLAY RECAP lines of each run from that log.
    summary = sandbox_summary(project)
    assert 'tasks changed in this converge: 1 ' in summary and 'tasks changed in the second run: 0 ' in summary


def test_one_run_is_the_default(project):
    result, _log = run(project, CONVERGES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert '==> run 1 of 1: ' in result.stdout and '==> run 2' not in result.stdout
    assert stats_rows(result.stdout)[(1, 'localhost')]['changed'] == 1
    summary = sandbox_summary(project)
    assert 'tasks changed in this converge: 1 ' in summary and 'second run' not in summary


def test_second_run_that_changes_fails_and_names_the_tasks(project):
    result, log = run(project, ALWAYS_CHANGES, '--idempotent', env={'CI_JOB_TOKEN': SECRET})
    assert result.returncode == tool.EXIT_NOT_IDEMPOTENT, result.stdout + result.stderr
    assert stats_rows(result.stdout)[(2, 'localhost')]['changed'] == 2
    report = result.stdout[result.stdout.index('NOT IDEMPOTENT'):]
    assert 'changed 2 task(s) on localhost' in report
    assert re.search(r'^  localhost: Report a change every time \(.*play\.yml:\d+\)$', report, re.M)
    assert re.search(r'^  localhost: Report a secret change every time \[items: \(hidden: no_log\)\]', report, re.M)
    assert 'Write the marker file' not in report
    assert 'tasks changed in this converge: 3 ' in sandbox_summary(project)
    assert 'tasks changed in the second run: 2 ' in sandbox_summary(project)
    # The secret (a no_log item, and the job's environment) is nowhere: not in the output, the log or the artifacts.
    assert SECRET not in result.stdout + result.stderr + log
    for directory, _dirs, files in os.walk(str(project / 'pdd')):
        for name in files:
            with open(os.path.join(directory, name), errors='replace') as handle:
                assert SECRET not in handle.read(), os.path.join(directory, name)


def test_failed_host_fails_and_stops_before_a_second_run(project):
    result, log = run(project, FAILS, '--twice')
    assert result.returncode == tool.EXIT_FAILED, result.stdout + result.stderr
    assert stats_rows(result.stdout) == {
        (1, 'localhost'): {'ok': 0, 'changed': 0, 'failed': 1, 'unreachable': 0, 'skipped': 0, 'rescued': 0}}
    assert 'FAILED: ' in result.stdout and 'failed: localhost' in result.stdout
    assert 'runner status failed (ansible-playbook rc=2)' in result.stdout
    assert 'the task failed on purpose' in log and '==> run 2' not in log


@pytest.mark.skipif(not shutil.which('ssh'), reason='needs the ssh client')
def test_unreachable_host_fails(project):
    result, _log = run(project, REACHES_NOTHING)
    assert result.returncode == tool.EXIT_FAILED, result.stdout + result.stderr
    assert stats_rows(result.stdout)[(1, 'closed-host')]['unreachable'] == 1
    assert 'unreachable: closed-host' in result.stdout


def test_ansible_error_fails_with_the_runner_status(project):
    result, log = run(project, '- name: Broken\n  hosts: localhost\n  tasks: not a list\n')
    assert result.returncode == tool.EXIT_FAILED
    assert '(no host ran a task)' in result.stdout
    assert 'runner status failed' in result.stdout and 'ERROR' in log


@pytest.mark.parametrize('what, argv, message', [
    ('inventory', ['-i', 'missing/inventory', 'play.yml'], 'run_playbook: inventory not found: missing/inventory'),
    ('playbook', ['-i', 'hosts.ini', 'missing.yml'], 'run_playbook: playbook not found: missing.yml'),
    ('timeout', ['-i', 'hosts.ini', '--timeout', '-1', 'play.yml'], 'run_playbook: --timeout must be 0 or more'),
], ids=['missing-inventory', 'missing-playbook', 'negative-timeout'])
def test_bad_input_is_one_line(project, what, argv, message):
    (project / 'play.yml').write_text(CONVERGES)
    result = subprocess.run([sys.executable, TOOL, '--private-data-dir', str(project / 'pdd')] + argv,
                            cwd=str(project), capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == tool.EXIT_USAGE
    assert result.stderr.startswith(message) and result.stderr.count('\n') == 1, result.stderr
    assert 'Traceback' not in result.stderr and result.stdout == ''
    assert not (project / 'pdd').exists()


def test_stats_table_lists_every_host_of_every_key():
    stats = {'ok': {'a': 3, 'bb-long-name': 1}, 'changed': {'a': 1}, 'failures': {'bb-long-name': 1},
             'dark': {'c': 1}, 'skipped': {'a': 2}, 'rescued': {}, 'processed': {'a': 1, 'bb-long-name': 1, 'c': 1}}
    assert tool.stats_table(stats).splitlines() == [
        '  host             ok  changed  failed  unreachable  skipped  rescued',
        '  a                 3        1       0            0        2        0',
        '  bb-long-name      1        0       1            0        0        0',
        '  c                 0        0       0            1        0        0',
    ]
    assert 'changed=' not in tool.stats_table(stats)
    assert tool.run_problems('successful', 0, stats) == ['failed: bb-long-name', 'unreachable: c']
    assert tool.run_problems('successful', 0, {'ok': {'a': 1}}) == []
    assert tool.run_problems('timeout', 254, None) == ['runner status timeout (ansible-playbook rc=254)']
    assert tool.stats_table(None) == '  (no host ran a task)'
