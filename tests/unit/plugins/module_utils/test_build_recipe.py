# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine_build role's recipe table is what vLLM's own Dockerfiles say (the fixtures, read by the
vllm_rocm_recipe filter), and the role's sources follow it unless the user sets them.

When a release is added or a fixture changes, ``python tests/unit/plugins/module_utils/test_build_recipe.py`` prints
the table as the role's vars/main.yml holds it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import os
import re
import sys

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..'))
if __name__ == '__main__':
    sys.path.insert(0, os.path.join(ROOT, '.collections'))

from ansible_collections.llmfleet.rocm.plugins.filter.vllm_rocm_recipe import vllm_rocm_recipe  # noqa: E402
from ansible_collections.llmfleet.rocm.plugins.module_utils import _build_recipe as br  # noqa: E402

FIXTURES = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'vllm_dockerfiles')
VARS = os.path.join(ROOT, 'roles', 'engine_build', 'vars', 'main.yml')
DEFAULTS = os.path.join(ROOT, 'roles', 'engine_build', 'defaults', 'main.yml')
RELEASES = sorted(name for name in os.listdir(FIXTURES) if os.path.isdir(os.path.join(FIXTURES, name)))
# The two files the recipe reads, by their path in the release.
FILES = (('docker/Dockerfile.rocm_base', 'Dockerfile.rocm_base'), ('docker/Dockerfile.rocm', 'Dockerfile.rocm'))
_SDIST_RE = re.compile(r'^- Source distribution: `(?P<sdist>[^`]+)` \([0-9]+ bytes\), sha256 `(?P<sha256>[0-9a-f]{64})`', re.M)


def _read(release, name):
    with open(os.path.join(FIXTURES, release, name), 'rb') as handle:
        return handle.read()


def _source(release):
    """Where the release's Dockerfiles came from, as its SOURCE.md says."""
    found = _SDIST_RE.search(_read(release, 'SOURCE.md').decode('utf-8'))
    assert found, '%s/SOURCE.md names no source distribution' % release
    return {'sdist': found.group('sdist'), 'sha256': found.group('sha256'),
            'url': 'https://pypi.org/project/vllm/%s/' % release}


def derived_table():
    """The table, derived from the fixtures with the collection's filter."""
    table = {}
    for release in RELEASES:
        texts = [_read(release, name).decode('utf-8') for dummy, name in FILES]
        sums = dict((path, hashlib.sha256(_read(release, name)).hexdigest()) for path, name in FILES)
        table[release] = br.table_entry(vllm_rocm_recipe(*texts), _source(release), sums)
    return table


def _load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


ROLE_TABLE = _load(VARS).get('_engine_build_releases') or {}
DEFAULT_VALUES = _load(DEFAULTS)


def values(**changes):
    """The role's variables: its defaults with ``changes`` (names without the engine_build_ prefix)."""
    result = copy.deepcopy(DEFAULT_VALUES)
    result.update(('engine_build_%s' % name, value) for name, value in changes.items())
    return result


# -- the table ---------------------------------------------------------------------------------------------------------

def test_the_roles_table_is_derived_from_the_dockerfiles():
    assert ROLE_TABLE == derived_table(), 'run this file with python to print the derived table'


@pytest.mark.parametrize('release', RELEASES)
def test_the_tables_sha256_are_the_fixture_files(release):
    for path, name in FILES:
        assert ROLE_TABLE[release]['dockerfiles'][path] == hashlib.sha256(_read(release, name)).hexdigest()
        # and what SOURCE.md says it copied from the sdist
        assert ROLE_TABLE[release]['dockerfiles'][path] in _read(release, 'SOURCE.md').decode('utf-8')


@pytest.mark.parametrize('release,torch,triton,aiter', [
    ('0.30.0', '6bbd260', 'f0b55c0', 'v0.1.21.post2'),
    ('0.31.0', '733fca1', '669b31a', 'v0.1.23'),
    ('0.32.0', '733fca1', '669b31a', 'v0.1.24.post1'),
])
def test_upstreams_refs(release, torch, triton, aiter):
    entry = ROLE_TABLE[release]
    assert (entry['rocm_version'], entry['python_version'], entry['gcc']) == ('7.2.3', '3.12', '13')
    assert entry['torch'] == {'source': 'build', 'repo': 'https://github.com/ROCm/pytorch.git', 'ref': torch}
    assert entry['components']['triton']['ref'] == triton
    assert entry['components']['aiter'] == {'source': 'build', 'repo': 'https://github.com/ROCm/aiter.git', 'ref': aiter}
    assert entry['components']['flash_attention']['ref'] == '0e60e394'
    assert br.unsupported(entry) is None


def test_0_33_0_is_outside_what_the_collection_builds():
    entry = ROLE_TABLE['0.33.0']
    assert entry['torch'] == {'source': 'wheels', 'version': '2.13.0+rocm10.0.0'}
    assert (entry['rocm_version'], entry['rocm_source']) == ('10.0.0', 'wheels')
    assert br.unsupported(entry) == (
        'its ROCm is 10.0.0 (the ROCm SDK as wheels), and the collection supports ROCm 7.x; it installs torch'
        ' 2.13.0+rocm10.0.0 as wheels instead of building it from ROCm\'s fork')


# -- the sources the role builds from ----------------------------------------------------------------------------------

@pytest.mark.parametrize('ref', ['v0.32.0', '0.32.0'])
def test_release_of_a_tag(ref):
    assert br.release_of(ref) == '0.32.0'


@pytest.mark.parametrize('ref', ['main', '733fca1', 'v0.32.0rc1', 'releases/v0.32', '', None])
def test_no_release_of_a_branch_or_commit(ref):
    assert br.release_of(ref) is None


def test_the_defaults_take_the_recipe_of_the_pinned_release():
    found = br.sources(values(), ROLE_TABLE)
    assert found['problems'] == []
    assert (found['release'], found['supported'], found['python_version'], found['rocm_version']) == (
        '0.32.0', True, '3.12', '7.2.3')
    assert found['components'] == {
        'pytorch': {'repo': 'https://github.com/ROCm/pytorch.git', 'ref': '733fca1'},
        'triton': {'repo': 'https://github.com/ROCm/triton.git', 'ref': '669b31a'},
        'torchvision': {'repo': 'https://github.com/pytorch/vision.git', 'ref': 'v0.28.0'},
        'torchaudio': {'repo': 'https://github.com/pytorch/audio.git', 'ref': 'v2.11.0'},
        'flash_attention': {'repo': 'https://github.com/Dao-AILab/flash-attention.git', 'ref': '0e60e394'},
        'aiter': {'repo': 'https://github.com/ROCm/aiter.git', 'ref': 'v0.1.24.post1'},
        # Dockerfile.rocm's ROCM_TRITON_KERNELS_COMMIT (an archive of ROCm's Triton): a git source for the role.
        'triton_kernels': {'repo': 'https://github.com/ROCm/triton.git', 'ref': '669b31acc1dd1b3fd93286afd5db67f65d9f7557'},
    }
    assert set(found['origins'].values()) == {'recipe'}


def test_another_release_moves_every_default():
    found = br.sources(values(vllm_ref='v0.30.0'), ROLE_TABLE)
    assert found['problems'] == [] and found['release'] == '0.30.0'
    assert [found['components'][name]['ref'] for name in ('pytorch', 'triton', 'aiter')] == [
        '6bbd260', 'f0b55c0', 'v0.1.21.post2']


def test_a_users_value_wins_and_the_rest_follow_the_recipe():
    found = br.sources(values(pytorch_ref='release/2.13', aiter_repo='https://git.example.internal/aiter.git'), ROLE_TABLE)
    assert found['problems'] == []
    assert found['components']['pytorch'] == {'repo': 'https://github.com/ROCm/pytorch.git', 'ref': 'release/2.13'}
    assert found['components']['aiter'] == {'repo': 'https://git.example.internal/aiter.git', 'ref': 'v0.1.24.post1'}
    assert found['components']['triton']['ref'] == '669b31a'


def test_the_labs_build_a_branch_with_every_source_set():
    """molecule/build: vLLM's main branch, the repositories and refs of PyTorch, Triton, torchvision, torchaudio and
    triton_kernels set (AITER and flash-attention off): no recipe, no problem."""
    lab = 'http://llmfleet-lab-repo:8080/sources/'
    given = dict(('%s_%s' % (name, field), lab + name + '.git' if field == 'repo' else 'main')
                 for name in ('pytorch', 'triton', 'torchvision', 'torchaudio', 'triton_kernels') for field in ('repo', 'ref'))
    found = br.sources(values(vllm_ref='main', vllm_repo=lab + 'vllm.git', **given), ROLE_TABLE)
    assert found['problems'] == []
    assert (found['release'], found['entry'], found['rocm_version']) == (None, None, None)
    assert found['components']['pytorch'] == {'repo': lab + 'pytorch.git', 'ref': 'main'}
    assert found['origins'] == {'pytorch': 'user', 'triton': 'user', 'torchvision': 'user', 'torchaudio': 'user',
                                'flash_attention': None, 'aiter': None, 'triton_kernels': 'user'}
    assert found['components']['aiter'] == {'repo': '', 'ref': ''}


def test_a_branch_without_sources_is_refused_naming_what_to_set():
    found = br.sources(values(vllm_ref='main', pytorch_ref='main', aiter=True), ROLE_TABLE)
    missing = ('engine_build_pytorch_repo, engine_build_triton_repo, engine_build_triton_ref, engine_build_torchvision_repo,'
               ' engine_build_torchvision_ref, engine_build_torchaudio_repo, engine_build_torchaudio_ref,'
               ' engine_build_aiter_repo, engine_build_aiter_ref, engine_build_triton_kernels_repo,'
               ' engine_build_triton_kernels_ref')
    assert found['problems'] == [
        'engine_build_vllm_ref main is not a release of the recipe table (0.30.0, 0.31.0, 0.32.0, 0.33.0), so %s have no'
        ' default: set engine_build_recipe to the release that ref follows (its refs fill what you leave ""), or set %s'
        ' yourself.' % (missing, missing)]


def test_a_branch_takes_the_recipe_it_names():
    found = br.sources(values(vllm_ref='main', recipe='v0.31.0'), ROLE_TABLE)
    assert found['problems'] == [] and found['release'] == '0.31.0'
    assert found['components']['aiter']['ref'] == 'v0.1.23'


def test_a_recipe_outside_the_table_is_refused():
    found = br.sources(values(recipe='0.29.0'), ROLE_TABLE)
    assert found['problems'] == [
        'engine_build_recipe 0.29.0 is not a release of the recipe table (0.30.0, 0.31.0, 0.32.0, 0.33.0): name one'
        ' of them, or set it to "" to follow engine_build_vllm_ref.']


def test_0_33_0_is_refused_with_the_reason():
    found = br.sources(values(vllm_ref='v0.33.0'), ROLE_TABLE)
    assert found['supported'] is False
    assert found['problems'] == [
        'vLLM 0.33.0 cannot be built from its own recipe here: its ROCm is 10.0.0 (the ROCm SDK as wheels), and the'
        ' collection supports ROCm 7.x; it installs torch 2.13.0+rocm10.0.0 as wheels instead of building it from'
        ' ROCm\'s fork (its docker/Dockerfile.rocm_base). Pin engine_build_vllm_ref to a release built on ROCm 7.x'
        ' with torch from source (0.30.0, 0.31.0, 0.32.0), or set engine_build_recipe to one of them, or set'
        ' engine_build_pytorch_repo, engine_build_pytorch_ref, engine_build_triton_repo, engine_build_triton_ref,'
        ' engine_build_torchvision_repo, engine_build_torchvision_ref, engine_build_torchaudio_repo,'
        ' engine_build_torchaudio_ref, engine_build_triton_kernels_repo, engine_build_triton_kernels_ref yourself.']


def test_0_33_0_with_every_source_set_or_another_recipe_builds():
    every = dict(('%s_%s' % (name, field), 'x') for name in ('pytorch', 'triton', 'torchvision', 'torchaudio', 'triton_kernels')
                 for field in ('repo', 'ref'))
    assert br.sources(values(vllm_ref='v0.33.0', **every), ROLE_TABLE)['problems'] == []
    found = br.sources(values(vllm_ref='v0.33.0', recipe='0.32.0'), ROLE_TABLE)
    assert found['problems'] == [] and found['components']['pytorch']['ref'] == '733fca1'


def test_a_component_the_recipe_lacks_is_named():
    table = copy.deepcopy(ROLE_TABLE)
    table['0.32.0']['components']['aiter'] = None
    assert br.sources(values(aiter=True), table)['problems'] == [
        'vLLM 0.32.0\'s recipe does not give engine_build_aiter_repo, engine_build_aiter_ref: set them yourself.']
    assert br.sources(values(aiter=False), table)['problems'] == []


# -- the recipe's ROCm and the fleet's ---------------------------------------------------------------------------------

def test_the_recipes_rocm_against_the_fleets():
    message, fix = br.rocm_relation(values(), ROLE_TABLE, '7.1.1')
    assert message.startswith('The build follows vLLM 0.32.0\'s recipe, which upstream builds and tests on ROCm 7.2.3;'
                              ' this fleet runs ROCm 7.1.1 (rocm_version).')
    assert fix.startswith('Set rocm_version to 7.2.3')


@pytest.mark.parametrize('changes,fleet', [
    ({}, '7.2.3'),
    ({}, None),
    ({'vllm_ref': 'main'}, '7.1.1'),
    ({'vllm_ref': 'abc1234', 'recipe': ''}, '7.0.2'),
], ids=['same', 'fleet-unknown', 'branch', 'commit'])
def test_no_relation_to_report(changes, fleet):
    assert br.rocm_relation(values(**changes), ROLE_TABLE, fleet) is None


if __name__ == '__main__':
    print(yaml.safe_dump({'_engine_build_releases': derived_table()}, sort_keys=False, width=120), end='')
