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
        --gateway https://10.0.0.2:443 --gateway-key-file /run/keys/client --ca-file /run/keys/ca.pem \
        --worker http://10.0.0.11:8000 --worker http://10.0.0.12:8000 --worker-key-file /run/keys/worker \
        --model model --tokenizer /var/lib/llmfleet/models/model --repetitions 8 --out /tmp/bench

Keys come from files (first line), never from the command line: `vllm bench serve` reads its key from
the environment variable OPENAI_API_KEY (vllm/benchmarks/lib/endpoint_request_func.py, _get_headers),
so each run gets the client key (gateway arm) or the worker key (direct arm) there, and no other. It
checks HTTPS certificates with Python's default context (aiohttp's ssl=True), which reads the file
named by SSL_CERT_FILE: --ca-file sets it for the gateway arm (only that CA is then trusted).

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
    fraction = position - low
    if not fraction or ordered[high] == ordered[low]:
        return ordered[low]  # also keeps inf (a spread with an idle worker) from turning into nan
    return ordered[low] + (ordered[high] - ordered[low]) * fraction


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


def read_key(path):
    """The first line of a key file (None for no file)."""
    if not path:
        return None
    with open(path) as handle:
        lines = handle.read().splitlines()
    key = lines[0].strip() if lines else ''
    if not key:
        raise RuntimeError('the key file %s is empty' % path)
    return key


def arm_environment(base, key, ca_file=None):
    """The environment of one `vllm bench serve`: base without any key of its own, plus this arm's key and CA."""
    env = dict((name, value) for name, value in base.items() if name not in ('OPENAI_API_KEY', 'SSL_CERT_FILE'))
    if key:
        env['OPENAI_API_KEY'] = key
    if ca_file:
        env['SSL_CERT_FILE'] = ca_file
    return env


def bench_command(args, base_url, num_prompts, concurrency, out_dir, name):
    return [args.vllm, 'bench', 'serve', '--backend', 'vllm', '--base-url', base_url, '--endpoint', '/v1/completions',
            '--model', args.model, '--tokenizer', args.tokenizer, '--dataset-name', 'random',
            '--random-input-len', str(args.input_len), '--random-output-len', str(args.output_len), '--ignore-eos',
            '--num-prompts', str(num_prompts), '--max-concurrency', str(concurrency), '--request-rate', 'inf',
            '--seed', str(args.seed), '--percentile-metrics', 'ttft,tpot,itl', '--metric-percentiles', '50,99',
            '--save-result', '--save-detailed', '--result-dir', out_dir, '--result-filename', name + '.json']


def first_error(results):
    for result in results:
        for error in result.get('errors') or []:
            if error:
                return str(error).strip().splitlines()[-1][:300]
    return 'no error recorded'


def run_arm(args, targets, out_dir, label, env):
    """Start one `vllm bench serve` per target together; return the pooled result."""
    share = max(1, args.num_prompts // len(targets))
    concurrency = max(1, args.concurrency // len(targets))
    procs = []
    for position, url in enumerate(targets):
        name = '%s-%d' % (label, position)
        log = open(os.path.join(out_dir, name + '.log'), 'w')
        procs.append((name, log, subprocess.Popen(bench_command(args, url, share, concurrency, out_dir, name),
                                                  stdout=log, stderr=subprocess.STDOUT, env=env)))
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
    if not sum(result['completed'] for result in results):
        # Every request failed (a refused key answers 401, an untrusted certificate fails each connection):
        # there is nothing to compare.
        raise RuntimeError('%s: no request succeeded (%s): first error: %s' % (label, ', '.join(targets), first_error(results)))
    return pool(results)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0], allow_abbrev=False)
    parser.add_argument('--vllm', required=True, help='the vllm command of an engine environment')
    parser.add_argument('--gateway', required=True, help='base URL of the gateway')
    parser.add_argument('--gateway-key-file', help='file holding a client key of the gateway (gateway_api_keys)')
    parser.add_argument('--ca-file', help='PEM of the CA that signed the gateway\'s certificate (default: the system\'s store)')
    parser.add_argument('--worker', action='append', required=True, help='base URL of a worker (repeat for each)')
    parser.add_argument('--worker-key-file', help='file holding the fleet\'s worker key (llmfleet_worker_api_key)')
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
    envs = {'gateway': arm_environment(os.environ, read_key(args.gateway_key_file), args.ca_file),
            'direct': arm_environment(os.environ, read_key(args.worker_key_file))}
    if not os.path.isdir(args.out):
        os.makedirs(args.out)

    repetitions = []
    start = time.time()
    for number in range(args.repetitions):
        order = ('direct', 'gateway') if number % 2 == 0 else ('gateway', 'direct')
        rep = {}
        for arm in order:
            targets = args.worker if arm == 'direct' else [args.gateway]
            rep[arm] = run_arm(args, targets, args.out, 'rep%02d-%s' % (number, arm), envs[arm])
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
    try:
        sys.exit(main())
    except (RuntimeError, OSError) as exc:
        print('FAILED: %s' % exc)
        sys.exit(1)
