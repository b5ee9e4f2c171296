# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The figures of benchmarks/maintenance_under_load.yml: from the gateways' own record of their servers
(`journalctl -t llmfleet-gateway -o short-unix`: nginx's "loaded N server(s): ...; drained M: ..." at each reload, the
router's "router lists N worker(s): ...") and the load's result, how many GPU nodes were drained at once, how long
each node was out, how long the roll took, and the load's failed requests.

    python maintenance_report.py --journal gateway.log --endpoints endpoints.json --load load.json \
        --limit 1 --out maintenance.json

endpoints.json maps each GPU node to its workers' "address:port". Prints the JSON it writes; "problems" lists what
broke the guarantees (a failed request, more nodes out at once than --limit).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import json
import re
import sys

NGINX = re.compile(r'^(?P<time>\d+(?:\.\d+)?) (?P<host>\S+) llmfleet-gateway(?:\[\d+\])?: loaded \d+ server\(s\):.*; drained \d+: (?P<drained>.*)$')
ROUTER = re.compile(r'^(?P<time>\d+(?:\.\d+)?) (?P<host>\S+) llmfleet-gateway(?:\[\d+\])?: router lists \d+ worker\(s\): (?P<listed>[^;]*);')


def _keys(text):
    return set(word.split('://', 1)[-1].rstrip('/') for word in text.split() if word != '-')


def drained_timeline(lines, endpoints):
    """Journal lines (of one gateway or several, each line naming its host) and {node: [address:port]} ->
    [(time, set of nodes drained at any gateway)], in the lines' order. With the router, a worker it does not list is
    drained."""
    every = set(key for keys in endpoints.values() for key in keys)
    node_of = dict((key, node) for node, keys in endpoints.items() for key in keys)
    at_gateway = {}
    timeline = []
    for line in lines:
        match = NGINX.match(line.strip())
        if match:
            drained = _keys(match.group('drained'))
        else:
            match = ROUTER.match(line.strip())
            if not match:
                continue
            drained = every - _keys(match.group('listed'))
        at_gateway[match.group('host')] = set(node_of[key] for key in drained if key in node_of)
        timeline.append((float(match.group('time')), set().union(*at_gateway.values())))
    return timeline


def figures(timeline, load, limit):
    """The timeline, the load's result and the budget -> the report (a dict)."""
    out = {}
    first = {}
    for when, nodes in timeline:
        for node in nodes:
            first.setdefault(node, when)
        for node in list(first):
            if node not in nodes and node not in out:
                out[node] = round(when - first[node], 1)
    most = max([len(nodes) for _when, nodes in timeline] or [0])
    still = sorted(node for node in first if node not in out)
    starts = [first[node] for node in first]
    ends = [first[node] + out[node] for node in out]
    report = {
        'completed': load.get('completed'), 'failed': load.get('failed'), 'errors': load.get('errors', [])[:10],
        'most_nodes_drained_at_once': most, 'limit': limit, 'seconds_out': out, 'still_drained': still,
        'roll_seconds': round(max(ends) - min(starts), 1) if starts and ends else None,
    }
    problems = []
    if load.get('failed'):
        problems.append('%s request(s) failed' % load['failed'])
    if most > limit:
        problems.append('%d nodes were drained at once, more than %d' % (most, limit))
    report['problems'] = problems
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', 1)[0])
    parser.add_argument('--journal', required=True)
    parser.add_argument('--endpoints', required=True)
    parser.add_argument('--load', required=True)
    parser.add_argument('--limit', type=int, required=True)
    parser.add_argument('--out', required=True)
    args = parser.parse_args(argv)
    with open(args.journal) as handle:
        lines = handle.readlines()
    with open(args.endpoints) as handle:
        endpoints = json.load(handle)
    with open(args.load) as handle:
        load = json.load(handle)
    report = figures(drained_timeline(lines, endpoints), load, args.limit)
    with open(args.out, 'w') as handle:
        json.dump(report, handle, indent=2, sort_keys=True)
        handle.write('\n')
    json.dump(report, sys.stdout, sort_keys=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
