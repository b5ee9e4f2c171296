# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The firewall role's confirm-or-revert (roles/firewall/tasks/load.yml), run by ansible-playbook
against localhost with stand-ins for nft, systemd-run and systemctl (the role's absolute paths
pointed at them, so that nothing on this machine is loaded or armed): confirmed, a load that nft
refuses, and a ruleset that locks the controller out, reverted by the armed timer.

The lock-out is played by the stand-ins: loading the new ruleset points the controller's Python
interpreter at nothing (so no new connection succeeds), the revert points it back.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import yaml

from input_rules import ROOT

LOAD = os.path.join(ROOT, 'roles', 'firewall', 'tasks', 'load.yml')
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')

NFT = r'''#!/bin/sh
echo "nft $*" >> "$SIM/calls.log"
case "$*" in
  "list table inet llmfleet")
    if [ -f "$SIM/live" ]; then cat "$SIM/live"; else echo "Error: No such file or directory" >&2; exit 1; fi ;;
  "-f $SIM/etc/firewall.nft")
    [ -n "$SIM_REFUSE" ] && { echo "Error: syntax error, simulated" >&2; exit 1; }
    cp "$2" "$SIM/live"; [ -n "$SIM_LOCKOUT" ] && echo /nonexistent/python > "$SIM/interpreter" ;;
  "-f $SIM/etc/firewall-previous.nft")
    cp "$2" "$SIM/live"; echo "$SIM_PYTHON" > "$SIM/interpreter" ;;
esac
exit 0
'''
# A timer: the last argument is the revert's command, run after --on-active unless systemctl stopped it.
SYSTEMD_RUN = r'''#!/bin/sh
echo "systemd-run $*" >> "$SIM/calls.log"
for last; do :; done
delay=$(printf '%s\n' "$@" | sed -n 's/^--on-active=\([0-9]*\)s$/\1/p')
( sleep "$delay"; [ -f "$SIM/stopped" ] || { echo "revert" >> "$SIM/calls.log"; /bin/sh -c "$last"; } ) >/dev/null 2>&1 &
'''
SYSTEMCTL = r'''#!/bin/sh
echo "systemctl $*" >> "$SIM/calls.log"
touch "$SIM/stopped"
'''
NEW = 'table inet llmfleet\ndelete table inet llmfleet\ntable inet llmfleet {\n}\n'
OLD = 'table inet llmfleet {\n\tchain input {\n\t\ttype filter hook input priority filter; policy drop;\n\t}\n}\n'


def run_load(tmp_path, live=None, confirm=3, **env):
    sim = str(tmp_path)
    os.makedirs(os.path.join(sim, 'etc'))
    for name, text in (('nft', NFT), ('systemd-run', SYSTEMD_RUN), ('systemctl', SYSTEMCTL)):
        path = os.path.join(sim, name)
        with open(path, 'w') as handle:
            handle.write(text)
        os.chmod(path, 0o755)
    with open(os.path.join(sim, 'interpreter'), 'w') as handle:
        handle.write(sys.executable)
    if live is not None:
        with open(os.path.join(sim, 'live'), 'w') as handle:
            handle.write(live)
    with open(os.path.join(sim, 'etc', 'firewall.nft'), 'w') as handle:
        handle.write(NEW)
    play = [{
        'hosts': 'localhost', 'gather_facts': False,
        'vars': {
            'ansible_connection': 'local',
            'ansible_python_interpreter': "{{ lookup('ansible.builtin.file', '%s/interpreter') }}" % sim,
            '_firewall_nft': sim + '/nft', '_firewall_systemd_run': sim + '/systemd-run', '_firewall_systemctl': sim + '/systemctl',
            '_firewall_file': sim + '/etc/firewall.nft', '_firewall_confirmed_file': sim + '/etc/firewall-confirmed.nft',
            '_firewall_previous_file': sim + '/etc/firewall-previous.nft', '_firewall_revert_unit': 'llmfleet-firewall-revert',
            '_firewall_unit': 'llmfleet-firewall.service',
            '_firewall_previous_head': 'table inet llmfleet\ndelete table inet llmfleet\n',
            '_firewall_revert_command': '%s/nft -f %s/etc/firewall-previous.nft && rm -f %s/etc/firewall.nft' % (sim, sim, sim),
            'firewall_confirm_timeout': confirm, 'firewall_reconnect_timeout': 1, 'firewall_admin_cidrs': ['10.0.0.1/32'],
            'firewall_ssh_port': 22,
        },
        'tasks': [{'name': 'Load', 'ansible.builtin.include_tasks': LOAD}],
    }]
    with open(os.path.join(sim, 'play.json'), 'w') as handle:
        json.dump(play, handle)
    with open(os.path.join(sim, 'ansible.cfg'), 'w') as handle:
        handle.write('[defaults]\n')
    environ = dict(os.environ, SIM=sim, SIM_PYTHON=sys.executable, ANSIBLE_CONFIG=os.path.join(sim, 'ansible.cfg'), ANSIBLE_NOCOLOR='1',
                   ANSIBLE_RETRY_FILES_ENABLED='0', ANSIBLE_LOCAL_TEMP=os.path.join(sim, 'tmp'), **env)
    proc = subprocess.run([PLAYBOOK, '-i', 'localhost,', os.path.join(sim, 'play.json')], cwd=sim, env=environ,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert os.path.exists(os.path.join(sim, 'calls.log')), proc.stdout
    with open(os.path.join(sim, 'calls.log')) as handle:
        calls = [line.split(' ')[0] if line.startswith('systemd-run') else line.strip() for line in handle]
    files = sorted(os.listdir(os.path.join(sim, 'etc')))
    return proc, calls, files, sim


def read(path):
    with open(path) as handle:
        return handle.read()


def test_confirmed(tmp_path):
    # The revert must not fire here: a confirm window long enough for a loaded machine (the play stops the timer).
    proc, calls, files, sim = run_load(tmp_path, confirm=30)
    assert proc.returncode == 0, proc.stdout
    assert calls == ['nft list table inet llmfleet', 'systemd-run', 'nft -f %s/etc/firewall.nft' % sim,
                     'systemctl stop llmfleet-firewall-revert.timer', 'systemctl restart llmfleet-firewall.service']
    assert files == ['firewall-confirmed.nft', 'firewall-previous.nft', 'firewall.nft']
    assert read(os.path.join(sim, 'etc', 'firewall-confirmed.nft')) == NEW
    # No table before: the saved "previous" removes ours and nothing else.
    assert read(os.path.join(sim, 'etc', 'firewall-previous.nft')) == 'table inet llmfleet\ndelete table inet llmfleet\n'


def test_refused_by_nft(tmp_path):
    proc, calls, files, sim = run_load(tmp_path, live=OLD, SIM_REFUSE='1')
    assert proc.returncode != 0
    assert 'failed at \\"Load the new ruleset\\"' in proc.stdout and 'simulated' in proc.stdout, proc.stdout
    assert 'firewall-confirmed.nft' not in files
    assert read(os.path.join(sim, 'etc', 'firewall-previous.nft')) == 'table inet llmfleet\ndelete table inet llmfleet\n' + OLD
    # The armed revert fired during the rescue's wait and took the rendered file away: the next run loads again.
    assert calls[-2:] == ['revert', 'nft -f %s/etc/firewall-previous.nft' % sim] and 'firewall.nft' not in files


def test_locked_out_and_reverted(tmp_path):
    proc, calls, files, sim = run_load(tmp_path, live=OLD, SIM_LOCKOUT='1')
    assert proc.returncode != 0
    assert 'locked the controller out' in proc.stdout and 'came back by itself' in proc.stdout, proc.stdout
    assert 'firewall_admin_cidrs [\\"10.0.0.1/32\\"]' in proc.stdout, proc.stdout
    assert calls == ['nft list table inet llmfleet', 'systemd-run', 'nft -f %s/etc/firewall.nft' % sim, 'revert',
                     'nft -f %s/etc/firewall-previous.nft' % sim]
    assert read(os.path.join(sim, 'live')) == 'table inet llmfleet\ndelete table inet llmfleet\n' + OLD
    assert files == ['firewall-previous.nft']


def test_the_role_defaults_keep_the_margin():
    """The defaults leave 10 seconds between the reconnect's end and the revert (the input rule's margin)."""
    with open(os.path.join(ROOT, 'roles', 'firewall', 'defaults', 'main.yml')) as handle:
        defaults = yaml.safe_load(handle)
    assert defaults['firewall_reconnect_timeout'] + 10 <= defaults['firewall_confirm_timeout']
