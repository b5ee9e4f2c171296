#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: wheel_build_status
short_description: Show, or follow until it ends, an engine build on a builder host
version_added: 0.1.0
description:
  - Reads the state of the build that M(llmfleet.rocm.wheel_build) runs or ran in a build directory (its stage,
    whether its process is still alive, and the last lines of the current stage's log).
  - With O(follow=true) (done by the action plugin on the controller) it polls every O(interval) seconds until
    the build ends, printing the stage, its duration and the log's last lines whenever they change, and at least
    every O(interval) seconds; it returns the build's own result when O(job) names its async job.
  - A build whose process is gone while its state still says running was killed (or its host restarted). That
    fails with the last lines of its log; running the build again resumes it.
  - M(ansible.builtin.async_status) says only whether the job has ended; it shows no stage, no log, and nothing until
    the end.
author:
  - llmfleet.rocm contributors (@llmfleet)
options:
  build_dir:
    description: The builder's build directory.
    type: path
    required: true
  key:
    description: The build key to report on.
    type: str
    required: true
  tail_lines:
    description: Lines of the current stage's log to return (and print when following).
    type: int
    default: 8
  follow:
    description: Poll until the build ends (controller side); C(false) reads the state once.
    type: bool
    default: false
  job:
    description: The async job id of the M(llmfleet.rocm.wheel_build) task, whose result is returned when it ends.
    type: str
  interval:
    description: Seconds between two polls and at most between two progress lines, when following.
    type: int
    default: 30
  timeout:
    description: Seconds to follow before giving up (the build goes on; following again picks it up).
    type: int
    default: 86400
attributes:
  action:
    support: full
    description: An action plugin polls the module when following.
  async:
    support: none
    description: Following is already a poll.
  check_mode:
    support: full
    description: Reads only.
  diff_mode:
    support: none
    description: No diff.
'''

EXAMPLES = r'''
- name: Follow the build until it ends
  llmfleet.rocm.wheel_build_status:
    build_dir: /var/lib/llmfleet/build
    key: "{{ plan.key }}"
    job: "{{ job.ansible_job_id }}"
    follow: true
    interval: 60
'''

RETURN = r'''
state:
  description: C(none) (never built), C(waiting) (another key's build holds the builder), C(running), C(done),
    C(failed), or C(killed) (the process is gone while running).
  returned: always
  type: str
  sample: running
complete:
  description: Whether the key's wheelhouse is complete.
  returned: always
  type: bool
  sample: false
stage:
  description: The stage the build is in (C(setup), a component, or C(wheelhouse)).
  returned: always
  type: str
  sample: pytorch
stage_index:
  description: Its number, counting from 1 (0 while setting up).
  returned: always
  type: int
  sample: 1
stages:
  description: Every stage with its state (pending, building, built, reused) and duration.
  returned: always
  type: list
  elements: dict
  sample: [{"name": "pytorch", "state": "building"}]
log:
  description: The log file of the current (or failing) stage on the builder.
  returned: always
  type: str
  sample: /var/lib/llmfleet/build/logs/3f1c2a9e0b7d4c55/01-pytorch.log
tail:
  description: The last lines of that log.
  returned: always
  type: list
  elements: str
  sample: ["[1200/7311] Building HIP object ..."]
pid:
  description: The build's process.
  returned: always
  type: int
  sample: 41235
alive:
  description: Whether that process still runs.
  returned: always
  type: bool
  sample: true
elapsed:
  description: Seconds since the build started (its status file's clock).
  returned: always
  type: float
  sample: 612.0
'''

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.llmfleet.rocm.plugins.module_utils._wheel_build import (
    STATUS_FILE, pid_alive, read_json, tail, wheelhouse_complete)


def build_state(build_dir, key, tail_lines):
    """The state of the key's build as the status file and /proc tell it."""
    status = read_json(os.path.join(build_dir, STATUS_FILE)) or {}
    complete = wheelhouse_complete(build_dir, key)
    alive = pid_alive(status.get('pid'))
    if status.get('key') != key:
        state = 'done' if complete else ('waiting' if alive and status.get('state') == 'running' else 'none')
        status = {} if state != 'waiting' else status
    else:
        state = status.get('state', 'none')
        if state == 'running' and not alive:
            state = 'killed'
    stages = status.get('stages', [])
    index = status.get('stage_index', 0)
    log = status.get('failed_log') or (stages[index - 1].get('log') if 0 < index <= len(stages) else None)
    if not log and status.get('log_dir'):
        log = os.path.join(status['log_dir'], '00-setup.log')
    started = status.get('started')
    try:
        elapsed = round(time.time() - time.mktime(time.strptime(started[:19], '%Y-%m-%dT%H:%M:%S')), 1)
    except (TypeError, ValueError):
        elapsed = 0.0
    return dict(state=state, complete=complete, key=key, stage=status.get('stage', ''), stage_index=index,
                stages=stages, log=log or '', tail=tail(log, tail_lines) if log else [], pid=status.get('pid', 0),
                alive=alive, elapsed=elapsed, message=status.get('message', ''))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            build_dir=dict(type='path', required=True),
            key=dict(type='str', required=True, no_log=False),
            tail_lines=dict(type='int', default=8),
            follow=dict(type='bool', default=False),
            job=dict(type='str'),
            interval=dict(type='int', default=30),
            timeout=dict(type='int', default=86400),
        ),
        supports_check_mode=True,
    )
    module.exit_json(changed=False, **build_state(module.params['build_dir'], module.params['key'],
                                                  module.params['tail_lines']))


if __name__ == '__main__':
    main()
