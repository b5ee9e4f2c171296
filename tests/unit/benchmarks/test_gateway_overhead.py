# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The statistics of the gateway benchmark and how it hands keys to `vllm bench serve` (the runs happen in the lab)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import importlib.machinery
import importlib.util
import json
import os
import sys

import pytest

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'benchmarks', 'gateway_overhead.py')
LOADER = importlib.machinery.SourceFileLoader('gateway_overhead', PATH)
SPEC = importlib.util.spec_from_loader('gateway_overhead', LOADER)
bench = importlib.util.module_from_spec(SPEC)
LOADER.exec_module(bench)


def run(duration, output_tokens, ttfts, errors=None, failed=0):
    return {'duration': duration, 'completed': len(ttfts) - failed, 'failed': failed, 'total_output_tokens': output_tokens,
            'ttfts': ttfts, 'errors': errors or [''] * len(ttfts)}


@pytest.mark.parametrize('values, share, expected', [
    ([1.0], 50, 1.0), ([1.0, 3.0], 50, 2.0), ([4.0, 1.0, 2.0, 3.0], 50, 2.5), ([0.0, 10.0], 99, 9.9)],
    ids=['single', 'two', 'unsorted-even', 'p99'])
def test_percentile(values, share, expected):
    assert bench.percentile(values, share) == pytest.approx(expected)


def test_pool_uses_the_longest_duration_and_skips_failed_requests():
    pooled = bench.pool([run(2.0, 100, [0.010, 0.020]), run(4.0, 100, [0.030, None], errors=['', 'boom'], failed=1)])
    assert pooled['output_throughput'] == pytest.approx(50.0)
    assert pooled['ttft_p50_ms'] == pytest.approx(20.0)
    assert (pooled['completed'], pooled['failed']) == (3, 1)


def test_summary_takes_medians_of_per_repetition_ratios():
    reps = []
    for direct, gateway in ((100.0, 99.0), (100.0, 90.0), (80.0, 80.0)):
        reps.append({'direct': {'output_throughput': direct, 'ttft_p50_ms': 10.0, 'ttft_p99_ms': 20.0, 'failed': 0},
                     'gateway': {'output_throughput': gateway, 'ttft_p50_ms': 12.0, 'ttft_p99_ms': 25.0, 'failed': 0}})
    summary = bench.summarize(reps)
    assert summary['throughput_ratio_median'] == pytest.approx(0.99)
    assert summary['ttft_p50_difference_median_ms'] == pytest.approx(2.0)
    assert 'gateway/direct' in bench.table(summary)


def test_each_arm_gets_its_own_key_and_no_other():
    base = {'PATH': '/usr/bin', 'OPENAI_API_KEY': 'stray', 'SSL_CERT_FILE': '/stray.pem'}
    expected = {'PATH': '/usr/bin', 'OPENAI_API_KEY': 'client', 'SSL_CERT_FILE': '/ca.pem'}
    assert bench.arm_environment(base, 'client', '/ca.pem') == expected
    assert bench.arm_environment(base, None) == {'PATH': '/usr/bin'}


@pytest.mark.parametrize('content, expected', [('k1\n', 'k1'), ('  k2  \nrest\n', 'k2')], ids=['line', 'first-line-stripped'])
def test_read_key(tmp_path, content, expected):
    path = tmp_path / 'key'
    path.write_text(content)
    assert bench.read_key(str(path)) == expected


def test_read_key_refuses_an_empty_file(tmp_path):
    path = tmp_path / 'key'
    path.write_text('\n')
    with pytest.raises(RuntimeError, match='is empty'):
        bench.read_key(str(path))


FAKE_VLLM = '''#!%s
import json, os, sys
argv = sys.argv
out = os.path.join(argv[argv.index('--result-dir') + 1], argv[argv.index('--result-filename') + 1])
ok = os.environ.get('OPENAI_API_KEY') == 'worker-key'
with open(out, 'w') as handle:
    json.dump({'duration': 1.0, 'completed': 2 if ok else 0, 'failed': 0 if ok else 2, 'total_output_tokens': 64 if ok else 0,
               'ttfts': [0.01, 0.02] if ok else [None, None],
               'errors': ['', ''] if ok else ['Unauthorized', 'Unauthorized']}, handle)
with open(out + '.argv', 'w') as handle:
    json.dump(argv, handle)
'''


@pytest.fixture
def fake_vllm(tmp_path):
    path = tmp_path / 'vllm'
    path.write_text(FAKE_VLLM % sys.executable)
    path.chmod(0o755)
    return str(path)


def _args(vllm):
    return argparse.Namespace(vllm=vllm, model='m', tokenizer='/t', input_len=8, output_len=8, num_prompts=4,
                              concurrency=2, seed=0)


def test_the_key_reaches_vllm_bench_by_the_environment_not_argv(tmp_path, fake_vllm):
    out = tmp_path / 'out'
    out.mkdir()
    env = bench.arm_environment(dict(os.environ), 'worker-key')
    pooled = bench.run_arm(_args(fake_vllm), ['http://w:8000'], str(out), 'rep00-direct', env)
    assert pooled['completed'] == 2
    assert not any('worker-key' in arg for arg in json.loads((out / 'rep00-direct-0.json.argv').read_text()))


def test_an_arm_where_every_request_failed_stops_with_the_error(tmp_path, fake_vllm):
    out = tmp_path / 'out'
    out.mkdir()
    env = bench.arm_environment(dict(os.environ), 'wrong')
    with pytest.raises(RuntimeError, match='rep00-gateway: no request succeeded .*first error: Unauthorized'):
        bench.run_arm(_args(fake_vllm), ['https://gw'], str(out), 'rep00-gateway', env)
