# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Check one run of playbooks/validate.yml (tests/sandbox/validate.sh): each node's JUnit file, read with junitparser,
and the fleet table agree on which nodes passed and exactly which checks failed.

    python3 tests/sandbox/validate_check.py validation-results/<time>/ --passed gpu-node-2 --failed gpu-node-1 'check [gpu]' ...
"""

from __future__ import absolute_import, division, print_function

import argparse
import csv
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
    args = parser.parse_args()
    expected = dict((node, []) for node in args.passed)
    if args.failed:
        expected[args.failed[0]] = sorted(args.failed[1:])
    with open(os.path.join(args.run, 'fleet.csv')) as handle:
        table = list(csv.DictReader(handle))
    problems = []
    for node, wanted in sorted(expected.items()):
        cases, failed = failures(os.path.join(args.run, node, 'junit.xml'))
        in_table = sorted(row['check'] + (' [%s]' % row['gpu'] if row['gpu'] else '') for row in table
                          if row['node'] == node and row['verdict'] == 'FAIL')
        verdicts = set(row['verdict'] for row in table if row['node'] == node and row['verdict'] in ('PASS', 'FAIL'))
        print('  %s: %d checks in junit.xml, failed: %s; fleet table: %s' % (node, cases, failed or 'none', sorted(verdicts)))
        if failed != wanted:
            problems.append('%s failed %s in junit.xml, expected %s' % (node, failed, wanted))
        if in_table != wanted:
            problems.append('%s failed %s in fleet.csv, expected %s' % (node, in_table, wanted))
        if verdicts != set(['FAIL' if wanted else 'PASS']):
            problems.append('%s has the verdicts %s in fleet.csv' % (node, sorted(verdicts)))
        if cases < 10:
            problems.append('%s: only %d checks ran' % (node, cases))
    for problem in problems:
        print('FAILED: ' + problem)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
