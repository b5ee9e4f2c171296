# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the preflight filters: every rule fires on the reading it is about and stays quiet on the
nearest healthy reading, and the rules on real lspci captures. The readings are what the facts modules
return (preflight_facts' parsers have their own tests under tests/unit/plugins/module_utils)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import importlib
import os
import re

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.preflight_findings import (
    RULE_IDS,
    preflight_findings,
    preflight_finding_lines,
    preflight_readings,
)
from ansible_collections.llmfleet.rocm.plugins.module_utils import _lspci as lspci
from ansible_collections.llmfleet.rocm.plugins.module_utils._apt_policy import parse_apt_policy
from ansible_collections.llmfleet.rocm.plugins.module_utils._cmdline import cmdline_readings
from ansible_collections.llmfleet.rocm.plugins.module_utils._secure_boot import secure_boot_reading

GIB = 1024 ** 3
FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures', 'lspci')
KERNEL = '6.8.0-45-generic'
PACKAGES = ['linux-headers-' + KERNEL, 'linux-modules-extra-' + KERNEL]
HEALTHY_CMDLINE = 'BOOT_IMAGE=/vmlinuz-%s root=UUID=0b1e ro quiet splash iommu=pt pci=realloc=off\n' % KERNEL
SUPPORTED = ['Debian 12', 'Ubuntu 22.04', 'Ubuntu 24.04']
PLATFORM = {
    'key': 'Ubuntu-22', 'kernel': KERNEL, 'name': 'Ubuntu 22.04', 'supported': True, 'supported_names': SUPPORTED,
    'rocm_suite': 'jammy', 'kernel_packages': PACKAGES, 'cpupower_packages': ['linux-tools-common', 'linux-tools-' + KERNEL],
    'kernel_managed': True, 'kernel_managed_reason': 'the node runs its own kernel',
}
UNSUPPORTED = dict(PLATFORM, key='Rocky-9', name='Rocky 9.4', supported=False, rocm_suite='', kernel_packages=[],
                   cpupower_packages=[])
CONTAINER = dict(PLATFORM, kernel_managed=False,
                 kernel_managed_reason="the node is a podman container: its kernel, boot loader and /proc/sys are the host's")

# The format of "apt-cache policy", as apt 2.x prints it (block per package, two-space fields).
APT_BOTH_AVAILABLE = (
    'linux-headers-{k}:\n  Installed: (none)\n  Candidate: 6.8.0-45.45~22.04.1\n  Version table:\n'
    '     6.8.0-45.45~22.04.1 500\n        500 http://archive.ubuntu.com/ubuntu jammy-updates/main amd64 Packages\n'
    'linux-modules-extra-{k}:\n  Installed: 6.8.0-45.45~22.04.1\n  Candidate: 6.8.0-45.45~22.04.1\n  Version table:\n'
    ' *** 6.8.0-45.45~22.04.1 500\n        500 http://archive.ubuntu.com/ubuntu jammy-updates/main amd64 Packages\n'
    '        100 /var/lib/dpkg/status\n'
).format(k=KERNEL)


def _facts(key, value):
    return {'changed': False, 'ansible_facts': {key: value}, 'commands': []}


def _module_failed(msg):
    return {'changed': False, 'failed': False, 'failed_when_result': False, 'msg': msg}


def _packages(apt_text):
    """The kernel_packages reading preflight_facts makes of an apt-cache policy answer."""
    return {'checked': True, 'packages': parse_apt_policy(apt_text, PACKAGES), 'error': None}


def _node_readings():
    """What preflight_facts reads on a healthy node."""
    return {
        'kernel': {'release': KERNEL, 'version': [6, 8, 0]},
        'cmdline': cmdline_readings(HEALTHY_CMDLINE), 'kernel_args_missing': [],
        'numa_balancing': 0,
        'secure_boot': secure_boot_reading('SecureBoot disabled\n'),
        'kernel_packages': _packages(APT_BOTH_AVAILABLE),
        'disk': {'path': '/opt', 'mount': '/', 'free_bytes': 2900 * GIB, 'free_gib': 2900.0},
        'sockets': 2, 'paths': {},
    }


def _device(address, class_id, vendor_id='1002', path=None, numa_node=0, bar_bytes=None, link=None, acs=None, iommu_group=1):
    names = {'1200': 'Processing accelerators', '0200': 'Ethernet controller', '0207': 'Infiniband controller', '0604': 'PCI bridge'}
    return {
        'address': address, 'path': path, 'class_name': names.get(class_id, 'Other'), 'class_id': class_id,
        'vendor_id': vendor_id, 'device_id': '74a1' if vendor_id == '1002' else '1021',
        'description': 'Aqua Vanjaram [Instinct MI300X]' if vendor_id == '1002' else 'MT2910 Family [ConnectX-7]',
        'revision': None, 'subsystem': None, 'numa_node': numa_node, 'iommu_group': iommu_group, 'driver': None,
        'capabilities_readable': True, 'bars': [], 'largest_bar_bytes': bar_bytes,
        'pcie': link, 'acs': acs,
    }


def _link(speed=32.0, width=16, cap_speed=32.0, cap_width=16, port='Endpoint'):
    return {'type': port, 'link_cap_speed_gts': cap_speed, 'link_cap_width': cap_width, 'link_speed_gts': speed,
            'link_width': width, 'speed_downgraded': speed < cap_speed, 'width_downgraded': width < cap_width,
            'downgraded': speed < cap_speed or width < cap_width}


def _acs(src_valid):
    return {'capability': {'SrcValid': True}, 'control': {'SrcValid': src_valid},
            'enabled': ['SrcValid'] if src_valid else [], 'source_validation': src_valid}


def _pcie_facts(devices, readable=True):
    facts = {'source': 'lspci', 'capabilities_readable': readable, 'topology_source': 'sysfs', 'devices': devices}
    facts.update(lspci.summarize(devices))
    return facts


def _healthy_devices():
    """Two MI300X, each under its own switch with a ConnectX-7 beside it, full links, 256 GiB BARs, ACS off."""
    devices = []
    for root, upstream, gpu, nic, numa in (('0000:00:01.1', '0000:01:00.0', '0000:05:00.0', '0000:09:00.0', 0),
                                           ('0000:80:01.1', '0000:81:00.0', '0000:85:00.0', '0000:89:00.0', 1)):
        devices.append(_device(root, '0604', vendor_id='1022', path=[], numa_node=numa, link=_link(port='Root Port'), acs=_acs(False)))
        devices.append(_device(upstream, '0604', vendor_id='1000', path=[root], numa_node=numa, link=_link(port='Upstream Port'),
                               acs=_acs(False)))
        devices.append(_device(gpu, '1200', path=[root, upstream], numa_node=numa, bar_bytes=256 * GIB, link=_link()))
        devices.append(_device(nic, '0200', vendor_id='15b3', path=[root, upstream], numa_node=numa, bar_bytes=32 * 1024 ** 2, link=_link()))
    return devices


def _rdma_facts(addresses):
    devices = [{'name': 'mlx5_%d' % index, 'pci_address': address, 'netdevs': ['ens%d' % index], 'verbs': True,
                'transport': 'InfiniBand', 'link_layer': 'Ethernet', 'fw_ver': '28.39.1002', 'node_guid': None,
                'active_ports': 1, 'ports': []} for index, address in enumerate(addresses)]
    return {'tool': 'ibv_devinfo', 'sources': ['ibv_devinfo', 'sysfs'], 'device_count': len(devices), 'devices': devices}


PYTHON312 = '/usr/bin/python3.12'


def _python_results(versions):
    """The registered loop of the role's Python version reading: path -> printed version, or None for a missing Python."""
    results = []
    for path, version in sorted(versions.items()):
        if version is None:
            results.append({'item': path, 'rc': 2, 'failed': False, 'failed_when_result': False, 'changed': False,
                            'msg': "[Errno 2] No such file or directory: b'%s'" % path, 'stdout': '', 'stderr': ''})
        else:
            results.append({'item': path, 'rc': 0, 'changed': False, 'stdout': version, 'stderr': '', 'msg': ''})
    return {'changed': False, 'msg': 'All items completed', 'results': results}


def _gpu(index, address):
    return {'index': index, 'gfx_target': 'gfx942', 'marketing_name': 'AMD Instinct MI300X', 'vram_bytes': 206141652992,
            'numa_node': index, 'pci_address': address, 'compute_units': 304, 'integrated': False}


def healthy():
    """The inputs the role gathers on a healthy 2-GPU Ubuntu 22.04 node with ROCm installed: no finding at all."""
    return {
        'platform': copy.deepcopy(PLATFORM), 'kernel_managed': None, 'min_kernel': '5.15',
        'node': _facts('preflight', _node_readings()),
        'disk_path': '/opt', 'min_free_gib': 50,
        'rocm': _facts('rocm', {'gpu_count': 2, 'gfx_targets': ['gfx942'], 'rocm_version': '7.1.1', 'driver_version': '6.14.14',
                                'sources': ['amd-smi', 'rocminfo'], 'gpus': [_gpu(0, '0000:05:00.0'), _gpu(1, '0000:85:00.0')]}),
        'pcie': _facts('pcie', _pcie_facts(_healthy_devices())),
        'numa': _facts('numa', {'available': True, 'source': 'numactl', 'node_count': 2, 'cpu_count': 192,
                                'nodes': [{'id': 0, 'cpus': list(range(96)), 'memory_mb': 1000, 'free_mb': 900},
                                          {'id': 1, 'cpus': list(range(96, 192)), 'memory_mb': 1000, 'free_mb': 900}],
                                'distances': [[10, 32], [32, 10]]}),
        'rdma': _facts('rdma', _rdma_facts(['0000:09:00.0', '0000:89:00.0'])),
        'multi_node': None, 'expected_gpu_count': None, 'accepted': [],
        # The support table's inputs (roles/preflight/vars/main.yml): ROCm 7.1 on Ubuntu 22.04 with MI300X, vLLM 0.32.0 on a
        # Python 3.12 (Ubuntu 22.04's own python3 is 3.10), no monitoring hosts.
        'host': 'mi300x-01', 'rocm_version': '7.1.1', 'engine': {'name': 'vllm', 'version': '0.32.0'},
        'pythons': {'engine_python': PYTHON312, 'toolchain_python': PYTHON312},
        'python_results': _python_results({PYTHON312: '3.12.3'}),
        'engine_build_enabled': True, 'exporter': {'enabled': True, 'monitoring_hosts': []},
    }


def ids(findings):
    return [finding['id'] for finding in findings]


def by_id(findings, rule_id):
    matching = [finding for finding in findings if finding['id'] == rule_id]
    assert len(matching) == 1, 'expected one %s finding in %s' % (rule_id, ids(findings))
    return matching[0]


# ---------------------------------------------------------------------------------------------
# Mutations of the healthy node, one per case
# ---------------------------------------------------------------------------------------------

def _set(**changes):
    def apply(inputs):
        inputs.update(changes)
    return apply


def _node(**changes):
    """Change what preflight_facts read."""
    def apply(inputs):
        inputs['node']['ansible_facts']['preflight'].update(changes)
    return apply


def _cmdline(text):
    return _node(cmdline=cmdline_readings(text))


def _kernel(release):
    return _node(kernel={'release': release, 'version': None})


def _mokutil(text=None, efivar=None, looked=True):
    return _node(secure_boot=secure_boot_reading(text, efivar, looked))


def _disk(free_gib, mount='/opt'):
    return _node(disk={'path': '/opt', 'mount': mount, 'free_bytes': None if free_gib is None else free_gib * GIB,
                       'free_gib': None if free_gib is None else float(free_gib)})


def _pcie_device(address, **changes):
    def apply(inputs):
        facts = inputs['pcie']['ansible_facts']['pcie']
        for device in facts['devices']:
            if device['address'] == address:
                device.update(changes)
        inputs['pcie'] = _facts('pcie', _pcie_facts(facts['devices'], facts['capabilities_readable']))
    return apply


def _drop_devices(*addresses):
    def apply(inputs):
        devices = [dev for dev in inputs['pcie']['ansible_facts']['pcie']['devices'] if dev['address'] not in addresses]
        inputs['pcie'] = _facts('pcie', _pcie_facts(devices))
    return apply


def _rocm(**changes):
    def apply(inputs):
        inputs['rocm']['ansible_facts']['rocm'].update(changes)
    return apply


def _numa_nodes(count):
    def apply(inputs):
        per = 192 // count
        nodes = [{'id': n, 'cpus': list(range(n * per, (n + 1) * per)), 'memory_mb': 100, 'free_mb': 90} for n in range(count)]
        inputs['numa']['ansible_facts']['numa'].update(nodes=nodes, node_count=count)
    return apply


def _all(*mutations):
    def apply(inputs):
        for mutation in mutations:
            mutation(inputs)
    return apply


def _add_bridge_with_acs(inputs):
    """A root port with SrcValid+ that no GPU or RDMA NIC sits under."""
    facts = inputs['pcie']['ansible_facts']['pcie']
    devices = facts['devices'] + [_device('0000:c0:07.1', '0604', vendor_id='1022', path=[], link=_link(port='Root Port'),
                                          acs=_acs(True))]
    inputs['pcie'] = _facts('pcie', _pcie_facts(devices))


def _gpus(marketing_name, gfx_target, count=2):
    """The ROCm tools see ``count`` GPUs of one kind."""
    gpus = [dict(_gpu(index, address), marketing_name=marketing_name, gfx_target=gfx_target)
            for index, address in enumerate(['0000:05:00.0', '0000:85:00.0'][:count])]
    return _rocm(gpu_count=count, gfx_targets=[gfx_target], gpus=gpus)


def _debian(inputs):
    inputs['platform'] = dict(inputs['platform'], key='Debian-12', name='Debian 12', rocm_suite='jammy')


def _pythons(engine_python, versions, toolchain_python=None):
    return _set(pythons={'engine_python': engine_python, 'toolchain_python': toolchain_python or engine_python},
                python_results=_python_results(versions))


_SYSTEM_PYTHON = '/usr/bin/python3'
_MONITORED = _set(exporter={'enabled': True, 'monitoring_hosts': ['monitor-1']})
_ROLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..', 'roles')
with open(os.path.join(_ROLES, 'engine_build', 'vars', 'main.yml')) as _handle:
    _RELEASES = yaml.safe_load(_handle)['_engine_build_releases']


def _recipe(vllm_ref='v0.32.0', recipe=''):
    """The build's recipe as the role passes it: engine_build_vllm_ref, engine_build_recipe and the recipe table."""
    return _set(engine_build={'vllm_ref': vllm_ref, 'recipe': recipe, 'releases': _RELEASES})


# This node runs the build, with the recipe's gcc and Python ("" for toolchain_python: the table's).
_BUILDER = _all(_set(builder=True, toolchain={'python_version': '', 'gcc_version': ''}),
                lambda inputs: inputs['pythons'].update(toolchain_python=''))
_SMALL_BAR = 256 * 1024 ** 2
_NO_RDMA = _set(rdma=_facts('rdma', _rdma_facts([])))

# (case id, rule id, mutation, level the rule must have, or None when it must stay quiet)
CASES = [
    ('os-unsupported-rocky-9', 'os-unsupported', _set(platform=UNSUPPORTED), 'fail'),
    ('os-unsupported-debian-12-quiet', 'os-unsupported', _set(platform=dict(PLATFORM, key='Debian-12', name='Debian 12')), None),
    ('kernel-unreadable-garbage', 'kernel-unreadable', _kernel('custom-kernel'), 'warn'),
    ('kernel-unreadable-two-part-quiet', 'kernel-unreadable', _kernel('6.8-rc1'), None),
    ('kernel-too-old-5.4', 'kernel-too-old', _kernel('5.4.0-216-generic'), 'fail'),
    ('kernel-too-old-5.15-quiet', 'kernel-too-old', _kernel('5.15.0-124-generic'), None),
    ('kernel-packages-unchecked-knob', 'kernel-packages-unchecked',
     _all(_set(kernel_managed=False), _node(kernel_packages={'checked': False, 'packages': None, 'error': None})), 'info'),
    ('kernel-packages-unchecked-container', 'kernel-packages-unchecked',
     _all(_set(platform=CONTAINER), _node(kernel_packages={'checked': False, 'packages': None, 'error': None})), 'info'),
    ('kernel-packages-unchecked-container-knob-true-quiet', 'kernel-packages-unchecked', _set(platform=CONTAINER, kernel_managed=True),
     None),
    ('kernel-packages-unknown-apt-error', 'kernel-packages-unknown',
     _node(kernel_packages={'checked': False, 'packages': None,
                            'error': 'apt-cache policy reported "E: Could not open lock file /var/cache/apt/pkgcache.bin"'}), 'warn'),
    ('kernel-packages-unknown-no-readings', 'kernel-packages-unknown',
     _set(node=_module_failed('preflight_facts: unsupported parameter')), 'warn'),
    ('kernel-packages-unknown-clean-quiet', 'kernel-packages-unknown', _set(), None),
    ('kernel-packages-unavailable-unknown-names', 'kernel-packages-unavailable', _node(kernel_packages=_packages('')), 'fail'),
    ('kernel-packages-unavailable-no-candidate', 'kernel-packages-unavailable',
     _node(kernel_packages=_packages(APT_BOTH_AVAILABLE.replace('Candidate: 6.8.0-45.45~22.04.1\n  Version table:\n     6.8',
                                                                'Candidate: (none)\n  Version table:\n     6.8', 1))), 'fail'),
    ('kernel-packages-unavailable-installed-quiet', 'kernel-packages-unavailable',
     _node(kernel_packages=_packages(APT_BOTH_AVAILABLE.replace('Installed: (none)\n  Candidate: 6.8.0-45.45~22.04.1',
                                                                'Installed: 6.8.0-45.45~22.04.1\n  Candidate: (none)'))), None),
    ('secure-boot-enabled-mokutil', 'secure-boot-enabled', _mokutil('SecureBoot enabled\n', looked=False), 'warn'),
    ('secure-boot-enabled-efivar', 'secure-boot-enabled', _mokutil(efivar=b'\x06\x00\x00\x00\x01'), 'warn'),
    ('secure-boot-enabled-shim-validation-off', 'secure-boot-enabled',
     _mokutil('SecureBoot enabled\nSecureBoot validation is disabled in shim\n', looked=False), 'info'),
    ('secure-boot-enabled-efivar-off-quiet', 'secure-boot-enabled', _mokutil(efivar=b'\x06\x00\x00\x00\x00'), None),
    ('secure-boot-enabled-setup-mode-quiet', 'secure-boot-enabled', _mokutil('SecureBoot disabled\nPlatform is in Setup Mode\n', looked=False),
     None),
    ('secure-boot-unknown-cannot-determine', 'secure-boot-unknown', _mokutil('Cannot determine secure boot state.\n'), 'info'),
    ('secure-boot-unknown-odd-efivar', 'secure-boot-unknown', _mokutil(efivar=b'\x06\x00\x00\x00'), 'info'),
    ('secure-boot-unknown-no-readings', 'secure-boot-unknown', _set(node=_module_failed('preflight_facts: unsupported parameter')), 'info'),
    ('secure-boot-unknown-no-efi-quiet', 'secure-boot-unknown', _mokutil('EFI variables are not supported on this system\n'), None),
    ('secure-boot-unknown-no-mokutil-no-efivar-quiet', 'secure-boot-unknown', _mokutil(), None),
    ('disk-path-unknown-statvfs-failed', 'disk-path-unknown', _disk(None, mount=None), 'warn'),
    ('disk-path-unknown-check-off-quiet', 'disk-path-unknown', _all(_disk(None, mount=None), _set(min_free_gib=0)), None),
    ('disk-space-low-opt-mount', 'disk-space-low', _disk(20), 'fail'),
    ('disk-space-low-enough-quiet', 'disk-space-low', _disk(50), None),
    ('facts-unreadable-lspci-error', 'facts-unreadable',
     _set(pcie=_module_failed('lspci reported an error: "pcilib: Cannot open /sys/bus/pci/devices". lspci cannot read the PCI bus')), 'warn'),
    ('facts-unreadable-preflight-facts-failed', 'facts-unreadable', _set(node=_module_failed('preflight_facts: unsupported parameter')),
     'warn'),
    ('facts-unreadable-all-read-quiet', 'facts-unreadable', _set(), None),
    ('rocm-tools-error-driver', 'rocm-tools-error',
     _set(rocm=_module_failed('rocminfo reported an error: "ROCk module is NOT loaded, possibly no GPU devices".')), 'warn'),
    ('rocm-tools-error-no-tools-quiet', 'rocm-tools-error',
     _rocm(gpu_count=0, gfx_targets=[], rocm_version=None, sources=[], gpus=[]), None),
    ('pcie-lspci-missing', 'pcie-lspci-missing',
     _set(pcie=_facts('pcie', dict(lspci.summarize([]), source=None, capabilities_readable=None, topology_source=None, devices=[]))), 'warn'),
    ('pcie-lspci-missing-present-quiet', 'pcie-lspci-missing', _set(), None),
    ('pcie-capabilities-unreadable-nonroot', 'pcie-capabilities-unreadable',
     lambda inputs: inputs['pcie']['ansible_facts']['pcie'].update(capabilities_readable=False), 'warn'),
    ('pcie-capabilities-unreadable-root-quiet', 'pcie-capabilities-unreadable', _set(), None),
    ('gpu-none-empty-bus', 'gpu-none',
     _all(_drop_devices('0000:05:00.0', '0000:85:00.0'), _rocm(gpu_count=0, gfx_targets=[], rocm_version=None, sources=[], gpus=[])),
     'fail'),
    ('gpu-none-pci-only-quiet', 'gpu-none', _rocm(gpu_count=0, gfx_targets=[], rocm_version=None, sources=[], gpus=[]), None),
    ('gpu-count-mismatch-expected-8', 'gpu-count-mismatch', _set(expected_gpu_count=8), 'fail'),
    ('gpu-count-mismatch-expected-2-quiet', 'gpu-count-mismatch', _set(expected_gpu_count=2), None),
    ('gpu-count-mismatch-rocm-only', 'gpu-count-mismatch',
     _all(_drop_devices('0000:05:00.0', '0000:85:00.0'), _set(expected_gpu_count=8)), 'fail'),
    ('gpu-count-mismatch-rocm-only-quiet', 'gpu-count-mismatch',
     _all(_drop_devices('0000:05:00.0', '0000:85:00.0'), _set(expected_gpu_count=2)), None),
    ('gpu-not-visible-to-rocm-one-lost', 'gpu-not-visible-to-rocm', _rocm(gpu_count=1, gpus=[_gpu(0, '0000:05:00.0')]), 'warn'),
    ('gpu-not-visible-to-rocm-partitions-quiet', 'gpu-not-visible-to-rocm', _rocm(gpu_count=16), None),
    ('gpu-bar-small-256mib', 'gpu-bar-small', _pcie_device('0000:85:00.0', largest_bar_bytes=_SMALL_BAR), 'warn'),
    ('gpu-bar-small-4gib-quiet', 'gpu-bar-small', _pcie_device('0000:85:00.0', largest_bar_bytes=4 * GIB), None),
    ('rocm-gpu-os-unsupported-mi355x-debian-12-rocm-7.1', 'rocm-gpu-os-unsupported',
     _all(_debian, _gpus('AMD Instinct MI355X', 'gfx950')), 'fail'),
    ('rocm-gpu-os-unsupported-mi325x-debian-12-rocm-7.0', 'rocm-gpu-os-unsupported',
     _all(_debian, _set(rocm_version='7.0.2'), _gpus('AMD Instinct MI325X', 'gfx942')), 'fail'),
    ('rocm-gpu-os-unsupported-mi210-debian-12-rocm-7.2', 'rocm-gpu-os-unsupported',
     _all(_debian, _set(rocm_version='7.2.3'), _gpus('AMD Instinct MI210', 'gfx90a')), 'fail'),
    ('rocm-gpu-os-unsupported-pci-only-mi355x', 'rocm-gpu-os-unsupported',
     _all(_debian, _rocm(gpu_count=0, gfx_targets=[], rocm_version=None, sources=[], gpus=[]),
          _pcie_device('0000:05:00.0', description='Device 75a3 [Instinct MI355X]')), 'fail'),
    ('rocm-gpu-os-unsupported-mi300x-debian-12-rocm-7.1-quiet', 'rocm-gpu-os-unsupported', _debian, None),
    ('rocm-gpu-os-unsupported-mi355x-debian-12-rocm-7.2-quiet', 'rocm-gpu-os-unsupported',
     _all(_debian, _set(rocm_version='7.2.3'), _gpus('AMD Instinct MI355X', 'gfx950')), None),
    ('rocm-gpu-os-unsupported-mi355x-ubuntu-quiet', 'rocm-gpu-os-unsupported', _gpus('AMD Instinct MI355X', 'gfx950'), None),
    ('rocm-gpu-os-unknown-rocm-6.4', 'rocm-gpu-os-unknown', _set(rocm_version='6.4.3'), 'warn'),
    ('rocm-gpu-os-unknown-mi308x', 'rocm-gpu-os-unknown', _gpus('AMD Instinct MI308X', 'gfx942'), 'warn'),
    ('rocm-gpu-os-unknown-radeon', 'rocm-gpu-os-unknown', _gpus('AMD Radeon PRO W7900', 'gfx1100'), 'warn'),
    ('rocm-gpu-os-unknown-unnamed-gfx90a-debian-12-rocm-7.2', 'rocm-gpu-os-unknown',
     _all(_debian, _set(rocm_version='7.2.3'), _gpus(None, 'gfx90a')), 'warn'),
    ('rocm-gpu-os-unknown-unnamed-gfx90a-debian-12-rocm-7.1-quiet', 'rocm-gpu-os-unknown', _all(_debian, _gpus(None, 'gfx90a')), None),
    ('rocm-gpu-os-unknown-no-rocm-release-quiet', 'rocm-gpu-os-unknown',
     _all(_set(rocm_version=''), _rocm(rocm_version=None)), None),
    ('engine-python-unsupported-3.10-vllm-0.32', 'engine-python-unsupported', _pythons(_SYSTEM_PYTHON, {_SYSTEM_PYTHON: '3.10.12'}), 'fail'),
    ('engine-python-unsupported-3.15-vllm-0.33', 'engine-python-unsupported',
     _all(_set(engine={'name': 'vllm', 'version': '0.33.0'}), _pythons(PYTHON312, {PYTHON312: '3.15.0'})), 'fail'),
    ('engine-python-unsupported-toolchain-3.10', 'engine-python-unsupported',
     _pythons(PYTHON312, {PYTHON312: '3.12.3', _SYSTEM_PYTHON: '3.10.12'}, toolchain_python=_SYSTEM_PYTHON), 'fail'),
    ('engine-python-unsupported-3.10-vllm-0.31-quiet', 'engine-python-unsupported',
     _all(_set(engine={'name': 'vllm', 'version': '0.31.0'}), _pythons(_SYSTEM_PYTHON, {_SYSTEM_PYTHON: '3.10.12'})), None),
    ('engine-python-unsupported-toolchain-unused-quiet', 'engine-python-unsupported',
     _all(_set(engine_build_enabled=False),
          _pythons(PYTHON312, {PYTHON312: '3.12.3', _SYSTEM_PYTHON: '3.10.12'}, toolchain_python=_SYSTEM_PYTHON)), None),
    ('engine-python-unsupported-sglang-quiet', 'engine-python-unsupported',
     _all(_set(engine={'name': 'sglang', 'version': '0.5.23'}), _pythons(_SYSTEM_PYTHON, {_SYSTEM_PYTHON: '3.10.12'})), None),
    ('engine-python-unknown-missing-python', 'engine-python-unknown', _pythons('/opt/python3.12/bin/python3', {'/opt/python3.12/bin/python3': None}),
     'warn'),
    ('engine-python-unknown-vllm-0.34', 'engine-python-unknown', _set(engine={'name': 'vllm', 'version': '0.34.0'}), 'warn'),
    ('engine-python-unknown-not-read-quiet', 'engine-python-unknown', _set(python_results={'skipped': True, 'results': []}), None),
    ('engine-recipe-rocm-differs-7.1.1-against-7.2.3', 'engine-recipe-rocm-differs', _recipe(), 'warn'),
    ('engine-recipe-rocm-differs-installed', 'engine-recipe-rocm-differs', _all(_recipe(), _set(rocm_version='')), 'warn'),
    ('engine-recipe-rocm-differs-named-recipe', 'engine-recipe-rocm-differs', _recipe(vllm_ref='main', recipe='0.31.0'),
     'warn'),
    ('engine-recipe-rocm-differs-same-quiet', 'engine-recipe-rocm-differs', _all(_recipe(), _set(rocm_version='7.2.3')), None),
    ('engine-recipe-rocm-differs-no-build-quiet', 'engine-recipe-rocm-differs',
     _all(_recipe(), _set(engine_build_enabled=False)), None),
    ('engine-recipe-rocm-differs-branch-quiet', 'engine-recipe-rocm-differs', _recipe(vllm_ref='main'), None),
    ('engine-recipe-rocm-differs-not-given-quiet', 'engine-recipe-rocm-differs', _set(), None),
    # The node that builds: Debian 12 has no gcc 13 for vLLM 0.32.0's torch; Ubuntu 22.04 takes it from a PPA.
    ('build-toolchain-unavailable-debian-12-gcc-13', 'build-toolchain-unavailable',
     _all(_debian, _recipe(), _BUILDER), 'fail'),
    ('build-toolchain-unavailable-ubuntu-22.04-quiet', 'build-toolchain-unavailable', _all(_recipe(), _BUILDER), None),
    ('build-toolchain-unavailable-debian-12-gcc-12-asked-quiet', 'build-toolchain-unavailable',
     _all(_debian, _recipe(), _BUILDER, _set(toolchain={'python_version': '', 'gcc_version': '12'})), None),
    ('build-toolchain-unavailable-not-the-builder-quiet', 'build-toolchain-unavailable',
     _all(_debian, _recipe(), _BUILDER, _set(builder=False)), None),
    ('build-toolchain-unavailable-prebuilt-wheels-quiet', 'build-toolchain-unavailable',
     _all(_debian, _recipe(), _BUILDER, _set(engine={'name': 'vllm', 'version': '0.32.0', 'source': 'wheels'})), None),
    ('build-toolchain-unavailable-stand-in-sources-quiet', 'build-toolchain-unavailable',
     _all(_debian, _recipe(vllm_ref='main'), _BUILDER), None),
    # engine_python "": the engine role's table gives the node its Python (3.12 from deadsnakes on Ubuntu 22.04).
    ('engine-python-unsupported-table-3.10-asked', 'engine-python-unsupported',
     _all(_recipe(), _set(pythons={'engine_python': '', 'toolchain_python': ''},
                          engine={'name': 'vllm', 'version': '0.32.0', 'python_version': '3.10'})), 'fail'),
    ('engine-python-unsupported-table-quiet', 'engine-python-unsupported',
     _all(_recipe(), _set(pythons={'engine_python': '', 'toolchain_python': ''})), None),
    ('exporter-os-unsupported-debian-12', 'exporter-os-unsupported', _all(_debian, _MONITORED), 'warn'),
    ('exporter-os-unsupported-ubuntu-quiet', 'exporter-os-unsupported', _MONITORED, None),
    ('exporter-os-unsupported-no-monitoring-quiet', 'exporter-os-unsupported', _debian, None),
    ('exporter-os-unsupported-disabled-quiet', 'exporter-os-unsupported',
     _all(_debian, _set(exporter={'enabled': False, 'monitoring_hosts': ['monitor-1']})), None),
    ('cmdline-unreadable', 'cmdline-unreadable', _node(cmdline=None), 'info'),
    ('cmdline-unreadable-read-quiet', 'cmdline-unreadable', _set(), None),
    ('iommu-disabled-amd-iommu-off', 'iommu-disabled', _cmdline('ro amd_iommu=off pci=realloc=off'), 'warn'),
    ('iommu-disabled-iommu-off-last', 'iommu-disabled', _cmdline('ro iommu=pt iommu=off pci=realloc=off'), 'warn'),
    ('iommu-disabled-amd-iommu-on-quiet', 'iommu-disabled', _cmdline('ro amd_iommu=on iommu=pt pci=realloc=off'), None),
    ('iommu-passthrough-missing', 'iommu-passthrough-missing', _cmdline('ro quiet pci=realloc=off'), 'warn'),
    ('iommu-passthrough-missing-nopt-last', 'iommu-passthrough-missing', _cmdline('ro iommu=pt iommu=nopt pci=realloc=off'), 'warn'),
    ('iommu-passthrough-missing-generic-quiet', 'iommu-passthrough-missing', _cmdline('ro iommu.passthrough=1 pci=realloc=off'), None),
    ('iommu-passthrough-missing-init-args-quiet', 'iommu-passthrough-missing', _cmdline('ro iommu=pt pci=realloc=off -- single'), None),
    ('iommu-inactive-no-groups', 'iommu-inactive',
     lambda inputs: [dev.update(iommu_group=None) for dev in inputs['pcie']['ansible_facts']['pcie']['devices']], 'warn'),
    ('iommu-inactive-groups-quiet', 'iommu-inactive', _set(), None),
    ('pci-realloc-not-off', 'pci-realloc-not-off', _cmdline('ro iommu=pt'), 'info'),
    ('pci-realloc-not-off-comma-list-quiet', 'pci-realloc-not-off', _cmdline('ro iommu=pt pci=noaer,realloc=off'), None),
    ('pcie-link-width-downgraded-x8', 'pcie-link-width-downgraded', _pcie_device('0000:05:00.0', pcie=_link(width=8)), 'warn'),
    ('pcie-link-width-downgraded-rdma-nic', 'pcie-link-width-downgraded', _pcie_device('0000:89:00.0', pcie=_link(width=4)), 'warn'),
    ('pcie-link-width-downgraded-bridge-quiet', 'pcie-link-width-downgraded',
     _pcie_device('0000:01:00.0', pcie=_link(width=8, port='Upstream Port')), None),
    ('pcie-link-speed-downgraded-gen4', 'pcie-link-speed-downgraded', _pcie_device('0000:05:00.0', pcie=_link(speed=16.0)), 'warn'),
    ('pcie-link-speed-downgraded-full-quiet', 'pcie-link-speed-downgraded', _set(), None),
    ('rdma-none-multi-node', 'rdma-none', _all(_NO_RDMA, _set(multi_node=True)), 'warn'),
    ('rdma-none-auto-quiet', 'rdma-none', _NO_RDMA, None),
    ('gpu-nic-not-on-switch-auto-multi', 'gpu-nic-not-on-switch', _set(rdma=_facts('rdma', _rdma_facts(['0000:09:00.0']))), 'warn'),
    ('gpu-nic-not-on-switch-single-node', 'gpu-nic-not-on-switch',
     _set(rdma=_facts('rdma', _rdma_facts(['0000:09:00.0'])), multi_node=False), 'info'),
    ('gpu-nic-not-on-switch-no-rdma-quiet', 'gpu-nic-not-on-switch', _NO_RDMA, None),
    ('pcie-acs-enabled-multi-node', 'pcie-acs-enabled', _pcie_device('0000:81:00.0', acs=_acs(True)), 'warn'),
    ('pcie-acs-enabled-single-node', 'pcie-acs-enabled', _all(_pcie_device('0000:81:00.0', acs=_acs(True)), _NO_RDMA), 'info'),
    ('pcie-acs-enabled-off-path-quiet', 'pcie-acs-enabled',
     _add_bridge_with_acs, None),
    ('numa-balancing-enabled', 'numa-balancing-enabled', _node(numa_balancing=1), 'warn'),
    ('numa-balancing-enabled-missing-quiet', 'numa-balancing-enabled',
     _node(numa_balancing=None), None),
    ('numa-nps-not-1-nps4', 'numa-nps-not-1', _numa_nodes(8), 'info'),
    ('numa-nps-not-1-nps1-quiet', 'numa-nps-not-1', _numa_nodes(2), None),
]


def test_healthy_node_has_no_findings():
    assert preflight_findings(healthy()) == []


def test_every_rule_has_cases_for_both_outcomes():
    fires = set(rule for _case, rule, _mutation, level in CASES if level is not None)
    quiet = set(rule for _case, rule, _mutation, level in CASES if level is None)
    assert sorted(set(RULE_IDS) - fires) == []
    assert sorted(set(RULE_IDS) - quiet) == []


@pytest.mark.parametrize('rule_id, mutation, level', [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_rule(rule_id, mutation, level):
    inputs = healthy()
    mutation(inputs)
    findings = preflight_findings(inputs)
    if level is None:
        assert rule_id not in ids(findings)
    else:
        finding = by_id(findings, rule_id)
        assert finding['level'] == level
        assert finding['message'] and finding['fix']
        assert set(finding) == {'id', 'level', 'message', 'fix'}


# ---------------------------------------------------------------------------------------------
# Details of messages, ordering, acceptance
# ---------------------------------------------------------------------------------------------

def test_iommu_off_mentions_many_cpus():
    inputs = healthy()
    _cmdline('amd_iommu=off pci=realloc=off')(inputs)
    inputs['numa']['ansible_facts']['numa']['cpu_count'] = 384
    assert 'This node has 384 logical CPUs' in by_id(preflight_findings(inputs), 'iommu-disabled')['message']


def test_iommu_off_passthrough_not_reported_twice():
    inputs = healthy()
    _cmdline('amd_iommu=off pci=realloc=off')(inputs)
    assert 'iommu-passthrough-missing' not in ids(preflight_findings(inputs))


def test_lonely_gpu_named():
    inputs = healthy()
    inputs['rdma'] = _facts('rdma', _rdma_facts(['0000:09:00.0']))
    assert '0000:85:00.0' in by_id(preflight_findings(inputs), 'gpu-nic-not-on-switch')['message']
    assert '0000:05:00.0' not in by_id(preflight_findings(inputs), 'gpu-nic-not-on-switch')['message']


def test_link_messages_name_trained_and_capable():
    inputs = healthy()
    _pcie_device('0000:05:00.0', pcie=_link(width=8))(inputs)
    _pcie_device('0000:85:00.0', pcie=_link(speed=16.0))(inputs)
    findings = preflight_findings(inputs)
    assert '0000:05:00.0 x8 of x16' in by_id(findings, 'pcie-link-width-downgraded')['message']
    assert '0000:85:00.0 16 GT/s of 32 GT/s' in by_id(findings, 'pcie-link-speed-downgraded')['message']


def test_findings_are_ordered_by_level():
    inputs = healthy()
    _all(_kernel('5.4.0-1-generic'), _node(numa_balancing=1), _cmdline('ro iommu=pt'))(inputs)
    assert [finding['level'] for finding in preflight_findings(inputs)] == ['fail', 'warn', 'info']


def test_accepted_finding_becomes_info():
    inputs = healthy()
    _pcie_device('0000:05:00.0', pcie=_link(speed=16.0))(inputs)
    inputs['accepted'] = ['pcie-link-speed-downgraded']
    finding = by_id(preflight_findings(inputs), 'pcie-link-speed-downgraded')
    assert finding['level'] == 'info'
    assert 'its level was warn' in finding['message']


def test_strings_from_older_templating_are_understood():
    inputs = healthy()
    inputs.update(kernel_managed='False', multi_node='None', expected_gpu_count='', min_free_gib='50')
    assert ids(preflight_findings(inputs)) == ['kernel-packages-unchecked']


def test_unsupported_system_names_the_supported_ones():
    finding = by_id(preflight_findings(dict(healthy(), platform=UNSUPPORTED)), 'os-unsupported')
    assert finding['message'] == 'Unsupported system Rocky 9.4: the preflight role supports Debian 12, Ubuntu 22.04, Ubuntu 24.04.'
    assert 'Debian 12 or Ubuntu 22.04 or Ubuntu 24.04' in finding['fix']


def test_unchecked_kernel_says_why():
    inputs = dict(healthy(), platform=CONTAINER)
    assert 'podman container' in by_id(preflight_findings(inputs), 'kernel-packages-unchecked')['message']
    inputs['kernel_managed'] = False
    assert '(preflight_kernel_managed: false)' in by_id(preflight_findings(inputs), 'kernel-packages-unchecked')['message']


def test_kernel_comes_from_the_node_reading():
    inputs = healthy()
    inputs['platform']['kernel'] = '5.4.0-1-generic'
    assert 'kernel-too-old' not in ids(preflight_findings(inputs))
    inputs['node'] = _module_failed('preflight_facts: unsupported parameter')
    assert by_id(preflight_findings(inputs), 'kernel-too-old')['message'].startswith('The running kernel 5.4.0-1-generic')


def test_inputs_must_be_a_dict():
    with pytest.raises(AnsibleFilterError, match='expects a dict'):
        preflight_findings(['not', 'a', 'dict'])
    with pytest.raises(AnsibleFilterError, match='expects a dict'):
        preflight_readings('text')


def test_readings_for_the_report():
    readings = preflight_readings(healthy())
    assert 'pcie_devices' not in readings
    assert readings['os'] == {'name': 'Ubuntu 22.04', 'supported': True}
    assert readings['kernel']['release'] == KERNEL and readings['kernel']['managed'] is True
    assert readings['secure_boot'] == {'state': 'disabled', 'source': 'mokutil', 'shim_validation': None, 'detail': 'SecureBoot disabled'}
    assert readings['disk'] == {'path': '/opt', 'mount': '/', 'free_bytes': 2900 * GIB, 'free_gib': 2900.0, 'min_free_gib': 50}
    assert readings['sockets'] == 2 and readings['numa_balancing'] == 0 and readings['cmdline']['iommu_passthrough'] is True
    assert [gpu['address'] for gpu in readings['gpus']] == ['0000:05:00.0', '0000:85:00.0']
    assert readings['multi_node'] is True and readings['multi_node_from'] == 'rdma devices'
    assert readings['kernel_packages']['packages']['linux-headers-' + KERNEL] == {
        'known': True, 'installed': None, 'candidate': '6.8.0-45.45~22.04.1'}


def test_lines():
    assert preflight_finding_lines([{'id': 'gpu-none', 'level': 'fail', 'message': 'No GPU.', 'fix': 'Seat one.'}]) == [
        '[fail] gpu-none: No GPU. Fix: Seat one.']
    assert preflight_finding_lines(None) == []


def test_filter_names():
    """The role reaches them as internal filters (plugins/filter/__roles.py), each bound to its function here."""
    roles = importlib.import_module('ansible_collections.llmfleet.rocm.plugins.filter.__roles').FilterModule().filters()
    assert sorted(name for name in roles if name.startswith('preflight_')) == [
        'preflight_finding_lines', 'preflight_findings', 'preflight_readings']
    for function in (preflight_findings, preflight_finding_lines, preflight_readings):
        assert (roles[function.__name__].__module__, roles[function.__name__].__name__) == (
            function.__module__, function.__name__)


# ---------------------------------------------------------------------------------------------
# The rules on real lspci captures (tests/unit/fixtures/lspci, see their notes)
# ---------------------------------------------------------------------------------------------

def _capture(*names):
    devices = []
    for name in names:
        with open(os.path.join(FIXTURES, name)) as handle:
            parsed = lspci.parse_lspci(handle.read())
        devices.extend(parsed['devices'])
    readable = all(dev['capabilities_readable'] is not False for dev in devices)
    return _facts('pcie', _pcie_facts(devices, readable))


def _on_capture(*names, **changes):
    inputs = healthy()
    inputs['pcie'] = _capture(*names)
    inputs['rocm'] = _facts('rocm', {'gpu_count': 0, 'gfx_targets': [], 'rocm_version': None, 'driver_version': None,
                                     'sources': [], 'gpus': []})
    inputs['rdma'] = _facts('rdma', _rdma_facts([]))
    inputs.update(changes)
    return inputs


def test_capture_vega10_small_bar_and_no_root():
    findings = preflight_findings(_on_capture('vega10-nonroot-access-denied.txt'))
    assert '0000:03:00.0 (256 MiB)' in by_id(findings, 'gpu-bar-small')['message']
    assert by_id(findings, 'pcie-capabilities-unreadable')['level'] == 'warn'
    assert 'gpu-none' not in ids(findings)


def test_capture_mi100_large_bar():
    findings = preflight_findings(_on_capture('mi100-rocm4.0-vvv-single.txt'))
    assert 'gpu-bar-small' not in ids(findings)
    assert 'pcie-link-width-downgraded' not in ids(findings)


def test_capture_mi300x_each_gpu_has_its_nic():
    nics = ['0000:09:00.0', '0000:23:00.0', '0000:53:00.0', '0000:69:00.0', '0000:8f:00.0', '0000:9c:00.0',
            '0000:cd:00.0', '0000:f1:00.0']
    inputs = _on_capture('mi300x-8-gpus-pp.txt', 'cx7-8-nics-pp.txt', rdma=_facts('rdma', _rdma_facts(nics)),
                         expected_gpu_count=8)
    findings = preflight_findings(inputs)
    assert 'gpu-nic-not-on-switch' not in ids(findings)
    assert 'gpu-count-mismatch' not in ids(findings)
    inputs['rdma'] = _facts('rdma', _rdma_facts(nics[1:]))
    lonely = by_id(preflight_findings(inputs), 'gpu-nic-not-on-switch')
    assert lonely['level'] == 'warn'
    assert 'GPU(s) with no RDMA NIC under the same PCIe switch: 0000:05:00.0.' in lonely['message']


def test_capture_rome_root_ports_with_acs():
    # The X550 functions stand in for RDMA NICs; the capture has no parent chains, so every bridge counts.
    inputs = _on_capture('g482-z54-rome-x550-nic-root-ports.txt', rdma=_facts('rdma', _rdma_facts(['0000:c1:00.0'])))
    finding = by_id(preflight_findings(inputs), 'pcie-acs-enabled')
    assert finding['level'] == 'warn'
    assert '0000:c0:07.1, 0000:c0:08.1' in finding['message']


def test_inputs_are_not_modified():
    inputs = healthy()
    _pcie_device('0000:05:00.0', pcie=_link(width=8))(inputs)
    before = copy.deepcopy(inputs)
    preflight_findings(inputs)
    preflight_readings(inputs)
    assert inputs == before


def test_readme_lists_every_rule():
    readme = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles', 'preflight', 'README.md')
    with open(readme) as handle:
        listed = [line.split('`')[1] for line in handle if line.startswith('| `') and '-' in line.split('`')[1]]
    assert listed == list(RULE_IDS)


# ---------------------------------------------------------------------------------------------
# The support table (module_utils/_support_matrix.py): messages, the sandbox, the role's inputs
# ---------------------------------------------------------------------------------------------

def _sandbox_node(rocm_tools=True):
    """A lab GPU node as inventories/sandbox makes it: a Debian 12 container, 8 x MI300X (the stub ROCm tools' names after the
    driver stage, lspci's before it), rocm_version 7.1.1, vLLM 0.32.0 on Debian 12's python3 (3.11), a monitoring host."""
    inputs = healthy()
    inputs.update(platform=dict(CONTAINER, key='Debian-12', name='Debian 12', rocm_suite='jammy', kernel_packages=['linux-headers-' + KERNEL]),
                  host='gpu-node-1', accepted=['gpu-none'], engine_build_enabled=False,
                  pythons={'engine_python': _SYSTEM_PYTHON, 'toolchain_python': _SYSTEM_PYTHON},
                  python_results=_python_results({_SYSTEM_PYTHON: '3.11.2'}),
                  exporter={'enabled': True, 'monitoring_hosts': ['monitor-1']})
    inputs['node']['ansible_facts']['preflight']['kernel_packages'] = {'checked': False, 'packages': None, 'error': None}
    if rocm_tools:
        _gpus('AMD Instinct MI300X', 'gfx942')(inputs)
    else:
        _rocm(gpu_count=0, gfx_targets=[], rocm_version=None, sources=[], gpus=[])(inputs)
    return inputs


@pytest.mark.parametrize('rocm_tools', [True, False], ids=['after-the-driver-stage', 'pci-bus-only'])
def test_the_sandbox_combination_is_in_the_matrix_and_only_the_exporter_warns(rocm_tools):
    findings = preflight_findings(_sandbox_node(rocm_tools))
    assert [(finding['id'], finding['level']) for finding in findings] == [
        ('exporter-os-unsupported', 'warn'), ('kernel-packages-unchecked', 'info')]
    message = findings[0]['message']
    assert message.startswith('gpu-node-1 (Debian 12, ROCm 7.1.1 (rocm_version), 2 x ')
    assert 'MI300X' in message and 'Ubuntu 22.04 and Ubuntu 24.04 only' in message and 'jammy build' in message


def test_the_sandbox_would_stop_on_a_gpu_outside_the_matrix():
    inputs = _sandbox_node()
    _gpus('AMD Instinct MI355X', 'gfx950')(inputs)
    assert [finding['id'] for finding in preflight_findings(inputs) if finding['level'] == 'fail'] == ['rocm-gpu-os-unsupported']


def test_unsupported_combination_names_node_gpu_system_release_and_fix():
    inputs = healthy()
    _all(_debian, _gpus('AMD Instinct MI355X', 'gfx950'))(inputs)
    finding = by_id(preflight_findings(inputs), 'rocm-gpu-os-unsupported')
    assert finding['message'] == (
        "mi300x-01 (Debian 12, ROCm 7.1.1 (rocm_version)): 2 x AMD Instinct MI355X (gfx950) on Debian 12 with ROCm 7.1 is outside "
        "AMD's compatibility matrix: for ROCm 7.1 on Debian 12 AMD supports MI325X, MI300X, MI300A, MI250X, MI250, MI210 only "
        "(https://rocm.docs.amd.com/en/docs-7.1.0/compatibility/compatibility-matrix.html).")
    assert finding['fix'].startswith('MI355X: run them on Ubuntu 22.04 or Ubuntu 24.04 (AMD supports MI355X there with ROCm 7.1), '
                                     'or set rocm_version to a 7.2 release (AMD supports MI355X on Debian 12 there).')


def test_the_installed_rocm_is_judged_when_rocm_version_is_empty():
    inputs = healthy()
    _all(_debian, _set(rocm_version=''), _gpus('AMD Instinct MI325X', 'gfx942'), _rocm(rocm_version='7.0.2'))(inputs)
    finding = by_id(preflight_findings(inputs), 'rocm-gpu-os-unsupported')
    assert '(Debian 12, ROCm 7.0.2 (installed))' in finding['message']
    assert 'set rocm_version to a 7.1 or 7.2 release' in finding['fix']


def test_unknown_combination_says_why():
    inputs = healthy()
    _all(_debian, _set(rocm_version='7.2.3'), _gpus(None, 'gfx90a'))(inputs)
    finding = by_id(preflight_findings(inputs), 'rocm-gpu-os-unknown')
    assert 'could be MI250X or MI250 or MI210, and of these AMD supports only MI250X, MI250 here' in finding['message']
    assert 'preflight_accepted_findings: [rocm-gpu-os-unknown]' in finding['fix']


def test_python_310_against_vllm_032_fails_with_the_range_and_the_fix():
    inputs = healthy()
    _pythons(_SYSTEM_PYTHON, {_SYSTEM_PYTHON: '3.10.12'})(inputs)
    findings = preflight_findings(inputs)
    assert [finding['id'] for finding in findings] == ['engine-python-unsupported']
    finding = findings[0]
    assert finding['level'] == 'fail'
    assert ('engine_python and toolchain_python (/usr/bin/python3) is Python 3.10.12; vLLM 0.32.0 requires Python >=3.11,<3.15'
            in finding['message'])
    assert 'point engine_python and toolchain_python at it' in finding['fix']
    assert 'pin an engine_version whose range includes it (0.30.0, 0.31.0)' in finding['fix']


def test_new_findings_can_be_accepted():
    inputs = healthy()
    _all(_debian, _gpus('AMD Instinct MI355X', 'gfx950'), _pythons(_SYSTEM_PYTHON, {_SYSTEM_PYTHON: '3.10.12'}), _MONITORED)(inputs)
    inputs['accepted'] = ['rocm-gpu-os-unsupported', 'engine-python-unsupported', 'exporter-os-unsupported']
    assert [finding['level'] for finding in preflight_findings(inputs)] == ['info', 'info', 'info']


def test_the_recipes_rocm_against_the_fleets_says_how_they_relate():
    inputs = healthy()
    _recipe()(inputs)
    finding = by_id(preflight_findings(inputs), 'engine-recipe-rocm-differs')
    assert finding['message'] == (
        'The build follows vLLM 0.32.0\'s recipe, which upstream builds and tests on ROCm 7.2.3; this fleet runs ROCm'
        ' 7.1.1 (rocm_version). The builder compiles those refs against the fleet\'s ROCm (the builder and every GPU node'
        ' run one release), a combination upstream did not build.')
    assert finding['fix'].startswith('Set rocm_version to 7.2.3 to build on the ROCm the recipe was made for; or keep'
                                     ' 7.1.1 and set the component refs')
    inputs['accepted'] = ['engine-recipe-rocm-differs']
    assert by_id(preflight_findings(inputs), 'engine-recipe-rocm-differs')['level'] == 'info'
    assert 'recipe_rocm' not in preflight_readings(inputs)


def test_the_role_reads_the_engine_build_roles_table():
    """roles/preflight/vars/main.yml reads the table from the engine_build role beside it (one table for both)."""
    with open(os.path.join(_ROLES, 'preflight', 'vars', 'main.yml')) as handle:
        expression = yaml.safe_load(handle)['_preflight_findings_inputs']['engine_build']['releases']
    path = re.search(r"role_path ~ '(?P<path>[^']+)'", expression).group('path')
    assert os.path.isfile(os.path.join(_ROLES, 'preflight') + path)
    assert expression.endswith("| from_yaml)._engine_build_releases }}")


def test_the_builders_readings_say_where_its_gcc_and_python_come_from():
    inputs = healthy()
    _all(_recipe(), _BUILDER, _set(pythons={'engine_python': '', 'toolchain_python': ''}))(inputs)
    readings = preflight_readings(inputs)
    assert readings['toolchain'] == {'python': '3.12', 'python_path': '/usr/bin/python3.12', 'gcc': '13',
                                     'sources': ['deadsnakes', 'ubuntu-toolchain-r-test']}
    assert readings['engine_python_plan'] == {'python': '3.12', 'python_path': '/usr/bin/python3.12', 'gcc': None,
                                              'sources': ['deadsnakes']}
    assert readings['pythons'] == [], 'a Python the roles install from the table is not read'


def test_the_debian_builder_is_told_what_to_set():
    inputs = healthy()
    _all(_debian, _recipe(), _BUILDER)(inputs)
    finding = by_id(preflight_findings(inputs), 'build-toolchain-unavailable')
    assert 'Debian 12 cannot give gcc 13' in finding['message'] and 'toolchain_gcc_version' in finding['message']
    assert 'mi300x-01' in finding['message']


def test_readings_of_the_support_table():
    readings = preflight_readings(healthy())
    assert readings['rocm_target'] == {'version': '7.1.1', 'from': 'rocm_version', 'series': '7.1', 'installed': '7.1.1'}
    assert readings['gpu_models'] == [{'name': 'AMD Instinct MI300X', 'gfx_target': 'gfx942', 'source': 'rocm', 'count': 2,
                                       'candidates': ['MI300X'], 'named': ['MI300X']}]
    assert readings['engine'] == {'name': 'vllm', 'version': '0.32.0', 'python_range': '>=3.11,<3.15', 'source': 'build'}
    # Python paths are given: the table plans nothing; this node does not build.
    assert readings['toolchain'] is None and readings['engine_python_plan'] is None
    assert readings['pythons'] == [{'variables': ['engine_python', 'toolchain_python'], 'path': PYTHON312, 'read': True,
                                    'version': '3.12.3', 'error': None}]
    assert readings['exporter_planned'] is False


def test_the_role_passes_the_other_roles_defaults_where_the_inventory_sets_nothing():
    """roles/preflight/vars/main.yml falls back to the rocm, engine, toolchain, engine_build and exporters roles' defaults."""
    root = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'roles')

    def load(*parts):
        with open(os.path.join(root, *parts)) as handle:
            return yaml.safe_load(handle)

    role_vars = load('preflight', 'vars', 'main.yml')
    inputs = role_vars['_preflight_findings_inputs']
    expressions = {
        ('engine', 'engine_name'): inputs['engine']['name'],
        ('engine', 'engine_version'): inputs['engine']['version'],
        ('engine', 'engine_python'): role_vars['_preflight_pythons']['engine_python'],
        ('engine', 'engine_python_version'): inputs['engine']['python_version'],
        ('engine', 'engine_source'): inputs['engine']['source'],
        ('toolchain', 'toolchain_python'): role_vars['_preflight_pythons']['toolchain_python'],
        ('toolchain', 'toolchain_python_version'): inputs['toolchain']['python_version'],
        ('toolchain', 'toolchain_gcc_version'): inputs['toolchain']['gcc_version'],
        ('engine_build', 'engine_build_enabled'): inputs['engine_build_enabled'],
        ('engine_build', 'engine_build_recipe'): inputs['engine_build']['recipe'],
        ('exporters', 'exporters_amdgpu_exporter_enabled'): inputs['exporter']['enabled'],
    }
    for (role, variable), expression in sorted(expressions.items()):
        match = re.match(r"^\{\{ %s \| default\('?(?P<value>[^')]*)'?\) \}\}$" % variable, expression)
        assert match, (variable, expression)
        default = load(role, 'defaults', 'main.yml')[variable]
        assert match.group('value') == (str(default).lower() if isinstance(default, bool) else default), (variable, expression)


def _role_file(*parts):
    with open(os.path.join(_ROLES, *parts)) as handle:
        return yaml.safe_load(handle)


def test_the_role_reads_the_rocm_and_engine_build_defaults_from_their_files():
    """rocm_version and engine_build_vllm_ref fall back to _preflight_role_defaults, which reads each value from its
    role's defaults/main.yml (no second copy of it in the preflight role)."""
    role_vars = _role_file('preflight', 'vars', 'main.yml')
    inputs = role_vars['_preflight_findings_inputs']
    expressions = {'rocm_version': inputs['rocm_version'], 'engine_build_vllm_ref': inputs['engine_build']['vllm_ref']}
    for variable, expression in sorted(expressions.items()):
        assert expression == '{{ %s | default(_preflight_role_defaults.%s) }}' % (variable, variable), expression
    roles = {'rocm_version': 'rocm', 'engine_build_vllm_ref': 'engine_build'}
    assert sorted(role_vars['_preflight_role_defaults']) == sorted(roles)
    for variable, role in sorted(roles.items()):
        expression = role_vars['_preflight_role_defaults'][variable].strip()
        match = re.match(r"^\{\{ \(lookup\('ansible\.builtin\.file', role_path ~ '(?P<path>[^']+)'\) \| from_yaml\)"
                         r"\.(?P<key>\w+) \}\}$", expression)
        assert match, (variable, expression)
        path = os.path.normpath(os.path.join(_ROLES, 'preflight') + match.group('path'))
        assert path == os.path.normpath(os.path.join(_ROLES, role, 'defaults', 'main.yml')), path
        assert match.group('key') == variable and variable in _role_file(role, 'defaults', 'main.yml')


def test_the_rocm_and_engine_build_defaults_agree():
    """With the roles' defaults the build follows a recipe made on the ROCm the rocm role installs: no
    engine-recipe-rocm-differs, so a multi-node fleet (which stops on warnings) is not stopped by the defaults."""
    rocm = _role_file('rocm', 'defaults', 'main.yml')
    build = _role_file('engine_build', 'defaults', 'main.yml')
    inputs = healthy()
    _set(rocm_version=rocm['rocm_version'], engine_build_enabled=build['engine_build_enabled'],
         engine_build={'vllm_ref': build['engine_build_vllm_ref'], 'recipe': build['engine_build_recipe'],
                       'releases': _RELEASES})(inputs)
    assert build['engine_build_enabled'] is True
    assert 'engine-recipe-rocm-differs' not in ids(preflight_findings(inputs))
    release = build['engine_build_vllm_ref'].lstrip('v')
    assert rocm['rocm_version'] == _RELEASES[release]['rocm_version']
