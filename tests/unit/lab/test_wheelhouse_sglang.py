# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's SGLang wheelhouse (wheels/sglang): SGLang without its dependencies beside torch CPU and what its
parser and launcher import; built here with a stand-in for pip wheel, idempotent, refused when a project comes twice."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

import pytest

# lab/ (conftest.py)
from labctl import common, wheelhouse

SGLANG = wheelhouse.load_recipe(wheelhouse.SGLANG_RECIPE)[0]
ENGINE = 'sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl'
TORCH = 'torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl'
NUMPY = 'numpy-2.3.5-cp311-cp311-manylinux_2_28_x86_64.whl'


@pytest.fixture(autouse=True)
def quiet_log(tmp_path, monkeypatch):
    """labctl's messages go to a log of the test's own, not .lab/labctl.log."""
    monkeypatch.setattr(common, 'LOG_PATH', str(tmp_path / 'labctl.log'))
    monkeypatch.setattr(common, 'LAB', str(tmp_path))


class Wheel:
    """Stands in for pip wheel: the first call (--no-deps) writes `engine`, the next `deps`; records each argv."""

    def __init__(self, engine, deps):
        self.outputs, self.calls = [engine, deps], []

    def __call__(self, argv_tail, directory):
        for name in self.outputs[len(self.calls)]:
            with open(os.path.join(directory, name), 'wb') as handle:
                handle.write(name.encode('ascii'))
        self.calls.append(argv_tail)


def build(tmp_path, recipe=None, engine=(ENGINE,), deps=(TORCH, NUMPY), python=(3, 11)):
    path = wheelhouse.SGLANG_RECIPE
    if recipe is not None:
        path = str(tmp_path / 'sglang.json')
        with open(path, 'w') as handle:
            json.dump(recipe, handle)
    wheel = Wheel(engine, deps)
    final = wheelhouse.build_engine(recipe_path=path, root=str(tmp_path / 'wheels'), scratch=str(tmp_path),
                                    wheel=wheel, python=python)
    return final, wheel


def test_recipe_is_sglang_without_dependencies_beside_torch_cpu_and_what_its_parser_imports():
    assert wheelhouse.check_engine_recipe(SGLANG) == []
    assert (SGLANG['name'], SGLANG['python'], SGLANG['no_deps']) == ('sglang', '3.11', ['sglang==0.5.23'])
    assert 'torch==2.13.0+cpu' in SGLANG['requirements']
    # What SGLang's parser needs (DESIGN.md, section 1), and huggingface_hub for its launcher's --help.
    for name in ['aiohttp', 'IPython', 'msgspec', 'numpy', 'orjson', 'packaging', 'pillow', 'psutil', 'pybase64',
                 'pydantic', 'pyzmq', 'requests', 'starlette', 'tqdm', 'triton', 'huggingface_hub']:
        assert any(item.split('==')[0] == name for item in SGLANG['requirements']), name
    # A file of its own: the first wheelhouse's key, hence the sandbox's venvs, stay as they are.
    assert wheelhouse.sglang_key() != wheelhouse.wheelhouse_key()


@pytest.mark.parametrize('change, problem', [
    ({'name': 'latest'}, 'other than latest'),
    ({'name': 'alternate'}, 'other than latest'),
    ({'python': '3'}, "lab hosts' 3.<minor>"),
    ({'no_deps': []}, 'at least one'),
    ({'no_deps': ['sglang']}, 'not pinned'),
    ({'requirements': 'torch'}, 'list of requirement specifiers'),
], ids=['latest', 'alternate', 'python', 'no-engine', 'unpinned-engine', 'requirements-not-a-list'])
def test_unusable_recipes_are_named(change, problem):
    assert any(problem in text for text in wheelhouse.check_engine_recipe(dict(SGLANG, **change)))


def test_engine_without_dependencies_then_the_requirements_with_theirs(tmp_path):
    final, wheel = build(tmp_path)
    assert wheel.calls == [['--no-deps', 'sglang==0.5.23'], SGLANG['requirements']]
    root = tmp_path / 'wheels'
    assert os.path.basename(final) == wheelhouse.sglang_key()
    assert os.readlink(str(root / 'sglang')) == os.path.basename(final)
    assert sorted(os.listdir(final)) == sorted(['SHA256SUMS', 'requirements.txt', 'wheelhouse.json', ENGINE, TORCH, NUMPY])
    with open(os.path.join(final, 'requirements.txt')) as handle:
        lock = [line for line in handle.read().splitlines() if not line.startswith('#')]
    assert lock == ['numpy==2.3.5 --hash=sha256:' + hashlib.sha256(NUMPY.encode('ascii')).hexdigest(),
                    'sglang==0.5.23 --hash=sha256:' + hashlib.sha256(ENGINE.encode('ascii')).hexdigest(),
                    'torch==2.13.0+cpu --hash=sha256:' + hashlib.sha256(TORCH.encode('ascii')).hexdigest()]
    with open(os.path.join(final, 'wheelhouse.json')) as handle:
        info = json.load(handle)
    assert (info['kind'], info['key'], info['python']) == ('sglang', wheelhouse.sglang_key(), '3.11')
    assert [name for name in os.listdir(str(tmp_path)) if name.startswith('wheelhouse-')] == []


def test_a_second_build_runs_no_pip_and_changes_nothing(tmp_path):
    final, _wheel = build(tmp_path)
    marker = os.path.join(final, 'wheelhouse.json')
    before = os.stat(marker).st_mtime_ns
    again, wheel = build(tmp_path)
    assert (again, wheel.calls) == (final, [])
    assert os.stat(marker).st_mtime_ns == before


def test_a_project_both_steps_give_is_refused_and_nothing_is_left(tmp_path):
    with pytest.raises(common.LabError, match='more than one wheel of torch'):
        build(tmp_path, engine=(ENGINE, 'torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl'))
    assert not os.path.exists(str(tmp_path / 'wheels' / 'sglang'))
    assert [name for name in os.listdir(str(tmp_path)) if name.startswith('wheelhouse-')] == []


def test_another_python_is_refused_before_pip_runs(tmp_path):
    with pytest.raises(common.LabError, match='the lab hosts need 3.11'):
        build(tmp_path, python=(3, 12))
