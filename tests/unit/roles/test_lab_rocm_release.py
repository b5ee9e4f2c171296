# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab installs only what its stub repository serves (lab/packages/rocm.json): the molecule scenarios' base
configuration and the sandbox name a release of it with its amdgpu release, so that none falls back to the rocm
role's default (the ROCm of the default vLLM release's recipe, which the lab does not stub)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _yaml(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


with open(os.path.join(ROOT, 'lab', 'packages', 'rocm.json')) as _handle:
    LAB = dict((release, entry['amdgpu']['release']) for release, entry in json.load(_handle)['releases'].items())
BASE = _yaml('.config', 'molecule', 'config.yml')['provisioner']['inventory']['group_vars']['all']
SCENARIOS = sorted(os.path.basename(os.path.dirname(path)) for path in glob.glob(os.path.join(ROOT, 'molecule', '*', 'molecule.yml')))


def _pair(variables):
    return variables.get('rocm_version'), variables.get('rocm_amdgpu_version')


def test_the_base_configuration_names_a_release_of_the_lab():
    release, amdgpu = _pair(BASE)
    assert release in LAB and amdgpu == LAB[release], (release, amdgpu)


@pytest.mark.parametrize('scenario', SCENARIOS)
def test_each_scenario_installs_a_release_of_the_lab(scenario):
    """A scenario's own group_vars (molecule merges them over the base configuration's) keep a stubbed release."""
    config = _yaml('molecule', scenario, 'molecule.yml') or {}
    variables = dict(BASE, **(config.get('provisioner', {}).get('inventory', {}).get('group_vars', {}).get('all') or {}))
    release, amdgpu = _pair(variables)
    assert release in LAB and amdgpu == LAB[release], (scenario, release, amdgpu)
    for host, host_vars in sorted((config.get('provisioner', {}).get('inventory', {}).get('host_vars') or {}).items()):
        assert 'rocm_version' not in (host_vars or {}), (scenario, host)


def test_the_sandbox_names_a_release_of_the_lab():
    release, amdgpu = _pair(_yaml('inventories', 'sandbox', 'group_vars', 'all.yml'))
    assert release in LAB and amdgpu == LAB[release], (release, amdgpu)
