# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Molecule's scenarios in parallel lanes.

A scenario spends much of its time waiting on its instances (a vLLM server loading, a build, a reboot, a
unit's start), with the controller's CPU idle. `labctl molecule --lanes N test --all` runs the scenarios in
N molecule processes side by side, each one `molecule test -s A -s B ...` on its share; every scenario
has its own containers and ephemeral directory and they all join the lab's one network. With `--with-sandbox` the
README's main job, `tests/sandbox.sh` (`make sandbox`), is one more share: the lane that gets it runs it first, stops
the sandbox's hosts (their engines would take the CPU from the scenarios) and goes on with its scenarios. The shares are
balanced by how long each scenario took in a full run (WEIGHTS, seconds; an unknown scenario counts as
the longest). Each lane's whole output goes to its log; the terminal gets each lane's step lines,
prefixed with the lane, and the tail of a failed lane's log.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shlex
import subprocess
import threading
import time

# Seconds of each scenario in a full `molecule test --all` on 2 cores in two lanes, from make test's lane logs (each
# scenario's first destroy to its last; docs/measurements.md, "make test"): build, mirror, rocm, sandbox and workers
# from the run with the mirror's one pip download and one curl run per wheelhouse; the others from earlier runs.
WEIGHTS = {
    'build': 645,
    'engine': 195,
    'gateway': 325,
    'lab': 65,
    'mirror': 1880,
    'node_options': 120,
    'preflight': 120,
    'rocm': 300,
    'workers': 1105,
    # make sandbox with the lab's image present (hosts, site.yml, answers, closed, monitoring, validation; make test
    # leaves out the multi-node step).
    'sandbox': 1030,
}
SANDBOX = 'sandbox'

# Molecule's own step lines ("INFO     gateway ➜ converge: Executing"; its closing report repeats them without
# INFO) and its one-line summary, with or without colours; the sandbox's steps ("==> run site.yml ...", "FAILED: ...").
STEP_LINE = re.compile(r'^(?:INFO\s+(?:(\w+) \u279c (\w+): (Executing|Executed: .*)|(Molecule executed .*))'
                       r'|(==> .*|FAILED: .*))$')
ANSI = re.compile(r'\x1b\[[0-9;]*m')


def scenarios(molecule_dir):
    """The scenarios under molecule/: every directory with a molecule.yml, sorted."""
    found = []
    for name in sorted(os.listdir(molecule_dir)):
        if os.path.isfile(os.path.join(molecule_dir, name, 'molecule.yml')):
            found.append(name)
    return found


def split(names, lanes, weights=None):
    """Share the scenarios among `lanes` lanes, longest first to the least loaded (ties: the lower lane).

    Returns a list of `lanes` lists of names (each in the order it runs); no lane is empty when there are at
    least as many scenarios as lanes.
    """
    if lanes < 1:
        raise ValueError('lanes must be 1 or more, not %r' % (lanes,))
    weights = WEIGHTS if weights is None else weights
    longest = max(weights.values()) if weights else 1
    loads = [0] * lanes
    shares = [[] for _unused in range(lanes)]
    for name in sorted(names, key=lambda n: (-weights.get(n, longest), n)):
        lane = loads.index(min(loads))
        shares[lane].append(name)
        loads[lane] += weights.get(name, longest)
    return [share for share in shares if share] or [[]]


def step_line(line):
    """'scenario step: state' for one of molecule's step lines, its summary line, None for any other line."""
    match = STEP_LINE.search(ANSI.sub('', line).rstrip())
    if not match:
        return None
    if match.group(5):
        return 'sandbox: ' + match.group(5)
    return match.group(4) or '%s %s: %s' % match.group(1, 2, 3)


def lane_argv(share, molecule_argv, sandbox_argv, stop_argv):
    """The command of one lane: molecule_argv followed by `-s NAME` per scenario of the share.

    A share holding SANDBOX runs sandbox_argv first, then stop_argv (the sandbox's hosts stopped, whatever the
    sandbox's result), then its scenarios; the lane fails if either failed (the sandbox's code first).
    """
    names = [name for name in share if name != SANDBOX]
    scenarios_argv = molecule_argv + [arg for name in names for arg in ('-s', name)] if names else []
    if SANDBOX not in share:
        return scenarios_argv
    scenarios = '%s; m=$?; ' % _shell(scenarios_argv) if scenarios_argv else ''
    return ['bash', '-c', '%s; s=$?; %s; m=0; %sif [ "$s" -ne 0 ]; then exit "$s"; fi; exit "$m"'
            % (_shell(sandbox_argv), _shell(stop_argv), scenarios)]


def _shell(argv):
    return ' '.join(shlex.quote(arg) for arg in argv)


def _follow(proc, lane, log_path, say):
    with open(log_path, 'w', encoding='utf-8', errors='replace') as log_file:
        for raw in iter(proc.stdout.readline, ''):
            log_file.write(raw)
            log_file.flush()
            summary = step_line(raw)
            if summary:
                say('[lane %d %s] %s' % (lane, time.strftime('%H:%M:%S'), summary))


def run(argv_for, shares, env, cwd, log_dir, say, tail_lines=150):
    """Run one molecule process per share at once; return the list of their exit codes.

    argv_for(share) is the command of one lane. A failed lane's last `tail_lines` lines are printed.
    """
    os.makedirs(log_dir, exist_ok=True)
    procs, threads, logs = [], [], []
    for lane, share in enumerate(shares, 1):
        log_path = os.path.join(log_dir, 'molecule-lane-%d.log' % lane)
        logs.append(log_path)
        say('==> lane %d: %s (log %s)' % (lane, ' '.join(share), os.path.relpath(log_path, cwd)))
        # Each lane reads its own /dev/null: lanes that shared one stdin shared its flags, and a program that made it
        # non-blocking in one lane made ansible-playbook in another refuse to start ("Ansible requires blocking IO on
        # stdin/stdout/stderr").
        proc = subprocess.Popen(argv_for(share), env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, universal_newlines=True, errors='replace')
        thread = threading.Thread(target=_follow, args=(proc, lane, log_path, say), daemon=True)
        thread.start()
        procs.append(proc)
        threads.append(thread)
    codes = []
    for proc, thread in zip(procs, threads):
        codes.append(proc.wait())
        thread.join()
    for lane, (code, log_path) in enumerate(zip(codes, logs), 1):
        if code:
            with open(log_path, encoding='utf-8', errors='replace') as log_file:
                tail = log_file.readlines()[-tail_lines:]
            say('==> lane %d failed (rc=%d); the last %d lines of %s:' % (lane, code, len(tail), log_path))
            say(ANSI.sub('', ''.join(tail)).rstrip('\n'))
    return codes
