#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: engine_args
short_description: Check serving engine flags against the engine's own argument parser
version_added: 0.1.0
description:
  - Builds the argument parser of C(vllm serve) or of SGLang's C(launch_server) inside the engine's Python
    environment and parses the given flags with it, without starting anything.
  - A flag the engine does not know (a misspelling, or a flag of another engine or version) fails the module
    with the parser's own message, which names the flag.
author:
  - llmfleet.rocm contributors (@llmfleet)
options:
  python:
    description: Python interpreter of the engine's environment.
    type: path
    required: true
  engine:
    description: Which engine's parser to use.
    type: str
    choices: [vllm, sglang]
    required: true
  args:
    description: The flags to check, as an argument list (the model path excluded).
    type: list
    elements: str
    required: true
attributes:
  check_mode:
    support: full
    description: The module only reads; it runs the same in check mode.
  diff_mode:
    support: none
    description: Nothing is changed.
'''

EXAMPLES = r'''
- name: Check the flags of the workers before any unit changes
  llmfleet.rocm.engine_args:
    python: /opt/llmfleet/engines/current/bin/python
    engine: vllm
    args: [--max-model-len, "8192", --enable-chunked-prefill]
'''

RETURN = r'''
parser:
  description: The parser that checked the flags.
  returned: success
  type: str
  sample: vllm serve
'''

import json

from ansible.module_utils.basic import AnsibleModule

# Runs inside the engine's environment: build the parser, parse, report as one JSON line.
CHECKER = r'''
import argparse, json, sys
engine, args = sys.argv[1], sys.argv[2:]
if engine == 'vllm':
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        from vllm.utils import FlexibleArgumentParser
    try:
        from vllm.entrypoints.launchers.cli_args import make_arg_parser
    except ImportError:
        from vllm.entrypoints.openai.cli_args import make_arg_parser
    parser = make_arg_parser(FlexibleArgumentParser(prog='vllm serve'))
    name = 'vllm serve'
else:
    from sglang.srt.server_args import ServerArgs
    parser = argparse.ArgumentParser(prog='sglang.launch_server')
    ServerArgs.add_cli_args(parser)
    name = 'sglang.launch_server'


class Refused(Exception):
    pass


def refuse(message):
    raise Refused(message)


parser.error = refuse
answer = {'ok': True, 'parser': name}
try:
    parser.parse_args(args)
except Refused as exc:
    answer = {'ok': False, 'error': str(exc), 'parser': name}
print(json.dumps(answer))
'''


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type='path', required=True),
            engine=dict(type='str', required=True, choices=['vllm', 'sglang']),
            args=dict(type='list', elements='str', required=True),
        ),
        supports_check_mode=True,
    )
    argv = [module.params['python'], '-c', CHECKER, module.params['engine']] + module.params['args']
    rc, out, err = module.run_command(argv, check_rc=False, environ_update={'LC_ALL': 'C', 'LANG': 'C'})
    answer = None
    for line in reversed(out.splitlines()):
        if line.startswith('{'):
            try:
                answer = json.loads(line)
            except ValueError:
                answer = None
            break
    if rc != 0 or answer is None:
        # The last line of the engine's own error (an exception line), not its whole traceback.
        lines = [line.strip() for line in (err or out).splitlines() if line.strip()]
        tail = lines[-1] if lines else ''
        module.fail_json(msg='Could not build the %s argument parser with %s (exit %d): %s. Is the engine installed in that '
                             'environment (the engine role)?' % (module.params['engine'], module.params['python'], rc, tail or '(no output)'))
    if not answer['ok']:
        module.fail_json(msg='%s refuses the flags: %s. Fix the flag in workers_extra_flags or the workers_* variables.'
                             % (answer['parser'], answer['error']), parser=answer['parser'], args=module.params['args'])
    module.exit_json(changed=False, parser=answer['parser'])


if __name__ == '__main__':
    main()
