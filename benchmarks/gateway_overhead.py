# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the gateway costs: the same load through the gateway and straight at the workers.

Runs vLLM's own `vllm bench serve` (random prompts, fixed lengths) in interleaved, rotated
repetitions: each repetition runs both arms back to back, alternating which goes first. The
"direct" arm splits the load evenly over every worker, one `vllm bench serve` per worker
started together, and pools their per-request results; the "gateway" arm sends the whole load
to the gateway. Reported per repetition and as medians: output throughput (tokens/s), time to
first token p50/p99; the verdict uses the median of the per-repetition throughput ratios and
of the per-repetition p50 TTFT differences, which cancel most of the drift of a shared machine.

    python3 gateway_overhead.py --vllm /opt/llmfleet/engines/current/bin/vllm \
        --gateway http://10.0.0.2:80 --worker http://10.0.0.11:8000 --worker http://10.0.0.12:8000 \
        --model model --tokenizer /var/lib/llmfleet/models/model --repetitions 8 --out /tmp/bench

Progress goes to stdout; every run's full output is kept in --out; the summary is printed and
written as summary.json.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import json
import os
import subprocess
import sys
import time


def percentile(values, share):
    """Linear-interpolated percentile (share in 0..100) of a non-empty list."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError('no values')
    position = (len(ordered) - 1) * share / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values):
    return percentile(values, 50)


def pool(results):
    """Combine the JSON results of concurrent `vllm bench serve` runs into one arm's figures.

    Throughput: all output tokens over the longest run's duration; TTFT percentiles over every
    request's time to first token (ms).
    """
    ttfts = []
    for result in results:
        ttfts.extend(1000.0 * value for value, error in zip(result['ttfts'], result.get('errors') or [''] * len(result['ttfts']))
                     if not error and value is not None)
    duration = max(result['duration'] for result in results)
    completed = sum(result['completed'] for result in results)
    failed = sum(result.get('failed', 0) for result in results)
    output_tokens = sum(result['total_output_tokens'] for result in results)
    return {
        'completed': completed,
        'failed': failed,
        'duration_s': duration,
        'output_throughput': output_tokens / duration if duration else 0.0,
        'ttft_p50_ms': percentile(ttfts, 50) if ttfts else None,
        'ttft_p99_ms': percentile(ttfts, 99) if ttfts else None,
    }


def summarize(repetitions):
    """repetitions: [{'direct': arm, 'gateway': arm}] -> medians, ratios and differences."""
    ratios = [rep['gateway']['output_throughput'] / rep['direct']['output_throughput'] for rep in repetitions]
    ttft_diffs = [rep['gateway']['ttft_p50_ms'] - rep['direct']['ttft_p50_ms'] for rep in repetitions]
    return {
        'repetitions': len(repetitions),
        'direct_output_throughput_median': median([rep['direct']['output_throughput'] for rep in repetitions]),
        'gateway_output_throughput_median': median([rep['gateway']['output_throughput'] for rep in repetitions]),
        'throughput_ratio_median': median(ratios),
        'throughput_ratios': ratios,
        'direct_ttft_p50_median_ms': median([rep['direct']['ttft_p50_ms'] for rep in repetitions]),
        'gateway_ttft_p50_median_ms': median([rep['gateway']['ttft_p50_ms'] for rep in repetitions]),
        'ttft_p50_difference_median_ms': median(ttft_diffs),
        'ttft_p50_differences_ms': ttft_diffs,
        'direct_ttft_p99_median_ms': median([rep['direct']['ttft_p99_ms'] for rep in repetitions]),
        'gateway_ttft_p99_median_ms': median([rep['gateway']['ttft_p99_ms'] for rep in repetitions]),
        'failed_requests': sum(rep[arm]['failed'] for rep in repetitions for arm in ('direct', 'gateway')),
    }


def table(summary):
    lines = [
        '%-28s %14s %14s %10s' % ('', 'direct', 'gateway', 'gateway/direct'),
        '%-28s %14.1f %14.1f %10.3f' % ('output tokens/s (median)', summary['direct_output_throughput_median'],
                                        summary['gateway_output_throughput_median'], summary['throughput_ratio_median']),
        '%-28s %14.1f %14.1f %+10.1f' % ('TTFT p50 ms (median)', summary['direct_ttft_p50_median_ms'],
                                         summary['gateway_ttft_p50_median_ms'], summary['ttft_p50_difference_median_ms']),
        '%-28s %14.1f %14.1f' % ('TTFT p99 ms (median)', summary['direct_ttft_p99_median_ms'], summary['gateway_ttft_p99_median_ms']),
        'ratio and difference: medians over %d repetitions of the per-repetition values' % summary['repetitions'],
        'failed requests: %d' % summary['failed_requests'],
    ]
    return '\n'.join(lines)


def bench_command(args, base_url, num_prompts, concurrency, out_dir, name):
    return [args.vllm, 'bench', 'serve', '--backend', 'vllm', '--base-url', base_url, '--endpoint', '/v1/completions',
            '--model', args.model, '--tokenizer', args.tokenizer, '--dataset-name', 'random',
            '--random-input-len', str(args.input_len), '--random-output-len', str(args.output_len), '--ignore-eos',
            '--num-prompts', str(num_prompts), '--max-concurrency', str(concurrency), '--request-rate', 'inf',
            '--seed', str(args.seed), '--percentile-metrics', 'ttft,tpot,itl', '--metric-percentiles', '50,99',
            '--save-result', '--save-detailed', '--result-dir', out_dir, '--result-filename', name + '.json']


def run_arm(args, targets, out_dir, label):
    """Start one `vllm bench serve` per target together; return the pooled result."""
    share = max(1, args.num_prompts // len(targets))
    concurrency = max(1, args.concurrency // len(targets))
    procs = []
    for position, url in enumerate(targets):
        name = '%s-%d' % (label, position)
        log = open(os.path.join(out_dir, name + '.log'), 'w')
        procs.append((name, log, subprocess.Popen(bench_command(args, url, share, concurrency, out_dir, name),
                                                  stdout=log, stderr=subprocess.STDOUT)))
    results = []
    for name, log, proc in procs:
        rc = proc.wait()
        log.close()
        if rc != 0:
            with open(os.path.join(out_dir, name + '.log')) as handle:
                tail = handle.read().splitlines()[-15:]
            raise RuntimeError('vllm bench serve (%s) exited with %d:\n%s' % (name, rc, '\n'.join(tail)))
        with open(os.path.join(out_dir, name + '.json')) as handle:
            results.append(json.load(handle))
    return pool(results)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--vllm', required=True, help='the vllm command of an engine environment')
    parser.add_argument('--gateway', required=True, help='base URL of the gateway')
    parser.add_argument('--worker', action='append', required=True, help='base URL of a worker (repeat for each)')
    parser.add_argument('--model', required=True, help='served model name')
    parser.add_argument('--tokenizer', required=True, help='tokenizer path or name')
    parser.add_argument('--repetitions', type=int, default=8)
    parser.add_argument('--num-prompts', type=int, default=64)
    parser.add_argument('--concurrency', type=int, default=8)
    parser.add_argument('--input-len', type=int, default=128)
    parser.add_argument('--output-len', type=int, default=32)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--out', required=True, help='directory for every run\'s output and summary.json')
    args = parser.parse_args(argv)
    if not os.path.isdir(args.out):
        os.makedirs(args.out)

    repetitions = []
    start = time.time()
    for number in range(args.repetitions):
        order = ('direct', 'gateway') if number % 2 == 0 else ('gateway', 'direct')
        rep = {}
        for arm in order:
            targets = args.worker if arm == 'direct' else [args.gateway]
            rep[arm] = run_arm(args, targets, args.out, 'rep%02d-%s' % (number, arm))
        repetitions.append(rep)
        print('rep %2d/%d (%s first): direct %.1f tok/s p50 TTFT %.1f ms | gateway %.1f tok/s p50 TTFT %.1f ms | ratio %.3f [%.0f s]'
              % (number + 1, args.repetitions, order[0], rep['direct']['output_throughput'], rep['direct']['ttft_p50_ms'],
                 rep['gateway']['output_throughput'], rep['gateway']['ttft_p50_ms'],
                 rep['gateway']['output_throughput'] / rep['direct']['output_throughput'], time.time() - start))
        sys.stdout.flush()

    summary = summarize(repetitions)
    summary['settings'] = dict((key, value) for key, value in vars(args).items() if key != 'out')
    summary['runs'] = repetitions
    with open(os.path.join(args.out, 'summary.json'), 'w') as handle:
        json.dump(summary, handle, indent=2)
    print(table(summary))
    return 0


if __name__ == '__main__':
    sys.exit(main())
