#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: numa_facts
short_description: Read the NUMA nodes, their CPUs and memory, and the distance matrix into C(ansible_facts.numa)
version_added: 0.1.0
description:
  - Runs C(numactl --hardware) when C(numactl) is installed and reports every NUMA node with its CPUs, memory and
    free memory in MiB, and the node distance matrix.
  - Without C(numactl), or when it prints C(No NUMA available on this system), the nodes come from
    C(/sys/devices/system/node) (C(cpulist), C(meminfo), C(distance)). A kernel built without NUMA has no such
    directory; the module then reports one node, id 0, holding every online CPU with unknown memory, so roles can
    still count CPUs, and C(available=false) tells them that C(numactl --cpunodebind) will not work.
  - Nodes can be sparse (ids C(0), C(8), C(252)), have no CPUs (GPU or CXL memory) or no memory (NPS4 with empty
    memory channels); all are reported as they are.
  - C(numactl) runs with an argument list (no shell) and the C locale. Output the parser does not know makes the module
    fail, never guess.
  - Ansible's M(ansible.builtin.setup) gives the processor count and the total memory, not the NUMA nodes, their CPUs
    and memory or their distances; no module of C(community.general) or C(ansible.posix) reads them.
author:
  - llmfleet.rocm contributors (@llmfleet)
extends_documentation_fragment:
  - llmfleet.rocm.facts
  - llmfleet.rocm.facts.SYSFS
options: {}
attributes:
  facts:
    support: full
    description: Sets C(ansible_facts.numa).
seealso:
  - module: llmfleet.rocm.pcie_facts
  - name: numactl
    description: The NUMA policy tool whose --hardware listing this module reads.
    link: https://github.com/numactl/numactl
'''

EXAMPLES = r'''
- name: Read the NUMA layout
  llmfleet.rocm.numa_facts:

- name: Show the CPUs of the NUMA node of GPU 0
  ansible.builtin.debug:
    msg: "{{ (ansible_facts.numa.nodes | selectattr('id', 'equalto', ansible_facts.rocm.gpus[0].numa_node) | first).cpus }}"

- name: Warn about nodes without memory (NPS4 with unpopulated channels)
  ansible.builtin.debug:
    msg: "Nodes without memory: {{ ansible_facts.numa.nodes | selectattr('memory_mb', 'equalto', 0) | map(attribute='id') | list }}"
'''

RETURN = r'''
ansible_facts:
  description: The facts set by the module.
  returned: always
  type: dict
  contains:
    numa:
      description: The host's NUMA layout.
      returned: always
      type: dict
      contains:
        available:
          description: Whether NUMA is usable (numactl's view, or sysfs has node directories).
          type: bool
          sample: true
        source:
          description: C(numactl), C(sysfs), or C(cpu) (no NUMA support, one node built from the online CPUs).
          type: str
          sample: numactl
        node_count:
          description: Number of nodes.
          type: int
          sample: 2
        cpu_count:
          description: Number of CPUs over all nodes.
          type: int
          sample: 128
        nodes:
          description: One entry per node, ordered by id.
          type: list
          elements: dict
          contains:
            id:
              description: Node id (ids can be sparse).
              type: int
            cpus:
              description: CPU numbers of the node, sorted; empty for memory-only nodes.
              type: list
              elements: int
            memory_mb:
              description: Memory in MiB, or null when unknown.
              type: int
            free_mb:
              description: Free memory in MiB, or null when unknown.
              type: int
        distances:
          description: Distance matrix, rows and columns in the order of C(nodes); empty when unknown.
          type: list
          elements: list
          sample: [[10, 32], [32, 10]]
commands:
  description: The argument lists that were run, in order.
  returned: always
  type: list
  elements: list
  sample: [[/usr/bin/numactl, --hardware]]
'''

import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError
from ansible_collections.llmfleet.rocm.plugins.module_utils import _numactl as numactl
from ansible_collections.llmfleet.rocm.plugins.module_utils._tool_runner import ToolRunner, list_dir, read_text

NODE_DIR_RE = re.compile(r'^node(?P<id>\d+)$')


def _no_numa(rc, parsed):
    """numactl exits 1 after "No NUMA available on this system": an answer, not a failure."""
    return not parsed['available']


def read_sysfs(sysfs_path):
    """Nodes and distances from /sys/devices/system/node; None when the directory has no node."""
    base = os.path.join(sysfs_path, 'devices', 'system', 'node')
    names = list_dir(base)
    ids = sorted(int(match.group('id')) for match in (NODE_DIR_RE.match(name) for name in names) if match)
    if not ids:
        return None
    nodes, rows = [], []
    for node_id in ids:
        node_dir = os.path.join(base, 'node%d' % node_id)
        memory, free = numactl.parse_node_meminfo(read_text(os.path.join(node_dir, 'meminfo')))
        nodes.append({'id': node_id, 'cpus': numactl.parse_cpulist(read_text(os.path.join(node_dir, 'cpulist'))),
                      'memory_mb': memory, 'free_mb': free})
        rows.append(numactl.parse_distance_line(read_text(os.path.join(node_dir, 'distance'))))
    distances = rows if all(row is not None and len(row) == len(ids) for row in rows) else []
    return {'nodes': nodes, 'distances': distances}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            sysfs_path=dict(type='path', default='/sys'),
        ),
        supports_check_mode=True,
    )
    sysfs_path = module.params['sysfs_path']
    runner = ToolRunner(module)
    result = None
    available = None

    path = runner.find('numactl')
    if path:
        parsed = runner.read('numactl', [path, '--hardware'], numactl.parse_numactl_hardware, accept_rc=_no_numa)
        for line in parsed['warnings']:
            module.warn('numactl: %s' % line)
        available = parsed['available']
        if available:
            result = {'source': 'numactl', 'nodes': parsed['nodes'], 'distances': parsed['distances']}

    if result is None:
        try:
            from_sysfs = read_sysfs(sysfs_path)
        except ParseError as exc:
            runner.fail('The NUMA node files in %s are not readable (%s).' % (sysfs_path, exc.detail))
        if from_sysfs is not None:
            result = dict(from_sysfs, source='sysfs')
            if available is None:
                available = True
        else:
            online = read_text(os.path.join(sysfs_path, 'devices', 'system', 'cpu', 'online'))
            try:
                cpus = numactl.parse_cpulist(online)
            except ParseError as exc:
                runner.fail('%s/devices/system/cpu/online is not a CPU list (%s).' % (sysfs_path, exc.detail))
            result = {'source': 'cpu', 'nodes': [{'id': 0, 'cpus': cpus, 'memory_mb': None, 'free_mb': None}],
                      'distances': []}
            available = False

    facts = {
        'available': bool(available),
        'source': result['source'],
        'node_count': len(result['nodes']),
        'cpu_count': sum(len(node['cpus']) for node in result['nodes']),
        'nodes': result['nodes'],
        'distances': result['distances'],
    }
    module.exit_json(changed=False, ansible_facts={'numa': facts}, commands=runner.commands)


if __name__ == '__main__':
    main()
