# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tools/try_completions.py reads server-sent events through HTTP chunked encoding, from a local server."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.machinery
import importlib.util
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _tool():
    loader = importlib.machinery.SourceFileLoader('try_completions', os.path.join(ROOT, 'tools', 'try_completions.py'))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def sse_body(texts):
    return ''.join('data: %s\n\n' % json.dumps({'choices': [{'text': text}]}) for text in texts) + 'data: [DONE]\n\n'


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    body = b''
    chunk_size = 7

    def do_POST(self):  # noqa: N802 (the name http.server calls)
        self.rfile.read(int(self.headers['Content-Length']))
        self.send_response(200)
        self.send_header('Content-Type', 'text/event-stream')
        self.send_header('Transfer-Encoding', 'chunked')
        self.end_headers()
        for start in range(0, len(self.body), self.chunk_size):
            piece = self.body[start:start + self.chunk_size]
            self.wfile.write(b'%x\r\n%s\r\n' % (len(piece), piece))
        self.wfile.write(b'0\r\n\r\n')

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = HTTPServer(('127.0.0.1', 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever)
    thread.daemon = True
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_events_split_across_chunks_are_read_whole(server):
    Handler.body = sse_body(['Hello', ' fleet', ', "quoted"']).encode()
    url = 'http://127.0.0.1:%d' % server.server_address[1]
    texts = [text for _seconds, text in _tool().stream(url, {'stream': True}, 5)]
    assert texts == ['Hello', ' fleet', ', "quoted"']


def test_an_event_that_is_not_json_is_named(server):
    Handler.body = b'data: {"choices": [\n\ndata: [DONE]\n\n'
    url = 'http://127.0.0.1:%d' % server.server_address[1]
    with pytest.raises(RuntimeError, match='sent an event that is not JSON'):
        list(_tool().stream(url, {'stream': True}, 5))
