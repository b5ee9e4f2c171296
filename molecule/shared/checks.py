# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks shared by the scenarios' verify tests (molecule/<scenario>/tests/test_*.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess


def assert_check_run_changes_nothing(test_file):
    """Run the scenario's converge.yml (the scenario of `test_file`) with --check --diff against its instances, as
    molecule's inventory and ansible.cfg give them: it must succeed, and every host's recap must show changed=0."""
    ephemeral = os.environ['MOLECULE_EPHEMERAL_DIRECTORY']
    scenario = os.path.dirname(os.path.dirname(os.path.abspath(test_file)))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ephemeral, 'ansible.cfg'))
    proc = subprocess.run(
        ['ansible-playbook', '-i', os.environ['MOLECULE_INVENTORY_FILE'], os.path.join(scenario, 'converge.yml'), '--check', '--diff'],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    if proc.returncode != 0:
        raise AssertionError('the check run failed (rc %d):\n%s' % (proc.returncode, proc.stdout))
    recap = [line for line in proc.stdout.splitlines() if 'changed=' in line and 'unreachable=' in line]
    if not recap or not all(' changed=0 ' in line for line in recap):
        raise AssertionError('the check run would change something:\n%s' % proc.stdout)
