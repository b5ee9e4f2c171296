# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The steady load of benchmarks/rolling_restart_under_load.yml and benchmarks/faults.yml: completions through the
gateway at a steady rate (Poisson arrivals), at most --max-concurrency at a time, each streamed or not, sent with the
`openai` client, which the engine's venv on the client host has (vLLM depends on it).

    python steady_load.py --base-url https://GATEWAY:443 --model MODEL --num-prompts 400 --request-rate 2 \
        --result load.json

Why this and not `vllm bench serve`: benchmarks/README.md, "The steady load".

The key comes from OPENAI_API_KEY (never the command line; without it the client sends `none`, which a gateway
without keys ignores); the server's certificate is checked against the file in
SSL_CERT_FILE, else the system's store. The client never retries: a request that fails is counted as failed. The
result (JSON) has the fields the playbooks read: completed, failed, num_prompts, duration, max_concurrency,
request_rate, errors (one text per failed request), and output_tokens, streamed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import asyncio
import json
import os
import random
import ssl
import sys
import time

# A fixed list of plain words: prompts differ by their order (no prefix shared by chance), with no tokenizer needed.
WORDS = ('river stone cloud lamp paper window garden silver engine market violet harbor candle meadow pencil '
         'thunder orchard basket mirror lantern forest anchor bridge canyon desert falcon glacier island jungle '
         'kettle ladder marble needle ocean parrot quartz rocket saddle tunnel valley wagon yacht zebra').split()


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', 1)[0])
    parser.add_argument('--base-url', required=True, help='the gateway, e.g. https://10.0.0.1:443')
    parser.add_argument('--model', required=True)
    parser.add_argument('--num-prompts', type=int, required=True)
    parser.add_argument('--request-rate', type=float, required=True, help='requests per second (Poisson arrivals)')
    parser.add_argument('--max-concurrency', type=int, default=None)
    parser.add_argument('--input-words', type=int, default=64)
    parser.add_argument('--output-len', type=int, default=32)
    parser.add_argument('--stream-share', type=float, default=1.0, help='the share of requests streamed (0 to 1)')
    parser.add_argument('--timeout', type=float, default=300.0, help='seconds one request may take')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--result', required=True, help='the JSON file the result is written to')
    args = parser.parse_args(argv)
    if args.num_prompts < 1 or args.request_rate <= 0 or not 0 <= args.stream_share <= 1 \
            or (args.max_concurrency is not None and args.max_concurrency < 1):
        parser.error('--num-prompts and --max-concurrency must be at least 1, --request-rate above 0, '
                     '--stream-share from 0 to 1')
    return args


def plan(args):
    """The requests in the order they are sent: (delay before it, prompt, streamed)."""
    rng = random.Random(args.seed)
    requests = []
    for _index in range(args.num_prompts):
        prompt = ' '.join(rng.choice(WORDS) for _word in range(args.input_words))
        requests.append((rng.expovariate(args.request_rate), prompt, rng.random() < args.stream_share))
    return requests


def describe(error):
    """One line for a failed request: the exception's type and the first line of its message."""
    text = str(error).strip().splitlines()
    return '%s: %s' % (type(error).__name__, text[0][:200] if text else '')


async def send(client, args, prompt, streamed):
    """One request; returns the tokens it got, as the engine counts them (its usage, in a stream its last event).
    Raises on any failure, including a stream that ends without its last event (no finish_reason)."""
    options = dict(model=args.model, prompt=prompt, max_tokens=args.output_len, temperature=0.0,
                   extra_body={'ignore_eos': True})
    if not streamed:
        answer = await client.completions.create(**options)
        if not answer.choices or answer.choices[0].finish_reason is None:
            raise RuntimeError('an answer without a finished choice')
        return answer.usage.completion_tokens if answer.usage else 0
    stream = await client.completions.create(stream=True, stream_options={'include_usage': True}, **options)
    tokens, finished = None, None
    async for chunk in stream:
        for choice in chunk.choices:
            finished = choice.finish_reason or finished
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
    if finished is None:
        raise RuntimeError('the stream ended without a finish_reason')
    return tokens or 0


async def run(args, client):
    limit = asyncio.Semaphore(args.max_concurrency) if args.max_concurrency else None
    outcome = {'completed': 0, 'failed': 0, 'errors': [], 'output_tokens': 0, 'streamed': 0}

    async def one(prompt, streamed):
        if limit is not None:
            await limit.acquire()
        try:
            tokens = await send(client, args, prompt, streamed)
            outcome['output_tokens'] += tokens
            outcome['completed'] += 1
            outcome['streamed'] += 1 if streamed else 0
        except Exception as error:  # pylint: disable=broad-exception-caught
            # Any failure of one request is that request's result, never the load's end.
            outcome['failed'] += 1
            outcome['errors'].append(describe(error))
        finally:
            if limit is not None:
                limit.release()

    print('the load starts: %d requests at %g per second, at most %s at a time, %d%% streamed' % (
        args.num_prompts, args.request_rate, args.max_concurrency or 'any number', round(args.stream_share * 100)),
        flush=True)
    started = time.monotonic()
    tasks = []
    for delay, prompt, streamed in plan(args):
        await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(one(prompt, streamed)))
        if len(tasks) % 50 == 0:
            print('%6.1f s  sent %d of %d, completed %d, failed %d' % (
                time.monotonic() - started, len(tasks), args.num_prompts, outcome['completed'], outcome['failed']),
                flush=True)
    await asyncio.gather(*tasks)
    outcome.update(duration=time.monotonic() - started, num_prompts=args.num_prompts,
                   max_concurrency=args.max_concurrency, request_rate=args.request_rate)
    return outcome


def make_client(args):
    import openai  # pylint: disable=import-outside-toplevel
    verify = ssl.create_default_context(cafile=os.environ.get('SSL_CERT_FILE') or None)
    http_client = openai.DefaultAsyncHttpxClient(verify=verify, timeout=args.timeout, follow_redirects=False)
    return openai.AsyncOpenAI(base_url=args.base_url.rstrip('/') + '/v1', api_key=os.environ.get('OPENAI_API_KEY') or 'none',
                              http_client=http_client, max_retries=0, timeout=args.timeout)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    outcome = asyncio.run(run(args, make_client(args)))
    with open(args.result, 'w') as handle:
        json.dump(outcome, handle, indent=1, sort_keys=True)
    print('completed %d, failed %d of %d in %.1f s (%d streamed)' % (
        outcome['completed'], outcome['failed'], args.num_prompts, outcome['duration'], outcome['streamed']))
    for text in sorted(set(outcome['errors'])):
        print('  %dx %s' % (outcome['errors'].count(text), text))
    return 0


if __name__ == '__main__':
    sys.exit(main())
