# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Simulated AMD GPUs for the llmfleet.rocm lab (no GPU code runs here).

The lab's stub packages rocminfo, rocm-smi-lib and amd-smi-lib install this module
beside small entry scripts. It reads the host's GPU profile (a JSON file the lab
writes into each lab host, standing in for the hardware) and prints what the real
tools print for that hardware, in the formats of ROCm 7.x (taken from real
captures; see tests/unit/fixtures and lab/README.md):

- ``rocminfo`` (any option other than -h/-ver/-c/-g/-s prints everything, as the
  real tool does with ``--support``);
- ``rocm-smi`` (concise table; ``--showproductname --showbus --showtoponuma
  --showmeminfo vram --showdriverversion``, in text and with ``--json``);
- ``amd-smi static --json``, ``amd-smi list --json``, ``amd-smi version``; ``amd-smi metric``,
  ``bad-pages``, ``firmware`` and ``topology`` (``--json``) are validsim.py's, as are the
  validation tools ``rvs``, ``all_reduce_perf`` and ``TransferBench``;
- ``rocm_agent_enumerator``;
- ``lspci -D -nn -vvv`` (and ``-d``/``-s`` filters): the PCI bus of the profile, each GPU below a
  PCIe switch port, with the link, BAR and ACS state the profile gives (root only sees
  capabilities, as with the real lspci).

``gpusim.py procfs [ROOT]`` writes the procfs files a profile decides (the kernel command line,
NUMA balancing) below ROOT (default /run/llmfleet-lab/proc), for ``preflight_facts``'s
``proc_path``: a container shows the host's /proc/cmdline.

The GPU layer behaves like a real one: until the (simulated) amdgpu driver is
loaded, which the boot-time unit of the stub amdgpu-dkms package does, the tools
print the real "driver not loaded" errors; a user who cannot open /dev/kfd gets the
real permission errors. Pure standard library, Python 3.6+.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import grp
import hashlib
import json
import os
import pwd
import sys

PROFILE_PATH = os.environ.get('LLMFLEET_LAB_GPU_PROFILE', '/etc/llmfleet-lab/gpu-profile.json')
SYSROOT = os.environ.get('LLMFLEET_LAB_SYSROOT', '/run/llmfleet-lab/sys')
KFD_PATH = os.environ.get('LLMFLEET_LAB_KFD', '/dev/kfd')
# The lab's stand-in for the procfs files a profile decides (a container shows the host's kernel
# command line, and runc mounts nothing over /proc/cmdline): preflight_facts reads it with proc_path.
PROCROOT = os.environ.get('LLMFLEET_LAB_PROCROOT', '/run/llmfleet-lab/proc')

# Facts per ROCm release (versions as AMD ships them).
RELEASES = {
    '7.0.2': {'runtime_ext': '1.11', 'amd_smi': '26.0.2', 'amd_smi_git': '39589fda', 'rocm_smi': '4.0.0+unknown'},
    '7.1.1': {'runtime_ext': '1.14', 'amd_smi': '26.2.0', 'amd_smi_git': '021c61fc', 'rocm_smi': '4.0.0+unknown'},
}

# Hardware facts per GPU model, from real rocminfo / rocm-smi / amd-smi captures.
MODELS = {
    'MI300X': {
        'gfx': 'gfx942', 'isa': ['gfx942:sramecc+:xnack-', 'gfx9-4-generic:sramecc+:xnack-'],
        'market_name': 'AMD Instinct MI300X', 'card_series': 'AMD Instinct MI300X OAM', 'sku': 'M3000100',
        'device_id': 0x74a1, 'subsystem_id': 0x74a1, 'rev_id': 0x00, 'asic_revision': 1,
        'compute_units': 304, 'simds_per_cu': 4, 'shader_engines': 32, 'arrays_per_engine': 1,
        'max_clock_mhz': 2100, 'cache_kb': [32, 4096, 262144], 'cacheline': 128, 'wavefront': 64,
        'coherent_host_access': False, 'apu': False, 'pp_ucode': 177, 'sdma_ucode': 24,
        'vram_pool_kb': 201310208, 'vram_mb': 196592, 'vram_type': 'HBM3', 'vram_vendor': 'HYNIX', 'vram_bit_width': 8192,
        'max_power_w': 750, 'pcie_gen': 5, 'pcie_width': 16, 'slot_type': 'OAM', 'partitions': ('NPS1', 'SPX'),
        'vbios_name': 'AMD MI300X_HW_SRIOV_CVS_1VF', 'vbios_part': '113-M3000100-103', 'vbios_version': '022.040.003.043.000001',
        'idle_power_w': 140.0, 'idle_sclk': 132, 'idle_mclk': 900, 'temp_c': 45.0,
        'pci_class': ('Processing accelerators', 0x1200), 'pci_name': 'Aqua Vanjaram [Instinct MI300X]', 'bar_bytes': 256 << 30,
    },
    'MI250X': {
        'gfx': 'gfx90a', 'isa': ['gfx90a:sramecc+:xnack-'],
        'market_name': 'AMD Instinct MI250X', 'card_series': 'AMD Instinct MI250X', 'sku': 'D65209',
        'device_id': 0x7408, 'subsystem_id': 0x0b0c, 'rev_id': 0x00, 'asic_revision': 1,
        'compute_units': 110, 'simds_per_cu': 4, 'shader_engines': 8, 'arrays_per_engine': 1,
        'max_clock_mhz': 1700, 'cache_kb': [16, 8192], 'cacheline': 64, 'wavefront': 64,
        'coherent_host_access': True, 'apu': False, 'pp_ucode': 78, 'sdma_ucode': 8,
        'vram_pool_kb': 67092480, 'vram_mb': 65520, 'vram_type': 'HBM', 'vram_vendor': 'SAMSUNG', 'vram_bit_width': 4096,
        'max_power_w': 560, 'pcie_gen': 4, 'pcie_width': 16, 'slot_type': 'OAM', 'partitions': ('N/A', 'N/A'),
        'vbios_name': 'MI250X', 'vbios_part': '113-D65209-073', 'vbios_version': '022.012.000.034.000001',
        'idle_power_w': 90.0, 'idle_sclk': 800, 'idle_mclk': 1600, 'temp_c': 38.0,
        'pci_class': ('Display controller', 0x0380), 'pci_name': 'Aldebaran/MI200 [Instinct MI250X]', 'bar_bytes': 64 << 30,
    },
    'MI210': {
        'gfx': 'gfx90a', 'isa': ['gfx90a:sramecc+:xnack-'],
        'market_name': 'AMD Instinct MI210', 'card_series': 'AMD Instinct MI210', 'sku': 'D67301',
        'device_id': 0x740f, 'subsystem_id': 0x0c34, 'rev_id': 0x02, 'asic_revision': 1,
        'compute_units': 104, 'simds_per_cu': 4, 'shader_engines': 8, 'arrays_per_engine': 1,
        'max_clock_mhz': 1700, 'cache_kb': [16, 8192], 'cacheline': 64, 'wavefront': 64,
        'coherent_host_access': False, 'apu': False, 'pp_ucode': 78, 'sdma_ucode': 8,
        'vram_pool_kb': 67092480, 'vram_mb': 65520, 'vram_type': 'HBM', 'vram_vendor': 'HYNIX', 'vram_bit_width': 4096,
        'max_power_w': 300, 'pcie_gen': 4, 'pcie_width': 16, 'slot_type': 'PCIE', 'partitions': ('N/A', 'N/A'),
        'vbios_name': 'Mi200 pcie', 'vbios_part': '113-D67301V-073', 'vbios_version': '022.012.000.033.000001',
        'idle_power_w': 42.0, 'idle_sclk': 800, 'idle_mclk': 1600, 'temp_c': 36.0,
        'pci_class': ('Display controller', 0x0380), 'pci_name': 'Aldebaran/MI200 [Instinct MI210]', 'bar_bytes': 64 << 30,
    },
    'RADEON-IGPU-GFX1036': {
        'gfx': 'gfx1036', 'isa': ['gfx1036', 'gfx10-3-generic'],
        'market_name': 'AMD Radeon Graphics', 'card_series': 'Raphael', 'sku': 'RAPHAEL',
        'device_id': 0x13c0, 'subsystem_id': 0x8877, 'rev_id': 0xc1, 'asic_revision': 1,
        'compute_units': 2, 'simds_per_cu': 2, 'shader_engines': 1, 'arrays_per_engine': 1,
        'max_clock_mhz': 2200, 'cache_kb': [16, 256], 'cacheline': 128, 'wavefront': 32,
        'coherent_host_access': False, 'apu': True, 'pp_ucode': 121, 'sdma_ucode': 9,
        'vram_pool_kb': 15997484, 'vram_mb': 512, 'vram_type': 'DDR5', 'vram_vendor': 'N/A', 'vram_bit_width': 128,
        'max_power_w': 0, 'pcie_gen': 4, 'pcie_width': 16, 'slot_type': 'PCIE', 'partitions': ('N/A', 'N/A'),
        'vbios_name': 'RAPHAEL', 'vbios_part': '102-RAPHAEL-008', 'vbios_version': '022.001.002.008.000001',
        'idle_power_w': 8.0, 'idle_sclk': 600, 'idle_mclk': 2400, 'temp_c': 40.0,
        'pci_class': ('VGA compatible controller', 0x0300), 'pci_name': 'Granite Ridge [Radeon Graphics]', 'bar_bytes': 256 << 20,
    },
}

ANSI = {'white': '\x1b[37m', 'red': '\x1b[31m', 'reset': '\x1b[0m', 'italic': '\x1b[3m', 'end': '\x1b[0m'}


class LabGpuError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# the machine: profile + driver state

def load_profile(path=None):
    path = path or PROFILE_PATH
    try:
        with open(path) as handle:
            return json.load(handle)
    except (IOError, OSError):
        return {'name': 'none', 'cpus': [{'model': 'Virtual CPU', 'numa_node': 0, 'cores': 2, 'memory_kb': 8000000}],
                'gpus': []}


def _seed(*parts):
    return int(hashlib.sha256('/'.join(str(p) for p in parts).encode()).hexdigest(), 16)


def machine(profile):
    """Expand a profile into CPU agents and GPUs with every derived id filled in."""
    cpus = []
    for index, cpu in enumerate(profile.get('cpus', [])):
        cpus.append(dict(cpu, node=index))
    gpus = []
    for index, gpu in enumerate(sorted(profile.get('gpus', []), key=lambda g: g['pci'])):
        model = MODELS[gpu['model']]
        seed = _seed(profile.get('name'), gpu['pci'])
        domain, bus, rest = gpu['pci'].split(':')
        dev, fn = rest.split('.')
        entry = dict(model)
        entry.update(gpu)
        entry.update({
            'index': index,
            'node': len(cpus) + index,
            'domain': int(domain, 16), 'bus': int(bus, 16), 'dev': int(dev, 16), 'fn': int(fn, 16),
            'bdfid': (int(bus, 16) << 8) | (int(dev, 16) << 3) | int(fn, 16),
            'unique_id': gpu.get('unique_id') or '%016x' % (seed & 0xffffffffffffffff),
            'guid': gpu.get('guid') or (seed >> 64) % 65536,
            'kfd_id': gpu.get('kfd_id') or (seed >> 80) % 65536,
            'serial': gpu.get('serial') or 'PCB%09d' % ((seed >> 96) % 1000000000),
            'card': index,
            'render_minor': 128 + index,
        })
        gpus.append(entry)
    return cpus, gpus


def driver_state(sysroot=None):
    """Return the loaded amdgpu version, or None when the (simulated) module is not live."""
    base = os.path.join(sysroot or SYSROOT, 'module', 'amdgpu')
    try:
        with open(os.path.join(base, 'initstate')) as handle:
            if 'live' not in handle.read():
                return None
    except (IOError, OSError):
        return None
    try:
        with open(os.path.join(base, 'version')) as handle:
            return handle.read().strip() or 'unknown'
    except (IOError, OSError):
        return 'unknown'


def kfd_open_error(kfd_path=None):
    """Return the strerror of opening /dev/kfd read-write, or None when it opens."""
    try:
        fd = os.open(kfd_path or KFD_PATH, os.O_RDWR)
    except OSError as exc:
        return exc.strerror
    os.close(fd)
    return None


def rocm_version_of(prefix):
    """ROCm version from <prefix>/.info/version ("7.1.1-38" -> "7.1.1")."""
    try:
        with open(os.path.join(prefix, '.info', 'version')) as handle:
            return handle.read().strip().split('-')[0]
    except (IOError, OSError):
        return None


class State:
    """Everything a tool needs to print: the machine, the driver, the caller and the release."""

    def __init__(self, profile=None, driver=None, kfd_error=None, rocm_version='7.1.1', user='root', loaded=True, root=True):
        self.profile = profile if profile is not None else load_profile()
        self.cpus, self.gpus = machine(self.profile)
        self.driver = driver if loaded else None
        self.kfd_error = kfd_error
        self.rocm_version = rocm_version
        self.release = RELEASES.get(rocm_version, RELEASES['7.1.1'])
        self.user = user
        # lspci reads PCI capabilities (links, ACS) only as root.
        self.root = root

    @classmethod
    def from_host(cls, prefix):
        driver = driver_state()
        try:
            user = os.getlogin()
        except OSError:
            user = None
        return cls(profile=load_profile(), driver=driver, loaded=driver is not None,
                   kfd_error=kfd_open_error() if driver else None,
                   rocm_version=rocm_version_of(prefix) or '7.1.1', user=user, root=os.geteuid() == 0)


# ---------------------------------------------------------------------------------------------
# rocminfo

LABEL, VALUE = 25, 35


def _ri(num):
    return '%d(0x%x)' % (num, num)


class _Out:
    def __init__(self):
        self.lines = []

    def label(self, text, indent=0, newline=True):
        line = ' ' * (2 * indent) + '%-*s' % (LABEL, text)
        if newline:
            self.lines.append(line)
        return line

    def pair(self, text, value, indent=0):
        self.lines.append(' ' * (2 * indent) + '%-*s%-*s' % (LABEL, text, VALUE, value))

    def raw(self, text, value, indent=0):
        self.lines.append(' ' * (2 * indent) + '%-*s%s' % (LABEL, text, value))

    def text(self):
        return '\n'.join(self.lines) + '\n'


def _rocminfo_pool(out, number, segment, size_kb, allocatable=True, granule=4, rec=4, align=4, access='TRUE'):
    out.label('Pool %d' % number, 2)
    out.pair('Segment:', segment, 3)
    out.pair('Size:', '%s KB' % _ri(size_kb), 3)
    out.pair('Allocatable:', 'TRUE' if allocatable else 'FALSE', 3)
    out.pair('Alloc Granule:', '%dKB' % granule, 3)
    out.pair('Alloc Recommended Granule:', '%dKB' % rec, 3)
    out.pair('Alloc Alignment:', '%dKB' % align, 3)
    out.pair('Accessible by all:', access, 3)


def _rocminfo_isa(out, number, name, wavefront32):
    out.label('ISA %d' % number, 2)
    out.pair('Name:', 'amdgcn-amd-amdhsa--' + name, 3)
    out.pair('Machine Models:', 'HSA_MACHINE_MODEL_LARGE', 3)
    out.pair('Profiles:', 'HSA_PROFILE_BASE', 3)
    out.pair('Default Rounding Mode:', 'NEAR', 3)
    out.pair('Default Rounding Mode:', 'NEAR', 3)
    out.pair('Fast f16:', 'TRUE', 3)
    out.pair('Workgroup Max Size:', _ri(1024), 3)
    out.label('Workgroup Max Size per Dimension:', 3)
    for axis in 'xyz':
        out.pair(axis, _ri(1024), 4)
    out.pair('Grid Max Size:', _ri(4294967295), 3)
    out.label('Grid Max Size per Dimension:', 3)
    dims = (2147483647, 65535, 65535) if wavefront32 else (4294967295, 4294967295, 4294967295)
    for axis, dim in zip('xyz', dims):
        out.pair(axis, _ri(dim), 4)
    out.raw('FBarrier Max Size:', '%-*d' % (VALUE, 32), 3)


def _rocminfo_agent_common(out, name, uuid, market, vendor, feature, profile, max_queue, qmin, qmax, node, dtype):
    out.pair('Name:', name, 1)
    out.pair('Uuid:', uuid, 1)
    out.pair('Marketing Name:', market, 1)
    out.pair('Vendor Name:', vendor, 1)
    out.pair('Feature:', feature, 1)
    out.pair('Profile:', profile, 1)
    out.pair('Float Round Mode:', 'NEAR', 1)
    out.pair('Max Queue Number:', _ri(max_queue), 1)
    out.pair('Queue Min Size:', _ri(qmin), 1)
    out.pair('Queue Max Size:', _ri(qmax), 1)
    out.pair('Queue Type:', 'MULTI', 1)
    out.raw('Node:', '%-*d' % (VALUE, node), 1)
    out.pair('Device Type:', dtype, 1)
    out.label('Cache Info:', 1)


def render_rocminfo(state):
    """Return (stdout, stderr, rc) of ``rocminfo`` / ``rocminfo --support``."""
    if state.driver is None:
        return '%sROCk module is NOT loaded, possibly no GPU devices%s\n' % (ANSI['red'], ANSI['reset']), '', 1
    head = '%sROCk module version %s is loaded%s\n' % (ANSI['white'], state.driver, ANSI['reset'])
    if state.kfd_error:
        text = head + '%sUnable to open /dev/kfd read-write: %s%s\n' % (ANSI['red'], state.kfd_error, ANSI['reset'])
        if state.user is None:
            text += '%sFailed to get user name to check for render group membership%s\n' % (ANSI['red'], ANSI['reset'])
        elif _in_group(state.user, 'render'):
            text += '%s%s is member of render group%s\n' % (ANSI['white'], state.user, ANSI['reset'])
        else:
            text += ('%s%s is not member of "render" group, the default DRM access group. Users must be a member of the '
                     '"render" group or another DRM access group in order for ROCm applications to run successfully%s.\n'
                     % (ANSI['red'], state.user, ANSI['reset']))
        return text, '', 1
    out = _Out()
    for line in ('=====================', 'HSA System Attributes', '====================='):
        out.label(line)
    out.raw('Runtime Version:', '1.18')
    out.raw('Runtime Ext Version:', state.release['runtime_ext'])
    out.raw('System Timestamp Freq.:', '1000.000000MHz')
    out.raw('Sig. Max Wait Duration:', '18446744073709551615 (0xFFFFFFFFFFFFFFFF) (timestamp count)')
    out.pair('Machine Model:', 'LARGE')
    out.pair('System Endianness:', 'LITTLE')
    out.raw('Mwaitx:', 'DISABLED')
    out.raw('XNACK enabled:', 'NO')
    out.raw('DMAbuf Support:', 'YES')
    out.raw('VMM Support:', 'YES')
    out.lines.append('')
    for line in ('==========', 'HSA Agents', '=========='):
        out.label(line)
    number = 0
    for cpu in state.cpus:
        number += 1
        for line in ('*******', 'Agent %d' % number, '*******'):
            out.label(line)
        _rocminfo_agent_common(out, cpu['model'], 'CPU-XX', cpu['model'], 'CPU', 'None specified', 'FULL_PROFILE',
                               0, 0, 0, cpu['node'], 'CPU')
        out.pair('L1:', '%s KB' % _ri(cpu.get('l1_kb', 49152)), 2)
        out.pair('Chip ID:', _ri(0), 1)
        out.pair('ASIC Revision:', _ri(0), 1)
        out.pair('Cacheline Size:', _ri(64), 1)
        for text, value in (('Max Clock Freq. (MHz):', cpu.get('max_clock_mhz', 2400)), ('BDFID:', 0),
                            ('Internal Node ID:', cpu['node']), ('Compute Unit:', cpu.get('cores', 2)),
                            ('SIMDs per CU:', 0), ('Shader Engines:', 0), ('Shader Arrs. per Eng.:', 0),
                            ('WatchPts on Addr. Ranges:', 1)):
            out.raw(text, '%-*d' % (VALUE, value), 1)
        out.label('Memory Properties:', 1)
        out.raw('Features:', 'None', 1)
        out.label('Pool Info:', 1)
        flags = ['FINE GRAINED', 'EXTENDED FINE GRAINED', 'KERNARG, FINE GRAINED', 'COARSE GRAINED']
        for pool, flag in enumerate(flags, 1):
            _rocminfo_pool(out, pool, 'GLOBAL; FLAGS: ' + flag, cpu.get('memory_kb', 8000000))
        out.label('ISA Info:', 1)
    for gpu in state.gpus:
        number += 1
        for line in ('*******', 'Agent %d' % number, '*******'):
            out.label(line)
        _rocminfo_agent_common(out, gpu['gfx'], 'GPU-' + ('XX' if gpu['apu'] else gpu['unique_id']), gpu['market_name'],
                               'AMD', 'KERNEL_DISPATCH', 'BASE_PROFILE', 128, 64, 131072, gpu['node'], 'GPU')
        for level, size in enumerate(gpu['cache_kb'], 1):
            out.pair('L%d:' % level, '%s KB' % _ri(size), 2)
        out.pair('Chip ID:', _ri(gpu['device_id']), 1)
        out.pair('ASIC Revision:', _ri(gpu['asic_revision']), 1)
        out.pair('Cacheline Size:', _ri(gpu['cacheline']), 1)
        for text, value in (('Max Clock Freq. (MHz):', gpu['max_clock_mhz']), ('BDFID:', gpu['bdfid']),
                            ('Internal Node ID:', gpu['node']), ('Compute Unit:', gpu['compute_units']),
                            ('SIMDs per CU:', gpu['simds_per_cu']), ('Shader Engines:', gpu['shader_engines']),
                            ('Shader Arrs. per Eng.:', gpu['arrays_per_engine']), ('WatchPts on Addr. Ranges:', 4)):
            out.raw(text, '%-*d' % (VALUE, value), 1)
        out.pair('Coherent Host Access:', 'TRUE' if gpu['coherent_host_access'] else 'FALSE', 1)
        out.raw('Memory Properties:', 'APU' if gpu['apu'] else '', 1)
        out.raw('Features:', 'KERNEL_DISPATCH ', 1)
        out.pair('Fast F16 Operation:', 'TRUE', 1)
        out.pair('Wavefront Size:', _ri(gpu['wavefront']), 1)
        out.pair('Workgroup Max Size:', _ri(1024), 1)
        out.label('Workgroup Max Size per Dimension:', 1)
        for axis in 'xyz':
            out.pair(axis, _ri(1024), 2)
        out.pair('Max Waves Per CU:', _ri(32), 1)
        out.pair('Max Work-item Per CU:', _ri(32 * gpu['wavefront']), 1)
        out.pair('Grid Max Size:', _ri(4294967295), 1)
        out.label('Grid Max Size per Dimension:', 1)
        dims = (2147483647, 65535, 65535) if gpu['wavefront'] == 32 else (4294967295, 4294967295, 4294967295)
        for axis, dim in zip('xyz', dims):
            out.pair(axis, _ri(dim), 2)
        out.raw('Max fbarriers/Workgrp:', '%-*d' % (VALUE, 32), 1)
        out.raw('Packet Processor uCode::', '%-*d' % (VALUE, gpu['pp_ucode']), 1)
        out.raw('SDMA engine uCode::', '%-*d' % (VALUE, gpu['sdma_ucode']), 1)
        out.pair('IOMMU Support::', 'None', 1)
        out.label('Pool Info:', 1)
        pools = [('GLOBAL; FLAGS: COARSE GRAINED', gpu['vram_pool_kb']),
                 ('GLOBAL; FLAGS: EXTENDED FINE GRAINED', gpu['vram_pool_kb'])]
        if not gpu['apu'] and gpu['wavefront'] == 64:
            pools.append(('GLOBAL; FLAGS: FINE GRAINED', gpu['vram_pool_kb']))
        for pool, (segment, size) in enumerate(pools, 1):
            _rocminfo_pool(out, pool, segment, size, rec=2048, access='FALSE')
        _rocminfo_pool(out, len(pools) + 1, 'GROUP', 64, allocatable=False, granule=0, rec=0, align=0, access='FALSE')
        out.label('ISA Info:', 1)
        for isa_number, isa in enumerate(gpu['isa'], 1):
            _rocminfo_isa(out, isa_number, isa, gpu['wavefront'] == 32)
    out.label('*** Done ***')
    return head + out.text(), '', 0


def render_agent_enumerator(state):
    if state.driver is None or state.kfd_error:
        return 'gfx000\n', '', 0
    return ''.join('gfx000\n' for _cpu in state.cpus) + ''.join('%s\n' % gpu['gfx'] for gpu in state.gpus), '', 0


def _in_group(user, group):
    try:
        members = grp.getgrnam(group)
        entry = pwd.getpwnam(user)
    except KeyError:
        return False
    return user in members.gr_mem or entry.pw_gid == members.gr_gid


# ---------------------------------------------------------------------------------------------
# rocm-smi

APP_WIDTH = 90
SMI_DRIVER_ERRORS = ('cat: /sys/module/amdgpu/initstate: No such file or directory\n'
                     'ERROR:root:Driver not initialized (amdgpu not found in modules)\n')


def _spacer(title=None, width=APP_WIDTH, fill='='):
    if width % 2:
        width += 1
    if not title:
        return fill * width
    if len(title) % 2:
        title += fill
    side = fill * int((width - len(title)) / 2)
    return side + title + side


def _pci_upper(gpu):
    return '%04X:%02X:%02X.%X' % (gpu['domain'], gpu['bus'], gpu['dev'], gpu['fn'])


def _smi_fields(gpu, driver):
    """rocm-smi's names and values, in the order --json prints them."""
    return [
        ('Card Series', gpu['card_series']),
        ('Card Model', '0x%04x' % gpu['device_id']),
        ('Card Vendor', 'Advanced Micro Devices, Inc. [AMD/ATI]'),
        ('Card SKU', gpu['sku']),
        ('Subsystem ID', '0x%04x' % gpu['subsystem_id']),
        ('Device Rev', '0x%02x' % gpu['rev_id']),
        ('Node ID', str(gpu['node'])),
        ('GUID', str(gpu['guid'])),
        ('GFX Version', gpu['gfx']),
    ]


def _vram_used(gpu):
    return 297771008 + 4096 * (gpu['index'] % 2) if not gpu['apu'] else 135798784


def render_rocm_smi(state, args):
    """Return (stdout, stderr, rc) of ``rocm-smi [flags] [--json]``."""
    if state.driver is None:
        return '', SMI_DRIVER_ERRORS, 0
    json_out = '--json' in args or '-j' in args
    wanted = [a for a in args if a.startswith('--show') or a in ('-i', '-b', '--showmeminfo')]
    if not wanted:
        return _rocm_smi_concise(state, json_out)
    data = {}
    text = [_spacer(' ROCm System Management Interface ')]
    for gpu in state.gpus:
        data['card%d' % gpu['index']] = {}
    if '--showdriverversion' in args:
        text.append(_spacer(' Version of System Component '))
        text.append('Driver version: %s' % state.driver)
        text.append(_spacer())
        data.setdefault('system', {})['Driver version'] = state.driver
    if '--showbus' in args or '-b' in args:
        text.append(_spacer(' PCI Bus ID '))
        for gpu in state.gpus:
            text.append('GPU[%d]\t\t: PCI Bus: %s' % (gpu['index'], _pci_upper(gpu)))
            data['card%d' % gpu['index']]['PCI Bus'] = _pci_upper(gpu)
        text.append(_spacer())
    if '--showmeminfo' in args:
        text.append(_spacer(' Memory Usage (Bytes) '))
        for gpu in state.gpus:
            total = gpu['vram_mb'] * 1024 * 1024
            for key, value in (('VRAM Total Memory (B)', total), ('VRAM Total Used Memory (B)', _vram_used(gpu))):
                text.append('GPU[%d]\t\t: %s: %d' % (gpu['index'], key, value))
                data['card%d' % gpu['index']][key] = str(value)
        text.append(_spacer())
    if '--showproductname' in args:
        text.append(_spacer(' Product Info '))
        for gpu in state.gpus:
            for key, value in _smi_fields(gpu, state.driver):
                sep = '\t' if len(key) >= 12 else '\t\t'
                text.append('GPU[%d]\t\t: %s: %s%s' % (gpu['index'], key, sep, value))
                data['card%d' % gpu['index']][key] = value
        text.append(_spacer())
    if '--showtoponuma' in args:
        text.append(_spacer(' Numa Nodes '))
        for gpu in state.gpus:
            for key in ('(Topology) Numa Node', '(Topology) Numa Affinity'):
                text.append('GPU[%d]\t\t: %s: %d' % (gpu['index'], key, gpu['numa_node']))
                data['card%d' % gpu['index']][key] = str(gpu['numa_node'])
        text.append(_spacer())
    text.append(_spacer(' End of ROCm SMI Log '))
    if json_out:
        return json.dumps(data) + '\n', '', 0
    return '\n'.join(text) + '\n', '', 0


def _rocm_smi_concise(state, json_out):
    rows = []
    for gpu in state.gpus:
        power = gpu['idle_power_w'] + gpu['index'] % 5
        rows.append([str(gpu['index']), str(gpu['node']), '%-10s%s' % ('0x%04x,' % gpu['device_id'], gpu['guid']),
                     u'%.1f\u00b0C' % (gpu['temp_c'] + gpu['index'] % 4), '%.1fW' % power,
                     '%s, %s, 0' % gpu['partitions'], '%dMhz' % gpu['idle_sclk'], '%dMhz' % gpu['idle_mclk'], '0%',
                     'auto', '%.1fW' % gpu['max_power_w'] if gpu['max_power_w'] else 'N/A', '0%', '0%'])
    if json_out:
        data = {}
        for gpu, row in zip(state.gpus, rows):
            data['card%d' % gpu['index']] = {
                'Device Name': gpu['market_name'], 'Device ID': '0x%04x' % gpu['device_id'],
                'Node ID': row[1], 'GUID': str(gpu['guid']), 'Temperature (Sensor junction) (C)': row[3][:-2],
                'Current Socket Graphics Package Power (W)': row[4][:-1], 'Performance Level': 'auto',
                'GPU use (%)': '0', 'GPU Memory Allocated (VRAM%)': '0'}
        return json.dumps(data) + '\n', '', 0
    head1 = ['Device', 'Node', 'IDs', 'Temp', 'Power', 'Partitions', 'SCLK', 'MCLK', 'Fan', 'Perf', 'PwrCap', 'VRAM%', 'GPU%']
    head2 = ['', '', '(DID,     GUID)', '(Junction)', '(Socket)', '(Mem, Compute, ID)', '', '', '', '', '', '', '']
    widths = [max([len(head1[i]), len(head2[i])] + [len(r[i]) for r in rows]) + 2 for i in range(len(head1))]
    width = sum(widths)

    def line(cells):
        return ''.join(cell.ljust(widths[i]) for i, cell in enumerate(cells))

    text = [_spacer(' ROCm System Management Interface ', width), _spacer(' Concise Info ', width), line(head1),
            ANSI['italic'] + line(head2) + ANSI['end'], _spacer(None, width)]
    text.extend(line(row) for row in rows)
    text += [_spacer(None, width), _spacer(' End of ROCm SMI Log ', width)]
    return '\n'.join(text) + '\n', '', 0


# ---------------------------------------------------------------------------------------------
# amd-smi

AMD_SMI_DRIVER_ERRORS = (
    'ERROR:root:Unable to get devices, driver not initialized (amdgpu not found in modules)\n'
    'ERROR:root:Unable to detect any GPU devices, check amdgpu version and module status (sudo modprobe amdgpu)\n'
    'ERROR:root:Unable to detect any CPU devices, check amd_hsmp (or) hsmp_acpi version and module status '
    '(sudo modprobe amd_hsmp (or) sudo modprobe hsmp_acpi)\n')
AMD_SMI_NO_PERM = ('amdsmi.amdsmi_exception.AmdSmiLibraryException: Error code:\n'
                   '\t10 | AMDSMI_STATUS_NO_PERM - Permission Denied\n\n'
                   'The above exception was the direct cause of the following exception:\n\n'
                   'PermissionError: Command requires elevation\n')


def _uuid(gpu):
    tail = gpu['unique_id'][-12:]
    return '%02xff%04x-0000-1000-80%s-%s' % (gpu['index'], gpu['device_id'], tail[:2], tail)


def _vu(value, unit):
    return {'value': value, 'unit': unit}


def amd_smi_static(gpu, state):
    cpus_on_node = [c for c in state.cpus if c.get('numa_node', c['node']) == gpu['numa_node']]
    cores = cpus_on_node[0].get('cores', 2) if cpus_on_node else 2
    first = sum(c.get('cores', 2) for c in state.cpus if c['node'] < (cpus_on_node[0]['node'] if cpus_on_node else 0))
    return {
        'gpu': gpu['index'],
        'asic': {
            'market_name': gpu['market_name'], 'vendor_id': '0x1002',
            'vendor_name': 'Advanced Micro Devices Inc. [AMD/ATI]', 'subvendor_id': '0x1002',
            'device_id': '0x%04x' % gpu['device_id'], 'subsystem_id': '0x%04x' % gpu['subsystem_id'],
            'rev_id': '0x%02x' % gpu['rev_id'], 'asic_serial': '0x' + gpu['unique_id'].upper(),
            'oam_id': gpu['index'] if gpu['slot_type'] == 'OAM' else 'N/A',
            'num_compute_units': gpu['compute_units'], 'target_graphics_version': gpu['gfx'],
        },
        'bus': {
            'bdf': gpu['pci'], 'max_pcie_width': gpu['pcie_width'],
            'max_pcie_speed': _vu(32 if gpu['pcie_gen'] == 5 else 16, 'GT/s'),
            'pcie_interface_version': 'Gen %d' % gpu['pcie_gen'], 'slot_type': gpu['slot_type'],
        },
        'vbios': {'name': gpu['vbios_name'], 'build_date': '2024/05/16 12:00', 'part_number': gpu['vbios_part'],
                  'version': gpu['vbios_version']},
        'limit': {
            'max_power': _vu(gpu['max_power_w'], 'W'), 'min_power': _vu(0, 'W'),
            'socket_power': _vu(gpu['max_power_w'], 'W'),
            'slowdown_edge_temperature': 'N/A', 'slowdown_hotspot_temperature': _vu(100, 'C'),
            'slowdown_vram_temperature': _vu(95, 'C'), 'shutdown_edge_temperature': 'N/A',
            'shutdown_hotspot_temperature': _vu(110, 'C'), 'shutdown_vram_temperature': _vu(100, 'C'),
        },
        'driver': {'name': 'amdgpu', 'version': state.driver},
        'board': {'model_number': gpu['vbios_part'], 'product_serial': gpu['serial'], 'fru_id': 'N/A',
                  'product_name': gpu['card_series'], 'manufacturer_name': 'AMD'},
        'soc_pstate': 'N/A',
        'xgmi_plpd': 'N/A',
        'process_isolation': 'Disabled',
        'numa': {
            'node': gpu['numa_node'], 'affinity': gpu['numa_node'],
            'cpu_affinity': {'cpu_list_0': {'bitmask': 'N/A', 'cpu_cores_affinity': '%d-%d' % (first, first + cores - 1)}},
            'socket_affinity': {'socket_%d' % gpu['numa_node']: gpu['numa_node']},
        },
        'vram': {'type': gpu['vram_type'], 'vendor': gpu['vram_vendor'], 'size': _vu(gpu['vram_mb'], 'MB'),
                 'bit_width': gpu['vram_bit_width'], 'max_bandwidth': _vu('N/A', 'GB/s')},
        'cache_info': [
            {'cache': level - 1, 'cache_properties': ['DATA_CACHE', 'SIMD_CACHE'], 'cache_size': _vu(size, 'KB'),
             'cache_level': level, 'max_num_cu_shared': 1 if level == 1 else gpu['compute_units'],
             'num_cache_instance': gpu['compute_units'] if level == 1 else 1}
            for level, size in enumerate(gpu['cache_kb'], 1)],
        'partition': {'compute_partition': gpu['partitions'][1], 'memory_partition': gpu['partitions'][0],
                      'partition_id': 0},
        'ras': amd_smi_ras(gpu),
    }


# The RAS section of "amd-smi static": EEPROM version, bad page threshold, schemas and the ECC state of each
# block as in tests/unit/fixtures/amd_smi_health/static-ras-vbios-mi210.json; XGMI_WAFL is enabled on the
# OAM parts joined by xGMI (disabled on that PCIe MI210). An APU reports no RAS.
RAS_BLOCKS = ('UMC', 'SDMA', 'GFX', 'MMHUB', 'ATHUB', 'PCIE_BIF', 'HDP', 'XGMI_WAFL', 'DF', 'SMN', 'SEM', 'MP0', 'MP1',
              'FUSE', 'MCA', 'VCN', 'JPEG', 'IH', 'MPIO')


def amd_smi_ras(gpu):
    if gpu['apu']:
        return 'N/A'
    return {'eeprom_version': '0x10000', 'bad_page_threshold': 655, 'parity_schema': 'DISABLED',
            'single_bit_schema': 'DISABLED', 'double_bit_schema': 'DISABLED', 'poison_schema': 'ENABLED',
            'ecc_block_state': dict((block, 'DISABLED' if block == 'XGMI_WAFL' and gpu['slot_type'] != 'OAM'
                                     else 'ENABLED') for block in RAS_BLOCKS)}


def render_amd_smi(state, args):
    """Return (stdout, stderr, rc) of ``amd-smi version | list [--json] | static [--json]``."""
    command = args[0] if args else ''
    json_out = '--json' in args
    release = state.release
    version_line = 'AMDSMI Tool: %s+%s | AMDSMI Library version: %s | ROCm version: %s | amdgpu version: %s | amd_hsmp version: N/A\n' % (
        release['amd_smi'], release['amd_smi_git'], release['amd_smi'], state.rocm_version or 'N/A', state.driver or 'N/A')
    if command == 'version':
        if state.driver is None:
            return version_line, AMD_SMI_DRIVER_ERRORS, 0
        return version_line, '', 0
    if command in ('metric', 'bad-pages', 'firmware', 'topology'):
        import validsim  # the health commands (lab/stubs/validsim.py, installed beside this module)
        return validsim.render_amd_smi_health(state, args)
    if command not in ('list', 'static'):
        return '', ('amd-smi (llmfleet lab stub): only "version", "list", "static", "metric", "bad-pages", '
                    '"firmware" and "topology" are simulated\n'), 2
    if state.driver is None:
        return '', AMD_SMI_DRIVER_ERRORS, 0
    if state.kfd_error:
        return '', AMD_SMI_NO_PERM, 1
    if command == 'list':
        entries = [{'gpu': g['index'], 'bdf': g['pci'], 'uuid': _uuid(g), 'kfd_id': g['kfd_id'], 'node_id': g['node'],
                    'partition_id': 0} for g in state.gpus]
        if json_out:
            return json.dumps(entries, indent=4) + '\n', '', 0
        text = ''
        for entry in entries:
            text += 'GPU: %d\n    BDF: %s\n    UUID: %s\n    KFD_ID: %d\n    NODE_ID: %d\n    PARTITION_ID: 0\n\n' % (
                entry['gpu'], entry['bdf'], entry['uuid'], entry['kfd_id'], entry['node_id'])
        return text, '', 0
    data = {'gpu_data': [amd_smi_static(g, state) for g in state.gpus]}
    if json_out:
        return json.dumps(data, indent=4) + '\n', '', 0
    text = ''
    for gpu in data['gpu_data']:
        text += 'GPU: %d\n' % gpu['gpu']
        for section in ('asic', 'bus', 'vram', 'numa', 'partition'):
            text += '    %s:\n' % section.upper()
            for key, value in gpu[section].items():
                if isinstance(value, dict) and 'value' in value:
                    value = '%s %s' % (value['value'], value['unit'])
                text += '        %s: %s\n' % (key.upper(), value)
        text += '\n'
    return text, '', 0


# ---------------------------------------------------------------------------------------------
# lspci: the PCI bus of the profile (every GPU below its PCIe switch's downstream port)
#
# A profile's GPU may say what its PCIe link trained to ("pcie_link": {"speed_gts": 16, "width": 16};
# default: what the model can), the size of its largest memory region ("bar_bytes"; default: the
# model's full BAR, as with Above 4G decoding on), the ACS controls enabled on the bridge above it
# ("bridge_acs": ["SrcValid", ...]; default: none) and that bridge's address ("bridge"; default: the
# bus below the GPU's, device 0). The layout of lspci's output follows real captures
# (tests/unit/fixtures/lspci).

ACS_FLAGS = ('SrcValid', 'TransBlk', 'ReqRedir', 'CmpltRedir', 'UpstreamFwd', 'EgressCtrl', 'DirectTrans')
SWITCHES = {5: ('Broadcom / LSI PEX890xx PCIe Gen 5 Switch', 0x1000, 0xc030), 4: ('Broadcom / LSI PEX880xx PCIe Gen 4 Switch', 0x1000, 0xc010)}
PCIE_SPEEDS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0}
LSPCI_USAGE = 'lspci (llmfleet lab stub): only -D, -nn, -v, -vv, -vvv, -k, -d <vendor>:[<device>] and -s <address> are simulated\n'


def _parse_address(text):
    domain, bus, rest = text.split(':')
    dev, fn = rest.split('.')
    return int(domain, 16), int(bus, 16), int(dev, 16), int(fn, 16)


def _address(domain, bus, dev, fn, with_domain=True):
    text = '%02x:%02x.%x' % (bus, dev, fn)
    return ('%04x:' % domain + text) if with_domain else text


def _lspci_size(num):
    for unit, shift in (('T', 40), ('G', 30), ('M', 20), ('K', 10)):
        if num >= 1 << shift and num % (1 << shift) == 0:
            return '%d%s' % (num >> shift, unit)
    return '%d' % num


def _gts(speed):
    return '%gGT/s' % speed


def pci_devices(state):
    """The PCI devices of the profile in address order: a switch downstream port above each GPU, then the GPU."""
    devices = []
    group = 10
    for gpu in state.gpus:
        cap_speed = PCIE_SPEEDS[gpu['pcie_gen']]
        cap_width = gpu['pcie_width']
        link = gpu.get('pcie_link') or {}
        speed, width = float(link.get('speed_gts', cap_speed)), int(link.get('width', cap_width))
        if gpu.get('bridge'):
            bridge_at = _parse_address(gpu['bridge'])
        else:
            bridge_at = (gpu['domain'], gpu['bus'] - 1, 0, 0)
        switch = SWITCHES.get(gpu['pcie_gen'], SWITCHES[4])
        enabled = set(gpu.get('bridge_acs') or [])
        unknown = enabled - set(ACS_FLAGS)
        if unknown:
            raise LabGpuError('profile GPU %s: unknown ACS flags %s (known: %s)' % (gpu['pci'], sorted(unknown), ', '.join(ACS_FLAGS)))
        devices.append({
            'kind': 'bridge', 'at': bridge_at, 'gpu': gpu, 'group': group,
            'class': ('PCI bridge', 0x0604), 'vendor': switch[1], 'device': switch[2], 'name': switch[0], 'rev': 0xb0,
            'link': (PCIE_SPEEDS[gpu['pcie_gen']], 16, speed, width),
            'acs': [(flag, flag in enabled) for flag in ACS_FLAGS],
        })
        devices.append({
            'kind': 'gpu', 'at': (gpu['domain'], gpu['bus'], gpu['dev'], gpu['fn']), 'gpu': gpu, 'group': group + 1,
            'class': gpu['pci_class'], 'vendor': 0x1002, 'device': gpu['device_id'], 'name': gpu['pci_name'], 'rev': gpu['rev_id'],
            'link': (cap_speed, cap_width, speed, width), 'bar_bytes': int(gpu.get('bar_bytes', gpu['bar_bytes'])),
        })
        group += 2
    devices.sort(key=lambda device: device['at'])
    seen = set()
    for device in devices:
        if device['at'] in seen:
            raise LabGpuError('profile %s: two PCI devices at %s (give the GPU a "bridge" address)'
                              % (state.profile.get('name'), _address(*device['at'])))
        seen.add(device['at'])
    return devices


def _ids(numeric, text, value, width=4):
    return '%s [%0*x]' % (text, width, value) if numeric else text


def _lspci_device(device, state, numeric, with_domain, verbose):
    gpu = device['gpu']
    header = '%s %s: %s' % (_address(*device['at'], with_domain=with_domain), _ids(numeric, device['class'][0], device['class'][1]),
                            'Advanced Micro Devices, Inc. [AMD/ATI] ' + device['name'] if device['kind'] == 'gpu' else device['name'])
    if numeric:
        header += ' [%04x:%04x]' % (device['vendor'], device['device'])
    if device['rev']:
        header += ' (rev %02x)' % device['rev']
    if device['kind'] == 'bridge':
        header += ' (prog-if 00 [Normal decode])'
    lines = [header]
    if not verbose:
        return lines
    vendor = 'Advanced Micro Devices, Inc. [AMD/ATI]' if device['kind'] == 'gpu' else 'Broadcom / LSI'
    sub = gpu['subsystem_id'] if device['kind'] == 'gpu' else 0xa064
    lines.append('\tSubsystem: %s' % ('%s Device [%04x:%04x]' % (vendor, device['vendor'], sub) if numeric else '%s Device %04x' % (vendor, sub)))
    lines.append('\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+')
    lines.append('\tStatus: Cap+ 66MHz- UDF- FastB2B- ParErr- DEVSEL=fast >TAbort- <TAbort- <MAbort- >SERR- <PERR- INTx-')
    lines.append('\tLatency: 0, Cache Line Size: 64 bytes')
    lines.append('\tNUMA node: %d' % gpu['numa_node'])
    lines.append('\tIOMMU group: %d' % device['group'])
    base = 0x20000000000 + gpu['index'] * 0x8000000000
    if device['kind'] == 'bridge':
        lines.append('\tBus: primary=%02x, secondary=%02x, subordinate=%02x, sec-latency=0' % (device['at'][1], gpu['bus'], gpu['bus']))
        lines.append('\tPrefetchable memory behind bridge: %016x-%016x [size=%s]'
                     % (base, base + gpu['bar_bytes'] * 2 - 1, _lspci_size(gpu['bar_bytes'] * 2)))
    else:
        lines.append('\tRegion 0: Memory at %x (64-bit, prefetchable) [size=%s]' % (base, _lspci_size(device['bar_bytes'])))
        lines.append('\tRegion 2: Memory at %x (64-bit, prefetchable) [size=2M]' % (base + max(device['bar_bytes'], 1 << 30)))
        lines.append('\tRegion 5: Memory at %x (32-bit, non-prefetchable) [size=512K]' % (0xc0000000 + gpu['index'] * 0x100000))
        lines.append('\tExpansion ROM at %x [disabled] [size=128K]' % (0xc0080000 + gpu['index'] * 0x100000))
    if not state.root:
        lines.append('\tCapabilities: <access denied>')
    else:
        cap_speed, cap_width, speed, width = device['link']
        if device['kind'] == 'bridge':
            lines.append('\tCapabilities: [68] Express (v2) Downstream Port (Slot+), MSI 00')
        else:
            lines.append('\tCapabilities: [48] Vendor Specific Information: Len=08 <?>')
            lines.append('\tCapabilities: [50] Power Management version 3')
            lines.append('\t\tFlags: PMEClk- DSI- D1- D2- AuxCurrent=0mA PME(D0-,D1+,D2+,D3hot+,D3cold+)')
            lines.append('\tCapabilities: [64] Express (v2) Endpoint, MSI 00')
        lines.append('\t\tLnkCap:\tPort #0, Speed %s, Width x%d, ASPM L1, Exit Latency L1 <4us' % (_gts(cap_speed), cap_width))
        lines.append('\t\t\tClockPM- Surprise- LLActRep+ BwNot+ ASPMOptComp+')
        lines.append('\t\tLnkCtl:\tASPM Disabled; RCB 64 bytes, Disabled- CommClk+')
        speed_flag = 'downgraded' if speed < cap_speed else 'ok'
        width_flag = 'downgraded' if width < cap_width else 'ok'
        lines.append('\t\tLnkSta:\tSpeed %s (%s), Width x%d (%s)' % (_gts(speed), speed_flag, width, width_flag))
        lines.append('\t\t\tTrErr- Train- SlotClk+ DLActive+ BWMgmt- ABWMgmt-')
        lines.append('\tCapabilities: [100 v2] Advanced Error Reporting')
        if device['kind'] == 'bridge':
            lines.append('\tCapabilities: [200 v1] Access Control Services')
            lines.append('\t\tACSCap:\t%s' % ' '.join('%s+' % flag for flag in ACS_FLAGS))
            lines.append('\t\tACSCtl:\t%s' % ' '.join('%s%s' % (flag, '+' if on else '-') for flag, on in device['acs']))
    if device['kind'] == 'bridge':
        lines.append('\tKernel driver in use: pcieport')
    elif state.driver is not None:
        lines.append('\tKernel driver in use: amdgpu')
    return lines


def render_lspci(state, args):
    """Return (stdout, stderr, rc) of ``lspci [-D] [-nn] [-v|-vv|-vvv] [-k] [-d vendor:[device]] [-s address]``."""
    numeric, with_domain, verbose, wanted_ids, wanted_slot = False, False, 0, None, None
    args = list(args)
    while args:
        arg = args.pop(0)
        if arg == '-D':
            with_domain = True
        elif arg == '-nn':
            numeric = True
        elif arg in ('-v', '-vv', '-vvv'):
            verbose = len(arg) - 1
        elif arg == '-k':
            continue
        elif arg in ('-d', '-s') and args:
            value = args.pop(0).lower()
            if arg == '-d':
                wanted_ids = value
            else:
                wanted_slot = value
        else:
            return '', LSPCI_USAGE, 2
    blocks = []
    for device in pci_devices(state):
        if wanted_ids is not None:
            vendor, _sep, dev = wanted_ids.partition(':')
            if (vendor and int(vendor, 16) != device['vendor']) or (dev and int(dev, 16) != device['device']):
                continue
        if wanted_slot is not None and not _address(*device['at']).endswith(wanted_slot):
            continue
        blocks.append(_lspci_device(device, state, numeric, with_domain, verbose))
    # With -v every device ends in an empty line, as lspci prints them.
    end = '\n\n' if verbose else '\n'
    return ''.join('\n'.join(lines) + end for lines in blocks), '', 0


# ---------------------------------------------------------------------------------------------
# procfs: what the profile says the kernel was booted with

# A node the tuning role has tuned (iommu=pt, pci=realloc=off; AMD's MI300X guide).
DEFAULT_KERNEL_CMDLINE = 'BOOT_IMAGE=/boot/vmlinuz root=LABEL=llmfleet-lab ro iommu=pt pci=realloc=off'


def proc_files(profile):
    """The files of the procfs stand-in a profile decides: {path below the root: text}."""
    return {
        'cmdline': '%s\n' % profile.get('kernel_cmdline', DEFAULT_KERNEL_CMDLINE),
        os.path.join('sys', 'kernel', 'numa_balancing'): '%d\n' % int(profile.get('numa_balancing', 0)),
    }


def write_proc_files(profile, root=None):
    """Write the procfs stand-in below ``root`` (PROCROOT); return the paths whose text changed."""
    root = root or PROCROOT
    changed = []
    for name, text in sorted(proc_files(profile).items()):
        path = os.path.join(root, name)
        try:
            with open(path) as handle:
                if handle.read() == text:
                    continue
        except (IOError, OSError):
            pass
        if not os.path.isdir(os.path.dirname(path)):
            os.makedirs(os.path.dirname(path))
        with open(path, 'w') as handle:
            handle.write(text)
        changed.append(path)
    return changed


# ---------------------------------------------------------------------------------------------
# entry point used by the installed scripts

def main(tool, argv, prefix):
    state = State.from_host(prefix)
    if tool == 'rocminfo':
        out, err, rc = render_rocminfo(state)
    elif tool == 'rocm_agent_enumerator':
        out, err, rc = render_agent_enumerator(state)
    elif tool == 'rocm-smi':
        out, err, rc = render_rocm_smi(state, argv)
    elif tool == 'amd-smi':
        out, err, rc = render_amd_smi(state, argv)
    elif tool == 'lspci':
        out, err, rc = render_lspci(state, argv)
    elif tool in ('rvs', 'all_reduce_perf', 'TransferBench'):
        import validsim  # the validation tools (lab/stubs/validsim.py, installed beside this module)
        out, err, rc = validsim.render(tool, state, argv)
    else:
        raise LabGpuError('unknown tool %s' % tool)
    sys.stdout.write(out)
    sys.stdout.flush()
    if err:
        sys.stderr.write(err)
    return rc


def write_procfs(argv):
    """``gpusim.py procfs [ROOT]``: write the procfs stand-in of this host's profile; print what changed."""
    for path in write_proc_files(load_profile(), argv[0] if argv else None):
        print('changed %s' % path)
    return 0


if __name__ == '__main__':
    if sys.argv[1:2] != ['procfs']:
        sys.stderr.write('usage: gpusim.py procfs [ROOT]   (the tools run through their entry scripts)\n')
        sys.exit(2)
    sys.exit(write_procfs(sys.argv[2:]))
