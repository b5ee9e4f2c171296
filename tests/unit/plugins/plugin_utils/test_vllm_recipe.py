# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the reader of vLLM's ROCm Dockerfiles, on the Dockerfiles of four vLLM releases (copied from their
sdists on PyPI, see tests/unit/fixtures/vllm_dockerfiles/<version>/SOURCE.md), then edge and error cases."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import re

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.filter.vllm_rocm_recipe import FilterModule
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.vllm_recipe import (
    NOTE_TORCH_VERSION,
    RecipeError,
    parse_dockerfile,
    vllm_rocm_recipe,
)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', 'vllm_dockerfiles')
RELEASES = ('0.30.0', '0.31.0', '0.32.0', '0.33.0')
# (id, version folder, base file, vLLM file): each release's default pair, and 0.33.0's ROCm 7.2 pair.
PAIRS = [(version, version, 'Dockerfile.rocm_base', 'Dockerfile.rocm') for version in RELEASES]
PAIRS.append(('0.33.0-rocm72', '0.33.0', 'Dockerfile.rocm_72_base', 'Dockerfile.rocm_72'))
KNOWN_COMPONENTS = {'triton', 'torchvision', 'torchaudio', 'flash_attention', 'aiter', 'mori', 'amdsmi',
                    'triton_kernels', 'rocm_runtime', 'rocprofiler_sdk', 'nixl', 'ucx', 'lmcache', 'rocshmem', 'deepep'}
TOP_KEYS = {'python_version', 'rocm_version', 'rocm', 'base_image', 'os', 'torch', 'components', 'pins', 'compilers',
            'ppas', 'pytorch_rocm_arch', 'device_packages', 'notes'}
ROCM_72_IMAGE = 'rocm/dev-ubuntu-22.04:7.2.3-complete'
ROCM_TRITON = 'https://github.com/ROCm/triton.git'
AMD_INDEX = 'https://stable.repo.amd.com/rocm/whl-next/'
AMD_NIGHTLY_INDEX = 'https://nightly.repo.amd.com/rocm/whl-next/'
TRITON_669 = '669b31acc1dd1b3fd93286afd5db67f65d9f7557'

# What each release's files say (read by hand from the files; DESIGN.md section 8 agrees).
EXPECTED = {
    '0.30.0': {
        'rocm': ('image', '7.2.3'), 'base_image': ROCM_72_IMAGE, 'torch': '6bbd260', 'triton': 'f0b55c0',
        'torchvision': 'v0.27.1', 'torchaudio': 'v2.11.0', 'flash_attention': '0e60e394', 'aiter': 'v0.1.21.post2',
        'mori': 'v1.1.0', 'triton_kernels': '0f380657dbf3ee86eb57558ff71df24f03b5d4e7',
        'rocm_runtime': 'b539bf7eebfd99ad0a69668caa1f4037034d501f',
        'rocprofiler_sdk': '2b22ab0195cc1461cd9abf3b969e9dd7c10af350',
        'nixl': '231d56753047c989062a5cb2ac703a1ad761c7d2', 'rocshmem': 'f0acb0c6',
        'pybind11': '<3.1.0', 'gcc': '13',
    },
    '0.31.0': {
        'rocm': ('image', '7.2.3'), 'base_image': ROCM_72_IMAGE, 'torch': '733fca1', 'triton': '669b31a',
        'torchvision': 'v0.28.0', 'torchaudio': 'v2.11.0', 'flash_attention': '0e60e394', 'aiter': 'v0.1.23',
        'mori': 'v1.1.0', 'triton_kernels': TRITON_669,
        'rocm_runtime': 'af70edc91f1dc5d228fd4c076df99e65e49c4521',
        'rocprofiler_sdk': '2b22ab0195cc1461cd9abf3b969e9dd7c10af350',
        'nixl': '231d56753047c989062a5cb2ac703a1ad761c7d2', 'rocshmem': 'f0acb0c6',
        'pybind11': '<3.1.0', 'gcc': '13',
    },
    '0.32.0': {
        'rocm': ('image', '7.2.3'), 'base_image': ROCM_72_IMAGE, 'torch': '733fca1', 'triton': '669b31a',
        'torchvision': 'v0.28.0', 'torchaudio': 'v2.11.0', 'flash_attention': '0e60e394', 'aiter': 'v0.1.24.post1',
        'mori': 'v1.2.3.post1', 'triton_kernels': TRITON_669,
        'rocm_runtime': 'af70edc91f1dc5d228fd4c076df99e65e49c4521',
        'rocprofiler_sdk': '2b22ab0195cc1461cd9abf3b969e9dd7c10af350',
        'nixl': '231d56753047c989062a5cb2ac703a1ad761c7d2', 'rocshmem': 'f0acb0c6',
        'pybind11': '<3.1.0', 'gcc': '13',
    },
    '0.33.0': {
        'rocm': ('wheels', '10.0.0'), 'base_image': 'ubuntu:22.04', 'torch': '2.13.0+rocm10.0.0', 'triton': '669b31ac',
        'torchvision': '0.28.0+rocm10.0.0', 'torchaudio': '2.11.0+rocm10.0.0', 'flash_attention': '0e60e394',
        'aiter': 'v0.1.26', 'mori': 'v1.2.3.post1', 'triton_kernels': TRITON_669,
        'rocm_runtime': '25e14349f2606a6b95c4ccd45eb92a1835646cf2', 'rocprofiler_sdk': None,
        'nixl': '1683cf3b7f3d11674c03c5e861cea22339876c96', 'rocshmem': None,
        'pybind11': '==3.0.4', 'gcc': None,
    },
    '0.33.0-rocm72': {
        'rocm': ('image', '7.2.3'), 'base_image': ROCM_72_IMAGE, 'torch': '733fca1', 'triton': '669b31a',
        'torchvision': 'v0.28.0', 'torchaudio': 'v2.11.0', 'flash_attention': '0e60e394', 'aiter': 'v0.1.26',
        'mori': 'v1.2.3.post1', 'triton_kernels': TRITON_669,
        'rocm_runtime': 'af70edc91f1dc5d228fd4c076df99e65e49c4521',
        'rocprofiler_sdk': '2b22ab0195cc1461cd9abf3b969e9dd7c10af350',
        'nixl': '1683cf3b7f3d11674c03c5e861cea22339876c96', 'rocshmem': 'f0acb0c6',
        'pybind11': '<3.1.0', 'gcc': '13',
    },
}


def _read(folder, name):
    with open(os.path.join(FIXTURES, folder, name), encoding='utf-8') as handle:
        return handle.read()


def _recipe(pair_id):
    for ident, folder, base, rocm in PAIRS:
        if ident == pair_id:
            return vllm_rocm_recipe(_read(folder, base), _read(folder, rocm))
    raise KeyError(pair_id)


def _ref(entry):
    """A component's ref, or its version where it is a wheel."""
    if entry is None:
        return None
    return entry['ref'] if entry['source'] in ('build', 'archive') else entry['version']


@pytest.mark.parametrize('version', RELEASES)
def test_fixtures_match_their_source_notes(version):
    """Every Dockerfile in a release's folder is listed in its SOURCE.md with the sha256 it has."""
    notes = _read(version, 'SOURCE.md')
    names = sorted(name for name in os.listdir(os.path.join(FIXTURES, version)) if name.startswith('Dockerfile'))
    assert 'Dockerfile.rocm_base' in names and 'Dockerfile.rocm' in names
    for name in names:
        with open(os.path.join(FIXTURES, version, name), 'rb') as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()
        assert re.search(r'\| `%s` \| `vllm-%s/docker/%s` \| `%s` \|' % (re.escape(name), version, re.escape(name),
                                                                         digest), notes), name
    assert re.search(r'`vllm-%s\.tar\.gz` \(\d+ bytes\), sha256 `[0-9a-f]{64}`' % re.escape(version), notes)


@pytest.mark.parametrize('pair_id', sorted(EXPECTED))
def test_recipe_has_the_releases_refs(pair_id):
    recipe = _recipe(pair_id)
    expected = EXPECTED[pair_id]
    assert set(recipe) == TOP_KEYS
    assert recipe['python_version'] == '3.12'
    assert (recipe['rocm']['source'], recipe['rocm_version']) == expected['rocm']
    assert recipe['rocm']['version'] == recipe['rocm_version']
    assert recipe['base_image'] == expected['base_image']
    assert recipe['os'] == {'distribution': 'ubuntu', 'version': '22.04'}
    assert _ref(recipe['torch']) == expected['torch']
    components = recipe['components']
    assert set(components) == KNOWN_COMPONENTS
    for name in ('triton', 'torchvision', 'torchaudio', 'flash_attention', 'aiter', 'mori', 'triton_kernels',
                 'rocm_runtime', 'rocprofiler_sdk', 'nixl', 'rocshmem'):
        assert _ref(components[name]) == expected[name], name
    assert recipe['pins']['pybind11'] == expected['pybind11']
    assert recipe['pins']['cmake'] == '<4' and recipe['pins']['setuptools'] == '<80'
    assert recipe['compilers']['gcc'] == expected['gcc']
    assert recipe['pytorch_rocm_arch'][:3] == ['gfx90a', 'gfx942', 'gfx950']


@pytest.mark.parametrize('pair_id', sorted(EXPECTED))
def test_every_component_names_where_it_comes_from(pair_id):
    recipe = _recipe(pair_id)
    for name, entry in recipe['components'].items():
        if entry is None:
            continue
        assert entry['source'] in ('build', 'wheels', 'rocm', 'archive'), name
        assert entry['dockerfile'] in ('Dockerfile.rocm_base', 'Dockerfile.rocm'), name
        assert entry['stage'], name
        if entry['source'] in ('build', 'archive'):
            assert entry['repo'].startswith('https://github.com/') and entry['repo'].endswith('.git'), name
    components = recipe['components']
    # What the default image holds, and what only an optional target or the CI image builds.
    for name in ('triton', 'aiter', 'mori', 'amdsmi', 'triton_kernels', 'nixl', 'ucx', 'rocm_runtime'):
        assert components[name]['in_image'] is True, name
    assert components['lmcache']['in_image'] is False
    assert components['lmcache']['version'] == '0.5.3'
    assert components['deepep']['in_image'] is False
    assert components['deepep']['ref'] == '0f63d3e9'


@pytest.mark.parametrize('pair_id', ['0.30.0', '0.32.0', '0.33.0-rocm72'])
def test_build_shape(pair_id):
    """Up to 0.32.0 (and in 0.33.0's ROCm 7.2 pair) torch is ROCm's fork built from source with gcc-13."""
    recipe = _recipe(pair_id)
    assert recipe['rocm'] == {'source': 'image', 'version': '7.2.3', 'image': ROCM_72_IMAGE}
    assert recipe['torch'] == {'source': 'build', 'repo': 'https://github.com/ROCm/pytorch.git',
                               'ref': EXPECTED[pair_id]['torch'], 'dockerfile': 'Dockerfile.rocm_base',
                               'stage': 'build_pytorch', 'in_image': True}
    components = recipe['components']
    assert components['torchvision']['repo'] == 'https://github.com/pytorch/vision.git'
    assert components['torchvision']['stage'] == 'build_torchvision'
    assert components['torchaudio']['repo'] == 'https://github.com/pytorch/audio.git'
    assert components['triton']['repo'] == ROCM_TRITON and components['triton']['version'] is None
    assert components['amdsmi'] == {'source': 'rocm', 'path': '/opt/rocm/share/amd_smi',
                                    'dockerfile': 'Dockerfile.rocm_base', 'stage': 'build_amdsmi', 'in_image': True}
    assert recipe['compilers'] == {'gcc': '13', 'gcc_stages': ['build_pytorch', 'build_pytorch_runtime']}
    assert recipe['ppas'] == ['ppa:deadsnakes/ppa', 'ppa:ubuntu-toolchain-r/test']
    assert recipe['device_packages'] == []
    assert recipe['notes'] == {'torch': NOTE_TORCH_VERSION}
    assert components['rocprofiler_sdk']['patches'] == ['fae7fd57ffb8a76e811d6410b8a0cee1e94d710a',
                                                        'f8db22adbe17686a9b05ae03367dd1ec73011653']


def test_wheels_shape():
    """0.33.0's default pair installs the ROCm SDK, torch, torchvision and torchaudio as wheels from AMD's index."""
    recipe = _recipe('0.33.0')
    assert recipe['rocm'] == {'source': 'wheels', 'version': '10.0.0', 'package': 'rocm[libraries,devel]',
                              'index_url': AMD_INDEX, 'extra_index_urls': [AMD_NIGHTLY_INDEX],
                              'dockerfile': 'Dockerfile.rocm_base', 'stage': 'base', 'in_image': True}
    assert recipe['torch'] == {'source': 'wheels', 'version': '2.13.0+rocm10.0.0', 'index_url': AMD_INDEX,
                               'extra_index_urls': [AMD_NIGHTLY_INDEX], 'dockerfile': 'Dockerfile.rocm_base',
                               'stage': 'base', 'in_image': True}
    components = recipe['components']
    for name, version in (('torchvision', '0.28.0+rocm10.0.0'), ('torchaudio', '2.11.0+rocm10.0.0')):
        assert components[name] == {'source': 'wheels', 'version': version, 'index_url': AMD_INDEX,
                                    'extra_index_urls': [AMD_NIGHTLY_INDEX], 'dockerfile': 'Dockerfile.rocm_base',
                                    'stage': 'base', 'in_image': True}
    # Triton is still built from ROCm's fork, and the release states the version that build reports.
    assert components['triton'] == {'source': 'build', 'repo': ROCM_TRITON, 'ref': '669b31ac',
                                    'version': '3.8.0+git669b31ac', 'dockerfile': 'Dockerfile.rocm_base',
                                    'stage': 'build_triton', 'in_image': True}
    assert components['amdsmi']['path'] == '/usr/local/lib/python3.12/dist-packages/_rocm_sdk_core/share/amd_smi'
    assert components['amdsmi']['stage'] == 'base'
    assert recipe['compilers'] == {'gcc': None, 'gcc_stages': []}
    assert recipe['ppas'] == ['ppa:deadsnakes/ppa']
    assert recipe['device_packages'] == ['torch[device-<arch>]', 'torchvision[device-<arch>]', 'rocm[device-<arch>]']
    assert recipe['notes'] == {}


@pytest.mark.parametrize('pair_id', sorted(EXPECTED))
def test_aiter_and_triton_kernels(pair_id):
    components = _recipe(pair_id)['components']
    assert components['aiter']['gpu_archs'] == ['gfx942', 'gfx950']
    assert components['aiter']['use_system_triton'] is True
    kernels = components['triton_kernels']
    assert kernels['repo'] == ROCM_TRITON
    assert kernels['url'] == 'https://codeload.github.com/ROCm/triton/tar.gz/%s' % kernels['ref']
    assert kernels['path'] == 'python/triton_kernels/triton_kernels'
    assert kernels['src_dir'] == '/opt/rocm-triton-kernels'
    assert (kernels['dockerfile'], kernels['stage']) == ('Dockerfile.rocm', 'rocm-triton-kernels')


MINIMAL_BASE = '''ARG BASE_IMAGE=rocm/dev-ubuntu-24.04:7.1.1-complete
ARG PYTORCH_BRANCH="abc1234" # release/2.11
ARG PYTORCH_REPO="https://github.com/ROCm/pytorch.git"
ARG PYTHON_VERSION=3.12
FROM ${BASE_IMAGE} AS base
RUN pip install 'pybind11<3.1.0' wheel
FROM base AS build_pytorch
ARG PYTORCH_BRANCH
RUN git clone ${PYTORCH_REPO} pytorch && cd pytorch && git checkout ${PYTORCH_BRANCH}
FROM base AS final
RUN --mount=type=bind,from=build_pytorch,src=/app/install,target=/install pip install /install/*.whl
'''
MINIMAL_VLLM = '''ARG BASE_IMAGE=rocm/vllm-dev:base
FROM ${BASE_IMAGE} AS base
RUN uv pip install --system -r requirements/rocm.txt
'''


def test_minimal_pair_without_optional_components():
    recipe = vllm_rocm_recipe(MINIMAL_BASE, MINIMAL_VLLM)
    assert recipe['rocm'] == {'source': 'image', 'version': '7.1.1', 'image': 'rocm/dev-ubuntu-24.04:7.1.1-complete'}
    assert recipe['os'] == {'distribution': 'ubuntu', 'version': '24.04'}
    assert recipe['torch']['ref'] == 'abc1234' and recipe['torch']['in_image'] is True
    assert set(recipe['components']) == KNOWN_COMPONENTS
    assert all(entry is None for entry in recipe['components'].values())
    assert recipe['pins'] == {'pybind11': '<3.1.0'}
    assert recipe['compilers'] == {'gcc': None, 'gcc_stages': []}
    assert recipe['pytorch_rocm_arch'] is None
    # Without ROCM_TRITON_KERNELS_COMMIT, the note says where triton_kernels comes from.
    assert 'triton_kernels.cmake' in recipe['notes']['triton_kernels']


def test_unknown_repo_pair_is_reported_under_its_name():
    # A stage no other one uses: not in the image the file builds by default (its last stage, final).
    base = MINIMAL_BASE.replace('FROM base AS final\n', 'FROM base AS build_foo\n'
                                'ARG FOO_REPO=https://github.com/example/foo.git\nARG FOO_COMMIT=0123abc\n'
                                'RUN git clone ${FOO_REPO} && git -C foo checkout ${FOO_COMMIT}\n'
                                'FROM base AS final\n')
    widget = vllm_rocm_recipe(base, MINIMAL_VLLM)['components']['foo']
    assert widget == {'source': 'build', 'repo': 'https://github.com/example/foo.git', 'ref': '0123abc', 'version': None,
                      'dockerfile': 'Dockerfile.rocm_base', 'stage': 'build_foo', 'in_image': False}


def test_parser_joins_lines_skips_comments_and_expands():
    text = '''# a comment
ARG A="one" # trailing words are a comment
ARG B=${A}-two
ARG C=${UNSET:-fallback} D=${A:+set}
ARG SELECT=true
FROM scratch AS s_true
FROM scratch AS s_false
FROM s_${SELECT} AS first
RUN echo a \\
    # a comment inside the instruction

    && echo b
RUN <<EOF
echo inside a heredoc
EOF
COPY --from=s_false /x /y
'''
    parsed = parse_dockerfile(text, 'Dockerfile.test')
    assert parsed.args == {'A': 'one', 'B': 'one-two', 'C': 'fallback', 'D': 'set', 'SELECT': 'true'}
    first = parsed.stage('first')
    assert first['parent'] == 's_true' and first['uses'] == ['s_false']
    runs = [args for keyword, args, line in first['instructions'] if keyword == 'RUN']
    assert runs == ['echo a && echo b', '<<EOF\necho inside a heredoc']


@pytest.mark.parametrize('base, rocm, message', [
    ('', MINIMAL_VLLM, r'Dockerfile\.rocm_base: the text is empty'),
    ('  \n\n', MINIMAL_VLLM, r'Dockerfile\.rocm_base: the text is empty'),
    (MINIMAL_BASE, '', r'Dockerfile\.rocm: the text is empty'),
    (None, MINIMAL_VLLM, r'expected the text of docker/Dockerfile\.rocm_base, got NoneType'),
    (42, MINIMAL_VLLM, r'got int'),
    (MINIMAL_BASE.encode('utf-8'), MINIMAL_VLLM, r'got bytes'),
    (MINIMAL_BASE, ['FROM x'], r'expected the text of docker/Dockerfile\.rocm, got list'),
    ('name: vllm\nversion: 0.32.0\n', MINIMAL_VLLM, r'line 1: not a Dockerfile instruction'),
    ('ARG PYTHON_VERSION=3.12\n', MINIMAL_VLLM, r'no FROM instruction'),
    ('RUN true\nFROM x\n', MINIMAL_VLLM, r'line 1: RUN before the first FROM'),
    ('FROM ubuntu:22.04\nRUN true\n', MINIMAL_VLLM, r'needs ARG PYTHON_VERSION with a default'),
    (MINIMAL_BASE.replace('ARG PYTHON_VERSION=3.12\n', ''), MINIMAL_VLLM, r'needs ARG PYTHON_VERSION'),
    (MINIMAL_BASE.replace('=3.12', '=latest'), MINIMAL_VLLM, r"PYTHON_VERSION is 'latest'"),
    (MINIMAL_BASE.replace('ARG PYTORCH_BRANCH="abc1234" # release/2.11\n', ''), MINIMAL_VLLM,
     r'ARG PYTORCH_REPO is set but none of PYTORCH_BRANCH, PYTORCH_REF, PYTORCH_COMMIT'),
    (MINIMAL_BASE.replace('ARG PYTORCH_REPO="https://github.com/ROCm/pytorch.git"\n', ''), MINIMAL_VLLM,
     r'needs ARG PYTORCH_REPO with a default'),
    (re.sub(r'ARG PYTORCH_(BRANCH|REPO)=.*\n', '', MINIMAL_BASE), MINIMAL_VLLM,
     r'no PyTorch: neither ARG PYTORCH_REPO and PYTORCH_BRANCH .* nor ARG TORCH_VERSION'),
    (MINIMAL_BASE.replace('rocm/dev-ubuntu-24.04:7.1.1-complete', 'ubuntu:22.04'), MINIMAL_VLLM,
     r"cannot tell the ROCm version: the base image 'ubuntu:22.04'"),
    (MINIMAL_BASE, MINIMAL_BASE, r"no stage installs vLLM's requirements/rocm\.txt"),
    (MINIMAL_VLLM, MINIMAL_BASE, r"Dockerfile\.rocm: no stage installs vLLM's requirements/rocm\.txt"),
], ids=['empty', 'blank', 'empty-rocm', 'none', 'int', 'bytes', 'list', 'yaml', 'no-from', 'run-before-from',
        'no-args', 'no-python', 'python-not-a-version', 'repo-without-ref', 'ref-without-repo', 'no-torch',
        'no-rocm-version', 'base-twice', 'swapped'])
def test_errors_name_what_is_missing(base, rocm, message):
    with pytest.raises(RecipeError, match=message) as excinfo:
        vllm_rocm_recipe(base, rocm)
    assert isinstance(excinfo.value, ValueError)


def test_filter_reads_a_release_and_turns_errors_into_filter_errors():
    recipe_filter = FilterModule().filters()['vllm_rocm_recipe']
    recipe = recipe_filter(_read('0.32.0', 'Dockerfile.rocm_base'), _read('0.32.0', 'Dockerfile.rocm'))
    assert recipe['torch']['ref'] == '733fca1'
    assert recipe['components']['aiter']['ref'] == 'v0.1.24.post1'
    with pytest.raises(AnsibleFilterError, match=r'^vllm_rocm_recipe: Dockerfile\.rocm_base: the text is empty'):
        recipe_filter('', _read('0.32.0', 'Dockerfile.rocm'))
