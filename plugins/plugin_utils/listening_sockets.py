# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The listening TCP sockets of a node, from one ``ss -Hltnpe`` (iproute2) run on it.

One line per socket, no header (``-H``), numeric (``-n``), here cut in two::

    LISTEN 0 16 10.89.77.1:18000 0.0.0.0:* users:(("VLLM::EngineCor",pid=28124,fd=3),("VLLM::APIServer",pid=28122,fd=3))
        uid:65534 ino:7281545 sk:1139 cgroup:/ <->

- the local address is ``<address>:<port>``; IPv6 in brackets (``[::]:8000``), ``*:<port>`` for a dual-stack
  socket, ``%<device>`` after an address bound to a device (``127.0.0.53%lo:53``);
- ``users:(...)`` (``-p``) lists every process holding the socket (forked workers share it), each name in double
  quotes as the kernel's ``comm`` (at most 15 characters, spaces allowed); absent where ``ss`` cannot see the
  holder (another network namespace's process);
- ``uid:<n>`` (``-e``) is the socket's owner; ``ss`` prints it only when it is not 0 (iproute2 ``ss.c``,
  ``sock_details_print``: ``if (s->uid)``), so a socket without it is root's.

A line that is not such a socket raises ``ValueError`` naming it: the reading is not guessed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_LINE_RE = re.compile(
    r'^(?P<state>[A-Z][A-Z0-9-]*)\s+(?P<recv_q>\d+)\s+(?P<send_q>\d+)\s+'
    r'(?P<address>\S+):(?P<port>\d+)\s+(?P<peer>\S+)(?P<details>(?:\s.*)?)$')
_USERS_RE = re.compile(r'(?:^|\s)users:\((?P<users>(?:\(".*?",pid=\d+,fd=\d+\),?)+)\)(?=\s|$)')
_PROCESS_RE = re.compile(r'\("(?P<name>.*?)",pid=(?P<pid>\d+),fd=(?P<fd>\d+)\)')
_UID_RE = re.compile(r'(?:^|\s)uid:(?P<uid>\d+)(?=\s|$)')


def parse_listening(text):
    """``ss -Hltnpe`` output -> a list of sockets, in its order, each
    ``{'address': str, 'port': int, 'uid': int, 'processes': [{'name': str, 'pid': int}, ...]}``.

    ``address`` is as ``ss`` prints it without brackets or device (``::``, ``*``, ``127.0.0.53``); a process holding
    the socket through several descriptors is listed once.
    """
    sockets = []
    for number, line in enumerate(str(text or '').splitlines(), start=1):
        if not line.strip():
            continue
        match = _LINE_RE.match(line.strip())
        if match is None or match.group('state') != 'LISTEN':
            raise ValueError('line %d of `ss -Hltnpe` is not a listening TCP socket: %r' % (number, line.strip()[:200]))
        details = match.group('details')
        processes = []
        users = _USERS_RE.search(details)
        if users is not None:
            for process in _PROCESS_RE.finditer(users.group('users')):
                entry = {'name': process.group('name'), 'pid': int(process.group('pid'))}
                if entry not in processes:
                    processes.append(entry)
            details = details[:users.start()] + ' ' + details[users.end():]
        uid = _UID_RE.search(details)
        address = match.group('address').split('%', 1)[0]
        if address.startswith('[') and address.endswith(']'):
            address = address[1:-1]
        sockets.append({'address': address, 'port': int(match.group('port')),
                        'uid': int(uid.group('uid')) if uid is not None else 0, 'processes': processes})
    return sockets
