# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``apt-cache policy <package>...`` (run in the C locale): is each package installed or installable?

apt prints one block per package it knows and nothing at all for a name it does not know, so
every requested name is in the result, the unknown ones with ``known: false``. An ``E:`` line
is apt's own error (``ToolError``); any other line that is not part of a package block is a
``ParseError`` (never a guess). Pure: text in, values out.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError

TOOL = 'apt-cache'
HINT_APT = ('apt cannot read its package lists: fix what apt names (a sources file, a lock, a full disk) and run '
            '"apt-get update" on the node.')

_PACKAGE_RE = re.compile(r'^(?P<name>[a-z0-9][a-z0-9+.-]+)(?::[a-z0-9]+)?:\s*$')
_FIELD_RE = re.compile(r'^\s+(?P<key>Installed|Candidate): (?P<value>.+?)\s*$')
_MESSAGE_RE = re.compile(r'^(?P<kind>[EWN]): (?P<text>.*)$')


def parse_apt_policy(text, packages):
    """``apt-cache policy`` output -> ``{name: {known, installed, candidate}}`` for every name in ``packages``.

    ``installed`` and ``candidate`` are version strings, or None where apt prints ``(none)``.
    """
    found = {}
    current = None
    errors = []
    for line in (text or '').splitlines():
        if not line.strip():
            continue
        package = _PACKAGE_RE.match(line)
        if package:
            current = found.setdefault(package.group('name'), {'known': True, 'installed': None, 'candidate': None})
            continue
        message = _MESSAGE_RE.match(line)
        if message:
            if message.group('kind') == 'E':
                errors.append(line.strip())
            current = None
            continue
        field = _FIELD_RE.match(line)
        if field and current is not None:
            value = field.group('value')
            current[field.group('key').lower()] = None if value == '(none)' else value
            continue
        if current is not None and line.startswith(' '):
            continue  # the version table
        raise ParseError(TOOL, 'line %r is not apt-cache policy output' % line.strip()[:120])
    if errors:
        raise ToolError(TOOL, errors[0], HINT_APT)
    return dict((name, found.get(name, {'known': False, 'installed': None, 'candidate': None})) for name in packages)


def available(entry):
    """True when a package of the result is installed or has a candidate to install."""
    return bool(entry.get('installed') or entry.get('candidate'))
