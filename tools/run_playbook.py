# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a playbook of the checkout through ansible-runner's Python API, the way a CI job does.

    .venv/bin/python tools/run_playbook.py -i inventories/sandbox site.yml
    .venv/bin/python tools/run_playbook.py -i inventories/prod --twice --log .cache/ci/site.log site.yml
    .venv/bin/python tools/run_playbook.py -i inventories/prod --limit gpu-node-3 playbooks/serve.yml

The runner's private data dir is <checkout>/.cache/runner/<playbook name>/ (--private-data-dir), the project
is the checkout itself (no copy; ansible-playbook runs in it) and env/envvars, rewritten on every run, holds
ANSIBLE_HOST_KEY_CHECKING "True" (ansible-runner 2.4 sets it to False when the run's environment lacks it,
and the environment wins over any ansible.cfg) and ANSIBLE_CONFIG, the checkout's ansible.cfg. The fact
cache stays the one ansible.cfg names (the runner would move it into each run's artifacts, and what the
plays publish for later runs would be lost).

The play output is printed as it comes (ansible-runner's events; colours only on a terminal) and written
without colours to --log (default: play.log in the private data dir), followed by each run's per-host stats
(ok, changed, failed, unreachable, skipped, rescued) as a table. --twice runs the playbook a second time
and fails unless that run changed nothing, naming each host and task that did.

Exit status: 0 every run succeeded (and with --twice the second changed nothing); 1 a run failed (a host
failed or was unreachable, or the runner's status is not "successful": ansible-playbook's error, timeout,
canceled); 2 bad usage (a missing inventory or playbook, ansible-playbook not found); 3 --twice and the
second run changed something.

Secrets: the tool puts none on a command line, in env/ or in its log; the log holds what Ansible prints.
The runner writes the whole environment of the run into artifacts/<ident>/command (a CI job's tokens
included): the tool deletes that file after each run. Needs ansible-runner (requirements.txt): run it with
the collection's .venv/bin/python.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import os
import re
import shutil
import sys
import time

try:
    import ansible_runner
except ImportError:  # pragma: no cover (the venv has it)
    ansible_runner = None

try:
    import yaml
except ImportError:  # pragma: no cover (ansible-core needs it)
    yaml = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ANSIBLE_CFG = os.path.join(ROOT, 'ansible.cfg')

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NOT_IDEMPOTENT = 0, 1, 2, 3

# The columns of the stats table: (heading, key of ansible-runner's stats / playbook_on_stats event data).
COLUMNS = (('ok', 'ok'), ('changed', 'changed'), ('failed', 'failures'), ('unreachable', 'dark'),
           ('skipped', 'skipped'), ('rescued', 'rescued'))
STAT_KEYS = ('ok', 'changed', 'failures', 'dark', 'skipped', 'rescued', 'ignored', 'processed')

# What else ansible-runner reads from <private data dir>/env/ (the tool writes only env/envvars).
RUNNER_ENV_FILES = ('cmdline', 'extravars', 'passwords', 'settings', 'ssh_key')

ANSI = re.compile(r'\x1b\[[0-9;?]*[A-Za-z]')

# Any fact_cache_type but 'jsonfile' keeps ansible-runner from setting ANSIBLE_CACHE_PLUGIN(_CONNECTION):
# the cache is the one ansible.cfg configures.
FACT_CACHE_FROM_ANSIBLE_CFG = 'ansible.cfg'


class Failure(Exception):
    """A failure explained in one message (printed without a traceback)."""

    def __init__(self, message, code=EXIT_FAILED):
        super(Failure, self).__init__(message)
        self.code = code


def parse_args(argv):
    # allow_abbrev=False: no option is taken for another one by a prefix.
    parser = argparse.ArgumentParser(
        description=__doc__.split('\n\n', maxsplit=1)[0], allow_abbrev=False,
        epilog='Exit status: 0 success; 1 a run failed (a failed or unreachable host, or a runner status other than '
               'successful); 2 bad usage (a missing inventory or playbook); 3 --twice and the second run changed something.')
    parser.add_argument('playbook', help='the playbook, e.g. site.yml or playbooks/serve.yml')
    parser.add_argument('-i', '--inventory', action='append', required=True,
                        help='inventory file or directory (repeat for more than one)')
    parser.add_argument('--twice', '--idempotent', dest='twice', action='store_true',
                        help='run the playbook a second time and fail unless that run changed nothing')
    parser.add_argument('-l', '--limit', help='limit the run to these hosts (ansible-playbook --limit)')
    parser.add_argument('--log', help='the log of the play output and the stats (default: play.log in the private data dir)')
    parser.add_argument('--private-data-dir',
                        help="ansible-runner's private data dir (default: <checkout>/.cache/runner/<playbook name>)")
    parser.add_argument('--timeout', type=int, default=0,
                        help='stop a run after this many seconds (runner status "timeout"; default: none)')
    parser.add_argument('--keep-artifacts', type=int, default=4,
                        help="keep the artifacts of this many latest runs in the private data dir (default: 4)")
    return parser.parse_args(argv)


class Output:
    """The play output: to the terminal as it comes (colours only on a terminal) and to the log without colours."""

    def __init__(self, log, stream=None):
        self.log = log
        self.stream = stream or sys.stdout
        self.colour = hasattr(self.stream, 'isatty') and self.stream.isatty()

    def write(self, text):
        text = text.replace('\r\n', '\n')
        plain = ANSI.sub('', text)
        self.stream.write((text if self.colour else plain) + '\n')
        self.stream.flush()
        self.log.write(plain + '\n')
        self.log.flush()


class Recorder:
    """ansible-runner's event handler: shows each event's output, keeps the stats, names the changed tasks."""

    def __init__(self, output):
        self.output = output
        self.stats = None
        self.changed = []           # (host, task) in the order they changed
        self._changed_keys = set()
        self._items = {}            # (host, task uuid) -> labels of the changed loop items

    def __call__(self, event):
        text = event.get('stdout')
        if text:
            self.output.write(text)
        name = event.get('event')
        data = event.get('event_data') or {}
        res = data.get('res') if isinstance(data.get('res'), dict) else {}
        if name == 'playbook_on_stats':
            self.stats = dict((key, dict(data.get(key) or {})) for key in STAT_KEYS)
        elif name == 'runner_item_on_ok' and was_changed(res, text):
            self._items.setdefault((data.get('host'), data.get('task_uuid')), []).append(item_label(res))
        elif name == 'runner_on_ok':
            key = (data.get('host'), data.get('task_uuid'))
            if key not in self._changed_keys and (was_changed(res, text) or key in self._items):
                self._changed_keys.add(key)
                self.changed.append((data.get('host') or '?', task_title(data, self._items.get(key))))
        return True  # keep the event in the runner's artifacts (job_events)


def was_changed(res, text):
    """Whether an ok result changed. A no_log result is censored without its 'changed' key (ansible-core 2.19):
    then the line Ansible printed for it says so ("changed: [host]")."""
    if 'changed' in res:
        return bool(res['changed'])
    return ANSI.sub('', text or '').lstrip().startswith('changed:')


def item_label(res):
    """The label Ansible prints for a loop item ("(item=...)"); hidden when the task has no_log."""
    if res.get('_ansible_no_log') or 'censored' in res:
        return '(hidden: no_log)'
    label = res.get('_ansible_item_label', res.get('item'))
    text = str(label)
    return text if len(text) <= 60 and '\n' not in text else text.splitlines()[0][:57] + '...'


def task_title(data, items=None):
    """'role : task (path:line)' as Ansible names a task, with the changed loop items if any."""
    title = data.get('task') or data.get('task_action') or '?'
    if data.get('role'):
        title = '%s : %s' % (data['role'], title)
    if items:
        title += ' [items: %s]' % ', '.join(items)
    path = data.get('task_path')
    if path:
        if path.startswith(ROOT + os.sep):
            path = os.path.relpath(path, ROOT)
        title += ' (%s)' % path
    return title


def stats_table(stats):
    """The per-host stats as a plain table (no 'changed=' text: the sandbox sums PLAY RECAP lines)."""
    stats = stats or {}
    hosts = sorted(set().union(*[stats.get(key) or {} for key in STAT_KEYS]))
    if not hosts:
        return '  (no host ran a task)'
    width = max(len('host'), *[len(host) for host in hosts])
    rows = ['  %-*s' % (width, 'host') + ''.join('  %*s' % (max(len(heading), 5), heading) for heading, _key in COLUMNS)]
    for host in hosts:
        rows.append('  %-*s' % (width, host) + ''.join('  %*d' % (max(len(heading), 5), int((stats.get(key) or {}).get(host, 0)))
                                                       for heading, key in COLUMNS))
    return '\n'.join(rows)


def total(stats, key):
    return sum(int(value) for value in ((stats or {}).get(key) or {}).values())


def hosts_with(stats, key):
    return sorted(host for host, value in ((stats or {}).get(key) or {}).items() if int(value))


def shown(path):
    """A path as the user gave it: relative to the current directory when under it, else absolute."""
    relative = os.path.relpath(path)
    return path if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


def run_problems(status, rc, stats):
    """What makes a run fail, as short phrases (empty: the run succeeded)."""
    problems = []
    if status != 'successful':
        problems.append('runner status %s (ansible-playbook rc=%s)' % (status, rc))
    if hosts_with(stats, 'failures'):
        problems.append('failed: %s' % ', '.join(hosts_with(stats, 'failures')))
    if hosts_with(stats, 'dark'):
        problems.append('unreachable: %s' % ', '.join(hosts_with(stats, 'dark')))
    if stats is None and status == 'successful':
        problems.append('no stats from the run (did ansible-playbook run a play?)')
    return problems


def use_ansible_playbook():
    """Put this Python's environment (the venv) first on PATH when it has ansible-playbook: the runner starts
    the first ansible-playbook on PATH (its `binary` argument would turn the run into a raw command)."""
    here = os.path.dirname(sys.executable)
    if os.access(os.path.join(here, 'ansible-playbook'), os.X_OK):
        path = os.environ.get('PATH', '').split(os.pathsep)
        if not path or path[0] != here:
            os.environ['PATH'] = os.pathsep.join([here] + path)
    found = shutil.which('ansible-playbook')
    if not found:
        raise Failure('ansible-playbook is not installed next to %s nor on PATH: run this with the collection\'s '
                      '.venv/bin/python (make venv)' % sys.executable, EXIT_USAGE)
    return found


def runner_version():
    try:
        from importlib.metadata import version
        return version('ansible-runner')
    except Exception:  # pragma: no cover (metadata missing)
        return '?'


def check_inputs(args):
    """Absolute paths of the playbook and inventories; one-line failures for what is missing."""
    playbook = os.path.abspath(args.playbook)
    if not os.path.isfile(playbook):
        raise Failure('playbook not found: %s (a path from the current directory, e.g. site.yml)' % args.playbook, EXIT_USAGE)
    inventories = []
    for inventory in args.inventory:
        path = os.path.abspath(inventory)
        if not os.path.exists(path):
            raise Failure('inventory not found: %s (a file or directory, e.g. inventories/sandbox)' % inventory, EXIT_USAGE)
        inventories.append(path)
    if not os.path.isfile(ANSIBLE_CFG):
        raise Failure('the checkout has no ansible.cfg: %s' % ANSIBLE_CFG, EXIT_USAGE)
    if args.timeout < 0 or args.keep_artifacts < 1:
        raise Failure('--timeout must be 0 or more and --keep-artifacts 1 or more', EXIT_USAGE)
    return playbook, inventories


def prepare_private_data_dir(path):
    """The runner's private data dir with env/envvars (host key checking on, the checkout's ansible.cfg)."""
    env_dir = os.path.join(path, 'env')
    os.makedirs(env_dir, mode=0o700, exist_ok=True)
    envvars = {'ANSIBLE_HOST_KEY_CHECKING': 'True', 'ANSIBLE_CONFIG': ANSIBLE_CFG}
    with open(os.path.join(env_dir, 'envvars'), 'w') as handle:
        handle.write('---\n# Written by tools/run_playbook.py on every run.\n')
        yaml.safe_dump(envvars, handle, default_flow_style=False)
    return envvars


def run_once(args, playbook, inventories, private_data_dir, output, number, runs):
    """One ansible-runner run: returns (status, rc, stats, changed tasks)."""
    output.write('%s==> run %d of %d: %s -i %s (ansible-runner %s, private data dir %s)'
                 % ('\n' if number > 1 else '', number, runs, shown(playbook), ' -i '.join(shown(i) for i in inventories),
                    runner_version(), shown(private_data_dir)))
    for other in RUNNER_ENV_FILES:
        if os.path.exists(os.path.join(private_data_dir, 'env', other)):
            output.write('note: ansible-runner also reads env/%s of the private data dir' % other)
    recorder = Recorder(output)
    ident = '%s-%d-run%d' % (time.strftime('%Y%m%dT%H%M%S'), os.getpid(), number)
    kwargs = dict(
        private_data_dir=private_data_dir,
        project_dir=ROOT,
        playbook=playbook,
        inventory=inventories if len(inventories) > 1 else inventories[0],
        ident=ident,
        quiet=True,                 # the Recorder prints the output
        event_handler=recorder,
        suppress_env_files=True,    # nothing of this call is written into env/ (it would be reused by later runs)
        fact_cache_type=FACT_CACHE_FROM_ANSIBLE_CFG,
        rotate_artifacts=args.keep_artifacts,
    )
    if args.limit:
        kwargs['limit'] = args.limit
    if args.timeout:
        kwargs['timeout'] = args.timeout
    try:
        runner = ansible_runner.run(**kwargs)
    except Exception as exc:  # ansible-runner's ConfigurationError and the like: one line
        raise Failure('ansible-runner could not start the run: %s' % exc)
    finally:
        command_file = os.path.join(private_data_dir, 'artifacts', ident, 'command')
        if os.path.exists(command_file):
            os.remove(command_file)  # the whole environment of the run, CI tokens included
    stats = recorder.stats if recorder.stats is not None else runner.stats
    return runner.status, runner.rc, stats, recorder.changed


def main(argv=None):
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:
        return exc.code
    try:
        if ansible_runner is None or yaml is None:
            raise Failure('ansible-runner is not installed for %s: run this with the collection\'s .venv/bin/python '
                          '(make venv)' % sys.executable, EXIT_USAGE)
        playbook, inventories = check_inputs(args)
        use_ansible_playbook()
        name = os.path.splitext(os.path.basename(playbook))[0]
        private_data_dir = os.path.abspath(args.private_data_dir or os.path.join(ROOT, '.cache', 'runner', name))
        try:
            prepare_private_data_dir(private_data_dir)
            log_path = os.path.abspath(args.log or os.path.join(private_data_dir, 'play.log'))
            os.makedirs(os.path.dirname(log_path), exist_ok=True)
            log = open(log_path, 'w')
        except OSError as exc:
            raise Failure('cannot prepare %s: %s' % (exc.filename or private_data_dir, exc.strerror or exc), EXIT_USAGE)
        with log:
            return run(args, playbook, inventories, private_data_dir, Output(log), log_path)
    except Failure as failure:
        sys.stderr.write('run_playbook: %s\n' % failure)
        return failure.code
    except KeyboardInterrupt:  # outside a run (the runner turns one inside a run into status "canceled")
        sys.stderr.write('run_playbook: interrupted\n')
        return 130


def run(args, playbook, inventories, private_data_dir, output, log_path):
    runs = 2 if args.twice else 1
    name = shown(playbook)
    for number in range(1, runs + 1):
        status, rc, stats, changed = run_once(args, playbook, inventories, private_data_dir, output, number, runs)
        output.write('\n==> per-host stats of run %d of %d (%s, runner status %s)\n%s'
                     % (number, runs, name, status, stats_table(stats)))
        problems = run_problems(status, rc, stats)
        if problems:
            output.write('FAILED: %s run %d of %d: %s (log: %s)'
                         % (name, number, runs, '; '.join(problems), shown(log_path)))
            return EXIT_FAILED
        if number == 2 and total(stats, 'changed'):
            output.write('NOT IDEMPOTENT: the second run of %s changed %d task(s) on %s:\n%s'
                         % (name, total(stats, 'changed'), ', '.join(hosts_with(stats, 'changed')),
                            '\n'.join('  %s: %s' % (host, task) for host, task in changed) or '  (no task named)'))
            return EXIT_NOT_IDEMPOTENT
    if args.twice:
        output.write('OK: %s ran twice; the second run changed nothing' % name)
    return EXIT_OK


if __name__ == '__main__':
    sys.exit(main())
