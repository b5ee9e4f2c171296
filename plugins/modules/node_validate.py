#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: node_validate
short_description: Judge a GPU node's health and performance against its GPU model's acceptance figures
version_added: 0.1.0
description:
  - Runs the node's validation tools in the C locale, parses their outputs with the collection's parsers and judges
    them. Health from C(amd-smi) (ECC counts, bad pages, temperatures against each sensor's slowdown limit, power and
    throttling, PCIe link of every GPU, xGMI links, firmware the same on every GPU, compute and memory partition modes); the NIC links and ACS from
    I(pcie); the kernel's IOMMU mode from I(cmdline); performance with the ROCm Validation Suite (C(rvs -c) per module),
    rccl-tests' C(all_reduce_perf) and TransferBench (C(a2a), C(p2p)) against the thresholds of the GPU model
    (AMD's system acceptance figures, each with its source), with the inventory's overrides.
  - Writes C(report.json), C(junit.xml) and C(summary.txt) and every tool's output under I(report_dir).
  - Output a parser does not recognise fails the module with the command to report; a failed check does not fail
    the module (the role decides, with C(failed_checks)).
  - In check mode nothing runs and nothing is written.
  - No module of C(ansible.builtin), C(community.general) or C(ansible.posix) reads these tools' outputs. With
    M(ansible.builtin.command), each output would be parsed and judged in Jinja.
author:
  - llmfleet.rocm contributors (@llmfleet)
options:
  checks:
    description: What to run.
    type: list
    elements: str
    choices: [health, pcie, rvs, rccl, transferbench]
    default: [health, pcie, rvs, rccl, transferbench]
  rvs_modules:
    description: The rvs modules to run, each with the configuration the GPU model's acceptance page names.
    type: list
    elements: str
    choices: [gst, iet, pebb, pbqt, peqt, babel]
    default: [gst, iet, pebb, pbqt, babel]
  rvs_conf_dir:
    description: Where rvs's configurations are installed; the model's configurations are read below it.
    type: path
    default: /opt/rocm/share/rocm-validation-suite/conf
  thresholds:
    description: Overrides of the GPU model's thresholds, by name (for example C(rccl_all_reduce)); see the role's README.
    type: dict
    default: {}
  health_thresholds:
    description: Overrides of the health limits (C(ecc_uncorrectable), C(pages_retired)...), by name.
    type: dict
    default: {}
  expected_partitions:
    description: The compute and memory partition modes the inventory expects (C(compute), C(memory)); empty keys are not checked.
    type: dict
    default: {}
  pcie:
    description: The node's PCI bus as C(llmfleet.rocm.pcie_facts) reports it (ansible_facts.pcie), for the NIC links and ACS.
    type: dict
  cmdline:
    description: The words of the kernel command line, for the IOMMU mode; without it the mode is not judged.
    type: list
    elements: str
  tool_dirs:
    description: Directories searched for the tools after PATH.
    type: list
    elements: str
    default: [/opt/rocm/bin, /opt/rccl-tests/build, /usr/bin, /usr/sbin]
  report_dir:
    description: Directory of the reports and the tools' outputs (created).
    type: path
    required: true
  node:
    description: The node's name in the reports.
    type: str
    default: ""
'''

EXAMPLES = r'''
- name: Validate the node
  llmfleet.rocm.node_validate:
    report_dir: /var/lib/llmfleet/validate/latest
    pcie: "{{ ansible_facts.pcie }}"
    node: "{{ inventory_hostname }}"
  register: validation
'''

RETURN = r'''
model:
  description: The GPU model the thresholds are of (amd-smi's marketing name).
  returned: success
  type: str
  sample: AMD Instinct MI300X
findings:
  description: One entry per check (level ok, warning or error; id; gpu; figure; threshold; source; message).
  returned: success
  type: list
  elements: dict
failed_checks:
  description: The findings with level error; each message names the GPU, the figure, the threshold and the likely fix.
  returned: success
  type: list
  elements: dict
counts:
  description: Findings per level.
  returned: success
  type: dict
  sample: {ok: 84, warning: 1, error: 0}
gpus:
  description: How many Instinct GPUs the node has (the ranks it runs in rccl-tests; an integrated GPU is not counted).
  returned: success
  type: int
  sample: 8
firmware:
  description: The node's firmware versions by name (its first GPU's), to compare nodes.
  returned: success
  type: dict
files:
  description: The files written under report_dir.
  returned: success
  type: list
  elements: str
commands:
  description: The argument lists run.
  returned: always
  type: list
  elements: list
'''

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.llmfleet.rocm.plugins.module_utils._amd_smi import parse_amd_smi_static_json
from ansible_collections.llmfleet.rocm.plugins.module_utils._atomic_file import write_atomic
from ansible_collections.llmfleet.rocm.plugins.module_utils._amd_smi_health import (
    parse_amd_smi_bad_pages_json, parse_amd_smi_firmware_json, parse_amd_smi_metric_json, parse_amd_smi_static_health_json,
    parse_amd_smi_topology_json)
from ansible_collections.llmfleet.rocm.plugins.module_utils._rccl_tests import parse_rccl_tests
from ansible_collections.llmfleet.rocm.plugins.module_utils._rvs import parse_rvs
from ansible_collections.llmfleet.rocm.plugins.module_utils._tool_runner import ToolRunner, output_text
from ansible_collections.llmfleet.rocm.plugins.module_utils._transferbench import parse_transferbench
from ansible_collections.llmfleet.rocm.plugins.module_utils import _validate_report as report
from ansible_collections.llmfleet.rocm.plugins.module_utils._validate_thresholds import RVS_CONF, judge, model_key, thresholds_for


class Validation(object):
    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.runner = ToolRunner(module, opt_dirs=module.params['tool_dirs'])
        self.outputs = {}

    def tool(self, name):
        path = self.runner.find(name)
        if not path:
            self.runner.fail('%s is not installed (searched PATH and %s): the validate role installs it (validate_packages)'
                             % (name, ', '.join(self.params['tool_dirs'])), tool=name)
        return path

    def read(self, label, name, args, parser):
        """Run one tool, keep its output under ``label``, parse it (unknown output fails the module)."""
        argv = [self.tool(name)] + list(args)
        rc, out, err = self.runner.run(argv)
        self.outputs[label] = output_text(out, err)
        return self.runner.parse(name, argv, parser, rc, out, err)

    def run(self):
        checks = self.params['checks']
        static = self.read('amd-smi-static', 'amd-smi', ['static', '--json'], parse_amd_smi_static_json)
        gpus = static['gpus']
        # The accelerators take part in rccl-tests and TransferBench; an integrated GPU beside them does not.
        instinct = [gpu for gpu in gpus if model_key(gpu.get('marketing_name')) or 'instinct' in str(gpu.get('marketing_name')).lower()]
        model = next((gpu['marketing_name'] for gpu in instinct or gpus if gpu.get('marketing_name')), None) or ''
        results = {}
        findings = []
        firmware = {}
        if 'health' in checks:
            results['amd_smi_metric'] = self.read('amd-smi-metric', 'amd-smi', ['metric', '--json'], parse_amd_smi_metric_json)
            results['amd_smi_bad_pages'] = self.read('amd-smi-bad-pages', 'amd-smi', ['bad-pages', '--json'],
                                                     parse_amd_smi_bad_pages_json)
            fw = self.read('amd-smi-firmware', 'amd-smi', ['firmware', '--json'], parse_amd_smi_firmware_json)
            topology = self.read('amd-smi-topology', 'amd-smi', ['topology', '--json'], parse_amd_smi_topology_json)
            static_health = self.runner.parse('amd-smi', ['amd-smi', 'static', '--json'], parse_amd_smi_static_health_json, 0,
                                              self.outputs['amd-smi-static'], '')
            findings.extend(report.temperature_findings(results['amd_smi_metric'], static_health))
            firmware = report.firmware_versions(fw)
            findings.extend(report.firmware_findings(fw))
            findings.extend(report.xgmi_findings(topology))
            findings.extend(report.partition_findings(
                {'compute': [gpu.get('compute_partition') for gpu in gpus], 'memory': [gpu.get('memory_partition') for gpu in gpus]},
                self.params['expected_partitions']))
        if 'pcie' in checks:
            metric = results.get('amd_smi_metric')
            if metric is None:
                metric = self.read('amd-smi-metric', 'amd-smi', ['metric', '--json'], parse_amd_smi_metric_json)
            addresses = dict((gpu['gpu'], gpu['pci_address']) for gpu in gpus)
            results['pcie_links'] = [{'device': '%s (%s)' % (gpu['gpu'], addresses.get(gpu['gpu'])),
                                      'speed_gts': (gpu.get('pcie') or {}).get('speed_gts'),
                                      'width': (gpu.get('pcie') or {}).get('width')} for gpu in metric['gpus']]
            if self.params['pcie'] is not None:
                findings.extend(report.nic_link_findings(self.params['pcie']))
                findings.extend(report.acs_findings(self.params['pcie']))
            if self.params['cmdline'] is not None:
                findings.extend(report.iommu_findings(self.params['cmdline']))
        table = thresholds_for(model, self.params['thresholds'])
        if 'rvs' in checks:
            results['rvs'] = self.rvs(table)
        if 'rccl' in checks and instinct:
            results['rccl_all_reduce'] = self.read('all_reduce_perf', 'all_reduce_perf',
                                                   ['-b', '8', '-e', '8G', '-f', '2', '-g', str(len(instinct))], parse_rccl_tests)
        if 'transferbench' in checks and instinct:
            # All-to-all needs two GPUs or more; peer-to-peer also measures the CPU-GPU links.
            a2a = self.read('transferbench-a2a', 'TransferBench', ['a2a'], parse_transferbench) if len(instinct) > 1 else {}
            p2p = self.read('transferbench-p2p', 'TransferBench', ['p2p'], parse_transferbench)
            results['transferbench'] = {'a2a': a2a.get('a2a'), 'p2p': p2p.get('p2p')}
        findings = judge(results, model, self.params['thresholds'], self.params['health_thresholds']) + findings
        return model, findings, firmware, len(instinct)

    def rvs(self, table):
        """Each rvs module with the configuration the model's acceptance page names; their actions together."""
        rules = table.get('rvs') or {}
        merged = {'actions': [], 'errors': []}
        for name in self.params['rvs_modules']:
            conf = (rules.get(name) or {}).get('conf')
            if conf:
                conf = self.params['rvs_conf_dir'].rstrip('/') + conf[len(RVS_CONF):]
                parsed = self.read('rvs-%s' % name, 'rvs', ['-c', conf], parse_rvs)
                merged['actions'].extend(parsed['actions'])
                merged['errors'].extend(parsed['errors'])
        return merged if merged['actions'] or merged['errors'] else None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            checks=dict(type='list', elements='str', default=['health', 'pcie', 'rvs', 'rccl', 'transferbench'],
                        choices=['health', 'pcie', 'rvs', 'rccl', 'transferbench']),
            rvs_modules=dict(type='list', elements='str', default=['gst', 'iet', 'pebb', 'pbqt', 'babel'],
                             choices=['gst', 'iet', 'pebb', 'pbqt', 'peqt', 'babel']),
            rvs_conf_dir=dict(type='path', default=RVS_CONF),
            thresholds=dict(type='dict', default={}),
            health_thresholds=dict(type='dict', default={}),
            expected_partitions=dict(type='dict', default={}),
            pcie=dict(type='dict'),
            cmdline=dict(type='list', elements='str'),
            tool_dirs=dict(type='list', elements='str', default=['/opt/rocm/bin', '/opt/rccl-tests/build', '/usr/bin', '/usr/sbin']),
            report_dir=dict(type='path', required=True),
            node=dict(type='str', default=''),
        ),
        supports_check_mode=True,
    )
    if module.check_mode:
        module.exit_json(changed=False, skipped=True, msg='validation runs the tools; nothing runs in check mode', commands=[])
    validation = Validation(module)
    model, findings, firmware, gpus = validation.run()
    directory = module.params['report_dir']
    node = module.params['node'] or os.uname()[1]
    raw = os.path.join(directory, 'raw')
    if not os.path.isdir(raw):
        os.makedirs(raw, 0o755)
    files = []
    for label, text in sorted(validation.outputs.items()):
        files.append(os.path.join(raw, label + '.txt'))
        write_atomic(files[-1], text)
    tally = report.counts(findings)
    document = {'node': node, 'model': model, 'counts': tally, 'findings': findings, 'firmware': firmware,
                'commands': validation.runner.commands}
    for name, text in (('report.json', json.dumps(document, indent=2, sort_keys=True, default=str) + '\n'),
                       ('junit.xml', report.junit_xml(node, findings)),
                       ('summary.txt', report.summary_text(node, model, findings))):
        files.append(os.path.join(directory, name))
        write_atomic(files[-1], text)
    module.exit_json(changed=True, model=model, gpus=gpus, findings=findings, failed_checks=[item for item in findings if item['level'] == 'error'],
                     counts=tally, firmware=firmware, files=files, commands=validation.runner.commands)


if __name__ == '__main__':
    main()
