# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every input rule of the engine_build role, triggered and quiet."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.engine_build import RULES, engine_build_input_problems
from input_rules import ROOT, Case, assert_every_rule_reached, role_defaults, run_case

# The publish directory's default is templated (the controller's $HOME): as a play sees it.
VALUES = dict(role_defaults('engine_build'), engine_build_publish_dir='/home/ops/llmfleet-wheelhouse')
# The build Python's own version, as the toolchain role asks it.
PY311 = '3.11'


with open(os.path.join(ROOT, 'roles', 'engine_build', 'vars', 'main.yml')) as _handle:
    RELEASES = yaml.safe_load(_handle)['_engine_build_releases']
# The lab's build (molecule/build): the main branches of its own stand-in repositories (triton_kernels from Triton's).
LAB_SOURCES = dict(('engine_build_%s_%s' % (name, field), 'main' if field == 'ref' else 'http://lab/%s.git' % name)
                   for name in ('pytorch', 'triton', 'torchvision', 'torchaudio', 'triton_kernels', 'vllm')
                   for field in ('repo', 'ref'))


def _component(name, **changes):
    component = {'name': name, 'repo': 'https://github.com/ROCm/%s.git' % name, 'ref': 'main',
                 'steps': [['python3', 'setup.py', 'bdist_wheel', '--dist-dir=dist']], 'subdir': [''], 'env': {}, 'install': False}
    component.update(changes)
    return component


def _node(targets=('gfx942',), system=('Debian', '12'), rocm_version='7.1.1'):
    """ansible_facts of a GPU node after build.yml's first play (rocm_facts and the min subset); Debian 12 unless given,
    whose engine Python for vLLM 0.32 is its own 3.11 (the per-system table)."""
    return {'distribution': system[0], 'distribution_major_version': system[1],
            'rocm': {'gpu_count': len(targets), 'gfx_targets': list(targets), 'rocm_version': rocm_version}}


UBUNTU_22 = ('Ubuntu', '22')


def _tree(name, path, *files):
    """One result of the find loop over the path components."""
    return {'item': {'name': name, 'path': path},
            'files': [{'path': '%s/%s' % (path.rstrip('/'), f), 'checksum': '0' * 40} for f in files]}


def _ref(name, after, ref='main'):
    """One result of the ansible.builtin.git ls-remote loop."""
    return {'item': {'name': name, 'repo': 'https://github.com/ROCm/%s.git' % name, 'ref': ref}, 'after': after, 'before': None}


COMPONENTS = [_component('pytorch'), _component('triton'), _component('vllm')]
FLEET = {'gpu-node-1': _node(), 'gpu-node-2': _node()}
CTX = {'arch': ['gfx942'], 'components': COMPONENTS, 'fleet': FLEET, 'python': PY311, 'rocm_release': None, 'refs': None}

CASES = [
    Case('no-arch-hosts-without-facts', {}, 'engine_build-no-arch', {'arch': [], 'fleet': {'gpu-node-1': {}, 'gpu-node-2': {}}},
         contains=['No GPU target to build for: engine_build_rocm_arch is empty',
                   'gpu-node-1, gpu-node-2 of group gpu_nodes did not report ansible_facts.rocm']),
    Case('no-arch-empty-group', {'engine_build_gpu_group': 'gpus'}, 'engine_build-no-arch', {'arch': [], 'fleet': {}},
         contains='group gpus has no host'),
    Case('no-arch-no-gpus', {}, 'engine_build-no-arch', {'arch': [], 'fleet': {'gpu-node-1': _node(targets=())}},
         contains='report no GPU target'),
    Case('arch-from-facts', {}, 'engine_build-no-arch', absent=True),
    Case('facts-missing', {}, 'engine_build-facts-missing', {'fleet': dict(FLEET, **{'gpu-node-3': {}})},
         contains='Facts of gpu-node-3 are missing'),
    Case('facts-missing-arch-given', {'engine_build_rocm_arch': ['gfx942']}, 'engine_build-facts-missing',
         {'fleet': dict(FLEET, **{'gpu-node-3': {}})}, absent=True),
    Case('facts-complete', {}, 'engine_build-facts-missing', absent=True),
    Case('arch-unknown', {'engine_build_rocm_arch': ['gfx9010', 'gfx942:xnack']}, 'engine_build-arch-unknown',
         {'arch': ['gfx9010', 'gfx942:xnack']}, contains='engine_build_rocm_arch has unknown targets gfx9010, gfx942:xnack'),
    Case('arch-features', {'engine_build_rocm_arch': ['gfx90a:xnack-', 'gfx942']}, 'engine_build-arch-unknown',
         {'arch': ['gfx90a:xnack-', 'gfx942']}, absent=True),
    # A Debian 12 builder (3.11) for an Ubuntu 22.04 node, which the engine role gives deadsnakes' 3.12 for vLLM 0.32.
    Case('python-other', {}, 'engine_build-python-mismatch',
         {'fleet': dict(FLEET, **{'gpu-node-2': _node(system=UBUNTU_22)}), 'releases': RELEASES},
         contains=['The wheels would be built for Python 3.11 (toolchain_python on the builder), but the engine role gives'
                   ' gpu-node-2 (3.12) another Python', 'engine_python_version on the nodes to 3.11']),
    Case('python-other-asked-on-node', {}, 'engine_build-python-mismatch',
         {'engines': {'gpu-node-1': ['', '3.12', '0.32.0']}, 'fleet': {'gpu-node-1': _node(system=UBUNTU_22)},
          'releases': RELEASES}, contains='gpu-node-1 (3.12)'),
    Case('python-same', {}, 'engine_build-python-mismatch', {'releases': RELEASES}, absent=True),
    Case('python-path-on-node', {}, 'engine_build-python-mismatch',
         {'engines': {'gpu-node-2': ['/opt/python3.11/bin/python3', '', '']},
          'fleet': dict(FLEET, **{'gpu-node-2': _node(system=UBUNTU_22)}), 'releases': RELEASES}, absent=True),
    Case('python-unknown-on-node', {}, 'engine_build-python-mismatch', {'fleet': {'gpu-node-1': {'rocm': _node()['rocm']}}},
         absent=True),
    Case('python-not-asked-yet', {}, 'engine_build-python-mismatch',
         {'python': None, 'fleet': dict(FLEET, **{'gpu-node-2': _node(system=UBUNTU_22)}), 'releases': RELEASES}, absent=True),
    Case('component-without-steps', {}, 'engine_build-components-incomplete',
         {'components': [_component('pytorch'), {'name': 'vllm', 'repo': 'https://github.com/vllm-project/vllm.git', 'ref': 'main'}]},
         contains='engine_build_components has entries without repo and ref (or path) or without steps: "vllm"'),
    Case('path-and-export-components-complete', {}, 'engine_build-components-incomplete',
         {'components': [{'name': 'amdsmi', 'path': '/opt/rocm/share/amd_smi', 'steps': [['python3', '-m', 'pip', 'wheel', '.']]},
                         {'name': 'triton_kernels', 'repo': 'r', 'ref': 'main', 'export': 'python/triton_kernels/triton_kernels'}]},
         absent=True),
    Case('component-without-name-and-ref', {}, 'engine_build-components-incomplete',
         {'components': [{'repo': 'https://example.invalid/x.git', 'steps': []}]}, contains=': #1.'),
    Case('components-complete', {}, 'engine_build-components-incomplete', absent=True),
    Case('component-names-twice', {}, 'engine_build-component-names', {'components': [_component('vllm'), _component('vllm')]},
         contains='Component names must be distinct, lower-case words: "vllm", "vllm".'),
    Case('component-name-upper', {}, 'engine_build-component-names', {'components': [_component('PyTorch')]}, contains='"PyTorch"'),
    Case('component-name-missing', {}, 'engine_build-component-names', {'components': [{'repo': 'r', 'ref': 'main', 'steps': []}]},
         contains='null'),
    Case('component-names-fine', {}, 'engine_build-component-names',
         {'components': COMPONENTS + [_component('flash_attention')]}, absent=True),
    Case('aiter-without-target', {'engine_build_aiter': True}, 'engine_build-aiter-arch', {'arch': ['gfx90a']},
         contains='engine_build_aiter is on but none of engine_build_aiter_arch (gfx942, gfx950) is in the architecture list (gfx90a)'),
    Case('aiter-with-target', {'engine_build_aiter': True}, 'engine_build-aiter-arch', {'arch': ['gfx90a', 'gfx942']}, absent=True),
    Case('aiter-off', {}, 'engine_build-aiter-arch', {'arch': ['gfx90a']}, absent=True),
    Case('extra-packages-loose', {'engine_build_extra_packages': ['ray>=2.48', 'ray==2.60.0', 'x==1\nrm']},
         'engine_build-extra-packages', contains=['"ray>=2.48"', 'name==version']),
    Case('extra-packages-not-a-list', {'engine_build_extra_packages': 'ray==2.60.0'}, 'engine_build-extra-packages',
         contains='must be a list'),
    Case('extra-packages-pinned', {'engine_build_extra_packages': ['ray[default]==2.60.0', 'py-spy==0.4.1']},
         'engine_build-extra-packages', absent=True),
    Case('max-jobs-negative', {'engine_build_max_jobs': -1}, 'engine_build-max-jobs',
         contains='engine_build_max_jobs -1 must be 0 (computed) or more'),
    Case('max-jobs-word', {'engine_build_max_jobs': 'all'}, 'engine_build-max-jobs', contains='"all"'),
    Case('max-jobs-given', {'engine_build_max_jobs': 12}, 'engine_build-max-jobs', absent=True),
    Case('keep-zero', {'engine_build_keep': 0}, 'engine_build-counts',
         contains=['engine_build_timeout, engine_build_poll_interval and engine_build_keep must be 1 or more',
                   'engine_build_keep is 0']),
    Case('timeout-and-interval', {'engine_build_timeout': 0, 'engine_build_poll_interval': '-5'}, 'engine_build-counts',
         contains='engine_build_timeout is 0, engine_build_poll_interval is "-5"'),
    Case('counts-fine', {'engine_build_timeout': 1, 'engine_build_poll_interval': '3', 'engine_build_keep': 1},
         'engine_build-counts', absent=True),
    Case('dir-relative', {'engine_build_dir': 'var/lib/build'}, 'engine_build-dir-absolute', contains='"var/lib/build"'),
    Case('dir-root', {'engine_build_dir': '/'}, 'engine_build-dir-absolute'),
    Case('dir-absolute', {'engine_build_dir': '/srv/build/'}, 'engine_build-dir-absolute', absent=True),
    Case('publish-relative', {'engine_build_publish_dir': 'wheelhouse'}, 'engine_build-publish-dir-absolute',
         contains='engine_build_publish_dir "wheelhouse" must be an absolute path on the controller, or ""'),
    Case('publish-none', {'engine_build_publish_dir': ''}, 'engine_build-publish-dir-absolute', absent=True),
    Case('publish-absolute', {}, 'engine_build-publish-dir-absolute', absent=True),
    Case('other-rocm', {}, 'engine_build-other-rocm',
         {'rocm_release': '7.1.1', 'fleet': dict(FLEET, **{'gpu-node-2': _node(rocm_version='7.0.2')})},
         contains='The builder has ROCm 7.1.1 but gpu-node-2 run another release: converge playbooks/driver.yml'),
    Case('rocm-unknown-on-node', {}, 'engine_build-other-rocm',
         {'rocm_release': '7.1.1', 'fleet': {'gpu-node-1': _node(rocm_version=None)}}, contains='but gpu-node-1 run'),
    Case('same-rocm', {}, 'engine_build-other-rocm', {'rocm_release': '7.1.1'}, absent=True),
    Case('rocm-not-read-yet', {}, 'engine_build-other-rocm', {'fleet': {'gpu-node-1': _node(rocm_version='7.0.2')}}, absent=True),
    Case('ref-unresolved', {}, 'engine_build-ref-unresolved',
         {'refs': [_ref('pytorch', '8514f051aa'), _ref('vllm', 'v9.9.9', ref='v9.9.9')]},
         contains=['vllm ref "v9.9.9" of https://github.com/ROCm/vllm.git', 'neither a branch nor a tag']),
    Case('ref-not-returned', {}, 'engine_build-ref-unresolved', {'refs': [_ref('triton', None)]}, contains='triton ref "main"'),
    Case('refs-resolved', {}, 'engine_build-ref-unresolved',
         {'refs': [_ref('pytorch', '8514f051'), _ref('vllm', '0123456789abcdef0123456789abcdef01234567')]}, absent=True),
    Case('refs-not-resolved-yet', {}, 'engine_build-ref-unresolved', absent=True),
    Case('ref-of-a-path-component-skipped', {}, 'engine_build-ref-unresolved',
         {'refs': [_ref('pytorch', '8514f051'), {'item': {'name': 'amdsmi', 'path': '/opt/rocm/share/amd_smi'}, 'skipped': True}]},
         absent=True),
    Case('path-empty', {}, 'engine_build-path-empty',
         {'trees': {'results': [_tree('amdsmi', '/opt/rocm/share/amd_smi', 'README', 'amdsmi/__init__.py')]}},
         contains=['amdsmi (/opt/rocm/share/amd_smi): no pyproject.toml or setup.py there', 'engine_build_amdsmi_path']),
    Case('path-missing', {}, 'engine_build-path-empty', {'trees': {'results': [_tree('amdsmi', '/opt/rocm/share/amd_smi')]}}),
    Case('path-a-project', {}, 'engine_build-path-empty',
         {'trees': {'results': [_tree('amdsmi', '/opt/rocm/share/amd_smi/', 'pyproject.toml', 'amdsmi/__init__.py')]}},
         absent=True),
    Case('path-not-read-yet', {}, 'engine_build-path-empty', absent=True),
    Case('recipe-of-the-default-release', {}, 'engine_build-recipe', {'releases': RELEASES}, absent=True),
    Case('recipe-of-a-release-with-rocm-10', {'engine_build_vllm_ref': 'v0.33.0'}, 'engine_build-recipe',
         {'releases': RELEASES}, contains=['vLLM 0.33.0 cannot be built from its own recipe here: its ROCm is 10.0.0',
                                           'the collection supports ROCm 7.x']),
    Case('recipe-none-for-a-branch', {'engine_build_vllm_ref': 'main'}, 'engine_build-recipe', {'releases': RELEASES},
         contains='engine_build_vllm_ref main is not a release of the recipe table (0.30.0, 0.31.0, 0.32.0, 0.33.0)'),
    Case('recipe-not-needed-for-the-labs-branch', LAB_SOURCES, 'engine_build-recipe', {'releases': RELEASES}, absent=True),
    Case('recipe-not-needed-for-a-whole-recipe', {'engine_build_vllm_ref': 'main', 'engine_build_components': COMPONENTS},
         'engine_build-recipe', {'releases': RELEASES}, absent=True),
    Case('recipe-unknown', {'engine_build_recipe': '0.1.0'}, 'engine_build-recipe', {'releases': RELEASES},
         contains='engine_build_recipe 0.1.0 is not a release of the recipe table'),
    Case('recipe-table-not-given', {'engine_build_vllm_ref': 'main'}, 'engine_build-recipe', absent=True),
]


@pytest.mark.parametrize('case', CASES, ids=[case.id for case in CASES])
def test_rule(case):
    run_case(RULES, VALUES, CTX, case)


def test_defaults_have_no_problem():
    assert engine_build_input_problems(VALUES, ['gfx942'], COMPONENTS, FLEET) == []
    assert engine_build_input_problems(VALUES, ['gfx942'], COMPONENTS, FLEET, releases=RELEASES) == []
    assert engine_build_input_problems(VALUES, ['gfx942'], COMPONENTS, FLEET, PY311, rocm_release='7.1.1',
                                       refs=[_ref(c['name'], '8514f051') for c in COMPONENTS], releases=RELEASES,
                                       engines={'gpu-node-1': ['', '', ''], 'gpu-node-2': ['', '', '0.32.0']},
                                       trees={'results': [_tree('amdsmi', '/opt/rocm/share/amd_smi', 'pyproject.toml')]}) == []


def test_every_rule_is_reached():
    assert_every_rule_reached(RULES, CASES)
