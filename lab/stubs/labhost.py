# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated hardware of an llmfleet.rocm lab host (no GPU code runs here).

The base of the lab's stub tools: gpusim.py (rocminfo, rocm-smi, amd-smi, lspci), validsim.py (rvs,
rccl-tests' all_reduce_perf, TransferBench) and amdgpu_exporter.py import this module and nothing
imports them back. It knows what the lab must be real about and no tool's output format:

- the host's GPU profile (``/etc/llmfleet-lab/gpu-profile.json``, written by labctl): CPUs and NUMA
  nodes, GPUs with their PCI address, NUMA node and model, the PCIe link each trained to, faults;
- the simulated amdgpu driver: loaded or not (``/run/llmfleet-lab/sys/module/amdgpu``, written at boot by
  the stub amdgpu-dkms package's unit), and whether the caller may open ``/dev/kfd``;
- the lab's fault switch (``labctl fault``: ``/run/llmfleet-lab/faults/gpu<N>.json``);
- the procfs files a profile decides (kernel command line, NUMA balancing), for ``preflight_facts``'s
  ``proc_path``: a container shows the host's /proc/cmdline.

Pure standard library, Python 3.6+.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import grp
import hashlib
import json
import os
import pwd
import re

PROFILE_PATH = os.environ.get('LLMFLEET_LAB_GPU_PROFILE', '/etc/llmfleet-lab/gpu-profile.json')
SYSROOT = os.environ.get('LLMFLEET_LAB_SYSROOT', '/run/llmfleet-lab/sys')
KFD_PATH = os.environ.get('LLMFLEET_LAB_KFD', '/dev/kfd')
FAULTS_DIR = os.environ.get('LLMFLEET_LAB_FAULTS', '/run/llmfleet-lab/faults')
# runc mounts nothing over /proc/cmdline: preflight_facts reads the profile's through proc_path.
PROCROOT = os.environ.get('LLMFLEET_LAB_PROCROOT', '/run/llmfleet-lab/proc')

# The amd-smi release of each ROCm release (as AMD ships them).
RELEASES = {
    '7.0.2': {'amd_smi': '26.0.2', 'amd_smi_git': '39589fda'},
    '7.1.1': {'amd_smi': '26.2.0', 'amd_smi_git': '021c61fc'},
}

# Hardware facts per GPU model that the tools report or the wiring needs (real values of each model; xgmi: the
# model's GPUs of one host are joined by xGMI links).
MODELS = {
    'MI300X': {
        'gfx': 'gfx942', 'market_name': 'AMD Instinct MI300X', 'card_series': 'AMD Instinct MI300X OAM',
        'device_id': 0x74a1, 'subsystem_id': 0x74a1, 'rev_id': 0x00, 'compute_units': 304, 'apu': False,
        'pp_ucode': 177, 'sdma_ucode': 24, 'vram_pool_kb': 201310208, 'vram_mb': 196592,
        'max_power_w': 750, 'pcie_gen': 5, 'pcie_width': 16, 'slot_type': 'OAM', 'xgmi': True, 'partitions': ('NPS1', 'SPX'),
        'vbios_name': 'AMD MI300X_HW_SRIOV_CVS_1VF', 'vbios_part': '113-M3000100-103', 'vbios_version': '022.040.003.043.000001',
        'idle_power_w': 140.0, 'temp_c': 45.0,
        'pci_class': ('Processing accelerators', 0x1200), 'pci_name': 'Aqua Vanjaram [Instinct MI300X]', 'bar_bytes': 256 << 30,
    },
    'MI250X': {
        'gfx': 'gfx90a', 'market_name': 'AMD Instinct MI250X', 'card_series': 'AMD Instinct MI250X',
        'device_id': 0x7408, 'subsystem_id': 0x0b0c, 'rev_id': 0x00, 'compute_units': 110, 'apu': False,
        'pp_ucode': 78, 'sdma_ucode': 8, 'vram_pool_kb': 67092480, 'vram_mb': 65520,
        'max_power_w': 560, 'pcie_gen': 4, 'pcie_width': 16, 'slot_type': 'OAM', 'xgmi': True, 'partitions': ('N/A', 'N/A'),
        'vbios_name': 'MI250X', 'vbios_part': '113-D65209-073', 'vbios_version': '022.012.000.034.000001',
        'idle_power_w': 90.0, 'temp_c': 38.0,
        'pci_class': ('Display controller', 0x0380), 'pci_name': 'Aldebaran/MI200 [Instinct MI250X]', 'bar_bytes': 64 << 30,
    },
    'MI210': {
        'gfx': 'gfx90a', 'market_name': 'AMD Instinct MI210', 'card_series': 'AMD Instinct MI210',
        'device_id': 0x740f, 'subsystem_id': 0x0c34, 'rev_id': 0x02, 'compute_units': 104, 'apu': False,
        'pp_ucode': 78, 'sdma_ucode': 8, 'vram_pool_kb': 67092480, 'vram_mb': 65520,
        'max_power_w': 300, 'pcie_gen': 4, 'pcie_width': 16, 'slot_type': 'PCIE', 'xgmi': False, 'partitions': ('N/A', 'N/A'),
        'vbios_name': 'Mi200 pcie', 'vbios_part': '113-D67301V-073', 'vbios_version': '022.012.000.033.000001',
        'idle_power_w': 42.0, 'temp_c': 36.0,
        'pci_class': ('Display controller', 0x0380), 'pci_name': 'Aldebaran/MI200 [Instinct MI210]', 'bar_bytes': 64 << 30,
    },
    'RADEON-IGPU-GFX1036': {
        'gfx': 'gfx1036', 'market_name': 'AMD Radeon Graphics', 'card_series': 'Raphael',
        'device_id': 0x13c0, 'subsystem_id': 0x8877, 'rev_id': 0xc1, 'compute_units': 2, 'apu': True,
        'pp_ucode': 121, 'sdma_ucode': 9, 'vram_pool_kb': 15997484, 'vram_mb': 512,
        'max_power_w': 0, 'pcie_gen': 4, 'pcie_width': 16, 'slot_type': 'PCIE', 'xgmi': False, 'partitions': ('N/A', 'N/A'),
        'vbios_name': 'RAPHAEL', 'vbios_part': '102-RAPHAEL-008', 'vbios_version': '022.001.002.008.000001',
        'idle_power_w': 8.0, 'temp_c': 40.0,
        'pci_class': ('VGA compatible controller', 0x0300), 'pci_name': 'Granite Ridge [Radeon Graphics]', 'bar_bytes': 256 << 20,
    },
}

# GT/s of each PCIe generation.
PCIE_SPEEDS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0}

# The keys of the fault switch (labctl fault, lab/labctl/faults.py); counters add to the profile's faults of a
# GPU, readings replace them.
FAULT_KEYS = ('ecc_uncorrect', 'ecc_correct', 'junction_temperature', 'memory_temperature', 'pcie_replays',
              'thermal_residency', 'health')
FAULT_COUNTERS = ('ecc_uncorrect', 'ecc_correct', 'pcie_replays')


class LabGpuError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# the machine: the profile's CPUs and GPUs

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
    """Expand a profile into CPU agents and GPUs (in PCI order) with every derived id filled in."""
    cpus = [dict(cpu, node=index) for index, cpu in enumerate(profile.get('cpus', []))]
    gpus = []
    for index, gpu in enumerate(sorted(profile.get('gpus', []), key=lambda g: g['pci'])):
        seed = _seed(profile.get('name'), gpu['pci'])
        domain, bus, rest = gpu['pci'].split(':')
        dev, fn = rest.split('.')
        entry = dict(MODELS[gpu['model']])
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
        })
        gpus.append(entry)
    return cpus, gpus


def link_of(gpu):
    """(GT/s, width) the GPU's PCIe link trained to: the profile's pcie_link, else what the model can."""
    link = gpu.get('pcie_link') or {}
    return float(link.get('speed_gts', PCIE_SPEEDS[gpu['pcie_gen']])), int(link.get('width', gpu['pcie_width']))


# ---------------------------------------------------------------------------------------------
# the driver and the caller

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


def in_group(user, group):
    try:
        members = grp.getgrnam(group)
        entry = pwd.getpwnam(user)
    except KeyError:
        return False
    return user in members.gr_mem or entry.pw_gid == members.gr_gid


def rocm_version_of(prefix):
    """ROCm version from <prefix>/.info/version ("7.1.1-38" -> "7.1.1")."""
    try:
        with open(os.path.join(prefix, '.info', 'version')) as handle:
            return handle.read().strip().split('-')[0]
    except (IOError, OSError):
        return None


class State:
    """Everything a tool needs to answer: the machine, the driver, the caller and the ROCm release."""

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
# the fault switch

def read_fault_files(faults_dir=None):
    """GPU index -> {fault key: number} from the fault switch's files (unknown keys and bad values ignored)."""
    faults = {}
    directory = faults_dir or FAULTS_DIR
    try:
        names = os.listdir(directory)
    except OSError:
        return faults
    for name in names:
        match = re.match(r'^gpu(\d+)\.json$', name)
        if not match:
            continue
        try:
            with open(os.path.join(directory, name)) as handle:
                data = json.load(handle)
        except (IOError, OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        values = dict((key, value) for key, value in data.items()
                      if key in FAULT_KEYS and isinstance(value, (int, float)) and not isinstance(value, bool))
        if values:
            faults[int(match.group(1))] = values
    return faults


def gpu_faults(gpu, files):
    """The profile's faults of a GPU with the fault switch's on top (counters add, readings replace)."""
    merged = dict(gpu.get('faults') or {})
    for key, value in (files.get(gpu['index']) or {}).items():
        merged[key] = merged.get(key, 0) + value if key in FAULT_COUNTERS else value
    return merged


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
