# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The base role's support table and the node's kind (plugins/plugin_utils/node_platform.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.node_platform import installed_packages, node_platform, platform_default

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..'))
with open(os.path.join(ROOT, 'roles', '_common', 'vars', 'main.yml')) as _handle:
    TABLE = yaml.safe_load(_handle)['_common_platforms']


def facts(distribution='Ubuntu', major='24', version='24.04', kernel='6.8.0-45-generic', **extra):
    result = {'distribution': distribution, 'distribution_major_version': major, 'distribution_version': version, 'kernel': kernel}
    result.update(extra)
    return result


@pytest.mark.parametrize('given, key, suite, kernel_packages', [
    (facts(), 'Ubuntu-24', 'noble', ['linux-headers-6.8.0-45-generic', 'linux-modules-extra-6.8.0-45-generic']),
    (facts(major='22', version='22.04', kernel='5.15.0-1-generic'), 'Ubuntu-22', 'jammy',
     ['linux-headers-5.15.0-1-generic', 'linux-modules-extra-5.15.0-1-generic']),
    (facts('Debian', '12', '12.7', '6.1.0-28-amd64'), 'Debian-12', 'jammy', ['linux-headers-6.1.0-28-amd64']),
], ids=['ubuntu-24', 'ubuntu-22', 'debian-12'])
def test_supported_rows(given, key, suite, kernel_packages):
    platform = node_platform(given, TABLE)
    assert platform['key'] == key
    assert platform['supported'] is True
    assert platform['rocm_suite'] == suite
    assert platform['kernel_packages'] == kernel_packages
    assert platform['kernel'] == given['kernel']
    assert platform['kernel_managed'] is True


@pytest.mark.parametrize('given', [
    facts('Ubuntu', '20', '20.04'), facts('Debian', '11', '11.9'), facts('Rocky', '9', '9.4'), {},
], ids=['ubuntu-20', 'debian-11', 'rocky-9', 'no-facts'])
def test_unsupported_rows(given):
    platform = node_platform(given, TABLE)
    assert platform['supported'] is False
    assert platform['kernel_packages'] == [] and platform['cpupower_packages'] == [] and platform['rocm_suite'] == ''
    assert platform['supported_names'] == ['Debian 12', 'Ubuntu 22.04', 'Ubuntu 24.04']


@pytest.mark.parametrize('extra, override, managed', [
    ({'virtualization_role': 'guest', 'virtualization_type': 'podman'}, None, False),
    ({'virtualization_role': 'guest', 'virtualization_type': 'lxc'}, None, False),
    ({'virtualization_role': 'guest', 'virtualization_type': 'kvm'}, None, True),
    ({'virtualization_role': 'host', 'virtualization_type': 'kvm'}, None, True),
    ({}, None, True),
    ({'virtualization_role': 'guest', 'virtualization_type': 'podman'}, True, True),
    ({}, False, False),
], ids=['podman-container', 'lxc-container', 'kvm-guest', 'kvm-host', 'bare-metal', 'inventory-says-ours', 'inventory-says-not'])
def test_kernel_managed(extra, override, managed):
    platform = node_platform(facts(**extra), TABLE, kernel_managed=override)
    assert platform['kernel_managed'] is managed
    assert platform['kernel_managed_reason']


def test_kernel_managed_must_be_a_bool():
    with pytest.raises(AnsibleFilterError, match='llmfleet_node_kernel_managed must be true or false'):
        node_platform(facts(), TABLE, kernel_managed='no')


@pytest.mark.parametrize('value, expected', [(None, False), (True, True), (False, False)], ids=['follow-node', 'own-true', 'own-false'])
def test_node_setting(value, expected):
    assert platform_default(value, {'kernel_managed': False}) is expected


def test_node_setting_without_platform():
    with pytest.raises(AnsibleFilterError, match='include llmfleet.rocm._common'):
        platform_default(None, None)


def test_installed_packages_and_holds():
    installed = {'rocm-core': {'version': '7.1.1.70101-38~24.04', 'held': True}, 'bash': {'version': '5.2.21-2', 'held': False}}
    platform = node_platform(facts(), TABLE, installed=installed)
    assert platform['packages'] == {'rocm-core': '7.1.1.70101-38~24.04', 'bash': '5.2.21-2'}
    assert platform['held'] == ['rocm-core']
    unread = node_platform(facts(), TABLE)
    assert unread['packages'] == {} and unread['held'] == []
    with pytest.raises(AnsibleFilterError, match='installed must be the mapping'):
        node_platform(facts(), TABLE, installed=['rocm-core'])


def test_node_packages_alone():
    installed = {'rocm-core': {'version': '7.1.1', 'held': True}, 'bash': {'version': '5.2', 'held': False}}
    assert installed_packages(installed) == {'packages': {'rocm-core': '7.1.1', 'bash': '5.2'}, 'held': ['rocm-core']}
    assert installed_packages(None) == {'packages': {}, 'held': []}
    assert installed_packages({}) == {'packages': {}, 'held': []}
    with pytest.raises(AnsibleFilterError, match='installed_packages: installed must be the mapping'):
        installed_packages('rocm-core')


def test_the_fleet_s_mirror():
    assert node_platform(facts(), TABLE)['mirror_url'] == ''
    assert node_platform(facts(), TABLE, mirror_url=' http://mirror-1:8080/ ')['mirror_url'] == 'http://mirror-1:8080'
    with pytest.raises(AnsibleFilterError, match='llmfleet_mirror_url .* must be'):
        node_platform(facts(), TABLE, mirror_url=['http://mirror-1:8080'])


@pytest.mark.parametrize('name, kwargs', [
    ('llmfleet_mirror_url', {'mirror_url': 'mirror-1:8080'}),
    ('llmfleet_apt_proxy', {'apt_proxy': 'http://proxy:3142\nAcquire::x "y";'}),
    ('llmfleet_apt_proxy', {'apt_proxy': 'http://proxy:3142";Acquire::x::y "z'}),
    ('llmfleet_mirror_url', {'mirror_url': 'http://mirror-1:8080/{x}'}),
    ('llmfleet_http_proxy', {'http_proxy': 'proxy:3128'}),
])
def test_the_fleet_s_sources_must_be_urls(name, kwargs):
    with pytest.raises(AnsibleFilterError, match=name + ' .* must be "" or an http'):
        node_platform(facts(), TABLE, **kwargs)


def test_the_apt_proxy():
    assert node_platform(facts(), TABLE, apt_proxy='http://mirror-1:3142')['apt_proxy'] == 'http://mirror-1:3142'


def test_the_proxy_environment():
    assert node_platform(facts(), TABLE)['proxy_env'] == {}
    env = node_platform(facts(), TABLE, http_proxy=' http://proxy:3128 ',
                        no_proxy=['gpu-node-1', '10.0.0.5', '', None, 'gpu-node-1', '127.0.0.1'])['proxy_env']
    assert env == {'http_proxy': 'http://proxy:3128', 'https_proxy': 'http://proxy:3128',
                   'no_proxy': 'localhost,127.0.0.1,::1,gpu-node-1,10.0.0.5'}
