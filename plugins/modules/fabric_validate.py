#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: fabric_validate
short_description: Run rccl-tests' all-reduce across the nodes of a group over the fabric and judge it
version_added: 0.1.0
description:
  - Runs on the group's first node. Starts C(all_reduce_perf -b 8 -e 8G -f 2 -g 1) with Open MPI's C(mpirun), one
    rank per GPU of every member, one application context per member so that each member's ranks get that member's
    RCCL environment (its C(/etc/llmfleet/rccl.env), given in I(group)). Open MPI starts its daemons over SSH with
    I(ssh_key) and checks the members' host keys against I(known_hosts) only; its own traffic stays on the group's
    networks.
  - Judges the report (parsed by the collection's rccl-tests parser) with three findings; every rank of every member
    took part, no wrong value, and the in-place bus bandwidth at 8 GiB against the group's threshold.
    A run that fails (SSH refused, a member's firewall, a rank's HIP or RCCL error) is a failed finding with the
    program's own lines, not a module failure, so that the fleet table shows it.
  - Writes C(report.json), C(junit.xml), C(summary.txt) and the run's output (C(raw/all_reduce_perf.txt)) under
    I(report_dir).
  - In check mode nothing runs and nothing is written.
  - No module of C(ansible.builtin), C(community.general) or C(ansible.posix) starts an MPI job or reads rccl-tests'
    report. With C(mpirun) in M(ansible.builtin.command), the report would be parsed and judged in Jinja.
author:
  - llmfleet.rocm contributors (@llmfleet)
options:
  group:
    description:
      - The group's plan, an entry of the C(validate_fabric_plan) filter's result (C(group), C(members), C(hosts) with
        each member's C(address), C(slots) and C(env), C(np), C(networks), C(threshold)).
    type: dict
    required: true
  program:
    description: The rccl-tests program, at the same path on every member.
    type: path
    required: true
  mpirun:
    description: Open MPI's launcher (name or path).
    type: str
    default: mpirun
  ssh_key:
    description: The private key Open MPI's SSH uses to reach the other members.
    type: path
    required: true
  known_hosts:
    description: The members' host keys; no other host key is accepted.
    type: path
    required: true
  ssh_port:
    description: The members' SSH port on the fabric network.
    type: int
    default: 22
  bind_to:
    description:
      - What Open MPI binds each rank to. C(numa) keeps a rank on the CPUs of one NUMA domain; C(none) leaves the
        scheduler free (a host with fewer CPUs than ranks, where Open MPI refuses to bind more ranks than CPUs).
    type: str
    choices: [numa, socket, core, none]
    default: numa
  report_dir:
    description: Directory of the group's reports (created).
    type: path
    required: true
'''

EXAMPLES = r'''
- name: Run the all-reduce across the group
  llmfleet.rocm.fabric_validate:
    group: "{{ _validate_fabric_plan['all'] }}"
    program: /opt/rccl-tests/current/bin/all_reduce_perf
    ssh_key: /run/llmfleet-fabric/id_ed25519
    known_hosts: /run/llmfleet-fabric/known_hosts
    report_dir: /var/lib/llmfleet/validate/fabric-all
  register: fabric
'''

RETURN = r'''
findings:
  description: The run's findings (level ok, warning or error; id; figure; threshold; source; message).
  returned: success
  type: list
  elements: dict
failed_checks:
  description: The findings with level error.
  returned: success
  type: list
  elements: dict
files:
  description: The files written under report_dir.
  returned: success
  type: list
  elements: str
commands:
  description: The command run, as an argument list.
  returned: always
  type: list
  elements: list
'''

import json
import os
import shlex

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.llmfleet.rocm.plugins.module_utils._atomic_file import write_atomic
from ansible_collections.llmfleet.rocm.plugins.module_utils._rccl_tests import parse_rccl_tests
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError
from ansible_collections.llmfleet.rocm.plugins.module_utils._tool_runner import ToolRunner, first_lines, output_text
from ansible_collections.llmfleet.rocm.plugins.module_utils import _validate_report as report
from ansible_collections.llmfleet.rocm.plugins.module_utils._validate_fabric import CHECK, judge_fabric, mpirun_argv

GROUP_KEYS = ('group', 'members', 'hosts', 'np', 'networks')
HOST_KEYS = ('address', 'slots', 'env')


def group_problem(group):
    """What is missing from the plan entry, or None."""
    missing = [key for key in GROUP_KEYS if key not in group]
    if missing:
        return 'group lacks %s: pass an entry of the validate_fabric_plan filter' % ', '.join(missing)
    if group.get('skip'):
        return 'group %s cannot run: %s' % (group['group'], group['skip'])
    if len(group['hosts']) < 2:
        return 'group %s has %d member(s): the all-reduce across nodes needs two or more' % (group['group'], len(group['hosts']))
    for host in group['hosts']:
        absent = [key for key in HOST_KEYS if key not in host]
        if absent:
            return 'a member of group %s lacks %s' % (group['group'], ', '.join(absent))
    return None


def run_findings(rc, text, group):
    """The findings of one run: judged when its report parses, else one error with the program's own lines."""
    try:
        parsed = parse_rccl_tests(text)
    except ToolError as exc:
        return [report.finding('error', CHECK, 'the all-reduce across %s stopped: "%s". %s'
                               % (', '.join(group['members']), exc.line, exc.hint))]
    except ParseError as exc:
        return [report.finding('error', CHECK, 'the all-reduce across %s printed no report (mpirun exited with %d; %s): %s'
                               % (', '.join(group['members']), rc, exc.detail, first_lines(text, 8)))]
    findings = judge_fabric(parsed, group)
    if rc != 0:
        findings.append(report.finding('error', CHECK + '.exit', 'mpirun exited with %d after the report: %s'
                                       % (rc, first_lines(text, 8)), rc, 0))
    return findings


def main():
    module = AnsibleModule(
        argument_spec=dict(
            group=dict(type='dict', required=True),
            program=dict(type='path', required=True),
            mpirun=dict(type='str', default='mpirun'),
            ssh_key=dict(type='path', required=True, no_log=False),
            known_hosts=dict(type='path', required=True),
            ssh_port=dict(type='int', default=22),
            bind_to=dict(type='str', default='numa', choices=['numa', 'socket', 'core', 'none']),
            report_dir=dict(type='path', required=True),
        ),
        supports_check_mode=True,
    )
    group = module.params['group']
    problem = group_problem(group)
    if problem:
        module.fail_json(msg=problem)
    if module.check_mode:
        module.exit_json(changed=False, skipped=True, msg='the all-reduce runs the tools; nothing runs in check mode',
                         commands=[])
    runner = ToolRunner(module)
    mpirun = runner.find(module.params['mpirun'])
    if not mpirun:
        runner.fail('%s is not installed: the validate role installs openmpi-bin (validate_packages)' % module.params['mpirun'])
    ssh_args = ' '.join(shlex.quote(word) for word in [
        '-i', module.params['ssh_key'], '-p', str(module.params['ssh_port']), '-o', 'BatchMode=yes',
        '-o', 'IdentitiesOnly=yes', '-o', 'StrictHostKeyChecking=yes', '-o', 'UserKnownHostsFile=' + module.params['known_hosts'],
        '-o', 'GlobalKnownHostsFile=/dev/null'])
    argv = mpirun_argv(mpirun, group, module.params['program'], ssh_args, module.params['bind_to'])
    rc, out, err = runner.run(argv)
    text = output_text(out, err)
    findings = run_findings(rc, text, group)
    directory = module.params['report_dir']
    name = 'fabric %s' % group['group']
    raw = os.path.join(directory, 'raw')
    if not os.path.isdir(raw):
        os.makedirs(raw, 0o755)
    files = [os.path.join(raw, 'all_reduce_perf.txt')]
    write_atomic(files[-1], text)
    tally = report.counts(findings)
    document = {'group': group['group'], 'members': group['members'], 'np': group['np'], 'threshold': group.get('threshold'),
                'counts': tally, 'findings': findings, 'commands': runner.commands}
    for file_name, content in (('report.json', json.dumps(document, indent=2, sort_keys=True, default=str) + '\n'),
                               ('junit.xml', report.junit_xml(name, findings)),
                               ('summary.txt', report.summary_text(name, 'members: %s' % ', '.join(group['members']), findings))):
        files.append(os.path.join(directory, file_name))
        write_atomic(files[-1], content)
    module.exit_json(changed=True, findings=findings, failed_checks=[item for item in findings if item['level'] == 'error'],
                     counts=tally, files=files, commands=runner.commands)


if __name__ == '__main__':
    main()
