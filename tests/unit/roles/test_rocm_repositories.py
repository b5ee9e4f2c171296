# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""AMD's repositories of the rocm role: the rule (plugin_utils/amd_repositories.py), the public filter, and what the
role's deb822 task is given on each supported system, rendered from the role's own vars and task with Ansible's
templar. The lab's hosts are Debian 12 only; Ubuntu 22.04 and 24.04 are proven here.

AMD's ROCm 7.x package-manager instructions (ROCm/rocm-install-on-linux, docs/install/install-methods/package-manager/
package-manager-ubuntu.rst and package-manager-debian.rst; suites from docs/conf.py: Ubuntu 22.04 jammy, 24.04 noble,
Debian 12 jammy) register, with signed-by the one key:
    deb [arch=amd64 signed-by=...] https://repo.radeon.com/rocm/apt/<ROCm release> <suite> main
    deb [arch=amd64 signed-by=...] https://repo.radeon.com/graphics/<ROCm release>/ubuntu <suite> main
and the driver's instructions amdgpu/<amdgpu release>/ubuntu with the same suite.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from role_files import ROOT, trusted as _trusted  # the collection loader is installed by role_files

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.rocm_release import rocm_repositories  # noqa: E402
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.amd_repositories import (  # noqa: E402
    graphics_wanted, node_repositories, repository_path)

ROLE = os.path.join(ROOT, 'roles', 'rocm')
AMD = 'https://repo.radeon.com'


def _yaml(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


PLATFORMS = _yaml('roles', '_common', 'vars', 'main.yml')['_common_platforms']


# --------------------------------------------------------------------------------------------------
# The rule
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('version, setting, wanted', [
    ('7.0.0', None, True), ('7.0', None, True), ('7.1.1', None, True), ('7.2.3', None, True), ('8.0', None, True),
    ('6.4.3', None, False), ('6.0', None, False),
    ('7.1.1', False, False), ('6.4.3', True, True),
    ('latest', None, False), ('', None, False), (None, None, False), ('7.1.1', 'yes', True),
], ids=['7.0.0', '7.0', '7.1.1', '7.2.3', '8.0', '6.4.3', '6.0', 'opted-out', 'opted-in-on-6', 'word', 'empty', 'none',
        'not-a-bool-follows-amd'])
def test_graphics_from_rocm_7_0_unless_said_otherwise(version, setting, wanted):
    assert graphics_wanted(version, setting) is wanted


@pytest.mark.parametrize('kind, release, path', [
    ('rocm', '7.1.1', 'rocm/apt/7.1.1'), ('graphics', '7.1.1', 'graphics/7.1.1/ubuntu'),
    ('amdgpu', '30.20.1', 'amdgpu/30.20.1/ubuntu'), ('exporter', '1.4.0', 'device-metrics-exporter/apt/1.4.0'),
], ids=['rocm', 'graphics', 'amdgpu', 'exporter'])
def test_amd_s_paths(kind, release, path):
    assert repository_path(kind, release) == path


def test_the_filter_gives_rocm_graphics_then_amdgpu():
    assert rocm_repositories(AMD + '/', '7.1.1', '30.20.1') == [
        {'name': 'rocm', 'kind': 'rocm', 'release': '7.1.1', 'path': 'rocm/apt/7.1.1', 'uri': AMD + '/rocm/apt/7.1.1'},
        {'name': 'amdgraphics', 'kind': 'graphics', 'release': '7.1.1', 'path': 'graphics/7.1.1/ubuntu',
         'uri': AMD + '/graphics/7.1.1/ubuntu'},
        {'name': 'amdgpu', 'kind': 'amdgpu', 'release': '30.20.1', 'path': 'amdgpu/30.20.1/ubuntu',
         'uri': AMD + '/amdgpu/30.20.1/ubuntu'},
    ]


@pytest.mark.parametrize('args, kwargs, names', [
    (('7.1.1',), {}, ['rocm', 'amdgraphics']),
    (('7.1.1', ''), {}, ['rocm', 'amdgraphics']),
    (('6.4.3', '6.4.3'), {}, ['rocm', 'amdgpu']),
    (('7.1.1', '30.20.1'), {'graphics': False}, ['rocm', 'amdgpu']),
], ids=['no-driver', 'empty-driver', 'rocm-6', 'opted-out'])
def test_the_filter_leaves_out_what_the_node_does_not_take(args, kwargs, names):
    assert [repo['name'] for repo in rocm_repositories(AMD, *args, **kwargs)] == names


def test_a_mirror_keeps_amd_s_paths():
    uris = [repo['uri'] for repo in node_repositories('http://mirror-1:8080/amd', '7.0.2', '30.10.2')]
    assert uris == ['http://mirror-1:8080/amd/rocm/apt/7.0.2', 'http://mirror-1:8080/amd/graphics/7.0.2/ubuntu',
                    'http://mirror-1:8080/amd/amdgpu/30.10.2/ubuntu']


# --------------------------------------------------------------------------------------------------
# What the role's deb822 task is given, per system
# --------------------------------------------------------------------------------------------------

def _role_variables(platform_key, changes=None):
    variables = _trusted(_yaml('roles', 'rocm', 'vars', 'main.yml'))
    variables.update(_trusted(_yaml('roles', 'rocm', 'defaults', 'main.yml')))
    variables['llmfleet_platform'] = dict(PLATFORMS[platform_key], packages={}, held=[], kernel_managed=True)
    variables.update(changes or {})
    return variables


def _deb822_task():
    tasks = _yaml('roles', 'rocm', 'tasks', 'install.yml')
    return [task for task in tasks if 'ansible.builtin.deb822_repository' in task][0]


def rendered_sources(platform_key, changes=None):
    """The deb822 stanzas the role's task asks for on a system: one 'name: Field: value ...' text per repository."""
    variables = _role_variables(platform_key, changes)
    templar = Templar(loader=DataLoader(), variables=variables)
    task = _deb822_task()
    stanzas = {}
    for item in templar.template(_trusted(task['loop'])):
        args = Templar(loader=DataLoader(), variables=dict(variables, item=item)).template(
            _trusted(task['ansible.builtin.deb822_repository']))
        lines = ['Types: ' + ' '.join(args['types']), 'URIs: ' + ' '.join(args['uris']),
                 'Suites: ' + ' '.join(args['suites']), 'Components: ' + ' '.join(args['components']),
                 'Architectures: ' + ' '.join(args['architectures']), 'Signed-By: ' + args['signed_by']]
        stanzas[args['name']] = '\n'.join(lines)
    return stanzas


def _stanza(uri, suite):
    return '\n'.join(['Types: deb', 'URIs: ' + uri, 'Suites: ' + suite, 'Components: main', 'Architectures: amd64',
                      'Signed-By: https://repo.radeon.com/rocm/rocm.gpg.key'])


@pytest.mark.parametrize('platform_key, suite', [('Ubuntu-22', 'jammy'), ('Ubuntu-24', 'noble'), ('Debian-12', 'jammy')],
                         ids=['ubuntu-22.04', 'ubuntu-24.04', 'debian-12'])
def test_every_system_gets_amd_s_three_repositories_with_its_suite_and_one_key(platform_key, suite):
    assert rendered_sources(platform_key) == {
        'rocm': _stanza(AMD + '/rocm/apt/7.2.3', suite),
        'amdgraphics': _stanza(AMD + '/graphics/7.2.3/ubuntu', suite),
        'amdgpu': _stanza(AMD + '/amdgpu/30.30.3/ubuntu', suite),
    }


@pytest.mark.parametrize('changes, names', [
    ({'rocm_graphics_repository': False}, ['amdgpu', 'rocm']),
    ({'rocm_install_driver': False}, ['amdgraphics', 'rocm']),
    ({'rocm_version': '6.4.3', 'rocm_amdgpu_version': '6.4.3'}, ['amdgpu', 'rocm']),
    ({'rocm_version': '6.4.3', 'rocm_graphics_repository': True}, ['amdgpu', 'amdgraphics', 'rocm']),
], ids=['opted-out', 'no-driver', 'rocm-6', 'opted-in-on-6'])
def test_the_role_s_choices(changes, names):
    assert sorted(rendered_sources('Ubuntu-24', changes)) == names


def test_a_mirror_s_base_url_moves_every_source():
    sources = rendered_sources('Ubuntu-22', {'llmfleet_mirror_url': 'http://mirror-1:8080/'})
    assert 'URIs: http://mirror-1:8080/amd/graphics/7.2.3/ubuntu\n' in sources['amdgraphics']
    assert 'Signed-By: http://mirror-1:8080/amd/rocm/rocm.gpg.key' in sources['amdgraphics']
