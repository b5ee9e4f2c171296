# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What dpkg has installed and what it holds, from ``dpkg-query --show`` with the collection's own format.

``SHOW_FORMAT`` asks for one line per package: name, version and dpkg's three-letter status
(``db:Status-Abbrev``: the wanted action, the state, the error flag; ``ii``, ``hi``, ``rc``,
``iU`` ...). A package counts as installed in the state ``i`` only (half-installed, unpacked or
config-files are not); it counts as held when the wanted action is ``h``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError

SHOW_FORMAT = '${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'
_WANTED = 'uihrp'
_STATES = 'ncHUFWti'


def parse_dpkg_query(text):
    """``dpkg-query --show --showformat=SHOW_FORMAT`` -> ``{name: {'version': str, 'held': bool}}`` of installed packages."""
    installed = {}
    for number, line in enumerate((text or '').splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split('\t')
        status = fields[2].rstrip() if len(fields) == 3 else ''
        if len(fields) != 3 or not fields[0] or len(status) < 2 or status[0] not in _WANTED or status[1] not in _STATES:
            raise ParseError('dpkg-query', 'line %d is not "<package>\\t<version>\\t<status>": %r' % (number, line[:120]))
        if status[1] == 'i':
            installed[fields[0]] = {'version': fields[1], 'held': status[0] == 'h'}
    return installed
