# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small readings of the running kernel: its version, a numeric sysctl, the CPU sockets.

Pure: text in, values out. The kernel command line has its own parser (cmdline.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_KERNEL_RE = re.compile(r'^(?P<major>[0-9]+)\.(?P<minor>[0-9]+)(?:\.(?P<patch>[0-9]+))?')
_INT_RE = re.compile(r'^\s*(?P<value>-?[0-9]+)\s*$')


def parse_kernel_version(release):
    """``6.8.0-45-generic`` -> ``(6, 8, 0)``; ``5.15`` -> ``(5, 15, 0)``; None when it does not start with a version."""
    match = _KERNEL_RE.match(str(release or '').strip())
    if not match:
        return None
    return (int(match.group('major')), int(match.group('minor')), int(match.group('patch') or 0))


def parse_sysctl_int(text):
    """The value of a one-number file under /proc/sys (``0\\n`` -> 0); None when missing or not a number."""
    match = _INT_RE.match(text or '')
    return int(match.group('value')) if match else None


def count_sockets(package_ids):
    """The number of CPU sockets from the ``topology/physical_package_id`` of each CPU; None when none is known."""
    ids = set()
    for text in package_ids or []:
        value = parse_sysctl_int(text)
        if value is not None and value >= 0:
            ids.add(value)
    return len(ids) or None
