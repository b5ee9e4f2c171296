# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The path-cost benchmark: its SSE reading, statistics and goal verdicts (pure), the gateway files it renders from
the role, and one short run of the direct arm against the real stand-in process (the plumbing, a second or so)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.machinery
import importlib.util
import json
import os

import pytest

BENCHMARKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'benchmarks')


def _load(name):
    loader = importlib.machinery.SourceFileLoader(name, os.path.join(BENCHMARKS, name + '.py'))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(module)
    return module


bench = _load('path_cost')
upstream = _load('path_cost_upstream')

CHUNK = b'data: {"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"Hi","finish_reason":null}]}\n\n'


# --------------------------------------------------------------------------------------------------
# SSE
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('buffer, events, rest', [
    pytest.param(CHUNK, [CHUNK[6:-2].decode()], b'', id='one-event'),
    pytest.param(CHUNK + b'data: [DONE]\n\n', [CHUNK[6:-2].decode(), '[DONE]'], b'', id='event-and-done'),
    pytest.param(CHUNK[:30], [], CHUNK[:30], id='incomplete-kept'),
    pytest.param(CHUNK + CHUNK[:10], [CHUNK[6:-2].decode()], CHUNK[:10], id='one-and-a-piece'),
    pytest.param(CHUNK.replace(b'\n', b'\r\n'), [CHUNK[6:-2].decode()], b'', id='crlf'),
    pytest.param(b': keep-alive\n\ndata:[DONE]\n\n', ['[DONE]'], b'', id='comment-skipped-no-space'),
])
def test_split_events(buffer, events, rest):
    assert bench.split_events(buffer) == (events, rest)


@pytest.mark.parametrize('data, tokens', [
    pytest.param(CHUNK[6:-2].decode(), 1, id='text'),
    pytest.param('{"choices":[{"index":0,"text":"","finish_reason":"length"}]}', 0, id='empty-text'),
    pytest.param('{"choices":[]}', 0, id='no-choice'),
    pytest.param('[DONE]', 0, id='done'),
])
def test_event_tokens(data, tokens):
    assert bench.event_tokens(data) == tokens


def test_an_error_event_fails_the_request():
    with pytest.raises(RuntimeError, match='overloaded'):
        bench.event_tokens('{"error":{"message":"overloaded","code":503}}')


def test_the_stand_in_streams_what_the_client_reads():
    stream = b''.join(upstream.sse_event(upstream.completion_chunk('cmpl-1', 0, 't', None)) for _token in range(3))
    stream += upstream.sse_event(upstream.completion_chunk('cmpl-1', 0, 't', 'length')) + upstream.sse_event('[DONE]')
    events, rest = bench.split_events(stream)
    assert rest == b'' and events[-1] == '[DONE]'
    assert sum(bench.event_tokens(data) for data in events) == 4
    assert json.loads(events[0])['choices'][0] == {'index': 0, 'text': 't', 'logprobs': None, 'finish_reason': None, 'stop_reason': None}
    assert upstream.chunked(b'abc') == b'3\r\nabc\r\n'


# --------------------------------------------------------------------------------------------------
# Statistics and verdicts
# --------------------------------------------------------------------------------------------------

def test_arm_figures_count_only_good_requests():
    requests = [{'ttft_ms': 10.0, 'tokens': 100, 'error': None}, {'ttft_ms': 30.0, 'tokens': 100, 'error': None},
                {'ttft_ms': None, 'tokens': 3, 'error': 'HTTP 502: x'}]
    figures = bench.arm_figures(requests, 2.0)
    assert figures['completed'] == 2 and figures['failed'] == 1
    assert figures['output_throughput'] == 100.0
    assert figures['ttft_p50_ms'] == 20.0 and figures['ttft_p99_ms'] == pytest.approx(29.8)


def _arm(throughput, p50, failed=0):
    return {'output_throughput': throughput, 'ttft_p50_ms': p50, 'ttft_p99_ms': p50 * 2, 'failed': failed}


REPS = [
    {'direct': _arm(1000.0, 20.0), 'nginx': _arm(995.0, 20.5), 'nginx+router': _arm(900.0, 23.0)},
    {'direct': _arm(1100.0, 21.0), 'nginx': _arm(1100.0, 21.2), 'nginx+router': _arm(990.0, 24.0, failed=1)},
    {'direct': _arm(900.0, 22.0), 'nginx': _arm(880.0, 23.5), 'nginx+router': _arm(810.0, 25.0)},
]


def test_summary_uses_medians_of_per_repetition_ratios_and_differences():
    summary = bench.summarize(REPS, bench.ARMS)
    assert summary['repetitions'] == 3
    assert 'throughput_ratio_median' not in summary['arms']['direct']
    nginx = summary['arms']['nginx']
    assert nginx['throughput_ratios'] == pytest.approx([0.995, 1.0, 880.0 / 900.0])
    assert nginx['throughput_ratio_median'] == pytest.approx(0.995)
    assert nginx['added_ttft_p50_ms'] == pytest.approx([0.5, 0.2, 1.5])
    assert nginx['added_ttft_p50_median_ms'] == pytest.approx(0.5)
    router = summary['arms']['nginx+router']
    assert router['throughput_ratio_median'] == pytest.approx(0.9)
    assert router['added_ttft_p50_median_ms'] == pytest.approx(3.0)
    assert router['failed_requests'] == 1
    assert summary['arms']['direct']['output_throughput_median'] == 1000.0


@pytest.mark.parametrize('ratio, added, met', [
    pytest.param(0.99, 1.0, [True, True], id='on-both-bars'),
    pytest.param(0.989, 0.2, [False, True], id='ratio-short'),
    pytest.param(1.01, 1.01, [True, False], id='latency-over'),
    pytest.param(1.0, -0.3, [True, True], id='faster-than-direct'),
])
def test_verdicts(ratio, added, met):
    summary = {'arms': {'direct': {}, 'nginx': {'throughput_ratio_median': ratio, 'added_ttft_p50_median_ms': added},
                        'nginx+router': {'throughput_ratio_median': 0.5, 'added_ttft_p50_median_ms': 9.0}}}
    goals = bench.verdicts(summary)
    assert [goal['met'] for goal in goals if goal['arm'] == 'nginx'] == met
    assert [goal['required'] for goal in goals] == [True, True, False, False]
    assert [goal['met'] for goal in goals if goal['arm'] == 'nginx+router'] == [False, False]


def test_table_shows_every_arm_the_machine_and_the_goals():
    summary = bench.summarize(REPS, bench.ARMS)
    text = bench.table(summary, bench.verdicts(summary), bench.machine())
    assert text.splitlines()[0].split() == list(bench.ARMS)
    assert '%d CPUs online; nothing pinned' % os.cpu_count() in text
    assert 'client pinned to CPUs 0,1' in bench.table(summary, [], {'cpus': 4, 'client_cpus': [0, 1]})
    assert [line.split()[0] for line in text.splitlines() if 'throughput ratio >=' in line] == ['GOAL', 'info']
    assert 'NOT MET' in text


# --------------------------------------------------------------------------------------------------
# The gateway's files, from the role
# --------------------------------------------------------------------------------------------------

def test_the_gateway_is_the_roles_configuration(tmp_path):
    main, argv = bench.render_gateway(str(tmp_path), [18001, 18002], 18080)
    assert argv is None
    text = (tmp_path / 'gateway.conf').read_text()
    assert 'server 127.0.0.1:18001 max_fails=1 fail_timeout=5s;' in text and 'least_conn;' in text
    assert 'listen 127.0.0.1:18080;' in text and 'proxy_buffering off;' in text
    assert bench.WORKER_KEY in (tmp_path / 'worker-key.conf').read_text()
    assert 'include %s;' % (tmp_path / 'gateway.conf') in open(main).read()


def test_the_router_arm_is_the_roles_cache_aware_configuration(tmp_path):
    _main, argv = bench.render_gateway(str(tmp_path), [18001], 18080, router_port=18090, metrics_port=18091)
    text = (tmp_path / 'gateway.conf').read_text()
    assert 'server 127.0.0.1:18090 max_fails=0;' in text and '18001' not in text
    options = dict(zip(argv[1::2], argv[2::2]))
    assert options['--policy'] == 'cache_aware' and options['--port'] == '18090' and options['--prometheus-port'] == '18091'
    assert '--worker-urls' not in argv


# --------------------------------------------------------------------------------------------------
# The plumbing: the direct arm, for real, briefly
# --------------------------------------------------------------------------------------------------

def test_a_short_direct_run_streams_every_token(tmp_path):
    out = tmp_path / 'out'
    summary = bench.run(bench.parse_args(['--arms', 'direct', '--workers', '1', '--concurrency', '4', '--requests-per-stream', '2',
                                          '--tokens', '10', '--ttft-ms', '5', '--itl-ms', '1', '--repetitions', '2', '--out', str(out)]))
    assert summary['arms']['direct']['failed_requests'] == 0
    assert len(summary['runs']) == 2
    for rep in summary['runs']:
        assert rep['direct']['completed'] == 8 and rep['direct']['output_tokens'] == 80
        # The first token comes after 5 ms, then one each ms: a request lasts at least 14 ms.
        assert 5.0 <= rep['direct']['ttft_p50_ms'] < 500.0
        assert 0 < rep['direct']['output_throughput'] <= 4 * 10 / 0.014
    saved = json.loads((out / 'summary.json').read_text())
    assert saved['machine']['cpus'] >= 1 and saved['pinned'] is False and saved['goals'] == []
    assert saved['settings']['concurrency'] == 4


def test_the_direct_arm_is_the_reference(tmp_path):
    with pytest.raises(RuntimeError, match='direct'):
        bench.run(bench.parse_args(['--arms', 'nginx', '--out', str(tmp_path)]))
