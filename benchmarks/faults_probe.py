# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probes of benchmarks/faults.yml (Python 3 standard library only; each prints one JSON document).

On a GPU node (as root):

  kill    --unit NAME --process api-server|engine-core
          SIGKILL the worker's API server (the unit's MainPID) or its engine core (the process of the unit's
          cgroup whose title is VLLM::EngineCore..., as vLLM 0.32 names it).
  watch   --url URL --model NAME --key-file FILE --out FILE --log FILE --stop-file FILE [--until-back]
          Ask the worker for /health and a one-token completion every --interval seconds; record every outage
          (from the first failed try to the first answer again) in --out (rewritten as it goes) and a line per
          change in --log; stop once the worker answers again after an outage (--until-back), when the stop
          file appears, at the latest after --timeout seconds.
  proof   --endpoints JSON
          For each worker ({name, url}): its MainPID, the process's command line, the venv it runs from (the
          venv's .llmfleet-engine marker), its engine flags, its engine cores and the version /version reports.

On the controller:

  report  --cases FILE --out FILE
          Judge the cases the playbook recorded (failed requests of each case's load against what it allows, the
          time until the worker served again, the proof that the new process, flag or venv runs) and print the
          figures, a table and the problems found.

The worker key comes from a file (its first line), never from the command line.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import collections
import glob
import json
import os
import signal
import subprocess
import sys
import time

from urllib.error import HTTPError, URLError
from urllib.request import Request, urlopen

ENGINE_CORE_TITLE = 'VLLM::EngineCore'
MARKER = '.llmfleet-engine'
KILLED = ('kill_api_server', 'kill_engine_core')


# ---------------------------------------------------------------------------------------------
# processes

def parse_cmdline(data):
    """/proc/<pid>/cmdline (NUL-separated bytes) -> argv list; a retitled process is one element."""
    text = data.decode('utf-8', 'replace') if isinstance(data, bytes) else data
    return [part for part in text.split('\0') if part != ''] if text else []


def engine_core_pids(argvs):
    """{pid: argv} -> the pids whose title names vLLM's engine core (VLLM::EngineCore, VLLM::EngineCore_DP0, ...)."""
    return sorted(pid for pid, argv in argvs.items() if argv and argv[0].startswith(ENGINE_CORE_TITLE))


def cgroup_dirs(control_group, root='/sys/fs/cgroup'):
    """Candidate directories of a unit's ControlGroup: the unified hierarchy, then v1's systemd hierarchy."""
    relative = control_group.lstrip('/')
    return [os.path.join(root, relative), os.path.join(root, 'systemd', relative)]


def flags_of(argv):
    """An engine's flags from its argv: ['--port', '8000', '--enforce-eager'] -> {'port': '8000', 'enforce-eager': True}.

    Everything before the first --flag (the interpreter, the script, "serve", the model) is left out; --name=value
    is split; a flag followed by another flag (or nothing) is a bare flag; several values keep the first.
    """
    flags = {}
    index = 0
    while index < len(argv) and not argv[index].startswith('--'):
        index += 1
    while index < len(argv):
        arg = argv[index]
        index += 1
        if not arg.startswith('--'):
            continue
        name = arg[2:]
        if '=' in name:
            name, value = name.split('=', 1)
            flags[name] = value
        elif index < len(argv) and not argv[index].startswith('--'):
            flags[name] = argv[index]
            index += 1
        else:
            flags[name] = True
    return flags


def venv_of(argv, exists=os.path.exists):
    """The venv a process runs from: the first argv element <venv>/bin/<file> with <venv>/pyvenv.cfg (else None)."""
    for arg in argv:
        if arg.startswith('/'):
            venv = os.path.dirname(os.path.dirname(arg))
            if os.path.basename(os.path.dirname(arg)) == 'bin' and exists(os.path.join(venv, 'pyvenv.cfg')):
                return venv
    return None


def parse_marker(text):
    """The engine role's venv marker: a first line of words, then JSON (what the venv holds); None if it is not one."""
    if not text:
        return None
    _first, _sep, rest = text.partition('\n')
    try:
        data = json.loads(rest)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def systemctl_show(unit, prop):
    out = subprocess.run(['systemctl', 'show', '--property', prop, '--value', unit], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, check=True)
    return out.stdout.strip()


def read_argv(pid):
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as handle:
            return parse_cmdline(handle.read())
    except (IOError, OSError):
        return []


def parent_of(stat):
    """The parent pid from /proc/<pid>/stat's text (the field after the parenthesised command name)."""
    return int(stat.rsplit(')', 1)[1].split()[1])


def children_of(pid):
    """The pids whose parent is pid (from /proc/*/stat)."""
    found = []
    for path in glob.glob('/proc/[0-9]*/stat'):
        try:
            with open(path) as handle:
                if parent_of(handle.read()) == pid:
                    found.append(int(path.split('/')[2]))
        except (IOError, OSError, ValueError, IndexError):
            continue
    return sorted(found)


def unit_pids(unit):
    """Every pid of the unit's cgroup (its sub-cgroups included); without a cgroup directory to read, the main
    process and its children."""
    control_group = systemctl_show(unit, 'ControlGroup')
    pid = main_pid(unit)
    if not control_group:
        return [pid] + children_of(pid) if pid else []
    for top in cgroup_dirs(control_group):
        if os.path.isdir(top):
            pids = set()
            for dirpath, _dirs, files in os.walk(top):
                if 'cgroup.procs' in files:
                    with open(os.path.join(dirpath, 'cgroup.procs')) as handle:
                        pids.update(int(line) for line in handle if line.strip())
            return sorted(pids)
    return [pid] + children_of(pid) if pid else []


def main_pid(unit):
    return int(systemctl_show(unit, 'MainPID') or 0)


def cmd_kill(args):
    pid_main = main_pid(args.unit)
    if not pid_main:
        raise SystemExit('%s has no main process (not running): nothing to kill' % args.unit)
    argvs = dict((pid, read_argv(pid)) for pid in unit_pids(args.unit))
    if args.process == 'api-server':
        target = pid_main
    else:
        cores = engine_core_pids(argvs)
        if not cores:
            raise SystemExit('%s has no process titled %s among %s' % (
                args.unit, ENGINE_CORE_TITLE, ', '.join('%d %s' % (pid, (argv or ['?'])[0]) for pid, argv in sorted(argvs.items()))))
        target = cores[0]
    title = (argvs.get(target) or read_argv(target) or ['?'])[0]
    killed_at = time.time()
    os.kill(target, signal.SIGKILL)
    return {'unit': args.unit, 'process': args.process, 'pid': target, 'title': title, 'main_pid': pid_main,
            'engine_cores': engine_core_pids(argvs), 'killed_at': killed_at}


# ---------------------------------------------------------------------------------------------
# the worker's answers

def http(url, body=None, key=None, timeout=10.0):
    """(status, text) of a GET (or a JSON POST with body); status 0 with the reason when there is no answer."""
    headers = {'Content-Type': 'application/json'} if body is not None else {}
    if key:
        headers['Authorization'] = 'Bearer ' + key
    data = json.dumps(body).encode('utf-8') if body is not None else None
    try:
        response = urlopen(Request(url, data=data, headers=headers), timeout=timeout)
        return response.getcode(), response.read().decode('utf-8', 'replace')
    except HTTPError as exc:
        return exc.code, exc.read().decode('utf-8', 'replace')[:200]
    except (URLError, IOError, OSError, ValueError) as exc:
        return 0, str(getattr(exc, 'reason', exc))


def serves(url, model, key, timeout=30.0, ask=http):
    """(True, '') when the worker answers /health and gives one token; else (False, what went wrong)."""
    status, text = ask(url + '/health', timeout=min(timeout, 5.0))
    if status != 200:
        return False, '/health: %s' % (('HTTP %d' % status) if status else text)
    status, text = ask(url + '/v1/completions', body={'model': model, 'prompt': 'Hello', 'max_tokens': 1}, key=key,
                       timeout=timeout)
    if status != 200:
        return False, 'one token: %s' % (('HTTP %d %s' % (status, text[:120])) if status else text)
    try:
        choices = json.loads(text).get('choices')
    except (ValueError, AttributeError):
        choices = None
    if not choices:
        return False, 'one token: no choices in the answer'
    return True, ''


class Watch:
    """The record of a worker watched over time: outages from the first failed try to the first answer again."""

    def __init__(self, url, started_at):
        self.state = {'url': url, 'started_at': started_at, 'tries': 0, 'answered': 0, 'up': None, 'outages': [],
                      'last_error': '', 'finished_at': None, 'timed_out': False}

    def sample(self, ok, error, tried_at, answered_at):
        """Record one try; return a line for the log when the state changed, else None."""
        state = self.state
        state['tries'] += 1
        line = None
        if ok:
            state['answered'] += 1
            if state['outages'] and state['outages'][-1]['up_at'] is None:
                outage = state['outages'][-1]
                outage['up_at'] = answered_at
                outage['seconds'] = round(answered_at - outage['down_at'], 2)
                line = 'serves again after %.1f s (%s)' % (outage['seconds'], outage['error'])
            elif state['up'] is None:
                line = 'serves'
        else:
            state['last_error'] = error
            if state['up'] is not False:
                state['outages'].append({'down_at': tried_at, 'up_at': None, 'seconds': None, 'error': error})
                line = 'does not serve: %s' % error
        state['up'] = ok
        return line

    def back(self):
        """True once an outage ended."""
        return any(outage['up_at'] is not None for outage in self.state['outages'])


def write_json(path, data):
    tmp = '%s.%d' % (path, os.getpid())
    with open(tmp, 'w') as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
    os.rename(tmp, path)


def read_key(path):
    with open(path) as handle:
        return handle.readline().strip()


def cmd_watch(args):
    key = read_key(args.key_file)
    watch = Watch(args.url, time.time())
    deadline = watch.state['started_at'] + args.timeout
    last_write = 0.0
    with open(args.log, 'a') as log:
        def say(text):
            log.write('%s %s %s\n' % (time.strftime('%H:%M:%S'), args.url, text))
            log.flush()
        say('watching (every %.1f s, /health and one token)' % args.interval)
        while True:
            tried_at = time.time()
            ok, error = serves(args.url, args.model, key, timeout=args.request_timeout)
            line = watch.sample(ok, error, tried_at, time.time())
            if line:
                say(line)
            now = time.time()
            if line or now - last_write > 5:
                write_json(args.out, watch.state)
                last_write = now
            if args.until_back and watch.back():
                break
            if os.path.exists(args.stop_file):
                say('stop file %s: done' % args.stop_file)
                break
            if now > deadline:
                watch.state['timed_out'] = True
                say('gave up after %d s (%s)' % (args.timeout, watch.state['last_error'] or 'no outage ended'))
                break
            time.sleep(max(0.0, args.interval - (time.time() - tried_at)))
    watch.state['finished_at'] = time.time()
    write_json(args.out, watch.state)
    return watch.state


def cmd_proof(args):
    workers = []
    for endpoint in json.loads(args.endpoints):
        unit = endpoint['name'] + '.service'
        pid = main_pid(unit)
        argv = read_argv(pid) if pid else []
        venv = venv_of(argv)
        marker = None
        if venv and os.path.exists(os.path.join(venv, MARKER)):
            with open(os.path.join(venv, MARKER)) as handle:
                marker = parse_marker(handle.read())
        status, text = http(endpoint['url'] + '/version', timeout=10.0)
        try:
            version = json.loads(text).get('version') if status == 200 else None
        except (ValueError, AttributeError):
            version = None
        cores = engine_core_pids(dict((p, read_argv(p)) for p in unit_pids(unit))) if pid else []
        workers.append({'name': endpoint['name'], 'main_pid': pid, 'argv': argv, 'venv': venv, 'flags': flags_of(argv),
                        'wheelhouse': (marker or {}).get('wheelhouse'), 'lock_sha256': (marker or {}).get('requirements_sha256'),
                        'engine_cores': cores, 'version': version, 'active_since': systemctl_show(unit, 'ActiveEnterTimestamp')})
    return {'workers': workers}


# ---------------------------------------------------------------------------------------------
# the verdict (controller)

def load_figures(result):
    """The load's result (benchmarks/steady_load.py) -> completed, failed and the distinct errors with counts."""
    errors = collections.Counter((error or '').strip().splitlines()[0][:160] if (error or '').strip() else ''
                                 for error in result.get('errors') or [])
    errors.pop('', None)
    return {'completed': result.get('completed', 0), 'failed': result.get('failed', 0),
            'num_prompts': result.get('num_prompts'), 'duration_s': round(result.get('duration', 0.0), 1),
            'max_concurrency': result.get('max_concurrency'),
            'errors': [{'error': text, 'count': count} for text, count in errors.most_common(5)]}


def _by_name(proofs):
    return dict((worker['name'], worker) for node in proofs for worker in node.get('workers', []))


def _true(value):
    """A flag as Ansible may hand it over (a bool, or its text)."""
    return value is True or str(value).strip().lower() in ('true', 'yes', '1')


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def judge(case):
    """One case recorded by the playbook -> its figures and the problems found (an empty list: it passed)."""
    name, worker = case['case'], case['worker']
    problems = []
    figures = {'case': name, 'worker': worker, 'node': case.get('node')}
    load = load_figures(case['load']) if case.get('load') else None
    allowed = (_int(case.get('allowed_failed')) or 0) if name in KILLED else 0
    figures['allowed_failed'] = allowed
    if load is None:
        problems.append('%s: no result of the load' % name)
    else:
        figures.update(failed=load['failed'], completed=load['completed'], load_duration_s=load['duration_s'],
                       errors=load['errors'])
        if load['failed'] > allowed:
            problems.append('%s: %d requests failed, %d allowed (%s)' % (
                name, load['failed'], allowed, '; '.join('%dx %s' % (e['count'], e['error']) for e in load['errors'])))
        if load['completed'] + load['failed'] == 0:
            problems.append('%s: the load sent no request' % name)
    if _true(case.get('load_finished_early')):
        problems.append('%s: the load was over before the case was (raise faults_load_seconds.%s)' % (name, name))
    watch = case.get('watch') or {}
    outages = watch.get('outages') or []
    figures['outages'] = len(outages)
    if name in KILLED:
        killed = case.get('kill') or {}
        figures['killed_pid'] = killed.get('pid')
        ended = [o for o in outages if o['up_at'] is not None and o['up_at'] >= killed.get('killed_at', 0)]
        if ended:
            figures['seconds_to_serve'] = round(ended[0]['up_at'] - killed['killed_at'], 1)
    else:
        ended = [o for o in outages if o['seconds'] is not None]
        if ended:
            figures['seconds_to_serve'] = round(max(o['seconds'] for o in ended), 1)
        if _int(case.get('serve_rc')) != 0:
            problems.append('%s: playbooks/serve.yml failed (rc=%s): see %s' % (name, case.get('serve_rc'), case.get('serve_log')))
    if not outages:
        problems.append('%s: %s never stopped serving (%s)' % (
            name, worker, 'the kill had no effect' if name in KILLED else 'serve.yml did not restart it'))
    elif 'seconds_to_serve' not in figures:
        problems.append('%s: %s did not serve again within %s s (last: %s)' % (
            name, worker, case.get('watch_timeout', '?'), watch.get('last_error') or 'no answer'))
    problems.extend(proof_problems(case))
    before, after = _by_name(case.get('before', [])), _by_name(case.get('after', []))
    mine = after.get(worker, {})
    figures.update(main_pid=mine.get('main_pid'), venv=mine.get('venv'), version=mine.get('version'),
                   engine_cores=mine.get('engine_cores'))
    figures['main_pid_before'] = before.get(worker, {}).get('main_pid')
    return figures, problems


def proof_problems(case):
    """What the workers run after the case against before it: a new process (kills), the flag or the venv (serve)."""
    name, worker = case['case'], case['worker']
    before, after = _by_name(case.get('before', [])), _by_name(case.get('after', []))
    problems = []
    if worker not in after or not after[worker].get('main_pid'):
        return ['%s: %s runs no process after the case' % (name, worker)]
    old, new = before.get(worker, {}), after[worker]
    if name == 'kill_api_server' and new['main_pid'] == (case.get('kill') or {}).get('pid'):
        problems.append('%s: %s still runs the killed API server %s' % (name, worker, new['main_pid']))
    if name == 'kill_engine_core' and (case.get('kill') or {}).get('pid') in (new.get('engine_cores') or []):
        problems.append('%s: %s still runs the killed engine core %s' % (name, worker, case['kill']['pid']))
    if name in KILLED:
        for field in ('venv', 'flags'):
            if old.get(field) != new.get(field):
                problems.append('%s: %s came back with another %s (%s, was %s)' % (name, worker, field, new.get(field), old.get(field)))
    if name == 'changed_flag':
        for flag, value in sorted((case.get('flags') or {}).items()):
            want = True if value is True else str(value)
            if before.get(worker, {}).get('flags', {}).get(flag) == want:
                problems.append('%s: %s ran with --%s %s before the case already: it proves nothing' % (name, worker, flag, value))
            for other in sorted(after):
                if after[other].get('flags', {}).get(flag) != want:
                    problems.append('%s: %s runs without --%s %s (its flags: %s)' % (
                        name, other, flag, value, after[other].get('flags')))
    if name == 'engine_switch':
        want = case.get('wheelhouse')
        for other in sorted(after):
            if (after[other].get('wheelhouse') or '').rstrip('/') != (want or '').rstrip('/'):
                problems.append('%s: %s runs %s from the wheelhouse %s, not %s' % (
                    name, other, after[other].get('venv'), after[other].get('wheelhouse'), want))
            if other in before and after[other].get('venv') == before[other].get('venv'):
                problems.append('%s: %s still runs the venv %s' % (name, other, before[other].get('venv')))
    for other in sorted(after):
        if not after[other].get('version'):
            problems.append('%s: %s reports no engine version on /version' % (name, other))
    return problems


def table(rows):
    """The figures of every case as a text table (lines)."""
    head = ('case', 'worker', 'failed', 'allowed', 'completed', 'to serve (s)', 'pid before -> after', 'venv', 'version')
    body = [(r['case'], r['worker'], str(r.get('failed', '-')), str(r['allowed_failed']), str(r.get('completed', '-')),
             str(r.get('seconds_to_serve', '-')), '%s -> %s' % (r.get('main_pid_before'), r.get('main_pid')),
             os.path.basename(r.get('venv') or '-'), str(r.get('version') or '-')) for r in rows]
    widths = [max(len(cell) for cell in column) for column in zip(head, *body)]
    return ['  '.join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in [head] + body]


def over_start(rows, most):
    """A kill's way back against a planned restart's outage (the worker's start time, from the serve.yml cases).

    Returns the lines for the table and a problem for every kill that took more than `most` seconds over it."""
    planned = [r['seconds_to_serve'] for r in rows if r['case'] not in KILLED and r.get('seconds_to_serve') is not None]
    lines, problems = [], []
    if planned:
        start = min(planned)
        for row in rows:
            if row['case'] in KILLED and row.get('seconds_to_serve') is not None:
                row['over_start_s'] = round(row['seconds_to_serve'] - start, 1)
                lines.append('%s: served again %.1f s after the kill, %+.1f s over a planned restart (%.1f s; goal: %+g s at most)'
                             % (row['case'], row['seconds_to_serve'], row['over_start_s'], start, most))
                if row['over_start_s'] > most:
                    problems.append('%s: served again %.1f s after the kill, more than %g s over a planned restart (%.1f s)'
                                    % (row['case'], row['seconds_to_serve'], most, start))
    return lines, problems


def report(cases, over_start_most=10.0):
    rows, problems = [], []
    for case in cases:
        figures, found = judge(case)
        figures['problems'] = found
        rows.append(figures)
        problems.extend(found)
    lines, late = over_start(rows, over_start_most)
    return {'cases': rows, 'problems': problems + late, 'table': table(rows) + lines}


def cmd_report(args):
    with open(args.cases) as handle:
        cases = json.load(handle)
    for case in cases:
        if case.get('load_file') and os.path.exists(case['load_file']):
            with open(case['load_file']) as handle:
                case['load'] = json.load(handle)
    result = report(cases, args.over_start_most)
    result['created'] = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
    write_json(args.out, result)
    return result


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    sub = parser.add_subparsers(dest='command')
    sub.required = True
    kill = sub.add_parser('kill')
    kill.add_argument('--unit', required=True)
    kill.add_argument('--process', choices=['api-server', 'engine-core'], required=True)
    kill.set_defaults(func=cmd_kill)
    watch = sub.add_parser('watch')
    watch.add_argument('--url', required=True)
    watch.add_argument('--model', required=True)
    watch.add_argument('--key-file', required=True)
    watch.add_argument('--out', required=True)
    watch.add_argument('--log', required=True)
    watch.add_argument('--until-back', action='store_true', help='stop once the worker serves again after an outage')
    watch.add_argument('--stop-file', required=True, help='stop when this file appears')
    watch.add_argument('--interval', type=float, default=0.5)
    watch.add_argument('--timeout', type=int, default=900)
    watch.add_argument('--request-timeout', type=float, default=30.0)
    watch.set_defaults(func=cmd_watch)
    proof = sub.add_parser('proof')
    proof.add_argument('--endpoints', required=True, help='JSON list of {name, url}')
    proof.set_defaults(func=cmd_proof)
    rep = sub.add_parser('report')
    rep.add_argument('--cases', required=True)
    rep.add_argument('--out', required=True)
    rep.add_argument('--over-start-most', type=float, default=10.0,
                     help='seconds a killed worker may take to serve again over a planned restart')
    rep.set_defaults(func=cmd_report)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    print(json.dumps(args.func(args), sort_keys=True))
    return 0


if __name__ == '__main__':
    sys.exit(main())
