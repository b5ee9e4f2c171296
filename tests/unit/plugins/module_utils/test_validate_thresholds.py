# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the threshold table and the judge, on the parsers' real captures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

import pytest

from capture_notes import capture

from ansible_collections.llmfleet.rocm.plugins.module_utils import _validate_thresholds as vt
from ansible_collections.llmfleet.rocm.plugins.module_utils._amd_smi_health import (
    parse_amd_smi_bad_pages_json,
    parse_amd_smi_metric_json,
)
from ansible_collections.llmfleet.rocm.plugins.module_utils._rccl_tests import parse_rccl_tests
from ansible_collections.llmfleet.rocm.plugins.module_utils._rvs import parse_rvs
from ansible_collections.llmfleet.rocm.plugins.module_utils._transferbench import parse_transferbench

LEVELS = ('ok', 'warning', 'error')
KEYS = {'level', 'id', 'gpu', 'figure', 'threshold', 'source', 'message'}


def _rccl(name):
    return parse_rccl_tests(capture('rccl_tests', name))


def _tb(*names):
    merged = {'a2a': None, 'p2p': None, 'config': None}
    for name in names:
        for key, value in parse_transferbench(capture('transferbench', name)).items():
            if key in merged and value is not None:
                merged[key] = value
    return merged


def _by_id(findings, check_id):
    return [finding for finding in findings if finding['id'] == check_id]


def _only(findings, check_id):
    found = _by_id(findings, check_id)
    assert len(found) == 1, (check_id, found)
    return found[0]


# --- the table --------------------------------------------------------------------------------------

def _thresholds():
    for model, table in sorted(vt.THRESHOLDS.items()):
        for name, entry in sorted(table.items()):
            if name == 'rvs':
                for module, rule in sorted(entry.items()):
                    yield '%s-rvs-%s' % (model, module), rule
            else:
                yield '%s-%s' % (model, name), entry


@pytest.mark.parametrize('name, entry', list(_thresholds()), ids=[pair[0] for pair in _thresholds()])
def test_every_threshold_names_its_source(name, entry):
    assert entry['source'].startswith('https://github.com/ROCm/system-acceptance-docs/blob/'), name
    numbers = [value for key, value in entry.items() if isinstance(value, float)]
    assert all(value > 0 for value in numbers), name


def test_mi300x_all_reduce_figure_is_amds():
    entry = vt.THRESHOLDS['MI300X']['rccl_all_reduce']
    assert entry['value'] == 304.0
    assert entry['command'] == 'all_reduce_perf -b 8 -e 8G -f 2 -g 8'
    assert entry['message_bytes'] == 8589934592
    assert entry['source'].endswith('/docs/gpus/mi300x.md')


@pytest.mark.parametrize('model', ['MI300X', 'MI325X', 'MI350X', 'MI355X'])
def test_pcie_gen5_x16(model):
    assert (vt.THRESHOLDS[model]['pcie_link']['speed_gts'], vt.THRESHOLDS[model]['pcie_link']['width']) == (32.0, 16)


@pytest.mark.parametrize('name, key', [
    ('AMD Instinct MI300X', 'MI300X'), ('AMD Instinct MI300X VF', 'MI300X'), ('AMD Instinct MI308X', 'MI300X'),
    ('AMD Instinct MI325X', 'MI325X'), ('AMD Instinct MI250X / MI250', 'MI250X'), ('AMD Instinct MI250', 'MI250X'),
    ('AMD Instinct MI210', 'MI210'), ('mi355x', 'MI355X'), ('AMD Instinct MI100', None), ('AMD Radeon RX 7900 XTX', None),
    (None, None), ('', None),
], ids=str)
def test_model_key(name, key):
    assert vt.model_key(name) == key


def test_overrides_are_merged_and_sourced():
    table = vt.thresholds_for('AMD Instinct MI300X', {'rccl_all_reduce': {'value': 290.0}})
    assert table['rccl_all_reduce']['value'] == 290.0
    assert table['rccl_all_reduce']['source'] == 'inventory override of rccl_all_reduce'
    assert table['rccl_all_reduce']['command'] == vt.ALL_REDUCE_8G
    assert vt.THRESHOLDS['MI300X']['rccl_all_reduce']['value'] == 304.0
    sourced = vt.thresholds_for('MI300X', {'rccl_all_reduce': {'value': 290.0, 'source': 'site run 2026-11'}})
    assert sourced['rccl_all_reduce']['source'] == 'site run 2026-11'


# --- rccl-tests -----------------------------------------------------------------------------------

def test_mi300x_all_reduce_passes():
    findings = vt.judge({'rccl_all_reduce': _rccl('mi300x-8gpu-acceptance-doc.txt')}, 'AMD Instinct MI300X')
    busbw = _only(findings, 'rccl.all_reduce.busbw')
    assert (busbw['level'], busbw['figure'], busbw['threshold']) == ('ok', 315.84, 304.0)
    assert _only(findings, 'rccl.all_reduce.wrong')['level'] == 'ok'


def test_all_reduce_below_the_threshold_fails_naming_figure_threshold_source_and_fix():
    findings = vt.judge({'rccl_all_reduce': _rccl('mi350x-8rank-mpirun-rocm7.0.txt')}, 'AMD Instinct MI300X')
    busbw = _only(findings, 'rccl.all_reduce.busbw')
    assert busbw['level'] == 'error'
    assert busbw['figure'] == 289.27
    for text in ('289.27', '304.0', vt.SRC_MI300X, 'xGMI'):
        assert text in busbw['message']


def test_mi350x_note_names_the_other_figure():
    findings = vt.judge({'rccl_all_reduce': _rccl('mi350x-8gpu-single-process-rocm7.0.txt')}, 'AMD Instinct MI350X')
    busbw = _only(findings, 'rccl.all_reduce.busbw')
    assert busbw['level'] == 'ok'
    assert '350 GB/s' in busbw['message']


def test_run_that_stops_before_8g_is_not_judged():
    findings = vt.judge({'rccl_all_reduce': _rccl('mi210-8rank-nccl-debug-rocm6.3.3.txt')}, 'AMD Instinct MI300X')
    busbw = _only(findings, 'rccl.all_reduce.busbw')
    assert busbw['level'] == 'warning'
    assert '-e 8G' in busbw['message']


def test_other_rank_count_is_not_judged():
    findings = vt.judge({'rccl_all_reduce': _rccl('mi210-16rank-2node-rocm6.3.3.txt')}, 'AMD Instinct MI210')
    busbw = _only(findings, 'rccl.all_reduce.busbw')
    assert busbw['level'] == 'warning'
    assert '16 ranks' in busbw['message']


def test_mi210_average_measure():
    result = _rccl('mi210-8rank-nccl-debug-rocm6.3.3.txt')
    result['devices'] = result['devices'][:4]
    busbw = _only(vt.judge({'rccl_all_reduce': result}, 'MI210'), 'rccl.all_reduce.busbw')
    assert (busbw['level'], busbw['figure'], busbw['threshold']) == ('error', 15.9165, 30.0)


def test_wrong_values_fail_whatever_the_run():
    findings = vt.judge({'rccl_all_reduce': _rccl('gh200-2node-wrong-values-nccl-tests2.17.8.txt')}, 'MI300X')
    wrong = _only(findings, 'rccl.all_reduce.wrong')
    assert wrong['level'] == 'error'
    assert '128 wrong values (4 out of bounds)' in wrong['message']
    assert _only(findings, 'rccl.all_reduce.busbw')['level'] == 'warning'


def test_run_without_validation_is_a_warning():
    result = _rccl('mi300x-8gpu-acceptance-doc.txt')
    result['header']['validation'] = False
    assert _only(vt.judge({'rccl_all_reduce': result}, 'MI300X'), 'rccl.all_reduce.wrong')['level'] == 'warning'


# --- TransferBench --------------------------------------------------------------------------------

def test_mi300x_transferbench_passes():
    results = {'transferbench': _tb('mi300x-a2a-acceptance-doc.txt', 'mi300x-p2p-acceptance-doc.txt')}
    findings = vt.judge(results, 'AMD Instinct MI300X')
    assert _only(findings, 'transferbench.a2a')['figure'] == 35.776
    assert _only(findings, 'transferbench.p2p.unidirectional')['level'] == 'ok'
    assert _only(findings, 'transferbench.p2p.bidirectional')['figure'] == 46.24
    assert not _by_id(findings, 'transferbench.p2p.unidirectional.link')


def test_slow_pairs_are_warnings_when_the_average_passes():
    """The MI350X capture has GPU 03/06 and GPU 07/01 pairs under 43.9 GB/s bidirectional."""
    findings = vt.judge({'transferbench': _tb('mi350x-p2p-rocm7.0.txt')}, 'AMD Instinct MI300X')
    assert _only(findings, 'transferbench.p2p.bidirectional')['level'] == 'ok'
    slow = _by_id(findings, 'transferbench.p2p.bidirectional.link')
    assert slow and all(finding['level'] == 'warning' for finding in slow)
    assert sorted(finding['figure'] for finding in slow)[:2] == [37.99, 38.96]
    assert any('GPU 03 -> GPU 06 is 38.96 GB/s' in finding['message'] for finding in slow)


def test_mi250_aggregate_measure():
    a2a = _only(vt.judge({'transferbench': _tb('mi300x-a2a-acceptance-doc.txt')}, 'MI250X'), 'transferbench.a2a')
    assert (a2a['level'], a2a['figure'], a2a['threshold']) == ('ok', 2003.44, 800.0)


def test_mi210_a2a_per_gpu():
    findings = _by_id(vt.judge({'transferbench': _tb('mi350x-a2a-rocm7.0.txt')}, 'MI210'), 'transferbench.a2a')
    assert [finding['gpu'] for finding in findings] == ['GPU %02d' % index for index in range(8)]
    assert all(finding['level'] == 'ok' for finding in findings)


def test_mi210_pairs_need_the_inventory():
    results = {'transferbench': _tb('mi300x-p2p-acceptance-doc.txt')}
    assert _only(vt.judge(results, 'MI210'), 'transferbench.p2p.unidirectional')['level'] == 'warning'
    overrides = {'transferbench_p2p_unidirectional': {'pairs': [['GPU 00', 'GPU 01'], ['GPU 02', 'GPU 03']],
                                                      'source': vt.SRC_MI210}}
    pairs = _by_id(vt.judge(results, 'MI210', overrides), 'transferbench.p2p.unidirectional')
    assert [(finding['level'], finding['figure']) for finding in pairs] == [('ok', 48.46), ('ok', 48.8)]


def test_config_tests():
    findings = vt.judge({'transferbench': _tb('mi350x-example-cfg-rocm7.0.txt')}, 'MI325X')
    config = [finding for finding in findings if finding['id'].startswith('transferbench.config')]
    assert [finding['id'] for finding in config] == [
        'transferbench.config.test1.transfer0', 'transferbench.config.test2.transfer0',
        'transferbench.config.test3.transfer0', 'transferbench.config.test3.transfer1',
        'transferbench.config.test4.transfer0', 'transferbench.config.test6.transfer0']
    assert all(finding['level'] == 'ok' for finding in config)


def test_config_missing_test_and_slow_transfer():
    tb = _tb('mi350x-example-cfg-rocm7.0.txt')
    tb['config'] = [test for test in tb['config'] if test['test'] != 6]
    tb['config'][2]['transfers'][1]['gbs'] = 20.5
    findings = vt.judge({'transferbench': tb}, 'MI300X')
    assert _only(findings, 'transferbench.config.test6.transfer0')['level'] == 'warning'
    slow = _only(findings, 'transferbench.config.test3.transfer1')
    assert slow['level'] == 'error'
    assert '20.5' in slow['message'] and '38.9' in slow['message']


# --- rvs ------------------------------------------------------------------------------------------

def test_rvs_verdicts():
    text = capture('rvs', 'mi300x-iet-single-acceptance.txt')
    findings = vt.judge({'rvs': parse_rvs(text)}, 'MI300X')
    assert _only(findings, 'rvs.iet.iet-620W-1K-rand-dgemm')['level'] == 'ok'
    assert _only(findings, 'rvs.iet.iet-wait-750W-28K-rand-dgemm')['level'] == 'warning'
    failed = parse_rvs(text.replace('[GPU:: 23018] pass: TRUE', '[GPU:: 23018] pass: FALSE'))
    error = _only(vt.judge({'rvs': failed}, 'MI300X'), 'rvs.iet.iet-620W-1K-rand-dgemm')
    assert error['level'] == 'error'
    assert 'GPU 23018 reached' in error['message']


def test_gst_miss_names_the_gpu_and_figures():
    text = capture('rvs', 'mi300x-gst-single-acceptance.txt').replace('met: TRUE', 'met: FALSE')
    error = _only(vt.judge({'rvs': parse_rvs(text)}, 'MI300X'), 'rvs.gst.gst-1215Tflops-4K4K8K-rand-fp8')
    assert error['level'] == 'error'
    assert 'GPU 28851: 1687129.0 of 1215000.0 GFLOPS' in error['message']


def test_rvs_error_lines_are_errors():
    text = capture('rvs', 'mi300x-gst-single-acceptance.txt') + '[ERROR ] [1.0] [gst] hipMalloc failed\n'
    assert _only(vt.judge({'rvs': parse_rvs(text)}, 'MI300X'), 'rvs.error')['level'] == 'error'


def test_zero_bandwidth_pebb_names_the_transfer():
    text = capture('rvs', 'mi355x-pebb-single-rvs1.6.75.txt')
    text = text[:text.index('+====')].replace('54.034 GBps', '0.000 GBps')
    error = _only(vt.judge({'rvs': parse_rvs(text)}, 'MI355X'), 'rvs.pebb.pcie_h2d_bandwidth')
    assert error['level'] == 'error' and 'transfer 2/16 at 0 GBps' in error['message']


# --- PCIe and health ------------------------------------------------------------------------------

def test_pcie_links():
    links = [{'device': '0000:05:00.0', 'speed_gts': 32.0, 'width': 16},
             {'device': '0000:26:00.0', 'speed_gts': 32.0, 'width': 8},
             {'pci_address': '0000:46:00.0', 'speed_gts': None, 'width': None}]
    findings = vt.judge({'pcie_links': links}, 'AMD Instinct MI300X')
    assert [(finding['level'], finding['gpu']) for finding in _by_id(findings, 'pcie.link')] == [
        ('ok', '0000:05:00.0'), ('error', '0000:26:00.0'), ('warning', '0000:46:00.0')]
    error = _by_id(findings, 'pcie.link')[1]
    assert '32.0 GT/s x8, expected 32.0 GT/s x16' in error['message'] and 'reseat' in error['message']


def test_mi250_links_are_gen4():
    findings = vt.judge({'pcie_links': [{'device': '0000:11:00.0', 'speed_gts': 16.0, 'width': 16}]}, 'MI250X')
    assert _only(findings, 'pcie.link')['level'] == 'ok'


METRIC = [{'gpu': 0, 'ecc': {'total_correctable_count': 0, 'total_uncorrectable_count': 0,
                             'total_deferred_count': 0},
           'power': {'socket_power': {'value': 120, 'unit': 'W'}, 'throttle_status': 'UNTHROTTLED'}},
          {'gpu': 1, 'ecc': {'total_correctable_count': 12, 'total_uncorrectable_count': 1,
                             'total_deferred_count': 'N/A'},
           'power': {'throttle_status': 'THROTTLED'}, 'throttle': {'ppt_violation_status': 'ACTIVE'}}]
BAD_PAGES = [{'gpu': 0, 'retired': 'No bad pages found.', 'pending': 'No bad pages found.', 'un_res': 'N/A'},
             {'gpu': 1, 'retired': {'page_address': '0x1000', 'page_size': 4096, 'status': 'RESERVED'},
              'pending': [{'page_address': '0x2000', 'page_size': 4096, 'status': 'PENDING'}], 'un_res': 'N/A'}]


def test_health_rules():
    results = {'amd_smi_metric': parse_amd_smi_metric_json(json.dumps(METRIC)),
               'amd_smi_bad_pages': parse_amd_smi_bad_pages_json(json.dumps(BAD_PAGES))}
    findings = vt.judge(results, 'AMD Instinct MI300X')
    levels = dict(((finding['id'], finding['gpu']), finding['level']) for finding in findings)
    assert levels[('health.ecc_uncorrectable', 0)] == 'ok'
    assert levels[('health.ecc_uncorrectable', 1)] == 'error'
    assert levels[('health.ecc_correctable', 1)] == 'warning'
    assert ('health.ecc_deferred', 1) not in levels  # N/A is not judged
    assert levels[('health.throttled', 1)] == 'warning'
    assert ('health.throttled', 0) not in levels
    assert levels[('health.pages_pending', 1)] == 'error'
    assert levels[('health.pages_retired', 1)] == 'warning'
    assert levels[('health.pages_pending', 0)] == 'ok'
    throttled = [finding for finding in findings if finding['id'] == 'health.throttled'][0]
    assert 'ppt' in throttled['message']


def test_health_overrides():
    results = {'amd_smi_metric': parse_amd_smi_metric_json(json.dumps(METRIC))}
    findings = vt.judge(results, 'MI300X', health_overrides={'ecc_correctable': {'value': 100}})
    levels = dict(((finding['id'], finding['gpu']), finding['level']) for finding in findings)
    assert levels[('health.ecc_correctable', 1)] == 'ok'


def test_unknown_model_judges_health_only():
    results = {'rccl_all_reduce': _rccl('mi300x-8gpu-acceptance-doc.txt'),
               'amd_smi_metric': parse_amd_smi_metric_json(json.dumps(METRIC))}
    findings = vt.judge(results, 'AMD Instinct MI100')
    assert findings[0]['id'] == 'thresholds.model' and findings[0]['level'] == 'warning'
    assert not _by_id(findings, 'rccl.all_reduce.busbw')
    assert _by_id(findings, 'health.ecc_uncorrectable')


def test_nothing_to_judge():
    assert vt.judge({}, 'MI300X') == []


def test_every_finding_has_the_same_keys_and_a_known_level():
    results = {'rccl_all_reduce': _rccl('mi350x-8rank-mpirun-rocm7.0.txt'),
               'transferbench': _tb('mi350x-a2a-rocm7.0.txt', 'mi350x-p2p-rocm7.0.txt', 'mi350x-example-cfg-rocm7.0.txt'),
               'rvs': parse_rvs(capture('rvs', 'mi300x-iet-single-acceptance.txt')),
               'pcie_links': [{'device': '0000:05:00.0', 'speed_gts': 16.0, 'width': 16}],
               'amd_smi_metric': parse_amd_smi_metric_json(json.dumps(METRIC))}
    before = copy.deepcopy(results)
    findings = vt.judge(results, 'AMD Instinct MI300X')
    assert results == before
    assert findings
    for finding in findings:
        assert set(finding) == KEYS
        assert finding['level'] in LEVELS
        assert finding['message']
        if finding['level'] == 'error' and finding['id'] != 'rccl.all_reduce.wrong':
            assert str(finding['threshold']) in finding['message']


@pytest.mark.parametrize('model, gst_conf', [
    ('MI300X', '/opt/rocm/share/rocm-validation-suite/conf/MI300X/gst_single.conf'),
    # The MI250 page writes conf/MI250/, which rvs lacks; rvs/conf/MI250X/ has iet_stress.conf only: the shared ones.
    ('MI250X', '/opt/rocm/share/rocm-validation-suite/conf/gst_single.conf'),
    ('MI355X', None),
])
def test_rvs_configurations_are_the_acceptance_pages(model, gst_conf):
    rules = vt.THRESHOLDS[model]['rvs']
    assert rules['gst']['conf'] == gst_conf
    assert rules['pbqt']['conf'] == '/opt/rocm/share/rocm-validation-suite/conf/pbqt_single.conf'


@pytest.mark.parametrize('model, conf', [
    ('MI300X', '/opt/rocm/share/rocm-validation-suite/conf/MI300X/iet_single.conf'),
    # rvs/conf/MI325X/ has iet_stress.conf only; rvs/conf/MI250X/ too: the shared one.
    ('MI325X', '/opt/rocm/share/rocm-validation-suite/conf/iet_single.conf'),
    ('MI250X', '/opt/rocm/share/rocm-validation-suite/conf/iet_single.conf'),
    ('MI210', '/opt/rocm/share/rocm-validation-suite/conf/MI210/iet_single.conf'),
])
def test_a_configuration_rvs_lacks_for_the_model_is_the_shared_one(model, conf):
    assert vt.THRESHOLDS[model]['rvs']['iet']['conf'] == conf
