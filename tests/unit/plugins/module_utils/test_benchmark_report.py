# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests for the benchmark report's figures, summary, CSV and Markdown.

The results under tests/unit/fixtures/vllm_bench_serve/ are real ``vllm bench serve`` runs in the lab (see the
README.md there): dp N=1 at three concurrencies and one request rate, tp N=1 (one worker) at one concurrency, and
dp N=2 (both workers behind the gateway) at one concurrency. The tests of shapes the lab cannot record (tp N=2,
N=4, ties, a missing N=1) build their points from the recorded figures with ``shape`` below, which changes mode,
N and the output tokens/s of a copy: those points are test-built, not captures.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import csv
import io
import json
import os

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils._benchmark_report import (
    POINT_COLUMNS, ReportError, csv_text, point_figures, report_markdown, summarize)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', 'vllm_bench_serve')
RECORDED = sorted(name for name in os.listdir(FIXTURES) if name.endswith('.json'))
NODE1 = ['dp-n1-concurrency-1.json', 'dp-n1-concurrency-2.json', 'dp-n1-concurrency-4.json']


def recorded(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return json.load(handle)


def figures(name):
    return point_figures(recorded(name), name)


def shape(point, mode, gpus, output_tps, **changes):
    """A test-built point: a recorded point's figures with another mode, N and output tokens/s."""
    built = dict(point, mode=mode, gpus=gpus, output_tps=output_tps, source='built-%s-n%d-%s' % (mode, gpus, point['load']))
    built.update(changes)
    return built


RUN = {'settings': {'benchmark_lab': True, 'benchmark_modes': ['dp', 'tp'], 'benchmark_gpu_counts': [1, 2], 'benchmark_loads_per_gpu': [1, 2, 4]},
       'engine': {'name': 'vllm', 'version': '0.32.0'}, 'gpu': {'model': 'none (CPU lab)', 'count': {'gpu-node-1': 1, 'gpu-node-2': 1}},
       'commit': '6eda2d4', 'skipped': ['tp N=2: the lab has one device per node'], 'started': '2026-12-02T05:00:00Z',
       'finished': '2026-12-02T05:03:00Z', 'client': 'gpu-node-1', 'gateway': 'https://10.89.77.200'}


def test_the_recordings_are_there():
    assert RECORDED == sorted(NODE1 + ['dp-n1-request_rate-8.json', 'dp-n2-concurrency-4.json', 'tp-n1-concurrency-2.json'])


@pytest.mark.parametrize('name', RECORDED)
def test_every_figure_is_what_the_result_holds(name):
    result = recorded(name)
    point = figures(name)
    assert list(point) == list(POINT_COLUMNS)
    assert point['mode'] == result['llmfleet_mode'] and point['gpus'] == int(result['llmfleet_gpus'])
    assert point['load_kind'] == result['llmfleet_load_kind']
    if point['load_kind'] == 'concurrency':
        assert point['load'] == int(result['llmfleet_load']) == result['max_concurrency']
    else:
        assert point['load'] == float(result['llmfleet_load'])
    assert point['completed'] == result['completed'] and point['failed'] == result['failed']
    assert point['output_tps'] == result['output_throughput'] and point['request_tps'] == result['request_throughput']
    assert point['duration_s'] == result['duration']
    for metric in ('ttft', 'itl', 'e2el'):
        assert point['%s_p50_ms' % metric] == result['p50_%s_ms' % metric]
        assert point['%s_p99_ms' % metric] == result['p99_%s_ms' % metric]
    assert point['source'] == name
    assert point['completed'] == result['num_prompts'] and point['failed'] == 0


def test_the_median_stands_in_for_a_missing_p50():
    result = recorded(NODE1[0])
    del result['p50_ttft_ms']
    assert point_figures(result)['ttft_p50_ms'] == result['median_ttft_ms']


@pytest.mark.parametrize('key', ['output_throughput', 'request_throughput', 'completed', 'failed', 'duration',
                                 'p99_ttft_ms', 'p99_itl_ms', 'p99_e2el_ms'])
def test_a_missing_figure_is_a_report_error_naming_file_and_key(key):
    result = recorded(NODE1[1])
    del result[key]
    with pytest.raises(ReportError) as error:
        point_figures(result, 'raw/dp-n1-concurrency-2.json')
    message = str(error.value)
    assert 'raw/dp-n1-concurrency-2.json' in message and key in message
    assert '--percentile-metrics ttft,tpot,itl,e2el' in message and '--metric-percentiles 50,99' in message


def test_a_missing_median_and_p50_names_both():
    result = recorded(NODE1[1])
    del result['p50_itl_ms'], result['median_itl_ms']
    with pytest.raises(ReportError, match='lacks p50_itl_ms or median_itl_ms'):
        point_figures(result, 'x.json')


@pytest.mark.parametrize('key', ['llmfleet_mode', 'llmfleet_gpus', 'llmfleet_load_kind', 'llmfleet_load'])
def test_missing_metadata_is_a_report_error_saying_how_to_run(key):
    result = recorded(NODE1[0])
    del result[key]
    with pytest.raises(ReportError) as error:
        point_figures(result, 'f.json')
    assert 'f.json lacks the metadata %s' % key in str(error.value)
    assert '--metadata llmfleet_mode=' in str(error.value) and '--save-result' in str(error.value)


@pytest.mark.parametrize('key, value, words', [
    ('llmfleet_mode', 'pp', "llmfleet_mode is 'pp'"),
    ('llmfleet_gpus', '0', "llmfleet_gpus is '0'"),
    ('llmfleet_gpus', 2, 'llmfleet_gpus is 2, not a non-empty string'),
    ('llmfleet_load_kind', 'rps', "llmfleet_load_kind is 'rps'"),
    ('llmfleet_load', 'many', "'many' is not a valid concurrency"),
    ('llmfleet_load', '8', 'says concurrency 8 but the run used --max-concurrency 1'),
    ('output_throughput', 'fast', "output_throughput is 'fast', not a number"),
    ('completed', True, 'completed is True, not a number'),
    ('duration', float('inf'), 'duration is inf, not a number'),
    ('failed', 1.5, 'failed is 1.5, not a request count'),
], ids=['mode', 'gpus-zero', 'gpus-not-string', 'kind', 'load-word', 'load-disagrees', 'figure-string', 'figure-bool',
        'figure-infinite', 'count-fraction'])
def test_ill_typed_values_are_report_errors(key, value, words):
    result = recorded(NODE1[0])
    result[key] = value
    with pytest.raises(ReportError, match='^f.json: '):
        point_figures(result, 'f.json')
    with pytest.raises(ReportError) as error:
        point_figures(result, 'f.json')
    assert words in str(error.value)


@pytest.mark.parametrize('value', [[], 'text', None, 3])
def test_a_result_that_is_no_object_is_a_report_error(value):
    with pytest.raises(ReportError, match='f.json is a .*, not a JSON object'):
        point_figures(value, 'f.json')


def test_a_request_rate_load_is_a_number_or_inf():
    result = recorded(NODE1[0])
    result.update(llmfleet_load_kind='request_rate', llmfleet_load='inf', request_rate='inf')
    assert point_figures(result)['load'] == 'inf'
    result.update(llmfleet_load='2.5', request_rate=2.5)
    assert point_figures(result)['load'] == 2.5
    for recorded_rate in (4.0, 'fast'):
        result.update(request_rate=recorded_rate)
        with pytest.raises(ReportError, match='says request rate 2.5 but the run used --request-rate %s' % recorded_rate):
            point_figures(result)


def test_saturation_is_the_point_with_the_highest_output_throughput():
    points = [figures(name) for name in NODE1]
    best = max(points, key=lambda point: point['output_tps'])
    summary = summarize(points)
    assert len(summary['saturation']) == 1
    row = summary['saturation'][0]
    assert row['source'] == best['source'] and row['output_tps'] == best['output_tps']
    assert row['efficiency'] == 1.0 and row['efficiency_base'] == 'dp N=1'
    json.dumps(summary)


def test_the_recorded_run_summarized():
    points = [figures(name) for name in RECORDED]
    summary = summarize(points)
    rows = dict(((row['mode'], row['gpus']), row) for row in summary['saturation'])
    assert sorted(rows) == [('dp', 1), ('dp', 2), ('tp', 1)]
    dp1 = max((point for point in points if point['mode'] == 'dp' and point['gpus'] == 1), key=lambda point: point['output_tps'])
    assert rows[('dp', 1)]['source'] == dp1['source']
    dp2 = figures('dp-n2-concurrency-4.json')
    assert rows[('dp', 2)]['efficiency'] == dp2['output_tps'] / (2 * dp1['output_tps'])
    tp1 = figures('tp-n1-concurrency-2.json')
    assert rows[('tp', 1)]['efficiency'] == 1.0 and rows[('tp', 1)]['efficiency_base'] == 'tp N=1'
    better = dict((row['gpus'], row) for row in summary['better'])
    assert better[1]['better'] == ('dp' if dp1['output_tps'] > tp1['output_tps'] else 'tp')
    assert better[2]['better'] == 'dp' and better[2]['note'] == 'only dp ran at N=2'
    assert summary['points'] == 6 and summary['failed_requests'] == 0
    assert summary['lines'][0] == 'dp N=1: %.1f output tok/s at concurrency 4, TTFT p50 %.1f ms, efficiency 100 %%' % (
        dp1['output_tps'], dp1['ttft_p50_ms'])
    assert summary['lines'][-1] == 'N=2: dp (only dp ran at N=2)' and len(summary['lines']) == 5
    json.dumps(summary, allow_nan=False)


def test_saturation_takes_the_lower_load_at_a_tie():
    one, two = figures(NODE1[0]), figures(NODE1[1])
    two['output_tps'] = one['output_tps']
    assert summarize([two, one])['saturation'][0]['load'] == 1


def test_efficiency_is_saturation_over_n_times_one_gpu():
    base = figures(NODE1[2])
    points = [base, shape(base, 'dp', 2, base['output_tps'] * 1.5), shape(base, 'dp', 4, base['output_tps'] * 2)]
    rows = dict((row['gpus'], row) for row in summarize(points)['saturation'])
    assert rows[1]['efficiency'] == 1.0
    assert rows[2]['efficiency'] == pytest.approx(0.75) and rows[4]['efficiency'] == pytest.approx(0.5)


def test_efficiency_falls_back_to_the_other_modes_n1():
    dp1 = figures(NODE1[2])
    points = [dp1, shape(dp1, 'tp', 2, dp1['output_tps'] * 1.8)]
    tp2 = [row for row in summarize(points)['saturation'] if row['mode'] == 'tp'][0]
    assert tp2['efficiency'] == pytest.approx(0.9) and tp2['efficiency_base'] == 'dp N=1'
    tp1 = figures('tp-n1-concurrency-2.json')
    points.append(tp1)
    tp2 = [row for row in summarize(points)['saturation'] if row['mode'] == 'tp' and row['gpus'] == 2][0]
    assert tp2['efficiency'] == pytest.approx(dp1['output_tps'] * 1.8 / (2 * tp1['output_tps']))
    assert tp2['efficiency_base'] == 'tp N=1'


def test_no_efficiency_without_any_n1():
    dp1 = figures(NODE1[2])
    summary = summarize([shape(dp1, 'dp', 2, 100.0), shape(dp1, 'tp', 2, 90.0)])
    assert [row['efficiency'] for row in summary['saturation']] == [None, None]
    assert [row['efficiency_base'] for row in summary['saturation']] == [None, None]


def test_the_better_mode_per_n():
    dp1, tp1 = figures(NODE1[2]), figures('tp-n1-concurrency-2.json')
    points = [dp1, tp1, shape(dp1, 'dp', 2, 100.0), shape(dp1, 'tp', 2, 80.0), shape(dp1, 'dp', 4, 150.0)]
    better = dict((row['gpus'], row) for row in summarize(points)['better'])
    first = 'dp' if dp1['output_tps'] > tp1['output_tps'] else 'tp'
    assert better[1]['better'] == first and better[1]['output_tps'] == {'dp': dp1['output_tps'], 'tp': tp1['output_tps']}
    assert better[2]['better'] == 'dp' and better[2]['note'] == 'dp is 25.0 % ahead of tp'
    assert better[4] == {'gpus': 4, 'better': 'dp', 'output_tps': {'dp': 150.0}, 'note': 'only dp ran at N=4'}


def test_equal_modes_are_a_tie():
    dp1 = figures(NODE1[2])
    better = summarize([dp1, shape(dp1, 'tp', 1, dp1['output_tps'])])['better']
    assert better[0]['better'] is None and 'equal' in better[0]['note']


def test_failed_requests_are_flagged():
    points = [figures(name) for name in NODE1]
    assert summarize(points)['failures'] == [] and summarize(points)['failed_requests'] == 0
    points[1] = dict(points[1], failed=3, completed=points[1]['completed'] - 3)
    summary = summarize(points)
    assert summary['failed_requests'] == 3 and summary['lines'][-1] == '3 request(s) failed: see report.md'
    assert summary['failures'] == [{'mode': 'dp', 'gpus': 1, 'load_kind': 'concurrency', 'load': 2, 'failed': 3,
                                    'completed': points[1]['completed'], 'source': NODE1[1]}]
    assert '## Failed requests' in report_markdown(RUN, points, summary)


def test_two_results_of_one_load_point_are_refused():
    point = figures(NODE1[0])
    with pytest.raises(ReportError, match='are both dp N=1 at concurrency 1'):
        summarize([point, dict(point, source='again.json')])


def test_csv_has_a_header_and_one_row_per_point():
    points = [figures(name) for name in RECORDED]
    rows = list(csv.reader(io.StringIO(csv_text(list(reversed(points))))))
    assert tuple(rows[0]) == POINT_COLUMNS
    assert len(rows) == len(points) + 1
    by_source = dict((row[-1], dict(zip(POINT_COLUMNS, row))) for row in rows[1:])
    for point in points:
        row = by_source[point['source']]
        assert row['mode'] == point['mode'] and int(row['gpus']) == point['gpus']
        assert float(row['output_tps']) == point['output_tps'] and float(row['ttft_p99_ms']) == point['ttft_p99_ms']
    assert [row[0] for row in rows[1:]] == sorted(row[0] for row in rows[1:])


def test_markdown_holds_the_run_and_the_tables():
    points = [figures(name) for name in RECORDED]
    summary = summarize(points)
    text = report_markdown(RUN, points, summary)
    assert text.startswith('# Scaling benchmark: vllm 0.32.0\n')
    for words in ('- Engine: vllm 0.32.0', '- GPU: none (CPU lab); count per node: gpu-node-1: 1, gpu-node-2: 1',
                  '- Client: gpu-node-1', '- Gateway: https://10.89.77.200', '- Commit: 6eda2d4',
                  '2026-12-02T05:00:00Z', '| benchmark_loads_per_gpu | [1, 2, 4] |', '- tp N=2: the lab has one device per node',
                  '`throughput.png`', '`latency.png`', '`efficiency.png`', 'say nothing about how the engine scales'):
        assert words in text
    sat = [row for row in summary['saturation'] if row['mode'] == 'dp'][0]
    assert ('| dp | 1 | concurrency %d | %.1f | %.2f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | 100 %% | 0 |' % (
        sat['load'], sat['output_tps'], sat['request_tps'], sat['ttft_p50_ms'], sat['ttft_p99_ms'], sat['itl_p50_ms'],
        sat['itl_p99_ms'], sat['e2el_p50_ms'], sat['e2el_p99_ms'])) in text
    for point in points:
        assert '| %.1f | %.2f | %.1f |' % (point['output_tps'], point['request_tps'], point['ttft_p50_ms']) in text
        assert '| %s |' % point['source'] in text


def test_markdown_without_lab_has_no_lab_note():
    points = [figures(name) for name in NODE1]
    run = copy.deepcopy(RUN)
    run['settings']['benchmark_lab'] = False
    run['skipped'] = []
    text = report_markdown(run, points, summarize(points))
    assert 'Lab run' not in text and 'lab: true' not in text and 'Every shape of the settings ran.' in text


def test_a_multinode_point_is_read():
    result = dict(recorded('dp-n2-concurrency-4.json'), llmfleet_mode='multinode', llmfleet_group='gpu_nodes')
    point = point_figures(result, 'multinode-n2-concurrency-4.json')
    assert point['mode'] == 'multinode' and point['gpus'] == 2


def test_a_multinode_engine_is_compared_with_dp_at_its_n():
    dp1 = figures(NODE1[2])
    points = [dp1, shape(dp1, 'dp', 2, 100.0), shape(dp1, 'multinode', 2, 80.0), shape(dp1, 'multinode', 16, 400.0)]
    summary = summarize(points)
    rows = dict(((row['mode'], row['gpus']), row) for row in summary['saturation'])
    assert rows[('multinode', 2)]['efficiency'] == pytest.approx(80.0 / (2 * dp1['output_tps']))
    assert rows[('multinode', 2)]['efficiency_base'] == 'dp N=1'
    better = dict((row['gpus'], row) for row in summary['better'])
    assert better[2]['better'] == 'dp' and better[2]['note'] == 'dp is 25.0 % ahead of multinode'
    assert better[16]['note'] == 'only multinode ran at N=16'
    equal = summarize([shape(dp1, 'dp', 2, 100.0), shape(dp1, 'multinode', 2, 100.0)])['better'][0]
    assert equal['better'] is None and equal['note'] == 'dp and multinode are equal at N=2'


GROUP = {'name': 'gpu_nodes', 'members': ['gpu-node-1', 'gpu-node-2'], 'head': 'gpu-node-1', 'tp': 2, 'pp': 1, 'gpus': 2}


def test_markdown_names_the_group_and_its_members():
    dp1 = figures(NODE1[2])
    points = [shape(dp1, 'multinode', 2, 80.0)]
    run = dict(RUN, groups=[GROUP, dict(GROUP, name='spare', members=['gpu-node-3', 'gpu-node-4'], head='gpu-node-3')],
               shapes=[{'name': 'multinode-n2', 'mode': 'multinode', 'gpus': 2, 'group': GROUP}])
    text = report_markdown(run, points, summarize(points))
    assert ('- Multi-node group gpu_nodes: one engine over 2 GPUs, tensor parallel 2 x pipeline parallel 1; members'
            ' gpu-node-1 (rank 0, the API), gpu-node-2; measured as multinode-n2') in text
    assert '- Multi-node group spare: ' in text and 'gpu-node-3 (rank 0, the API), gpu-node-4; not measured (drained)' in text
    assert '| N | better mode | dp output tok/s | tp output tok/s | multinode output tok/s | note |' in text
    assert '| 2 | multinode | - | - | 80.0 | only multinode ran at N=2 |' in text


def test_markdown_without_a_group_keeps_its_columns():
    points = [figures(name) for name in NODE1]
    text = report_markdown(RUN, points, summarize(points))
    assert 'Multi-node group' not in text
    assert '| N | better mode | dp output tok/s | tp output tok/s | note |' in text
