# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fast stand-in for a vLLM worker: streams completions at a GPU worker's pace, on loopback, with no model.

Python's standard library only (asyncio streams, HTTP/1.1 with keep-alive). It answers what the gateway and
vllm-router 0.1.17 ask of a worker:

- POST /v1/completions: with "stream": true, Server-Sent Events in vLLM's format (one token per event:
  ``data: {"id":...,"object":"text_completion","choices":[{"index":0,"text":"t","logprobs":null,"finish_reason":null}]}``,
  the last with finish_reason "length", then ``data: [DONE]``), chunked; without it one JSON answer. The first
  token comes --ttft-ms after the request, then one every --itl-ms, each at its own scheduled time (a late
  wake-up does not push the next token back), max_tokens of them (--max-tokens when the request has none);
- POST .../render (the call vllm-router's cache_aware policy makes before placing a request): token ids;
- GET /health: 200; GET /v1/models: the one model; any other GET: 200 with ``{}``.

    python3 path_cost_upstream.py --port 18001 --port 18002 --ttft-ms 20 --itl-ms 2

Several --port: one server per port in this process (the benchmark starts one process per worker). It prints
``ready <port> ...`` once listening, and stops on SIGTERM or SIGINT.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import asyncio
import json
import signal
import sys
import time

MODEL = 'stand-in'


def sse_event(payload):
    """One Server-Sent Event as vLLM writes it."""
    if isinstance(payload, str):
        return ('data: %s\n\n' % payload).encode()
    return ('data: %s\n\n' % json.dumps(payload, separators=(',', ':'))).encode()


def completion_chunk(request_id, created, text, finish_reason=None):
    return {'id': request_id, 'object': 'text_completion', 'created': created, 'model': MODEL,
            'choices': [{'index': 0, 'text': text, 'logprobs': None, 'finish_reason': finish_reason, 'stop_reason': None}]}


def chunked(data):
    """One chunk of a chunked HTTP/1.1 body."""
    return b'%x\r\n%s\r\n' % (len(data), data)


async def read_request(reader):
    """(method, path, headers, body) of the next request on the connection; None when the client closed it."""
    line = await reader.readline()
    if not line:
        return None
    method, path, _version = line.decode('latin-1').rstrip('\r\n').split(' ', 2)
    headers = {}
    while True:
        line = await reader.readline()
        if line in (b'\r\n', b'\n', b''):
            break
        name, _sep, value = line.decode('latin-1').partition(':')
        headers[name.strip().lower()] = value.strip()
    if headers.get('transfer-encoding', '').lower() == 'chunked':
        body = b''
        while True:
            size = int((await reader.readline()).split(b';')[0].strip() or b'0', 16)
            if size == 0:
                await reader.readline()
                break
            body += await reader.readexactly(size)
            await reader.readline()
    else:
        body = await reader.readexactly(int(headers.get('content-length') or 0))
    return method, path, headers, body


class StandIn:
    def __init__(self, ttft_ms, itl_ms, max_tokens):
        self.ttft = ttft_ms / 1000.0
        self.itl = itl_ms / 1000.0
        self.max_tokens = max_tokens
        self.count = 0

    @staticmethod
    def _json(writer, body, status='200 OK'):
        data = json.dumps(body).encode()
        writer.write(b'HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s'
                     % (status.encode(), len(data), data))

    async def _complete(self, writer, request, started):
        self.count += 1
        request_id = 'cmpl-%d' % self.count
        created = int(time.time())
        tokens = int(request.get('max_tokens') or self.max_tokens)
        loop = asyncio.get_running_loop()
        if not request.get('stream'):
            await asyncio.sleep(max(0.0, started + self.ttft + (tokens - 1) * self.itl - loop.time()))
            answer = completion_chunk(request_id, created, 't' * tokens, 'length')
            answer['usage'] = {'prompt_tokens': 1, 'completion_tokens': tokens, 'total_tokens': tokens + 1}
            return self._json(writer, answer)
        writer.write(b'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n'
                     b'Transfer-Encoding: chunked\r\n\r\n')
        for position in range(tokens):
            delay = started + self.ttft + position * self.itl - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            last = position == tokens - 1
            writer.write(chunked(sse_event(completion_chunk(request_id, created, 't', 'length' if last else None))))
            await writer.drain()
        writer.write(chunked(sse_event('[DONE]')) + b'0\r\n\r\n')
        return None

    async def handle(self, reader, writer):
        try:
            while True:
                request = await read_request(reader)
                if request is None:
                    break
                started = asyncio.get_running_loop().time()
                method, path, _headers, body = request
                path = path.split('?', 1)[0]
                if method == 'POST' and path.endswith('/render'):
                    self._json(writer, {'prompt_token_ids': list(range(1, 1 + max(1, len(body) // 4)))})
                elif method == 'POST' and path == '/v1/completions':
                    await self._complete(writer, json.loads(body.decode() or '{}'), started)
                elif method == 'GET' and path == '/v1/models':
                    self._json(writer, {'object': 'list', 'data': [{'id': MODEL, 'object': 'model', 'owned_by': 'llmfleet'}]})
                elif method == 'GET':
                    self._json(writer, {})
                else:
                    self._json(writer, {'error': {'message': 'not found', 'code': 404}}, '404 Not Found')
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


async def serve(ports, stand_in, host='127.0.0.1', ready=None):
    """Serve on every port until cancelled; ready(port) after each starts listening (port 0: a free one)."""
    servers = []
    for port in ports:
        server = await asyncio.start_server(stand_in.handle, host, port, backlog=1024)
        servers.append(server)
        if ready:
            ready(server.sockets[0].getsockname()[1])
    try:
        await asyncio.Event().wait()
    finally:
        for server in servers:
            server.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0], allow_abbrev=False)
    parser.add_argument('--port', type=int, action='append', required=True, help='a port on 127.0.0.1 (repeat for each)')
    parser.add_argument('--ttft-ms', type=float, default=20.0, help='time to the first token')
    parser.add_argument('--itl-ms', type=float, default=2.0, help='time between tokens of one stream')
    parser.add_argument('--max-tokens', type=int, default=16, help='tokens of a request without max_tokens')
    args = parser.parse_args(argv)
    stand_in = StandIn(args.ttft_ms, args.itl_ms, args.max_tokens)

    def ready(port):
        print('ready %d ttft_ms=%g itl_ms=%g' % (port, args.ttft_ms, args.itl_ms))
        sys.stdout.flush()

    loop = asyncio.new_event_loop()
    task = loop.create_task(serve(args.port, stand_in, ready=ready))
    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, task.cancel)
    try:
        loop.run_until_complete(task)
    except asyncio.CancelledError:
        pass
    finally:
        loop.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
