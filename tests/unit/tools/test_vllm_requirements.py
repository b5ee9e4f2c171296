# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""vLLM 0.32.0's requirements/rocm.txt (from its sdist, tests/unit/fixtures/vllm_dockerfiles/0.32.0/requirements/)
resolved by pip's resolver, offline, against stand-ins of what a build of the recipe makes and of PyPI as captured
(tests/unit/fixtures/vllm_requirements/0.32.0.json; tests/tools/vllm_requirements.py says how). The negative cases
prove the check fails when torchvision is not built or a pin conflicts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import concurrent.futures
import importlib.machinery
import importlib.util
import os

import pytest

TOOL = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'tools',
                    'vllm_requirements.py')
_LOADER = importlib.machinery.SourceFileLoader('vllm_requirements', TOOL)
vr = importlib.util.module_from_spec(importlib.util.spec_from_loader(_LOADER.name, _LOADER))
_LOADER.exec_module(vr)

RELEASE = '0.32.0'
VLLM_VERSION = '0.32.0+rocm723'


@pytest.fixture(scope='module')
def index(tmp_path_factory):
    """The stand-in index of the snapshot's packages, written once for the module."""
    return vr.write_index(str(tmp_path_factory.mktemp('index')), vr.load_snapshot(RELEASE))


@pytest.fixture(scope='module')
def recipe_build():
    return vr.recipe_build(vr.release_recipe(RELEASE))


def with_base(checkouts, component, base):
    changed = dict(checkouts)
    changed[component] = dict(checkouts[component], base=base)
    return changed


def without(build, component):
    return dict((name, ref) for name, ref in build.items() if name != component)


def scenarios(recipe):
    """name -> (build, checkouts, extra requirement lines): the recipe, and the ways it can go wrong."""
    checkouts = vr.checkouts_for(recipe)
    conflicting = dict(checkouts)
    conflicting['torchvision'] = dict(checkouts['torchvision'], requires=['numpy', 'torch==2.12.0', 'pillow'])
    role = vr.role_build()
    return {
        'recipe': (recipe, checkouts, ()),
        'recipe-prerelease-torch': (recipe, with_base(checkouts, 'torch', '2.13.0a0'), ()),
        'no-torchvision': (without(recipe, 'torchvision'), checkouts, ()),
        'no-torchvision-prerelease-torch': (without(recipe, 'torchvision'), with_base(checkouts, 'torch', '2.13.0a0'), ()),
        'torchvision-pinned-to-another-torch': (recipe, conflicting, ()),
        'requirement-pins-triton-elsewhere': (recipe, checkouts, ('triton==3.7.1',)),
        'role': (role, vr.checkouts_for(role), ()),
    }


@pytest.fixture(scope='module')
def outcomes(index, recipe_build, tmp_path_factory):
    """Every scenario resolved once, side by side (each is one pip process of several seconds): name -> (report or
    None, problems)."""
    def run(name, build, checkouts, extra_lines):
        return vr.check(RELEASE, list(build), checkouts, '3.12', VLLM_VERSION, str(tmp_path_factory.mktemp(name)),
                        index=index, extra_lines=extra_lines)
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        futures = dict((name, pool.submit(run, name, *args)) for name, args in scenarios(recipe_build).items())
        return dict((name, future.result()) for name, future in futures.items())


def resolved(report):
    return dict((item['metadata']['name'], item['metadata']['version']) for item in report['install'])


# -- inputs ---------------------------------------------------------------------------------------------------------

def test_requirement_lines_are_what_setup_py_declares():
    lines = vr.requirement_lines(os.path.join(vr.DOCKERFILES, RELEASE, 'requirements'))
    assert 'timm>=1.0.17' in lines
    assert 'numba == 0.65.0' in lines  # the inline comment is dropped, as setuptools does
    assert 'regex' in lines  # from common.txt, through -r
    assert not [line for line in lines if line.startswith(('-', '#')) or '#' in line]
    assert len(lines) == 78  # 58 lines of common.txt, 20 of rocm.txt


@pytest.mark.parametrize('component, ref, expected', [
    ('torch', '733fca1', '2.13.0+git733fca1'),
    ('triton', '669b31a', '3.8.0+git669b31ac'),
    ('torchvision', 'v0.28.0', '0.28.0+8fb8771'),
    ('torchaudio', 'v2.11.0', '2.11.0+34c52a6'),
    # vLLM 0.29.0's published ROCm wheels, built by the same Dockerfile.rocm_base: the rules give their names.
    ('torch', '6bbd260', '2.12.0+git6bbd260'),
    ('triton', 'f0b55c0', '3.7.1+gitf0b55c07'),
    ('torchvision', 'v0.27.1', '0.27.1+df56172'),
    ('amdsmi', 'rocm-7.2.3', '26.2.2+c2d9476115'),
    ('flash_attention', '0e60e394', '2.8.3'),
], ids=str)
def test_a_build_writes_this_version(component, ref, expected):
    entry = vr.load_checkouts()[component][ref]
    assert vr.built_version(component, str(entry['base']), str(entry['commit'])) == expected


def test_the_recipe_of_0_32_0_builds_these(recipe_build):
    assert recipe_build == {'torch': '733fca1', 'triton': '669b31a', 'torchvision': 'v0.28.0', 'torchaudio': 'v2.11.0',
                            'amdsmi': 'rocm-7.2.3', 'flash_attention': '0e60e394', 'aiter': 'v0.1.24.post1'}


def test_the_snapshot_is_closed_for_the_recipes_python():
    snapshot = vr.load_snapshot(RELEASE)
    assert snapshot['python_version'] == vr.release_recipe(RELEASE)['python_version']
    assert vr.closure_gaps(snapshot) == []


def test_markers_are_evaluated_for_the_recipes_python_not_this_one():
    environment = vr.target_environment('3.12')
    assert vr.flatten("six>=1.16.0; python_version > '3.11'", environment) == ['six>=1.16.0']
    assert vr.flatten('tomli; python_version < "3.11"', environment) == []
    assert vr.flatten('scipy; extra == "scipy"', environment, ['scipy']) == ['scipy ; extra == "scipy"']
    assert vr.flatten('xgrammar == 0.2.8; platform_machine == "x86_64"', environment) == ['xgrammar==0.2.8']


# -- the recipe resolves --------------------------------------------------------------------------------------------

@pytest.mark.parametrize('scenario, torch_version', [
    ('recipe', '2.13.0+git733fca1'), ('recipe-prerelease-torch', '2.13.0a0+git733fca1'),
], ids=['release-branch-torch', 'development-branch-torch'])
def test_the_recipe_of_0_32_0_resolves(outcomes, scenario, torch_version):
    report, found = outcomes[scenario]
    assert found == []
    versions = resolved(report)
    assert versions['torch'] == torch_version
    assert versions['torchvision'] == '0.28.0+8fb8771'
    assert versions['timm'] and versions['transformers'] and versions['vllm'] == VLLM_VERSION


# -- and the check fails when it should -----------------------------------------------------------------------------

def test_without_torchvision_pypis_torchvision_is_refused(outcomes):
    """torch 2.13.0+git733fca1 satisfies PyPI's torchvision 0.28.0 pin (torch==2.13.0): pip resolves, and takes a
    torchvision compiled against stock torch. The check names it."""
    report, found = outcomes['no-torchvision']
    assert resolved(report)['torchvision'] == '0.28.0'
    assert len(found) == 1
    assert found[0].startswith('torchvision 0.28.0 comes from the index')
    assert 'requires torch==2.13.0' in found[0]


def test_without_torchvision_a_prerelease_torch_does_not_resolve(outcomes):
    """torch 2.13.0a0+git733fca1 satisfies no torchvision on PyPI: timm cannot be installed."""
    report, found = outcomes['no-torchvision-prerelease-torch']
    assert report is None
    assert found and all(line.startswith('pip cannot resolve vLLM 0.32.0\'s requirements') for line in found)
    assert any('timm' in line and 'conflicting dependencies' in line for line in found), found


def test_a_built_torchvision_pinned_to_another_torch_does_not_resolve(outcomes):
    """torchvision built with PYTORCH_VERSION of another torch pins it: a conflict with the torch that was built."""
    report, found = outcomes['torchvision-pinned-to-another-torch']
    assert report is None
    assert any('conflicting dependencies' in line for line in found), found


def test_a_requirement_pinning_a_built_package_elsewhere_does_not_resolve(outcomes):
    report, found = outcomes['requirement-pins-triton-elsewhere']
    assert report is None
    assert any('triton' in line for line in found), found


# -- what the engine_build role builds --------------------------------------------------------------------------------

def test_the_role_is_read_as_it_builds():
    """The role's defaults take vLLM 0.32.0's own refs from its recipe table, and build amdsmi from the builder's ROCm."""
    assert vr.role_build() == {'torch': '733fca1', 'triton': '669b31a', 'torchvision': 'v0.28.0', 'torchaudio': 'v2.11.0',
                               'amdsmi': 'rocm-7.2.3'}


def test_what_the_role_builds_resolves_the_pinned_releases_requirements(outcomes):
    """torchvision built against the role's torch: timm takes it, and nothing comes from the index built for a stock torch."""
    report, found = outcomes['role']
    assert report is not None and found == [], '\n'.join(found)
    assert resolved(report)['torchvision'].startswith('0.28.0+')


def test_the_toolchains_build_tools_satisfy_the_recipes_pins():
    """vLLM's base installs its build tools with pins (pybind11<3.1.0, setuptools<80, cmake<4): the toolchain role's
    pinned versions must satisfy them, or the build runs with tools upstream excluded."""
    with open(os.path.join(vr.ROOT, 'roles', 'toolchain', 'defaults', 'main.yml')) as handle:
        pinned = dict(line.split('==') for line in vr.yaml.safe_load(handle)['toolchain_python_packages'])
    pinned = dict((vr.canonicalize_name(name), version) for name, version in pinned.items())
    pins = vr.release_recipe(RELEASE)['pins']
    checked = [name for name in pins if name in pinned]
    assert set(checked) >= {'pybind11', 'setuptools', 'cmake'}
    for name in checked:
        assert vr.SpecifierSet(pins[name]).contains(pinned[name]), '%s==%s is outside %s' % (name, pinned[name], pins[name])
