# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU tools of the llmfleet.rocm lab: rocminfo, rocm-smi, amd-smi and lspci (no GPU code runs here).

The lab's stub packages rocminfo, rocm-smi-lib, amd-smi-lib, rocm-validation-suite and transferbench install
this module beside labhost.py (the simulated host: profile, driver, faults) and small entry scripts that call
``main(tool, argv, prefix)``; rvs, all_reduce_perf and TransferBench are handed to validsim.py. Each tool
answers the commands the collection runs, with what its parser reads (the parsers are proven against real
captures in tests/unit/fixtures); anything else says it is not simulated and exits 2:

- ``rocminfo``: the HSA agents with name, marketing name, node, device type, BDFID, compute units and the
  coarse-grained memory pool; ``rocm_agent_enumerator``: the gfx targets;
- ``rocm-smi --showproductname --showbus --showtoponuma --showmeminfo vram --showdriverversion --json``
  (any of these sections);
- ``amd-smi version``; ``list``, ``static``, ``metric [-p -t -P -e -k -T]``, ``bad-pages``, ``firmware``
  and ``topology``, each with ``--json``;
- ``lspci [-D] [-nn] [-v|-vv|-vvv] [-k] [-d vendor:[device]] [-s address]``: the PCI bus of the profile,
  each GPU below a PCIe switch port, with the link, BAR and ACS state the profile gives (root only sees
  capabilities, as with the real lspci).

What stays real: until the simulated amdgpu driver is loaded (the boot-time unit of the stub amdgpu-dkms
package does it) the tools print the real "driver not loaded" errors, and a user who cannot open /dev/kfd
gets the real permission errors.

``gpusim.py procfs [ROOT]`` writes the procfs files the profile decides below ROOT (labhost.PROCROOT).
Pure standard library, Python 3.6+.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import sys

from labhost import (PCIE_SPEEDS, LabGpuError, State, gpu_faults, in_group, link_of, load_profile, read_fault_files,
                     write_proc_files)

ANSI = {'white': '\x1b[37m', 'red': '\x1b[31m', 'reset': '\x1b[0m'}


def _vu(value, unit):
    return {'value': value, 'unit': unit}


def _not_simulated(tool, what):
    return '', '%s (llmfleet lab stub): only %s simulated\n' % (tool, what), 2


# ---------------------------------------------------------------------------------------------
# rocminfo: the fields of each agent that rocminfo's parser reads, in rocminfo's layout

def _ri(num):
    return '%d(0x%x)' % (num, num)


def _field(lines, indent, label, value=''):
    lines.append(('  ' * indent + '%-25s%s' % (label, value)).rstrip())


def _agent(lines, number, fields, pool_kb):
    lines += ['*******', 'Agent %d' % number, '*******']
    for label, value in fields:
        _field(lines, 1, label, value)
    _field(lines, 1, 'Pool Info:')
    _field(lines, 2, 'Pool 1')
    _field(lines, 3, 'Segment:', 'GLOBAL; FLAGS: COARSE GRAINED')
    _field(lines, 3, 'Size:', '%s KB' % _ri(pool_kb))


def render_rocminfo(state):
    """Return (stdout, stderr, rc) of ``rocminfo`` / ``rocminfo --support``."""
    if state.driver is None:
        return '%sROCk module is NOT loaded, possibly no GPU devices%s\n' % (ANSI['red'], ANSI['reset']), '', 1
    head = '%sROCk module version %s is loaded%s\n' % (ANSI['white'], state.driver, ANSI['reset'])
    if state.kfd_error:
        text = head + '%sUnable to open /dev/kfd read-write: %s%s\n' % (ANSI['red'], state.kfd_error, ANSI['reset'])
        if state.user is None:
            text += '%sFailed to get user name to check for render group membership%s\n' % (ANSI['red'], ANSI['reset'])
        elif in_group(state.user, 'render'):
            text += '%s%s is member of render group%s\n' % (ANSI['white'], state.user, ANSI['reset'])
        else:
            text += ('%s%s is not member of "render" group, the default DRM access group. Users must be a member of the '
                     '"render" group or another DRM access group in order for ROCm applications to run successfully%s.\n'
                     % (ANSI['red'], state.user, ANSI['reset']))
        return text, '', 1
    lines = ['=====================', 'HSA System Attributes', '=====================']
    _field(lines, 0, 'Runtime Version:', '1.18')
    lines += ['', '==========', 'HSA Agents', '==========']
    number = 0
    for cpu in state.cpus:
        number += 1
        _agent(lines, number, [('Name:', cpu['model']), ('Uuid:', 'CPU-XX'), ('Marketing Name:', cpu['model']),
                               ('Vendor Name:', 'CPU'), ('Node:', cpu['node']), ('Device Type:', 'CPU'),
                               ('Compute Unit:', cpu.get('cores', 2))], cpu.get('memory_kb', 8000000))
    for gpu in state.gpus:
        number += 1
        _agent(lines, number, [('Name:', gpu['gfx']), ('Uuid:', 'GPU-' + ('XX' if gpu['apu'] else gpu['unique_id'])),
                               ('Marketing Name:', gpu['market_name']), ('Vendor Name:', 'AMD'), ('Node:', gpu['node']),
                               ('Device Type:', 'GPU'), ('BDFID:', gpu['bdfid']), ('Compute Unit:', gpu['compute_units']),
                               ('Memory Properties:', 'APU' if gpu['apu'] else '')], gpu['vram_pool_kb'])
    lines.append('*** Done ***')
    return head + '\n'.join(lines) + '\n', '', 0


def render_agent_enumerator(state):
    if state.driver is None or state.kfd_error:
        return 'gfx000\n', '', 0
    return ''.join('gfx000\n' for _cpu in state.cpus) + ''.join('%s\n' % gpu['gfx'] for gpu in state.gpus), '', 0


# ---------------------------------------------------------------------------------------------
# rocm-smi: the --json sections rocm_facts asks for

SMI_DRIVER_ERRORS = ('cat: /sys/module/amdgpu/initstate: No such file or directory\n'
                     'ERROR:root:Driver not initialized (amdgpu not found in modules)\n')
ROCM_SMI_SECTIONS = ('--showproductname', '--showbus', '--showtoponuma', '--showmeminfo', '--showdriverversion')


def _smi_sections(gpu):
    """The key/value pairs of each --show section for one GPU, with rocm-smi's names."""
    return {
        '--showbus': [('PCI Bus', '%04X:%02X:%02X.%X' % (gpu['domain'], gpu['bus'], gpu['dev'], gpu['fn']))],
        '--showmeminfo': [('VRAM Total Memory (B)', str(gpu['vram_mb'] * 1024 * 1024))],
        '--showproductname': [('Card Series', gpu['card_series']), ('Card Model', '0x%04x' % gpu['device_id']),
                              ('Node ID', str(gpu['node'])), ('GFX Version', gpu['gfx'])],
        '--showtoponuma': [('(Topology) Numa Node', str(gpu['numa_node'])), ('(Topology) Numa Affinity', str(gpu['numa_node']))],
    }


def render_rocm_smi(state, args):
    """Return (stdout, stderr, rc) of ``rocm-smi <--show... sections> --json``."""
    if state.driver is None:
        return '', SMI_DRIVER_ERRORS, 0
    wanted = [arg for arg in args if arg in ROCM_SMI_SECTIONS]
    if not wanted or '--json' not in args or set(args) - set(ROCM_SMI_SECTIONS) - set(['--json', 'vram']):
        return _not_simulated('rocm-smi', '%s with --json are' % ', '.join(ROCM_SMI_SECTIONS))
    data = {}
    for gpu in state.gpus:
        sections = _smi_sections(gpu)
        data['card%d' % gpu['index']] = dict(pair for name in wanted for pair in sections.get(name, []))
    if '--showdriverversion' in wanted:
        data['system'] = {'Driver version': state.driver}
    return json.dumps(data) + '\n', '', 0


# ---------------------------------------------------------------------------------------------
# amd-smi: version, list, static and the health commands metric, bad-pages, firmware, topology

AMD_SMI_DRIVER_ERRORS = (
    'ERROR:root:Unable to get devices, driver not initialized (amdgpu not found in modules)\n'
    'ERROR:root:Unable to detect any GPU devices, check amdgpu version and module status (sudo modprobe amdgpu)\n'
    'ERROR:root:Unable to detect any CPU devices, check amd_hsmp (or) hsmp_acpi version and module status '
    '(sudo modprobe amd_hsmp (or) sudo modprobe hsmp_acpi)\n')
AMD_SMI_NO_PERM = ('amdsmi.amdsmi_exception.AmdSmiLibraryException: Error code:\n'
                   '\t10 | AMDSMI_STATUS_NO_PERM - Permission Denied\n\n'
                   'The above exception was the direct cause of the following exception:\n\n'
                   'PermissionError: Command requires elevation\n')
AMD_SMI_COMMANDS = ('version', 'list', 'static', 'metric', 'bad-pages', 'firmware', 'topology')

# The RAS section of "amd-smi static": EEPROM version, bad page threshold, schemas and the ECC state of each
# block as in tests/unit/fixtures/amd_smi_health/static-ras-vbios-mi210.json; XGMI_WAFL is enabled on the
# parts joined by xGMI. An APU reports no RAS.
RAS_BLOCKS = ('UMC', 'SDMA', 'GFX', 'MMHUB', 'ATHUB', 'PCIE_BIF', 'HDP', 'XGMI_WAFL', 'DF', 'SMN', 'SEM', 'MP0', 'MP1',
              'FUSE', 'MCA', 'VCN', 'JPEG', 'IH', 'MPIO')


def _uuid(gpu):
    tail = gpu['unique_id'][-12:]
    return '%02xff%04x-0000-1000-80%s-%s' % (gpu['index'], gpu['device_id'], tail[:2], tail)


def amd_smi_ras(gpu):
    if gpu['apu']:
        return 'N/A'
    return {'eeprom_version': '0x10000', 'bad_page_threshold': 655, 'parity_schema': 'DISABLED',
            'single_bit_schema': 'DISABLED', 'double_bit_schema': 'DISABLED', 'poison_schema': 'ENABLED',
            'ecc_block_state': dict((block, 'ENABLED' if block != 'XGMI_WAFL' or gpu['xgmi'] else 'DISABLED')
                                    for block in RAS_BLOCKS)}


def amd_smi_static(gpu, state):
    """One GPU's entry of ``amd-smi static --json``: the sections rocm_facts and node_validate read."""
    return {
        'gpu': gpu['index'],
        'asic': {'market_name': gpu['market_name'], 'device_id': '0x%04x' % gpu['device_id'],
                 'num_compute_units': gpu['compute_units'], 'target_graphics_version': gpu['gfx']},
        'bus': {'bdf': gpu['pci']},
        'vbios': {'name': gpu['vbios_name'], 'build_date': '2024/05/16 12:00', 'part_number': gpu['vbios_part'],
                  'version': gpu['vbios_version']},
        'limit': {
            'max_power': _vu(gpu['max_power_w'], 'W'), 'socket_power': _vu(gpu['max_power_w'], 'W'),
            'slowdown_edge_temperature': 'N/A', 'slowdown_hotspot_temperature': _vu(100, 'C'),
            'slowdown_vram_temperature': _vu(95, 'C'), 'shutdown_edge_temperature': 'N/A',
            'shutdown_hotspot_temperature': _vu(110, 'C'), 'shutdown_vram_temperature': _vu(100, 'C'),
        },
        'driver': {'name': 'amdgpu', 'version': state.driver},
        'numa': {'node': gpu['numa_node'], 'affinity': gpu['numa_node']},
        'vram': {'size': _vu(gpu['vram_mb'], 'MB')},
        'partition': {'compute_partition': gpu['partitions'][1], 'memory_partition': gpu['partitions'][0],
                      'partition_id': 0},
        'ras': amd_smi_ras(gpu),
    }


def amd_smi_list(gpu):
    return {'gpu': gpu['index'], 'bdf': gpu['pci'], 'uuid': _uuid(gpu), 'kfd_id': gpu['kfd_id'], 'node_id': gpu['node'],
            'partition_id': 0}


METRIC_OPTIONS = {'-p': 'power', '--power': 'power', '-t': 'temperature', '--temperature': 'temperature',
                  '-P': 'pcie', '--pcie': 'pcie', '-e': 'ecc', '--ecc': 'ecc', '-k': 'ecc_blocks',
                  '--ecc-blocks': 'ecc_blocks', '-T': 'throttle', '--throttle': 'throttle'}
# The blocks amd-smi counts from sysfs (amdsmi_commands.py "sysfs_blocks"); XGMI_WAFL only on xGMI parts.
ECC_BLOCKS = ('UMC', 'SDMA', 'GFX', 'MMHUB', 'PCIE_BIF', 'HDP', 'XGMI_WAFL')
VIOLATIONS = ('prochot', 'ppt', 'socket_thermal', 'vr_thermal', 'hbm_thermal')


def _ecc(gpu, faults):
    """ECC totals and per-block counts: correctable errors in UMC (HBM), uncorrectable ones in GFX.

    An uncorrectable GFX error is a compute-side error: it retires no memory page, so bad-pages stays clean.
    """
    correct, uncorrect = int(faults.get('ecc_correct', 0)), int(faults.get('ecc_uncorrect', 0))
    blocks = dict((name, {'correctable_count': 0, 'uncorrectable_count': 0, 'deferred_count': 0})
                  for name in ECC_BLOCKS if name != 'XGMI_WAFL' or gpu['xgmi'])
    blocks['UMC']['correctable_count'] = correct
    blocks['GFX']['uncorrectable_count'] = uncorrect
    totals = {'total_correctable_count': correct, 'total_uncorrectable_count': uncorrect, 'total_deferred_count': 0,
              'cache_correctable_count': 0, 'cache_uncorrectable_count': uncorrect}
    return totals, blocks


def amd_smi_metric(gpu, faults, sections):
    """One GPU's entry of ``amd-smi metric --json`` with the asked sections (all when none was asked)."""
    entry = {'gpu': gpu['index']}
    idle = gpu['idle_power_w'] + gpu['index'] % 5
    if gpu['apu']:
        return dict(entry, **dict((section, 'N/A') for section in sections))
    if 'power' in sections:
        entry['power'] = {'socket_power': _vu(int(idle), 'W'), 'throttle_status': 'UNTHROTTLED',
                          'power_management': 'ENABLED'}
    if 'temperature' in sections:
        # The edge sensor is N/A as in the static limits.
        entry['temperature'] = {
            'edge': 'N/A',
            'hotspot': _vu(int(faults.get('junction_temperature', gpu['temp_c'] + gpu['index'] % 4)), 'C'),
            'mem': _vu(int(faults.get('memory_temperature', gpu['temp_c'])), 'C')}
    if 'pcie' in sections:
        speed, width = link_of(gpu)
        entry['pcie'] = {'width': width, 'speed': _vu(int(speed) if speed.is_integer() else speed, 'GT/s'),
                         'replay_count': int(faults.get('pcie_replays', 0)), 'l0_to_recovery_count': 0,
                         'replay_roll_over_count': 0, 'nak_sent_count': 0, 'nak_received_count': 0}
    totals, blocks = _ecc(gpu, faults)
    if 'ecc' in sections:
        entry['ecc'] = totals
    if 'ecc_blocks' in sections:
        entry['ecc_blocks'] = blocks
    if 'throttle' in sections:
        # Violation status is only read on MI300 and newer (amd-smi's -T help); older GPUs print N/A.
        mi300 = gpu['model'] == 'MI300X'
        throttle = {'accumulation_counter': 0 if mi300 else 'N/A'}
        for name in VIOLATIONS:
            active = name == 'socket_thermal' and faults.get('thermal_residency', 0) > 0
            throttle['%s_accumulated' % name] = 0 if mi300 else 'N/A'
            throttle['%s_violation_status' % name] = ('ACTIVE' if active else 'NOT ACTIVE') if mi300 else 'N/A'
            throttle['%s_violation_activity' % name] = _vu(int(faults.get('thermal_residency', 0)) if active else 0,
                                                           '%') if mi300 else 'N/A'
        entry['throttle'] = throttle
    return entry


def amd_smi_bad_pages(gpu):
    none = 'No bad pages found.'
    return {'gpu': gpu['index'], 'retired': none, 'pending': none, 'un_res': none}


def amd_smi_firmware(gpu):
    """The model's microcode versions (the same on every GPU of a host)."""
    return {'gpu': gpu['index'], 'fw_list': [
        {'fw_id': 'CP_MEC1', 'fw_version': str(gpu['pp_ucode'])},
        {'fw_id': 'CP_MEC2', 'fw_version': str(gpu['pp_ucode'])},
        {'fw_id': 'SDMA0', 'fw_version': str(gpu['sdma_ucode'])},
        {'fw_id': 'SDMA1', 'fw_version': str(gpu['sdma_ucode'])},
    ]}


def amd_smi_topology(gpu, gpus):
    """The ``links`` layout (amd-smi 6.1.1 and later): xGMI between Instinct GPUs of an xGMI model, else PCIe.

    Weight 15 for one xGMI hop as rvs pbqt prints it (mi355x-pbqt-single-rvs1.6.75.txt: distance:15 xGMI:15).
    """
    links = []
    for peer in gpus:
        if peer is gpu:
            kind, hops, weight, status = 'SELF', 0, 0, 'ENABLED'
        elif gpu['xgmi'] and peer['model'] == gpu['model']:
            kind, hops, weight, status = 'XGMI', 1, 15, 'ENABLED'
        else:
            same = peer['numa_node'] == gpu['numa_node']
            kind, hops, weight, status = 'PCIE', 2 if same else 3, 40 if same else 72, 'DISABLED'
        links.append({'gpu': peer['index'], 'bdf': peer['pci'], 'weight': weight, 'link_status': status,
                      'link_type': kind, 'num_hops': hops, 'bandwidth': 'N/A'})
    return {'gpu': gpu['index'], 'bdf': gpu['pci'], 'links': links}


def render_amd_smi(state, args, faults_dir=None):
    """Return (stdout, stderr, rc) of ``amd-smi version`` or ``amd-smi <command> [options] --json``."""
    command = args[0] if args else ''
    options = [arg for arg in args[1:] if arg not in ('--json', '-j')]
    if command not in AMD_SMI_COMMANDS:
        return _not_simulated('amd-smi', ', '.join(AMD_SMI_COMMANDS) + ' are')
    if command == 'version':
        release = state.release
        line = ('AMDSMI Tool: %s+%s | AMDSMI Library version: %s | ROCm version: %s | amdgpu version: %s | '
                'amd_hsmp version: N/A\n' % (release['amd_smi'], release['amd_smi_git'], release['amd_smi'],
                                             state.rocm_version or 'N/A', state.driver or 'N/A'))
        return line, AMD_SMI_DRIVER_ERRORS if state.driver is None else '', 0
    if state.driver is None:
        return '', AMD_SMI_DRIVER_ERRORS, 0
    if state.kfd_error:
        return '', AMD_SMI_NO_PERM, 1
    if command == 'metric':
        unknown = [arg for arg in options if arg not in METRIC_OPTIONS]
        if unknown:
            return _not_simulated('amd-smi metric', '%s are (not %s)' % (' '.join(sorted(METRIC_OPTIONS)), ' '.join(unknown)))
        sections = set(METRIC_OPTIONS[arg] for arg in options) or set(METRIC_OPTIONS.values())
        files = read_fault_files(faults_dir)
        data = [amd_smi_metric(gpu, gpu_faults(gpu, files), sections) for gpu in state.gpus]
    elif options:
        return _not_simulated('amd-smi %s' % command, 'no options are')
    elif command == 'list':
        data = [amd_smi_list(gpu) for gpu in state.gpus]
    elif command == 'static':
        data = [amd_smi_static(gpu, state) for gpu in state.gpus]
    elif command == 'bad-pages':
        data = [amd_smi_bad_pages(gpu) for gpu in state.gpus]
    elif command == 'firmware':
        data = [amd_smi_firmware(gpu) for gpu in state.gpus]
    else:
        data = [amd_smi_topology(gpu, state.gpus) for gpu in state.gpus]
    if '--json' not in args and '-j' not in args:
        return _not_simulated('amd-smi %s' % command, '--json output is')
    # amd-smi 26.x prints list as a bare array and the other commands wrapped in gpu_data.
    document = data if command == 'list' else {'gpu_data': data}
    return json.dumps(document, indent=4) + '\n', '', 0


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
        cap_speed, cap_width = PCIE_SPEEDS[gpu['pcie_gen']], gpu['pcie_width']
        speed, width = link_of(gpu)
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
# entry point used by the installed scripts

RENDERERS = {'rocminfo': render_rocminfo, 'rocm_agent_enumerator': render_agent_enumerator}
RENDERERS_WITH_ARGS = {'rocm-smi': render_rocm_smi, 'amd-smi': render_amd_smi, 'lspci': render_lspci}
VALIDATION_TOOLS = ('rvs', 'all_reduce_perf', 'TransferBench')


def main(tool, argv, prefix):
    state = State.from_host(prefix)
    if tool in RENDERERS:
        out, err, rc = RENDERERS[tool](state)
    elif tool in RENDERERS_WITH_ARGS:
        out, err, rc = RENDERERS_WITH_ARGS[tool](state, argv)
    elif tool in VALIDATION_TOOLS:
        # validsim.py is installed beside this module only by the packages of these tools.
        import validsim
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
