# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ask an OpenAI-compatible endpoint (the fleet's gateway) for three answers and show them.

    python3 tools/try_completions.py --url http://GATEWAY:80 --model MODEL

1. a completion; 2. the same streamed (read as server-sent events through HTTP chunked encoding), each
chunk printed with the time it arrived, then whether they came one by one or in bursts; 3. a chat
answer. Exits non-zero when a request fails or the stream is not a stream of events (fewer than two, or
not JSON). Arrival times are shown, not judged: a small model on a CPU engine may send its tokens in
bursts by itself; a gateway's buffering is tested against a paced upstream in molecule's gateway scenario.
Standard library only, so it runs on any controller.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import http.client
import json
import sys
import time

try:
    from http.client import HTTPConnection
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover
    sys.exit('Python 3 is needed')


def connection(url, timeout):
    parts = urlsplit(url)
    return HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)


def post(url, path, body, timeout):
    conn = connection(url, timeout)
    conn.request('POST', path, json.dumps(body), {'Content-Type': 'application/json'})
    response = conn.getresponse()
    data = response.read().decode('utf-8', 'replace')
    if response.status != 200:
        raise RuntimeError('%s answered %d: %s' % (path, response.status, data[:300]))
    return json.loads(data), response.getheader('X-Upstream')


def stream(url, body, timeout):
    """Yield (seconds since the request, text) for each SSE data chunk as it arrives."""
    conn = connection(url, timeout)
    start = time.monotonic()
    conn.request('POST', '/v1/completions', json.dumps(body), {'Content-Type': 'application/json'})
    response = conn.getresponse()
    if response.status != 200:
        raise RuntimeError('/v1/completions (stream) answered %d: %s' % (response.status, response.read()[:300]))
    while True:
        # The response's own readline undoes the chunked transfer encoding (an event may span two chunks).
        line = response.readline()
        if not line:
            break
        line = line.decode('utf-8', 'replace').strip()
        if not line.startswith('data:'):
            continue
        payload = line[5:].strip()
        if payload == '[DONE]':
            break
        try:
            chunk = json.loads(payload)
        except ValueError:
            raise RuntimeError('/v1/completions (stream) sent an event that is not JSON: %r' % payload[:300])
        text = ''.join(choice.get('text') or '' for choice in chunk.get('choices') or [])
        yield time.monotonic() - start, text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    parser.add_argument('--url', required=True, help='base URL, e.g. http://10.89.0.14:80')
    parser.add_argument('--model', required=True, help='served model name')
    parser.add_argument('--prompt', default='The fleet of GPU nodes')
    parser.add_argument('--max-tokens', type=int, default=24)
    parser.add_argument('--timeout', type=float, default=120)
    args = parser.parse_args(argv)
    failed = False

    print('==> 1. completion (POST %s/v1/completions)' % args.url)
    start = time.monotonic()
    answer, _upstream = post(args.url, '/v1/completions',
                             {'model': args.model, 'prompt': args.prompt, 'max_tokens': args.max_tokens, 'temperature': 0},
                             args.timeout)
    print('    prompt: %r' % args.prompt)
    print('    answer: %r' % answer['choices'][0]['text'])
    print('    %s tokens in %.0f ms' % (answer.get('usage', {}).get('completion_tokens'), 1000 * (time.monotonic() - start)))

    print('==> 2. streamed completion (stream: true), each chunk as it arrives')
    times = []
    for seconds, text in stream(args.url, {'model': args.model, 'prompt': args.prompt, 'max_tokens': args.max_tokens,
                                           'temperature': 0, 'stream': True}, args.timeout):
        times.append(seconds)
        print('    +%7.1f ms  %r' % (1000 * seconds, text))
    if len(times) < 2:
        print('    FAILED: %d chunk(s): nothing to tell streaming from buffering' % len(times))
        failed = True
    else:
        spread = times[-1] - times[0]
        gaps = [later - earlier for earlier, later in zip(times, times[1:])]
        distinct = len(set(round(t, 3) for t in times))
        print('    %d chunks; first after %.1f ms, spread over %.1f ms, largest gap %.1f ms, %d distinct arrival times'
              % (len(times), 1000 * times[0], 1000 * spread, 1000 * max(gaps), distinct))
        # Not a verdict on the gateway: the CPU engine of the lab sometimes hands a short answer's tokens to its
        # API server in one burst (straight from a worker too). The gateway's streaming is tested with a paced
        # upstream in molecule's gateway scenario.
        if distinct >= len(times) / 2.0:
            print('    the chunks arrived one by one')
        else:
            print('    the chunks arrived in bursts (the lab\'s CPU engine does that on its own for short answers)')

    print('==> 3. chat (POST %s/v1/chat/completions)' % args.url)
    chat, _upstream = post(args.url, '/v1/chat/completions',
                           {'model': args.model, 'messages': [{'role': 'user', 'content': 'Say hello to the fleet.'}],
                            'max_tokens': args.max_tokens, 'temperature': 0}, args.timeout)
    print('    user: %r' % 'Say hello to the fleet.')
    print('    assistant: %r' % chat['choices'][0]['message']['content'])
    return 1 if failed else 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except (RuntimeError, OSError, http.client.HTTPException, ValueError, KeyError) as exc:
        print('    FAILED: %s: %s' % (type(exc).__name__, exc))
        sys.exit(1)
