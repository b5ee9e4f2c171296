# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cost of the path itself: the gateway in front of a stand-in that streams as fast as a GPU worker.

Everything runs on this machine, on loopback: stand-in workers (path_cost_upstream.py, one process per
worker, each streaming --tokens tokens per request, the first after --ttft-ms, then one every --itl-ms),
and in front of them the gateway role's own nginx configuration (the role's template,
roles/gateway/templates/etc/nginx/conf.d/llmfleet-gateway.conf.j2, rendered with ansible's Templar, the
role's defaults and vars/main.yml, as tests/unit/roles/test_gateway_templates.py renders it), in a minimal
main nginx.conf of its own (temp paths, pid and logs in a temp dir). Arms:

- direct: the client straight at the stand-ins (its streams split evenly over them);
- nginx: the role's configuration with gateway_routing least_conn (its default), the stand-ins as servers;
- nginx+router: the role's configuration with gateway_routing cache_aware: nginx in front of vllm-router
  started with the role's command line (_gateway_router_argv) and the stand-ins as its workers.

The client (asyncio, standard library, one process) keeps --concurrency streams busy, each on its own
keep-alive connection, --requests-per-stream requests one after another; it measures the time to the first
token (the first SSE event carrying text) and counts tokens (one per event, as vLLM streams); connections
are opened before the clock starts. Repetitions
are interleaved and rotated (each runs every arm, the first arm moving by one each time); the verdict uses
the median of the per-repetition throughput ratios to direct and of the per-repetition differences of TTFT
p50 to direct, as benchmarks/gateway_overhead.py does. Goal (issue 14): nginx alone at a throughput ratio
of at least 0.99 and at most 1 ms added TTFT p50; nginx+router's figures beside it.

The default rate is a GPU worker's under that load: a worker decoding 64 streams at once gives each a token every
10 to 30 ms, so --itl-ms 16 (62.5 tokens/s per stream) makes 4000 tokens/s over the 64 streams. A faster rate is one
flag away; on a machine of 2 cores --itl-ms 2 (32000 tokens/s) saturates the cores with the Python client and
stand-ins, and the arms then differ by the noise of that contention, not by the path.

By default nothing is pinned to a CPU: the client, nginx, the router and the stand-ins share the machine's
cores (the report prints how many); on a small machine the figures include that contention, and a stand-in
or client short of CPU caps every arm alike. --client-cpus pins the client alone (on a larger machine).

    LLMFLEET_NGINX=$(tests/tools/nginx.sh) LLMFLEET_VLLM_ROUTER=$(tests/tools/vllm-router.sh) \\
        .venv/bin/python benchmarks/path_cost.py --out /tmp/path-cost

The summary is printed and written as summary.json in --out, with nginx's and the router's logs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from gateway_overhead import median, percentile  # noqa: E402  (the same statistics as the gateway benchmark)

ARMS = ('direct', 'nginx', 'nginx+router')
GOAL_RATIO = 0.99
GOAL_ADDED_TTFT_MS = 1.0
WORKER_KEY = 'path-cost-worker-key-0123456789abcdef'
MODEL = 'stand-in'


# --------------------------------------------------------------------------------------------------
# Pure functions: SSE, statistics, verdicts
# --------------------------------------------------------------------------------------------------

def split_events(buffer):
    """Complete SSE events of buffer (bytes) as lists of their data lines' values, and the incomplete rest."""
    events = []
    buffer = buffer.replace(b'\r\n', b'\n')
    while True:
        end = buffer.find(b'\n\n')
        if end < 0:
            return events, buffer
        block, buffer = buffer[:end], buffer[end + 2:]
        data = [line[5:].lstrip(b' ') for line in block.split(b'\n') if line.startswith(b'data:')]
        if data:
            events.append(b'\n'.join(data).decode())


def event_tokens(data):
    """Tokens one vLLM completion event carries (one per event with text), 0 for [DONE] and empty text."""
    if data == '[DONE]':
        return 0
    payload = json.loads(data)
    if 'error' in payload:
        raise RuntimeError('the stream carried an error: %s' % json.dumps(payload['error'])[:300])
    return sum(1 for choice in payload.get('choices') or [] if choice.get('text'))


def arm_figures(requests, duration):
    """One arm's figures in one repetition from its requests [{'ttft_ms', 'tokens', 'error'}] and wall time (s)."""
    good = [request for request in requests if not request.get('error')]
    ttfts = [request['ttft_ms'] for request in good if request.get('ttft_ms') is not None]
    tokens = sum(request['tokens'] for request in good)
    return {
        'completed': len(good),
        'failed': len(requests) - len(good),
        'duration_s': duration,
        'output_tokens': tokens,
        'output_throughput': tokens / duration if duration else 0.0,
        'ttft_p50_ms': percentile(ttfts, 50) if ttfts else None,
        'ttft_p99_ms': percentile(ttfts, 99) if ttfts else None,
    }


def summarize(repetitions, arms):
    """repetitions: [{arm: figures}] -> per arm the medians, and beside direct the ratio and the added TTFT p50."""
    summary = {'repetitions': len(repetitions), 'arms': {}}
    for arm in arms:
        figures = {
            'output_throughput_median': median([rep[arm]['output_throughput'] for rep in repetitions]),
            'ttft_p50_median_ms': median([rep[arm]['ttft_p50_ms'] for rep in repetitions]),
            'ttft_p99_median_ms': median([rep[arm]['ttft_p99_ms'] for rep in repetitions]),
            'failed_requests': sum(rep[arm]['failed'] for rep in repetitions),
        }
        if arm != 'direct':
            ratios = [rep[arm]['output_throughput'] / rep['direct']['output_throughput'] for rep in repetitions]
            added = [rep[arm]['ttft_p50_ms'] - rep['direct']['ttft_p50_ms'] for rep in repetitions]
            figures.update({'throughput_ratio_median': median(ratios), 'throughput_ratios': ratios,
                            'added_ttft_p50_median_ms': median(added), 'added_ttft_p50_ms': added})
        summary['arms'][arm] = figures
    return summary


def verdicts(summary, ratio_goal=GOAL_RATIO, added_goal_ms=GOAL_ADDED_TTFT_MS):
    """The goal lines: nginx alone must meet both; nginx+router is reported beside it, against the same bars."""
    lines = []
    for arm in ('nginx', 'nginx+router'):
        figures = summary['arms'].get(arm)
        if not figures:
            continue
        lines.append({'arm': arm, 'goal': 'throughput ratio >= %.2f' % ratio_goal, 'value': figures['throughput_ratio_median'],
                      'met': figures['throughput_ratio_median'] >= ratio_goal, 'required': arm == 'nginx'})
        lines.append({'arm': arm, 'goal': 'added TTFT p50 <= %g ms' % added_goal_ms, 'value': figures['added_ttft_p50_median_ms'],
                      'met': figures['added_ttft_p50_median_ms'] <= added_goal_ms, 'required': arm == 'nginx'})
    return lines


def table(summary, goals, machine):
    arms = [arm for arm in ARMS if arm in summary['arms']]
    width = 14
    rows = ['%-26s' % '' + ''.join('%*s' % (width, arm) for arm in arms)]

    def row(label, key, fmt):
        values = [summary['arms'][arm].get(key) for arm in arms]
        rows.append('%-26s' % label + ''.join('%*s' % (width, '-' if value is None else fmt % value) for value in values))

    row('output tokens/s (median)', 'output_throughput_median', '%.0f')
    row('ratio to direct (median)', 'throughput_ratio_median', '%.4f')
    row('TTFT p50 ms (median)', 'ttft_p50_median_ms', '%.2f')
    row('added TTFT p50 ms (median)', 'added_ttft_p50_median_ms', '%+.2f')
    row('TTFT p99 ms (median)', 'ttft_p99_median_ms', '%.2f')
    row('failed requests', 'failed_requests', '%d')
    rows.append('medians over %d interleaved, rotated repetitions of the per-repetition values' % summary['repetitions'])
    rows.append('machine: %d CPUs online; %s' % (machine['cpus'], (
        'the client pinned to CPUs %s, nginx, the router and the stand-ins not pinned' % ','.join(str(cpu) for cpu in machine['client_cpus'])
        if machine.get('client_cpus') else 'nothing pinned: the client, nginx, the router and the stand-ins share them')))
    for goal in goals:
        rows.append('%-5s %-13s %-28s %9.4f  %s' % ('GOAL' if goal['required'] else 'info', goal['arm'], goal['goal'], goal['value'],
                                                    'met' if goal['met'] else 'NOT MET'))
    return '\n'.join(rows)


# --------------------------------------------------------------------------------------------------
# The client
# --------------------------------------------------------------------------------------------------

async def _read_head(reader):
    line = await reader.readline()
    if not line:
        raise ConnectionError('the connection closed before an answer')
    status = int(line.split(b' ', 2)[1])
    headers = {}
    while True:
        line = await reader.readline()
        if line in (b'\r\n', b'\n', b''):
            return status, headers
        name, _sep, value = line.decode('latin-1').partition(':')
        headers[name.strip().lower()] = value.strip()


async def _body_pieces(reader, headers):
    """The body as it arrives: chunk by chunk (chunked), or whole (Content-Length)."""
    if headers.get('transfer-encoding', '').lower() == 'chunked':
        while True:
            size = int((await reader.readline()).split(b';')[0].strip() or b'0', 16)
            if size == 0:
                await reader.readline()
                return
            piece = await reader.readexactly(size)
            await reader.readline()
            yield piece
    else:
        yield await reader.readexactly(int(headers.get('content-length') or 0))


def request_bytes(host, port, path, body, key=None):
    data = json.dumps(body).encode()
    head = 'POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n' % (
        path, host, port, len(data))
    if key:
        head += 'Authorization: Bearer %s\r\n' % key
    return head.encode() + b'\r\n' + data


async def stream_once(connection, target, body):
    """One streamed completion on connection ([reader, writer] or [None, None]); {'ttft_ms', 'tokens', 'error'}."""
    host, port = target
    if connection[0] is None:
        connection[:] = await asyncio.open_connection(host, port)
    reader, writer = connection
    started = time.perf_counter()
    writer.write(request_bytes(host, port, '/v1/completions', body, WORKER_KEY))
    await writer.drain()
    status, headers = await _read_head(reader)
    ttft, tokens, rest, error = None, 0, b'', None
    async for piece in _body_pieces(reader, headers):
        if status != 200:
            rest += piece
            continue
        events, rest = split_events(rest + piece)
        for data in events:
            count = event_tokens(data)
            if count and ttft is None:
                ttft = 1000.0 * (time.perf_counter() - started)
            tokens += count
    if status != 200:
        error = 'HTTP %d: %s' % (status, rest[:200].decode('utf-8', 'replace'))
    elif tokens != body['max_tokens']:
        error = '%d tokens of %d' % (tokens, body['max_tokens'])
    if headers.get('connection', '').lower() == 'close':
        writer.close()
        connection[:] = [None, None]
    return {'ttft_ms': ttft, 'tokens': tokens, 'error': error}


async def _user(number, target, connection, requests, tokens, results):
    try:
        for index in range(requests):
            body = {'model': MODEL, 'prompt': 'stream %d request %d: say something long' % (number, index), 'max_tokens': tokens,
                    'stream': True, 'ignore_eos': True, 'temperature': 0}
            try:
                results.append(await stream_once(connection, target, body))
            except (OSError, ValueError, asyncio.IncompleteReadError, RuntimeError) as exc:
                results.append({'ttft_ms': None, 'tokens': 0, 'error': '%s: %s' % (type(exc).__name__, exc)})
                if connection[1] is not None:
                    connection[1].close()
                connection[:] = [None, None]
    finally:
        if connection[1] is not None:
            connection[1].close()


async def run_load(targets, concurrency, requests, tokens):
    """concurrency streams, spread over targets [(host, port)], requests each; (per-request results, wall seconds).

    Each stream's connection is opened before the clock starts (as a client's pool holds them): the figures are
    those of requests on open keep-alive connections, not of connection set-up."""
    results = []
    chosen = [targets[number % len(targets)] for number in range(concurrency)]
    connections = [list(pair) for pair in await asyncio.gather(*[asyncio.open_connection(*target) for target in chosen])]
    started = time.perf_counter()
    await asyncio.gather(*[_user(number, target, connection, requests, tokens, results)
                           for number, (target, connection) in enumerate(zip(chosen, connections))])
    return results, time.perf_counter() - started


def measure(targets, concurrency, requests, tokens):
    results, duration = asyncio.run(run_load(targets, concurrency, requests, tokens))
    return results, duration


# --------------------------------------------------------------------------------------------------
# The processes: stand-ins, nginx with the role's configuration, the router
# --------------------------------------------------------------------------------------------------

def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def start_stand_ins(count, ttft_ms, itl_ms, log_dir):
    """One stand-in process per worker; [(process, port)] once each says it is ready."""
    started = []
    for number in range(count):
        port = free_port()
        log = open(os.path.join(log_dir, 'stand-in-%d.log' % number), 'w')
        process = subprocess.Popen([sys.executable, os.path.join(HERE, 'path_cost_upstream.py'), '--port', str(port),
                                    '--ttft-ms', str(ttft_ms), '--itl-ms', str(itl_ms)], stdout=log, stderr=subprocess.STDOUT)
        started.append((process, port))
    for process, port in started:
        wait_http('http://127.0.0.1:%d/health' % port, process, 20)
    return started


def wait_http(url, process, timeout):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError('%s exited with %d before %s answered' % (process.args[0], process.returncode, url))
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except (OSError, urllib.error.URLError) as exc:
            last = exc
        time.sleep(0.05)
    raise RuntimeError('%s did not answer 200 in %d s (%s)' % (url, timeout, last))


def _trusted(value, trust):
    if isinstance(value, str):
        return trust(value)
    if isinstance(value, dict):
        return dict((key, _trusted(item, trust)) for key, item in value.items())
    if isinstance(value, list):
        return [_trusted(item, trust) for item in value]
    return value


def role_templar(overrides):
    """ansible's Templar with the gateway role's defaults and vars/main.yml (as templates) and overrides (as data)."""
    import yaml
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template
    from ansible.utils.collection_loader import AnsibleCollectionConfig
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
    if AnsibleCollectionConfig.collection_finder is None:
        # The collection's filters by their FQCN (vars/main.yml uses them), from .collections as in the unit tests.
        # Modules imported before as plain packages (a test run) are set aside first, or the plugin loader finds none.
        for name in [name for name in sys.modules if name == 'ansible_collections' or name.startswith('ansible_collections.')]:
            del sys.modules[name]
        _AnsibleCollectionFinder(paths=[os.path.join(ROOT, '.collections')])._install()
    variables = {'ansible_managed': 'Ansible managed', 'groups': {}, 'hostvars': {}}
    for name in ('defaults/main.yml', 'vars/main.yml'):
        with open(os.path.join(ROOT, 'roles', 'gateway', name)) as handle:
            variables.update(_trusted(yaml.safe_load(handle), trust_as_template))
    variables.update(overrides)
    return Templar(loader=DataLoader(), variables=variables), trust_as_template


def render_gateway(directory, stand_in_ports, listen_port, router_port=None, metrics_port=None):
    """The role's nginx files in directory for these stand-ins (with router_port: cache_aware), a main nginx.conf
    that includes them; (the path of nginx.conf, the router's argv or None)."""
    overrides = {
        'gateway_endpoints': [{'name': 'stand-in-%d' % number, 'address': '127.0.0.1', 'port': port}
                              for number, port in enumerate(stand_in_ports)],
        'gateway_listen_address': '127.0.0.1', 'gateway_listen_port': listen_port, 'gateway_allow_open': True,
        'llmfleet_worker_api_key': WORKER_KEY,
        '_gateway_access_log': os.path.join(directory, 'access.log'), '_gateway_error_log': os.path.join(directory, 'error.log'),
        '_gateway_api_keys_file': os.path.join(directory, 'api-keys.conf'),
        '_gateway_worker_key_file': os.path.join(directory, 'worker-key.conf'),
    }
    if router_port:
        overrides.update({'gateway_routing': 'cache_aware', 'gateway_router_port': router_port, 'gateway_router_metrics_port': metrics_port,
                          'gateway_router_wheelhouse_url': 'http://127.0.0.1/unused/'})
    templar, trust = role_templar(overrides)
    templates = os.path.join(ROOT, 'roles', 'gateway', 'templates', 'etc', 'nginx')
    for source, target in (('conf.d/llmfleet-gateway.conf.j2', 'gateway.conf'), ('llmfleet-gateway/worker-key.conf.j2', 'worker-key.conf')):
        with open(os.path.join(templates, source)) as handle:
            text = templar.template(trust(handle.read()))
        with open(os.path.join(directory, target), 'w') as handle:
            handle.write(text)
    connections = int(templar.template(trust('{{ gateway_worker_connections }}')))
    main = os.path.join(directory, 'nginx.conf')
    temp = dict((name, os.path.join(directory, name)) for name in ('body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'))
    with open(main, 'w') as handle:
        # Debian's nginx.conf as far as it matters here, with the lines the role writes into it.
        handle.write('daemon off;\nworker_processes auto;\nworker_rlimit_nofile %d;\npid %s;\nerror_log %s warn;\n'
                     'events {\n    worker_connections %d;\n}\nhttp {\n    sendfile on;\n    tcp_nopush on;\n'
                     '    types_hash_max_size 2048;\n    default_type application/octet-stream;\n'
                     '    client_body_temp_path %s;\n    proxy_temp_path %s;\n    fastcgi_temp_path %s;\n'
                     '    uwsgi_temp_path %s;\n    scgi_temp_path %s;\n    include %s;\n}\n'
                     % (connections * 2, os.path.join(directory, 'nginx.pid'), os.path.join(directory, 'error.log'), connections,
                        temp['body'], temp['proxy'], temp['fastcgi'], temp['uwsgi'], temp['scgi'], os.path.join(directory, 'gateway.conf')))
    argv = list(templar.template(trust('{{ _gateway_router_argv }}'))) if router_port else None
    return main, argv


def start_nginx(binary, main, directory):
    log = open(os.path.join(directory, 'nginx.stdout.log'), 'w')
    check = subprocess.run([binary, '-t', '-p', directory, '-e', os.path.join(directory, 'error.log'), '-c', main],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    if check.returncode != 0:
        raise RuntimeError('nginx -t refused %s:\n%s' % (main, check.stdout.decode()))
    return subprocess.Popen([binary, '-p', directory, '-e', os.path.join(directory, 'error.log'), '-c', main],
                            stdout=log, stderr=subprocess.STDOUT)


def stop(processes):
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def machine(client_cpus=None):
    return {'cpus': os.cpu_count() or 0, 'client_cpus': sorted(client_cpus or [])}


def run(args):
    arms = [arm for arm in ARMS if arm in args.arms]
    if 'direct' not in arms:
        raise RuntimeError('the direct arm is the reference: keep it in --arms')
    nginx_binary = args.nginx or os.environ.get('LLMFLEET_NGINX') or shutil.which('nginx')
    router_binary = args.router or os.environ.get('LLMFLEET_VLLM_ROUTER')
    if set(arms) & {'nginx', 'nginx+router'} and not (nginx_binary and os.access(nginx_binary, os.X_OK)):
        raise RuntimeError('no nginx binary: --nginx or LLMFLEET_NGINX (tests/tools/nginx.sh prints one)')
    if 'nginx+router' in arms and not (router_binary and os.access(router_binary, os.X_OK)):
        raise RuntimeError('no vllm-router binary: --router or LLMFLEET_VLLM_ROUTER (tests/tools/vllm-router.sh prints one)')
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix='path-cost-')
    processes = []
    try:
        stand_ins = start_stand_ins(args.workers, args.ttft_ms, args.itl_ms, args.out)
        processes.extend(process for process, _port in stand_ins)
        ports = [port for _process, port in stand_ins]
        targets = {'direct': [('127.0.0.1', port) for port in ports]}
        if 'nginx' in arms:
            directory = os.path.join(work, 'nginx')
            os.makedirs(directory)
            listen = free_port()
            main, _argv = render_gateway(directory, ports, listen)
            processes.append(start_nginx(nginx_binary, main, directory))
            wait_http('http://127.0.0.1:%d/health' % listen, processes[-1], 20)
            targets['nginx'] = [('127.0.0.1', listen)]
        if 'nginx+router' in arms:
            directory = os.path.join(work, 'nginx-router')
            os.makedirs(directory)
            listen, router_port, metrics_port = free_port(), free_port(), free_port()
            main, argv = render_gateway(directory, ports, listen, router_port, metrics_port)
            router_log = open(os.path.join(args.out, 'router.log'), 'w')
            processes.append(subprocess.Popen([router_binary] + argv[1:] + ['--worker-urls'] + ['http://127.0.0.1:%d' % port for port in ports],
                                              stdout=router_log, stderr=subprocess.STDOUT))
            # Ready once it has a healthy worker (/readiness, what the gateway's /health asks it).
            wait_http('http://127.0.0.1:%d/readiness' % router_port, processes[-1], 60)
            processes.append(start_nginx(nginx_binary, main, directory))
            wait_http('http://127.0.0.1:%d/health' % listen, processes[-1], 20)
            targets['nginx+router'] = [('127.0.0.1', listen)]
        if args.client_cpus:
            # Only this process (the client): the stand-ins, nginx and the router started above keep every CPU.
            os.sched_setaffinity(0, args.client_cpus)
        for arm in arms:
            # Warm-up, not counted: connections opened and kept alive along the whole path.
            results, _duration = measure(targets[arm], args.concurrency, 1, args.tokens)
            failed = [result['error'] for result in results if result['error']]
            if failed:
                raise RuntimeError('%s: %d of %d warm-up requests failed, the first: %s' % (arm, len(failed), len(results), failed[0]))
        repetitions = []
        start = time.time()
        for number in range(args.repetitions):
            order = arms[number % len(arms):] + arms[:number % len(arms)]
            rep = {}
            for arm in order:
                results, duration = measure(targets[arm], args.concurrency, args.requests_per_stream, args.tokens)
                rep[arm] = arm_figures(results, duration)
                if not rep[arm]['completed']:
                    raise RuntimeError('%s: no request succeeded; the first error: %s' % (arm, results[0]['error']))
            repetitions.append(rep)
            print('rep %2d/%d (%s first): %s [%.0f s]' % (number + 1, args.repetitions, order[0], ' | '.join(
                '%s %.0f tok/s p50 TTFT %.2f ms' % (arm, rep[arm]['output_throughput'], rep[arm]['ttft_p50_ms']) for arm in arms),
                time.time() - start))
            sys.stdout.flush()
    finally:
        stop(processes)
        for name in ('nginx', 'nginx-router'):
            for log in ('error.log', 'access.log'):
                if os.path.exists(os.path.join(work, name, log)):
                    shutil.copy(os.path.join(work, name, log), os.path.join(args.out, '%s.%s' % (name, log)))
        shutil.rmtree(work, ignore_errors=True)
    summary = summarize(repetitions, arms)
    goals = verdicts(summary)
    summary.update({'goals': goals, 'machine': machine(args.client_cpus), 'pinned': bool(args.client_cpus), 'runs': repetitions,
                    'settings': dict((key, value) for key, value in vars(args).items() if key != 'out')})
    summary['settings']['stream_rate_tokens_per_s'] = 1000.0 / args.itl_ms if args.itl_ms else None
    with open(os.path.join(args.out, 'summary.json'), 'w') as handle:
        json.dump(summary, handle, indent=2)
    print(table(summary, goals, summary['machine']))
    return summary


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0], allow_abbrev=False)
    parser.add_argument('--nginx', help='nginx binary (default: LLMFLEET_NGINX, else nginx on PATH)')
    parser.add_argument('--router', help='vllm-router binary (default: LLMFLEET_VLLM_ROUTER)')
    parser.add_argument('--arms', nargs='+', choices=ARMS, default=list(ARMS))
    parser.add_argument('--workers', type=int, default=4, help='stand-in workers (one process each)')
    parser.add_argument('--concurrency', type=int, default=64, help='concurrent streams')
    parser.add_argument('--requests-per-stream', type=int, default=4, help='requests each stream sends, one after another')
    parser.add_argument('--tokens', type=int, default=128, help='output tokens of each request')
    parser.add_argument('--ttft-ms', type=float, default=20.0, help='the stand-in\'s time to the first token')
    parser.add_argument('--itl-ms', type=float, default=16.0,
                        help='the stand-in\'s time between tokens (16 ms: 62.5 tokens/s per stream, 4000 tokens/s over 64 streams)')
    parser.add_argument('--repetitions', type=int, default=8)
    parser.add_argument('--client-cpus', type=int, nargs='+', help='pin the client (this process, after the others start) to these CPUs; '
                        'default: not pinned')
    parser.add_argument('--out', required=True, help='directory for summary.json and the logs')
    return parser.parse_args(argv)


def main(argv=None):
    run(parse_args(argv))
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except (RuntimeError, OSError) as exc:
        print('FAILED: %s' % exc)
        sys.exit(1)
