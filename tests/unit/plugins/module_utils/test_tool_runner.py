# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The facts modules' runner: the C locale, argv lists, and parser errors turned into fail_json."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError
from ansible_collections.llmfleet.rocm.plugins.module_utils._tool_runner import (
    C_LOCALE,
    SYSTEM_BIN_DIRS,
    ToolRunner,
    first_lines,
    list_dir,
    output_text,
    read_bytes,
    read_text,
)


class Failed(Exception):
    def __init__(self, result):
        super(Failed, self).__init__(result['msg'])
        self.result = result


class FakeModule(object):
    """Just what the runner uses of AnsibleModule; fail_json raises like the real one exits."""

    def __init__(self, answers=None, paths=None):
        self.answers = answers or {}
        self.paths = paths or {}
        self.runs = []
        self.lookups = []

    def get_bin_path(self, name, opt_dirs=None):
        self.lookups.append((name, opt_dirs))
        return self.paths.get(name)

    def run_command(self, argv, check_rc=False, environ_update=None):
        self.runs.append((argv, check_rc, environ_update))
        return self.answers[' '.join(argv)]

    def fail_json(self, **result):
        raise Failed(result)


def _parser(text):
    if 'error:' in text:
        raise ToolError('tool', text.split('error:', 1)[1], 'Do the thing.')
    if not text.startswith('ok'):
        raise ParseError('tool', 'expected ok, found %r' % text[:20])
    return {'text': text}


def test_run_uses_an_argv_list_the_c_locale_and_records_it():
    module = FakeModule({'/bin/tool --json': (0, 'ok\n', '')})
    runner = ToolRunner(module)
    assert runner.run(['/bin/tool', '--json']) == (0, 'ok\n', '')
    argv, check_rc, env = module.runs[0]
    assert argv == ['/bin/tool', '--json'] and check_rc is False
    assert env == C_LOCALE and env['LC_ALL'] == 'C' and env['LANG'] == 'C'
    assert runner.commands == [['/bin/tool', '--json']]


def test_find_searches_path_first_then_the_extra_dirs():
    module = FakeModule(paths={'lspci': '/usr/bin/lspci'})
    assert ToolRunner(module).find('lspci') == '/usr/bin/lspci'
    assert ToolRunner(module, opt_dirs=['/opt/rocm/bin']).find('rocminfo') is None
    assert module.lookups == [('lspci', None), ('rocminfo', None), ('rocminfo', ['/opt/rocm/bin'])]
    module = FakeModule(paths={'mokutil': '/usr/sbin/mokutil'})
    module.get_bin_path = lambda name, opt_dirs=None: module.lookups.append((name, opt_dirs)) or (
        '/usr/sbin/mokutil' if opt_dirs else None)
    assert ToolRunner(module).find('mokutil') == '/usr/sbin/mokutil'
    assert module.lookups == [('mokutil', None), ('mokutil', SYSTEM_BIN_DIRS)]


def test_read_parses_stdout_then_stderr():
    module = FakeModule({'t': (0, 'ok out', 'and err')})
    assert ToolRunner(module).read('tool', ['t'], _parser) == {'text': 'ok out\nand err'}


def test_a_tool_error_fails_with_the_tools_line_and_advice():
    module = FakeModule({'t': (1, '', 'error: cannot open /dev/kfd\n')})
    runner = ToolRunner(module)
    with pytest.raises(Failed) as caught:
        runner.read('rocminfo', ['t'], _parser)
    result = caught.value.result
    assert result['msg'] == 'rocminfo reported an error: "cannot open /dev/kfd". Do the thing.'
    assert result['tool'] == 'rocminfo' and result['tool_line'] == 'cannot open /dev/kfd'
    assert result['commands'] == [['t']]


def test_a_tool_error_can_be_left_to_the_module():
    module = FakeModule({'t': (255, 'error: No IB devices found', '')})
    with pytest.raises(ToolError):
        ToolRunner(module).read('ibv_devinfo', ['t'], _parser, raise_tool_errors=True)


@pytest.mark.parametrize('rc, expected', [
    (0, 'tool printed output that llmfleet.rocm cannot read (expected ok, found \'garbage\\n\\nSegmentatio\'). Please report it with the output of "t -x".'),
    (139, 'tool failed: t -x exited with 139: garbage | Segmentation fault'),
], ids=['exit-0-unreadable', 'exit-139-is-the-failure'])
def test_unknown_output(rc, expected):
    module = FakeModule({'t -x': (rc, 'garbage\n', 'Segmentation fault\n')})
    with pytest.raises(Failed) as caught:
        ToolRunner(module).read('tool', ['t', '-x'], _parser)
    assert caught.value.result['msg'] == expected


def test_a_nonzero_exit_fails_unless_accepted():
    module = FakeModule({'t': (1, 'ok but not really', '')})
    with pytest.raises(Failed, match='exited with 1: ok but not really'):
        ToolRunner(module).read('tool', ['t'], _parser)
    assert ToolRunner(module).read('tool', ['t'], _parser, accept_rc=lambda rc, parsed: rc == 1) == {'text': 'ok but not really'}


def test_text_helpers(tmp_path):
    assert output_text('a', '') == 'a' and output_text('', 'b') == 'b' and output_text('a', 'b') == 'a\nb'
    assert output_text(None, None) == ''
    assert first_lines('\n one \n\ntwo\n', 5) == 'one | two'
    assert first_lines('') == '(no output)'
    (tmp_path / 'f').write_bytes(b'\x06\x00\x00\x00\x01')
    assert read_bytes(str(tmp_path / 'f')) == b'\x06\x00\x00\x00\x01'
    assert read_text(str(tmp_path / 'missing')) is None and read_bytes(str(tmp_path / 'missing')) is None
    assert list_dir(str(tmp_path)) == ['f'] and list_dir(str(tmp_path / 'missing')) == []
