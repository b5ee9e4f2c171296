# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gateway on the lab instance, in front of the stand-in workers of prepare.yml.

Stand-ins answer on 127.0.0.1:8001, 8002 and 8003 (drained); nothing listens on 8009 (a dead
worker). Each test tags its requests with a unique query string and reads their lines in the
gateway's JSON access log. Tests that make workers fail come last: one failure takes a server
out for 2 s (gateway_max_fails 1, gateway_fail_timeout 2s in molecule.yml).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'shared'))
from checks import assert_check_run_changes_nothing  # noqa: E402  pylint: disable=wrong-import-position

testinfra_hosts = ['podman://llmfleet-molecule-%s' % os.environ.get('MOLECULE_SCENARIO_NAME', 'gateway')]

CONFIG = '/etc/nginx/conf.d/llmfleet-gateway.conf'
ACCESS_LOG = '/var/log/nginx/llmfleet-gateway.access.log'
KEYS = ('lab-key-0123456789abcdef', 'Lab.Key+two/ABCDEFGHIJ==')
WORKER_KEY = 'lab-worker-key-0123456789abcdefABCDEF'
WORKER_KEY_FILE = '/etc/nginx/llmfleet-gateway/worker-key.conf'
AUTH = "-H 'Authorization: Bearer %s'" % KEYS[0]
LIVE = {'127.0.0.1:8001', '127.0.0.1:8002'}
DRAINED = '127.0.0.1:8003'
DEAD = '127.0.0.1:8009'

# Reads a streamed response through the gateway: when the first body bytes came, when the
# last did, and how many separate reads it took.
STREAM_PROBE = r'''
import json, sys, time, urllib.request
request = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + sys.argv[2]})
start = time.monotonic()
reads = []
with urllib.request.urlopen(request) as response:
    kind = response.headers.get("Content-Type")
    while True:
        data = response.read1(65536)
        if not data:
            break
        reads.append([time.monotonic() - start, data.decode()])
print(json.dumps({"type": kind, "reads": reads, "total": time.monotonic() - start}))
'''


def tag():
    return uuid.uuid4().hex


def curl(host, options, *urls):
    """Run curl on the instance (one process, one connection); the status code of each URL."""
    targets = ' '.join("-o /dev/null '%s'" % url for url in urls)
    return host.check_output("curl -s -w '%%{http_code}\\n' %s %s" % (options, targets)).split()


def log_lines(host, marker):
    lines = host.check_output('grep -F %s %s || true' % (marker, ACCESS_LOG)).splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def upstreams(entry):
    return [addr.strip() for addr in entry['upstream_addr'].split(',') if addr.strip()]


def test_nginx_configuration_passes_nginx_t(host):
    assert host.run('nginx -t').rc == 0
    assert host.service('nginx').is_running
    assert host.service('nginx').is_enabled


def test_default_site_is_removed(host):
    assert not host.file('/etc/nginx/sites-enabled/default').exists


def test_configuration_is_streaming_safe(host):
    text = host.file(CONFIG).content_string
    for line in ('zone llmfleet_workers 64k;', 'least_conn;', 'keepalive 32;', 'keepalive_timeout 4s;',
                 'proxy_http_version 1.1;', 'proxy_set_header Connection "";', 'proxy_buffering off;',
                 'proxy_read_timeout 3600s;', 'proxy_next_upstream error timeout;', 'proxy_next_upstream_tries 3;',
                 'server 127.0.0.1:8003 max_fails=1 fail_timeout=2s down;', 'client_max_body_size 16m;'):
        assert line in text, line
    assert 'non_idempotent' not in text.replace('No non_idempotent', '')
    # keepalive must follow the balancing method.
    assert text.index('least_conn;') < text.index('keepalive 32;')
    main = host.file('/etc/nginx/nginx.conf').content_string
    assert 'worker_connections 4096;' in main and 'worker_rlimit_nofile 8192;' in main


def test_api_keys_are_kept_private(host):
    keys = host.file('/etc/nginx/llmfleet-gateway/api-keys.conf')
    assert keys.user == 'root' and keys.mode == 0o600
    assert KEYS[0] not in host.file(CONFIG).content_string
    worker_key = host.file(WORKER_KEY_FILE)
    assert worker_key.user == 'root' and worker_key.mode == 0o600
    assert WORKER_KEY in worker_key.content_string and WORKER_KEY not in host.file(CONFIG).content_string


def test_configuration_is_closed(host):
    text = host.file(CONFIG).content_string
    for line in ('server_tokens off;', 'limit_conn llmfleet_gateway_conn 256;', 'location /v1/ {', 'location = /health {',
                 'proxy_pass http://llmfleet_workers/v1/;', 'proxy_pass http://llmfleet_workers/health;',
                 'include %s;' % WORKER_KEY_FILE):
        assert line in text, line


def test_worker_gets_the_worker_key_and_never_the_clients(host):
    for key in KEYS:
        body = json.loads(host.check_output("curl -s -H 'Authorization: Bearer %s' http://127.0.0.1/v1/models" % key))
        assert body['authorization'] == 'Bearer ' + WORKER_KEY
        assert key not in json.dumps(body)


def test_workers_health_is_proxied_with_a_key(host):
    assert curl(host, AUTH, 'http://127.0.0.1/health') == ['200']
    assert curl(host, '', 'http://127.0.0.1/health') == ['401']


def test_other_paths_answer_404_in_the_openai_shape_and_reach_no_worker(host):
    marker = tag()
    paths = ['/metrics', '/', '/v1', '/tokenize', '/version', '/gateway/error/502', '/v1/../metrics', '/v1/%2e%2e/metrics']
    for path in paths:
        out = host.check_output("curl -s --path-as-is -w ' %%{http_code}' %s 'http://127.0.0.1%s?t=%s'" % (AUTH, path, marker))
        body, code = out.rsplit(' ', 1)
        assert code == '404', (path, out)
        error = json.loads(body)['error']
        assert error['type'] == 'not_found_error' and error['code'] == 404, (path, body)
    entries = log_lines(host, marker)
    assert len(entries) == len(paths) and all(upstreams(e) == [] for e in entries), entries


def test_server_header_shows_no_version(host):
    for url in ('http://127.0.0.1/gateway/health', 'http://127.0.0.1/metrics', 'http://127.0.0.1/v1/models'):
        headers = host.check_output('curl -s -D - -o /dev/null %s' % url)
        server = [line for line in headers.splitlines() if line.lower().startswith('server:')]
        assert [line.strip() for line in server] == ['Server: nginx'], (url, headers)


def test_health_is_answered_by_nginx_without_a_key(host):
    out = host.check_output("curl -s -w ' %{http_code}' http://127.0.0.1/gateway/health")
    assert out == '{"status":"ok"}\n 200'


def test_api_key_is_required(host):
    marker = tag()
    url = 'http://127.0.0.1/v1/models?t=%s' % marker
    assert curl(host, '', url) == ['401']
    assert curl(host, "-H 'Authorization: Bearer wrong-key-0123456789'", url) == ['401']
    # Keys compare case-sensitively (plain nginx map strings would not).
    assert curl(host, "-H 'Authorization: Bearer %s'" % KEYS[0].upper(), url) == ['401']
    for key in KEYS:
        assert curl(host, "-H 'Authorization: Bearer %s'" % key, url) == ['200']
    headers = host.check_output('curl -s -D - -o /dev/null %s' % url)
    assert 'WWW-Authenticate: Bearer' in headers
    body = json.loads(host.check_output('curl -s %s' % url))
    assert body['error']['code'] == 401
    # Refused requests never reach a worker.
    assert [upstreams(e) for e in log_lines(host, marker) if e['status'] == '401'] == [[]] * 5


def test_worker_gets_http11_without_connection_header_and_a_request_id(host):
    body = json.loads(host.check_output("curl -s %s -H 'X-Request-ID: lab-%s' http://127.0.0.1/v1/models" % (AUTH, tag())))
    assert body['protocol'] == 'HTTP/1.1'
    assert body['connection'] == ''
    assert body['request_id'].startswith('lab-')
    generated = json.loads(host.check_output('curl -s %s http://127.0.0.1/v1/models' % AUTH))
    assert len(generated['request_id']) == 32


def test_requests_are_spread_over_the_live_workers_and_never_reach_the_drained_one(host):
    marker = tag()
    urls = ['http://127.0.0.1/v1/completions?t=%s-%d' % (marker, i) for i in range(12)]
    # Under the scenario's rate limit (10r/s, burst 5).
    codes = curl(host, "--rate 8/s -X POST -d '{\"prompt\":\"x\"}' %s" % AUTH, *urls)
    assert codes == ['200'] * 12
    entries = log_lines(host, marker)
    assert len(entries) == 12
    answered = [upstreams(e)[-1] for e in entries]
    assert set(answered) == LIVE, answered
    assert all(DRAINED not in upstreams(e) for e in entries)
    for entry in entries:
        for field in ('upstream_connect_time', 'upstream_header_time', 'upstream_response_time', 'request_time', 'upstream_status'):
            assert entry[field] != '', field


def test_drained_worker_got_no_request_at_all(host):
    entries = [json.loads(line) for line in host.file(ACCESS_LOG).content_string.splitlines() if line.strip()]
    assert entries
    assert all(DRAINED not in upstreams(e) for e in entries)


def test_stream_reaches_the_client_as_the_worker_sends_it(host):
    host.check_output('cat > /tmp/llmfleet-stream-probe.py <<"EOF"\n%s\nEOF' % STREAM_PROBE)
    result = json.loads(host.check_output('python3 /tmp/llmfleet-stream-probe.py http://127.0.0.1/v1/stream %s' % KEYS[0]))
    assert result['type'] == 'text/event-stream'
    reads = result['reads']
    # The stand-in sends for about 3 s; the first event must not wait for the last.
    assert result['total'] > 1.5, result
    assert reads[0][0] < 0.5, result
    assert 'data: {"n":1}' in reads[0][1]
    assert len(reads) >= 3, result
    assert ''.join(r[1] for r in reads).endswith('data: [DONE]\n\n')


def test_rate_limit_answers_429_per_client_address(host):
    # From the instance's own network address, so that loopback's budget stays for the other tests.
    address = host.check_output('hostname -I').split()[0]
    urls = ' '.join(['http://%s/v1/models' % address] * 30)
    bodies = [json.loads(line) for line in host.check_output('curl -s %s %s' % (AUTH, urls)).splitlines() if line.strip()]
    assert len(bodies) == 30
    served = [b for b in bodies if 'worker' in b]
    limited = [b for b in bodies if b.get('error', {}).get('code') == 429]
    # burst 5 (nodelay) plus what the rate refills while curl runs; the rest is refused.
    assert len(served) >= 6 and len(limited) >= 10 and len(served) + len(limited) == 30, bodies


def test_post_goes_to_another_worker_when_the_first_refuses_the_connection(host):
    time.sleep(2.5)  # the dead worker is back in rotation after fail_timeout
    marker = tag()
    urls = ['http://127.0.0.1/v1/completions?t=%s-%d' % (marker, i) for i in range(6)]
    assert curl(host, "--rate 4/s -X POST -d '{}' %s" % AUTH, *urls) == ['200'] * 6
    retried = [e for e in log_lines(host, marker) if len(upstreams(e)) > 1]
    assert retried, log_lines(host, marker)
    for entry in retried:
        assert upstreams(entry)[0] == DEAD and upstreams(entry)[-1] in LIVE
        assert entry['upstream_status'].split(', ')[-1] == '200' and entry['status'] == '200'


def test_post_that_reached_a_worker_is_never_sent_again(host):
    time.sleep(2.5)
    marker = tag()
    # Every stand-in drops the connection of /v1/close after reading the request.
    assert curl(host, "-X POST -d '{}' %s" % AUTH, 'http://127.0.0.1/v1/close?t=%s' % marker) == ['502']
    time.sleep(2.5)
    entries = log_lines(host, marker)
    assert len(entries) == 1
    reached = [addr for addr in upstreams(entries[0]) if addr != DEAD]
    assert len(reached) == 1, entries[0]


def test_get_that_failed_is_tried_on_the_next_worker(host):
    time.sleep(2.5)
    marker = tag()
    out = host.check_output("curl -s -w ' %%{http_code}' %s 'http://127.0.0.1/v1/close?t=%s'" % (AUTH, marker))
    body, code = out.rsplit(' ', 1)
    assert code == '502' and json.loads(body)['error']['code'] == 502
    entries = log_lines(host, marker)
    # Passed on (proxy_next_upstream_tries 3: up to three servers, fewer if one is out for fail_timeout).
    assert 2 <= len(upstreams(entries[0])) <= 3, entries[0]


def test_check_mode_on_the_converged_host_changes_nothing():
    assert_check_run_changes_nothing(__file__)
