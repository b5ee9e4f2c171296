# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ask an OpenAI-compatible endpoint (the fleet's gateway) for three answers and show them.

    OPENAI_API_KEY=... .venv/bin/python tools/try_completions.py --url https://GATEWAY:443 --model MODEL --ca-file ca.pem
    .venv/bin/python tools/try_completions.py --url https://GATEWAY --model MODEL --api-key-file client.key
    .venv/bin/python tools/try_completions.py --url http://127.0.0.1:80 --model MODEL   (a gateway without TLS)

1. a completion; 2. the same streamed (server-sent events), each chunk printed with the time it arrived,
then whether they came one by one or in bursts; 3. a chat answer. Exits non-zero when a request fails or
the stream is not a stream of events (fewer than two, or not JSON). Arrival times are shown, not judged:
a small model on a CPU engine may send its tokens in bursts by itself; a gateway's buffering is tested
against a paced upstream in molecule's gateway scenario.

The client key comes from --api-key-file (first line of the file) or else the environment variable
OPENAI_API_KEY, never from the command line (where every user of the machine could read it); without
either, no Authorization header is sent. HTTPS certificates are checked against --ca-file or else the
system's store. Redirects are reported, not followed (a TLS gateway redirects plain HTTP to HTTPS).
Needs the `openai` package (requirements.txt): run it with the collection's .venv/bin/python.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import json
import os
import ssl
import sys
import time

try:
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover
    sys.exit('Python 3 is needed')

try:
    import openai
except ImportError:  # pragma: no cover (the venv has it)
    openai = None

PROMPT_CHAT = 'Say hello to the fleet.'


class Failure(Exception):
    """A failure explained in one message (printed without a traceback)."""


def parse_args(argv):
    # allow_abbrev=False: --api-key must not be taken for --api-key-file (its value would be shown as a file name).
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0], allow_abbrev=False)
    parser.add_argument('--url', required=True,
                        help='base URL of the gateway, e.g. https://10.89.0.14:443 or http://127.0.0.1:80 (a trailing /v1 is allowed)')
    parser.add_argument('--model', required=True, help='served model name')
    parser.add_argument('--ca-file', help='PEM file of the certificate authority that signed the gateway\'s certificate '
                                          '(default: the system\'s store)')
    parser.add_argument('--api-key-file', help='file whose first line is the client key (default: $OPENAI_API_KEY; '
                                               'there is no option for the key itself)')
    parser.add_argument('--prompt', default='The fleet of GPU nodes')
    parser.add_argument('--max-tokens', type=int, default=24)
    parser.add_argument('--timeout', type=float, default=120, help='seconds to wait for each answer')
    args = parser.parse_args(argv)
    parts = urlsplit(args.url)
    if parts.scheme not in ('http', 'https') or not parts.hostname:
        parser.error('--url must be an http:// or https:// URL with a host, not %r' % args.url)
    return args


def read_key(args, environ):
    """The client key and where it came from: (key or None, description)."""
    if args.api_key_file:
        try:
            with open(args.api_key_file) as handle:
                lines = handle.read().splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise Failure('cannot read --api-key-file %s: %s' % (args.api_key_file, getattr(exc, 'strerror', None) or exc))
        key = lines[0].strip() if lines else ''
        if not key:
            raise Failure('--api-key-file %s is empty: its first line must be the client key' % args.api_key_file)
        return key, 'the key in %s' % args.api_key_file
    key = (environ.get('OPENAI_API_KEY') or '').strip()
    if key:
        return key, 'the key in $OPENAI_API_KEY'
    return None, 'no key (neither --api-key-file nor $OPENAI_API_KEY)'


def tls_context(args):
    """verify= for the HTTP client: an SSL context with --ca-file, else True (the system's store)."""
    if not args.ca_file:
        return True
    try:
        return ssl.create_default_context(cafile=args.ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise Failure('cannot use --ca-file %s as a certificate authority (a PEM file is expected): %s'
                      % (args.ca_file, getattr(exc, 'strerror', None) or exc))


def base_url(url):
    url = url.rstrip('/')
    return url if url.endswith('/v1') else url + '/v1'


def make_client(args, key):
    # No retries: each failure is reported as it happened. No redirects followed: a POST sent to a
    # redirect would arrive as a GET, and with TLS on the plain HTTP port must never carry a request.
    http_client = openai.DefaultHttpxClient(verify=tls_context(args), follow_redirects=False, timeout=args.timeout)
    options = {'base_url': base_url(args.url), 'max_retries': 0, 'timeout': args.timeout, 'http_client': http_client}
    # No key: the client starts with an empty key provider, and each request omits Authorization explicitly
    # (extra_headers below); the client would refuse to start or to send otherwise.
    return openai.OpenAI(api_key=key or (lambda: ''), **options)


def extra_headers(key):
    return {} if key else {'Authorization': openai.omit}


def _causes(exc):
    seen = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def _error_text(exc):
    """The server's own error message from an OpenAI-shaped body ({"error": {"message": ...}} or {"error": "..."})."""
    body = getattr(exc, 'body', None)
    if isinstance(body, dict):
        error = body.get('error', body)
        if isinstance(error, dict):
            error = error.get('message') or json.dumps(error)
        return str(error)[:300]
    try:
        return exc.response.text[:300]
    except Exception:  # pragma: no cover (no body at all)
        return ''


def explain(exc, args, key_source, what):
    """One message for a failed request, naming what to do."""
    url = base_url(args.url)
    if isinstance(exc, openai.APITimeoutError):
        return '%s: no answer from %s within %g s (--timeout); the gateway or its workers are busy or gone' % (what, url, args.timeout)
    if isinstance(exc, openai.APIConnectionError):
        for cause in _causes(exc):
            if isinstance(cause, ssl.SSLCertVerificationError):
                return ('%s: the certificate of %s is not trusted (%s): give the certificate authority that signed it with '
                        '--ca-file <pem>, and use the name or address that the certificate holds in --url'
                        % (what, url, cause.verify_message or cause.reason or cause))
            if isinstance(cause, ssl.SSLError):
                return ('%s: the TLS handshake with %s failed (%s): is that port HTTPS (the gateway\'s gateway_tls_port, 443) '
                        'and not plain HTTP?' % (what, url, cause.reason or cause))
            if isinstance(cause, ConnectionRefusedError):
                parts = urlsplit(args.url)
                return ('%s: connection refused by %s port %s: nothing listens there (HTTPS: gateway_tls_port, default 443; '
                        'plain HTTP: gateway_listen_port, default 80), or a firewall rejects this client'
                        % (what, parts.hostname, parts.port or (443 if parts.scheme == 'https' else 80)))
        reason = next((str(cause) for cause in reversed(_causes(exc)) if str(cause)), type(exc).__name__)
        return '%s: cannot reach %s: %s' % (what, url, reason)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        if 300 <= status < 400:
            return ('%s: %s answered %d, a redirect to %s: not followed; use that address in --url (a TLS gateway '
                    'redirects plain HTTP to HTTPS)' % (what, url, status, exc.response.headers.get('Location', '?')))
        if status == 401:
            return ('%s: 401 from %s: the gateway wants a client key (one of gateway_api_keys) and got %s: put it in '
                    'OPENAI_API_KEY or in a file named by --api-key-file (%s)' % (what, url, key_source, _error_text(exc)))
        if status == 403:
            return '%s: 403 from %s, this client is not allowed: %s' % (what, url, _error_text(exc))
        if status == 404:
            return ('%s: 404 from %s: the path is not served there or model %r is not (the gateway proxies /v1/...; '
                    'GET %s/models lists the models): %s' % (what, url, args.model, url, _error_text(exc)))
        return '%s: %s answered %d: %s' % (what, url, status, _error_text(exc))
    return '%s: %s: %s' % (what, type(exc).__name__, exc)


def request(what, args, key_source, call):
    try:
        return call()
    except openai.OpenAIError as exc:
        raise Failure(explain(exc, args, key_source, what))


def stream_chunks(client, args, key, key_source):
    """Yield (seconds since the request, text) for each streamed chunk as it arrives."""
    what = 'POST /v1/completions (stream)'
    start = time.monotonic()
    events = request(what, args, key_source, lambda: client.completions.create(
        model=args.model, prompt=args.prompt, max_tokens=args.max_tokens, temperature=0, stream=True,
        extra_headers=extra_headers(key)))
    try:
        for chunk in events:
            yield time.monotonic() - start, ''.join(choice.text or '' for choice in chunk.choices or [])
    except ValueError as exc:  # json.JSONDecodeError: an event whose data is not JSON
        raise Failure('%s: the gateway sent an event that is not JSON (%s)' % (what, exc))
    except openai.OpenAIError as exc:
        raise Failure(explain(exc, args, key_source, what))
    finally:
        events.close()


def main(argv=None, environ=None):
    args = parse_args(argv)
    if openai is None:
        raise Failure('this tool needs the openai package (requirements.txt): run it with the collection\'s '
                      '.venv/bin/python, or pip install the openai version pinned there')
    key, key_source = read_key(args, os.environ if environ is None else environ)
    scheme = urlsplit(args.url).scheme
    print('==> %s, %s%s' % (base_url(args.url), key_source,
                            ', certificates checked against %s' % (args.ca_file or 'the system\'s store') if scheme == 'https'
                            else ' (plain HTTP: nothing is encrypted)'))
    if scheme == 'http' and args.ca_file:
        print('    --ca-file is not used: %s is plain HTTP' % args.url)
    client = make_client(args, key)
    failed = False

    print('==> 1. completion (POST %s/completions)' % base_url(args.url))
    start = time.monotonic()
    answer = request('POST /v1/completions', args, key_source, lambda: client.completions.create(
        model=args.model, prompt=args.prompt, max_tokens=args.max_tokens, temperature=0, extra_headers=extra_headers(key)))
    print('    prompt: %r' % args.prompt)
    print('    answer: %r' % answer.choices[0].text)
    print('    %s tokens in %.0f ms' % (answer.usage.completion_tokens if answer.usage else None,
                                        1000 * (time.monotonic() - start)))

    print('==> 2. streamed completion (stream: true), each chunk as it arrives')
    times = []
    for seconds, text in stream_chunks(client, args, key, key_source):
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

    print('==> 3. chat (POST %s/chat/completions)' % base_url(args.url))
    chat = request('POST /v1/chat/completions', args, key_source, lambda: client.chat.completions.create(
        model=args.model, messages=[{'role': 'user', 'content': PROMPT_CHAT}], max_tokens=args.max_tokens, temperature=0,
        extra_headers=extra_headers(key)))
    print('    user: %r' % PROMPT_CHAT)
    print('    assistant: %r' % chat.choices[0].message.content)
    return 1 if failed else 0


def run(argv=None, environ=None):
    """main() with every expected failure as one line and exit status 1."""
    try:
        return main(argv, environ)
    except Failure as exc:
        print('    FAILED: %s' % exc)
        return 1
    except (IndexError, AttributeError, TypeError, ValueError) as exc:  # an answer that is not in the OpenAI shape
        print('    FAILED: the answer is not in the OpenAI shape (%s: %s)' % (type(exc).__name__, exc))
        return 1


if __name__ == '__main__':
    sys.exit(run())
