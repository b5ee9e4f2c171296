#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: pcie_facts
short_description: Read PCI devices, PCIe links, BARs, ACS and GPU/NIC placement into C(ansible_facts.pcie)
version_added: 0.1.0
description:
  - Runs C(lspci -D -nn -vvv) and describes every PCI device, with its class, vendor and device ids, NUMA node,
    memory regions (BARs) and their sizes, the PCI Express link it trained to against the link it is capable of, and the
    Access Control Services (ACS) flags of bridges.
  - Lists the AMD GPUs (vendor C(1002), class C(0300), C(0302), C(0380) or C(1200); Instinct accelerators are
    C(Processing accelerators [1200]) or C(Display controller [0380])), the Ethernet and InfiniBand NICs, the bridges
    with ACS enabled and the links that trained below their capability.
  - Places GPUs and NICs in the PCIe tree. The chain of parent bridges of each device (root port first) comes from
    the kernel's sysfs device path, which is what C(lspci -PP) prints too. A GPU and a NIC share a PCIe switch when
    their chains agree on the root port and on the bridge right below it (the switch's upstream port); this is how
    AMD's own topology guide pairs each MI300X with its adjacent NIC.
  - C(lspci) runs with an argument list (no shell) and the C locale. Without root, C(lspci) cannot read PCI
    capabilities (it prints C(<access denied>) for them); the module then warns and reports no link or ACS state, so run
    it with C(become).
  - Without C(lspci) (package C(pciutils)) the module reports no devices and C(source=null) rather than failing.
  - Ansible's M(ansible.builtin.setup) does not read the PCI bus (links, BARs, ACS, the tree), and no module of
    C(community.general) or C(ansible.posix) does.
author:
  - llmfleet.rocm contributors (@llmfleet)
extends_documentation_fragment:
  - llmfleet.rocm.facts
  - llmfleet.rocm.facts.SYSFS
options: {}
attributes:
  facts:
    support: full
    description: Sets C(ansible_facts.pcie).
notes:
  - Above 4G decoding and large or resizable BARs show in the size of the GPU's largest memory region
    (C(largest_bar_bytes)); with a small BAR an Instinct GPU shows 256 MiB instead of its full memory.
  - C(lspci) marks a link C(downgraded) when it trained below the device's own capability. Idle GPUs and some
    bridges legitimately train down while idle, so judge GPU links under load or with the expected values per model.
seealso:
  - module: llmfleet.rocm.rdma_facts
  - module: llmfleet.rocm.numa_facts
  - name: AMD Instinct system acceptance, mapping NICs to GPUs
    description: AMD's guide that pairs each GPU with the NIC that shares its PCIe switch.
    link: https://instinct.docs.amd.com/projects/system-acceptance/en/latest/
'''

EXAMPLES = r'''
- name: Read the PCIe devices of every node
  llmfleet.rocm.pcie_facts:
  become: true

- name: Fail when a GPU link trained below its capability
  ansible.builtin.assert:
    that: ansible_facts.pcie.gpus | intersect(ansible_facts.pcie.downgraded_links) | length == 0
    fail_msg: "GPU links downgraded: {{ ansible_facts.pcie.gpus | intersect(ansible_facts.pcie.downgraded_links) }}"

- name: Fail when a bridge has ACS enabled (multi-node RCCL needs it off)
  ansible.builtin.assert:
    that: ansible_facts.pcie.bridges_with_acs | length == 0
    fail_msg: "Disable ACS on {{ ansible_facts.pcie.bridges_with_acs | join(', ') }}"

- name: Show the NIC next to each GPU
  ansible.builtin.debug:
    msg: "{{ item.gpu }} -> {{ item.same_switch | default([], true) | first | default('no NIC on its switch') }}"
  loop: "{{ ansible_facts.pcie.gpu_nic_affinity }}"
'''

RETURN = r'''
ansible_facts:
  description: The facts set by the module.
  returned: always
  type: dict
  contains:
    pcie:
      description: The host's PCI devices.
      returned: always
      type: dict
      contains:
        source:
          description: C(lspci) when it ran, null when it is not installed.
          type: str
          sample: lspci
        capabilities_readable:
          description: False when C(lspci) could not read PCI capabilities (not root); link and ACS fields are then null.
          type: bool
          sample: true
        topology_source:
          description: Where the parent bridge chains came from, C(sysfs) or C(lspci), or null when unknown.
          type: str
          sample: sysfs
        gpus:
          description: Addresses of the AMD GPUs and Instinct accelerators.
          type: list
          elements: str
          sample: ["0000:05:00.0", "0000:2b:00.0"]
        nics:
          description: Addresses of the Ethernet (class 0200) and InfiniBand (class 0207) controllers.
          type: list
          elements: str
          sample: ["0000:09:00.0"]
        bridges_with_acs:
          description: Addresses of bridges (root and switch ports) with at least one ACS control enabled.
          type: list
          elements: str
          sample: ["0000:c0:07.1"]
        downgraded_links:
          description: Addresses of devices whose link trained below its capability (speed or width).
          type: list
          elements: str
          sample: ["0000:c0:03.1"]
        gpu_nic_affinity:
          description: One entry per GPU with the NICs that share its switch, its root port or its NUMA node.
          type: list
          elements: dict
          contains:
            gpu:
              description: GPU address.
              type: str
            numa_node:
              description: NUMA node of the GPU, or null.
              type: int
            root_port:
              description: The root port above the GPU, or null when the chain is unknown.
              type: str
            switch:
              description: Upstream port of the first bridge below the root port, or null.
              type: str
            same_switch:
              description: NICs below the same switch (the best RDMA partners).
              type: list
              elements: str
            same_root_port:
              description: NICs below the same root port.
              type: list
              elements: str
            same_numa_node:
              description: NICs on the same NUMA node.
              type: list
              elements: str
        devices:
          description: Every device lspci listed, in its order.
          type: list
          elements: dict
          contains:
            address:
              description: PCI address C(domain:bus:device.function).
              type: str
              sample: "0000:05:00.0"
            path:
              description: Parent bridges, root port first; null when unknown.
              type: list
              elements: str
            class_name:
              description: Class name as lspci prints it.
              type: str
              sample: Processing accelerators
            class_id:
              description: Class and subclass, 4 hex digits.
              type: str
              sample: "1200"
            vendor_id:
              description: Vendor id, 4 hex digits.
              type: str
              sample: "1002"
            device_id:
              description: Device id, 4 hex digits.
              type: str
              sample: "74a1"
            description:
              description: Vendor and device names as lspci prints them.
              type: str
              sample: Advanced Micro Devices, Inc. [AMD/ATI] Aqua Vanjaram [Instinct MI300X]
            revision:
              description: Revision, 2 hex digits, or null.
              type: str
            subsystem:
              description: Subsystem line, or null.
              type: str
            numa_node:
              description: NUMA node, or null when the platform does not report one.
              type: int
            iommu_group:
              description: IOMMU group, or null.
              type: int
            driver:
              description: Kernel driver in use, or null.
              type: str
            capabilities_readable:
              description: False when lspci printed C(<access denied>) for this device's capabilities.
              type: bool
            bars:
              description: Memory and I/O regions.
              type: list
              elements: dict
              contains:
                index:
                  description: Region number.
                  type: int
                type:
                  description: C(memory) or C(io).
                  type: str
                address:
                  description: Base address as printed.
                  type: str
                bits:
                  description: 32 or 64 for memory regions, else null.
                  type: int
                prefetchable:
                  description: Whether the region is prefetchable.
                  type: bool
                disabled:
                  description: Whether lspci marked the region disabled.
                  type: bool
                size_bytes:
                  description: Size in bytes, or null when lspci printed none.
                  type: int
            largest_bar_bytes:
              description: Size of the largest memory region; a GPU's full-memory BAR shows that Above 4G decoding and large BARs work.
              type: int
              sample: 274877906944
            pcie:
              description: The PCI Express capability, or null (no capability, or unreadable).
              type: dict
              contains:
                type:
                  description: Port type, for example C(Endpoint), C(Root Port), C(Upstream Port), C(Downstream Port).
                  type: str
                link_cap_speed_gts:
                  description: Capable speed in GT/s.
                  type: float
                link_cap_width:
                  description: Capable width in lanes.
                  type: int
                link_speed_gts:
                  description: Trained speed in GT/s.
                  type: float
                link_width:
                  description: Trained width in lanes.
                  type: int
                speed_downgraded:
                  description: Trained speed below capability.
                  type: bool
                width_downgraded:
                  description: Trained width below capability.
                  type: bool
                downgraded:
                  description: Either of the two.
                  type: bool
            acs:
              description: The ACS capability, or null when the device has none.
              type: dict
              contains:
                capability:
                  description: ACSCap flags, name to bool.
                  type: dict
                control:
                  description: ACSCtl flags, name to bool.
                  type: dict
                enabled:
                  description: Names of the enabled ACSCtl flags, sorted.
                  type: list
                  elements: str
                  sample: [SrcValid]
                source_validation:
                  description: ACSCtl SrcValid, the flag AMD's RCCL guide says to clear.
                  type: bool
commands:
  description: The argument lists that were run, in order.
  returned: always
  type: list
  elements: list
  sample: [[/usr/bin/lspci, -D, -nn, -vvv]]
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.llmfleet.rocm.plugins.module_utils import _lspci as lspci
from ansible_collections.llmfleet.rocm.plugins.module_utils._tool_runner import ToolRunner

LSPCI_ARGS = ['-D', '-nn', '-vvv']


def _sysfs_parents(sysfs_path, address):
    link = os.path.join(sysfs_path, 'bus', 'pci', 'devices', address)
    if not os.path.exists(link):
        return None
    return lspci.parents_from_sysfs_path(os.path.realpath(link), address)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysfs_path=dict(type='path', default='/sys'),
        ),
        supports_check_mode=True,
    )
    sysfs_path = module.params['sysfs_path']
    runner = ToolRunner(module)
    facts = {'source': None, 'capabilities_readable': None, 'topology_source': None, 'devices': []}
    facts.update(lspci.summarize([]))

    path = runner.find('lspci')
    if not path:
        module.warn('lspci was not found: install the pciutils package to read PCIe devices, links and ACS.')
        module.exit_json(changed=False, ansible_facts={'pcie': facts}, commands=runner.commands)

    parsed = runner.read('lspci', [path] + LSPCI_ARGS, lspci.parse_lspci)

    devices = parsed['devices']
    from_sysfs = 0
    for device in devices:
        parents = _sysfs_parents(sysfs_path, device['address'])
        if parents is not None:
            device['path'] = parents
            from_sysfs += 1
    if from_sysfs:
        facts['topology_source'] = 'sysfs'
    elif any(device['path'] is not None for device in devices):
        facts['topology_source'] = 'lspci'

    facts.update(source='lspci', capabilities_readable=parsed['capabilities_readable'], devices=devices)
    facts.update(lspci.summarize(devices))
    for line in parsed['warnings']:
        module.warn('lspci: %s' % line)
    if not parsed['capabilities_readable']:
        module.warn('lspci could not read PCI capabilities (Capabilities: <access denied>): link state and ACS are '
                    'unknown. Run llmfleet.rocm.pcie_facts with become: true.')
    module.exit_json(changed=False, ansible_facts={'pcie': facts}, commands=runner.commands)


if __name__ == '__main__':
    main()
