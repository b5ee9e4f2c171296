# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A tool built from a git commit on a builder host (rccl-tests' make build), kept as one tarball per build key.

Layout under the tool's build directory::

    src/<name>/                        git checkout (.git/llmfleet-stage: the key it was last prepared for)
    logs/<key>.log                     the build's full log
    artifacts/<name>-<key>.tar.gz      bin/<each output>, then llmfleet-artifact.json (the last member)
    artifacts/<name>-<key>.json        the same manifest beside it, written last: the artifact is complete
    .lock                              held by the build that runs

The tarball is written under a temporary name and renamed, then the manifest beside it: a failed or killed
build leaves no artifact of its key, and the ones of other keys as they were.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import io
import json
import os
import socket
import tarfile
import time

from ansible_collections.llmfleet.rocm.plugins.module_utils._atomic_file import write_atomic
from ansible_collections.llmfleet.rocm.plugins.module_utils._wheel_build import (
    BuildError, WheelBuild, _remove, now, read_json, sha256_file, tail)

ARTIFACT_MANIFEST = 'llmfleet-artifact.json'


def artifact_paths(build_dir, name, key):
    """(tarball, manifest) of one key."""
    base = os.path.join(build_dir, 'artifacts', '%s-%s' % (name, key))
    return base + '.tar.gz', base + '.json'


def complete_manifest(build_dir, name, key):
    """The manifest of the key's artifact when the artifact is complete and matches it, else None."""
    tarball, manifest_path = artifact_paths(build_dir, name, key)
    manifest = read_json(manifest_path)
    if not manifest or manifest.get('key') != key or not os.path.isfile(tarball):
        return None
    if manifest.get('sha256') != sha256_file(tarball):
        return None
    return manifest


class ToolBuild(WheelBuild):
    """One build of one tool: its only stage (a build_plan stage) checked out, its steps run, its outputs packed."""

    def __init__(self, build_dir, key, stage, document, outputs, env=None, keep=3, tail_lines=40):
        super(ToolBuild, self).__init__(build_dir, key, [stage], document, python=None, env=env, keep=keep,
                                        tail_lines=tail_lines)
        self.stage = stage
        self.name = stage['name']
        self.outputs = outputs
        self.log = os.path.join(self.build_dir, 'logs', '%s.log' % key)
        self.tarball, self.manifest_path = artifact_paths(self.build_dir, self.name, key)

    def _venv_env(self, extra=None):
        """The builder's environment in the C.UTF-8 locale, ROCm's programs on the PATH, the stage's variables."""
        env = dict(os.environ)
        env['LC_ALL'] = 'C.UTF-8'
        env.update(self.env)
        rocm = env.get('ROCM_PATH', '/opt/rocm')
        env['PATH'] = os.pathsep.join([os.path.join(rocm, 'bin'), os.environ.get('PATH', '/usr/bin:/bin')])
        env.update(dict((k, str(v)) for k, v in (self.stage.get('env') or {}).items()))
        env.update(extra or {})
        return env

    def collect(self, src):
        """Every file the output patterns match in the checkout: {name in bin/: path}; a pattern matching none fails."""
        found = {}
        for pattern in self.outputs:
            paths = sorted(path for path in glob.glob(os.path.join(src, pattern)) if os.path.isfile(path))
            if not paths:
                raise BuildError('%s: the build made nothing matching %s in %s' % (self.name, pattern, src),
                                 stage=self.name, log=self.log, tail=tail(self.log, self.tail_lines))
            for path in paths:
                found[os.path.basename(path)] = path
        return found

    def pack(self, files, seconds):
        """The tarball (bin/ first, the manifest last) under a temporary name, renamed; then the manifest beside it."""
        manifest = {'name': self.name, 'key': self.key, 'repo': self.stage['repo'], 'ref': self.stage['ref'],
                    'commit': self.stage['commit'], 'built': now(), 'builder': socket.gethostname(),
                    'seconds': seconds, 'document': self.document,
                    'files': dict(('bin/' + name, sha256_file(path)) for name, path in sorted(files.items()))}
        partial = self.tarball + '.partial'
        _remove(partial)
        with tarfile.open(partial, 'w:gz') as archive:
            for name, path in sorted(files.items()):
                info = archive.gettarinfo(path, 'bin/' + name)
                info.uid = info.gid = 0
                info.uname = info.gname = 'root'
                info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
                with open(path, 'rb') as handle:
                    archive.addfile(info, handle)
            data = (json.dumps(manifest, indent=1, sort_keys=True) + '\n').encode('utf-8')
            info = tarfile.TarInfo(ARTIFACT_MANIFEST)
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            archive.addfile(info, io.BytesIO(data))
        with open(partial, 'rb') as handle:
            os.fsync(handle.fileno())
        os.rename(partial, self.tarball)
        manifest['sha256'] = sha256_file(self.tarball)
        write_atomic(self.manifest_path, json.dumps(manifest, indent=1, sort_keys=True) + '\n')
        return manifest

    def prune(self):
        """Keep the newest ``keep`` complete artifacts (this key's always) and their logs."""
        root = os.path.join(self.build_dir, 'artifacts')
        manifests = sorted(glob.glob(os.path.join(root, '%s-*.json' % self.name)), key=os.path.getmtime, reverse=True)
        for path in manifests[self.keep:]:
            key = (read_json(path) or {}).get('key')
            if not key or key == self.key:
                continue
            for victim in artifact_paths(self.build_dir, self.name, key) + (os.path.join(self.build_dir, 'logs', key + '.log'),):
                _remove(victim)

    def execute(self):
        """Build the key's artifact unless it is complete; return a result dictionary."""
        for sub in ('src', 'logs', 'artifacts'):
            path = os.path.join(self.build_dir, sub)
            if not os.path.isdir(path):
                os.makedirs(path)
        self.lock()
        manifest = complete_manifest(self.build_dir, self.name, self.key)
        if manifest:
            return {'changed': False, 'manifest': manifest, 'seconds': 0.0}
        start = time.time()
        with open(self.log, 'a') as handle:
            handle.write('\n==> %s building %s %s at %s (key %s)\n'
                         % (now(), self.name, self.stage['ref'], self.stage['commit'], self.key))
        src = self.checkout(self.stage, self.log)
        env = self._venv_env()
        for argv in self.stage['steps']:
            self.run([str(arg) for arg in argv], self.log, cwd=src, env=env, stage=self.name)
        manifest = self.pack(self.collect(src), round(time.time() - start, 1))
        self.prune()
        return {'changed': True, 'manifest': manifest, 'seconds': manifest['seconds']}
