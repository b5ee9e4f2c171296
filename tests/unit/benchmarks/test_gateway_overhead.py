# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The statistics of the gateway benchmark (the runs themselves happen in the lab)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.machinery
import importlib.util
import os

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
