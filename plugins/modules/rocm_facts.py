#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: rocm_facts
short_description: Read the AMD GPUs of a host into C(ansible_facts.rocm)
version_added: 0.1.0
description:
  - Runs whichever of C(amd-smi), C(rocm-smi) and C(rocminfo) it finds on E(PATH) or in the ROCm
    C(bin) directory, parses their output and merges it into one description of the host's GPUs.
  - Every tool is optional. With none installed the module reports no GPUs and an empty C(sources) list,
    which is what a bare node looks like before the ROCm packages are installed.
  - A tool that prints an error instead of data (kernel driver not loaded, permission denied on
    C(/dev/kfd), runtime failure) makes the module fail with the tool's own line and what to do.
    Output in a format the parsers do not know is a failure too, never a guess.
  - Tools run with an argument list (no shell) and the C locale.
  - The NUMA node of a GPU comes from C(amd-smi) or C(rocm-smi); when neither knows it, from
    C(/sys/bus/pci/devices/<address>/numa_node). The C(Node) of C(rocminfo) is a KFD agent number, not a NUMA node.
  - Ansible's M(ansible.builtin.setup) does not read GPUs, and no module of C(community.general) or C(ansible.posix)
    runs the ROCm tools.
author:
  - llmfleet.rocm contributors (@llmfleet)
extends_documentation_fragment:
  - llmfleet.rocm.facts
  - llmfleet.rocm.facts.SYSFS
options:
  tools:
    description:
      - Which tools to ask, when they are installed.
    type: list
    elements: str
    choices: [amd-smi, rocm-smi, rocminfo]
    default: [amd-smi, rocm-smi, rocminfo]
  rocm_path:
    description:
      - The ROCm installation directory; its C(bin) directory is searched after E(PATH) and its
        C(.info/version) file gives the ROCm version when C(amd-smi) does not.
    type: path
    default: /opt/rocm
  require_gpus:
    description:
      - Fail when no tool is installed or no GPU is found, instead of reporting C(gpu_count=0).
    type: bool
    default: false
attributes:
  facts:
    support: full
    description: Sets C(ansible_facts.rocm).
notes:
  - C(amd-smi) warns unless the user is in both the C(render) and C(video) groups; such warnings are passed on as Ansible warnings
    and do not fail the module.
seealso:
  - name: ROCm installation on Linux
    description: AMD's guide to installing ROCm, which provides the tools this module reads.
    link: https://rocm.docs.amd.com/projects/install-on-linux/en/latest/
'''

EXAMPLES = r'''
- name: Read the GPUs of every node
  llmfleet.rocm.rocm_facts:

- name: Show what was found
  ansible.builtin.debug:
    msg: "{{ ansible_facts.rocm.gpu_count }} GPUs ({{ ansible_facts.rocm.gfx_targets | join(',') }})"

- name: Fail unless GPUs are visible, asking rocminfo only
  llmfleet.rocm.rocm_facts:
    tools: [rocminfo]
    require_gpus: true

- name: Build the PYTORCH_ROCM_ARCH value from the facts
  ansible.builtin.set_fact:
    engine_build_rocm_arch: "{{ ansible_facts.rocm.gfx_targets | join(';') }}"
'''

RETURN = r'''
ansible_facts:
  description: The facts set by the module.
  returned: always
  type: dict
  contains:
    rocm:
      description: The host's AMD GPUs.
      returned: always
      type: dict
      contains:
        gpu_count:
          description: Number of GPU agents; a partition of a partitioned GPU counts as one GPU.
          type: int
          sample: 8
        gfx_targets:
          description: Sorted, distinct LLVM target names of the GPUs (C(gfx90a), never C(gfx9010)).
          type: list
          elements: str
          sample: [gfx942]
        rocm_version:
          description: Installed ROCm version, or null when unknown.
          type: str
          sample: 7.1.1
        driver_version:
          description: Version of the amdgpu kernel driver, or null when unknown.
          type: str
          sample: 6.14.14
        sources:
          description: The tools that answered, sorted.
          type: list
          elements: str
          sample: [amd-smi, rocminfo]
        gpus:
          description: One entry per GPU, ordered by PCI address when every address is known.
          type: list
          elements: dict
          contains:
            index:
              description: Position in this list, from 0.
              type: int
            gfx_target:
              description: LLVM target name.
              type: str
              sample: gfx942
            marketing_name:
              description: Product name as the tools report it.
              type: str
              sample: AMD Instinct MI300X
            vram_bytes:
              description: Device memory in bytes, or null when unknown.
              type: int
              sample: 206141652992
            numa_node:
              description: NUMA node the GPU is attached to, or null when unknown.
              type: int
              sample: 0
            pci_address:
              description: PCI address C(domain:bus:device.function), or null when unknown.
              type: str
              sample: "0000:0c:00.0"
            compute_units:
              description: Number of compute units, or null when unknown.
              type: int
              sample: 304
            integrated:
              description: True for an integrated GPU (APU), false for a discrete one, null when unknown.
              type: bool
              sample: false
commands:
  description: The argument lists that were run, in order.
  returned: always
  type: list
  elements: list
  sample: [[/opt/rocm/bin/amd-smi, static, --json], [/opt/rocm/bin/amd-smi, version], [/opt/rocm/bin/rocminfo]]
'''

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.llmfleet.rocm.plugins.module_utils import _amd_smi as amd_smi, _gpu_facts as gpu_facts, _rocm_smi as rocm_smi, _rocminfo as rocminfo
from ansible_collections.llmfleet.rocm.plugins.module_utils._tool_runner import ToolRunner, output_text, read_text

ROCM_SMI_FLAGS = ['--showproductname', '--showbus', '--showtoponuma', '--showmeminfo', 'vram', '--showdriverversion']


def read_amd_smi(runner, path):
    result = dict(runner.read('amd-smi', [path, 'static', '--json'], amd_smi.parse_amd_smi_static_json))
    version = runner.read('amd-smi', [path, 'version'], amd_smi.parse_amd_smi_version)
    result['rocm_version'] = version.get('rocm_version')
    return result


def read_rocm_smi(runner, path):
    argv = [path] + ROCM_SMI_FLAGS + ['--json']
    rc, out, err = runner.run(argv)
    text = output_text(out, err)
    if rc != 0 and 'unrecognized arguments' in text and '--json' in text:
        # Releases before --json existed: the same sections as text.
        return runner.read('rocm-smi', [path] + ROCM_SMI_FLAGS, rocm_smi.parse_rocm_smi_text)
    return runner.parse('rocm-smi', argv, rocm_smi.parse_rocm_smi_json, rc, out, err)


def read_rocminfo(runner, path):
    return runner.read('rocminfo', [path], rocminfo.parse_rocminfo)


READERS = (('amd-smi', read_amd_smi), ('rocm-smi', read_rocm_smi), ('rocminfo', read_rocminfo))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            tools=dict(type='list', elements='str', choices=['amd-smi', 'rocm-smi', 'rocminfo'],
                       default=['amd-smi', 'rocm-smi', 'rocminfo']),
            rocm_path=dict(type='path', default='/opt/rocm'),
            sysfs_path=dict(type='path', default='/sys'),
            require_gpus=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    rocm_path = module.params['rocm_path']
    sysfs_path = module.params['sysfs_path']
    runner = ToolRunner(module, opt_dirs=[os.path.join(rocm_path, 'bin')])
    parsed = {}
    warnings = []

    for tool, reader in READERS:
        if tool not in module.params['tools']:
            continue
        path = runner.find(tool)
        if not path:
            continue
        parsed[tool] = reader(runner, path)
        warnings.extend('%s: %s' % (tool, line) for line in parsed[tool].get('warnings') or [])

    def read_numa_node(address):
        text = read_text(os.path.join(sysfs_path, 'bus', 'pci', 'devices', address, 'numa_node'))
        try:
            node = int(text.strip())
        except (AttributeError, ValueError):
            return None
        return node if node >= 0 else None

    facts, merge_warnings = gpu_facts.merge(
        parsed,
        read_numa_node=read_numa_node,
        rocm_version_text=read_text(os.path.join(rocm_path, '.info', 'version')),
        driver_version_text=read_text(os.path.join(sysfs_path, 'module', 'amdgpu', 'version')),
    )

    warnings.extend(merge_warnings)

    if module.params['require_gpus'] and facts['gpu_count'] == 0:
        if not parsed:
            runner.fail('No ROCm tool (amd-smi, rocm-smi, rocminfo) was found on PATH or in %s/bin: install the ROCm '
                        'packages (the llmfleet.rocm.rocm role does) before asking for GPUs.' % rocm_path,
                        ansible_facts={'rocm': facts})
        runner.fail('The ROCm tools (%s) answered but found no GPU: check that the GPUs are seated and visible in '
                    '"lspci -d 1002:", and "dmesg | grep amdgpu".' % ', '.join(facts['sources']),
                    ansible_facts={'rocm': facts})

    result = dict(changed=False, ansible_facts={'rocm': facts}, commands=runner.commands)
    for warning in warnings:
        module.warn(warning)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
