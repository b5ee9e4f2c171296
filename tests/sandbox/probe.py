# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run on a lab host by tests/sandbox/closed.yml: try a TCP connection to each PORT of HOST at once and
print {"open": [...], "closed": [...]} as JSON. A port is open when the handshake completes within the
timeout; refused, reset and silently dropped (the firewall's drop) are all closed.

usage: probe.py HOST TIMEOUT PORT [PORT ...]"""

from __future__ import absolute_import, division, print_function

import json
import socket
import sys
import threading


def probe(host, port, timeout, result):
    try:
        socket.create_connection((host, port), timeout=timeout).close()
        result[port] = True
    except OSError:
        result[port] = False


def main(argv):
    host, timeout, ports = argv[0], float(argv[1]), sorted(set(int(port) for port in argv[2:]))
    result = {}
    threads = [threading.Thread(target=probe, args=(host, port, timeout, result)) for port in ports]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps({'open': [p for p in ports if result[p]], 'closed': [p for p in ports if not result[p]]}))


if __name__ == '__main__':
    main(sys.argv[1:])
