# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""benchmarks/steady_load.py against a local server that speaks OpenAI's completions: a stream whose events are cut
right after `data:` (each piece written and flushed alone, as a TCP read may end) counts as completed; a 503, a stream
that ends without its last event and a refused connection count as failed, with their error."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.machinery
import importlib.util
import json
import os
import socket
import threading
import time

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                      'benchmarks', 'steady_load.py')
_LOADER = importlib.machinery.SourceFileLoader('steady_load', SCRIPT)
load = importlib.util.module_from_spec(importlib.util.spec_from_loader(_LOADER.name, _LOADER))
_LOADER.exec_module(load)


def _event(text, finish=None):
    return json.dumps({'id': 'cmpl-1', 'object': 'text_completion', 'created': 1, 'model': 'tiny',
                       'choices': [{'index': 0, 'text': text, 'logprobs': None, 'finish_reason': finish}]})


def _answer(tokens):
    return json.dumps({'id': 'cmpl-1', 'object': 'text_completion', 'created': 1, 'model': 'tiny',
                       'choices': [{'index': 0, 'text': ' a' * tokens, 'logprobs': None, 'finish_reason': 'length'}],
                       'usage': {'prompt_tokens': 3, 'completion_tokens': tokens, 'total_tokens': tokens + 3}})


class Server(object):
    """HTTP/1.1 on 127.0.0.1, one thread per connection. mode: cut (events cut after `data:`), unfinished (the stream
    ends without finish_reason), busy (503)."""

    def __init__(self, mode):
        self.mode = mode
        self.bodies = []
        self.sock = socket.socket()
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _peer = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        data = b''
        while b'\r\n\r\n' not in data:
            data += conn.recv(65536)
        head, body = data.split(b'\r\n\r\n', 1)
        length = int([line.split(b':')[1] for line in head.split(b'\r\n') if line.lower().startswith(b'content-length')][0])
        while len(body) < length:
            body += conn.recv(65536)
        request = json.loads(body)
        request['authorization'] = [line.split(b':', 1)[1].strip().decode() for line in head.split(b'\r\n')
                                    if line.lower().startswith(b'authorization:')]
        self.bodies.append(request)
        if self.mode == 'busy':
            text = b'{"error": {"message": "No workers are currently available"}}'
            conn.sendall(b'HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\n'
                         b'Connection: close\r\n\r\n%s' % (len(text), text))
        elif not request.get('stream'):
            text = _answer(request['max_tokens']).encode()
            conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n'
                         b'Connection: close\r\n\r\n%s' % (len(text), text))
        else:
            conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n')
            events = [_event(' a') for _token in range(request['max_tokens'] - 1)]
            if self.mode != 'unfinished':
                events.append(_event(' a', 'length'))
            for event in events:
                # Each event in two pieces, the first ending right after "data:": what vLLM 0.32's client fails on.
                for piece in (b'data:', b' ' + event.encode() + b'\n\n'):
                    conn.sendall(piece)
                    time.sleep(0.002)
            if self.mode != 'unfinished':
                usage = {'prompt_tokens': 3, 'completion_tokens': request['max_tokens'], 'total_tokens': request['max_tokens'] + 3}
                if request.get('stream_options', {}).get('include_usage'):
                    last = {'id': 'cmpl-1', 'object': 'text_completion', 'created': 1, 'model': 'tiny', 'choices': [], 'usage': usage}
                    conn.sendall(b'data: %s\n\n' % json.dumps(last).encode())
                conn.sendall(b'data: [DONE]\n\n')
        conn.close()

    def close(self):
        self.sock.close()


def _run(tmp_path, port, *extra):
    result = tmp_path / 'load.json'
    assert load.main(['--base-url', 'http://127.0.0.1:%d' % port, '--model', 'tiny', '--num-prompts', '6',
                      '--request-rate', '50', '--max-concurrency', '3', '--output-len', '5', '--timeout', '10',
                      '--result', str(result)] + list(extra)) == 0
    return json.loads(result.read_text())


@pytest.fixture
def server(request, monkeypatch):
    monkeypatch.setenv('OPENAI_API_KEY', 'client-key-1')
    running = Server(request.param)
    yield running
    running.close()


@pytest.mark.parametrize('server', ['cut'], indirect=True)
def test_streams_cut_after_data_are_answers(server, tmp_path):
    outcome = _run(tmp_path, server.port)
    assert (outcome['completed'], outcome['failed'], outcome['streamed']) == (6, 0, 6), outcome['errors']
    assert outcome['output_tokens'] == 30
    assert outcome['num_prompts'] == 6 and outcome['max_concurrency'] == 3 and outcome['duration'] > 0
    assert all(body['stream'] and body['max_tokens'] == 5 and body['ignore_eos'] and body['stream_options'] == {'include_usage': True}
               for body in server.bodies)
    assert all(body['authorization'] == ['Bearer client-key-1'] for body in server.bodies)
    assert len(server.bodies) == 6


@pytest.mark.parametrize('server', ['cut'], indirect=True)
def test_a_share_of_the_requests_is_streamed(server, tmp_path):
    outcome = _run(tmp_path, server.port, '--stream-share', '0')
    assert (outcome['completed'], outcome['failed'], outcome['streamed'], outcome['output_tokens']) == (6, 0, 0, 30)
    assert not any(body.get('stream') for body in server.bodies)


@pytest.mark.parametrize('server', ['busy'], indirect=True)
def test_an_error_status_is_a_failed_request_never_retried(server, tmp_path):
    outcome = _run(tmp_path, server.port)
    assert (outcome['completed'], outcome['failed']) == (0, 6)
    assert len(server.bodies) == 6
    assert all(error.startswith('InternalServerError: ') and 'No workers are currently available' in error
               for error in outcome['errors']), outcome['errors']


@pytest.mark.parametrize('server', ['unfinished'], indirect=True)
def test_a_stream_without_its_last_event_is_a_failed_request(server, tmp_path):
    outcome = _run(tmp_path, server.port)
    assert (outcome['completed'], outcome['failed']) == (0, 6)
    assert set(outcome['errors']) == {'RuntimeError: the stream ended without a finish_reason'}


def test_a_refused_connection_is_a_failed_request(tmp_path, monkeypatch):
    monkeypatch.delenv('OPENAI_API_KEY', raising=False)
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    outcome = _run(tmp_path, port)
    assert (outcome['completed'], outcome['failed']) == (0, 6)
    assert all(error.startswith('APIConnectionError: ') for error in outcome['errors'])


def test_the_plan_is_steady_and_repeatable():
    args = load.parse_args(['--base-url', 'http://x', '--model', 'm', '--num-prompts', '2000', '--request-rate', '4',
                            '--stream-share', '0.5', '--result', 'r'])
    first = load.plan(args)
    assert first == load.plan(args)
    assert abs(sum(delay for delay, _prompt, _streamed in first) / 2000 - 0.25) < 0.02
    assert abs(sum(1 for _delay, _prompt, streamed in first if streamed) / 2000.0 - 0.5) < 0.05
    assert all(len(prompt.split()) == 64 for _delay, prompt, _streamed in first)


@pytest.mark.parametrize('argv', [['--num-prompts', '0'], ['--request-rate', '0'], ['--stream-share', '1.5'],
                                  ['--max-concurrency', '0']], ids=['prompts', 'rate', 'share', 'concurrency'])
def test_bad_arguments_are_refused(argv, capsys):
    base = {'--base-url': 'http://x', '--model': 'm', '--num-prompts': '1', '--request-rate': '1', '--result': 'r'}
    base.update(dict(zip(argv[::2], argv[1::2])))
    with pytest.raises(SystemExit):
        load.parse_args([part for pair in base.items() for part in pair])
    assert 'must be at least 1' in capsys.readouterr().err
