# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rocm role's result on the upgraded lab host, and a check-mode run that must change nothing."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import subprocess

testinfra_hosts = ['podman://llmfleet-molecule-%s' % os.environ.get('MOLECULE_SCENARIO_NAME', 'rocm')]

HELD = ('amdgpu-dkms', 'rocm-core', 'rocm')


def test_release_7_1_1_and_its_driver_are_installed_and_held(host):
    assert host.package('rocm-core').version.startswith('7.1.1.70101-')
    assert host.package('amdgpu-dkms').version.startswith('1:6.16.6.30200100-')
    holds = host.check_output('apt-mark showhold').split()
    for name in HELD:
        assert name in holds, name


def test_sources_are_signed_and_pinned(host):
    rocm = host.file('/etc/apt/sources.list.d/rocm.sources').content_string
    amdgpu = host.file('/etc/apt/sources.list.d/amdgpu.sources').content_string
    graphics = host.file('/etc/apt/sources.list.d/amdgraphics.sources').content_string
    assert re.search(r'^URIs: http://llmfleet-lab-repo:8080/rocm/apt/7\.1\.1$', rocm, re.M)
    assert re.search(r'^URIs: http://llmfleet-lab-repo:8080/amdgpu/30\.20\.1/ubuntu$', amdgpu, re.M)
    # AMD's ROCm 7.x instructions for Debian 12 register the graphics repository of the release too (jammy, one key).
    assert re.search(r'^URIs: http://llmfleet-lab-repo:8080/graphics/7\.1\.1/ubuntu$', graphics, re.M)
    assert re.search(r'^Suites: jammy$', graphics, re.M)
    for text in (rocm, amdgpu, graphics):
        assert 'Signed-By: /etc/apt/keyrings/' in text
        assert 'trusted' not in text.lower()
    pin = host.file('/etc/apt/preferences.d/llmfleet-rocm').content_string
    assert 'Pin: origin llmfleet-lab-repo' in pin and 'Pin-Priority: 1001' in pin
    # Debian's own rocminfo would otherwise win: the candidate must be AMD's.
    assert '70101' in host.check_output('apt-cache policy rocminfo | sed -n 3p')
    # rocm's amdgpu-core came from the graphics repository of the release.
    assert host.package('amdgpu-core').version.startswith('1:7.1.70101-')


def test_unattended_upgrades_leave_rocm_alone(host):
    text = host.file('/etc/apt/apt.conf.d/51llmfleet-rocm-unattended-upgrades').content_string
    assert 'Unattended-Upgrade::Package-Blacklist' in text and '"rocm";' in text and '"amdgpu-";' in text


def test_user_has_the_gpus(host):
    groups = host.user('inference').groups
    assert 'render' in groups and 'video' in groups
    assert host.run('runuser -u inference -- /opt/rocm/bin/rocminfo').rc == 0


def test_paths_are_set(host):
    assert '/opt/rocm/lib' in host.file('/etc/ld.so.conf.d/llmfleet-rocm.conf').content_string
    assert host.run('bash -lc "command -v rocminfo"').stdout.strip() == '/opt/rocm/bin/rocminfo'


def test_check_mode_on_the_converged_host_changes_nothing():
    ephemeral = os.environ['MOLECULE_EPHEMERAL_DIRECTORY']
    scenario = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ephemeral, 'ansible.cfg'))
    proc = subprocess.run(
        ['ansible-playbook', '-i', os.environ['MOLECULE_INVENTORY_FILE'], os.path.join(scenario, 'converge.yml'),
         '--check', '--diff', '-e', 'rocm_version=7.1.1', '-e', 'rocm_amdgpu_version=30.20.1'],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout
    recap = [line for line in proc.stdout.splitlines() if 'changed=' in line and 'unreachable=' in line]
    assert recap and all(' changed=0 ' in line for line in recap), proc.stdout
