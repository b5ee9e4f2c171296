# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tool_build's logic with a real git repository and real make: one artifact per key, nothing half-made kept.

The test repository's Makefile writes build/<name>_perf programs that print what they saw (the commit, the
environment), counts its runs, can be made to fail (FAIL) or to take a while (SLEEP).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time

import pytest

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.build_plan import build_plan
from ansible_collections.llmfleet.rocm.plugins.module_utils._tool_build import (
    ARTIFACT_MANIFEST, ToolBuild, artifact_paths, complete_manifest)
from ansible_collections.llmfleet.rocm.plugins.module_utils._wheel_build import BuildError

pytestmark = pytest.mark.skipif(shutil.which('make') is None or shutil.which('git') is None,
                                reason='needs make and git')

MAKEFILE = '''BUILDDIR ?= build
default:
\t@echo build >> $(COUNTS)
\t@test ! -e FAIL || (echo "error: the sources do not compile" >&2; exit 2)
\t@sleep $${SLEEP:-0}
\t@mkdir -p $(BUILDDIR)
\t@for tool in all_reduce all_gather; do \\
\t  printf '#!/bin/sh\\necho %s $(MPI) %s\\n' $$tool "$$HIPCC_COMPILE_FLAGS_APPEND" > $(BUILDDIR)/$${tool}_perf; \\
\t  chmod 755 $(BUILDDIR)/$${tool}_perf; done
\t@echo notes > $(BUILDDIR)/notes.txt
'''

COMMON = {'rocm_version': '7.1.1', 'arch': ['gfx942'], 'system': 'Debian 12', 'mpi': True}


def git(repo, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME='t', GIT_AUTHOR_EMAIL='t@t.invalid', GIT_COMMITTER_NAME='t',
               GIT_COMMITTER_EMAIL='t@t.invalid', GIT_CONFIG_NOSYSTEM='1')
    return subprocess.check_output(['git', '-C', repo] + list(args), env=env).decode().strip()


class Tool(object):
    """A repository with the Makefile above, and the builds it counted."""

    def __init__(self, root):
        self.root = root
        self.repo = os.path.join(root, 'tool')
        self.counts = os.path.join(root, 'counts')
        self.build_dir = os.path.join(root, 'build')
        os.makedirs(self.repo)
        subprocess.check_call(['git', 'init', '--quiet', '--initial-branch=main', self.repo])
        self.commit('first', {'Makefile': MAKEFILE})

    def commit(self, message, files=None):
        for path, text in (files or {}).items():
            with open(os.path.join(self.repo, path), 'w') as handle:
                handle.write(text)
        git(self.repo, 'add', '--all')
        git(self.repo, 'commit', '--quiet', '--allow-empty', '-m', message)
        return git(self.repo, 'rev-parse', 'HEAD')

    def plan(self, common=None):
        component = {'name': 'rccl-tests', 'repo': self.repo, 'ref': 'main', 'env': {'COUNTS': self.counts},
                     'steps': [['make', '-j', '2', 'MPI=1']]}
        return build_plan([component], common or COMMON, [git(self.repo, 'rev-parse', 'HEAD')])

    def builder(self, plan, outputs=('build/*_perf',), **kwargs):
        return ToolBuild(self.build_dir, plan['key'], plan['stages'][0], plan['document'], list(outputs),
                         env={'HIPCC_COMPILE_FLAGS_APPEND': '--offload-arch=gfx942'}, **kwargs)

    def builds(self):
        if not os.path.exists(self.counts):
            return 0
        with open(self.counts) as handle:
            return len(handle.read().split())


@pytest.fixture
def tool(tmp_path):
    return Tool(str(tmp_path))


def members(tarball):
    with tarfile.open(tarball) as archive:
        return [(member.name, member.mode) for member in archive.getmembers()]


def test_a_build_packs_the_outputs_and_a_manifest_of_their_hashes(tool, tmp_path):
    plan = tool.plan()
    result = tool.builder(plan).execute()
    tarball, manifest_path = artifact_paths(tool.build_dir, 'rccl-tests', plan['key'])
    assert result['changed'] is True and tool.builds() == 1
    # bin/ first, the manifest last: an unpacked manifest means every program is there.
    assert members(tarball) == [('bin/all_gather_perf', 0o755), ('bin/all_reduce_perf', 0o755), (ARTIFACT_MANIFEST, 0o644)]
    manifest = result['manifest']
    assert manifest == json.load(open(manifest_path))
    assert manifest['key'] == plan['key'] and manifest['commit'] == plan['stages'][0]['commit']
    assert manifest['document'] == plan['document'] and sorted(manifest['files']) == ['bin/all_gather_perf', 'bin/all_reduce_perf']
    out = tmp_path / 'out'
    with tarfile.open(tarball) as archive:
        archive.extractall(str(out))
    # The programs were built with the stage's and the module's environment.
    assert subprocess.check_output([str(out / 'bin' / 'all_reduce_perf')]).decode().split() == [
        'all_reduce', '1', '--offload-arch=gfx942']
    inner = json.load(open(str(out / ARTIFACT_MANIFEST)))
    assert inner['files'] == manifest['files'] and 'sha256' not in inner
    assert complete_manifest(tool.build_dir, 'rccl-tests', plan['key']) == manifest
    with open(os.path.join(tool.build_dir, 'logs', plan['key'] + '.log')) as handle:
        assert 'make -j 2 MPI=1' in handle.read()


def test_the_same_key_builds_nothing_and_a_new_commit_builds_a_new_artifact(tool):
    first = tool.plan()
    tool.builder(first).execute()
    again = tool.builder(first).execute()
    assert again['changed'] is False and tool.builds() == 1 and again['manifest']['key'] == first['key']
    tool.commit('second')
    second = tool.plan()
    assert second['key'] != first['key']
    assert tool.builder(second).execute()['changed'] is True and tool.builds() == 2
    for plan in (first, second):
        assert complete_manifest(tool.build_dir, 'rccl-tests', plan['key']) is not None
    # What every stage depends on is in the key: another architecture list is another artifact.
    assert tool.plan(dict(COMMON, arch=['gfx90a']))['key'] != second['key']


def test_a_failed_build_leaves_no_artifact_of_its_key_and_the_others_as_they_were(tool):
    good = tool.plan()
    tool.builder(good).execute()
    tool.commit('broken', {'FAIL': 'yes\n'})
    bad = tool.plan()
    with pytest.raises(BuildError) as caught:
        tool.builder(bad).execute()
    assert 'make -j 2 MPI=1 failed (rc=2)' in str(caught.value)
    assert 'error: the sources do not compile' in caught.value.tail
    assert complete_manifest(tool.build_dir, 'rccl-tests', bad['key']) is None
    assert not any(os.path.exists(path) for path in artifact_paths(tool.build_dir, 'rccl-tests', bad['key']))
    assert complete_manifest(tool.build_dir, 'rccl-tests', good['key']) is not None


def test_an_output_pattern_that_matches_nothing_fails(tool):
    plan = tool.plan()
    with pytest.raises(BuildError) as caught:
        tool.builder(plan, outputs=('build/*_perf', 'build/*.so')).execute()
    assert 'the build made nothing matching build/*.so' in str(caught.value)
    assert complete_manifest(tool.build_dir, 'rccl-tests', plan['key']) is None


def test_an_altered_artifact_is_not_taken_as_complete(tool):
    plan = tool.plan()
    tool.builder(plan).execute()
    tarball = artifact_paths(tool.build_dir, 'rccl-tests', plan['key'])[0]
    with open(tarball, 'ab') as handle:
        handle.write(b'\0')
    assert complete_manifest(tool.build_dir, 'rccl-tests', plan['key']) is None
    # The next run builds it again.
    assert tool.builder(plan).execute()['changed'] is True and tool.builds() == 2


def test_a_build_killed_midway_leaves_nothing_and_the_next_run_completes_it(tool):
    plan = tool.plan()
    code = ('import sys; sys.path[:0] = %r\n'
            'from ansible_collections.llmfleet.rocm.plugins.module_utils._tool_build import ToolBuild\n'
            'import json; plan = json.load(open(%r))\n'
            'ToolBuild(%r, plan["key"], plan["stages"][0], plan["document"], ["build/*_perf"]).execute()\n')
    plan_file = os.path.join(tool.root, 'plan.json')
    with open(plan_file, 'w') as handle:
        json.dump(plan, handle)
    env = dict(os.environ, SLEEP='30')
    proc = subprocess.Popen([sys.executable, '-c', code % (sys.path, plan_file, tool.build_dir)], env=env,
                            start_new_session=True)
    deadline = time.time() + 20
    while tool.builds() == 0 and time.time() < deadline:
        time.sleep(0.1)
    assert tool.builds() == 1
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert complete_manifest(tool.build_dir, 'rccl-tests', plan['key']) is None
    assert os.listdir(os.path.join(tool.build_dir, 'artifacts')) == []
    result = tool.builder(plan).execute()
    assert result['changed'] is True and complete_manifest(tool.build_dir, 'rccl-tests', plan['key']) is not None


def test_prune_keeps_the_newest_artifacts_and_the_current_key(tool):
    keys = []
    for number in range(4):
        tool.commit('change %d' % number)
        plan = tool.plan()
        tool.builder(plan, keep=2).execute()
        keys.append(plan['key'])
    kept = [key for key in keys if complete_manifest(tool.build_dir, 'rccl-tests', key)]
    assert kept == keys[2:]
    assert sorted(os.listdir(os.path.join(tool.build_dir, 'logs'))) == sorted(key + '.log' for key in keys[2:])
