# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's simulated PCI bus and procfs (lab/stubs/gpusim.py, labhost.py) against the collection's real code.

The lspci stub's output goes through the real parser, and the facts modules run as Ansible runs them
(the ``node`` fixture of tests/unit/conftest.py) on a fake node: the stub as lspci, the procfs stand-in
that ``gpusim.py procfs`` writes as proc_path. Their registered results are judged by the preflight
role's filter exactly as roles/preflight/vars/main.yml passes them, so the findings the molecule
scenario ``preflight`` asserts are proven here first, without a container.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import stat
import subprocess
import sys

import pytest

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.preflight_findings import preflight_findings, preflight_readings
from ansible_collections.llmfleet.rocm.plugins.module_utils import _cmdline as cmdline, _lspci as lspci

# lab/stubs/ (conftest.py)
import gpusim
import labhost

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
STUBS = os.path.join(ROOT, 'lab', 'stubs')
PROFILES = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, 'lab', 'profiles', '*.json')))
CLEAN = [name for name in PROFILES if not name.endswith('-findings')]
GIB = 1024 ** 3

# What the lab's stub lspci prints, as root on the host, for a profile: the stand-in the tests put on PATH.
LSPCI_STANDIN = '''#!%(python)s
import sys
sys.path.insert(0, %(stubs)r)
import json
import gpusim
import labhost
with open(%(profile)r) as handle:
    state = labhost.State(profile=json.load(handle), driver=None, loaded=False, root=True)
out, err, rc = gpusim.render_lspci(state, sys.argv[1:])
sys.stdout.write(out)
sys.stderr.write(err)
sys.exit(rc)
'''

# The findings of the profile with findings: (id, level, what the message names, fix), as the scenario expects them.
with open(os.path.join(ROOT, 'molecule', 'preflight', 'findings.json')) as _handle:
    FINDINGS = [(f['id'], f['level'], f['names'], f['fix']) for f in json.load(_handle)['findings']]
# The same node in a multi-node fleet: ACS is a warning, and a node without RDMA devices is one.
MULTI_NODE = {'pcie-acs-enabled': 'warn', 'rdma-none': 'warn'}

# The rules a profile and the role's knobs decide. The others judge what this machine's own tools say
# (mokutil, numactl, ibv_devinfo, Debian's rocminfo are found in /usr/bin even with PATH cut short):
# the molecule scenario asserts the whole list on a lab instance, where that is known.
PROFILE_RULES = frozenset([
    'kernel-packages-unchecked', 'facts-unreadable', 'pcie-lspci-missing', 'pcie-capabilities-unreadable', 'gpu-none',
    'gpu-count-mismatch', 'gpu-bar-small', 'cmdline-unreadable', 'iommu-disabled', 'iommu-passthrough-missing', 'iommu-inactive',
    'pci-realloc-not-off', 'pcie-link-width-downgraded', 'pcie-link-speed-downgraded', 'rdma-none', 'pcie-acs-enabled',
])

# llmfleet_platform of a lab host (Debian 12 in a container), as the base role derives it.
LAB_PLATFORM = {
    'key': 'debian-12', 'name': 'Debian 12', 'supported': True, 'supported_names': ['Ubuntu 22.04', 'Ubuntu 24.04', 'Debian 12'],
    'kernel': os.uname()[2], 'kernel_packages': ['linux-headers-%s' % os.uname()[2]], 'kernel_managed': False,
    'kernel_managed_reason': 'a container (podman): its kernel is the host\'s',
}


def profile(name):
    with open(os.path.join(ROOT, 'lab', 'profiles', name + '.json')) as handle:
        return json.load(handle)


def lspci_of(name, root=True, args=('-D', '-nn', '-vvv')):
    state = labhost.State(profile=profile(name), driver='6.16.6', root=root)
    out, err, rc = gpusim.render_lspci(state, list(args))
    assert rc == 0 and err == ''
    return out


def devices_by_address(name):
    return dict((dev['address'], dev) for dev in lspci.parse_lspci(lspci_of(name))['devices'])


# ---------------------------------------------------------------------------------------------
# the stub's output through the real parser

@pytest.mark.parametrize('name', PROFILES)
def test_lspci_lists_the_profile_gpus_below_their_switch_ports(name):
    parsed = lspci.parse_lspci(lspci_of(name))
    summary = lspci.summarize(parsed['devices'])
    assert parsed['capabilities_readable'] is True and parsed['warnings'] == []
    assert summary['gpus'] == sorted(gpu['pci'] for gpu in profile(name)['gpus'])
    assert summary['nics'] == []
    devices = dict((dev['address'], dev) for dev in parsed['devices'])
    for gpu in profile(name)['gpus']:
        device = devices[gpu['pci']]
        model = labhost.MODELS[gpu['model']]
        assert device['vendor_id'] == '1002' and device['device_id'] == '%04x' % model['device_id']
        assert device['class_id'] == '%04x' % model['pci_class'][1]
        assert device['numa_node'] == gpu['numa_node']
        assert device['iommu_group'] is not None
        assert device['pcie']['type'] == 'Endpoint'
        assert device['pcie']['link_cap_speed_gts'] == labhost.PCIE_SPEEDS[model['pcie_gen']]
        assert device['largest_bar_bytes'] == gpu.get('bar_bytes', model['bar_bytes'])
    for device in parsed['devices']:
        if device['class_id'] == '0604':
            assert lspci.is_bridge(device) and device['acs'] is not None and device['pcie']['type'] == 'Downstream Port'


@pytest.mark.parametrize('name', CLEAN)
def test_clean_profiles_have_full_links_and_no_acs(name):
    summary = lspci.summarize(lspci.parse_lspci(lspci_of(name))['devices'])
    assert summary['downgraded_links'] == [] and summary['bridges_with_acs'] == []


def test_the_findings_profile_has_its_links_bar_and_acs():
    devices = devices_by_address('mi300x-8-findings')
    summary = lspci.summarize(list(devices.values()))
    assert devices['0000:3d:00.0']['pcie']['width_downgraded'] is True
    assert devices['0000:3d:00.0']['pcie']['speed_downgraded'] is False
    assert (devices['0000:4e:00.0']['pcie']['link_speed_gts'], devices['0000:4e:00.0']['pcie']['speed_downgraded']) == (16.0, True)
    assert devices['0000:5f:00.0']['largest_bar_bytes'] == 256 * 1024 ** 2
    assert devices['0000:1b:00.0']['largest_bar_bytes'] == 256 * GIB
    assert summary['bridges_with_acs'] == ['0000:9c:00.0', '0000:bc:00.0']
    assert devices['0000:9c:00.0']['acs']['enabled'] == ['CmpltRedir', 'ReqRedir', 'SrcValid', 'UpstreamFwd']
    # Both ends of a link train alike: the switch ports above the slow GPUs show it too.
    assert set(summary['downgraded_links']) == set(['0000:3c:00.0', '0000:3d:00.0', '0000:4d:00.0', '0000:4e:00.0'])


def test_the_findings_profile_is_mi300x_8_but_for_its_findings():
    base, findings = profile('mi300x-8'), profile('mi300x-8-findings')
    assert findings['cpus'] == base['cpus']
    strip = ('pcie_link', 'bar_bytes', 'bridge_acs')
    assert [dict((k, v) for k, v in gpu.items() if k not in strip) for gpu in findings['gpus']] == base['gpus']


def test_without_root_lspci_cannot_read_capabilities():
    parsed = lspci.parse_lspci(lspci_of('mi300x-2', root=False))
    assert parsed['capabilities_readable'] is False
    assert all(dev['pcie'] is None and dev['acs'] is None for dev in parsed['devices'])
    # Regions come from sysfs and show without root, as with the real lspci.
    assert parsed['devices'][1]['largest_bar_bytes'] == 256 * GIB


@pytest.mark.parametrize('args, expected', [
    pytest.param(['-d', '1002:'], ['0c:00.0 Processing accelerators: Advanced Micro Devices, Inc. [AMD/ATI] Aqua Vanjaram [Instinct MI300X]',
                                   '22:00.0 Processing accelerators: Advanced Micro Devices, Inc. [AMD/ATI] Aqua Vanjaram [Instinct MI300X]'],
                 id='vendor-filter'),
    pytest.param(['-D', '-nn', '-s', '0b:00.0'],
                 ['0000:0b:00.0 PCI bridge [0604]: Broadcom / LSI PEX890xx PCIe Gen 5 Switch [1000:c030] (rev b0) (prog-if 00 [Normal decode])'],
                 id='slot-filter'),
])
def test_lspci_filters(args, expected):
    assert lspci_of('mi300x-2', args=args).splitlines() == expected


def test_lspci_refuses_options_it_does_not_simulate():
    out, err, rc = gpusim.render_lspci(labhost.State(profile=profile('mi300x-2')), ['-t'])
    assert (out, rc) == ('', 2) and 'only -D, -nn' in err


def test_gpus_on_one_bus_need_a_bridge_address():
    data = {'name': 'clash', 'cpus': [{'model': 'x', 'numa_node': 0}],
            'gpus': [{'model': 'MI300X', 'pci': '0000:0c:00.0', 'numa_node': 0}, {'model': 'MI300X', 'pci': '0000:0d:00.0', 'numa_node': 0}]}
    with pytest.raises(labhost.LabGpuError, match='give the GPU a "bridge" address'):
        gpusim.pci_devices(labhost.State(profile=data))
    data['gpus'][1]['bridge'] = '0000:40:01.0'
    assert [dev['at'] for dev in gpusim.pci_devices(labhost.State(profile=data))][-1] == (0, 0x40, 1, 0)


def test_unknown_acs_flags_are_refused():
    data = {'name': 'acs', 'cpus': [], 'gpus': [{'model': 'MI300X', 'pci': '0000:0c:00.0', 'numa_node': 0, 'bridge_acs': ['SrcValid', 'Nope']}]}
    with pytest.raises(labhost.LabGpuError, match='unknown ACS flags'):
        gpusim.pci_devices(labhost.State(profile=data))


# ---------------------------------------------------------------------------------------------
# the procfs stand-in

@pytest.mark.parametrize('name', PROFILES)
def test_proc_files_parse_with_the_collection_parser(name):
    files = labhost.proc_files(profile(name))
    readings = cmdline.cmdline_readings(files['cmdline'])
    assert readings['iommu_disabled_by'] == []
    assert readings['pci_realloc_off'] is True
    # A findings profile sets its own kernel command line (mi300x-8-findings: no iommu=pt); the others have the default.
    assert readings['iommu_passthrough'] is ('kernel_cmdline' not in profile(name))
    assert files[os.path.join('sys', 'kernel', 'numa_balancing')] == '0\n'


def test_procfs_command_writes_once(tmp_path):
    env = dict(os.environ, LLMFLEET_LAB_GPU_PROFILE=os.path.join(ROOT, 'lab', 'profiles', 'mi300x-8-findings.json'))
    argv = [sys.executable, os.path.join(STUBS, 'gpusim.py'), 'procfs', str(tmp_path / 'proc')]
    first = subprocess.run(argv, env=env, stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    again = subprocess.run(argv, env=env, stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert first.splitlines() == ['changed %s' % (tmp_path / 'proc' / 'cmdline'),
                                  'changed %s' % (tmp_path / 'proc' / 'sys' / 'kernel' / 'numa_balancing')]
    assert again == ''
    assert 'amd_iommu=on pci=realloc=off' in (tmp_path / 'proc' / 'cmdline').read_text()


def test_procfs_command_needs_its_name():
    proc = subprocess.run([sys.executable, os.path.join(STUBS, 'gpusim.py')], stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert proc.returncode == 2 and 'usage: gpusim.py procfs' in proc.stderr


# ---------------------------------------------------------------------------------------------
# the preflight role's gather and judgement on a fake lab host

def lab_host(node, name):
    """The registered results of the role's five facts modules on a lab host with the profile ``name``."""
    path = os.path.join(node.bin, 'lspci')
    with open(path, 'w') as handle:
        handle.write(LSPCI_STANDIN % {'python': sys.executable, 'stubs': STUBS,
                                      'profile': os.path.join(ROOT, 'lab', 'profiles', name + '.json')})
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    # The lab VM's CPUs: one socket, one NUMA node with two CPUs.
    node.write(os.path.join(node.sysfs, 'devices', 'system', 'node', 'node0', 'cpulist'), '0-1\n')
    node.write(os.path.join(node.sysfs, 'devices', 'system', 'node', 'online'), '0\n')
    node.write(os.path.join(node.sysfs, 'devices', 'system', 'cpu', 'online'), '0-1\n')
    for cpu in (0, 1):
        node.write(os.path.join(node.sysfs, 'devices', 'system', 'cpu', 'cpu%d' % cpu, 'topology', 'physical_package_id'), '0\n')
    proc = os.path.join(node.root, 'proc')
    labhost.write_proc_files(profile(name), proc)
    results = {
        'rocm': node.run('rocm_facts', rocm_path=node.rocm, sysfs_path=node.sysfs),
        'pcie': node.run('pcie_facts', sysfs_path=node.sysfs),
        'numa': node.run('numa_facts', sysfs_path=node.sysfs),
        'rdma': node.run('rdma_facts', sysfs_path=node.sysfs),
        'node': node.run('preflight_facts', proc_path=proc, sysfs_path=node.sysfs, disk_path=node.root,
                         kernel_packages=[], kernel_packages_release=LAB_PLATFORM['kernel']),
    }
    for key, result in results.items():
        assert not result.get('failed'), (key, result)
    assert results['pcie']['commands'] == [[path, '-D', '-nn', '-vvv']]
    return results


def judged(inputs):
    """preflight_findings of the role's inputs, of the rules the profile decides."""
    return [item for item in preflight_findings(inputs) if item['id'] in PROFILE_RULES]


def role_inputs(results, **knobs):
    """_preflight_findings_inputs of roles/preflight/vars/main.yml with the role's defaults."""
    inputs = dict(platform=LAB_PLATFORM, kernel_managed=None, min_kernel='5.15', disk_path='/opt', min_free_gib=0,
                  multi_node=None, expected_gpu_count=None, accepted=[], **results)
    inputs.update(knobs)
    return inputs


@pytest.mark.parametrize('name', CLEAN)
def test_a_clean_lab_host_has_nothing_to_fix(node, name):
    results = lab_host(node, name)
    found = judged(role_inputs(results, expected_gpu_count=len(profile(name)['gpus'])))
    expected = [('kernel-packages-unchecked', 'info')]
    if name == 'mi210-plus-igpu':
        # An APU's iGPU shows a 256 MiB BAR, as on real Ryzen hosts: a warning, never a stop.
        expected.insert(0, ('gpu-bar-small', 'warn'))
    assert [(item['id'], item['level']) for item in found] == expected
    readings = preflight_readings(role_inputs(results))
    assert readings['gpu_count_pci'] == len(profile(name)['gpus'])
    assert readings['cmdline']['iommu_passthrough'] is True


def test_the_findings_host_shows_each_finding_with_its_level_and_fix(node):
    found = judged(role_inputs(lab_host(node, 'mi300x-8-findings'), expected_gpu_count=8))
    assert [(item['id'], item['level']) for item in found] == [(rule, level) for rule, level, _text, _fix in FINDINGS]
    for item, (rule, _level, text, fix) in zip(found, FINDINGS):
        assert text in item['message'], (rule, item['message'])
        assert item['fix'] == fix, rule


def test_the_findings_host_in_a_multi_node_fleet(node):
    found = judged(role_inputs(lab_host(node, 'mi300x-8-findings'), multi_node=True))
    levels = dict((item['id'], item['level']) for item in found)
    for rule, level in MULTI_NODE.items():
        assert levels[rule] == level
    assert [item['id'] for item in found if item['level'] == 'warn'] == [
        'gpu-bar-small', 'iommu-passthrough-missing', 'pcie-link-width-downgraded', 'pcie-link-speed-downgraded',
        'rdma-none', 'pcie-acs-enabled']
