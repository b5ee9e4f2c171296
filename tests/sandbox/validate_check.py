# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check one run of playbooks/validate.yml (tests/sandbox/validate.sh): each node's JUnit file, read with junitparser,
and the fleet table agree on which nodes passed and exactly which checks failed; with --fabric, the group's
all-reduce across nodes ran (its report lists every rank of both nodes), its JUnit file fails exactly the
--fabric-failed checks, and every member carries them in the fleet table.

    python3 tests/sandbox/validate_check.py validation-results/<time>/ --passed gpu-node-2 --failed gpu-node-1 'check [gpu]' ...
        [--fabric all --fabric-ranks 10 [--fabric-failed fabric.all_reduce.busbw]]
"""

from __future__ import absolute_import, division, print_function

import argparse
import csv
import json
import os
import sys

import junitparser


def failures(path):
    suites = junitparser.JUnitXml.fromfile(path)
    cases = [case for suite in suites for case in suite]
    return len(cases), sorted(case.name for case in cases if case.result and isinstance(case.result[0], junitparser.Failure))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('run')
    parser.add_argument('--passed', nargs='*', default=[])
    parser.add_argument('--failed', nargs='+', metavar=('NODE', 'CHECK'), help='a node and every check it must fail')
    parser.add_argument('--fabric', metavar='GROUP', help='the group whose all-reduce across nodes must have run')
    parser.add_argument('--fabric-ranks', type=int, default=0, help='the ranks it must have listed')
    parser.add_argument('--fabric-failed', nargs='*', default=[], help='every check the group must fail')
    args = parser.parse_args()
    expected = dict((node, []) for node in args.passed)
    if args.failed:
        expected[args.failed[0]] = sorted(args.failed[1:])
    with open(os.path.join(args.run, 'fleet.csv')) as handle:
        table = list(csv.DictReader(handle))
    problems = []
    fabric_failed = sorted(args.fabric_failed)
    if args.fabric:
        directory = os.path.join(args.run, 'fabric-' + args.fabric)
        cases, failed = failures(os.path.join(directory, 'junit.xml'))
        with open(os.path.join(directory, 'report.json')) as handle:
            report = json.load(handle)
        with open(os.path.join(directory, 'raw', 'all_reduce_perf.txt')) as handle:
            ranks = sorted(set(line.split('#  Rank', 1)[1].split()[0] for line in handle if '#  Rank' in line), key=int)
        print('  fabric %s: members %s, %d ranks listed, %d checks in junit.xml, failed: %s'
              % (args.fabric, ', '.join(report['members']), len(ranks), cases, failed or 'none'))
        if failed != fabric_failed or cases < 2:
            problems.append('fabric %s failed %s in junit.xml (%d checks), expected %s' % (args.fabric, failed, cases, fabric_failed))
        if len(ranks) != args.fabric_ranks or report['np'] != args.fabric_ranks:
            problems.append('fabric %s listed %d ranks for np %s, expected %d' % (args.fabric, len(ranks), report['np'], args.fabric_ranks))
    for node, wanted in sorted(expected.items()):
        cases, failed = failures(os.path.join(args.run, node, 'junit.xml'))
        in_table = sorted(row['check'] + (' [%s]' % row['gpu'] if row['gpu'] else '') for row in table
                          if row['node'] == node and row['verdict'] == 'FAIL')
        verdicts = set(row['verdict'] for row in table if row['node'] == node and row['verdict'] in ('PASS', 'FAIL'))
        print('  %s: %d checks in junit.xml, failed: %s; fleet table: %s' % (node, cases, failed or 'none', sorted(verdicts)))
        if failed != wanted:
            problems.append('%s failed %s in junit.xml, expected %s' % (node, failed, wanted))
        if in_table != sorted(wanted + fabric_failed):
            problems.append('%s failed %s in fleet.csv, expected %s' % (node, in_table, sorted(wanted + fabric_failed)))
        if verdicts != set(['FAIL' if wanted or fabric_failed else 'PASS']):
            problems.append('%s has the verdicts %s in fleet.csv' % (node, sorted(verdicts)))
        if cases < 10:
            problems.append('%s: only %d checks ran' % (node, cases))
    for problem in problems:
        print('FAILED: ' + problem)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
