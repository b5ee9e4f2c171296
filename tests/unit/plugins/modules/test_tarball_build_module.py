# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tarball_build as Ansible runs it: refused input before anything, check mode, a build and its failure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import subprocess

import pytest

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.build_plan import build_plan

STAGE = {'name': 'rccl-tests', 'key': 'b' * 16, 'repo': 'https://example.invalid/rccl-tests.git', 'ref': 'main',
         'commit': 'c' * 40, 'subdir': [''], 'steps': [['make']], 'env': {}, 'install': False}


def build_args(tmp_path, **changes):
    args = dict(build_dir=str(tmp_path / 'build'), key='a' * 16, stage=STAGE, document={'format': 1},
                outputs=['build/*_perf'])
    args.update(changes)
    return args


@pytest.mark.parametrize('changes, message', [
    ({'key': '../x'}, "key '../x' is not a file name part"),
    ({'stage': dict(STAGE, commit='')}, 'the stage lacks commit'),
    ({'stage': dict(STAGE, name='a/b')}, "the stage name 'a/b' is not a file name part"),
    ({'stage': dict(STAGE, steps=['make MPI=1'])}, 'every step must be a non-empty argument list'),
    ({'outputs': []}, 'outputs must name at least one pattern'),
    ({'outputs': ['../bin/*', '/usr/bin/*']}, 'output patterns must stay inside the checkout: ../bin/*, /usr/bin/*'),
    ({'keep': 0}, 'keep must be 1 or more'),
], ids=['path-key', 'unresolved-commit', 'path-name', 'step-as-string', 'no-outputs', 'outputs-outside', 'keep-zero'])
def test_tarball_build_refuses_bad_input_before_anything(node, tmp_path, changes, message):
    result = node.run('tarball_build', **build_args(tmp_path, **changes))
    assert result['failed'] is True and message in result['msg']
    assert not os.path.exists(str(tmp_path / 'build'))


def test_tarball_build_in_check_mode_reports_the_build_it_would_run(node, tmp_path):
    result = node.run('tarball_build', _ansible_check_mode=True, **build_args(tmp_path))
    assert result['changed'] is True
    assert result['artifact'] == str(tmp_path / 'build' / 'artifacts' / ('rccl-tests-' + 'a' * 16 + '.tar.gz'))
    assert not os.path.exists(str(tmp_path / 'build'))


@pytest.mark.skipif(shutil.which('make') is None or shutil.which('git') is None, reason='needs make and git')
def test_tarball_build_builds_once_and_reports_a_failure_with_its_log(node, tmp_path):
    repo = str(tmp_path / 'src')
    os.makedirs(repo)
    with open(os.path.join(repo, 'Makefile'), 'w') as handle:
        handle.write('default:\n\t@test ! -e FAIL || (echo "hipcc: error: no rccl.h" >&2; exit 2)\n'
                     '\t@mkdir -p build && echo x > build/all_reduce_perf\n')
    env = dict(os.environ, GIT_AUTHOR_NAME='t', GIT_AUTHOR_EMAIL='t@t.invalid', GIT_COMMITTER_NAME='t',
               GIT_COMMITTER_EMAIL='t@t.invalid')
    subprocess.check_call(['git', 'init', '-q', '-b', 'main', repo])
    subprocess.check_call(['git', '-C', repo, 'add', '-A'])
    subprocess.check_call(['git', '-C', repo, 'commit', '-qm', 'one'], env=env)
    commit = subprocess.check_output(['git', '-C', repo, 'rev-parse', 'HEAD']).decode().strip()
    plan = build_plan([{'name': 'rccl-tests', 'repo': repo, 'ref': 'main', 'steps': [['make']]}], {'arch': ['gfx942']},
                      [commit])
    args = build_args(tmp_path, key=plan['key'], stage=plan['stages'][0], document=plan['document'])
    first = node.run('tarball_build', **args)
    assert first['changed'] is True and list(first['files']) == ['bin/all_reduce_perf'] and len(first['sha256']) == 64
    second = node.run('tarball_build', **args)
    assert second['changed'] is False and second['sha256'] == first['sha256']
    checked = node.run('tarball_build', _ansible_check_mode=True, **args)
    assert checked['changed'] is False and checked['sha256'] == first['sha256'] and checked['files'] == first['files']

    with open(os.path.join(repo, 'FAIL'), 'w') as handle:
        handle.write('1\n')
    subprocess.check_call(['git', '-C', repo, 'add', '-A'])
    subprocess.check_call(['git', '-C', repo, 'commit', '-qm', 'two'], env=env)
    commit = subprocess.check_output(['git', '-C', repo, 'rev-parse', 'HEAD']).decode().strip()
    plan = build_plan([{'name': 'rccl-tests', 'repo': repo, 'ref': 'main', 'steps': [['make']]}], {'arch': ['gfx942']},
                      [commit])
    failed = node.run('tarball_build', **build_args(tmp_path, key=plan['key'], stage=plan['stages'][0],
                                                    document=plan['document']))
    assert failed['failed'] is True and 'make failed (rc=2)' in failed['msg']
    assert 'hipcc: error: no rccl.h' in failed['tail'] and failed['log'].endswith(plan['key'] + '.log')
