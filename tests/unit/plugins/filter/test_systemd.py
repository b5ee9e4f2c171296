# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Escaping for unit files (plugins/plugin_utils/systemd_unit.py), checked against systemd's own parser where it runs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import shutil
import subprocess

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.systemd_unit import (
    systemd_directives, systemd_environment, systemd_exec_line, systemd_exec_word, systemd_split, systemd_unit_read)


@pytest.mark.parametrize('value, expected', [
    ('--port', '--port'),
    (8000, '8000'),
    ('/opt/llmfleet/engines/vllm-0.32.0/bin/vllm', '/opt/llmfleet/engines/vllm-0.32.0/bin/vllm'),
    ('100%', '"100%%"'),
    ('$HOME', '"$$HOME"'),
    ('two words', '"two words"'),
    ('say "hi"', '"say \\"hi\\""'),
    ('back\\slash', '"back\\\\slash"'),
    ("it's", '"it\'s"'),
    ('a;b', '"a;b"'),
], ids=['flag', 'number', 'path', 'percent', 'dollar', 'space', 'double-quote', 'backslash', 'single-quote', 'semicolon'])
def test_exec_word(value, expected):
    assert systemd_exec_word(value) == expected


@pytest.mark.parametrize('value', ['1\nExecStartPre=+/usr/bin/id', 'tab\there', '\r', None, True, ['a'], {'a': 1}],
                         ids=['newline-directive', 'tab', 'carriage-return', 'none', 'bool', 'list', 'dict'])
def test_exec_word_refuses(value):
    with pytest.raises(AnsibleFilterError):
        systemd_exec_word(value)


def test_exec_line():
    assert systemd_exec_line(['/usr/bin/numactl', '--physcpubind=0-3', 'a b'], ' \\\n    ') == \
        '/usr/bin/numactl \\\n    --physcpubind=0-3 \\\n    "a b"'
    with pytest.raises(AnsibleFilterError):
        systemd_exec_line([])


@pytest.mark.parametrize('name, value, expected', [
    ('HSA_NO_SCRATCH_RECLAIM', 1, '"HSA_NO_SCRATCH_RECLAIM=1"'),
    ('A', 'two words', '"A=two words"'),
    ('A', '50%', '"A=50%%"'),
    ('A', '$B', '"A=$B"'),
    ('A', 'q"uote', '"A=q\\"uote"'),
], ids=['number', 'space', 'percent', 'dollar-literal', 'quote'])
def test_environment(name, value, expected):
    assert systemd_environment(name, value) == expected


@pytest.mark.parametrize('name, value', [('A', '1\nExecStartPre=+/usr/bin/id'), ('A B', '1'), ('1A', '1'), ('A=B', '1'), ('A', None)],
                         ids=['newline-directive', 'space-in-name', 'digit-first', 'equals-in-name', 'none'])
def test_environment_refuses(name, value):
    with pytest.raises(AnsibleFilterError):
        systemd_environment(name, value)


HOSTILE = ['100%', '$HOME', '${HOME}', 'two words', 'say "hi"', "it's", 'back\\slash', 'a;b', '{x}', '%n%h']


def _verify(tmp_path, exec_line, environment=''):
    unit = tmp_path / 'llmfleet-escape-test.service'
    unit.write_text('[Service]\nType=oneshot\n%sExecStart=%s\n' % (('Environment=%s\n' % environment) if environment else '', exec_line))
    result = subprocess.run(['systemd-analyze', 'verify', str(unit)], capture_output=True, text=True, check=False)
    return result.returncode, result.stdout + result.stderr


@pytest.mark.skipif(not shutil.which('systemd-analyze'), reason='systemd-analyze is not installed on this machine')
def test_systemd_accepts_the_escaped_words(tmp_path):
    """systemd's own parser takes the escaped line and environment without a complaint."""
    environment = ' '.join(systemd_environment('V%d' % i, value) for i, value in enumerate(HOSTILE))
    rc, output = _verify(tmp_path, systemd_exec_line(['/bin/true'] + HOSTILE), environment)
    assert rc == 0 and output.strip() == '', output


@pytest.mark.skipif(not shutil.which('systemd-analyze'), reason='systemd-analyze is not installed on this machine')
def test_systemd_verify_can_fail(tmp_path):
    """The control: the same check does complain about a line systemd cannot split (so the test above can fail).

    Specifiers are not checked by verify (it accepts a stray %); that systemd reads the words back exactly is
    checked on the lab's hosts, where systemd runs.
    """
    rc, output = _verify(tmp_path, '/bin/true "unbalanced \'%n%\'')
    assert rc != 0 or output.strip() != ''


# systemd_split: the reader the hostile-values tests parse rendered units with (tests/unit/roles/test_hostile_templates.py).
HOSTILE_WORDS = ['plain', 'a b', '100%', '%n', '$HOME', '${X}', 'say "hi"', "it's", 'back\\slash', '', ';', 'x=$$y', '%%']


@pytest.mark.parametrize('word', HOSTILE_WORDS)
def test_split_reads_back_an_exec_word(word):
    assert systemd_split(systemd_exec_word(word), command_line=True) == [word]


def test_split_reads_back_an_exec_line():
    assert systemd_split(systemd_exec_line(HOSTILE_WORDS), command_line=True) == HOSTILE_WORDS


@pytest.mark.parametrize('value', HOSTILE_WORDS)
def test_split_reads_back_an_environment_assignment(value):
    assert systemd_split(systemd_environment('NAME', value)) == ['NAME=' + value]


@pytest.mark.parametrize('text, words', [
    ('a  b\tc', ['a', 'b', 'c']),
    ("'a b'\"c d\"", ['a bc d']),
    ('a\\sb "\\x41\\n"', ['a b', 'A\n']),
    ('"%%h"', ['%h']),
    ('', []),
])
def test_split_follows_systemd(text, words):
    assert systemd_split(text) == words


@pytest.mark.parametrize('text, command_line', [
    ('%h', False), ('100%', False), ('"open', False), ('a\\', False), ('\\q', False), ('$HOME', True), ('a$', True),
])
def test_split_refuses_what_systemd_would_expand_or_cannot_read(text, command_line):
    with pytest.raises(ValueError):
        systemd_split(text, command_line=command_line)


# systemd_unit_read: a unit as the workers role writes it (continued ExecStart, quoted words and assignments) read back.
UNIT = """# Written by llmfleet.rocm
[Unit]
Description=llmfleet sglang worker 0

[Service]
Type=simple
User=llmfleet
Environment="HIP_VISIBLE_DEVICES=0,1"
Environment="PYTHONHASHSEED=0" "NCCL_DEBUG=WARN"
ExecStart=/usr/bin/numactl --cpunodebind=0 \\
    /opt/llmfleet/engines/current/bin/python -m sglang.launch_server \\
    --model-path /opt/llmfleet/models/tiny --port 30000 --config /var/lib/llmfleet/worker-0.key.yaml
Restart=on-failure
"""


def test_unit_read_gives_what_systemd_runs():
    assert systemd_unit_read(UNIT) == {
        'exec_start': ['/usr/bin/numactl', '--cpunodebind=0', '/opt/llmfleet/engines/current/bin/python', '-m',
                       'sglang.launch_server', '--model-path', '/opt/llmfleet/models/tiny', '--port', '30000', '--config',
                       '/var/lib/llmfleet/worker-0.key.yaml'],
        'user': 'llmfleet',
        'environment': {'HIP_VISIBLE_DEVICES': '0,1', 'PYTHONHASHSEED': '0', 'NCCL_DEBUG': 'WARN'},
    }
    assert [name for section, name, _value in systemd_directives(UNIT) if section == 'Service'] == [
        'Type', 'User', 'Environment', 'Environment', 'ExecStart', 'Restart']


def test_unit_read_reads_back_what_the_filters_write():
    text = '[Service]\nExecStart=%s\n%s\n' % (
        systemd_exec_line(HOSTILE_WORDS, ' \\\n    '),
        '\n'.join('Environment=%s' % systemd_environment('V%d' % index, value) for index, value in enumerate(HOSTILE_WORDS)))
    read = systemd_unit_read(text)
    assert read['exec_start'] == HOSTILE_WORDS
    assert read['environment'] == dict(('V%d' % index, value) for index, value in enumerate(HOSTILE_WORDS))
    assert read['user'] is None
    assert systemd_unit_read('[Unit]\nDescription=x\n') == {'exec_start': None, 'user': None, 'environment': {}}


@pytest.mark.parametrize('text, message', [
    ('[Service]\nExecStart=/bin/echo \\', 'ends inside a continued line'),
    ('[Service]\nExecStart=/bin/echo $HOME\n', 'a variable systemd would expand'),
    ('[Service]\nEnvironment="A=%h"\n', 'a specifier systemd would expand'),
    ('[Service]\nExecStart=/bin/echo "open\n', 'an unterminated quote'),
])
def test_unit_read_refuses_what_it_cannot_read_as_systemd_would(text, message):
    with pytest.raises(AnsibleFilterError, match=message):
        systemd_unit_read(text)
    with pytest.raises(AnsibleFilterError, match='expects the text of a unit'):
        systemd_unit_read(None)
