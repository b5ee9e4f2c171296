# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mirror role's plan: the fleet's releases and suites, debmirror's arguments, the snapshot id, SHA256SUMS."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.mirror_plan import (
    mirror_fleet, mirror_manifest_repositories, mirror_plan, sha256sums_files, mirror_wheels)
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.rocm_release import rocm_repositories
from ansible_collections.llmfleet.rocm.plugins.module_utils import _build_toolchain
from input_rules import role_defaults

VALUES = role_defaults('mirror')
PLATFORMS = {'Debian-12': {'rocm_suite': 'jammy'}, 'Ubuntu-22': {'rocm_suite': 'jammy'}, 'Ubuntu-24': {'rocm_suite': 'noble'}}
DEFAULTS = {'rocm_version': '7.1.1', 'rocm_amdgpu_version': '30.20.1', 'rocm_install_driver': True,
            'rocm_graphics_repository': None,
            'exporters_amdgpu_exporter_enabled': True, 'exporters_amdgpu_exporter_version': '1.4.0'}
KEYRING = '/srv/llmfleet-mirror/keys/amd.gpg'


def facts(distribution, major):
    return {'ansible_facts': {'distribution': distribution, 'distribution_major_version': major}}


HOSTVARS = {
    'gpu-1': facts('Ubuntu', '22'),
    'gpu-2': dict(facts('Ubuntu', '24'), rocm_version='7.0.2', rocm_amdgpu_version='30.10.2'),
    'gpu-3': dict(facts('Debian', '12'), rocm_install_driver=False),
    'bare': {},
    # A ROCm 6 node (no graphics repository in AMD's 6.x instructions), and a node whose site serves those packages
    # another way.
    'gpu-6': dict(facts('Ubuntu', '24'), rocm_version='6.4.3', rocm_amdgpu_version='6.4.3'),
    'gpu-no-graphics': dict(facts('Ubuntu', '22'), rocm_graphics_repository=False),
}


def test_the_fleet_from_facts_variables_and_defaults():
    fleet = mirror_fleet(['gpu-1', 'gpu-2', 'gpu-3', 'bare'], HOSTVARS, PLATFORMS, DEFAULTS, monitoring=True)
    assert fleet == [
        {'host': 'gpu-1', 'facts': True, 'suite': 'jammy', 'rocm_version': '7.1.1', 'graphics_version': '7.1.1',
         'amdgpu_version': '30.20.1', 'exporter_version': '1.4.0'},
        {'host': 'gpu-2', 'facts': True, 'suite': 'noble', 'rocm_version': '7.0.2', 'graphics_version': '7.0.2',
         'amdgpu_version': '30.10.2', 'exporter_version': '1.4.0'},
        {'host': 'gpu-3', 'facts': True, 'suite': 'jammy', 'rocm_version': '7.1.1', 'graphics_version': '7.1.1',
         'amdgpu_version': '', 'exporter_version': '1.4.0'},
        {'host': 'bare', 'facts': False, 'suite': '', 'rocm_version': '7.1.1', 'graphics_version': '7.1.1',
         'amdgpu_version': '30.20.1', 'exporter_version': '1.4.0'},
    ]


@pytest.mark.parametrize('host, graphics', [('gpu-1', '7.1.1'), ('gpu-6', ''), ('gpu-no-graphics', '')],
                         ids=['rocm-7-follows-amd', 'rocm-6-has-none', 'opted-out'])
def test_the_graphics_release_follows_the_rocm_role_s_rule(host, graphics):
    assert mirror_fleet([host], HOSTVARS, PLATFORMS, DEFAULTS)[0]['graphics_version'] == graphics


def test_a_node_that_opts_in_on_rocm_6_gets_it():
    hostvars = {'old': dict(facts('Ubuntu', '22'), rocm_version='6.4.3', rocm_graphics_repository=True)}
    assert mirror_fleet(['old'], hostvars, PLATFORMS, DEFAULTS)[0]['graphics_version'] == '6.4.3'


def test_no_exporter_without_monitoring():
    fleet = mirror_fleet(['gpu-1'], HOSTVARS, PLATFORMS, DEFAULTS)
    assert fleet[0]['exporter_version'] == ''


def plan_of(hosts, changes=None, monitoring=False):
    values = dict(VALUES, **(changes or {}))
    return mirror_plan(values, mirror_fleet(hosts, HOSTVARS, PLATFORMS, DEFAULTS, monitoring), KEYRING)


def test_exactly_the_releases_and_suites_the_fleet_uses():
    plan = plan_of(['gpu-1', 'gpu-2', 'gpu-3'])
    repos = dict((repo['name'], repo) for repo in plan['repositories'])
    assert sorted(repos) == ['amdgpu-30.10.2', 'amdgpu-30.20.1', 'graphics-7.0.2', 'graphics-7.1.1', 'rocm-7.0.2',
                             'rocm-7.1.1']
    assert repos['rocm-7.1.1']['suites'] == ['jammy']
    assert repos['rocm-7.0.2']['suites'] == ['noble']
    assert repos['amdgpu-30.20.1']['path'] == 'amd/amdgpu/30.20.1/ubuntu'
    assert repos['rocm-7.1.1']['url'] == 'https://repo.radeon.com/rocm/apt/7.1.1'
    # The graphics repository of a ROCm release, for the suites of the nodes that register it (Ubuntu 22.04 and
    # Debian 12 share jammy), at the path the nodes' sources name under <mirror>/amd.
    assert repos['graphics-7.1.1']['suites'] == ['jammy']
    assert repos['graphics-7.0.2']['suites'] == ['noble']
    assert repos['graphics-7.1.1']['path'] == 'amd/graphics/7.1.1/ubuntu'
    assert repos['graphics-7.1.1']['url'] == 'https://repo.radeon.com/graphics/7.1.1/ubuntu'
    assert repos['graphics-7.1.1']['debmirror'][4:7] == ['--root=graphics/7.1.1/ubuntu', '--dist=jammy', '--section=main']
    assert plan['key'] == {'url': 'https://repo.radeon.com/rocm/rocm.gpg.key', 'path': 'amd/rocm/rocm.gpg.key'}


def test_no_graphics_repository_for_nodes_without_one():
    plan = plan_of(['gpu-6', 'gpu-no-graphics'])
    names = sorted(repo['name'] for repo in plan['repositories'])
    assert names == ['amdgpu-30.20.1', 'amdgpu-6.4.3', 'rocm-6.4.3', 'rocm-7.1.1']


def test_the_mirror_holds_what_the_nodes_register():
    """Every source the rocm role gives a node (rocm_repositories) is a path the plan mirrors, for each system."""
    hosts = ['gpu-1', 'gpu-2', 'gpu-3']
    paths = set(repo['path'] for repo in plan_of(hosts)['repositories'])
    for host in hosts:
        node = dict(DEFAULTS, **HOSTVARS[host])
        wanted = rocm_repositories('http://mirror-1:8080/amd', node['rocm_version'],
                                   node['rocm_amdgpu_version'] if node['rocm_install_driver'] else None,
                                   graphics=node['rocm_graphics_repository'])
        assert [repo['kind'] for repo in wanted][:2] == ['rocm', 'graphics']
        for repo in wanted:
            assert 'amd/' + repo['path'] in paths, (host, repo)


def test_the_exporter_s_repository_with_monitoring():
    plan = plan_of(['gpu-1'], monitoring=True)
    repos = dict((repo['name'], repo) for repo in plan['repositories'])
    assert repos['exporter-1.4.0']['path'] == 'amd/device-metrics-exporter/apt/1.4.0'


def test_debmirror_arguments():
    plan = plan_of(['gpu-1'], {'mirror_amd_url': 'http://llmfleet-lab-repo:8080/'})
    assert plan['repositories'][0]['debmirror'] == [
        'debmirror', '--nosource', '--method=http', '--host=llmfleet-lab-repo:8080', '--root=amdgpu/30.20.1/ubuntu',
        '--dist=jammy', '--section=main', '--arch=amd64', '--keyring=' + KEYRING, '--rsync-extra=none', '--diff=none',
        '--progress']


def test_more_repositories_wheelhouses_and_models():
    plan = plan_of([], {
        'mirror_apt_repositories': [{'name': 'extra', 'url': 'https://apt.example/x/', 'suites': ['noble', 'jammy']}],
        'mirror_wheelhouses': [{'name': 'engine', 'url': 'http://b.example/wheels/current', 'files': ['requirements.txt']}],
        'mirror_models': [{'name': 'm.tar.gz', 'url': 'http://m.example/m.tar.gz', 'checksum': 'sha256:' + 'a' * 64}]})
    assert plan['repositories'][0]['path'] == 'apt/extra'
    assert plan['repositories'][0]['suites'] == ['jammy', 'noble']
    assert plan['repositories'][0]['components'] == ['main']
    assert plan['wheelhouses'] == [{'name': 'engine', 'url': 'http://b.example/wheels/current/', 'path': 'wheels/engine',
                                    'files': ['requirements.txt']}]
    assert plan['models'][0]['path'] == 'models/m.tar.gz'


DEADSNAKES = {'name': 'deadsnakes', 'url': 'https://ppa.launchpadcontent.net/deadsnakes/ppa/ubuntu', 'suites': ['jammy'],
              'key_url': 'https://keyserver.ubuntu.com/pks/lookup?op=get&options=mr&search=0xF23C5A6CF475977595C89F51BA6932366A755776',
              'key_fingerprints': ['F23C 5A6C F475 9775 95C8  9F51 BA69 3236 6A75 5776']}


def test_a_repository_with_its_own_key_is_checked_with_it_and_serves_it():
    """A Launchpad PPA: its own keyring for debmirror and the check, its key beside it where the nodes take it."""
    plan = plan_of([], {'mirror_apt_repositories': [DEADSNAKES, {'name': 'extra', 'url': 'https://apt.example/x/',
                                                                 'suites': ['jammy']}]})
    ppa, extra = plan['repositories']
    assert ppa['own_key'] == {'url': DEADSNAKES['key_url'], 'path': 'apt/deadsnakes/key.asc',
                              'keyring': '/srv/llmfleet-mirror/keys/apt-deadsnakes.gpg',
                              'fingerprints': ['F23C5A6CF475977595C89F51BA6932366A755776']}
    assert '--keyring=/srv/llmfleet-mirror/keys/apt-deadsnakes.gpg' in ppa['debmirror']
    assert ppa['debmirror'][2:5] == ['--method=https', '--host=ppa.launchpadcontent.net', '--root=deadsnakes/ppa/ubuntu']
    # Where the toolchain and engine roles take it behind the mirror (module_utils/_build_toolchain.py).
    node = _build_toolchain.apt_source('deadsnakes', 'Ubuntu-22', 'http://mirror-1:8080')
    assert node['uris'] == ['http://mirror-1:8080/' + ppa['path']]
    assert node['key_url'] == 'http://mirror-1:8080/' + ppa['own_key']['path']
    assert node['fingerprint'] == ppa['own_key']['fingerprints'][0]
    # An entry without a key of its own is AMD's, as before: same fields, hence the same plan id as before the change.
    assert 'own_key' not in extra and '--keyring=' + KEYRING in extra['debmirror']


def test_the_id_follows_the_contents_and_the_refresh_id():
    first = plan_of(['gpu-1'])['id']
    assert plan_of(['gpu-1'])['id'] == first
    assert plan_of(['gpu-1', 'gpu-2'])['id'] != first
    assert plan_of(['gpu-1'], {'mirror_refresh_id': '2026-12-01'})['id'] != first
    assert len(first) == 16


def test_bad_arguments_are_refused():
    with pytest.raises(AnsibleFilterError, match='expects'):
        mirror_plan('x', [], KEYRING)


SUMS = '%s  vllm-0.32.0-py3-none-any.whl\n%s *torch-2.13.0.whl\n\n' % ('A' * 64, 'b' * 64)


def test_sums():
    assert sha256sums_files(SUMS) == [{'file': 'vllm-0.32.0-py3-none-any.whl', 'sha256': 'a' * 64},
                                      {'file': 'torch-2.13.0.whl', 'sha256': 'b' * 64}]
    # Local versions, sdists, underscores: file names as wheelhouses hold them.
    text = '%s  torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl\r\n%s  flash_attn-2.8.3.tar.gz\n' % ('c' * 64, 'd' * 64)
    assert [item['file'] for item in sha256sums_files(text)] == ['torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl',
                                                                 'flash_attn-2.8.3.tar.gz']


@pytest.mark.parametrize('text, message', [
    ('', 'no file'),
    ('abc  x.whl\n', 'line 1'),
    ('%s  ../x.whl\n' % ('a' * 64), 'line 1'),
    ('%s  dir/x.whl\n' % ('a' * 64), 'line 1'),
    ('%s  -rf\n' % ('a' * 64), 'line 1'),
    ('%s  .hidden.whl\n' % ('a' * 64), 'line 1'),
    ('%s  $(id).whl\n' % ('a' * 64), 'line 1'),
    ('%s  a;b.whl\n' % ('a' * 64), 'line 1'),
    ('%s  x.whl?y=1\n' % ('a' * 64), 'line 1'),
    ('%s  %%2e%%2e\n' % ('a' * 64), 'line 1'),
    ('%s  x.whl\n%s  y.whl\n%s  x.whl\n' % ('a' * 64, 'b' * 64, 'c' * 64), 'line 3 names x.whl again'),
])
def test_bad_sums(text, message):
    with pytest.raises(AnsibleFilterError, match=message):
        sha256sums_files(text)


def test_wheels_from_slurped_sums():
    wheelhouse = {'name': 'engine', 'url': 'http://b.example/w/', 'path': 'wheels/engine'}
    results = [{'item': wheelhouse, 'content': base64.b64encode(SUMS.encode()).decode()}]
    assert mirror_wheels(results) == [
        {'url': 'http://b.example/w/vllm-0.32.0-py3-none-any.whl', 'path': 'wheels/engine/vllm-0.32.0-py3-none-any.whl',
         'sha256': 'a' * 64},
        {'url': 'http://b.example/w/torch-2.13.0.whl', 'path': 'wheels/engine/torch-2.13.0.whl', 'sha256': 'b' * 64}]
    results[0]['content'] = base64.b64encode(b'<html>not found</html>').decode()
    with pytest.raises(AnsibleFilterError, match='wheelhouse engine'):
        mirror_wheels(results)


def test_manifest_repositories():
    results = [{'item': {'name': 'rocm-7.1.1', 'path': 'amd/rocm/apt/7.1.1', 'url': 'http://r/rocm/apt/7.1.1'},
                'suites': [{'suite': 'jammy', 'signed_by': 'F' * 40}], 'packages': 3, 'bytes': 10}]
    assert mirror_manifest_repositories(results) == [
        {'name': 'rocm-7.1.1', 'path': 'amd/rocm/apt/7.1.1', 'url': 'http://r/rocm/apt/7.1.1',
         'suites': [{'suite': 'jammy', 'signed_by': 'F' * 40}], 'packages': 3, 'bytes': 10}]


# --- package indexes (mirror_wheel_indexes) ---

PIP = ['env', 'PIP_CONFIG_FILE=/dev/null', '/usr/bin/python3', '-m', 'pip', '--isolated', 'download', '--no-deps',
       '--require-hashes', '--only-binary', ':all:', '--no-cache-dir', '--progress-bar', 'off', '--no-input',
       '--disable-pip-version-check']


def test_plan_id_changes_only_with_indexes_asked_for():
    before = dict((key, value) for key, value in VALUES.items() if key != 'mirror_wheel_indexes')
    index = {'name': 'engine-index', 'index_urls': ['http://repo.example/simple'], 'lock': 'http://repo.example/l.lock'}
    assert mirror_plan(VALUES, [], KEYRING)['id'] == mirror_plan(before, [], KEYRING)['id']
    plan = mirror_plan(dict(VALUES, mirror_wheel_indexes=[index]), [], KEYRING)
    assert plan['id'] != mirror_plan(VALUES, [], KEYRING)['id']
    assert plan['wheel_indexes'] == [{
        'name': 'engine-index', 'index_urls': ['http://repo.example/simple/'], 'lock': 'http://repo.example/l.lock',
        'lock_file': 'l.lock', 'path': 'wheels/engine-index',
        'pip': PIP + ['--index-url', 'http://repo.example/simple/', '--trusted-host=repo.example']}]
    # The nodes' Python changes what is downloaded: another snapshot.
    other = mirror_plan(dict(VALUES, mirror_wheel_indexes=[dict(index, python_version='3.12')]), [], KEYRING)
    assert other['id'] != plan['id']


def test_pip_takes_the_first_index_then_the_others_for_the_nodes_python_and_platforms():
    index = {'name': 'engine-index', 'lock': 'https://locks.example/vllm.lock', 'python_version': '3.12',
             'platforms': ['manylinux_2_35_x86_64', 'manylinux_2_28_x86_64'],
             'index_urls': ['https://wheels.vllm.ai/rocm/0.32.0/rocm723', 'https://pypi.org/simple/',
                            'http://Mirror.Internal:8080/simple/']}
    plan = mirror_plan(dict(VALUES, mirror_wheel_indexes=[index]), [], KEYRING)
    assert plan['wheel_indexes'][0]['pip'] == PIP + [
        '--index-url', 'https://wheels.vllm.ai/rocm/0.32.0/rocm723/', '--extra-index-url=https://pypi.org/simple/',
        '--extra-index-url=http://Mirror.Internal:8080/simple/',
        # Plain http only, by host name (pip matches any port).
        '--trusted-host=mirror.internal',
        '--python-version', '3.12', '--platform', 'manylinux_2_35_x86_64', '--platform', 'manylinux_2_28_x86_64']
    assert plan['wheel_indexes'][0]['python_version'] == '3.12'
