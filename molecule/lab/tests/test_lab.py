# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""testinfra checks of the lab scenario: packages, repository sources, tool outputs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

# podman:// is much faster than testinfra's ansible backend over the podman connection.
testinfra_hosts = ['podman://llmfleet-molecule-%s' % os.environ.get('MOLECULE_SCENARIO_NAME', 'lab')]

PROFILE = os.path.join(os.environ.get('MOLECULE_PROJECT_DIRECTORY', '.'), 'lab', 'profiles', 'mi300x-8.json')


def profile_gpus():
    with open(PROFILE) as handle:
        return sorted(json.load(handle)['gpus'], key=lambda gpu: gpu['pci'])


def test_packages_come_from_the_stub_repository(host):
    for name in ('rocm', 'rocm-core', 'rocminfo', 'rocm-smi-lib', 'amd-smi-lib', 'hip-runtime-amd', 'amdgpu-dkms'):
        assert host.package(name).is_installed, name
    assert host.package('rocm-core').version.startswith('7.1.1.70101-38~22.04')
    assert host.package('amdgpu-dkms').version == '1:6.16.6.30200100-2255209.22.04'
    policy = host.check_output('apt-cache policy rocminfo')
    assert 'llmfleet-lab-repo:8080/rocm/apt/7.1.1 jammy/main' in policy
    # rocm's amdgpu-core is served by the graphics repository of the release only, as AMD's since ROCm 7.0.
    assert host.package('amdgpu-core').version == '1:7.1.70101-2255212.22.04'
    assert 'llmfleet-lab-repo:8080/graphics/7.1.1/ubuntu jammy/main' in host.check_output('apt-cache policy amdgpu-core')


def test_repository_sources_are_signed_deb822(host):
    source = host.file('/etc/apt/sources.list.d/rocm.sources')
    assert source.exists
    assert 'Signed-By: /etc/apt/keyrings/rocm.' in source.content_string
    assert 'URIs: http://llmfleet-lab-repo:8080/rocm/apt/7.1.1' in source.content_string


def test_rocm_layout_is_the_real_one(host):
    assert host.file('/opt/rocm').is_symlink
    assert host.file('/opt/rocm').linked_to == '/opt/rocm-7.1.1'
    assert host.file('/opt/rocm/.info/version').content_string.strip() == '7.1.1-38'
    assert host.file('/usr/bin/amd-smi').linked_to.endswith('/opt/rocm-7.1.1/libexec/amdsmi_cli/amdsmi_cli.py')


def test_driver_is_loaded_after_the_reboot(host):
    assert host.service('amdgpu-lab-driver').is_enabled
    assert not host.file('/var/run/reboot-required').exists
    kfd = host.file('/dev/kfd')
    assert kfd.group == 'render' and kfd.mode == 0o660


def test_tools_agree_with_the_profile(host):
    gpus = profile_gpus()
    static = json.loads(host.check_output('amd-smi static --json'))['gpu_data']
    assert [g['bus']['bdf'] for g in static] == [g['pci'] for g in gpus]
    assert [g['numa']['node'] for g in static] == [g['numa_node'] for g in gpus]
    smi = json.loads(host.check_output('/opt/rocm/bin/rocm-smi --showbus --showtoponuma --json'))
    assert [smi['card%d' % i]['PCI Bus'].lower() for i in range(len(gpus))] == [g['pci'] for g in gpus]
    rocminfo = host.run('/opt/rocm/bin/rocminfo --support')
    assert rocminfo.rc == 0
    assert rocminfo.stdout.count('Marketing Name:          AMD Instinct MI300X') == len(gpus)
    assert 'ROCk module version 6.16.6 is loaded' in rocminfo.stdout
    assert host.check_output('amd-smi version').startswith('AMDSMI Tool: 26.2.0+021c61fc')


def test_user_outside_render_gets_the_real_error(host):
    host.run('id labuser || useradd -m labuser')
    result = host.run('su - labuser -c /opt/rocm/bin/rocminfo')
    assert result.rc == 1
    assert 'Unable to open /dev/kfd read-write: Permission denied' in result.stdout
