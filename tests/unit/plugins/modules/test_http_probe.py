# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""http_probe run as Ansible runs it, against an HTTP server on loopback that answers as a worker or an exporter
would: a page, a guarded API, one that is not ready for its first requests, and a port where nothing listens."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

KEY = 'probe-test-worker-key-0123456789'


class Handler(BaseHTTPRequestHandler):
    seen = []
    not_ready = [0]

    def log_message(self, *args):
        pass

    def _send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        Handler.seen.append(('GET', self.path))
        if self.path == '/metrics':
            self._send(200, {'up': 1})
        elif self.path == '/health':
            if Handler.not_ready[0] > 0:
                Handler.not_ready[0] -= 1
                self._send(503, {'error': 'loading the model'})
            else:
                self._send(200, {})
        elif self.path == '/v1/models':
            if self.headers.get('Authorization') == 'Bearer ' + KEY:
                self._send(200, {'data': []})
            else:
                self._send(401, {'error': 'Unauthorized'})
        else:
            self._send(404, {'error': 'no such page'})

    def do_POST(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = json.loads(self.rfile.read(length) or b'null')
        Handler.seen.append(('POST', self.path, self.headers.get('Content-Type'), body))
        if self.headers.get('Authorization') != 'Bearer ' + KEY:
            self._send(401, {'error': 'Unauthorized'})
        else:
            self._send(200, {'choices': [{'text': 'Hi'}]})


@pytest.fixture
def server():
    Handler.seen = []
    Handler.not_ready = [0]
    httpd = HTTPServer(('127.0.0.1', 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield 'http://127.0.0.1:%d' % httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def free_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def test_requests_in_order_until_each_is_answered(node, server):
    Handler.not_ready[0] = 2
    result = node.run('http_probe', requests=[
        {'name': 'readiness', 'url': server + '/health', 'retries': 5, 'delay': 0},
        {'name': 'one token', 'url': server + '/v1/completions', 'method': 'post', 'timeout': 5,
         'body': {'model': 'm', 'prompt': 'Hello', 'max_tokens': 1}, 'headers': {'Authorization': 'Bearer ' + KEY}},
        {'name': 'refused without the key', 'url': server + '/v1/models', 'status': [401]},
        {'url': server + '/metrics'},
    ])
    assert result.get('failed') is not True, result
    assert result['changed'] is False
    assert [(item['name'], item['status'], item['attempts']) for item in result['results']] == [
        ('readiness', 200, 3), ('one token', 200, 1), ('refused without the key', 401, 1), (server + '/metrics', 200, 1)]
    assert Handler.seen[3] == ('POST', '/v1/completions', 'application/json', {'model': 'm', 'prompt': 'Hello', 'max_tokens': 1})
    # The key is sent, never shown.
    assert KEY not in json.dumps(result)


def test_the_first_request_never_answered_fails_and_stops(node, server):
    dead = 'http://127.0.0.1:%d/metrics' % free_port()
    result = node.run('http_probe', requests=[
        {'url': server + '/metrics'},
        {'name': 'the nginx exporter', 'url': dead, 'retries': 1, 'delay': 0},
        {'url': server + '/health'},
    ])
    assert result['failed'] is True
    assert result['msg'].startswith('the nginx exporter: %s answered -1 (wanted 200) after 2 attempt(s): ' % dead)
    assert [item['status'] for item in result['results']] == [200, -1]
    assert ('GET', '/health') not in Handler.seen


def test_a_wrong_status_names_the_answer(node, server):
    result = node.run('http_probe', requests=[{'name': 'guarded', 'url': server + '/v1/models'}])
    assert result['failed'] is True
    assert result['msg'] == 'guarded: %s/v1/models answered 401 (wanted 200) after 1 attempt(s): {"error": "Unauthorized"}' % server


@pytest.mark.parametrize('request_, message', [
    ({'name': 'file', 'url': 'file:///etc/passwd'}, "file has the URL 'file:///etc/passwd', which is not an http or https URL"),
    ({'url': 'http://127.0.0.1:1/', 'retries': -1}, 'needs retries and delay of at least 0 and a timeout above 0'),
    ({'url': 'http://127.0.0.1:1/', 'timeout': 0}, 'needs retries and delay of at least 0 and a timeout above 0'),
])
def test_bad_requests_are_refused_before_any_is_sent(node, server, request_, message):
    result = node.run('http_probe', requests=[{'url': server + '/metrics'}, request_])
    assert result['failed'] is True and message in result['msg']
    assert Handler.seen == []
