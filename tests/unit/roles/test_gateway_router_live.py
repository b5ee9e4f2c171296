# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gateway's router for real: vllm-router started with the role's command line and workers file, in front of
stand-in workers, drained and put back through its API as the role does (only the differences, URLs urlencoded).

It needs the vllm-router binary of the pinned version, named by LLMFLEET_VLLM_ROUTER: `make test` makes it with
tests/tools/vllm-router.sh (a venv with the lab router recipe's pinned wheels). It fails without it rather than
skipping:

    LLMFLEET_VLLM_ROUTER=$(tests/tools/vllm-router.sh) PYTHONPATH=$PWD/.collections \\
        .venv/bin/python -m pytest -q -p no:cacheprovider tests/unit/roles/test_gateway_router_live.py
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from jinja2.filters import do_urlencode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_gateway_router as router  # noqa: E402  (the role's files rendered as in the unit tests)

BINARY = os.environ.get('LLMFLEET_VLLM_ROUTER', '')


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


class _Worker(BaseHTTPRequestHandler):
    """A stand-in vLLM worker: /health, the render call cache_aware makes, completions; records path and key."""
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def _answer(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self):
        length = int(self.headers.get('Content-Length') or 0)
        self.rfile.read(length)
        self.server.seen.append((self.command, self.path, self.headers.get('Authorization')))

    def do_GET(self):
        self._record()
        if self.path == '/health' and getattr(self.server, 'sick', False):
            self.send_response(503)
            self.send_header('Content-Length', '0')
            self.end_headers()
            return
        self._answer({})

    def do_POST(self):
        self._record()
        if self.path.endswith('/render'):
            return self._answer({'prompt_token_ids': [1, 2, 3]})
        return self._answer({'id': 'x', 'object': 'text_completion', 'choices': [{'text': str(self.server.server_port), 'index': 0}]})


@pytest.fixture
def workers():
    servers = []
    for _index in range(3):
        server = ThreadingHTTPServer(('127.0.0.1', 0), _Worker)
        server.seen = []
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    yield servers
    for server in servers:
        server.shutdown()


def _get(url):
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read().decode())


def _metrics(port):
    with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port, timeout=10) as answer:
        return answer.read().decode()


def _post(url, body=None, headers=None):
    request = urllib.request.Request(url, data=body, method='POST', headers=headers or {})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return answer.status, answer.read().decode()


def test_the_router_runs_the_roles_command_line_and_drains_through_its_api(workers, tmp_path):
    assert BINARY and os.access(BINARY, os.X_OK), 'set LLMFLEET_VLLM_ROUTER to a vllm-router binary (tests/tools/vllm-router.sh makes one)'
    port, metrics = _free_port(), _free_port()
    endpoints = [{'address': '127.0.0.1', 'port': server.server_port} for server in workers]
    keys = ['127.0.0.1:%d' % server.server_port for server in workers]
    values = dict(router.ROUTER, gateway_endpoints=endpoints, gateway_router_port=port, gateway_router_metrics_port=metrics,
                  gateway_drained=[keys[2]], gateway_router_health_check_interval=1)
    argv = router._value('_gateway_router_argv', values)
    line = [text for text in router._render(router.WORKERS, values).split('\n') if text and not text.startswith('#')][0]
    urls = line.split('=', 1)[1].strip('"').split()
    assert urls == ['http://' + key for key in keys[:2]]
    log = open(str(tmp_path / 'router.log'), 'w')
    process = subprocess.Popen([BINARY] + argv[1:] + ['--worker-urls'] + urls, stdout=log, stderr=subprocess.STDOUT)
    try:
        base = 'http://127.0.0.1:%d' % port
        for _attempt in range(60):
            try:
                listed = _get(base + '/list_workers')
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail('the router did not answer: %s' % (tmp_path / 'router.log'))
        assert router.gateway_router_changes(listed, urls)['changed'] is False
        # A request carries the worker key (nginx's header); the router passes it on, render call included.
        status, _body = _post(base + '/v1/completions', b'{"model":"m","prompt":"hello","max_tokens":2}',
                              {'Authorization': 'Bearer worker-key-0123456789', 'Content-Type': 'application/json'})
        assert status == 200
        posted = [seen for server in workers for seen in server.seen if seen[0] == 'POST']
        assert posted and all(seen[2] == 'Bearer worker-key-0123456789' for seen in posted)
        assert not workers[2].seen
        # Drain worker 0 and put worker 2 back, as the role does: adds first, then removals, only the differences.
        wanted = router.gateway_router_urls(endpoints, drained=[keys[0]])
        sync = router.gateway_router_changes(_get(base + '/list_workers'), wanted)
        assert sync == {'remove': ['http://' + keys[0]], 'add': ['http://' + keys[2]], 'changed': True}
        for url in sync['add']:
            assert _post('%s/add_worker?url=%s' % (base, do_urlencode(url)))[0] == 200
        for url in sync['remove']:
            assert _post('%s/remove_worker?url=%s' % (base, do_urlencode(url)))[0] == 200
        assert router.gateway_router_changes(_get(base + '/list_workers'), wanted)['changed'] is False
        before = len(workers[0].seen)
        for _request in range(6):
            _post(base + '/v1/completions', b'{"model":"m","prompt":"another prompt","max_tokens":2}',
                  {'Authorization': 'Bearer worker-key-0123456789', 'Content-Type': 'application/json'})
        assert [seen for seen in workers[0].seen[before:] if seen[0] == 'POST'] == []
        # Its metrics on loopback, read as the role reads them: the listed workers healthy, nothing held for the drained
        # one; a listed worker that stops answering its health checks is held unhealthy, and taken back at once by a
        # removal and an addition once it answers again (what the roll's drain and put-back do).
        readings = router.gateway_router_workers(_metrics(metrics))
        assert all(readings[url]['healthy'] for url in wanted), readings
        assert readings.get('http://' + keys[0], {'running': 0})['running'] == 0
        workers[1].sick = True
        deadline = time.time() + 60
        while router.gateway_router_workers(_metrics(metrics))['http://' + keys[1]]['healthy'] and time.time() < deadline:
            time.sleep(0.5)
        assert router.gateway_router_workers(_metrics(metrics))['http://' + keys[1]]['healthy'] is False
        workers[1].sick = False
        url = 'http://' + keys[1]
        assert _post('%s/remove_worker?url=%s' % (base, do_urlencode(url)))[0] == 200
        assert _post('%s/add_worker?url=%s' % (base, do_urlencode(url)))[0] == 200
        assert router.gateway_router_workers(_metrics(metrics))[url]['healthy'] is True
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()
