# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The support table the preflight role judges nodes against: the rows AMD's documents give (see the module's
docstring for the quotes), GPU names as ROCm's tools and lspci print them (captured outputs under
tests/unit/fixtures), and vLLM's Python ranges against the ROCm images of the same releases (the Dockerfile
fixtures)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils import _support_matrix as matrix
from ansible_collections.llmfleet.rocm.plugins.module_utils import _lspci as lspci
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.vllm_recipe import vllm_rocm_recipe

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures')


@pytest.mark.parametrize('series, system, model, verdict', [
    # The facts of issue 36, item 8.
    ('7.1', 'Debian-12', 'MI355X', 'unsupported'),
    ('7.1', 'Debian-12', 'MI350X', 'unsupported'),
    ('7.1', 'Debian-12', 'MI325X', 'supported'),
    ('7.1', 'Debian-12', 'MI300X', 'supported'),
    ('7.1', 'Debian-12', 'MI210', 'supported'),
    ('7.1', 'Debian-12', 'MI100', 'unsupported'),
    ('7.0', 'Debian-12', 'MI325X', 'unsupported'),
    ('7.0', 'Debian-12', 'MI300X', 'supported'),
    ('7.0', 'Debian-12', 'MI355X', 'unsupported'),
    ('7.2', 'Debian-12', 'MI355X', 'supported'),
    ('7.2', 'Debian-12', 'MI210', 'unsupported'),
    ('7.0', 'Ubuntu-22', 'MI355X', 'supported'),
    ('7.1', 'Ubuntu-24', 'MI100', 'supported'),
    ('7.2', 'Ubuntu-22', 'MI325X', 'supported'),
    ('6.4', 'Ubuntu-22', 'MI300X', 'unknown'),
    ('7.1', 'Rocky-9', 'MI300X', 'unknown'),
], ids=str)
def test_matrix_rows(series, system, model, verdict):
    assert matrix.judge_gpu(series, system, (model,)) == verdict


def test_every_series_and_the_exporter_name_a_source():
    for series in matrix.ROCM_MATRIX:
        source = matrix.SOURCES['rocm_%s' % series]
        assert source['url'].startswith('https://') and source['file'] and source['says']
    assert matrix.SOURCES['exporter']['url'].startswith('https://')
    assert 'Ubuntu 22.04 or Ubuntu 24.04' in matrix.SOURCES['exporter']['says']
    assert matrix.EXPORTER_SYSTEMS == ('Ubuntu-22', 'Ubuntu-24')


def test_every_row_holds_instinct_gpus_of_the_collection_systems():
    for systems in matrix.ROCM_MATRIX.values():
        assert sorted(systems) == sorted(matrix.SYSTEM_NAMES)
        for models in systems.values():
            assert set(models) <= set(matrix.INSTINCT_TARGETS)


def test_a_series_of_candidates_is_judged_as_a_whole():
    # gfx90a without a model: MI250X, MI250 and MI210; ROCm 7.2 on Debian 12 leaves out MI210 only.
    assert matrix.judge_gpu('7.2', 'Debian-12', ('MI250X', 'MI250', 'MI210')) == 'unknown'
    assert matrix.judge_gpu('7.1', 'Debian-12', ('MI250X', 'MI250', 'MI210')) == 'supported'
    assert matrix.judge_gpu('7.1', 'Debian-12', ('MI355X', 'MI350X')) == 'unsupported'
    assert matrix.judge_gpu('7.1', 'Debian-12', ()) == 'unknown'


def test_supported_elsewhere():
    assert matrix.supported_elsewhere('MI355X', '7.1', 'Debian-12') == (['Ubuntu-22', 'Ubuntu-24'], ['7.2'])
    assert matrix.supported_elsewhere('MI325X', '7.0', 'Debian-12') == (['Ubuntu-22', 'Ubuntu-24'], ['7.1', '7.2'])


@pytest.mark.parametrize('name, gfx_target, models', [
    ('AMD Instinct MI300X', 'gfx942', ('MI300X',)),
    ('AMD Instinct MI300X VF', 'gfx942', ('MI300X',)),
    ('AMD Proto Sample : SH5-MI300A-A0', 'gfx940', ('MI300A',)),
    ('AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2', 'gfx90a', ('MI250X', 'MI250', 'MI210')),
    ('Aldebaran/MI200 [Instinct MI250X/MI250]', None, ('MI250X', 'MI250')),
    ('Instinct MI210', None, ('MI210',)),
    ('AMD Instinct MI308X', 'gfx942', ()),
    ('AMD Radeon PRO W7900', 'gfx1100', ()),
    (None, 'gfx950', ('MI355X', 'MI350X')),
    ('', None, ()),
], ids=['mi300x', 'mi300x-vf', 'mi300a-proto', 'mi250x-as-mi200', 'pci-mi250x-mi250', 'mi210', 'mi308x', 'radeon',
        'gfx950-unnamed', 'nothing'])
def test_gpu_candidates(name, gfx_target, models):
    assert matrix.gpu_candidates(name, gfx_target)[0] == models


def test_gpu_names_of_captured_rocminfo_outputs():
    # Marketing names as tests/unit/fixtures/rocminfo holds them (see their notes).
    names = {}
    directory = os.path.join(FIXTURES, 'rocminfo')
    for fixture in sorted(os.listdir(directory)):
        with open(os.path.join(directory, fixture)) as handle:
            for line in handle:
                if line.strip().startswith('Marketing Name:') and 'Instinct' in line:
                    names[line.split(':', 1)[1].strip()] = fixture
    assert names, 'no Instinct GPU in the rocminfo fixtures'
    for name in names:
        models, named = matrix.gpu_candidates(name)
        assert models and set(models) <= set(matrix.INSTINCT_TARGETS), (name, names[name])
        assert named


def test_gpu_names_of_captured_lspci_outputs():
    with open(os.path.join(FIXTURES, 'lspci', 'mi300x-8-gpus-pp.txt')) as handle:
        devices = lspci.parse_lspci(handle.read())['devices']
    gpus = [dev for dev in devices if dev['address'] in lspci.summarize(devices)['gpus']]
    assert len(gpus) == 8
    assert set(matrix.gpu_candidates(dev['description'])[0] for dev in gpus) == {('MI300X',)}


@pytest.mark.parametrize('version, series', [('7.1.1', '7.1'), ('7.0.2', '7.0'), ('7.2.3-71', '7.2'), ('v7.1', '7.1'),
                                             ('', None), (None, None), ('latest', None)])
def test_rocm_series(version, series):
    assert matrix.rocm_series(version) == series


@pytest.mark.parametrize('text, version', [('3.10.12\n', (3, 10, 12)), ('Python 3.11.2', (3, 11, 2)), ('3.12', (3, 12, 0)),
                                           ('', None), ('python3: not found', None)])
def test_python_version(text, version):
    assert matrix.python_version(text) == version


def test_vllm_python_ranges():
    assert matrix.vllm_python_range('0.32.0') == ((3, 11), (3, 15))
    assert matrix.vllm_python_range('0.32.0+cpu') == ((3, 11), (3, 15))
    assert matrix.vllm_python_range('0.31.0') == ((3, 10), (3, 15))
    assert matrix.vllm_python_range('0.34.0') is None
    assert matrix.format_range(matrix.vllm_python_range('0.32.0')) == '>=3.11,<3.15'


@pytest.mark.parametrize('release', sorted(os.listdir(os.path.join(FIXTURES, 'vllm_dockerfiles'))))
def test_each_release_image_python_is_in_its_range(release):
    """A release in the table has its ROCm Dockerfiles as fixtures, and the Python its image uses is in its range."""
    directory = os.path.join(FIXTURES, 'vllm_dockerfiles', release)
    with open(os.path.join(directory, 'Dockerfile.rocm_base')) as base, open(os.path.join(directory, 'Dockerfile.rocm')) as rocm:
        recipe = vllm_rocm_recipe(base.read(), rocm.read())
    low, high = matrix.vllm_python_range(release)
    image_python = tuple(int(part) for part in recipe['python_version'].split('.'))
    assert low <= image_python < high
    assert sorted(matrix.VLLM_PYTHON) == sorted(os.listdir(os.path.join(FIXTURES, 'vllm_dockerfiles')))


def test_system_key():
    assert matrix.system_key('Debian-12') == 'Debian-12'
    assert matrix.system_key('debian-12') == 'Debian-12'
    assert matrix.system_key('Rocky-9') is None
