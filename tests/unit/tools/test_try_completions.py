# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tools/try_completions.py against local stubs in the OpenAI shapes: plain HTTP and HTTPS with a
throwaway certificate authority made here by openssl; keys, errors and streaming."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.machinery
import importlib.util
import json
import os
import shutil
import socket
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip('openai')

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
KEY = 'client-key-0123456789'


def _tool():
    loader = importlib.machinery.SourceFileLoader('try_completions', os.path.join(ROOT, 'tools', 'try_completions.py'))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


tool = _tool()


def sse_body(texts):
    chunks = [{'id': 'cmpl-1', 'object': 'text_completion', 'created': 1, 'model': 'tiny',
               'choices': [{'index': 0, 'text': text, 'finish_reason': None, 'logprobs': None}]} for text in texts]
    return (''.join('data: %s\n\n' % json.dumps(chunk) for chunk in chunks) + 'data: [DONE]\n\n').encode()


COMPLETION = {'id': 'cmpl-1', 'object': 'text_completion', 'created': 1, 'model': 'tiny',
              'choices': [{'index': 0, 'text': ' of the fleet', 'finish_reason': 'length', 'logprobs': None}],
              'usage': {'prompt_tokens': 4, 'completion_tokens': 3, 'total_tokens': 7}}
CHAT = {'id': 'chat-1', 'object': 'chat.completion', 'created': 1, 'model': 'tiny',
        'choices': [{'index': 0, 'finish_reason': 'stop', 'message': {'role': 'assistant', 'content': 'Hello, fleet.'}}],
        'usage': {'prompt_tokens': 4, 'completion_tokens': 3, 'total_tokens': 7}}


class Handler(BaseHTTPRequestHandler):
    """An OpenAI-shaped stub: 401 without the key (when one is required), 404 for another model."""

    protocol_version = 'HTTP/1.1'
    required_key = KEY
    stream_body = sse_body(['Hello', ' fleet', ', "quoted"'])
    chunk_size = 7
    delay = 0.0
    redirect = None
    seen = []

    def _json(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):  # noqa: N802 (the name http.server calls)
        body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
        Handler.seen.append((self.path, self.headers.get('Authorization')))
        if self.delay:
            time.sleep(self.delay)
        if self.redirect:
            self._json(301, {'error': 'moved'}, [('Location', self.redirect)])
            return
        if self.required_key and self.headers.get('Authorization') != 'Bearer %s' % self.required_key:
            self._json(401, {'error': {'message': 'Unauthorized', 'type': 'invalid_request_error', 'code': 401}})
            return
        if body.get('model') != 'tiny':
            self._json(404, {'error': {'message': 'The model `%s` does not exist.' % body.get('model'),
                                       'type': 'NotFoundError', 'code': 404}})
            return
        if self.path == '/v1/chat/completions':
            self._json(200, CHAT)
        elif self.path == '/v1/completions' and body.get('stream'):
            self.send_response(200)
            self.send_header('Content-Type', 'text/event-stream')
            self.send_header('Transfer-Encoding', 'chunked')
            self.end_headers()
            for start in range(0, len(self.stream_body), self.chunk_size):
                piece = self.stream_body[start:start + self.chunk_size]
                self.wfile.write(b'%x\r\n%s\r\n' % (len(piece), piece))
            self.wfile.write(b'0\r\n\r\n')
        elif self.path == '/v1/completions':
            self._json(200, COMPLETION)
        else:
            self._json(404, {'error': {'message': 'Not Found', 'type': 'NotFoundError', 'code': 404}})

    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        """A client that refused the certificate ends the handshake: nothing to print."""


@pytest.fixture
def stub(monkeypatch):
    """Start a server; yields start(context=None) -> base URL. Handler settings are reset per test."""
    for name, value in (('required_key', KEY), ('stream_body', sse_body(['Hello', ' fleet', ', "quoted"'])),
                        ('delay', 0.0), ('redirect', None), ('seen', [])):
        monkeypatch.setattr(Handler, name, value)
    servers = []

    def start(context=None):
        httpd = Server(('127.0.0.1', 0), Handler)
        if context is not None:
            httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
        thread = threading.Thread(target=httpd.serve_forever, kwargs={'poll_interval': 0.05})
        thread.daemon = True
        thread.start()
        servers.append(httpd)
        return '%s://127.0.0.1:%d' % ('https' if context else 'http', httpd.server_address[1])

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope='module')
def pki(tmp_path_factory):
    """A throwaway CA, a server certificate for 127.0.0.1 signed by it, and another CA that signed nothing."""
    if not shutil.which('openssl'):
        pytest.skip('openssl is needed to make the test certificates')
    base = tmp_path_factory.mktemp('pki')

    def openssl(*argv):
        subprocess.run(('openssl',) + argv, cwd=str(base), check=True, capture_output=True)

    for ca in ('ca', 'other-ca'):
        openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=llmfleet test %s' % ca,
                '-keyout', ca + '.key', '-out', ca + '.pem')
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', 'server.key', '-out', 'server.csr')
    (base / 'san.cnf').write_text('subjectAltName=IP:127.0.0.1\n')
    openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2',
            '-extfile', 'san.cnf', '-out', 'server.pem')
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(base / 'server.pem'), str(base / 'server.key'))
    return {'context': context, 'ca': str(base / 'ca.pem'), 'other_ca': str(base / 'other-ca.pem')}


def run(capsys, argv, environ=None):
    rc = tool.run(['--model', 'tiny', '--timeout', '5'] + argv, {} if environ is None else environ)
    out = capsys.readouterr()
    assert 'Traceback' not in out.out + out.err
    return rc, out.out


def test_three_answers_with_the_key_from_the_environment(stub, capsys):
    rc, out = run(capsys, ['--url', stub()], {'OPENAI_API_KEY': KEY})
    assert rc == 0, out
    assert "answer: ' of the fleet'" in out and '3 tokens' in out
    assert "'Hello'" in out and "' fleet'" in out and "', \"quoted\"'" in out and '3 chunks' in out
    assert "assistant: 'Hello, fleet.'" in out
    assert 'plain HTTP: nothing is encrypted' in out
    assert [path for path, _auth in Handler.seen] == ['/v1/completions', '/v1/completions', '/v1/chat/completions']
    assert KEY not in out


def test_the_key_file_wins_over_the_environment(stub, capsys, tmp_path):
    key_file = tmp_path / 'client.key'
    key_file.write_text(KEY + '\n')
    rc, out = run(capsys, ['--url', stub() + '/v1/', '--api-key-file', str(key_file)], {'OPENAI_API_KEY': 'other'})
    assert rc == 0, out
    assert set(auth for _path, auth in Handler.seen) == {'Bearer ' + KEY}
    assert 'the key in %s' % key_file in out


def test_without_a_key_no_authorization_is_sent(stub, capsys, monkeypatch):
    monkeypatch.setattr(Handler, 'required_key', None)
    rc, out = run(capsys, ['--url', stub()])
    assert rc == 0, out
    assert set(auth for _path, auth in Handler.seen) == {None}
    assert 'no key' in out


def test_there_is_no_option_for_the_key_itself(capsys):
    with pytest.raises(SystemExit) as exc:
        tool.parse_args(['--url', 'https://gw', '--model', 'tiny', '--api-key', KEY])
    assert exc.value.code == 2


@pytest.mark.parametrize('url', ['gw:443', 'ftp://gw', 'https://'], ids=['no-scheme', 'ftp', 'no-host'])
def test_a_url_that_is_not_http_is_refused(url, capsys):
    with pytest.raises(SystemExit) as exc:
        tool.parse_args(['--url', url, '--model', 'tiny'])
    assert exc.value.code == 2
    assert '--url must be an http:// or https:// URL' in capsys.readouterr().err


@pytest.mark.parametrize('content, message', [
    (None, 'cannot read --api-key-file'), ('', 'is empty'), ('\n  \n', 'is empty')], ids=['missing', 'empty', 'blank'])
def test_a_key_file_that_holds_no_key_is_named(content, message, capsys, tmp_path):
    key_file = tmp_path / 'client.key'
    if content is not None:
        key_file.write_text(content)
    rc, out = run(capsys, ['--url', 'http://127.0.0.1:9', '--api-key-file', str(key_file)])
    assert rc == 1
    assert 'FAILED: ' in out and message in out and str(key_file) in out


def test_401_says_where_the_key_goes(stub, capsys):
    rc, out = run(capsys, ['--url', stub()], {'OPENAI_API_KEY': 'wrong'})
    assert rc == 1
    assert '401 from' in out and 'OPENAI_API_KEY' in out and '--api-key-file' in out and 'Unauthorized' in out
    assert 'the key in $OPENAI_API_KEY' in out


def test_401_without_a_key_says_none_was_sent(stub, capsys):
    rc, out = run(capsys, ['--url', stub()])
    assert rc == 1
    assert '401 from' in out and 'got no key' in out


def test_404_names_the_model(stub, capsys):
    rc, out = run(capsys, ['--url', stub(), '--model', 'huge'], {'OPENAI_API_KEY': KEY})
    assert rc == 1
    assert "404 from" in out and "model 'huge'" in out and 'does not exist' in out and '/models' in out


def test_a_redirect_is_reported_not_followed(stub, capsys, monkeypatch):
    monkeypatch.setattr(Handler, 'redirect', 'https://gw.example/v1/completions')
    rc, out = run(capsys, ['--url', stub()], {'OPENAI_API_KEY': KEY})
    assert rc == 1
    assert 'answered 301, a redirect to https://gw.example/v1/completions: not followed' in out
    assert len(Handler.seen) == 1


def test_connection_refused_names_host_and_port(capsys):
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    rc, out = run(capsys, ['--url', 'http://127.0.0.1:%d' % port])
    assert rc == 1
    assert 'connection refused by 127.0.0.1 port %d' % port in out


def test_a_timeout_is_named(stub, capsys, monkeypatch):
    monkeypatch.setattr(Handler, 'delay', 2.0)
    rc = tool.run(['--url', stub(), '--model', 'tiny', '--timeout', '0.5'], {'OPENAI_API_KEY': KEY})
    out = capsys.readouterr().out
    assert rc == 1
    assert 'no answer from' in out and 'within 0.5 s (--timeout)' in out


def test_an_event_that_is_not_json_is_named(stub, capsys, monkeypatch):
    monkeypatch.setattr(Handler, 'stream_body', b'data: {"choices": [\n\ndata: [DONE]\n\n')
    rc, out = run(capsys, ['--url', stub()], {'OPENAI_API_KEY': KEY})
    assert rc == 1
    assert 'sent an event that is not JSON' in out


def test_a_single_chunk_fails_the_stream(stub, capsys, monkeypatch):
    monkeypatch.setattr(Handler, 'stream_body', sse_body(['all at once']))
    rc, out = run(capsys, ['--url', stub()], {'OPENAI_API_KEY': KEY})
    assert rc == 1
    assert 'FAILED: 1 chunk(s)' in out and "assistant: 'Hello, fleet.'" in out


def test_https_without_the_ca_fails_verification(stub, pki, capsys):
    rc, out = run(capsys, ['--url', stub(pki['context'])], {'OPENAI_API_KEY': KEY})
    assert rc == 1
    assert 'is not trusted' in out and '--ca-file' in out
    assert Handler.seen == []


def test_https_with_another_ca_fails_verification(stub, pki, capsys):
    rc, out = run(capsys, ['--url', stub(pki['context']), '--ca-file', pki['other_ca']], {'OPENAI_API_KEY': KEY})
    assert rc == 1
    assert 'is not trusted' in out
    assert Handler.seen == []


def test_https_with_the_ca_answers(stub, pki, capsys):
    rc, out = run(capsys, ['--url', stub(pki['context']), '--ca-file', pki['ca']], {'OPENAI_API_KEY': KEY})
    assert rc == 0, out
    assert 'certificates checked against %s' % pki['ca'] in out and '3 chunks' in out
    assert len(Handler.seen) == 3


def test_https_spoken_to_a_plain_http_port_is_named(stub, pki, capsys):
    url = stub().replace('http://', 'https://')
    rc, out = run(capsys, ['--url', url, '--ca-file', pki['ca']], {'OPENAI_API_KEY': KEY})
    assert rc == 1
    assert 'TLS handshake' in out and 'not plain HTTP' in out


def test_a_ca_file_that_is_not_pem_is_named(capsys, tmp_path):
    bad = tmp_path / 'ca.pem'
    bad.write_text('not a certificate\n')
    rc, out = run(capsys, ['--url', 'https://127.0.0.1:9', '--ca-file', str(bad)])
    assert rc == 1
    assert 'cannot use --ca-file %s' % bad in out
