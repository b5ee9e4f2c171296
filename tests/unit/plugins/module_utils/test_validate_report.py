# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validation's checks beyond the threshold table, and its JUnit and text reports."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io

import junitparser

from ansible_collections.llmfleet.rocm.plugins.module_utils import _validate_report as vr


def _levels(findings):
    return [(item['level'], item['id'], item['gpu']) for item in findings]


def test_temperatures_against_their_slowdown_limits():
    metric = {'gpus': [{'gpu': 0, 'temperature_c': {'hotspot': 101.0, 'mem': 86.0, 'edge': None}},
                       {'gpu': 1, 'temperature_c': {'hotspot': 45.0, 'mem': 45.0}},
                       {'gpu': 2, 'temperature_c': {'hotspot': 50.0}}]}
    static = {'gpus': [{'gpu': 0, 'limits': {'slowdown_hotspot_temperature_c': 100.0, 'slowdown_vram_temperature_c': 95.0}},
                       {'gpu': 1, 'limits': {'slowdown_hotspot_temperature_c': 100.0, 'slowdown_vram_temperature_c': 95.0}},
                       {'gpu': 2, 'limits': {}}]}
    findings = vr.temperature_findings(metric, static)
    assert _levels(findings) == [('error', 'health.temperature.hotspot', 0), ('warning', 'health.temperature.mem', 0),
                                 ('ok', 'health.temperature.hotspot', 1), ('ok', 'health.temperature.mem', 1)]
    assert 'GPU 0 hotspot temperature is 101 C, at or above its slowdown limit 100 C: check the cooling' in findings[0]['message']


def test_nic_links_and_acs_from_pcie_facts():
    pcie = {'nics': ['0000:09:00.0', '0000:0a:00.0'], 'bridges_with_acs': ['0000:c0:07.1'], 'capabilities_readable': True,
            'devices': [{'address': '0000:09:00.0', 'pcie': {'link_speed_gts': 16.0, 'link_width': 8, 'link_cap_speed_gts': 32.0,
                                                             'link_cap_width': 16, 'downgraded': True}},
                        {'address': '0000:0a:00.0', 'pcie': {'link_speed_gts': 32.0, 'link_width': 16, 'link_cap_speed_gts': 32.0,
                                                             'link_cap_width': 16, 'downgraded': False}},
                        {'address': '0000:05:00.0', 'pcie': {'downgraded': True}}]}
    links = vr.nic_link_findings(pcie)
    assert _levels(links) == [('error', 'pcie.nic_link', '0000:09:00.0'), ('ok', 'pcie.nic_link', '0000:0a:00.0')]
    assert 'NIC 0000:09:00.0 link is 16.0 GT/s x8, below its capability 32.0 GT/s x16' in links[0]['message']
    acs = vr.acs_findings(pcie)
    assert _levels(acs) == [('error', 'pcie.acs', None)] and '0000:c0:07.1' in acs[0]['message']
    assert _levels(vr.acs_findings(dict(pcie, bridges_with_acs=[]))) == [('ok', 'pcie.acs', None)]
    assert _levels(vr.acs_findings(dict(pcie, capabilities_readable=False))) == [('warning', 'pcie.acs', None)]


def test_iommu_mode_from_the_command_line():
    assert _levels(vr.iommu_findings(['ro', 'iommu=pt'])) == [('ok', 'kernel.iommu', None)]
    wrong = vr.iommu_findings(['ro', 'amd_iommu=on'])
    assert _levels(wrong) == [('error', 'kernel.iommu', None)] and 'no iommu= setting' in wrong[0]['message']
    assert 'iommu=nopt' in vr.iommu_findings(['iommu=pt', 'iommu=nopt'])[0]['message']
    assert _levels(vr.iommu_findings(None)) == [('warning', 'kernel.iommu', None)]


def test_firmware_the_same_on_every_gpu():
    same = {'gpus': [{'gpu': 0, 'firmware': {'SMC': '1', 'SDMA': '2'}}, {'gpu': 1, 'firmware': {'SMC': '1', 'SDMA': '2'}}]}
    assert _levels(vr.firmware_findings(same)) == [('ok', 'firmware.same', None)]
    odd = {'gpus': [{'gpu': 0, 'firmware': {'SMC': '1'}}, {'gpu': 1, 'firmware': {'SMC': '1'}}, {'gpu': 2, 'firmware': {'SMC': '0'}}]}
    findings = vr.firmware_findings(odd)
    assert _levels(findings) == [('error', 'firmware.SMC', 2)]
    assert "GPU 2 has SMC firmware 0, the node's other GPUs 1" in findings[0]['message']
    assert vr.firmware_versions(odd) == {'SMC': '1'}


def test_partitions_as_expected():
    partitions = {'compute': ['SPX', 'CPX'], 'memory': ['NPS1', None]}
    expected = [('ok', 'partition.compute', 0), ('error', 'partition.compute', 1)]
    assert _levels(vr.partition_findings(partitions, {'compute': 'spx'})) == expected
    assert vr.partition_findings(partitions, {}) == []


def test_xgmi_links_down():
    topology = {'gpus': [{'gpu': 0, 'links': [{'gpu': 1, 'link_type': 'XGMI', 'enabled': False},
                                              {'gpu': 2, 'link_type': 'XGMI', 'enabled': True}]},
                         {'gpu': 1, 'links': [{'gpu': 0, 'link_type': 'XGMI', 'enabled': True}]}]}
    findings = vr.xgmi_findings(topology)
    assert _levels(findings) == [('error', 'xgmi.link', 0)] and 'to GPU 1 down' in findings[0]['message']


def test_junit_and_summary():
    findings = [vr.finding('ok', 'pcie.link', 'GPU 0 link is fine', gpu=0),
                vr.finding('warning', 'health.throttled', 'GPU 1 is throttled', gpu=1),
                vr.finding('error', 'rccl.all_reduce.busbw', 'bus bandwidth 284 below 304 <&>', 284, 304, 'page')]
    suites = junitparser.JUnitXml.fromstring(vr.junit_xml('node-1', findings))
    cases = [case for suite in suites for case in suite]
    assert [case.name for case in cases] == ['pcie.link [0]', 'health.throttled [1]', 'rccl.all_reduce.busbw']
    assert [bool(case.result) for case in cases] == [False, False, True]
    assert cases[2].result[0].message == 'bus bandwidth 284 below 304 <&>'
    summary = vr.summary_text('node-1', 'AMD Instinct MI300X', findings)
    assert summary.splitlines()[0] == 'node-1 FAILED (AMD Instinct MI300X): 3 checks, 1 errors, 1 warnings'
    assert io.StringIO(summary).read().count('ERROR') == 1
