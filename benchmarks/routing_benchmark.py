# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the gateway's routing policies use the workers' prefix caches: plan, runs and analysis.

benchmarks/routing.yml drives it; the gateway's policy (gateway_routing) can only change between runs, from Ansible,
so this script has three commands that the playbook calls on the client (the first GPU node):

- ``plan``: the runs in order: for each repetition, every policy in a rotated order (repetition r starts with the
  r-th policy), and for each policy the cases (``shared``: K tenants' prefixes; ``single``: one prefix for every
  request). Every run gets a seed of its own: a run sent with the seed of the run before it would find its prefixes
  already in the workers' caches. Written to plan.json and printed as JSON.
- ``sizing``: the workers' /metrics pages (a JSON list on stdin) against the load: K x L prompt tokens must overflow
  one worker's KV cache (vllm:cache_config_info: num_gpu_blocks x block_size) and fit in all of them.
- ``run``: one ``vllm bench serve`` of one run, through the gateway, with vLLM's ``prefix_repetition`` dataset.
  The gateway's client key reaches it only by its environment (OPENAI_API_KEY), read from a file.
- ``summarize``: reads every run's result (<name>.json) and the workers' /metrics pages the playbook saved before
  and after it (<name>.metrics.json), and reports per run: the prefix-cache hit rate from the workers' own counters
  (delta of vllm:prefix_cache_hits_total over delta of vllm:prefix_cache_queries_total, summed over the workers),
  output tokens/s, TTFT p50/p99, and the spread of requests over workers (largest share / smallest share, from
  vllm:request_success_total); per repetition the ratios candidate/baseline; their medians; and a verdict.
  The counts include the one test request `vllm bench serve` sends before each run (the run's first prompt).

The workers' pages are parsed by the collection's own parser (plugins/plugin_utils/engine_metrics.py), which the
playbook copies beside this script on the client.

    python3 routing_benchmark.py plan --policies least_conn cache_aware --repetitions 6 --seed 1000 --out /tmp/r
    python3 routing_benchmark.py run --vllm /opt/llmfleet/engines/current/bin/vllm --base-url https://10.0.0.2:443 \
        --key-file /run/keys/client --ca-file /run/keys/ca.pem --model m --tokenizer /var/lib/llmfleet/models/m \
        --name rep01-cache_aware-shared --seed 1003 --num-prefixes 512 --prefix-len 384 --suffix-len 32 \
        --output-len 16 --num-prompts 1536 --concurrency 16 --out /tmp/r
    python3 routing_benchmark.py summarize --out /tmp/r --baseline least_conn --candidate cache_aware
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import json
import os
import re
import subprocess
import sys
import time

try:
    from ansible_collections.llmfleet.rocm.plugins.plugin_utils import engine_metrics
except ImportError:  # on the client: benchmarks/routing.yml copies it beside this script
    import engine_metrics

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The gateway benchmark's statistics and key handling (benchmarks/routing.yml copies it beside this script too).
from gateway_overhead import arm_environment, percentile, read_key  # noqa: E402  pylint: disable=wrong-import-position

POLICIES = ('least_conn', 'round_robin', 'session_hash', 'cache_aware')
CASES = ('shared', 'single')
# Repetitions below this leave the verdict inconclusive (the issue asks for at least 6).
MIN_REPETITIONS = 6

REQUESTS = 'vllm:request_success_total'
CACHE_CONFIG = 'vllm:cache_config_info'
_LABEL_RE = re.compile(r'(?P<name>[a-zA-Z_][a-zA-Z0-9_]*)="(?P<value>(?:[^"\\]|\\.)*)"')


class CounterReset(ValueError):
    """A worker's counter went down during a run: the worker restarted, and the run's deltas mean nothing."""


def median(values):
    """The median of the values that are not None; None when there are none."""
    present = [value for value in values if value is not None]
    return percentile(present, 50) if present else None


def rotation(policies, repetition):
    """The policies in the order repetition (0-based) runs them: rotated left by repetition places."""
    policies = list(policies)
    if not policies:
        raise ValueError('no policy to measure')
    shift = repetition % len(policies)
    return policies[shift:] + policies[:shift]


def plan(policies, repetitions, seed, cases=CASES):
    """The steps in order: [{repetition (1-based), policy, runs: [{name, case, seed}]}], one seed per run."""
    unknown = [policy for policy in policies if policy not in POLICIES]
    if unknown or len(set(policies)) != len(policies):
        raise ValueError('policies must be distinct ones of %s, not %s' % (', '.join(POLICIES), ', '.join(policies)))
    if not cases or len(set(cases)) != len(cases) or [case for case in cases if case not in CASES]:
        raise ValueError('cases must be distinct ones of %s, not %s' % (', '.join(CASES), ', '.join(cases) or 'none'))
    steps = []
    number = 0
    for repetition in range(repetitions):
        for policy in rotation(policies, repetition):
            runs = []
            for case in cases:
                runs.append({'name': 'rep%02d-%s-%s' % (repetition + 1, policy, case), 'case': case, 'seed': seed + number})
                number += 1
            steps.append({'repetition': repetition + 1, 'policy': policy, 'runs': runs})
    return steps


def labels(text):
    """A sample's labels text (name="value",...) -> dict."""
    return dict((match.group('name'), match.group('value')) for match in _LABEL_RE.finditer(text or ''))


def worker_counters(text):
    """The counters of one vLLM /metrics page this benchmark reads, and its KV cache's size when the page has it."""
    readings = engine_metrics.engine_metrics(text, 'vllm')
    samples = engine_metrics.prometheus_samples(text)
    requests = [value for name, _labels, value in samples if name == REQUESTS]
    missing = [name for name, value in (('vllm:prefix_cache_hits_total', readings['prefix_cache_hits']),
                                        ('vllm:prefix_cache_queries_total', readings['prefix_cache_queries']),
                                        (REQUESTS, requests or None)) if value is None]
    if missing:
        raise engine_metrics.MetricsError('the vLLM /metrics page lacks %s: is prefix caching on, and is this vLLM 0.32 or '
                                          'later?' % ', '.join(missing))
    counters = {'hits': readings['prefix_cache_hits'], 'queries': readings['prefix_cache_queries'], 'requests': sum(requests),
                'blocks': None, 'block_size': None}
    for name, label_text, _value in samples:
        if name == CACHE_CONFIG:
            config = labels(label_text)
            try:
                counters['blocks'] = int(config['num_gpu_blocks'])
                counters['block_size'] = int(config['block_size'])
            except (KeyError, ValueError):
                pass
            break
    return counters


def counter_delta(before, after, what, worker):
    """after - before of one counter; a decrease means the worker restarted during the run: a CounterReset."""
    if after < before:
        raise CounterReset('%s of %s went down during the run (%s -> %s): the worker restarted; its counters of this run '
                           'mean nothing, run the benchmark again' % (what, worker, before, after))
    return after - before


def spread(counts):
    """Largest share / smallest share of the requests over the workers: inf when a worker got none, None without any."""
    if not counts or not sum(counts):
        return None
    if min(counts) == 0:
        return float('inf')
    return float(max(counts)) / min(counts)


def worker_deltas(snapshots):
    """[{worker, before: text, after: text}] -> [{worker, hits, queries, requests}] (deltas of the run)."""
    deltas = []
    for snapshot in snapshots:
        before, after = worker_counters(snapshot['before']), worker_counters(snapshot['after'])
        deltas.append(dict([('worker', snapshot['worker'])] + [
            (key, counter_delta(before[key], after[key], key, snapshot['worker'])) for key in ('hits', 'queries', 'requests')]))
    return deltas


def hit_rate(deltas):
    """Prefix-cache hits over queries (tokens), summed over the workers; None when no token was queried."""
    queries = sum(delta['queries'] for delta in deltas)
    return sum(delta['hits'] for delta in deltas) / queries if queries else None


def run_figures(result, deltas):
    """One run's figures from `vllm bench serve`'s result and the workers' deltas."""
    requests = [int(delta['requests']) for delta in deltas]
    return {
        'completed': result['completed'],
        'failed': result.get('failed', 0),
        'output_throughput': result['output_throughput'],
        'ttft_p50_ms': result.get('p50_ttft_ms'),
        'ttft_p99_ms': result.get('p99_ttft_ms'),
        'hit_rate': hit_rate(deltas),
        'requests_per_worker': dict((delta['worker'], count) for delta, count in zip(deltas, requests)),
        'spread': spread(requests),
    }


def ratio(numerator, denominator):
    """numerator / denominator, None when either is missing or the denominator is 0."""
    if numerator is None or denominator is None or not denominator:
        return None
    return float(numerator) / denominator


def summarize(runs, baseline, candidate, repetitions):
    """runs: [{repetition, policy, case, figures}] -> per case: medians per policy, per-repetition ratios and medians."""
    summary = {'baseline': baseline, 'candidate': candidate, 'repetitions': repetitions, 'cases': {}}
    for case in CASES:
        of_case = [run for run in runs if run['case'] == case]
        if not of_case:
            continue
        policies = []
        for run in of_case:
            if run['policy'] not in policies:
                policies.append(run['policy'])
        per_policy = {}
        for policy in policies:
            figures = [run['figures'] for run in of_case if run['policy'] == policy]
            spreads = [figure['spread'] for figure in figures if figure['spread'] is not None]
            per_policy[policy] = {
                'runs': len(figures),
                'hit_rate_median': median([figure['hit_rate'] for figure in figures]),
                'output_throughput_median': median([figure['output_throughput'] for figure in figures]),
                'ttft_p50_median_ms': median([figure['ttft_p50_ms'] for figure in figures]),
                'ttft_p99_median_ms': median([figure['ttft_p99_ms'] for figure in figures]),
                'spread_median': median(spreads),
                'spread_worst': max(spreads) if spreads else None,
                'failed_requests': sum(figure['failed'] for figure in figures),
            }
        entry = {'policies': per_policy, 'ratios': {}}
        by_key = dict(((run['repetition'], run['policy']), run['figures']) for run in of_case)
        reps = sorted(set(run['repetition'] for run in of_case))
        if (baseline in per_policy) and (candidate in per_policy):
            for key, field in (('hit_rate', 'hit_rate'), ('output_throughput', 'output_throughput'), ('ttft_p50', 'ttft_p50_ms')):
                values = [ratio(by_key[(rep, candidate)][field], by_key[(rep, baseline)][field]) for rep in reps
                          if (rep, candidate) in by_key and (rep, baseline) in by_key]
                entry['ratios'][key] = {'per_repetition': values, 'median': median(values)}
        summary['cases'][case] = entry
    return summary


def goals(summary, hit_rate_ratio=1.5, spread_limit=2.0):
    """The issue's goals, each with its figure and whether it is met; met overall needs every goal and enough repetitions."""
    shared = summary['cases'].get('shared', {}).get('ratios', {})
    single = summary['cases'].get('single', {}).get('policies', {}).get(summary['candidate'], {})

    def judged(name, value, test, wanted):
        return {'goal': name, 'value': value, 'wanted': wanted, 'met': None if value is None else bool(test(value))}

    checks = [
        judged('prefix-cache hit rate %s/%s (median of per-repetition ratios)' % (summary['candidate'], summary['baseline']),
               shared.get('hit_rate', {}).get('median'), lambda value: value >= hit_rate_ratio, '>= %g' % hit_rate_ratio),
        judged('output tokens/s %s/%s (median of per-repetition ratios)' % (summary['candidate'], summary['baseline']),
               shared.get('output_throughput', {}).get('median'), lambda value: value >= 1.0, '>= 1'),
        judged('TTFT p50 %s/%s (median of per-repetition ratios)' % (summary['candidate'], summary['baseline']),
               shared.get('ttft_p50', {}).get('median'), lambda value: value <= 1.0, '<= 1'),
        judged('single prompt, %s: largest/smallest share of requests per worker (median over repetitions)' % summary['candidate'],
               single.get('spread_median'), lambda value: value <= spread_limit, '<= %g' % spread_limit),
    ]
    enough = summary['repetitions'] >= MIN_REPETITIONS
    return {'goals': checks, 'enough_repetitions': enough, 'min_repetitions': MIN_REPETITIONS,
            'measured': all(check['met'] is not None for check in checks),
            'met': enough and all(check['met'] is True for check in checks)}


def sizing(counters, prefix_len, num_prefixes):
    """Whether the tenants' prefixes overflow one worker's KV cache and fit in all of them (from vllm:cache_config_info)."""
    known = [counter for counter in counters if counter['blocks'] and counter['block_size']]
    tokens = num_prefixes * prefix_len
    if not known:
        return {'prefix_tokens': tokens, 'fits': None,
                'note': 'the workers\' /metrics have no vllm:cache_config_info: sizing not checked'}
    smallest = min(counter['blocks'] * counter['block_size'] for counter in known)
    total = sum(counter['blocks'] * counter['block_size'] for counter in known)
    block = known[0]['block_size']
    note = ('%d prefixes x %d tokens = %d tokens; one worker\'s KV cache %d tokens (%d blocks of %d), all %d workers\' %d'
            % (num_prefixes, prefix_len, tokens, smallest, smallest // block, block, len(known), total))
    if prefix_len % block:
        note += '; the prefix length is not a multiple of the block size: its last %d tokens are never hit' % (prefix_len % block)
    fits = smallest < tokens < total
    if tokens <= smallest:
        note += ': TOO SMALL, one worker holds every prefix (raise num_prefixes or prefix_len)'
    elif tokens >= total:
        note += ': TOO LARGE, the workers together cannot hold every prefix'
    else:
        note += ': one worker holds %.0f %% of the prefixes, all of them together hold them all' % (100.0 * smallest / tokens)
    return {'prefix_tokens': tokens, 'worker_cache_tokens': smallest, 'fleet_cache_tokens': total, 'block_size': block,
            'fits': fits, 'note': note}


def jsonable(value):
    """value with every infinite float as the string "inf" (JSON has no infinity)."""
    if isinstance(value, float) and value == float('inf'):
        return 'inf'
    if isinstance(value, dict):
        return dict((key, jsonable(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    return value


def _number(value, fmt):
    if value is None:
        return '-'
    if value == float('inf'):
        return 'inf'
    return fmt % value


def table(summary, verdict):
    """The printed figures: per case and policy, the ratios, and the verdict."""
    lines = []
    for case, entry in summary['cases'].items():
        lines.append('%s case: %-14s %9s %10s %12s %12s %8s %8s' % (
            case, 'policy', 'hit rate', 'out tok/s', 'TTFT p50 ms', 'TTFT p99 ms', 'spread', 'failed'))
        for policy, figures in entry['policies'].items():
            lines.append('%s case: %-14s %9s %10s %12s %12s %8s %8d' % (
                case, policy, _number(figures['hit_rate_median'], '%.3f'), _number(figures['output_throughput_median'], '%.1f'),
                _number(figures['ttft_p50_median_ms'], '%.1f'), _number(figures['ttft_p99_median_ms'], '%.1f'),
                _number(figures['spread_median'], '%.2f'), figures['failed_requests']))
        for key, values in entry['ratios'].items():
            lines.append('%s case: %s %s/%s median of per-repetition ratios %s (%s)' % (
                case, key, summary['candidate'], summary['baseline'], _number(values['median'], '%.3f'),
                ', '.join(_number(value, '%.3f') for value in values['per_repetition'])))
    for check in verdict['goals']:
        lines.append('goal %s: %s %s -> %s' % (
            check['goal'], _number(check['value'], '%.3f'), check['wanted'],
            {True: 'met', False: 'NOT met', None: 'not measured'}[check['met']]))
    if verdict['met']:
        said = 'every goal met'
    elif not verdict['enough_repetitions']:
        said = 'inconclusive'
    elif any(check['met'] is False for check in verdict['goals']):
        said = 'NOT met'
    else:
        said = 'incomplete (not every goal measured)'
    lines.append('verdict: %s over %d repetitions (medians per policy; at least %d needed)' % (
        said, summary['repetitions'], verdict['min_repetitions']))
    return '\n'.join(lines)


def bench_environment(base, key, ca_file=None):
    """The environment of `vllm bench serve`: base without any key of its own, plus the gateway's key and CA."""
    env = arm_environment(base, key, ca_file)
    env['PYTHONUNBUFFERED'] = '1'
    return env


def bench_command(args):
    """`vllm bench serve` of one run: K prefixes (1 for the single case) of L tokens, S-token suffixes, O tokens out."""
    return [args.vllm, 'bench', 'serve', '--backend', 'vllm', '--base-url', args.base_url, '--endpoint', '/v1/completions',
            '--model', args.model, '--tokenizer', args.tokenizer, '--dataset-name', 'prefix_repetition',
            '--prefix-repetition-prefix-len', str(args.prefix_len), '--prefix-repetition-suffix-len', str(args.suffix_len),
            '--prefix-repetition-num-prefixes', str(args.num_prefixes), '--prefix-repetition-output-len', str(args.output_len),
            '--ignore-eos', '--num-prompts', str(args.num_prompts), '--max-concurrency', str(args.concurrency),
            '--request-rate', 'inf', '--seed', str(args.seed), '--percentile-metrics', 'ttft,tpot,itl',
            '--metric-percentiles', '50,99', '--disable-tqdm', '--save-result', '--result-dir', args.out,
            '--result-filename', args.name + '.json']


def first_error(result):
    for error in result.get('errors') or []:
        if error:
            return str(error).strip().splitlines()[-1][:300]
    return 'no error recorded'


def progress(out, line):
    print(line)
    with open(os.path.join(out, 'progress.log'), 'a') as handle:
        handle.write('%s %s\n' % (time.strftime('%H:%M:%S'), line))


def command_plan(args):
    steps = plan(args.policies, args.repetitions, args.seed, args.cases)
    with open(os.path.join(args.out, 'plan.json'), 'w') as handle:
        json.dump({'steps': steps, 'settings': dict((key, value) for key, value in vars(args).items() if key != 'command')},
                  handle, indent=2)
    print(json.dumps(steps))
    return 0


def command_sizing(args):
    pages = json.load(sys.stdin)
    result = sizing([worker_counters(text) for text in pages], args.prefix_len, args.num_prefixes)
    print(result['note'])
    if result['fits'] is False and args.strict:
        print('FAILED: the load does not test what the benchmark is for; resize it (or routing_check_sizing: false)')
        return 3
    return 0


def command_run(args):
    env = bench_environment(os.environ, read_key(args.key_file), args.ca_file)
    log_path = os.path.join(args.out, args.name + '.log')
    start = time.time()
    with open(log_path, 'w') as log:
        rc = subprocess.call(bench_command(args), stdout=log, stderr=subprocess.STDOUT, env=env)
    if rc != 0:
        with open(log_path) as handle:
            tail = handle.read().splitlines()[-15:]
        raise RuntimeError('vllm bench serve (%s) exited with %d:\n%s' % (args.name, rc, '\n'.join(tail)))
    with open(os.path.join(args.out, args.name + '.json')) as handle:
        result = json.load(handle)
    if not result.get('completed'):
        raise RuntimeError('%s: no request succeeded through %s: first error: %s' % (args.name, args.base_url, first_error(result)))
    progress(args.out, '%s: %d completed, %d failed, %.1f output tok/s, TTFT p50 %.1f ms p99 %.1f ms [%.0f s]' % (
        args.name, result['completed'], result.get('failed', 0), result['output_throughput'], result.get('p50_ttft_ms') or 0,
        result.get('p99_ttft_ms') or 0, time.time() - start))
    return 0


def command_summarize(args):
    with open(os.path.join(args.out, 'plan.json')) as handle:
        planned = json.load(handle)
    runs = []
    first_counters = None
    for step in planned['steps']:
        for run in step['runs']:
            with open(os.path.join(args.out, run['name'] + '.json')) as handle:
                result = json.load(handle)
            with open(os.path.join(args.out, run['name'] + '.metrics.json')) as handle:
                snapshots = json.load(handle)
            if first_counters is None:
                first_counters = [worker_counters(snapshot['before']) for snapshot in snapshots]
            try:
                figures = run_figures(result, worker_deltas(snapshots))
            except CounterReset as exc:
                raise RuntimeError('%s: %s' % (run['name'], exc))
            runs.append({'repetition': step['repetition'], 'policy': step['policy'], 'case': run['case'],
                         'name': run['name'], 'seed': run['seed'], 'figures': figures})
            progress(args.out, '%s: prefix-cache hit rate %s, requests per worker %s, spread %s' % (
                run['name'], _number(figures['hit_rate'], '%.3f'), json.dumps(figures['requests_per_worker'], sort_keys=True),
                _number(figures['spread'], '%.2f')))
    repetitions = len(set(run['repetition'] for run in runs))
    summary = summarize(runs, args.baseline, args.candidate, repetitions)
    verdict = goals(summary, args.hit_rate_goal, args.spread_goal)
    summary['verdict'] = verdict
    summary['sizing'] = sizing(first_counters or [], args.prefix_len, args.num_prefixes)
    summary['settings'] = planned['settings']
    summary['runs'] = runs
    with open(os.path.join(args.out, 'summary.json'), 'w') as handle:
        json.dump(jsonable(summary), handle, indent=2)
        handle.write('\n')
    print(summary['sizing']['note'])
    print(table(summary, verdict))
    return 0


def parser():
    main_parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0], allow_abbrev=False)
    commands = main_parser.add_subparsers(dest='command')
    commands.required = True
    planning = commands.add_parser('plan', help='the runs in order, to plan.json')
    planning.add_argument('--policies', nargs='+', required=True, choices=POLICIES)
    planning.add_argument('--repetitions', type=int, required=True)
    planning.add_argument('--seed', type=int, default=1000)
    planning.add_argument('--cases', nargs='+', choices=CASES, default=list(CASES),
                          help='the cases each policy runs (default: all)')
    planning.add_argument('--out', required=True)
    running = commands.add_parser('run', help='one vllm bench serve through the gateway')
    running.add_argument('--vllm', required=True, help='the vllm command of an engine environment')
    running.add_argument('--base-url', required=True, help='base URL of the gateway')
    running.add_argument('--key-file', help='file holding a client key of the gateway (gateway_api_keys)')
    running.add_argument('--ca-file', help='PEM of the CA that signed the gateway\'s certificate (default: the system\'s store)')
    running.add_argument('--model', required=True, help='served model name')
    running.add_argument('--tokenizer', required=True, help='tokenizer path or name')
    running.add_argument('--name', required=True, help='the run\'s name (plan.json)')
    running.add_argument('--seed', type=int, required=True)
    running.add_argument('--num-prefixes', type=int, required=True)
    running.add_argument('--prefix-len', type=int, required=True)
    running.add_argument('--suffix-len', type=int, required=True)
    running.add_argument('--output-len', type=int, required=True)
    running.add_argument('--num-prompts', type=int, required=True)
    running.add_argument('--concurrency', type=int, required=True)
    running.add_argument('--out', required=True)
    sizing_parser = commands.add_parser('sizing', help='the prefixes against the KV caches of the /metrics pages (a JSON list on stdin)')
    sizing_parser.add_argument('--prefix-len', type=int, required=True)
    sizing_parser.add_argument('--num-prefixes', type=int, required=True)
    sizing_parser.add_argument('--strict', action='store_true', help='exit 3 when the prefixes do not fit the purpose')
    sizing_parser.add_argument('--out', required=True)
    summarizing = commands.add_parser('summarize', help='figures, ratios and verdict, to summary.json')
    summarizing.add_argument('--out', required=True)
    summarizing.add_argument('--baseline', default='least_conn')
    summarizing.add_argument('--candidate', default='cache_aware')
    summarizing.add_argument('--hit-rate-goal', type=float, default=1.5)
    summarizing.add_argument('--spread-goal', type=float, default=2.0)
    summarizing.add_argument('--prefix-len', type=int, required=True)
    summarizing.add_argument('--num-prefixes', type=int, required=True)
    return main_parser


def main(argv=None):
    args = parser().parse_args(argv)
    if not os.path.isdir(args.out):
        os.makedirs(args.out)
    return {'plan': command_plan, 'sizing': command_sizing, 'run': command_run, 'summarize': command_summarize}[args.command](args)


if __name__ == '__main__':
    try:
        sys.exit(main())
    except (RuntimeError, OSError, ValueError) as exc:
        print('FAILED: %s' % exc)
        sys.exit(1)
