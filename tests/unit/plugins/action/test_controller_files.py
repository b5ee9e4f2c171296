# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""controller_files: refused input, written only when the content or mode differs, atomic, check mode; and as Ansible runs it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import subprocess
import sys

import pytest

from ansible.errors import AnsibleActionFail
from ansible_collections.llmfleet.rocm.plugins.action.controller_files import check_files, write_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


@pytest.mark.parametrize('files, message', [
    pytest.param(None, 'non-empty list', id='none'),
    pytest.param([], 'non-empty list', id='empty'),
    pytest.param(['a'], 'files[0] must be a dict', id='not-a-dict'),
    pytest.param([{'path': '/x', 'content': '', 'owner': 'root'}], 'files[0] must be a dict', id='unknown-key'),
    pytest.param([{'path': ' ', 'content': ''}], 'files[0].path', id='blank-path'),
    pytest.param([{'path': '/x', 'content': 3}], 'files[0].content must be text', id='content-not-text'),
    pytest.param([{'path': '/x', 'content': '', 'mode': '0o644'}], 'not an octal file mode', id='mode-not-octal'),
    pytest.param([{'path': '/x', 'content': '', 'mode': '10644'}], 'not an octal file mode', id='mode-too-long'),
])
def test_refused_input(files, message):
    with pytest.raises(AnsibleActionFail, match=re.escape(message)):
        check_files(files)


def test_checked_files_are_absolute_bytes_and_octal(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert check_files([{'path': 'r/a.txt', 'content': u'\u00e9'}, {'path': '/b//c', 'content': '', 'mode': '600'}]) == [
        (str(tmp_path / 'r' / 'a.txt'), b'\xc3\xa9', 0o644), ('/b/c', b'', 0o600)]


def test_write_creates_the_directories_and_leaves_no_temporary_file(tmp_path):
    path = str(tmp_path / 'deep' / 'er' / 'report.json')
    assert write_file(path, b'{}\n', 0o640) is True
    assert open(path, 'rb').read() == b'{}\n'
    assert os.stat(path).st_mode & 0o7777 == 0o640
    assert os.listdir(os.path.dirname(path)) == ['report.json']


def test_same_content_and_mode_is_left_alone(tmp_path):
    path = str(tmp_path / 'r.txt')
    write_file(path, b'same', 0o644)
    before = os.stat(path)
    assert write_file(path, b'same', 0o644) is False
    assert os.stat(path).st_ino == before.st_ino


def test_a_changed_mode_alone_is_set_in_place(tmp_path):
    path = str(tmp_path / 'r.txt')
    write_file(path, b'same', 0o644)
    inode = os.stat(path).st_ino
    assert write_file(path, b'same', 0o600) is True
    assert os.stat(path).st_ino == inode and os.stat(path).st_mode & 0o7777 == 0o600


def test_changed_content_replaces_the_file_by_a_rename(tmp_path):
    path = str(tmp_path / 'r.txt')
    write_file(path, b'old', 0o644)
    inode = os.stat(path).st_ino
    assert write_file(path, b'new', 0o644) is True
    assert open(path, 'rb').read() == b'new' and os.stat(path).st_ino != inode


def test_check_mode_writes_nothing(tmp_path):
    path = str(tmp_path / 'r.txt')
    assert write_file(path, b'x', 0o644, check_mode=True) is True
    assert not os.path.exists(path)


def _ansible(tmp_path, args, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'))
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible'), 'localhost', '-i', 'localhost,', '-c', 'local',
                          '-m', 'llmfleet.rocm.controller_files', '-a', json.dumps(args)] + list(extra),
                         cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    # The ad-hoc command's one line per host: "localhost | CHANGED => {...}".
    head, _sep, body = run.stdout.partition(' => ')
    return dict(json.loads(body), status=head.rsplit('|', 1)[-1].strip())


def test_as_ansible_runs_it(tmp_path):
    files = [{'path': str(tmp_path / 'n.json'), 'content': '{"a": 1}\n'}, {'path': str(tmp_path / 'n.txt'), 'content': 'a\n'}]
    first = _ansible(tmp_path, {'files': files})
    assert first['changed'] is True and first['written'] == [f['path'] for f in files]
    assert open(files[1]['path']).read() == 'a\n'
    assert _ansible(tmp_path, {'files': files})['changed'] is False
    refused = _ansible(tmp_path, {'files': [{'path': str(tmp_path / 'x'), 'content': 'x', 'mode': 'rw'}]})
    assert refused['status'] == 'FAILED!' and 'not an octal file mode' in refused['msg']
    checked = _ansible(tmp_path, {'files': [{'path': str(tmp_path / 'c.txt'), 'content': 'c'}]}, '--check')
    assert checked['changed'] is True and not os.path.exists(str(tmp_path / 'c.txt'))
