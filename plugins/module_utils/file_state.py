# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a path on the node is as a role would write it: the judgement behind skipping a write that would change nothing.

A role reads every file it writes in one module call, each with what it wants there (the state, the digest of the content
its template renders, owner, group, mode, a link's target); a write task runs only for the files that differ. The same
template, copy, file or link task then does the writing, with its diff, its validation and its handlers, as before.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import grp
import os
import pwd
import stat

STATES = ('file', 'directory', 'link', 'absent')


def _name(lookup, number):
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


def read_state(path):
    """What is at path, without following a link: its kind, owner, group, mode and a link's target as written."""
    try:
        info = os.lstat(path)
    except OSError:
        return {'state': 'absent', 'owner': None, 'group': None, 'mode': None, 'link_target': None}
    kind = ('link' if stat.S_ISLNK(info.st_mode) else 'directory' if stat.S_ISDIR(info.st_mode)
            else 'file' if stat.S_ISREG(info.st_mode) else 'other')
    return {'state': kind, 'owner': _name(pwd.getpwuid, info.st_uid), 'group': _name(grp.getgrgid, info.st_gid),
            'mode': '%04o' % stat.S_IMODE(info.st_mode), 'link_target': os.readlink(path) if kind == 'link' else None}


def differences(reading, want):
    """The ways reading (read_state plus a 'checksum') differs from want, as short phrases; [] when it is as wanted.

    want: state (file, directory, link, absent), and optionally checksum (of a file), lines (lines a file must hold,
    compared without their leading and trailing white space; reading['lines'] holds the file's lines so compared), owner,
    group, mode (octal text) and src (a link's target as the link holds it). What want does not name is not judged.
    """
    wanted_state = want.get('state') or 'file'
    if reading['state'] != wanted_state:
        return ['is %s, wanted %s' % (reading['state'], wanted_state)]
    if wanted_state == 'absent':
        return []
    found = []
    if wanted_state == 'file' and want.get('checksum') and reading.get('checksum') != want['checksum']:
        found.append('content differs')
    if wanted_state == 'file' and want.get('lines'):
        missing = [line for line in want['lines'] if line.strip() not in (reading.get('lines') or ())]
        if missing:
            found.append('lacks %s' % ', '.join(repr(line.strip()) for line in missing))
    if wanted_state == 'link' and want.get('src') is not None and reading['link_target'] != want['src']:
        found.append('points at %s, wanted %s' % (reading['link_target'], want['src']))
    if wanted_state != 'link':
        for key in ('owner', 'group'):
            if want.get(key) is not None and reading[key] != want[key]:
                found.append('%s %s, wanted %s' % (key, reading[key], want[key]))
        if want.get('mode') is not None and reading['mode'] != '%04o' % int(str(want['mode']), 8):
            found.append('mode %s, wanted %s' % (reading['mode'], want['mode']))
    return found


def read_lines(path):
    """The set of a text file's lines without their leading and trailing white space (empty when it cannot be read)."""
    try:
        with open(path, 'rb') as handle:
            return set(line.strip() for line in handle.read().decode('utf-8', 'replace').splitlines())
    except (IOError, OSError):
        return set()


def read_accounts(users, groups):
    """Whether each group exists, and each user's primary group, supplementary groups, home and shell (None: no such user).

    Read through the name service, as the group and user modules find them.
    """
    found_groups = {}
    for name in groups:
        try:
            found_groups[name] = {'exists': True, 'gid': grp.getgrnam(name).gr_gid}
        except KeyError:
            found_groups[name] = {'exists': False, 'gid': None}
    found_users = {}
    for name in users:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            found_users[name] = None
            continue
        supplementary = sorted(set(_name(grp.getgrgid, gid) for gid in os.getgrouplist(name, entry.pw_gid)
                                   if gid != entry.pw_gid))
        found_users[name] = {'group': _name(grp.getgrgid, entry.pw_gid), 'groups': supplementary,
                             'home': entry.pw_dir, 'shell': entry.pw_shell}
    return found_users, found_groups


def read_globs(patterns):
    """pattern -> the paths it matches (sorted), each with its kind and modification time, as find would list them."""
    found = {}
    for pattern in patterns:
        matches = []
        for path in sorted(glob.glob(pattern)):
            try:
                info = os.lstat(path)
            except OSError:
                continue
            kind = ('link' if stat.S_ISLNK(info.st_mode) else 'directory' if stat.S_ISDIR(info.st_mode)
                    else 'file' if stat.S_ISREG(info.st_mode) else 'other')
            matches.append({'path': path, 'state': kind, 'mtime': info.st_mtime})
        found[pattern] = matches
    return found


UNIT_STATE_UNKNOWN = 'unknown'


def unit_states(names, active_text, enabled_text):
    """name -> {'active', 'enabled'} from what ``systemctl is-active NAMES`` and ``systemctl is-enabled NAMES`` printed.

    Each prints one state per name, in order, whatever its exit status (which says only whether any unit is active or
    enabled). is-enabled stops at a unit it has no file for, so a name without its line (or a tool that did not run:
    None) is 'unknown', which no role takes for running or enabled.
    """
    def lines(text):
        return [line.strip() for line in (text or '').splitlines() if line.strip()]

    active, enabled = lines(active_text), lines(enabled_text)
    return dict((name, {'active': active[index] if index < len(active) else UNIT_STATE_UNKNOWN,
                        'enabled': enabled[index] if index < len(enabled) else UNIT_STATE_UNKNOWN})
                for index, name in enumerate(names))
