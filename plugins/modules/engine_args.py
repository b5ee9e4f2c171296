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
    with the parser's own message, which names the flag. Every wrong flag is named, each with its message. A
    refused value (an invalid choice) is reported, that flag set aside and the rest parsed again.
  - SGLang's parser requires C(--model-path); when I(args) has none, a placeholder is given (the model itself is
    not checked).
  - No module of C(ansible.builtin), C(community.general) or C(ansible.posix) runs a program's argument parser without
    the program. M(ansible.builtin.command) could only start the engine (which loads the model and takes the GPUs) or
    read its C(--help) text.
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
    description: The flags to check, as an argument list (the model path excluded; vLLM's is positional).
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

- name: Check SGLang flags with SGLang's own parser
  llmfleet.rocm.engine_args:
    python: /opt/llmfleet/engines/current/bin/python
    engine: sglang
    args: [--tp-size, "8", --schedule-policy, fcfs, --load-balance-method, total_requests, --enable-metrics]
'''

RETURN = r'''
parser:
  description: The parser that checked the flags.
  returned: success
  type: str
  sample: vllm serve
errors:
  description: The parser's messages, one per wrong flag (or one naming every unrecognised flag).
  returned: failure
  type: list
  elements: str
  sample:
    - "argument --schedule-policy: invalid choice: 'shortest-queue' (choose from 'lpm', 'random', 'fcfs', 'dfs-weight', 'lof',
      'priority', 'routing-key', 'hrrn', 'shortest-prefill-first')"
    - "unrecognized arguments: --enable-load-balance"
'''

import json

from ansible.module_utils.basic import AnsibleModule

# Runs inside the engine's environment: build the parser, parse, report as one JSON line. A refused value
# ("argument --x: invalid choice ...") stops argparse before it looks further: that flag is taken out and the rest
# parsed again, so that every wrong flag is named, each with the parser's own message.
CHECKER = r'''
import argparse, json, re, sys
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
    # SGLang requires --model-path; the model is not what is checked here.
    if not any(re.match(r'--model(-path)?(=|$)', arg) for arg in args):
        args = ['--model-path', 'model'] + args


class Refused(Exception):
    pass


def refuse(message):
    raise Refused(message)


def without(args, message):
    """args without the flag an "argument <names>: ..." message names (and its values); None when not found."""
    match = re.match(r'argument ([^ :]+): ', message)
    names = match.group(1).split('/') if match else []
    for index, arg in enumerate(args):
        if arg in names or arg.split('=', 1)[0] in names:
            end = index + 1
            if '=' not in arg:
                while end < len(args) and not args[end].startswith('--'):
                    end += 1
            return args[:index] + args[end:]
    return None


parser.error = refuse
errors = []
rest = list(args)
while True:
    try:
        parser.parse_args(rest)
    except Refused as exc:
        errors.append(str(exc))
        rest = without(rest, str(exc))
        if rest is not None:
            continue
    break
print(json.dumps({'ok': not errors, 'errors': errors, 'parser': name}))
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
        module.fail_json(msg='%s refuses the flags: %s. Fix them in workers_extra_flags or the workers_* variables.'
                             % (answer['parser'], '; '.join(answer['errors'])), parser=answer['parser'],
                         errors=answer['errors'], args=module.params['args'])
    module.exit_json(changed=False, parser=answer['parser'])


if __name__ == '__main__':
    main()
