# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write files on the controller from the action itself: no module runs, on the node or on the controller."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible.plugins.action import ActionBase
from ansible_collections.llmfleet.rocm.plugins.module_utils.atomic_file import write_atomic

MODE_DEFAULT = '0644'


def _mode(value):
    """The octal mode of a file, from a string such as '0644' (an int is taken as octal digits already read)."""
    text = str(value if value is not None else MODE_DEFAULT)
    if len(text) > 4 or not text or any(digit not in '01234567' for digit in text):
        raise AnsibleActionFail('mode %r is not an octal file mode such as "0644".' % (value,))
    return int(text, 8)


def check_files(files):
    """The files as (path, bytes, mode), or AnsibleActionFail naming what is wrong with one entry."""
    if not isinstance(files, list) or not files:
        raise AnsibleActionFail('files must be a non-empty list of {path, content, mode}.')
    checked = []
    for index, entry in enumerate(files):
        if not isinstance(entry, dict) or set(entry) - {'path', 'content', 'mode'}:
            raise AnsibleActionFail('files[%d] must be a dict of path, content and (optionally) mode.' % index)
        path = entry.get('path')
        if not isinstance(path, str) or not path.strip():
            raise AnsibleActionFail('files[%d].path must be a path on the controller, not %r.' % (index, path))
        content = entry.get('content')
        if not isinstance(content, str):
            raise AnsibleActionFail('files[%d].content must be text (%s).' % (index, path))
        checked.append((os.path.abspath(path), to_bytes(content), _mode(entry.get('mode'))))
    return checked


def write_file(path, data, mode, check_mode=False):
    """Write data to path unless it holds it already (then only the mode is set); True when anything changed."""
    try:
        with open(path, 'rb') as handle:
            same = handle.read() == data
        same_mode = (os.stat(path).st_mode & 0o7777) == mode
    except (IOError, OSError):
        same, same_mode = False, False
    if same and same_mode:
        return False
    if check_mode:
        return True
    if same:
        os.chmod(path, mode)
        return True
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomic(path, data, mode)
    return True


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(('files',))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        files = check_files(self._task.args.get('files'))
        written = []
        for path, data, mode in files:
            try:
                if write_file(path, data, mode, check_mode=self._task.check_mode):
                    written.append(path)
            except (IOError, OSError) as exc:
                raise AnsibleActionFail('Cannot write %s on the controller: %s' % (path, to_text(exc.strerror or exc)))
        result.update(changed=bool(written), written=written, paths=[path for path, _data, _mode in files])
        return result
