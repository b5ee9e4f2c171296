# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The driver stage's alternative options on a lab host whose driver came from elsewhere."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

testinfra_hosts = ['podman://llmfleet-molecule-%s' % os.environ.get('MOLECULE_SCENARIO_NAME', 'node_options')]


def test_user_space_only_and_not_held(host):
    assert host.package('rocm-hip-runtime').version.startswith('7.1.1.70101-')
    assert not host.package('rocm').is_installed
    assert not host.file('/etc/apt/sources.list.d/amdgpu.sources').exists
    holds = host.check_output('apt-mark showhold').split()
    assert 'rocm-core' not in holds and 'rocm-hip-runtime' not in holds


def test_gpus_of_the_profile_are_visible(host):
    assert host.check_output("/opt/rocm/bin/rocminfo | grep -cE '^ +Name: +gfx90a *$'") == '4'


def test_only_numa_balancing_and_kernel_arguments_are_tuned(host):
    assert 'kernel.numa_balancing' in host.file('/etc/sysctl.d/90-llmfleet-tuning.conf').content_string
    # tuning_boot_loader_managed is false (a container has no boot loader): no GRUB drop-in.
    assert not host.file('/etc/default/grub.d/llmfleet-tuning.cfg').exists
    assert not host.file('/etc/systemd/system/llmfleet-cstate-limit.service').exists
    assert not host.file('/etc/systemd/system/llmfleet-cpu-governor.service').exists


def test_rccl_environment_uses_the_given_options(host):
    env = host.file('/etc/llmfleet/rccl.env').content_string
    assert 'NCCL_SOCKET_IFNAME="=eth0"' in env
    assert 'NCCL_DEBUG="INFO"' in env
    assert 'NCCL_NET_PLUGIN="librccl-net.so"' in env
    assert 'HSA_NO_SCRATCH_RECLAIM="1"' in env
    assert 'RCCL_NET_PLUGIN' not in env
