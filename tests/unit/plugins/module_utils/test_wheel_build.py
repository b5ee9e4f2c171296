# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The builder's logic with real git repositories, real virtual environments and real pip, offline.

Each test repository holds a tiny wheel maker instead of a compiler: it records the environment it saw and
how often it ran, can be made to fail (FAIL) or to take a while (SLEEP), and writes a valid wheel to dist/.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import zipfile

import pytest

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.build_plan import build_plan
from ansible_collections.llmfleet.rocm.plugins.module_utils._wheel_build import (
    BuildError, WheelBuild, pid_alive, read_json, tail, tree_digest, wheelhouse_complete)

WHEEL_MAKER = r'''
import base64, hashlib, json, os, sys, time, zipfile
name, version, requires = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(os.environ['COUNTS'], 'a') as handle:
    handle.write(name + '\n')
print('building %s %s for %s' % (name, version, os.environ.get('PYTORCH_ROCM_ARCH')), flush=True)
for second in range(int(os.environ.get('SLEEP_' + name.upper(), '0'))):
    print('[%d] compiling' % second, flush=True)
    time.sleep(1)
if os.path.exists('FAIL'):
    print('error: %s does not compile' % name, flush=True)
    sys.exit(3)
seen = dict((k, os.environ.get(k)) for k in ('PYTORCH_ROCM_ARCH', 'MAX_JOBS', 'STAGE_FLAG', 'VIRTUAL_ENV', 'PIP_CONSTRAINT',
                                              'KERNELS_DIR'))
seen['commit'] = open('.git/HEAD').read().strip() if os.path.exists('.git/HEAD') else None
files = {name + '/__init__.py': 'SEEN = %r\n' % seen,
         '%s-%s.dist-info/METADATA' % (name, version): 'Metadata-Version: 2.1\nName: %s\nVersion: %s\n%s' % (
             name, version, ''.join('Requires-Dist: %s\n' % r for r in requires)),
         '%s-%s.dist-info/WHEEL' % (name, version): 'Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n'}
record = []
os.makedirs('dist', exist_ok=True)
path = 'dist/%s-%s-py3-none-any.whl' % (name, version)
with zipfile.ZipFile(path, 'w') as wheel:
    for member, text in sorted(files.items()):
        wheel.writestr(member, text)
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()
        record.append('%s,sha256=%s,%d' % (member, digest, len(text)))
    record.append('%s-%s.dist-info/RECORD,,' % (name, version))
    wheel.writestr('%s-%s.dist-info/RECORD' % (name, version), '\n'.join(record) + '\n')
'''

COMMON = {'rocm_version': '7.1.1', 'arch': ['gfx942'], 'python': '3.11', 'system': 'Debian 12', 'env': {}}


def git(repo, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME='t', GIT_AUTHOR_EMAIL='t@t.invalid', GIT_COMMITTER_NAME='t',
               GIT_COMMITTER_EMAIL='t@t.invalid', GIT_CONFIG_NOSYSTEM='1')
    return subprocess.check_output(['git', '-C', repo] + list(args), env=env).decode().strip()


class Sources(object):
    """Three small repositories (torchlike, tritonlike, enginelike) and what their builds saw."""

    def __init__(self, root):
        self.root = root
        self.counts = os.path.join(root, 'counts')
        for name in ('torchlike', 'tritonlike', 'enginelike'):
            repo = os.path.join(root, 'src', name)
            os.makedirs(os.path.join(repo, 'python') if name == 'tritonlike' else repo)
            subdir = os.path.join(repo, 'python') if name == 'tritonlike' else repo
            with open(os.path.join(subdir, 'make_wheel.py'), 'w') as handle:
                handle.write(WHEEL_MAKER)
            with open(os.path.join(subdir, 'pyproject.toml'), 'w') as handle:
                handle.write('[project]\nname = "%s"\n' % name)
            subprocess.check_call(['git', 'init', '--quiet', '--initial-branch=main', repo])
            self.commit(name, 'first')

    def repo(self, name):
        return os.path.join(self.root, 'src', name)

    def commit(self, name, message, files=None):
        for path, text in (files or {}).items():
            with open(os.path.join(self.repo(name), path), 'w') as handle:
                handle.write(text)
        git(self.repo(name), 'add', '--all')
        git(self.repo(name), 'commit', '--quiet', '--allow-empty', '-m', message)
        return git(self.repo(name), 'rev-parse', 'HEAD')

    def head(self, name):
        return git(self.repo(name), 'rev-parse', 'HEAD')

    def plan(self, common=None, engine_requires=(), extra_packages=None):
        components = [
            {'name': 'torchlike', 'repo': self.repo('torchlike'), 'ref': 'main', 'install': True, 'env': {'STAGE_FLAG': 'torch'},
             'steps': [[sys.executable, 'make_wheel.py', 'torchlike', '1.0']]},
            {'name': 'tritonlike', 'repo': self.repo('tritonlike'), 'ref': 'main', 'subdir': ['', 'python'], 'install': True,
             'steps': [['python3', 'make_wheel.py', 'tritonlike', '2.0']]},
            {'name': 'enginelike', 'repo': self.repo('enginelike'), 'ref': 'main',
             'steps': [['python3', 'make_wheel.py', 'enginelike', '3.0', 'torchlike', 'tritonlike'] + list(engine_requires)]},
        ]
        return build_plan(components, common or COMMON, [self.head(c['name']) for c in components],
                          extra_packages=extra_packages)

    def builds(self):
        if not os.path.exists(self.counts):
            return []
        with open(self.counts) as handle:
            return handle.read().split()


@pytest.fixture
def sources(tmp_path):
    return Sources(str(tmp_path))


def builder(sources, plan, **kwargs):
    return WheelBuild(os.path.join(sources.root, 'build'), plan['key'], plan['stages'], plan['document'], sys.executable,
                      env={'PYTORCH_ROCM_ARCH': ';'.join(plan['document']['common']['arch']), 'MAX_JOBS': '3'},
                      pip_env={'PIP_NO_INDEX': '1', 'COUNTS': sources.counts}, **kwargs)


def current(sources):
    return os.readlink(os.path.join(sources.root, 'build', 'wheelhouse', 'current'))


def test_a_build_makes_a_complete_wheelhouse_with_a_hashed_lock(sources):
    plan = sources.plan()
    result = builder(sources, plan).execute()
    assert result['changed'] and result['built'] == ['torchlike', 'tritonlike', 'enginelike'] and result['reused'] == []
    final = os.path.join(sources.root, 'build', 'wheelhouse', plan['key'])
    assert sorted(os.listdir(final)) == ['COMPLETE', 'SHA256SUMS', 'enginelike-3.0-py3-none-any.whl',
                                         'llmfleet-wheelhouse.json', 'requirements.lock',
                                         'torchlike-1.0-py3-none-any.whl', 'tritonlike-2.0-py3-none-any.whl']
    with open(os.path.join(final, 'requirements.lock')) as handle:
        lock = [line for line in handle.read().splitlines() if not line.startswith('#')]
    assert [line.split(' ')[0] for line in lock] == ['enginelike==3.0', 'torchlike==1.0', 'tritonlike==2.0']
    assert all(' --hash=sha256:' in line for line in lock)
    manifest = read_json(os.path.join(final, 'llmfleet-wheelhouse.json'))
    assert manifest['key'] == plan['key'] and manifest['document'] == plan['document']
    assert [stage['commit'] for stage in manifest['stages']] == [stage['commit'] for stage in plan['stages']]
    assert current(sources) == plan['key']
    assert not os.path.exists(os.path.join(sources.root, 'build', 'work', plan['key'])), 'the work directory is removed'
    status = read_json(os.path.join(sources.root, 'build', 'status.json'))
    assert status['state'] == 'done' and status['built'] == ['torchlike', 'tritonlike', 'enginelike']


def test_each_stage_gets_its_environment(sources):
    plan = sources.plan()
    builder(sources, plan).execute()
    seen = {}
    for stage in plan['stages']:
        log = os.path.join(sources.root, 'build', 'logs', plan['key'])
        assert any(stage['name'] in name for name in os.listdir(log))
        src = os.path.join(sources.root, 'build', 'src', stage['name'])
        assert subprocess.check_output(['git', '-C', src, 'rev-parse', 'HEAD']).decode().strip() == stage['commit']
    wheel_dir = os.path.join(sources.root, 'build', 'wheelhouse', plan['key'])
    for name in ('torchlike', 'tritonlike', 'enginelike'):
        wheel = [w for w in os.listdir(wheel_dir) if w.startswith(name)][0]
        text = zipfile.ZipFile(os.path.join(wheel_dir, wheel)).read(name + '/__init__.py').decode()
        seen[name] = ast.literal_eval(text.split('=', 1)[1].strip())
    assert set(item['PYTORCH_ROCM_ARCH'] for item in seen.values()) == set(['gfx942'])
    assert set(item['MAX_JOBS'] for item in seen.values()) == set(['3'])
    assert seen['torchlike']['STAGE_FLAG'] == 'torch' and seen['enginelike']['STAGE_FLAG'] is None
    # python3 is the build environment's; later stages see the earlier wheels pinned.
    assert seen['enginelike']['VIRTUAL_ENV'].endswith('/work/%s/venv' % plan['key'])
    assert seen['enginelike']['PIP_CONSTRAINT'].endswith('/constraints.txt')


def test_the_same_key_builds_nothing(sources):
    plan = sources.plan()
    builder(sources, plan).execute()
    assert builder(sources, plan).execute() == {'changed': False, 'built': [], 'reused': [], 'seconds': 0.0,
                                                'manifest': read_json(os.path.join(sources.root, 'build', 'wheelhouse',
                                                                                   plan['key'], 'llmfleet-wheelhouse.json'))}
    assert sources.builds() == ['torchlike', 'tritonlike', 'enginelike']


def test_a_moved_ref_rebuilds_the_stages_from_it_and_switches_current(sources):
    first = sources.plan()
    builder(sources, first).execute()
    sources.commit('enginelike', 'second')
    second = sources.plan()
    assert second['key'] != first['key']
    result = builder(sources, second).execute()
    assert result['built'] == ['enginelike'] and result['reused'] == ['torchlike', 'tritonlike']
    assert sources.builds() == ['torchlike', 'tritonlike', 'enginelike', 'enginelike']
    assert current(sources) == second['key']
    assert wheelhouse_complete(os.path.join(sources.root, 'build'), first['key']), 'the previous wheelhouse is kept'


def test_a_failed_step_leaves_the_previous_wheelhouse_current(sources):
    first = sources.plan()
    builder(sources, first).execute()
    sources.commit('tritonlike', 'broken', {'python/FAIL': 'yes'})
    broken = sources.plan()
    with pytest.raises(BuildError) as caught:
        builder(sources, broken).execute()
    assert caught.value.stage == 'tritonlike' and caught.value.rc == 3
    assert 'error: tritonlike does not compile' in caught.value.tail
    assert caught.value.log.endswith('/02-tritonlike.log')
    assert current(sources) == first['key']
    assert not os.path.exists(os.path.join(sources.root, 'build', 'wheelhouse', broken['key']))
    status = read_json(os.path.join(sources.root, 'build', 'status.json'))
    assert status['state'] == 'failed' and status['failed_stage'] == 'tritonlike'


def test_a_killed_build_is_resumed_by_the_next_run(sources):
    first = sources.plan()
    builder(sources, first).execute()
    sources.commit('enginelike', 'slow')
    plan = sources.plan()
    driver = os.path.join(sources.root, 'driver.py')
    with open(driver, 'w') as handle:
        handle.write('import json, sys\nsys.path[:0] = %r\n'
                     'from ansible_collections.llmfleet.rocm.plugins.module_utils._wheel_build import WheelBuild\n'
                     'plan = json.load(open(sys.argv[1]))\n'
                     'WheelBuild(%r, plan["key"], plan["stages"], plan["document"], %r, env={"PYTORCH_ROCM_ARCH": "gfx942"},'
                     ' pip_env={"PIP_NO_INDEX": "1", "COUNTS": %r, "SLEEP_ENGINELIKE": "60"}).execute()\n'
                     % (sys.path, os.path.join(sources.root, 'build'), sys.executable, sources.counts))
    with open(os.path.join(sources.root, 'plan.json'), 'w') as handle:
        json.dump(plan, handle)
    proc = subprocess.Popen([sys.executable, driver, os.path.join(sources.root, 'plan.json')], start_new_session=True)
    status_path = os.path.join(sources.root, 'build', 'status.json')
    deadline = time.time() + 60
    while time.time() < deadline:
        status = read_json(status_path) or {}
        log = os.path.join(sources.root, 'build', 'logs', plan['key'], '03-enginelike.log')
        if status.get('key') == plan['key'] and '[1] compiling' in '\n'.join(tail(log)):
            break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail('the build never reached the slow stage')
    assert pid_alive(status['pid'])
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not pid_alive(status['pid'])
    assert read_json(status_path)['state'] == 'running', 'a killed build cannot say it ended'
    assert current(sources) == first['key']
    assert not os.path.exists(os.path.join(sources.root, 'build', 'wheelhouse', plan['key']))

    result = builder(sources, plan).execute()
    assert result['built'] == ['enginelike'] and result['reused'] == ['torchlike', 'tritonlike']
    assert current(sources) == plan['key']
    with open(os.path.join(sources.root, 'build', 'logs', plan['key'], '03-enginelike.log')) as handle:
        assert 'resuming in the tree the interrupted build of this stage left' in handle.read()
    assert sources.builds() == ['torchlike', 'tritonlike', 'enginelike', 'enginelike', 'enginelike']


def test_old_wheelhouses_are_pruned_but_current_stays(sources):
    keys = []
    for index in range(3):
        if index:
            sources.commit('enginelike', 'change %d' % index)
        plan = sources.plan()
        builder(sources, plan, keep=2).execute()
        keys.append(plan['key'])
    root = os.path.join(sources.root, 'build')
    assert sorted(name for name in os.listdir(os.path.join(root, 'wheelhouse')) if name != 'current') == sorted(keys[1:])
    assert not os.path.exists(os.path.join(root, 'logs', keys[0]))
    # The enginelike stage of the pruned key is gone; the shared torchlike stage stays.
    assert len(os.listdir(os.path.join(root, 'stages'))) == 4


def index_wheel(sources, name, version):
    """A wheel in a find-links directory standing for the package index; the directory."""
    index = os.path.join(sources.root, 'index')
    os.makedirs(index)
    with open(os.path.join(index, 'make_wheel.py'), 'w') as handle:
        handle.write(WHEEL_MAKER)
    subprocess.check_call([sys.executable, 'make_wheel.py', name, version], cwd=index,
                          env=dict(os.environ, COUNTS=os.path.join(index, 'counts')))
    return os.path.join(index, 'dist')


def test_dependencies_come_from_the_index_and_the_lock_from_the_wheelhouse_alone(sources):
    index = index_wheel(sources, 'depwheel', '0.5')
    plan = sources.plan(engine_requires=['depwheel'])
    build = builder(sources, plan)
    build.pip_env['PIP_FIND_LINKS'] = index
    build.execute()
    final = os.path.join(sources.root, 'build', 'wheelhouse', plan['key'])
    assert 'depwheel-0.5-py3-none-any.whl' in os.listdir(final)
    with open(os.path.join(final, 'requirements.lock')) as handle:
        assert 'depwheel==0.5 --hash=sha256:' in handle.read()


def test_extra_packages_join_the_wheelhouse_and_its_lock_without_building_a_stage_again(sources):
    index = index_wheel(sources, 'raylike', '2.6')
    builder(sources, sources.plan()).execute()
    built = sources.builds()
    plan = sources.plan(extra_packages=['raylike==2.6'])
    build = builder(sources, plan)
    build.pip_env['PIP_FIND_LINKS'] = index
    build.execute()
    # Every stage reused: only the wheelhouse was assembled again, under a new key.
    assert sources.builds() == built
    final = os.path.join(sources.root, 'build', 'wheelhouse', plan['key'])
    assert 'raylike-2.6-py3-none-any.whl' in os.listdir(final)
    with open(os.path.join(final, 'requirements.lock')) as handle:
        assert 'raylike==2.6 --hash=sha256:' in handle.read()


def test_tail_and_pid_alive(tmp_path):
    log = tmp_path / 'log'
    log.write_text('\n'.join('line %d' % i for i in range(100)) + '\r[50%] progress\n')
    assert tail(str(log), 3) == ['line 98', 'line 99', '[50%] progress']
    assert tail(str(tmp_path / 'missing')) == []
    assert pid_alive(os.getpid()) and not pid_alive(0) and not pid_alive(2 ** 22 + 7)


def _find(name, path):
    """What ansible.builtin.find (recurse, get_checksum) lists of a directory: one result of the role's loop."""
    files = []
    for top, _dirs, names in os.walk(path):
        for filename in names:
            full = os.path.join(top, filename)
            with open(full, 'rb') as handle:
                files.append({'path': full, 'checksum': hashlib.sha1(handle.read()).hexdigest()})
    return {'item': {'name': name, 'path': path}, 'files': files}


class Extras(object):
    """A path component (a directory on the builder, as /opt/rocm/share/amd_smi) and a repository whose subdirectory
    is exported for the engine's build (as ROCm's Triton's python/triton_kernels/triton_kernels)."""

    def __init__(self, sources):
        self.sources = sources
        self.smi = os.path.join(sources.root, 'opt', 'amd_smi')
        os.makedirs(self.smi)
        with open(os.path.join(self.smi, 'make_wheel.py'), 'w') as handle:
            handle.write(WHEEL_MAKER)
        with open(os.path.join(self.smi, 'pyproject.toml'), 'w') as handle:
            handle.write('[project]\nname = "smilike"\n')
        self.kernels = os.path.join(sources.root, 'src', 'kernelslike')
        os.makedirs(os.path.join(self.kernels, 'python', 'kernels', 'kernels'))
        with open(os.path.join(self.kernels, 'python', 'kernels', 'kernels', '__init__.py'), 'w') as handle:
            handle.write('KERNELS = 1\n')
        subprocess.check_call(['git', 'init', '--quiet', '--initial-branch=main', self.kernels])
        sources.commit('kernelslike', 'first')

    def plan(self, export='python/kernels/kernels'):
        sources = self.sources
        components = [
            {'name': 'torchlike', 'repo': sources.repo('torchlike'), 'ref': 'main', 'install': True,
             'steps': [[sys.executable, 'make_wheel.py', 'torchlike', '1.0']]},
            {'name': 'smilike', 'path': self.smi, 'steps': [['python3', 'make_wheel.py', 'smilike', '0.5']]},
            {'name': 'kernelslike', 'repo': self.kernels, 'ref': 'main', 'export': export, 'steps': []},
            {'name': 'enginelike', 'repo': sources.repo('enginelike'), 'ref': 'main', 'source_env': {'KERNELS_DIR': 'kernelslike'},
             'steps': [['python3', 'make_wheel.py', 'enginelike', '3.0', 'torchlike']]},
        ]
        commits = [None if c.get('path') else git(c['repo'], 'rev-parse', 'HEAD') for c in components]
        return build_plan(components, COMMON, commits, trees=[_find('smilike', self.smi)])


def _seen(sources, plan, name):
    wheel_dir = os.path.join(sources.root, 'build', 'wheelhouse', plan['key'])
    wheel = [w for w in os.listdir(wheel_dir) if w.startswith(name + '-')][0]
    text = zipfile.ZipFile(os.path.join(wheel_dir, wheel)).read(name + '/__init__.py').decode()
    return ast.literal_eval(text.split('=', 1)[1].strip())


def test_a_path_component_and_an_export_stage(sources):
    extras = Extras(sources)
    plan = extras.plan()
    stages = dict((stage['name'], stage) for stage in plan['stages'])
    assert stages['smilike']['commit'] == tree_digest(extras.smi, _find('smilike', extras.smi)['files'])
    result = builder(sources, plan).execute()
    assert result['built'] == ['torchlike', 'smilike', 'kernelslike', 'enginelike']
    final = os.path.join(sources.root, 'build', 'wheelhouse', plan['key'])
    assert sorted(name for name in os.listdir(final) if name.endswith('.whl')) == [
        'enginelike-3.0-py3-none-any.whl', 'smilike-0.5-py3-none-any.whl', 'torchlike-1.0-py3-none-any.whl']
    # The path component was built from a copy: the builder's directory is as it was.
    assert sorted(os.listdir(extras.smi)) == ['make_wheel.py', 'pyproject.toml']
    # The engine's build saw the exported directory, kept under the export stage's key, without the checkout's .git.
    tree = os.path.join(sources.root, 'build', 'stages', stages['kernelslike']['key'], 'tree')
    assert _seen(sources, plan, 'enginelike')['KERNELS_DIR'] == tree
    assert sorted(os.listdir(tree)) == ['__init__.py']
    manifest = read_json(os.path.join(final, 'llmfleet-wheelhouse.json'))
    assert [(stage['name'], stage['ref'], stage['wheels']) for stage in manifest['stages']][1:3] == [
        ('smilike', extras.smi, ['smilike-0.5-py3-none-any.whl']), ('kernelslike', 'main', [])]


def test_a_changed_directory_rebuilds_from_its_stage_on_and_a_build_in_place_does_not(sources):
    extras = Extras(sources)
    first = extras.plan()
    builder(sources, first).execute()
    # What an earlier "pip wheel ." in place left there is neither copied nor in the digest.
    os.makedirs(os.path.join(extras.smi, 'build', 'lib'))
    os.makedirs(os.path.join(extras.smi, '__pycache__'))
    with open(os.path.join(extras.smi, '__pycache__', 'x.pyc'), 'w') as handle:
        handle.write('cache')
    assert extras.plan()['key'] == first['key']
    with open(os.path.join(extras.smi, 'libamd_smi.so'), 'w') as handle:
        handle.write('a new ROCm release')
    second = extras.plan()
    assert second['key'] != first['key']
    result = builder(sources, second).execute()
    assert result['built'] == ['smilike', 'kernelslike', 'enginelike'] and result['reused'] == ['torchlike']
    copied = os.path.join(sources.root, 'build', 'src', 'smilike')
    assert 'build' not in os.listdir(copied) and '__pycache__' not in os.listdir(copied)


def test_a_path_components_links_are_followed_into_the_copy(sources):
    """A link into the rest of the ROCm tree (../lib/libamd_smi.so) still points at its file from the copy."""
    extras = Extras(sources)
    lib = os.path.join(sources.root, 'opt', 'lib')
    os.makedirs(lib)
    with open(os.path.join(lib, 'libamd_smi.so'), 'w') as handle:
        handle.write('the library')
    os.symlink('../lib/libamd_smi.so', os.path.join(extras.smi, 'libamd_smi.so'))
    plan = extras.plan()
    builder(sources, plan).execute()
    copied = os.path.join(sources.root, 'build', 'src', 'smilike', 'libamd_smi.so')
    assert not os.path.islink(copied)
    with open(copied) as handle:
        assert handle.read() == 'the library'


def test_an_export_of_a_missing_directory_fails_with_the_stage(sources):
    extras = Extras(sources)
    plan = extras.plan(export='python/no_such_kernels')
    with pytest.raises(BuildError) as caught:
        builder(sources, plan).execute()
    assert caught.value.stage == 'kernelslike'
    assert 'python/no_such_kernels is not a directory of %s' % extras.kernels in str(caught.value)


def test_a_plan_refuses_a_source_env_without_an_earlier_export(sources):
    components = [{'name': 'enginelike', 'repo': sources.repo('enginelike'), 'ref': 'main',
                   'source_env': {'KERNELS_DIR': 'kernelslike'}, 'steps': [['python3', 'make_wheel.py']]}]
    with pytest.raises(Exception, match="takes KERNELS_DIR from 'kernelslike', which is no export stage before it"):
        build_plan(components, COMMON, [sources.head('enginelike')])
    with pytest.raises(Exception, match="component 'smilike' lacks commit"):
        build_plan([{'name': 'smilike', 'path': '/opt/amd_smi', 'steps': [['python3', 'make_wheel.py']]}], COMMON, [None])
