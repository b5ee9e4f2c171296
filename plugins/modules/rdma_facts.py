#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: rdma_facts
short_description: Read RDMA devices (InfiniBand, RoCE), their ports and network interfaces into C(ansible_facts.rdma)
version_added: 0.1.0
description:
  - Lists the RDMA devices the kernel registered under C(/sys/class/infiniband), with the PCI address of each, the
    network interfaces of its PCI function (C(/sys/class/infiniband/<device>/device/net/)) and its ports.
  - When C(ibv_devinfo) (package C(ibverbs-utils)) is installed, runs it and takes transport, firmware, GUIDs and the
    state, MTU and link layer of every port from it. A device the kernel has but C(ibv_devinfo) cannot open (no
    user-space provider, no permission on C(/dev/infiniband)) is still listed, with C(verbs=false), and the module
    warns.
  - Without C(ibv_devinfo) the devices and ports come from sysfs alone (C(tool=null)); MTUs are then unknown.
    Without either, the device list is empty.
  - The rate of every port comes from sysfs (C(/sys/class/infiniband/<device>/ports/<n>/rate)) in both cases, since
    C(ibv_devinfo) does not print it. A rate file that cannot be read leaves the rate null; one in a format the
    module does not know leaves it null too, with a warning.
  - C(No IB devices found) from C(ibv_devinfo) is not an error. Other error lines make the module fail with the
    tool's own line and what to do; output the parser does not know is a failure too, never a guess.
  - C(ibv_devinfo) runs with an argument list (no shell) and the C locale.
  - Ansible's M(ansible.builtin.setup) lists network interfaces, not RDMA devices, their ports, link layers or rates;
    no module of C(community.general) or C(ansible.posix) reads them.
author:
  - llmfleet.rocm contributors (@llmfleet)
extends_documentation_fragment:
  - llmfleet.rocm.facts
  - llmfleet.rocm.facts.SYSFS
options: {}
attributes:
  facts:
    support: full
    description: Sets C(ansible_facts.rdma).
seealso:
  - module: llmfleet.rocm.pcie_facts
  - name: rdma-core
    description: The user-space RDMA stack that ships ibv_devinfo and the verbs providers.
    link: https://github.com/linux-rdma/rdma-core
'''

EXAMPLES = r'''
- name: Read the RDMA devices
  llmfleet.rocm.rdma_facts:

- name: Fail unless every RDMA device has an active port
  ansible.builtin.assert:
    that: ansible_facts.rdma.devices | rejectattr('active_ports') | list | length == 0
    fail_msg: "No active port on {{ ansible_facts.rdma.devices | rejectattr('active_ports') | map(attribute='name') | list }}"

- name: Build NCCL_IB_HCA from the devices with an active port
  ansible.builtin.set_fact:
    rccl_ib_hca: "{{ ansible_facts.rdma.devices | selectattr('active_ports') | map(attribute='name') | join(',') }}"
'''

RETURN = r'''
ansible_facts:
  description: The facts set by the module.
  returned: always
  type: dict
  contains:
    rdma:
      description: The host's RDMA devices.
      returned: always
      type: dict
      contains:
        tool:
          description: C(ibv_devinfo) when it ran, null when it is not installed.
          type: str
          sample: ibv_devinfo
        sources:
          description: What the devices were read from, sorted (C(ibv_devinfo), C(sysfs)).
          type: list
          elements: str
          sample: [ibv_devinfo, sysfs]
        device_count:
          description: Number of devices.
          type: int
          sample: 8
        devices:
          description: One entry per RDMA device, sorted by name.
          type: list
          elements: dict
          contains:
            name:
              description: RDMA device name (C(hca_id)).
              type: str
              sample: mlx5_0
            pci_address:
              description: PCI address of the device's function, or null.
              type: str
              sample: "0000:09:00.0"
            netdevs:
              description: Network interfaces of the same PCI function, sorted.
              type: list
              elements: str
              sample: [enp9s0np0]
            verbs:
              description: True when ibv_devinfo listed the device, false when only the kernel has it, null when ibv_devinfo did not run.
              type: bool
            transport:
              description: C(InfiniBand) (also for RoCE) or C(iWARP), or null.
              type: str
            link_layer:
              description: Common link layer of the ports, C(InfiniBand) or C(Ethernet) (RoCE), or null.
              type: str
              sample: Ethernet
            fw_ver:
              description: Firmware version, or null.
              type: str
            node_guid:
              description: Node GUID, or null.
              type: str
            active_ports:
              description: Number of ports in state C(PORT_ACTIVE).
              type: int
            active_rate_gbps:
              description:
                - Sum of the C(rate_gbps) of the ports in state C(PORT_ACTIVE), in Gb/s; C(0.0) without an active port.
                - Null when the rate of an active port is unknown.
              type: float
              sample: 400.0
            ports:
              description: The ports.
              type: list
              elements: dict
              contains:
                port:
                  description: Port number.
                  type: int
                state:
                  description: Port state, for example C(PORT_ACTIVE) or C(PORT_DOWN).
                  type: str
                active:
                  description: True in state C(PORT_ACTIVE).
                  type: bool
                active_mtu:
                  description: Active MTU in bytes, or null (unknown from sysfs).
                  type: int
                link_layer:
                  description: C(InfiniBand) or C(Ethernet), or null.
                  type: str
                rate_gbps:
                  description:
                    - Line rate in Gb/s from the sysfs C(rate) file (C(400 Gb/sec (4X NDR)) is C(400.0),
                      C(2.5 Gb/sec (1X SDR)) is C(2.5)), or null when the file is missing, unreadable or not understood.
                    - A port that is not active often reads C(10 Gb/sec (4X SDR)); the rate means something for active
                      ports only.
                  type: float
                  sample: 400.0
commands:
  description: The argument lists that were run, in order.
  returned: always
  type: list
  elements: list
  sample: [[/usr/bin/ibv_devinfo]]
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError, normalize_pci_address
from ansible_collections.llmfleet.rocm.plugins.module_utils import _ibv_devinfo as ibv_devinfo
from ansible_collections.llmfleet.rocm.plugins.module_utils._tool_runner import ToolRunner, list_dir, read_text

# ibv_devinfo exits 255 after "No IB devices found".
NO_DEVICES_RC = 255


def _no_devices(rc, parsed):
    return rc == NO_DEVICES_RC and not parsed['devices']


def _sysfs_port(name, number, port_dir, warnings):
    """One port from its sysfs files; a rate text the parser does not know is a warning and a null rate."""
    state, link_layer, rate = [read_text(os.path.join(port_dir, leaf)) for leaf in ('state', 'link_layer', 'rate')]
    try:
        return ibv_devinfo.sysfs_port(number, state, link_layer, rate)
    except ParseError as exc:
        warnings.append('The rate of %s port %d is not in a format llmfleet.rocm knows (%s); rate_gbps is null. '
                        'Please report it with the output of "cat %s".'
                        % (name, number, exc.detail, os.path.join(port_dir, 'rate')))
        return ibv_devinfo.sysfs_port(number, state, link_layer)


def read_sysfs(sysfs_path, warnings):
    """RDMA devices the kernel registered: name -> (device dict, pci address, netdevs).

    Appends to ``warnings`` what the module should warn about.
    """
    base = os.path.join(sysfs_path, 'class', 'infiniband')
    found = {}
    for name in list_dir(base):
        root = os.path.join(base, name)
        ports = []
        for number in list_dir(os.path.join(root, 'ports')):
            if not number.isdigit():
                continue
            ports.append(_sysfs_port(name, int(number), os.path.join(root, 'ports', number), warnings))
        ports.sort(key=lambda port: port['port'])
        device = ibv_devinfo.sysfs_device(name, read_text(os.path.join(root, 'fw_ver')),
                                          read_text(os.path.join(root, 'node_guid')), ports)
        pci_address = None
        if os.path.exists(os.path.join(root, 'device')):
            pci_address = normalize_pci_address(os.path.basename(os.path.realpath(os.path.join(root, 'device'))))
        found[name] = (device, pci_address, list_dir(os.path.join(root, 'device', 'net')))
    return found


def _active_rate(ports):
    """Sum of the active ports' rates; None when one of them is unknown, 0.0 without an active port."""
    rates = [port['rate_gbps'] for port in ports if port['active']]
    if any(rate is None for rate in rates):
        return None
    return float(sum(rates))


def _fact(device, pci_address, netdevs, verbs, kernel_device=None):
    """The fact of one device; the port rates come from ``kernel_device`` (sysfs) when given, else from ``device``."""
    rates = dict((port['port'], port['rate_gbps']) for port in (kernel_device or device)['ports'])
    ports = []
    for port in device['ports']:
        fact = dict((key, port[key]) for key in ('port', 'state', 'active', 'active_mtu', 'link_layer'))
        fact['rate_gbps'] = rates.get(port['port'])
        ports.append(fact)
    return {
        'name': device['name'], 'pci_address': pci_address, 'netdevs': list(netdevs), 'verbs': verbs,
        'transport': device['transport'], 'link_layer': device['link_layer'], 'fw_ver': device['fw_ver'],
        'node_guid': device['node_guid'], 'active_ports': len([port for port in ports if port['active']]),
        'active_rate_gbps': _active_rate(ports), 'ports': ports,
    }


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysfs_path=dict(type='path', default='/sys'),
        ),
        supports_check_mode=True,
    )
    runner = ToolRunner(module)
    sysfs_warnings = []
    kernel = read_sysfs(module.params['sysfs_path'], sysfs_warnings)
    for line in sysfs_warnings:
        module.warn(line)
    sources = ['sysfs'] if kernel else []
    devices = {}

    path = runner.find('ibv_devinfo')
    if path:
        try:
            parsed = runner.read('ibv_devinfo', [path], ibv_devinfo.parse_ibv_devinfo, accept_rc=_no_devices,
                                 raise_tool_errors=True)
        except ToolError as exc:
            if kernel:
                runner.fail_tool_error(exc, tool='ibv_devinfo')
            # The kernel lists no RDMA device either: the error only says there is nothing to open.
            module.warn('ibv_devinfo: "%s"; the kernel lists no RDMA device, so the node has none.' % exc.line)
            parsed = {'devices': [], 'warnings': []}
        sources.append('ibv_devinfo')
        for line in parsed['warnings']:
            module.warn('ibv_devinfo: %s' % line)
        for device in parsed['devices']:
            kernel_device, pci_address, netdevs = kernel.get(device['name'], (None, None, []))
            devices[device['name']] = _fact(device, pci_address, netdevs, True, kernel_device)
        missing = sorted(name for name in kernel if name not in devices)
        for name in missing:
            device, pci_address, netdevs = kernel[name]
            devices[name] = _fact(device, pci_address, netdevs, False)
        if missing:
            module.warn('The kernel has RDMA devices that ibv_devinfo cannot open: %s. Install the user-space '
                        'providers (rdma-core, ibverbs-providers) and check the permissions of /dev/infiniband.'
                        % ', '.join(missing))
    else:
        for name, (device, pci_address, netdevs) in kernel.items():
            devices[name] = _fact(device, pci_address, netdevs, None)

    facts = {
        'tool': 'ibv_devinfo' if path else None,
        'sources': sorted(sources),
        'device_count': len(devices),
        'devices': [devices[name] for name in sorted(devices)],
    }
    module.exit_json(changed=False, ansible_facts={'rdma': facts}, commands=runner.commands)


if __name__ == '__main__':
    main()
