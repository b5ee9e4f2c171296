# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""llmfleet.rocm.node_validate as Ansible runs it, over the lab's simulated validation tools.

The tools are lab/stubs/gpusim.py and validsim.py on labhost.py (what the lab's stub packages install), printing the real
formats for a GPU profile; the module, its parsers and the judge run unchanged above them. A healthy profile passes,
the degraded one fails with exactly its three problems, and the JUnit file reads back with junitparser.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import stat
import sys

import junitparser
import pytest

LAB = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), 'lab')
WRAPPER = '''#!%(python)s
import sys
sys.path.insert(0, %(stubs)r)
import gpusim
sys.exit(gpusim.main(%(tool)r, sys.argv[1:], '/opt/rocm-7.1.1'))
'''


@pytest.fixture
def lab_node(node, tmp_path, monkeypatch):
    """The fake node with the simulated tools on PATH, its driver loaded and rvs's configurations."""
    for tool in ('amd-smi', 'rvs', 'all_reduce_perf', 'TransferBench'):
        path = os.path.join(node.bin, tool)
        with open(path, 'w') as handle:
            handle.write(WRAPPER % {'python': sys.executable, 'stubs': os.path.join(LAB, 'stubs'), 'tool': tool})
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    node.write(os.path.join(node.sysfs, 'module', 'amdgpu', 'initstate'), 'live\n')
    node.write(os.path.join(node.sysfs, 'module', 'amdgpu', 'version'), '6.16.6\n')
    node.write(os.path.join(node.root, 'kfd'), '')
    shutil.copytree(os.path.join(LAB, 'stubs', 'rvs_conf'), os.path.join(node.root, 'rvs-conf'))
    monkeypatch.setenv('LLMFLEET_LAB_SYSROOT', node.sysfs)
    monkeypatch.setenv('LLMFLEET_LAB_KFD', os.path.join(node.root, 'kfd'))
    monkeypatch.setenv('LLMFLEET_LAB_FAULTS', os.path.join(node.root, 'faults'))

    def validate(profile, **params):
        monkeypatch.setenv('LLMFLEET_LAB_GPU_PROFILE', os.path.join(LAB, 'profiles', profile + '.json'))
        params.setdefault('tool_dirs', [])
        params.setdefault('rvs_conf_dir', os.path.join(node.root, 'rvs-conf'))
        params.setdefault('report_dir', os.path.join(node.root, 'report'))
        params.setdefault('node', profile)
        return node.run('node_validate', **params)
    return validate


def _errors(result):
    return [(item['id'], item['gpu']) for item in result['failed_checks']]


def test_a_healthy_mi300x_node_passes_every_check(lab_node):
    result = lab_node('mi300x-8', cmdline=['ro', 'iommu=pt'])
    assert not result.get('failed'), result.get('msg')
    assert result['model'] == 'AMD Instinct MI300X'
    assert result['failed_checks'] == []
    ids = set(item['id'] for item in result['findings'])
    # Every kind of check ran and was judged.
    for wanted in ('rccl.all_reduce.busbw', 'pcie.link', 'health.ecc_uncorrectable', 'health.pages_pending', 'kernel.iommu',
                   'firmware.same'):
        assert wanted in ids, sorted(ids)
    assert any(check.startswith('rvs.gst') for check in ids) and any(check.startswith('transferbench') for check in ids)
    assert result['counts']['ok'] > 50


def test_the_degraded_node_fails_with_exactly_its_three_problems(lab_node, tmp_path):
    result = lab_node('mi300x-8-degraded-findings')
    assert not result.get('failed'), result.get('msg')
    assert sorted(_errors(result), key=str) == sorted([('health.ecc_uncorrectable', 6), ('pcie.link', '3 (0000:5f:00.0)'),
                                                       ('rccl.all_reduce.busbw', None)], key=str)
    messages = ' '.join(item['message'] for item in result['failed_checks'])
    assert 'x8' in messages and 'reseat' in messages and 'replace' in messages
    assert '304' in messages  # the all-reduce threshold, with its source
    report = os.path.join(str(tmp_path), 'report')
    suites = junitparser.JUnitXml.fromfile(os.path.join(report, 'junit.xml'))
    failed = [case.name for suite in suites for case in suite if case.result and isinstance(case.result[0], junitparser.Failure)]
    assert sorted(failed) == sorted(['health.ecc_uncorrectable [6]', 'pcie.link [3 (0000:5f:00.0)]', 'rccl.all_reduce.busbw'])
    assert sum(1 for suite in suites for case in suite) == len(result['findings'])
    with open(os.path.join(report, 'report.json')) as handle:
        assert json.load(handle)['counts'] == result['counts']
    with open(os.path.join(report, 'summary.txt')) as handle:
        summary = handle.read()
    assert summary.startswith('mi300x-8-degraded-findings FAILED (AMD Instinct MI300X): ') and summary.count('ERROR') == 3
    assert sorted(os.listdir(os.path.join(report, 'raw'))) == sorted([
        'all_reduce_perf.txt', 'amd-smi-bad-pages.txt', 'amd-smi-firmware.txt', 'amd-smi-metric.txt', 'amd-smi-static.txt',
        'amd-smi-topology.txt', 'rvs-babel.txt', 'rvs-gst.txt', 'rvs-iet.txt', 'rvs-pbqt.txt', 'rvs-pebb.txt',
        'transferbench-a2a.txt', 'transferbench-p2p.txt'])


def test_a_threshold_override_from_the_inventory_is_judged(lab_node):
    result = lab_node('mi300x-8', checks=['rccl'], thresholds={'rccl_all_reduce': {'value': 500.0}})
    assert _errors(result) == [('rccl.all_reduce.busbw', None)]
    assert 'inventory override of rccl_all_reduce' in result['failed_checks'][0]['message']


def test_the_expected_partition_mode_is_checked(lab_node):
    result = lab_node('mi300x-2', checks=['health'], expected_partitions={'compute': 'CPX'})
    assert set(_errors(result)) == set([('partition.compute', 0), ('partition.compute', 1)])


def test_a_node_with_an_integrated_gpu_runs_the_tools_on_its_accelerators(lab_node):
    result = lab_node('mi210-plus-igpu', checks=['rccl', 'transferbench'])
    assert not result.get('failed'), result.get('msg')
    assert ['-b', '8', '-e', '8G', '-f', '2', '-g', '1'] == result['commands'][1][1:]


def test_a_missing_tool_fails_with_what_to_do(lab_node, node):
    os.remove(os.path.join(node.bin, 'rvs'))
    result = lab_node('mi300x-2', checks=['rvs'])
    assert result['failed'] and 'rvs is not installed' in result['msg'] and 'validate_packages' in result['msg']


def test_a_hot_gpu_fails_with_its_temperature(lab_node, node):
    # The lab's fault switch file (labctl fault gpu-node-1 --gpu 2 --junction-temperature 104) as amd-smi reads it.
    node.write(os.path.join(node.root, 'faults', 'gpu2.json'), json.dumps({'junction_temperature': 104}))
    # mi300x-2 has no GPU 2: the fault file names a GPU it does not have, and nothing fails.
    result = lab_node('mi300x-2', checks=['health'])
    assert _errors(result) == []
    result = lab_node('mi300x-8', checks=['health'])
    assert _errors(result) == [('health.temperature.hotspot', 2)]
    assert 'at or above its slowdown limit 100 C' in result['failed_checks'][0]['message']


def test_check_mode_runs_nothing(lab_node, node):
    result = lab_node('mi300x-2', _ansible_check_mode=True)
    assert result['skipped'] and result['commands'] == []
    assert not os.path.exists(os.path.join(node.root, 'report'))
