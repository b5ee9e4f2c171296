# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The entries of a files reading with a want (llmfleet.rocm.preflight_facts), for many paths alike in one expression."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.llmfleet.rocm.plugins.module_utils.file_state import STATES


def file_wants(paths, state='file', owner=None, group=None, mode=None, checksums=None):
    """One entry per path, named by the path: {name, path, want: {state, owner, group, mode[, checksum]}}.

    checksums: the SHA-1 of each file's wanted content, in the order of paths (a text of digests separated by white
    space, as a Jinja loop over lookups makes it, or a list); none judges no content.
    """
    if isinstance(paths, str) or not isinstance(paths, (list, tuple)):
        raise AnsibleFilterError('file_wants: expects a list of paths, got %r' % (paths,))
    if state not in STATES:
        raise AnsibleFilterError('file_wants: state must be one of %s, not %r' % (', '.join(STATES), state))
    if isinstance(checksums, str):
        checksums = checksums.split()
    if checksums is not None and len(checksums) != len(paths):
        raise AnsibleFilterError('file_wants: %d checksums for %d paths' % (len(checksums), len(paths)))
    entries = []
    for index, path in enumerate(paths):
        if not isinstance(path, str) or not path.startswith('/'):
            raise AnsibleFilterError('file_wants: %r is not an absolute path' % (path,))
        fields = (('state', state), ('owner', owner), ('group', group), ('mode', None if mode is None else str(mode)))
        want = dict((key, value) for key, value in fields if value is not None)
        if checksums is not None:
            want['checksum'] = checksums[index]
        entries.append({'name': path, 'path': path, 'want': want})
    return entries


class FilterModule(object):
    def filters(self):
        return {'file_wants': file_wants}
