# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""file_wants: the entries of a files reading with a want."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.filter.files import file_wants


def test_directories():
    assert file_wants(['/var/lib/a', '/var/lib/a/tmp'], 'directory', 'llmfleet', 'llmfleet', '0750') == [
        {'name': '/var/lib/a', 'path': '/var/lib/a', 'want': {'state': 'directory', 'owner': 'llmfleet', 'group': 'llmfleet', 'mode': '0750'}},
        {'name': '/var/lib/a/tmp', 'path': '/var/lib/a/tmp',
         'want': {'state': 'directory', 'owner': 'llmfleet', 'group': 'llmfleet', 'mode': '0750'}}]


@pytest.mark.parametrize('checksums', [pytest.param('aa bb ', id='text'), pytest.param(['aa', 'bb'], id='list')])
def test_files_with_checksums(checksums):
    entries = file_wants(['/etc/a', '/etc/b'], 'file', 'root', 'root', '0644', checksums)
    assert [entry['want']['checksum'] for entry in entries] == ['aa', 'bb']


def test_unset_fields_are_not_judged():
    assert file_wants(['/etc/a'], 'link') == [{'name': '/etc/a', 'path': '/etc/a', 'want': {'state': 'link'}}]
    assert file_wants([]) == []


@pytest.mark.parametrize('paths, kwargs, message', [
    pytest.param('/etc/a', {}, 'expects a list of paths', id='a-string'),
    pytest.param(['etc/a'], {}, 'not an absolute path', id='relative'),
    pytest.param(['/etc/a'], {'state': 'dir'}, 'state must be one of', id='state'),
    pytest.param(['/etc/a', '/etc/b'], {'checksums': 'aa'}, '1 checksums for 2 paths', id='checksum-count'),
])
def test_refused(paths, kwargs, message):
    with pytest.raises(AnsibleFilterError, match=message):
        file_wants(paths, **kwargs)
