# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""file_state: what is at a path, and how it differs from what a role would write there."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils.file_state import UNIT_STATE_UNKNOWN, differences, read_lines, read_state, unit_states

FILE = {'state': 'file', 'owner': 'root', 'group': 'root', 'mode': '0644', 'link_target': None, 'checksum': 'aa'}
DIRECTORY = dict(FILE, state='directory', mode='0755', checksum=None)
LINK = dict(FILE, state='link', mode='0777', link_target='/opt/venv-1', checksum=None)
ABSENT = {'state': 'absent', 'owner': None, 'group': None, 'mode': None, 'link_target': None, 'checksum': None}


@pytest.mark.parametrize('reading, want, found', [
    pytest.param(FILE, {'state': 'file', 'checksum': 'aa', 'owner': 'root', 'group': 'root', 'mode': '0644'}, [], id='file-as-wanted'),
    pytest.param(FILE, {'checksum': 'aa'}, [], id='state-defaults-to-file'),
    pytest.param(FILE, {'state': 'file', 'checksum': 'bb'}, ['content differs'], id='content'),
    pytest.param(FILE, {'state': 'file', 'owner': 'llmfleet'}, ['owner root, wanted llmfleet'], id='owner'),
    pytest.param(FILE, {'state': 'file', 'group': 'llmfleet'}, ['group root, wanted llmfleet'], id='group'),
    pytest.param(FILE, {'state': 'file', 'mode': '0600'}, ['mode 0644, wanted 0600'], id='mode'),
    pytest.param(FILE, {'state': 'file', 'mode': '644'}, [], id='mode-without-leading-zero'),
    pytest.param(FILE, {'state': 'file', 'checksum': 'bb', 'mode': '0600'}, ['content differs', 'mode 0644, wanted 0600'], id='two-at-once'),
    pytest.param(FILE, {'state': 'file'}, [], id='nothing-named-nothing-judged'),
    pytest.param(ABSENT, {'state': 'file', 'checksum': 'aa'}, ['is absent, wanted file'], id='file-missing'),
    pytest.param(DIRECTORY, {'state': 'file'}, ['is directory, wanted file'], id='directory-for-a-file'),
    pytest.param(DIRECTORY, {'state': 'directory', 'owner': 'root', 'mode': '0755'}, [], id='directory-as-wanted'),
    pytest.param(DIRECTORY, {'state': 'directory', 'mode': '0750'}, ['mode 0755, wanted 0750'], id='directory-mode'),
    pytest.param(LINK, {'state': 'link', 'src': '/opt/venv-1'}, [], id='link-as-wanted'),
    pytest.param(LINK, {'state': 'link', 'src': '/opt/venv-2'}, ['points at /opt/venv-1, wanted /opt/venv-2'], id='link-elsewhere'),
    pytest.param(LINK, {'state': 'link', 'src': '/opt/venv-1', 'mode': '0644'}, [], id='link-mode-not-judged'),
    pytest.param(FILE, {'state': 'link', 'src': '/opt/venv-1'}, ['is file, wanted link'], id='file-for-a-link'),
    pytest.param(ABSENT, {'state': 'absent'}, [], id='absent-as-wanted'),
    pytest.param(dict(FILE, lines={'worker_connections 4096;', 'user www-data;'}), {'lines': ['    worker_connections 4096;']}, [],
                 id='lines-held'),
    pytest.param(dict(FILE, lines={'worker_connections 768;'}), {'lines': ['worker_connections 4096;', 'x 1;']},
                 ["lacks 'worker_connections 4096;', 'x 1;'"], id='lines-lacking'),
    pytest.param(FILE, {'state': 'absent'}, ['is file, wanted absent'], id='present-wanted-absent'),
])
def test_differences(reading, want, found):
    assert differences(reading, want) == found


def test_read_state_of_each_kind(tmp_path):
    regular = tmp_path / 'f'
    regular.write_text('x')
    regular.chmod(0o640)
    link = tmp_path / 'l'
    link.symlink_to('f')
    fifo = tmp_path / 'p'
    os.mkfifo(str(fifo))
    assert read_state(str(regular))['state'] == 'file' and read_state(str(regular))['mode'] == '0640'
    assert read_state(str(tmp_path))['state'] == 'directory'
    assert read_state(str(link))['state'] == 'link' and read_state(str(link))['link_target'] == 'f'
    assert read_state(str(fifo))['state'] == 'other'
    assert read_state(str(tmp_path / 'none')) == {'state': 'absent', 'owner': None, 'group': None, 'mode': None, 'link_target': None}


def test_read_lines(tmp_path):
    conf = tmp_path / 'nginx.conf'
    conf.write_bytes(b'events {\n\tworker_connections 4096;  \n}\n')
    assert read_lines(str(conf)) == {'events {', 'worker_connections 4096;', '}'}
    assert read_lines(str(tmp_path / 'none')) == set()


@pytest.mark.parametrize('active, enabled, found', [
    ('active\nactive\n', 'enabled\ndisabled\n',
     {'a.service': {'active': 'active', 'enabled': 'enabled'}, 'b.service': {'active': 'active', 'enabled': 'disabled'}}),
    # is-enabled stops at a unit without a file: the rest is unknown, never taken for enabled.
    ('active\ninactive\n', 'enabled\n',
     {'a.service': {'active': 'active', 'enabled': 'enabled'}, 'b.service': {'active': 'inactive', 'enabled': 'unknown'}}),
    # systemctl was not there.
    (None, None,
     {'a.service': {'active': 'unknown', 'enabled': 'unknown'}, 'b.service': {'active': 'unknown', 'enabled': 'unknown'}}),
    ('failed\n\n  activating  \n', 'static\nmasked\n',
     {'a.service': {'active': 'failed', 'enabled': 'static'}, 'b.service': {'active': 'activating', 'enabled': 'masked'}}),
])
def test_unit_states(active, enabled, found):
    assert unit_states(['a.service', 'b.service'], active, enabled) == found
    assert UNIT_STATE_UNKNOWN == 'unknown'
    assert unit_states([], 'active\n', 'enabled\n') == {}
