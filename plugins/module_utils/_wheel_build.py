# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine build on a builder host: stages from git sources to wheels, one wheelhouse per build key.

Layout under the build directory::

    src/<component>/            git checkout (.git/llmfleet-stage: the stage key it was last prepared for), or the copy
                                of a path component's directory (made again for every build of its stage)
    stages/<stage key>/         wheels of one finished stage (DONE written last; shared by builds); an export stage's
                                tree/ instead (the directory of its checkout that later stages read)
    work/<key>/venv/            the build's virtual environment
    work/<key>/wheelhouse/      the wheelhouse being assembled
    wheelhouse/<key>/           complete wheelhouses (moved in whole by one rename; COMPLETE inside)
    logs/<key>/NN-<stage>.log   full logs, kept with their wheelhouse
    status.json                 what the running (or last) build does: read by wheel_build_status
    .lock                       held by the build that runs

A killed build leaves finished stages in stages/ and the interrupted stage's tree in src/; the next run
of the same key reuses the first and resumes the second. Nothing under wheelhouse/ changes until a
wheelhouse is complete.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import fcntl
import fnmatch
import glob
import hashlib
import json
import os
import shutil
import socket
import subprocess
import time
from urllib.parse import unquote, urlparse

from ansible_collections.llmfleet.rocm.plugins.module_utils._atomic_file import write_atomic

STATUS_FILE = 'status.json'
COMPLETE_FILE = 'COMPLETE'
MANIFEST_FILE = 'llmfleet-wheelhouse.json'
LOCK_FILE = 'requirements.lock'
SUMS_FILE = 'SHA256SUMS'
# Left out of a path component's copy: what an earlier build in place left there.
COPY_IGNORED = ('__pycache__', 'build', 'dist', '*.egg-info')


class BuildError(Exception):
    """A build step failed: carries what the person needs (stage, log, its last lines)."""

    def __init__(self, message, stage=None, log=None, tail=None, rc=None):
        super(BuildError, self).__init__(message)
        self.stage = stage
        self.log = log
        self.tail = tail or []
        self.rc = rc


def now():
    return time.strftime('%Y-%m-%dT%H:%M:%S%z')


def read_json(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError):
        return None


def tail(path, lines=30, max_bytes=262144):
    """The last ``lines`` lines of a file (without reading more than ``max_bytes`` of its end)."""
    try:
        with open(path, 'rb') as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - max_bytes))
            data = handle.read()
    except (IOError, OSError):
        return []
    text = data.decode('utf-8', 'replace').replace('\r', '\n')
    return [line for line in text.split('\n') if line.strip()][-lines:]


def pid_alive(pid):
    """True when the process exists and is not a zombie."""
    if not pid:
        return False
    try:
        with open('/proc/%d/stat' % int(pid)) as handle:
            fields = handle.read().rsplit(')', 1)[-1].split()
    except (IOError, OSError, ValueError):
        return False
    return bool(fields) and fields[0] not in ('Z', 'X')


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for block in iter(lambda: handle.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def _ignored(relative):
    """Whether a file of a path component's directory is left out of its copy (and of its digest)."""
    return any(fnmatch.fnmatch(part, pattern) for part in relative.split('/') for pattern in COPY_IGNORED)


def tree_digest(root, files):
    """The identity of a path component's directory: a sha1 of its files' relative paths and checksums (what
    ``ansible.builtin.find`` with get_checksum lists), without what its copy leaves out; the commit of its stage."""
    root = str(root).rstrip('/') + '/'
    listed = []
    for entry in files or []:
        path = str(entry.get('path') or '')
        relative = path[len(root):] if path.startswith(root) else path.lstrip('/')
        if relative and not _ignored(relative):
            listed.append([relative, entry.get('checksum')])
    listed.sort()
    return hashlib.sha1(json.dumps(listed, separators=(',', ':')).encode('utf-8')).hexdigest()


def wheelhouse_complete(build_dir, key):
    return os.path.exists(os.path.join(build_dir, 'wheelhouse', key, COMPLETE_FILE))


def _link_or_copy(src, dest):
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def _remove(path):
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


class WheelBuild(object):
    """One build: ``stages`` (dicts from the build_plan filter) into ``wheelhouse/<key>``."""

    def __init__(self, build_dir, key, stages, document, python, env=None, pip_env=None,
                 toolchain_requirements=None, toolchain_wheels=None, keep=3, tail_lines=30):
        self.build_dir = os.path.abspath(build_dir)
        self.key = key
        self.stages = stages
        self.document = document
        self.python = python
        self.env = dict((k, str(v)) for k, v in (env or {}).items())
        self.pip_env = dict((k, str(v)) for k, v in (pip_env or {}).items())
        self.toolchain_requirements = toolchain_requirements
        self.toolchain_wheels = toolchain_wheels
        self.keep = keep
        self.tail_lines = tail_lines
        self.work = os.path.join(self.build_dir, 'work', key)
        self.venv = os.path.join(self.work, 'venv')
        self.log_dir = os.path.join(self.build_dir, 'logs', key)
        self.final = os.path.join(self.build_dir, 'wheelhouse', key)
        self.constraints = os.path.join(self.work, 'constraints.txt')
        self.status = None
        self._lock_handle = None

    # -- status ------------------------------------------------------------------------------

    def _save_status(self, **changes):
        self.status.update(changes)
        self.status['updated'] = now()
        write_atomic(os.path.join(self.build_dir, STATUS_FILE), json.dumps(self.status, indent=1, sort_keys=True) + '\n')

    def _stage_status(self, index, **changes):
        self.status['stages'][index].update(changes)
        self._save_status(stage=self.status['stages'][index]['name'], stage_index=index + 1)

    # -- locking -----------------------------------------------------------------------------

    def lock(self):
        """Hold the builder's lock, waiting while another build holds it (one build at a time per builder)."""
        self._lock_handle = open(os.path.join(self.build_dir, '.lock'), 'a+')
        try:
            fcntl.flock(self._lock_handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except (IOError, OSError) as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            fcntl.flock(self._lock_handle, fcntl.LOCK_EX)

    # -- commands ----------------------------------------------------------------------------

    def _venv_env(self, extra=None):
        env = dict(os.environ)
        env.update(self.pip_env)
        env.update({'PIP_DISABLE_PIP_VERSION_CHECK': '1', 'PIP_NO_INPUT': '1', 'PIP_PROGRESS_BAR': 'off',
                    'PYTHONUNBUFFERED': '1', 'VIRTUAL_ENV': self.venv, 'CMAKE_PREFIX_PATH': self.venv,
                    'LC_ALL': 'C.UTF-8'})
        env.update(self.env)
        if os.path.exists(self.constraints):
            env['PIP_CONSTRAINT'] = self.constraints
        rocm = env.get('ROCM_PATH', '/opt/rocm')
        env['PATH'] = os.pathsep.join([os.path.join(self.venv, 'bin'), os.path.join(rocm, 'bin'),
                                       os.path.join(rocm, 'llvm', 'bin'), os.environ.get('PATH', '/usr/bin:/bin')])
        env.update(extra or {})
        return env

    def run(self, argv, log, cwd=None, env=None, stage=None):
        """Run argv with its output appended to log; raise BuildError with the log's tail when it fails."""
        start = time.time()
        with open(log, 'a') as handle:
            handle.write('\n==> %s $ %s\n    (in %s)\n' % (now(), ' '.join(argv), cwd or self.build_dir))
            handle.flush()
            try:
                rc = subprocess.call(argv, cwd=cwd or self.build_dir, env=env or self._venv_env(),
                                     stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            except OSError as exc:
                handle.write('cannot run %s: %s\n' % (argv[0], exc))
                rc = 127
            handle.write('<== rc=%d after %.1f s\n' % (rc, time.time() - start))
        if rc != 0:
            raise BuildError('%s failed (rc=%d) in stage %s: %s' % (' '.join(argv), rc, stage or 'setup', log),
                             stage=stage, log=log, tail=tail(log, self.tail_lines), rc=rc)

    def _git(self, args, log, src, stage, check=True):
        argv = ['git', '-C', src] + args
        if check:
            self.run(argv, log, env=self._venv_env({'GIT_TERMINAL_PROMPT': '0'}), stage=stage)
            return 0
        return subprocess.call(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)

    # -- stages ------------------------------------------------------------------------------

    def prepare_venv(self, log):
        marker = os.path.join(self.venv, '.llmfleet-ready')
        if os.path.exists(marker):
            return
        _remove(self.venv)
        self.run([self.python, '-m', 'venv', self.venv], log)
        if self.toolchain_requirements:
            argv = [os.path.join(self.venv, 'bin', 'python'), '-m', 'pip', 'install', '--no-index',
                    '--find-links', self.toolchain_wheels, '-r', self.toolchain_requirements]
            self.run(argv, log)
        write_atomic(marker, now() + '\n')

    def checkout(self, stage, log):
        """The component's tree at the stage's commit: cleaned for a new stage, kept for the one interrupted."""
        src = os.path.join(self.build_dir, 'src', stage['name'])
        name = stage['name']
        if not os.path.isdir(os.path.join(src, '.git')):
            _remove(src)
            self.run(['git', 'clone', '--no-checkout', stage['repo'], src], log, stage=name,
                     env=self._venv_env({'GIT_TERMINAL_PROMPT': '0'}))
        else:
            self._git(['remote', 'set-url', 'origin', stage['repo']], log, src, name)
        marker = os.path.join(src, '.git', 'llmfleet-stage')
        commit = stage['commit']
        try:
            with open(marker) as handle:
                prepared = handle.read().strip()
        except (IOError, OSError):
            prepared = ''
        if prepared == stage['key']:
            with open(log, 'a') as handle:
                handle.write('\n==> %s resuming in the tree the interrupted build of this stage left\n' % now())
            return src
        if self._git(['cat-file', '-e', commit + '^{commit}'], log, src, name, check=False) != 0:
            self._git(['fetch', '--tags', '--force', 'origin', '+refs/heads/*:refs/remotes/origin/*'], log, src, name)
        if self._git(['cat-file', '-e', commit + '^{commit}'], log, src, name, check=False) != 0:
            raise BuildError('commit %s (ref %s) is not in %s' % (commit, stage['ref'], stage['repo']),
                             stage=name, log=log, tail=tail(log, self.tail_lines))
        self._git(['checkout', '--force', '--detach', commit], log, src, name)
        self._git(['clean', '-ffdxq'], log, src, name)
        self._git(['submodule', 'update', '--init', '--recursive', '--force'], log, src, name)
        self._git(['submodule', 'foreach', '--recursive', 'git clean -ffdxq'], log, src, name)
        write_atomic(marker, stage['key'] + '\n')
        return src

    def copy_path(self, stage, log):
        """A path component's directory, copied whole into src/<name> (the original, such as /opt/rocm/share/amd_smi,
        is never written to); made again for every build of the stage."""
        src = os.path.join(self.build_dir, 'src', stage['name'])
        path = stage['path']
        if not os.path.isdir(path):
            raise BuildError('stage %s: %s is not a directory on the builder' % (stage['name'], path),
                             stage=stage['name'], log=log, tail=tail(log, self.tail_lines))
        _remove(src)
        with open(log, 'a') as handle:
            handle.write('\n==> %s copying %s to %s\n' % (now(), path, src))
        # Links are followed (a relative link into the ROCm tree would point nowhere from the copy), as the digest of the
        # directory's files follows them.
        try:
            shutil.copytree(path, src, symlinks=False, ignore=shutil.ignore_patterns(*COPY_IGNORED))
        except (shutil.Error, OSError) as exc:
            raise BuildError('stage %s: cannot copy %s: %s' % (stage['name'], path, exc), stage=stage['name'], log=log,
                             tail=tail(log, self.tail_lines))
        return src

    def export(self, stage, src, stage_dir, log):
        """An export stage's result: the directory ``export`` of its checkout, copied to <stage dir>/tree."""
        tree = os.path.join(src, stage['export'])
        if not os.path.isdir(tree) or not os.path.realpath(tree).startswith(os.path.realpath(src) + os.sep):
            raise BuildError('stage %s: %s is not a directory of %s at %s' % (stage['name'], stage['export'],
                                                                              stage.get('repo') or stage.get('path'),
                                                                              stage['commit']),
                             stage=stage['name'], log=log, tail=tail(log, self.tail_lines))
        with open(log, 'a') as handle:
            handle.write('\n==> %s exporting %s to %s\n' % (now(), tree, os.path.join(stage_dir, 'tree')))
        shutil.copytree(tree, os.path.join(stage_dir, 'tree'), symlinks=True,
                        ignore=shutil.ignore_patterns('.git', '__pycache__'))

    def export_tree(self, name):
        """The exported tree of the export stage ``name`` of this build."""
        for stage in self.stages:
            if stage['name'] == name and stage.get('export'):
                return os.path.join(self.build_dir, 'stages', stage['key'], 'tree')
        raise BuildError('no export stage %s in this build' % name, stage=name)

    def _source_dir(self, stage, src, log):
        """The first of the stage's subdir candidates that holds a setup.py or pyproject.toml."""
        candidates = stage.get('subdir') or ['']
        if not isinstance(candidates, list):
            candidates = [candidates]
        for candidate in candidates:
            path = os.path.join(src, candidate) if candidate else src
            if any(os.path.exists(os.path.join(path, name)) for name in ('setup.py', 'pyproject.toml')):
                return path
        raise BuildError('stage %s: none of %s in %s holds a setup.py or pyproject.toml'
                         % (stage['name'], ', '.join(repr(c or '.') for c in candidates), src),
                         stage=stage['name'], log=log, tail=tail(log, self.tail_lines))

    def _pin(self, wheels):
        """Constrain later pip calls to the wheels just installed (name==version from the wheel's file name)."""
        with open(self.constraints, 'a') as handle:
            for wheel in wheels:
                parts = os.path.basename(wheel).split('-')
                handle.write('%s==%s\n' % (parts[0], parts[1]))

    def stage_wheels(self, stage):
        return sorted(glob.glob(os.path.join(self.build_dir, 'stages', stage['key'], '*.whl')))

    def build_stage(self, index, stage):
        """Build one stage unless its wheels exist; install them into the build venv when later stages need them."""
        name = stage['name']
        log = os.path.join(self.log_dir, '%02d-%s.log' % (index + 1, name))
        stage_dir = os.path.join(self.build_dir, 'stages', stage['key'])
        built = False
        start = time.time()
        if os.path.exists(os.path.join(stage_dir, 'DONE')):
            self._stage_status(index, state='reused', log=log)
        else:
            self._stage_status(index, state='building', log=log, started=now())
            src = self.copy_path(stage, log) if stage.get('path') else self.checkout(stage, log)
            partial = stage_dir + '.partial'
            _remove(partial)
            if stage.get('export'):
                # No steps and no wheels: the stage's result is a directory of its checkout.
                os.makedirs(partial)
                self.export(stage, src, partial, log)
            else:
                cwd = self._source_dir(stage, src, log)
                dist = os.path.join(cwd, 'dist')
                for old in glob.glob(os.path.join(dist, '*.whl')):
                    os.unlink(old)
                extra = dict((k, str(v)) for k, v in (stage.get('env') or {}).items())
                # An earlier export stage's tree, named by a variable (TRITON_KERNELS_SRC_DIR for vLLM's build).
                extra.update((variable, self.export_tree(source)) for variable, source in (stage.get('source_env') or {}).items())
                env = self._venv_env(extra)
                for argv in stage['steps']:
                    self.run([str(arg) for arg in argv], log, cwd=cwd, env=env, stage=name)
                wheels = sorted(glob.glob(os.path.join(dist, '*.whl')))
                if not wheels:
                    raise BuildError('stage %s built no wheel in %s' % (name, dist), stage=name, log=log,
                                     tail=tail(log, self.tail_lines))
                os.makedirs(partial)
                for wheel in wheels:
                    shutil.copy2(wheel, partial)
            write_atomic(os.path.join(partial, 'DONE'), json.dumps(
                {'stage': name, 'commit': stage['commit'], 'finished': now(),
                 'seconds': round(time.time() - start, 1)}) + '\n')
            _remove(stage_dir)
            os.rename(partial, stage_dir)
            built = True
        if stage.get('install'):
            argv = [os.path.join(self.venv, 'bin', 'python'), '-m', 'pip', 'install', '--no-deps', '--force-reinstall',
                    '--no-index'] + self.stage_wheels(stage)
            self.run(argv, log, stage=name)
            self._pin(self.stage_wheels(stage))
        self._stage_status(index, state='built' if built else 'reused', seconds=round(time.time() - start, 1),
                           finished=now())
        return built

    # -- wheelhouse --------------------------------------------------------------------------

    def assemble(self, log):
        """Built wheels + their dependencies + a hashed lock, moved to wheelhouse/<key> in one rename."""
        partial = os.path.join(self.work, 'wheelhouse')
        _remove(partial)
        os.makedirs(partial)
        built = []
        for stage in self.stages:
            for wheel in self.stage_wheels(stage):
                dest = os.path.join(partial, os.path.basename(wheel))
                _link_or_copy(wheel, dest)
                built.append(dest)
        pip = [os.path.join(self.venv, 'bin', 'python'), '-m', 'pip']
        # Dependencies as wheels (sdists built once here, never on the nodes), with the packages the plan adds.
        wanted = built + list(self.document.get('extra_packages') or [])
        self.run(pip + ['wheel', '--wheel-dir', partial, '--find-links', partial] + wanted, log, stage='wheelhouse')
        # The lock is what the wheelhouse alone resolves to, as the nodes will install it (no other source).
        offline = self._venv_env({'PIP_NO_INDEX': '1'})
        for name in ('PIP_FIND_LINKS', 'PIP_INDEX_URL', 'PIP_EXTRA_INDEX_URL'):
            offline.pop(name, None)
        report_path = os.path.join(self.work, 'resolution.json')
        self.run(pip + ['install', '--dry-run', '--ignore-installed', '--no-index', '--find-links', partial,
                        '--report', report_path, '--quiet'] + wanted, log, env=offline, stage='wheelhouse')
        report = read_json(report_path) or {}
        locked = {}
        for item in report.get('install', []):
            url = item.get('download_info', {}).get('url', '')
            filename = os.path.basename(unquote(urlparse(url).path))
            path = os.path.join(partial, filename)
            if not url.startswith('file://') or not os.path.exists(path):
                raise BuildError('the resolution names %s, which is not in the wheelhouse' % url, stage='wheelhouse',
                                 log=log, tail=tail(log, self.tail_lines))
            metadata = item.get('metadata', {})
            locked[filename] = (metadata.get('name', filename), metadata.get('version', ''), sha256_file(path))
        for entry in os.listdir(partial):
            if entry not in locked:
                _remove(os.path.join(partial, entry))
        lines = ['# llmfleet engine build %s: install with pip install --no-index --find-links <this directory>'
                 ' --no-deps --require-hashes -r %s' % (self.key, LOCK_FILE)]
        for name, version, digest in sorted(locked.values(), key=lambda item: item[0].lower()):
            lines.append('%s==%s --hash=sha256:%s' % (name, version, digest))
        write_atomic(os.path.join(partial, LOCK_FILE), '\n'.join(lines) + '\n')
        stages = [{'name': stage['name'], 'key': stage['key'], 'ref': stage.get('ref') or stage.get('path'), 'commit': stage['commit'],
                   'wheels': [os.path.basename(wheel) for wheel in self.stage_wheels(stage)]} for stage in self.stages]
        manifest = {'key': self.key, 'built': now(), 'builder': socket.gethostname(), 'document': self.document,
                    'stages': stages, 'packages': sorted('%s==%s' % (n, v) for n, v, _d in locked.values())}
        write_atomic(os.path.join(partial, MANIFEST_FILE), json.dumps(manifest, indent=1, sort_keys=True) + '\n')
        sums = ['%s  %s' % (sha256_file(os.path.join(partial, name)), name)
                for name in sorted(os.listdir(partial))]
        write_atomic(os.path.join(partial, SUMS_FILE), '\n'.join(sums) + '\n')
        write_atomic(os.path.join(partial, COMPLETE_FILE), now() + '\n')
        _remove(self.final)
        os.rename(partial, self.final)
        return manifest

    def activate(self):
        """Point wheelhouse/current at this key (a relative link, replaced by one rename); True when it moved."""
        link = os.path.join(self.build_dir, 'wheelhouse', 'current')
        if os.path.islink(link) and os.readlink(link) == self.key:
            return False
        tmp = link + '.new'
        _remove(tmp)
        os.symlink(self.key, tmp)
        os.rename(tmp, link)
        return True

    def prune(self):
        """Keep the newest ``keep`` wheelhouses (and the one current names); drop unused stages and logs."""
        root = os.path.join(self.build_dir, 'wheelhouse')
        current = os.path.realpath(os.path.join(root, 'current'))
        complete = [os.path.join(root, name) for name in os.listdir(root)
                    if name != 'current' and os.path.exists(os.path.join(root, name, COMPLETE_FILE))]
        complete.sort(key=os.path.getmtime, reverse=True)
        kept = set(complete[:self.keep]) | set([self.final, current])
        stage_keys = set(stage['key'] for stage in self.stages)
        for path in complete:
            if path not in kept:
                _remove(path)
                _remove(os.path.join(self.build_dir, 'logs', os.path.basename(path)))
                continue
            manifest = read_json(os.path.join(path, MANIFEST_FILE)) or {}
            stage_keys.update(stage.get('key') for stage in manifest.get('stages', []))
        stages_root = os.path.join(self.build_dir, 'stages')
        for name in os.listdir(stages_root):
            if name not in stage_keys and not name.endswith('.partial'):
                _remove(os.path.join(stages_root, name))

    # -- the whole build ---------------------------------------------------------------------

    def execute(self):
        """Build (or finish) the wheelhouse of the key; return a result dictionary."""
        for sub in ('src', 'stages', 'work', 'wheelhouse', 'logs'):
            path = os.path.join(self.build_dir, sub)
            if not os.path.isdir(path):
                os.makedirs(path)
        self.lock()
        start = time.time()
        if wheelhouse_complete(self.build_dir, self.key):
            return {'changed': self.activate(), 'built': [], 'reused': [], 'seconds': 0.0,
                    'manifest': read_json(os.path.join(self.final, MANIFEST_FILE))}
        if not os.path.isdir(self.log_dir):
            os.makedirs(self.log_dir)
        self.status = {'key': self.key, 'pid': os.getpid(), 'pgid': os.getpgid(0), 'state': 'running',
                       'started': now(), 'stage': 'setup', 'stage_index': 0, 'log_dir': self.log_dir,
                       'stages': [{'name': stage['name'], 'key': stage['key'], 'state': 'pending'}
                                  for stage in self.stages]}
        self._save_status()
        setup_log = os.path.join(self.log_dir, '00-setup.log')
        try:
            self.prepare_venv(setup_log)
            write_atomic(self.constraints, '')
            built, reused = [], []
            for index, stage in enumerate(self.stages):
                (built if self.build_stage(index, stage) else reused).append(stage['name'])
            self._save_status(stage='wheelhouse', stage_index=len(self.stages))
            manifest = self.assemble(os.path.join(self.log_dir, '%02d-wheelhouse.log' % (len(self.stages) + 1)))
        except BuildError as exc:
            self._save_status(state='failed', message=str(exc), failed_stage=exc.stage, failed_log=exc.log,
                              tail=exc.tail)
            raise
        _remove(self.work)
        self.activate()
        self.prune()
        self._save_status(state='done', seconds=round(time.time() - start, 1), built=built, reused=reused)
        return {'changed': True, 'built': built, 'reused': reused, 'seconds': round(time.time() - start, 1),
                'manifest': manifest}
