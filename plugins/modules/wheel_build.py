#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: wheel_build
short_description: Build engine wheels from git sources into a wheelhouse stored under a build key
version_added: 0.1.0
description:
  - Runs the stages of a build (PyTorch, Triton, vLLM, ...) in order on a builder host. It checks each component
    out at its commit (or copies a path component's directory), runs its steps with the stage's environment in the
    build's virtual environment, keeps the wheels it makes, and installs them into that environment when later
    stages need them.
  - Then collects the dependencies as wheels, writes a lock with sha256 hashes, and moves the finished
    wheelhouse to C(<build_dir>/wheelhouse/<key>) in one rename, with C(COMPLETE) inside; C(current) is then
    pointed at it. Until then nothing under C(wheelhouse/) changes, so a failed or killed build leaves the
    previous wheelhouse in use.
  - A stage whose wheels exist (same stage key) is reused, across builds too; a stage interrupted midway is
    resumed in the tree it left. One build runs at a time on a builder; a second one waits for the first.
  - Meant to run with C(async) and C(poll=0), followed by M(llmfleet.rocm.wheel_build_status), which shows
    the progress. The keys and stages come from the roles' internal C(llmfleet.rocm.build_plan) filter.
  - Tasks of M(ansible.builtin.git) and M(ansible.builtin.command) would run the hours of a build in the play's own
    connection, not as one C(async) job that resumes a stage where it stopped, and could not replace the wheelhouse in
    one rename.
author:
  - llmfleet.rocm contributors (@llmfleet)
options:
  build_dir:
    description: The builder's build directory (sources, stage wheels, work, wheelhouses, logs).
    type: path
    required: true
  key:
    description: The build key (the wheelhouse's directory name).
    type: str
    required: true
  stages:
    description:
      - The stages in build order, as the build_plan filter returns them.
      - Each has C(name), C(key) (the stage key), C(repo), C(ref), C(commit), C(subdir) (where the steps run,
        relative to the checkout), C(steps) (argument lists, run without a shell), C(env) (added to the
        environment) and C(install) (install its wheels into the build environment).
      - A path stage has C(path) (a directory on the builder, such as C(/opt/rocm/share/amd_smi)) instead of C(repo)
        and C(ref), and the digest of its files as C(commit); its steps run in a copy of it under C(src/<name>).
      - An export stage has C(export) (a directory of its checkout) and no steps; that directory, copied to
        C(stages/<stage key>/tree), is its result. A later stage's C(source_env) (variable -> export stage name)
        sets the variable to that tree, as vLLM's build takes C(TRITON_KERNELS_SRC_DIR).
    type: list
    elements: dict
    required: true
  document:
    description: What the key was computed from; stored in the wheelhouse's C(llmfleet-wheelhouse.json).
    type: dict
    required: true
  python:
    description: The Python that creates the build's virtual environment (the nodes' Python version).
    type: path
    required: true
  env:
    description: Environment of every stage (C(ROCM_PATH), C(PYTORCH_ROCM_ARCH), C(MAX_JOBS), ...).
    type: dict
    default: {}
  pip_env:
    description:
      - pip's settings as environment variables (C(PIP_INDEX_URL), C(PIP_FIND_LINKS), ...), used by every pip call
        of the build, the steps' included.
    type: dict
    default: {}
  toolchain_requirements:
    description: Requirements file of the build tools installed into the build's environment.
    type: path
  toolchain_wheels:
    description: Directory with the wheels of O(toolchain_requirements) (installed with C(--no-index)).
    type: path
  keep:
    description: Complete wheelhouses kept on the builder (the current one is never removed).
    type: int
    default: 3
  tail_lines:
    description: Lines of the failing step's log returned on failure.
    type: int
    default: 40
attributes:
  check_mode:
    support: full
    description: In check mode the module reports whether the build would run, and changes nothing.
  diff_mode:
    support: none
    description: No diff.
notes:
  - Full logs stay on the builder under C(<build_dir>/logs/<key>/), one file per stage.
'''

EXAMPLES = r'''
- name: Start the build
  llmfleet.rocm.wheel_build:
    build_dir: /var/lib/llmfleet/build
    key: "{{ plan.key }}"
    stages: "{{ plan.stages }}"
    document: "{{ plan.document }}"
    python: /usr/bin/python3
    env:
      PYTORCH_ROCM_ARCH: gfx942
      MAX_JOBS: "32"
  async: 43200
  poll: 0
  register: job
'''

RETURN = r'''
key:
  description: The build key.
  returned: always
  type: str
  sample: 3f1c2a9e0b7d4c55
wheelhouse:
  description: Directory of the complete wheelhouse.
  returned: always
  type: str
  sample: /var/lib/llmfleet/build/wheelhouse/3f1c2a9e0b7d4c55
built:
  description: Stages built by this run.
  returned: success
  type: list
  elements: str
  sample: [vllm]
reused:
  description: Stages whose wheels an earlier build had made.
  returned: success
  type: list
  elements: str
  sample: [pytorch, triton]
seconds:
  description: Duration of the build.
  returned: success
  type: float
  sample: 5423.7
packages:
  description: What the wheelhouse's lock pins.
  returned: success
  type: list
  elements: str
  sample: [torch==2.10.0a0+git8514f05, vllm==0.32.0+rocm711]
failed_stage:
  description: The stage whose step failed.
  returned: failure
  type: str
  sample: pytorch
log:
  description: The full log of the failing stage, on the builder.
  returned: failure
  type: str
  sample: /var/lib/llmfleet/build/logs/3f1c2a9e0b7d4c55/01-pytorch.log
tail:
  description: The last lines of that log.
  returned: failure
  type: list
  elements: str
  sample: ["hipcc: error: ..."]
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.llmfleet.rocm.plugins.module_utils._wheel_build import (
    BuildError, WheelBuild, wheelhouse_complete)

STAGE_FIELDS = ('name', 'key', 'commit')


def stage_problem(index, stage):
    """Why a stage cannot be built (None when it can)."""
    label = 'stage %d (%s)' % (index + 1, stage.get('name', '?'))
    missing = [field for field in STAGE_FIELDS if not stage.get(field)]
    if not stage.get('path'):
        missing.extend(field for field in ('repo', 'ref') if not stage.get(field))
    if missing:
        return '%s lacks %s' % (label, ', '.join(missing))
    steps = stage.get('steps')
    if stage.get('export'):
        if steps:
            return '%s exports %s and has no steps' % (label, stage['export'])
        return None
    if not isinstance(steps, list) or not steps or not all(isinstance(step, list) and step for step in steps):
        return '%s: every step must be a non-empty argument list, and there must be one' % label
    return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            build_dir=dict(type='path', required=True),
            key=dict(type='str', required=True, no_log=False),
            stages=dict(type='list', elements='dict', required=True),
            document=dict(type='dict', required=True),
            python=dict(type='path', required=True),
            env=dict(type='dict', default={}),
            pip_env=dict(type='dict', default={}),
            toolchain_requirements=dict(type='path'),
            toolchain_wheels=dict(type='path'),
            keep=dict(type='int', default=3),
            tail_lines=dict(type='int', default=40),
        ),
        required_together=[('toolchain_requirements', 'toolchain_wheels')],
        supports_check_mode=True,
    )
    params = module.params
    key = params['key']
    wheelhouse = os.path.join(params['build_dir'], 'wheelhouse', key)
    problems = []
    if not key or '/' in key or key.startswith('.') or key == 'current':
        problems.append('key %r is not a directory name' % key)
    for index, stage in enumerate(params['stages']):
        problem = stage_problem(index, stage)
        if problem:
            problems.append(problem)
    if params['keep'] < 1:
        problems.append('keep must be 1 or more')
    if problems:
        module.fail_json(msg='wheel_build: ' + '; '.join(problems), key=key, wheelhouse=wheelhouse)
    if not os.access(params['python'], os.X_OK):
        module.fail_json(msg='wheel_build: %s is not an executable Python' % params['python'], key=key,
                         wheelhouse=wheelhouse)

    if module.check_mode:
        module.exit_json(changed=not wheelhouse_complete(params['build_dir'], key), key=key, wheelhouse=wheelhouse)

    build = WheelBuild(params['build_dir'], key, params['stages'], params['document'], params['python'],
                       env=params['env'], pip_env=params['pip_env'],
                       toolchain_requirements=params['toolchain_requirements'],
                       toolchain_wheels=params['toolchain_wheels'], keep=params['keep'],
                       tail_lines=params['tail_lines'])
    try:
        result = build.execute()
    except BuildError as exc:
        module.fail_json(msg='%s\n%s' % (exc, '\n'.join(exc.tail)), key=key, wheelhouse=wheelhouse,
                         failed_stage=exc.stage, log=exc.log, tail=exc.tail, rc=exc.rc)
    except (IOError, OSError) as exc:
        module.fail_json(msg='wheel_build: %s' % exc, key=key, wheelhouse=wheelhouse)
    manifest = result.get('manifest') or {}
    module.exit_json(changed=result['changed'], key=key, wheelhouse=wheelhouse, built=result['built'],
                     reused=result['reused'], seconds=result['seconds'], packages=manifest.get('packages', []))


if __name__ == '__main__':
    main()
