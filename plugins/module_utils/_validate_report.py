# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checks of a node's validation beyond the threshold table, and its reports.

``validate_thresholds.judge`` compares parsed tool outputs with the GPU model's figures. What it
does not judge is here, as pure functions of parsed data: the NIC links and ACS from
``pcie_facts``, the kernel's IOMMU mode, the firmware (the same on every GPU of the node), the
partition modes the inventory expects and the xGMI links. The reports are a JSON document, a
JUnit XML file (one test case per finding; errors are failures, warnings pass with their message
as output) and a text summary. Findings have the shape of ``judge``'s:
``{'level', 'id', 'gpu', 'figure', 'threshold', 'source', 'message'}``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from xml.etree import ElementTree

from ansible_collections.llmfleet.rocm.plugins.module_utils._validate_thresholds import FIX_FABRIC, FIX_LINK, POLICY

FIX_ACS = ('disable ACS on the bridges above the GPUs and NICs (BIOS: "PCIe ACS" or "ACS Enable" off; it makes '
           'peer-to-peer traffic go through the root complex)')
FIX_IOMMU = 'add iommu=pt to the kernel command line (the tuning role does, tuning_kernel_args) and reboot'
FIX_FIRMWARE = ('flash every GPU of the node with the same firmware package (AMD\'s firmware bundle for the '
                'platform) and reboot')
FIX_COOLING = ('check the cooling: fans and their curve in the BMC, airflow and blanking panels, the inlet temperature; '
               'reseat the GPU\'s heatsink if one GPU alone runs hot')
# Degrees below a sensor's slowdown limit where a reading is worth a warning.
TEMPERATURE_MARGIN_C = 10.0
# amd-smi metric's sensors and the static limits that slow each down.
_SENSOR_LIMITS = (('hotspot', 'slowdown_hotspot_temperature_c'), ('mem', 'slowdown_vram_temperature_c'),
                  ('edge', 'slowdown_edge_temperature_c'))
FIX_PARTITION = 'set the partition mode with "amd-smi set --compute-partition/--memory-partition" and reboot'
SOURCE_PREFLIGHT = 'llmfleet.rocm preflight (roles/preflight/README.md)'


def finding(level, check_id, message, figure=None, threshold=None, source=None, gpu=None):
    return {'level': level, 'id': check_id, 'gpu': gpu, 'figure': figure, 'threshold': threshold,
            'source': source, 'message': message}


def nic_link_findings(pcie):
    """Every NIC's link at its capability (``pcie_facts``'s devices and nics)."""
    findings = []
    nics = set((pcie or {}).get('nics') or [])
    for device in (pcie or {}).get('devices') or []:
        if device.get('address') not in nics:
            continue
        link = device.get('pcie') or {}
        if link.get('link_speed_gts') is None or link.get('link_cap_speed_gts') is None:
            continue
        figure = '%s GT/s x%s' % (link.get('link_speed_gts'), link.get('link_width'))
        wanted = '%s GT/s x%s' % (link.get('link_cap_speed_gts'), link.get('link_cap_width'))
        if link.get('downgraded'):
            findings.append(finding('error', 'pcie.nic_link', 'NIC %s link is %s, below its capability %s (lspci): %s'
                                    % (device['address'], figure, wanted, FIX_LINK), figure, wanted, 'lspci -vvv',
                                    device['address']))
        else:
            findings.append(finding('ok', 'pcie.nic_link', 'NIC %s link is %s, its capability' % (device['address'], figure),
                                    figure, wanted, 'lspci -vvv', device['address']))
    return findings


def acs_findings(pcie):
    """ACS off on every bridge (``pcie_facts``'s bridges_with_acs), as the preflight wants it."""
    bridges = list((pcie or {}).get('bridges_with_acs') or [])
    if not (pcie or {}).get('capabilities_readable', True):
        return [finding('warning', 'pcie.acs', 'ACS not judged: lspci could not read the capabilities (run as root)',
                        source=SOURCE_PREFLIGHT)]
    if bridges:
        return [finding('error', 'pcie.acs', 'ACS is enabled on %d bridge(s) (%s): %s'
                        % (len(bridges), ', '.join(bridges), FIX_ACS), len(bridges), 0, SOURCE_PREFLIGHT)]
    return [finding('ok', 'pcie.acs', 'ACS is off on every bridge', 0, 0, SOURCE_PREFLIGHT)]


def iommu_findings(cmdline):
    """``iommu=pt`` on the kernel command line (a list of its words), as the preflight wants it."""
    if cmdline is None:
        return [finding('warning', 'kernel.iommu', 'the kernel command line could not be read', source=SOURCE_PREFLIGHT)]
    values = [word.split('=', 1)[1] for word in cmdline if word.startswith('iommu=')]
    mode = values[-1] if values else None
    if mode == 'pt':
        return [finding('ok', 'kernel.iommu', 'the kernel runs with iommu=pt', 'pt', 'pt', SOURCE_PREFLIGHT)]
    return [finding('error', 'kernel.iommu', 'the kernel runs with %s, not iommu=pt: %s'
                    % ('iommu=%s' % mode if mode else 'no iommu= setting', FIX_IOMMU), mode, 'pt', SOURCE_PREFLIGHT)]


def firmware_findings(firmware):
    """Every firmware the same on every GPU of the node (``parse_amd_smi_firmware_json``)."""
    findings = []
    versions = {}
    for gpu in (firmware or {}).get('gpus') or []:
        for name, version in sorted((gpu.get('firmware') or {}).items()):
            versions.setdefault(name, {}).setdefault(version, []).append(gpu['gpu'])
    for name, seen in sorted(versions.items()):
        if len(seen) == 1:
            continue
        common = max(seen, key=lambda version: len(seen[version]))
        for version, gpus in sorted(seen.items()):
            if version == common:
                continue
            for index in gpus:
                findings.append(finding('error', 'firmware.%s' % name, 'GPU %d has %s firmware %s, the node\'s other GPUs %s: %s'
                                        % (index, name, version, common, FIX_FIRMWARE), version, common, POLICY, index))
    if not findings and versions:
        findings.append(finding('ok', 'firmware.same', 'every GPU has the same %d firmware versions' % len(versions),
                                source=POLICY))
    return findings


def firmware_versions(firmware):
    """The node's firmware versions by name (the first GPU's), for comparing nodes of a group."""
    gpus = (firmware or {}).get('gpus') or []
    return dict(gpus[0].get('firmware') or {}) if gpus else {}


def partition_findings(partitions, expected):
    """The compute and memory partition modes (``{'compute': [...per GPU], 'memory': [...]}``) as the inventory expects."""
    findings = []
    for kind in ('compute', 'memory'):
        wanted = (expected or {}).get(kind)
        if not wanted:
            continue
        for index, mode in enumerate((partitions or {}).get(kind) or []):
            if mode is None:
                continue
            if str(mode).upper() == str(wanted).upper():
                findings.append(finding('ok', 'partition.%s' % kind, 'GPU %d is in %s %s partition mode' % (index, mode, kind),
                                        mode, wanted, 'inventory', index))
            else:
                findings.append(finding('error', 'partition.%s' % kind, 'GPU %d is in %s %s partition mode, the inventory expects'
                                        ' %s: %s' % (index, mode, kind, wanted, FIX_PARTITION), mode, wanted, 'inventory',
                                        index))
    return findings


def temperature_findings(metric, static_health):
    """Every temperature below its slowdown limit (``amd-smi static``'s limits), with a margin for a warning."""
    limits = dict((gpu['gpu'], gpu.get('limits') or {}) for gpu in (static_health or {}).get('gpus') or [])
    findings = []
    for gpu in (metric or {}).get('gpus') or []:
        index = gpu['gpu']
        for sensor, limit_name in _SENSOR_LIMITS:
            reading = (gpu.get('temperature_c') or {}).get(sensor)
            limit = limits.get(index, {}).get(limit_name)
            if reading is None or limit is None:
                continue
            check = 'health.temperature.%s' % sensor
            source = 'amd-smi static --json (%s)' % limit_name
            if reading >= limit:
                findings.append(finding('error', check, 'GPU %d %s temperature is %.0f C, at or above its slowdown limit %.0f C: %s'
                                        % (index, sensor, reading, limit, FIX_COOLING), reading, limit, source, index))
            elif reading >= limit - TEMPERATURE_MARGIN_C:
                findings.append(finding('warning', check, 'GPU %d %s temperature is %.0f C, within %.0f C of its slowdown limit'
                                        ' %.0f C: %s' % (index, sensor, reading, TEMPERATURE_MARGIN_C, limit, FIX_COOLING),
                                        reading, limit, source, index))
            else:
                findings.append(finding('ok', check, 'GPU %d %s temperature is %.0f C, below %.0f C' % (index, sensor, reading, limit),
                                        reading, limit, source, index))
    return findings


def xgmi_findings(topology):
    """Every xGMI link between the node's GPUs up (``parse_amd_smi_topology_json``)."""
    findings = []
    for gpu in (topology or {}).get('gpus') or []:
        down = [link['gpu'] for link in gpu.get('links') or []
                if link.get('link_type') == 'XGMI' and link.get('enabled') is False]
        if down:
            findings.append(finding('error', 'xgmi.link', 'GPU %d has its xGMI link(s) to GPU %s down: %s'
                                    % (gpu['gpu'], ', '.join(str(peer) for peer in down), FIX_FABRIC),
                                    len(down), 0, 'amd-smi topology', gpu['gpu']))
    return findings


def counts(findings):
    result = {'ok': 0, 'warning': 0, 'error': 0}
    for item in findings:
        result[item['level']] = result.get(item['level'], 0) + 1
    return result


def _case_name(item):
    return '%s%s' % (item['id'], '' if item.get('gpu') is None else ' [%s]' % item['gpu'])


def junit_xml(node, findings):
    """One test suite for the node, one test case per finding: errors fail, warnings pass with output."""
    tally = counts(findings)
    suite = ElementTree.Element('testsuite', {'name': 'llmfleet.rocm.validate %s' % node, 'tests': str(len(findings)),
                                              'failures': str(tally['error']), 'errors': '0', 'skipped': '0'})
    for item in findings:
        case = ElementTree.SubElement(suite, 'testcase', {'classname': '%s.%s' % (node, item['id'].split('.')[0]),
                                                          'name': _case_name(item)})
        if item['level'] == 'error':
            failure = ElementTree.SubElement(case, 'failure', {'message': item['message'], 'type': item['id']})
            failure.text = json.dumps({'figure': item.get('figure'), 'threshold': item.get('threshold'),
                                       'source': item.get('source')}, sort_keys=True, default=str)
        else:
            out = ElementTree.SubElement(case, 'system-out')
            out.text = '%s: %s' % (item['level'], item['message'])
    suites = ElementTree.Element('testsuites', {'name': 'llmfleet.rocm.validate', 'tests': str(len(findings)),
                                                'failures': str(tally['error'])})
    suites.append(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(suites, encoding='unicode') + '\n'


def summary_text(node, model, findings):
    """A person's summary: the verdict, then every error and warning with its message."""
    tally = counts(findings)
    verdict = 'FAILED' if tally['error'] else 'PASSED'
    lines = ['%s %s (%s): %d checks, %d errors, %d warnings' % (node, verdict, model or 'unknown GPU model', len(findings),
                                                                tally['error'], tally['warning'])]
    for level in ('error', 'warning'):
        for item in findings:
            if item['level'] == level:
                lines.append('  %-7s %s: %s' % (level.upper(), _case_name(item), item['message']))
    return '\n'.join(lines) + '\n'


def firmware_drift(firmware_by_node):
    """Nodes whose firmware differs from most nodes' (``{node: {name: version}}``) -> ``{node: [findings]}``."""
    drift = {}
    names = sorted(set(name for versions in firmware_by_node.values() for name in versions))
    for name in names:
        seen = {}
        for node, versions in sorted(firmware_by_node.items()):
            if name in versions:
                seen.setdefault(versions[name], []).append(node)
        if len(seen) < 2:
            continue
        common = max(sorted(seen), key=lambda version: len(seen[version]))
        for version, nodes in sorted(seen.items()):
            if version == common:
                continue
            for node in nodes:
                drift.setdefault(node, []).append(finding(
                    'error', 'firmware.fleet.%s' % name, '%s has %s firmware %s, most nodes of the group %s: %s'
                    % (node, name, version, common, FIX_FIRMWARE), version, common, POLICY))
    return drift


def fleet_table(nodes):
    """The fleet's verdicts from each node's result (``[{node, model, findings, firmware}]``).

    Firmware that differs between nodes is a failure of the nodes that differ from most. Returns ``rows`` (node, check,
    gpu, figure, threshold, verdict, message: every error and warning, and one row per node that passed), ``failed``
    (the nodes with an error), ``markdown`` and ``csv``.
    """
    drift = firmware_drift(dict((item['node'], item.get('firmware') or {}) for item in nodes))
    rows = []
    failed = []
    for item in sorted(nodes, key=lambda entry: entry['node']):
        findings = list(item.get('findings') or []) + drift.get(item['node'], [])
        tally = counts(findings)
        if tally['error']:
            failed.append(item['node'])
        for entry in findings:
            if entry['level'] != 'ok':
                rows.append({'node': item['node'], 'check': entry['id'], 'gpu': entry.get('gpu'), 'figure': entry.get('figure'),
                             'threshold': entry.get('threshold'), 'verdict': 'FAIL' if entry['level'] == 'error' else 'WARN',
                             'message': entry['message']})
        if not tally['error']:
            rows.append({'node': item['node'], 'check': 'all (%d)' % len(findings), 'gpu': None, 'figure': None,
                         'threshold': None, 'verdict': 'PASS', 'message': '%s: %d checks passed, %d warnings'
                         % (item.get('model') or 'unknown model', tally['ok'], tally['warning'])})
    columns = ['node', 'check', 'gpu', 'figure', 'threshold', 'verdict', 'message']

    def cell(value):
        return '' if value is None else str(value)

    markdown = ['| %s |' % ' | '.join(columns), '|%s' % ('---|' * len(columns))]
    markdown += ['| %s |' % ' | '.join(cell(row[column]).replace('|', '\\|') for column in columns) for row in rows]
    csv_lines = [','.join(columns)]
    csv_lines += [','.join('"%s"' % cell(row[column]).replace('"', '""') for column in columns) for row in rows]
    return {'rows': rows, 'failed': failed, 'markdown': '\n'.join(markdown) + '\n', 'csv': '\n'.join(csv_lines) + '\n'}
