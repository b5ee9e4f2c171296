#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: tarball_build
short_description: Build a tool from a git commit into a tarball stored under its build key
version_added: 0.1.0
description:
  - Builds one tool (such as rccl-tests, which ROCm does not package) on a builder host, once per build key. It
    checks the source out at the stage's commit, runs the stage's steps there with the stage's environment, and
    packs the files its output patterns match into C(<build_dir>/artifacts/<name>-<key>.tar.gz) under C(bin/),
    with a manifest (what the key was computed from, each file's sha256) as the tarball's last member and beside it
    as C(<name>-<key>.json).
  - The tarball is written under a temporary name and renamed, the manifest beside it last; a failed or killed
    build leaves no artifact of its key and every other one as it was. An artifact whose manifest and sha256
    match is not built again (changed is false). One build runs at a time per build directory.
  - The stage comes from the roles' internal C(llmfleet.rocm.build_plan) filter (one component), as the engine build's do.
  - M(ansible.builtin.git), M(ansible.builtin.command) and M(community.general.archive) do each step, but not as one.
    A build stopped between two tasks would leave a half-made artifact under its key, two runs could build in one
    directory at once, and the manifest's sha256s would be computed in Jinja.
author:
  - llmfleet.rocm contributors (@llmfleet)
options:
  build_dir:
    description: The tool's build directory on the builder (sources, logs, artifacts).
    type: path
    required: true
  key:
    description: The build key (part of the artifact's name).
    type: str
    required: true
  stage:
    description:
      - The build, as the build_plan filter returns a stage. It has C(name), C(repo), C(ref), C(commit), C(key),
        C(steps) (argument lists, run without a shell in the checkout) and C(env) (added to the environment).
    type: dict
    required: true
  document:
    description: What the key was computed from; stored in the manifest.
    type: dict
    required: true
  outputs:
    description: Glob patterns, relative to the checkout, of the files the artifact holds (each must match a file).
    type: list
    elements: str
    required: true
  env:
    description: Environment of the steps besides the stage's own (C(ROCM_PATH), C(HIPCC_COMPILE_FLAGS_APPEND), ...).
    type: dict
    default: {}
  keep:
    description: Complete artifacts of the tool kept on the builder (the key's own is never removed).
    type: int
    default: 3
  tail_lines:
    description: Lines of the log returned on failure.
    type: int
    default: 40
attributes:
  check_mode:
    support: full
    description: In check mode the module reports whether the build would run (and an existing artifact's sha256), and changes nothing.
  diff_mode:
    support: none
    description: No diff.
notes:
  - The full log stays on the builder as C(<build_dir>/logs/<key>.log).
'''

EXAMPLES = r'''
- name: Build rccl-tests once for this key
  llmfleet.rocm.tarball_build:
    build_dir: /var/lib/llmfleet/build/rccl-tests
    key: "{{ plan.key }}"
    stage: "{{ plan.stages[0] }}"
    document: "{{ plan.document }}"
    outputs: [build/*_perf]
    env:
      ROCM_PATH: /opt/rocm
      HIPCC_COMPILE_FLAGS_APPEND: --offload-arch=gfx942
  async: 7200
  poll: 15
'''

RETURN = r'''
key:
  description: The build key.
  returned: always
  type: str
  sample: 5d0c3a9e1f2b4c77
artifact:
  description: The artifact's tarball on the builder.
  returned: always
  type: str
  sample: /var/lib/llmfleet/build/rccl-tests/artifacts/rccl-tests-5d0c3a9e1f2b4c77.tar.gz
sha256:
  description: The tarball's sha256.
  returned: success, in check mode when the artifact exists
  type: str
  sample: 9b1f0c2d5e6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e
files:
  description: The files of the artifact and their sha256.
  returned: success, in check mode when the artifact exists
  type: dict
  sample: {bin/all_reduce_perf: 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae}
seconds:
  description: Duration of the build (0 when the artifact existed).
  returned: success
  type: float
  sample: 412.5
log:
  description: The build's full log on the builder.
  returned: always
  type: str
  sample: /var/lib/llmfleet/build/rccl-tests/logs/5d0c3a9e1f2b4c77.log
tail:
  description: The last lines of the log.
  returned: failure
  type: list
  elements: str
  sample: ["make: *** [Makefile:24: src.build] Error 2"]
'''

import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.llmfleet.rocm.plugins.module_utils._tool_build import ToolBuild, complete_manifest
from ansible_collections.llmfleet.rocm.plugins.module_utils._wheel_build import BuildError

STAGE_FIELDS = ('name', 'key', 'repo', 'ref', 'commit', 'steps')
NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*$')


def problems_of(params):
    """The inputs the module refuses, as messages (before anything is created)."""
    problems = []
    if not NAME.match(params['key'] or ''):
        problems.append('key %r is not a file name part (letters, digits, ".", "_", "-")' % params['key'])
    stage = params['stage']
    missing = [field for field in STAGE_FIELDS if not stage.get(field)]
    if missing:
        problems.append('the stage lacks %s' % ', '.join(missing))
    else:
        if not NAME.match(str(stage['name'])):
            problems.append('the stage name %r is not a file name part' % stage['name'])
        if not all(isinstance(step, list) and step for step in stage['steps']):
            problems.append('every step must be a non-empty argument list')
    if not params['outputs']:
        problems.append('outputs must name at least one pattern')
    bad = [pattern for pattern in params['outputs'] if os.path.isabs(pattern) or '..' in pattern.split('/')]
    if bad:
        problems.append('output patterns must stay inside the checkout: %s' % ', '.join(bad))
    if params['keep'] < 1:
        problems.append('keep must be 1 or more')
    return problems


def main():
    module = AnsibleModule(
        argument_spec=dict(
            build_dir=dict(type='path', required=True),
            key=dict(type='str', required=True, no_log=False),
            stage=dict(type='dict', required=True),
            document=dict(type='dict', required=True),
            outputs=dict(type='list', elements='str', required=True),
            env=dict(type='dict', default={}),
            keep=dict(type='int', default=3),
            tail_lines=dict(type='int', default=40),
        ),
        supports_check_mode=True,
    )
    params = module.params
    key = params['key']
    problems = problems_of(params)
    if problems:
        module.fail_json(msg='tarball_build: ' + '; '.join(problems), key=key)
    build = ToolBuild(params['build_dir'], key, params['stage'], params['document'], params['outputs'],
                      env=params['env'], keep=params['keep'], tail_lines=params['tail_lines'])
    tarball, log = build.tarball, build.log
    if module.check_mode:
        manifest = complete_manifest(build.build_dir, build.name, key)
        if manifest:
            module.exit_json(changed=False, key=key, artifact=tarball, log=log, sha256=manifest['sha256'],
                             files=manifest['files'], seconds=0.0)
        module.exit_json(changed=True, key=key, artifact=tarball, log=log, seconds=0.0)
    try:
        result = build.execute()
    except BuildError as exc:
        module.fail_json(msg='%s\n%s' % (exc, '\n'.join(exc.tail)), key=key, artifact=tarball, log=log,
                         tail=exc.tail, rc=exc.rc)
    except (IOError, OSError) as exc:
        module.fail_json(msg='tarball_build: %s' % exc, key=key, artifact=tarball, log=log)
    manifest = result['manifest']
    module.exit_json(changed=result['changed'], key=key, artifact=tarball, log=log, sha256=manifest['sha256'],
                     files=manifest['files'], seconds=result['seconds'])


if __name__ == '__main__':
    main()
