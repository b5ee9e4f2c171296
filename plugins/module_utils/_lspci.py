# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``lspci -D -nn -vvv`` (and ``-PP`` path) output, and PCIe topology helpers.

Everything here is pure: text in, dicts out. No Ansible imports.

What is read per device: address, class name and id, vendor and device ids,
the vendor+device description, NUMA node, IOMMU group, kernel driver, memory
and I/O regions (BARs) with sizes in bytes, the PCI Express capability (port
type, LnkCap and LnkSta speed and width, downgrade markers) and the Access
Control Services capability (ACSCap/ACSCtl flags).

Topology: which devices share a PCIe switch is decided from each device's
chain of parent bridges (root port first). ``lspci -PP`` prints that chain in
the slot column; the kernel's sysfs device path
(``/sys/bus/pci/devices/<address>`` resolves to
``/sys/devices/pci<domain>:<bus>/<root port>/.../<address>``) holds the same
chain and is what the module reads. ``parents_from_sysfs_path`` turns such a
path into the chain and ``gpu_nic_affinity`` compares chains.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError, normalize_pci_address

TOOL = 'lspci'

HINT_NO_PCI = ('lspci cannot read the PCI bus: check that /sys (or /proc/bus/pci) is mounted and readable; '
               'inside a container, bind-mount the host /sys.')

# Fields every parsed device carries, in this order.
DEVICE_FIELDS = (
    'address', 'path', 'class_name', 'class_id', 'vendor_id', 'device_id', 'description', 'revision',
    'subsystem', 'numa_node', 'iommu_group', 'driver', 'capabilities_readable', 'bars', 'largest_bar_bytes',
    'pcie', 'acs',
)

# PCI class ids (class << 8 | subclass) and the names pci.ids gives them.
GPU_CLASS_IDS = frozenset(['0300', '0302', '0380', '1200'])
GPU_CLASS_NAMES = frozenset(['VGA compatible controller', '3D controller', 'Display controller', 'Processing accelerators'])
NIC_CLASS_IDS = frozenset(['0200', '0207'])
NIC_CLASS_NAMES = frozenset(['Ethernet controller', 'Infiniband controller'])
BRIDGE_CLASS_IDS = frozenset(['0604'])
BRIDGE_PORT_TYPES = frozenset(['Root Port', 'Upstream Port', 'Downstream Port'])
AMD_GPU_VENDOR_ID = '1002'
# pci.ids names vendor 1002 like this; used only when the output has no numeric ids (no -nn).
AMD_GPU_VENDOR_NAMES = ('Advanced Micro Devices, Inc. [AMD/ATI] ', 'ATI Technologies Inc ')

_SLOT = r'[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]'
_HEADER_RE = re.compile(
    r'^(?P<slot>(?:[0-9a-fA-F]{4,8}:)?' + _SLOT + r'(?:/(?:' + _SLOT + r'|[0-9a-fA-F]{2}\.[0-7]))*) '
    r'(?P<class_name>[^:\[\]]+?)(?: \[(?P<class_id>[0-9a-fA-F]{4})\])?: (?P<rest>.*)$')
_REST_RE = re.compile(
    r'^(?P<desc>.*?)(?: \[(?P<vendor>[0-9a-fA-F]{4}):(?P<device>[0-9a-fA-F]{4})\])?'
    r'(?: \(rev (?P<rev>[0-9a-fA-F]{2})\))?(?: \(prog-if [0-9a-fA-F]{2}(?: \[[^\]]*\])?\))?$')
_KEY_RE = re.compile(r'^(?P<key>[A-Za-z][A-Za-z0-9 ]*?):\s*(?P<value>.*)$')
_REGION_RE = re.compile(r'^Region (?P<index>\d+): (?P<kind>Memory|I/O ports) at (?P<address>\S+)(?P<rest>.*)$')
_SIZE_RE = re.compile(r'\[size=(?P<num>\d+)(?P<unit>[KMGTP]?)\]')
_BITS_RE = re.compile(r'\((?P<bits>\d+)-bit, (?P<pref>non-prefetchable|prefetchable)\)')
_EXPRESS_RE = re.compile(r'^\[[0-9a-fA-F]+\] Express \(v\d\) (?P<type>.+?)(?: \(Slot[+-]\))?, (?:MSI|IntMsgNum) [0-9a-fA-F]+$')
_LINK_RE = re.compile(
    r'Speed (?P<speed>[0-9.]+GT/s|unknown)(?: \((?P<speed_flag>ok|downgraded)\))?, '
    r'Width x(?P<width>\d+)(?: \((?P<width_flag>ok|downgraded)\))?')
_ACS_FLAG_RE = re.compile(r'(?P<name>[A-Za-z]+)(?P<state>[+-])')
_DIAGNOSTIC_RE = re.compile(r'^(?P<line>(?:pcilib|lspci): .*)$')
_ACCESS_DENIED = '<access denied>'
_UNITS = {'': 1, 'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3, 'T': 1024 ** 4, 'P': 1024 ** 5}
_NO_BUS_PATTERNS = (
    re.compile(r'Cannot open /proc/bus/pci'),
    re.compile(r'Cannot open /sys/bus/pci'),
    re.compile(r'No PCI (?:bus|access method)'),
)


def _speed(text):
    if text is None or text == 'unknown':
        return None
    return float(text[:-len('GT/s')])


def _indent(line):
    expanded = line.expandtabs(8)
    return len(expanded) - len(expanded.lstrip())


def _new_device(slot, match):
    parts = slot.split('/')
    first = parts[0]
    domain = first.split(':')[0] if first.count(':') == 2 else '0000'
    chain = []
    bus = None
    for part in parts:
        if part.count(':') == 2:
            address = normalize_pci_address(part)
        elif part.count(':') == 1:
            address = normalize_pci_address('%s:%s' % (domain, part))
        else:
            # lspci -P (one P) prints only device.function below a bridge; the bus is not known.
            address = None
        if address is None and part.count(':'):
            raise ParseError(TOOL, 'bad PCI address %r in %r' % (part, slot))
        chain.append(address)
        bus = address
    if bus is None:
        raise ParseError(TOOL, 'no bus number in %r: run lspci with -PP, not -P' % slot)
    rest = _REST_RE.match(match.group('rest'))
    device = dict((field, None) for field in DEVICE_FIELDS)
    device.update(
        address=chain[-1],
        path=chain[:-1] if len(chain) > 1 else None,
        class_name=match.group('class_name').strip(),
        class_id=match.group('class_id').lower() if match.group('class_id') else None,
        vendor_id=rest.group('vendor').lower() if rest.group('vendor') else None,
        device_id=rest.group('device').lower() if rest.group('device') else None,
        description=rest.group('desc').strip(),
        revision=rest.group('rev').lower() if rest.group('rev') else None,
        capabilities_readable=None,
        bars=[],
    )
    return device


def _parse_region(value):
    match = _REGION_RE.match(value)
    if not match:
        raise ParseError(TOOL, 'unrecognised region line %r' % value)
    rest = match.group('rest')
    size = _SIZE_RE.search(rest)
    bits = _BITS_RE.search(rest)
    kind = 'memory' if match.group('kind') == 'Memory' else 'io'
    return {
        'index': int(match.group('index')),
        'type': kind,
        'address': match.group('address'),
        'bits': int(bits.group('bits')) if bits else None,
        'prefetchable': bool(bits) and bits.group('pref') == 'prefetchable',
        'disabled': '[disabled]' in rest,
        'size_bytes': int(size.group('num')) * _UNITS[size.group('unit')] if size else None,
    }


def _parse_flags(value):
    return dict((m.group('name'), m.group('state') == '+') for m in _ACS_FLAG_RE.finditer(value))


def _finish(device):
    pcie = device['pcie']
    if pcie is not None:
        cap_speed, cap_width = pcie['link_cap_speed_gts'], pcie['link_cap_width']
        speed, width = pcie['link_speed_gts'], pcie['link_width']
        flags = pcie.pop('_flags')
        if flags[0] is not None:
            pcie['speed_downgraded'] = flags[0] == 'downgraded'
        elif speed is not None and cap_speed is not None:
            pcie['speed_downgraded'] = speed < cap_speed
        if flags[1] is not None:
            pcie['width_downgraded'] = flags[1] == 'downgraded'
        elif width is not None and cap_width is not None:
            pcie['width_downgraded'] = width < cap_width
        known = [value for value in (pcie['speed_downgraded'], pcie['width_downgraded']) if value is not None]
        pcie['downgraded'] = any(known) if known else None
    sizes = [region['size_bytes'] for region in device['bars'] if region['type'] == 'memory' and region['size_bytes']]
    device['largest_bar_bytes'] = max(sizes) if sizes else None
    if device['capabilities_readable'] is None:
        # Devices that print no capability line at all (host bridges) simply have none.
        device['capabilities_readable'] = True
    return device


def _apply(device, key, value, top_level):
    if key == 'Capabilities':
        if value == _ACCESS_DENIED:
            device['capabilities_readable'] = False
            return 'none'
        device['capabilities_readable'] = True
        express = _EXPRESS_RE.match(value)
        if express:
            if device['pcie'] is None:
                device['pcie'] = {
                    'type': express.group('type'), 'link_cap_speed_gts': None, 'link_cap_width': None,
                    'link_speed_gts': None, 'link_width': None, 'speed_downgraded': None,
                    'width_downgraded': None, 'downgraded': None, '_flags': (None, None),
                }
                return 'express'
            return 'other'
        if 'Access Control Services' in value:
            device['acs'] = {'capability': {}, 'control': {}, 'enabled': [], 'source_validation': None}
            return 'acs'
        return 'other'
    if not top_level:
        return None
    if key == 'NUMA node':
        try:
            device['numa_node'] = int(value)
        except ValueError:
            raise ParseError(TOOL, 'NUMA node %r of %s is not a number' % (value, device['address']))
    elif key == 'IOMMU group':
        try:
            device['iommu_group'] = int(value)
        except ValueError:
            raise ParseError(TOOL, 'IOMMU group %r of %s is not a number' % (value, device['address']))
    elif key == 'Subsystem':
        device['subsystem'] = value
    elif key == 'Kernel driver in use':
        device['driver'] = value
    return None


def parse_lspci(text):
    """Parse ``lspci -D -nn -vvv`` output (``-PP`` slot paths and plain listings too).

    Returns ``{'devices': [...], 'capabilities_readable': bool, 'warnings': [...]}``;
    devices keep lspci's order. ``capabilities_readable`` is False when lspci
    printed ``Capabilities: <access denied>`` (not run as root), which hides
    link state and ACS. An empty output is an empty device list; output that
    is not lspci's raises ParseError.
    """
    if text is None:
        raise ParseError(TOOL, 'no output')
    devices = []
    warnings = []
    device = None
    base = None
    section = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        if line[0] not in ' \t':
            header = _HEADER_RE.match(line)
            if header:
                if device is not None:
                    devices.append(_finish(device))
                device = _new_device(header.group('slot'), header)
                base = None
                section = None
                continue
            diagnostic = _DIAGNOSTIC_RE.match(line)
            if diagnostic:
                warnings.append(diagnostic.group('line'))
                continue
            raise ParseError(TOOL, 'unexpected line %r' % line[:120])
        if device is None:
            raise ParseError(TOOL, 'indented line before any device: %r' % line[:120])
        indent = _indent(line)
        if base is None:
            base = indent
        body = line.strip()
        top_level = indent <= base
        if top_level:
            section = None
        if top_level and body.startswith('Region ') and ':' in body:
            device['bars'].append(_parse_region(body))
            continue
        key_match = _KEY_RE.match(body)
        if not key_match:
            continue
        key, value = key_match.group('key'), key_match.group('value').strip()
        if top_level or key == 'Capabilities':
            new_section = _apply(device, key, value, top_level)
            if key == 'Capabilities':
                section = new_section
            continue
        if section == 'express' and key in ('LnkCap', 'LnkSta'):
            link = _LINK_RE.search(value)
            if not link:
                raise ParseError(TOOL, 'unrecognised %s of %s: %r' % (key, device['address'], value))
            pcie = device['pcie']
            if key == 'LnkCap':
                pcie['link_cap_speed_gts'] = _speed(link.group('speed'))
                pcie['link_cap_width'] = int(link.group('width'))
            else:
                pcie['link_speed_gts'] = _speed(link.group('speed'))
                pcie['link_width'] = int(link.group('width'))
                pcie['_flags'] = (link.group('speed_flag'), link.group('width_flag'))
        elif section == 'acs' and key in ('ACSCap', 'ACSCtl'):
            flags = _parse_flags(value)
            if not flags:
                raise ParseError(TOOL, 'unrecognised %s of %s: %r' % (key, device['address'], value))
            acs = device['acs']
            if key == 'ACSCap':
                acs['capability'] = flags
            else:
                acs['control'] = flags
                acs['enabled'] = sorted(name for name, state in flags.items() if state)
                acs['source_validation'] = flags.get('SrcValid')
    if device is not None:
        devices.append(_finish(device))
    if not devices:
        for warning in warnings:
            for pattern in _NO_BUS_PATTERNS:
                if pattern.search(warning):
                    raise ToolError(TOOL, warning, HINT_NO_PCI)
    readable = all(dev['capabilities_readable'] is not False for dev in devices)
    return {'devices': devices, 'capabilities_readable': readable, 'warnings': warnings}


def is_amd_gpu(device):
    """AMD GPU or Instinct accelerator: vendor 1002 and a display or processing-accelerator class."""
    if device['vendor_id'] is not None:
        vendor_ok = device['vendor_id'] == AMD_GPU_VENDOR_ID
    else:
        vendor_ok = (device['description'] or '').startswith(AMD_GPU_VENDOR_NAMES)
    if device['class_id'] is not None:
        class_ok = device['class_id'] in GPU_CLASS_IDS
    else:
        class_ok = device['class_name'] in GPU_CLASS_NAMES
    return vendor_ok and class_ok


def is_nic(device):
    """Ethernet or InfiniBand controller (class 0200 or 0207)."""
    if device['class_id'] is not None:
        return device['class_id'] in NIC_CLASS_IDS
    return device['class_name'] in NIC_CLASS_NAMES


def is_bridge(device):
    """A PCI-to-PCI bridge: a root port or a switch port."""
    if device['class_id'] is not None and device['class_id'] in BRIDGE_CLASS_IDS:
        return True
    if device['class_name'] == 'PCI bridge':
        return True
    return bool(device['pcie']) and device['pcie']['type'] in BRIDGE_PORT_TYPES


_SYSFS_COMPONENT_RE = re.compile(r'^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$')


def parents_from_sysfs_path(resolved_path, address):
    """Parent bridges (root port first) from the resolved sysfs path of ``address``.

    ``/sys/devices/pci0000:00/0000:00:01.1/0000:01:00.0/0000:05:00.0`` for
    ``0000:05:00.0`` gives ``['0000:00:01.1', '0000:01:00.0']``. Returns None
    when the path does not end in the device (not a sysfs PCI path).
    """
    components = [part for part in str(resolved_path).split('/') if _SYSFS_COMPONENT_RE.match(part)]
    addresses = [normalize_pci_address(part) for part in components]
    if not addresses or addresses[-1] != normalize_pci_address(address):
        return None
    return addresses[:-1]


def gpu_nic_affinity(devices):
    """For each AMD GPU, the NICs that share its PCIe switch, its root port, or its NUMA node.

    Two devices share a switch when their parent chains agree on the root port
    and the bridge right below it (the switch's upstream port); they share a
    root port when only the first element agrees. Devices whose chain is
    unknown (``path`` None) share nothing. Returns a list ordered like the GPUs.
    """
    gpus = [dev for dev in devices if is_amd_gpu(dev)]
    nics = [dev for dev in devices if is_nic(dev)]
    result = []
    for gpu in gpus:
        chain = gpu['path'] or []
        root_port = chain[0] if chain else None
        switch = chain[1] if len(chain) > 1 else None
        same_switch, same_root, same_numa = [], [], []
        for nic in nics:
            other = nic['path'] or []
            if switch is not None and len(other) > 1 and other[:2] == chain[:2]:
                same_switch.append(nic['address'])
            if root_port is not None and other and other[0] == root_port:
                same_root.append(nic['address'])
            if gpu['numa_node'] is not None and nic['numa_node'] == gpu['numa_node']:
                same_numa.append(nic['address'])
        result.append({
            'gpu': gpu['address'], 'numa_node': gpu['numa_node'], 'root_port': root_port, 'switch': switch,
            'same_switch': same_switch, 'same_root_port': same_root, 'same_numa_node': same_numa,
        })
    return result


def summarize(devices):
    """The lists the facts expose next to the devices."""
    return {
        'gpus': [dev['address'] for dev in devices if is_amd_gpu(dev)],
        'nics': [dev['address'] for dev in devices if is_nic(dev)],
        'bridges_with_acs': [dev['address'] for dev in devices
                             if is_bridge(dev) and dev['acs'] is not None and dev['acs']['enabled']],
        'downgraded_links': [dev['address'] for dev in devices if dev['pcie'] is not None and dev['pcie']['downgraded']],
        'gpu_nic_affinity': gpu_nic_affinity(devices),
    }
