# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every input rule of the gateway role, triggered and quiet; the server keys of the upstream."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmfleet.rocm.plugins.filter.gateway_inputs import RULES, gateway_input_problems, gateway_server_keys
from input_rules import PLATFORM, UNSUPPORTED, Case, assert_every_rule_reached, apply, role_defaults, run_case

ENDPOINTS = [
    {'name': 'llmfleet-worker-0', 'address': '10.0.0.11', 'port': 8000},
    {'name': 'llmfleet-worker-1', 'address': 'fd00::11', 'port': 8001},
]
FACTS_SOURCE = 'the llmfleet_worker_endpoints facts of group gpu_nodes'
GROUPS = {'all': ['gw', 'gpu-0'], 'ungrouped': [], 'gpu_nodes': ['gpu-0'], 'gateways': ['gw']}
VALUES = apply(role_defaults('gateway'), {'gateway_endpoints': ENDPOINTS})
CTX = {'platform': PLATFORM, 'endpoints': ENDPOINTS, 'endpoints_source': 'gateway_endpoints', 'from_facts': False,
       'groups': GROUPS, 'hosts_missing': [], 'tls_files': []}
# The upstream from the facts of gateway_worker_group (gateway_endpoints empty).
FROM_FACTS = {'endpoints': ENDPOINTS, 'endpoints_source': FACTS_SOURCE, 'from_facts': True}
TLS = {'gateway_tls_certificate': '/etc/ssl/gw.pem', 'gateway_tls_key': '/etc/ssl/gw.key'}


def stat(path, exists=True, isreg=True):
    return {'item': path, 'stat': {'exists': exists, 'isreg': isreg} if exists else {'exists': False}}


def endpoints(*items):
    return {'endpoints': list(items)}


CASES = [
    Case('unsupported-system', {}, 'gateway-unsupported-system', {'platform': UNSUPPORTED}, contains='CentOS 9'),
    Case('supported-system', {}, 'gateway-unsupported-system', absent=True),

    Case('group-unknown', {'gateway_worker_group': 'inference_nodes'}, 'gateway-worker-group-unknown', FROM_FACTS,
         contains='gateway_worker_group "inference_nodes" is not a group of the inventory'),
    Case('group-known', {}, 'gateway-worker-group-unknown', FROM_FACTS, absent=True),
    Case('group-unknown-explicit-upstream', {'gateway_worker_group': 'inference_nodes'}, 'gateway-worker-group-unknown',
         absent=True),
    Case('hosts-without-fact', {}, 'gateway-hosts-without-endpoints', dict(FROM_FACTS, hosts_missing=['gpu-1', 'gpu-2']),
         contains='Hosts gpu-1, gpu-2 of group gpu_nodes have no llmfleet_worker_endpoints fact'),
    Case('hosts-without-fact-explicit-upstream', {}, 'gateway-hosts-without-endpoints', {'hosts_missing': ['gpu-1']}, absent=True),
    Case('every-host-has-fact', {}, 'gateway-hosts-without-endpoints', FROM_FACTS, absent=True),

    Case('upstream-empty-facts', {}, 'gateway-upstream-empty', dict(FROM_FACTS, endpoints=[]), contains=FACTS_SOURCE),
    Case('upstream-empty-explicit', {}, 'gateway-upstream-empty', endpoints(), contains='gateway_endpoints list no worker'),
    Case('upstream-empty-unknown-group', {'gateway_worker_group': 'nope'}, 'gateway-upstream-empty', dict(FROM_FACTS, endpoints=[]),
         absent=True),
    Case('upstream-has-workers', {}, 'gateway-upstream-empty', absent=True),

    Case('endpoint-without-port', {}, 'gateway-endpoints-malformed', endpoints(ENDPOINTS[0], {'address': '10.0.0.12'}),
         contains='1 entries of gateway_endpoints are not {address, port}: [{"address": "10.0.0.12"}]'),
    Case('endpoint-not-a-mapping', {}, 'gateway-endpoints-malformed', endpoints('10.0.0.12:8000', {'address': 5, 'port': 1}),
         contains='2 entries'),
    Case('endpoints-well-formed', {}, 'gateway-endpoints-malformed', absent=True),

    Case('address-with-brackets', {}, 'gateway-endpoint-addresses', endpoints({'address': '[fd00::11]', 'port': 8000}),
         contains='"[fd00::11]" (IPv6 without brackets)'),
    Case('address-with-space', {}, 'gateway-endpoint-addresses', endpoints({'address': 'gpu 0', 'port': 8000}), contains='"gpu 0"'),
    Case('addresses-fine', {}, 'gateway-endpoint-addresses', endpoints({'address': 'gpu-0.example', 'port': 8000}), absent=True),

    Case('port-zero', {}, 'gateway-endpoint-ports', endpoints({'address': 'a', 'port': 0}), contains='outside 1..65535: "0"'),
    Case('port-too-big', {}, 'gateway-endpoint-ports', endpoints({'address': 'a', 'port': 65536}), contains='"65536"'),
    Case('port-text', {}, 'gateway-endpoint-ports', endpoints({'address': 'a', 'port': 'http'}), contains='"http"'),
    Case('port-as-string', {}, 'gateway-endpoint-ports', endpoints({'address': 'a', 'port': '65535'}), absent=True),
    Case('ports-fine', {}, 'gateway-endpoint-ports', absent=True),

    Case('server-twice', {}, 'gateway-servers-duplicate',
         endpoints({'address': '127.0.0.1', 'port': 8001}, {'address': '127.0.0.1', 'port': 8001}),
         contains='Servers listed more than once in gateway_endpoints: 127.0.0.1:8001'),
    Case('same-address-other-port', {}, 'gateway-servers-duplicate',
         endpoints({'address': '127.0.0.1', 'port': 8001}, {'address': '127.0.0.1', 'port': 8002}), absent=True),

    Case('drained-without-port', {'gateway_drained': ['10.0.0.11']}, 'gateway-drained-format', contains='"10.0.0.11"'),
    Case('drained-ipv6-without-brackets', {'gateway_drained': ['fd00::11:8001']}, 'gateway-drained-format',
         contains='"fd00::11:8001"'),
    Case('drained-well-formed', {'gateway_drained': ['[fd00::11]:8001']}, 'gateway-drained-format', absent=True),

    Case('drained-unknown', {'gateway_drained': ['127.0.0.1:9999']}, 'gateway-drained-unknown',
         contains=['gateway_drained names 127.0.0.1:9999, which the upstream does not have',
                   '(it has 10.0.0.11:8000, [fd00::11]:8001)']),
    Case('drained-known', {'gateway_drained': ['[fd00::11]:8001']}, 'gateway-drained-unknown', absent=True),
    Case('drained-malformed-not-unknown', {'gateway_drained': ['nonsense']}, 'gateway-drained-unknown', absent=True),

    Case('drained-all', {'gateway_drained': ['10.0.0.11:8000', '[fd00::11]:8001', '10.0.0.99:8000']}, 'gateway-drained-all',
         contains='gateway_drained takes out every server (10.0.0.11:8000, [fd00::11]:8001)'),
    Case('drained-one', {'gateway_drained': ['10.0.0.11:8000']}, 'gateway-drained-all', absent=True),
    Case('drained-all-of-nothing', {}, 'gateway-drained-all', endpoints(), absent=True),

    Case('header-with-underscore', {'gateway_hash_header': 'X_Session'}, 'gateway-hash-header', contains='"X_Session"'),
    Case('header-fine', {'gateway_hash_header': 'X-User-42'}, 'gateway-hash-header', absent=True),

    Case('size-unit-unknown', {'gateway_zone_size': '64kb', 'gateway_client_max_body_size': '1t'}, 'gateway-sizes',
         contains='gateway_zone_size "64kb", gateway_client_max_body_size "1t": not an nginx size'),
    Case('size-as-number', {'gateway_rate_limit_zone_size': 1048576, 'gateway_zone_size': '1G'}, 'gateway-sizes', absent=True),

    Case('time-unit-unknown', {'gateway_read_timeout': '1 hour'}, 'gateway-times', contains='gateway_read_timeout "1 hour"'),
    Case('time-empty', {'gateway_fail_timeout': ''}, 'gateway-times', contains='gateway_fail_timeout ""'),
    Case('times-fine', {'gateway_keepalive_timeout': '500ms', 'gateway_next_upstream_timeout': 0, 'gateway_read_timeout': '1h'},
         'gateway-times', absent=True),

    Case('count-negative', {'gateway_keepalive': -1, 'gateway_rate_limit_burst': -5}, 'gateway-counts-negative',
         contains='gateway_keepalive -1, gateway_rate_limit_burst -5: must not be negative'),
    Case('counts-zero', {'gateway_keepalive': 0, 'gateway_max_fails': 0, 'gateway_next_upstream_tries': '0'},
         'gateway-counts-negative', absent=True),

    Case('keepalive-requests-zero', {'gateway_keepalive_requests': 0}, 'gateway-keepalive-requests', contains='at least 1'),
    Case('keepalive-requests-one', {'gateway_keepalive_requests': 1}, 'gateway-keepalive-requests', absent=True),

    Case('worker-connections-small', {'gateway_worker_connections': 63}, 'gateway-worker-connections', contains='is 63'),
    Case('worker-connections-64', {'gateway_worker_connections': '64'}, 'gateway-worker-connections', absent=True),

    Case('next-upstream-off-and-more', {'gateway_next_upstream': ['off', 'error']}, 'gateway-next-upstream-off',
         contains='use ["off"] alone'),
    Case('next-upstream-off-alone', {'gateway_next_upstream': ['off']}, 'gateway-next-upstream-off', absent=True),

    Case('listen-port-too-big', {'gateway_listen_port': 65536}, 'gateway-ports-range', contains='gateway_listen_port 65536'),
    Case('tls-port-negative', {'gateway_tls_port': -1}, 'gateway-ports-range', contains='gateway_tls_port -1: outside 0..65535.'),
    Case('ports-at-the-limits', {'gateway_listen_port': 0, 'gateway_tls_port': 65535}, 'gateway-ports-range', absent=True),

    Case('listen-address-bracketed', {'gateway_listen_address': '[::]'}, 'gateway-listen-address', contains='"[::]"'),
    Case('listen-address-ipv6', {'gateway_listen_address': '::'}, 'gateway-listen-address', absent=True),
    Case('listen-address-empty', {'gateway_listen_address': ''}, 'gateway-listen-address', absent=True),

    Case('tls-certificate-only', {'gateway_tls_certificate': '/etc/ssl/gw.pem'}, 'gateway-tls-pair',
         contains='Set both gateway_tls_certificate and gateway_tls_key, or neither'),
    Case('tls-key-only', {'gateway_tls_key': '/etc/ssl/gw.key'}, 'gateway-tls-pair'),
    Case('tls-both', TLS, 'gateway-tls-pair', absent=True),

    Case('tls-file-missing', TLS, 'gateway-tls-files', {'tls_files': [stat('/etc/ssl/gw.pem'), stat('/etc/ssl/gw.key', exists=False)]},
         contains='TLS files missing on the node (or not regular files): "/etc/ssl/gw.key".'),
    Case('tls-file-a-directory', TLS, 'gateway-tls-files', {'tls_files': [stat('/etc/ssl/gw.pem', isreg=False), stat('/etc/ssl/gw.key')]},
         contains='"/etc/ssl/gw.pem"'),
    Case('tls-files-present', TLS, 'gateway-tls-files', {'tls_files': [stat('/etc/ssl/gw.pem'), stat('/etc/ssl/gw.key')]}, absent=True),
    Case('tls-stat-skipped', TLS, 'gateway-tls-files', {'tls_files': [{'item': '/etc/ssl/gw.pem', 'skipped': True}]}, absent=True),

    Case('nothing-to-listen-on', {'gateway_listen_port': 0}, 'gateway-nothing-to-listen-on', contains='gateway_listen_port is 0'),
    Case('tls-only', dict(TLS, gateway_listen_port=0), 'gateway-nothing-to-listen-on', absent=True),

    Case('same-ports', dict(TLS, gateway_listen_port=8443, gateway_tls_port=8443), 'gateway-ports-same', contains='both 8443'),
    Case('same-ports-without-tls', {'gateway_listen_port': 443}, 'gateway-ports-same', absent=True),
    Case('different-ports', TLS, 'gateway-ports-same', absent=True),

    Case('tls-port-zero', dict(TLS, gateway_tls_port=0), 'gateway-tls-port-unset', contains='(1..65535) with TLS'),
    Case('tls-port-zero-without-tls', {'gateway_tls_port': 0}, 'gateway-tls-port-unset', absent=True),

    Case('rate-without-r', {'gateway_rate_limit': '20/s'}, 'gateway-rate-limit', contains='gateway_rate_limit "20/s" is not a rate'),
    Case('rate-per-hour', {'gateway_rate_limit': '20r/h'}, 'gateway-rate-limit', contains='"20r/h"'),
    Case('rate-per-minute', {'gateway_rate_limit': '600r/m'}, 'gateway-rate-limit', absent=True),
    Case('no-rate', {'gateway_rate_limit': ''}, 'gateway-rate-limit', absent=True),

    Case('api-key-short', {'gateway_api_keys': ['lab-key-0123456789abcdef', 'short key']}, 'gateway-api-keys',
         contains='gateway_api_keys has 1 key(s) that are not at least 16 characters'),
    Case('api-key-not-a-string', {'gateway_api_keys': [12345678901234567890]}, 'gateway-api-keys', contains='has 1 key(s)'),
    Case('api-keys-fine', {'gateway_api_keys': ['lab-key-0123456789abcdef', 'AbCdEfGh12345678+/==']}, 'gateway-api-keys', absent=True),

    Case('verify-path-relative', {'gateway_verify_path': 'v1/models'}, 'gateway-verify-path', contains='"v1/models" must start with /'),
    Case('verify-path-absolute', {'gateway_verify_path': '/v1/models'}, 'gateway-verify-path', absent=True),
]


@pytest.mark.parametrize('case', CASES, ids=[case.id for case in CASES])
def test_rule(case):
    run_case(RULES, VALUES, CTX, case)


def test_defaults_have_no_problem():
    assert gateway_input_problems(VALUES, PLATFORM, endpoints=ENDPOINTS, groups=GROUPS) == []


def test_defaults_from_facts_have_no_problem():
    values = apply(VALUES, {'gateway_endpoints': []})
    assert gateway_input_problems(values, PLATFORM, endpoints=ENDPOINTS, endpoints_source=FACTS_SOURCE, from_facts=True,
                                  groups=list(GROUPS)) == []


def test_no_message_shows_an_api_key():
    key = 'short-secret'
    messages = gateway_input_problems(apply(VALUES, {'gateway_api_keys': [key]}), PLATFORM, endpoints=ENDPOINTS, groups=GROUPS)
    assert messages and not any(key in message for message in messages)


@pytest.mark.parametrize('given, keys', [
    pytest.param(ENDPOINTS, ['10.0.0.11:8000', '[fd00::11]:8001'], id='ipv4-and-ipv6'),
    pytest.param([{'address': 'gpu-0', 'port': '8000'}], ['gpu-0:8000'], id='host-name-port-as-string'),
    pytest.param([{'address': '10.0.0.11'}, 'x', {'address': 7, 'port': 1}, {'address': '10.0.0.12', 'port': 8000}],
                 ['10.0.0.12:8000'], id='unusable-entries-left-out'),
    pytest.param([], [], id='empty'),
    pytest.param(None, [], id='none'),
])
def test_server_keys(given, keys):
    assert gateway_server_keys(given) == keys


def test_every_rule_is_reached():
    assert_every_rule_reached(RULES, CASES)
