# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's router wheelhouse (wheels/router): vllm-router and every dependency, each wheel pinned by sha256 in the
recipe and downloaded as pinned; built here with a stand-in for pip download, idempotent, refused when pip gives
anything but the pins."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

import pytest
import yaml

# lab/ (conftest.py)
from labctl import common, wheelhouse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROUTER = wheelhouse.load_recipe(wheelhouse.ROUTER_RECIPE)[0]
FILES = {'vllm-router==0.1.17': 'vllm_router-0.1.17-cp38-abi3-manylinux_2_28_x86_64.whl',
         'fastapi==0.165.0': 'fastapi-0.165.0-py3-none-any.whl'}


@pytest.fixture(autouse=True)
def quiet_log(tmp_path, monkeypatch):
    """labctl's messages go to a log of the test's own, not .lab/labctl.log."""
    monkeypatch.setattr(common, 'LOG_PATH', str(tmp_path / 'labctl.log'))
    monkeypatch.setattr(common, 'LAB', str(tmp_path))


def recipe_of(files):
    """A recipe pinning the stand-in wheels (each wheel's content is its file name)."""
    return dict(ROUTER, wheels=[{'requirement': requirement, 'sha256': hashlib.sha256(name.encode('ascii')).hexdigest()}
                                for requirement, name in files.items()])


class Download:
    """Stands in for pip download: writes `files` (content: the name) into directory/wheels; records each call."""

    def __init__(self, files):
        self.files, self.calls = files, []

    def __call__(self, recipe, directory):
        wheels = os.path.join(directory, 'wheels')
        os.makedirs(wheels)
        for name in self.files:
            with open(os.path.join(wheels, name), 'wb') as handle:
                handle.write(name.encode('ascii'))
        self.calls.append([item['requirement'] for item in recipe['wheels']])
        return wheels


def build(tmp_path, recipe, files):
    path = str(tmp_path / 'router.json')
    with open(path, 'w') as handle:
        json.dump(recipe, handle)
    download = Download(files)
    final = wheelhouse.build_pinned(recipe_path=path, root=str(tmp_path / 'wheels'), scratch=str(tmp_path), download=download)
    return final, download, path


def test_recipe_pins_every_wheel_and_the_gateway_roles_version():
    assert wheelhouse.check_pinned_recipe(ROUTER) == []
    assert (ROUTER['name'], ROUTER['python']) == ('router', '3.11')
    pins = dict(item['requirement'].split('==') for item in ROUTER['wheels'])
    with open(os.path.join(ROOT, 'roles', 'gateway', 'defaults', 'main.yml')) as handle:
        assert pins['vllm-router'] == yaml.safe_load(handle)['gateway_router_version']
    # What vllm-router 0.1.17 requires, each pinned (their own dependencies are pinned too).
    for name in ('fastapi', 'uvicorn', 'aiohttp', 'orjson', 'requests', 'setproctitle'):
        assert name in pins, name
    # A file of its own: the engine's wheelhouse keys (hence the sandbox's venvs and model) stay as they are.
    assert wheelhouse.router_key() not in (wheelhouse.wheelhouse_key(), wheelhouse.sglang_key())


@pytest.mark.parametrize('change, problem', [
    ({'name': 'sglang'}, 'other than latest, alternate and sglang'),
    ({'python': '3'}, "lab hosts' 3.<minor>"),
    ({'platforms': 'manylinux_2_28_x86_64'}, 'must list platform tags'),
    ({'platforms': ['manylinux 2']}, 'must list platform tags'),
    ({'wheels': []}, 'at least one'),
    ({'wheels': [{'requirement': 'vllm-router', 'sha256': 'a' * 64}]}, 'not pinned'),
    ({'wheels': [{'requirement': 'vllm-router==0.1.17', 'sha256': 'A' * 64}]}, 'needs the sha256'),
    ({'wheels': [{'requirement': 'a-b==1', 'sha256': 'a' * 64}, {'requirement': 'A_b==2', 'sha256': 'b' * 64}]},
     'a-b pinned more than once'),
], ids=['sglang', 'python', 'platforms-not-a-list', 'platform-with-space', 'no-wheel', 'unpinned', 'upper-case-digest',
        'twice'])
def test_unusable_recipes_are_named(change, problem):
    assert any(problem in text for text in wheelhouse.check_pinned_recipe(dict(ROUTER, **change)))


def test_pip_downloads_exactly_the_pins_for_the_lab_hosts():
    argv = wheelhouse.pinned_download_argv(ROUTER, '/w/pinned.txt', '/w/wheels', python='/py')
    assert argv[:4] == ['/py', '-m', 'pip', 'download']
    for flag in ('--no-deps', '--require-hashes'):
        assert flag in argv
    assert argv[argv.index('--only-binary') + 1] == ':all:'
    assert argv[argv.index('--python-version') + 1] == '3.11'
    assert [argv[index + 1] for index, word in enumerate(argv) if word == '--abi'] == ['cp311', 'abi3', 'none']
    assert [argv[index + 1] for index, word in enumerate(argv) if word == '--platform'] == ROUTER['platforms'] + ['any']
    assert argv[-2:] == ['-r', '/w/pinned.txt']


def test_the_pinned_wheels_become_the_wheelhouse(tmp_path):
    final, download, path = build(tmp_path, recipe_of(FILES), list(FILES.values()))
    assert download.calls == [list(FILES)]
    root = tmp_path / 'wheels'
    assert os.path.basename(final) == wheelhouse.router_key(path)
    assert os.readlink(str(root / 'router')) == os.path.basename(final)
    assert sorted(os.listdir(final)) == sorted(['SHA256SUMS', 'requirements.txt', 'wheelhouse.json'] + list(FILES.values()))
    with open(os.path.join(final, 'requirements.txt')) as handle:
        lock = [line for line in handle.read().splitlines() if not line.startswith('#')]
    assert lock == ['fastapi==0.165.0 --hash=sha256:' + hashlib.sha256(FILES['fastapi==0.165.0'].encode('ascii')).hexdigest(),
                    'vllm-router==0.1.17 --hash=sha256:'
                    + hashlib.sha256(FILES['vllm-router==0.1.17'].encode('ascii')).hexdigest()]
    with open(os.path.join(final, 'wheelhouse.json')) as handle:
        assert json.load(handle)['kind'] == 'router'
    assert [name for name in os.listdir(str(tmp_path)) if name.startswith('wheelhouse-')] == []


def test_a_second_build_downloads_nothing(tmp_path):
    final, _download, _path = build(tmp_path, recipe_of(FILES), list(FILES.values()))
    before = os.stat(os.path.join(final, 'wheelhouse.json')).st_mtime_ns
    again, download, _path = build(tmp_path, recipe_of(FILES), list(FILES.values()))
    assert (again, download.calls) == (final, [])
    assert os.stat(os.path.join(final, 'wheelhouse.json')).st_mtime_ns == before


@pytest.mark.parametrize('files, wrong', [
    pytest.param([FILES['vllm-router==0.1.17']], 'fastapi', id='a-pin-missing'),
    pytest.param(list(FILES.values()) + ['six-1.17.0-py3-none-any.whl'], 'six', id='an-extra-wheel'),
    pytest.param([FILES['vllm-router==0.1.17'], 'fastapi-0.166.0-py3-none-any.whl'], 'fastapi', id='another-version'),
])
def test_anything_but_the_pins_is_refused_and_nothing_is_left(tmp_path, files, wrong):
    with pytest.raises(common.LabError, match='other wheels than .* pins: %s' % wrong):
        build(tmp_path, recipe_of(FILES), files)
    assert not os.path.exists(str(tmp_path / 'wheels' / 'router'))
    assert [name for name in os.listdir(str(tmp_path)) if name.startswith('wheelhouse-')] == []
