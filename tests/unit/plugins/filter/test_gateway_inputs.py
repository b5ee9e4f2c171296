# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every input rule of the gateway role, triggered and quiet; the server keys of the upstream."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.gateway import RULES, gateway_input_problems, gateway_server_keys
from input_rules import MIRRORED, PLATFORM, UNSUPPORTED, Case, assert_every_rule_reached, apply, role_defaults, run_case

ENDPOINTS = [
    {'name': 'llmfleet-worker-0', 'address': '10.0.0.11', 'port': 8000},
    {'name': 'llmfleet-worker-1', 'address': 'fd00::11', 'port': 8001},
]
FACTS_SOURCE = 'the llmfleet_worker_endpoints facts of group gpu_nodes'
GROUPS = {'all': ['gw', 'gpu-0'], 'ungrouped': [], 'gpu_nodes': ['gpu-0'], 'gateways': ['gw']}
CLIENT_KEY = 'lab-key-0123456789abcdef'
WORKER_KEY = 'Wk0123456789abcdefABCDEFGHIJKLMNOPQRSTUVWXYZabcd'
# The defaults and what a valid run adds: an upstream and a client key (closed by default).
VALUES = apply(role_defaults('gateway'), {'gateway_endpoints': ENDPOINTS, 'gateway_api_keys': [CLIENT_KEY],
                                          'gateway_router_wheelhouse_url': ''})
CTX = {'platform': PLATFORM, 'endpoints': ENDPOINTS, 'endpoints_source': 'gateway_endpoints', 'from_facts': False,
       'groups': GROUPS, 'hosts_missing': [], 'tls_files': [], 'worker_key': WORKER_KEY}
# The upstream from the facts of gateway_worker_group (gateway_endpoints empty).
FROM_FACTS = {'endpoints': ENDPOINTS, 'endpoints_source': FACTS_SOURCE, 'from_facts': True}
TLS = {'gateway_tls_certificate': '/etc/ssl/gw.pem', 'gateway_tls_key': '/etc/ssl/gw.key'}
# The router (cache_aware) with the wheelhouse it needs.
ROUTER = {'gateway_routing': 'cache_aware', 'gateway_router_wheelhouse_url': 'http://repo.lab:8080/wheels/router/'}


def stat(path, exists=True, isreg=True, uid=0, mode='0600', owner='root'):
    found = {'exists': exists, 'isreg': isreg, 'uid': uid, 'mode': mode, 'pw_name': owner}
    return {'item': path, 'stat': found if exists else {'exists': False}}


TLS_FILES = {'tls_files': [stat('/etc/ssl/gw.pem', mode='0644'), stat('/etc/ssl/gw.key')]}


def endpoints(*items):
    return {'endpoints': list(items)}


CASES = [
    Case('router-wheelhouse-off-mirror', {'gateway_router_wheelhouse_url': 'http://build.example/router/'},
         'gateway-outside-mirror', {'platform': MIRRORED}, contains='gateway_router_wheelhouse_url'),
    Case('router-wheelhouse-on-mirror', {'gateway_router_wheelhouse_url': 'http://mirror-1:8080/wheels/router/'},
         'gateway-outside-mirror', {'platform': MIRRORED}, absent=True),
    Case('unsupported-system', {}, 'gateway-unsupported-system', {'platform': UNSUPPORTED}, contains='CentOS 9'),
    Case('supported-system', {}, 'gateway-unsupported-system', absent=True),

    Case('group-unknown', {'gateway_worker_group': 'inference_nodes'}, 'gateway-worker-group-unknown', FROM_FACTS,
         contains='gateway_worker_group "inference_nodes" is not a group of the inventory'),
    Case('group-known', {}, 'gateway-worker-group-unknown', FROM_FACTS, absent=True),
    Case('group-unknown-explicit-upstream', {'gateway_worker_group': 'inference_nodes'}, 'gateway-worker-group-unknown',
         absent=True),
    Case('group-name-newline', {'gateway_worker_group': 'gpu\nserver { }'}, 'gateway-worker-group-name',
         contains='gateway_worker_group "gpu\\nserver { }" is not a group name'),
    Case('group-name-with-dash', {'gateway_worker_group': 'gpu-nodes.a_1'}, 'gateway-worker-group-name', absent=True),
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
    Case('drained-all-accepted', {'gateway_drained': ['10.0.0.11:8000', '[fd00::11]:8001'], 'gateway_outage_accepted': True},
         'gateway-drained-all', absent=True),
    Case('drained-all-accepted-as-text', {'gateway_drained': ['10.0.0.11:8000', '[fd00::11]:8001'],
                                          'gateway_outage_accepted': 'yes'}, 'gateway-drained-all', contains='every server'),
    Case('drained-one', {'gateway_drained': ['10.0.0.11:8000']}, 'gateway-drained-all', absent=True),
    Case('drained-all-of-nothing', {}, 'gateway-drained-all', endpoints(), absent=True),

    Case('header-with-underscore', {'gateway_hash_header': 'X_Session'}, 'gateway-hash-header', contains='"X_Session"'),
    Case('header-fine', {'gateway_hash_header': 'X-User-42'}, 'gateway-hash-header', absent=True),

    Case('size-unit-unknown', {'gateway_zone_size': '64kb', 'gateway_client_max_body_size': '1t'}, 'gateway-sizes',
         contains='gateway_zone_size "64kb", gateway_client_max_body_size "1t": not an nginx size'),
    Case('proxy-buffer-size-injected', {'gateway_proxy_buffer_size': '16k;\nproxy_buffering on'}, 'gateway-sizes',
         contains='gateway_proxy_buffer_size "16k;\\nproxy_buffering on"'),
    Case('size-injected', {'gateway_conn_limit_zone_size': '10m;\nlimit_conn_zone x'}, 'gateway-sizes',
         contains='gateway_conn_limit_zone_size "10m;\\nlimit_conn_zone x"'),
    Case('size-as-number', {'gateway_rate_limit_zone_size': 1048576, 'gateway_zone_size': '1G'}, 'gateway-sizes', absent=True),

    Case('time-unit-unknown', {'gateway_read_timeout': '1 hour'}, 'gateway-times', contains='gateway_read_timeout "1 hour"'),
    Case('time-empty', {'gateway_fail_timeout': ''}, 'gateway-times', contains='gateway_fail_timeout ""'),
    Case('times-fine', {'gateway_keepalive_timeout': '500ms', 'gateway_next_upstream_timeout': 0, 'gateway_read_timeout': '1h'},
         'gateway-times', absent=True),

    Case('count-negative', {'gateway_keepalive': -1, 'gateway_rate_limit_burst': -5}, 'gateway-counts-negative',
         contains='gateway_keepalive -1, gateway_rate_limit_burst -5: must not be negative'),
    Case('count-injected', {'gateway_conn_limit_per_client': '10;\nreturn 200'}, 'gateway-counts-negative',
         contains='gateway_conn_limit_per_client "10;\\nreturn 200"'),
    Case('counts-zero', {'gateway_keepalive': 0, 'gateway_max_fails': 0, 'gateway_next_upstream_tries': '0'},
         'gateway-counts-negative', absent=True),

    Case('keepalive-requests-zero', {'gateway_keepalive_requests': 0}, 'gateway-keepalive-requests', contains='at least 1'),
    Case('keepalive-requests-one', {'gateway_keepalive_requests': 1}, 'gateway-keepalive-requests', absent=True),

    Case('worker-connections-small', {'gateway_worker_connections': 63}, 'gateway-worker-connections', contains='is 63'),
    Case('worker-connections-64', {'gateway_worker_connections': '64'}, 'gateway-worker-connections', absent=True),

    Case('next-upstream-off-and-more', {'gateway_next_upstream': ['off', 'error']}, 'gateway-next-upstream-off',
         contains='use ["off"] alone'),
    Case('next-upstream-off-alone', {'gateway_next_upstream': ['off']}, 'gateway-next-upstream-off', absent=True),

    Case('next-upstream-injected', {'gateway_next_upstream': ['error;\nproxy_pass http://evil', 'non_idempotent']},
         'gateway-next-upstream-cases', contains=['"error;\\nproxy_pass http://evil", "non_idempotent"', 'use cases of error']),
    Case('next-upstream-known', {'gateway_next_upstream': ['error', 'timeout', 'http_503']}, 'gateway-next-upstream-cases',
         absent=True),

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

    Case('tls-path-relative', {'gateway_tls_certificate': 'gw.pem', 'gateway_tls_key': '/etc/ssl/gw.key'}, 'gateway-tls-paths',
         contains='gateway_tls_certificate "gw.pem": not an absolute path on the gateway node'),
    Case('tls-path-injected', {'gateway_tls_certificate': '/etc/ssl/gw.pem;\nlocation /x {', 'gateway_tls_key': '/k $x'},
         'gateway-tls-paths', contains=['gateway_tls_certificate "/etc/ssl/gw.pem;\\nlocation /x {"', 'gateway_tls_key "/k $x"']),
    Case('tls-path-quote', dict(TLS, gateway_tls_key="/etc/ssl/g'w.key"), 'gateway-tls-paths', contains='gateway_tls_key'),
    Case('tls-paths-fine', dict(TLS, gateway_tls_key='/etc/letsencrypt/live/gw.example/privkey.pem'), 'gateway-tls-paths',
         absent=True),
    Case('tls-paths-unset', {}, 'gateway-tls-paths', absent=True),

    Case('tls-key-readable-by-others', TLS, 'gateway-tls-key-private',
         {'tls_files': [stat('/etc/ssl/gw.pem'), stat('/etc/ssl/gw.key', mode='0644')]},
         contains='gateway_tls_key "/etc/ssl/gw.key" is owned by "root" with mode "0644" on the node'),
    Case('tls-key-not-roots', TLS, 'gateway-tls-key-private',
         {'tls_files': [stat('/etc/ssl/gw.pem'), stat('/etc/ssl/gw.key', uid=33, owner='www-data')]}, contains='"www-data"'),
    Case('tls-key-group-writable', TLS, 'gateway-tls-key-private',
         {'tls_files': [stat('/etc/ssl/gw.pem'), stat('/etc/ssl/gw.key', mode='0660')]}, contains='"0660"'),
    Case('tls-key-0600', TLS, 'gateway-tls-key-private', TLS_FILES, absent=True),
    Case('tls-key-0640-ssl-cert', TLS, 'gateway-tls-key-private',
         {'tls_files': [stat('/etc/ssl/gw.pem'), stat('/etc/ssl/gw.key', mode='0640')]}, absent=True),
    Case('tls-key-missing-said-elsewhere', TLS, 'gateway-tls-key-private',
         {'tls_files': [stat('/etc/ssl/gw.pem'), stat('/etc/ssl/gw.key', exists=False)]}, absent=True),
    Case('tls-off-key-not-read', {}, 'gateway-tls-key-private', absent=True),

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

    Case('open-every-address', {'gateway_api_keys': []}, 'gateway-open-without-keys',
         contains=['gateway_listen_address "" listens on every address and gateway_api_keys is empty',
                   'set gateway_allow_open: true']),
    Case('open-network-address', {'gateway_api_keys': [], 'gateway_listen_address': '10.0.0.5'}, 'gateway-open-without-keys',
         contains='"10.0.0.5" listens on a network address'),
    Case('open-ipv6-any', {'gateway_api_keys': [], 'gateway_listen_address': '::'}, 'gateway-open-without-keys',
         contains='every address'),
    Case('open-on-purpose', {'gateway_api_keys': [], 'gateway_allow_open': True}, 'gateway-open-without-keys', absent=True),
    Case('open-on-loopback', {'gateway_api_keys': [], 'gateway_listen_address': '127.0.0.1'}, 'gateway-open-without-keys',
         absent=True),
    Case('open-on-ipv6-loopback', {'gateway_api_keys': [], 'gateway_listen_address': '::1'}, 'gateway-open-without-keys',
         absent=True),
    Case('closed-with-keys', {}, 'gateway-open-without-keys', absent=True),

    Case('worker-key-short', {}, 'gateway-worker-key', {'worker_key': 'short'},
         contains='llmfleet_worker_api_key is not at least 16 characters'),
    Case('worker-key-injected', {}, 'gateway-worker-key', {'worker_key': WORKER_KEY + '";\nproxy_pass http://evil;#'}),
    Case('worker-key-missing', {}, 'gateway-worker-key', {'worker_key': None}),
    Case('worker-key-fine', {}, 'gateway-worker-key', absent=True),

    Case('extra-directive-newline', {'gateway_extra_directives': ['add_header X-A 1;\nlocation /metrics { proxy_pass http://a; }']},
         'gateway-extra-directives', contains='"add_header X-A 1;\\nlocation /metrics { proxy_pass http://a; }" (more than one line)'),
    Case('extra-directive-block', {'gateway_extra_directives': ['location /metrics { return 200; }']}, 'gateway-extra-directives',
         contains='(a block ("{" or "}"))'),
    Case('extra-directive-two', {'gateway_extra_directives': ['add_header X-A 1; add_header X-B 2;']}, 'gateway-extra-directives',
         contains='(more after the ";" that ends the directive)'),
    Case('extra-directive-unterminated', {'gateway_extra_directives': ['add_header X-A 1']}, 'gateway-extra-directives',
         contains='(no ";" at the end)'),
    Case('extra-directive-open-quote', {'gateway_extra_directives': ['add_header X-A "1;']}, 'gateway-extra-directives',
         contains='(an unterminated quote)'),
    Case('extra-directive-comment', {'gateway_extra_directives': ['add_header X-A 1 # note;']}, 'gateway-extra-directives',
         contains='(a comment ("#"))'),
    Case('extra-directive-include', {'gateway_extra_directives': ['include /tmp/other.conf;']}, 'gateway-extra-directives',
         contains='(an include'),
    Case('extra-directive-no-name', {'gateway_extra_directives': ['"x" 1;', 42]}, 'gateway-extra-directives',
         contains=['(no directive name first)', '42 (not a string)']),
    Case('extra-directives-fine', {'gateway_extra_directives': ['real_ip_header X-Forwarded-For;', 'add_header X-A "a;b {c}";',
                                                                "add_header X-B 'it\\'s';", 'set_real_ip_from 10.0.0.0/8;']},
         'gateway-extra-directives', absent=True),

    Case('verify-path-relative', {'gateway_verify_path': 'v1/models'}, 'gateway-verify-path', contains='"v1/models" must start with /'),
    Case('verify-path-absolute', {'gateway_verify_path': '/v1/models'}, 'gateway-verify-path', absent=True),
    Case('verify-path-metrics', {'gateway_verify_path': '/metrics'}, 'gateway-verify-path-proxied',
         contains='gateway_verify_path "/metrics" is not a path the gateway proxies'),
    Case('verify-path-space', {'gateway_verify_path': '/v1/models x'}, 'gateway-verify-path-proxied'),
    Case('verify-path-health', {'gateway_verify_path': '/health'}, 'gateway-verify-path-proxied', absent=True),
    Case('verify-path-models', {'gateway_verify_path': '/v1/models?x=1'}, 'gateway-verify-path-proxied', absent=True),
    Case('router-without-wheelhouse', {'gateway_routing': 'cache_aware'}, 'gateway-router-wheelhouse',
         contains='gateway_routing is cache_aware and gateway_router_wheelhouse_url is ""'),
    Case('router-wheelhouse-a-path', dict(ROUTER, gateway_router_wheelhouse_url='/srv/wheels'), 'gateway-router-wheelhouse',
         contains='"/srv/wheels"'),
    Case('router-with-wheelhouse', ROUTER, 'gateway-router-wheelhouse', absent=True),
    Case('no-router-no-wheelhouse', {'gateway_routing': 'least_conn'}, 'gateway-router-wheelhouse', absent=True),

    Case('router-version-range', {'gateway_router_version': '>=0.1'}, 'gateway-router-version', contains='">=0.1" is not a version'),
    Case('router-version-with-marker', {'gateway_router_version': '0.1.17; python_version>"3"'}, 'gateway-router-version'),
    Case('router-version-pinned', {'gateway_router_version': '0.2.0rc1'}, 'gateway-router-version', absent=True),

    Case('router-base-dir-relative', {'gateway_router_base_dir': 'opt/router'}, 'gateway-router-paths',
         contains='gateway_router_base_dir "opt/router": not an absolute path'),
    Case('router-base-dir-root', {'gateway_router_base_dir': '/'}, 'gateway-router-paths', contains='gateway_router_base_dir "/"'),
    Case('router-python-space', {'gateway_router_python': '/usr/bin/python 3'}, 'gateway-router-paths',
         contains='gateway_router_python'),
    Case('router-paths-fine', {'gateway_router_base_dir': '/srv/router/'}, 'gateway-router-paths', absent=True),

    Case('router-port-zero', {'gateway_router_port': 0}, 'gateway-router-ports-range', contains='gateway_router_port 0: outside 1..65535'),
    Case('router-metrics-port-text', {'gateway_router_metrics_port': 'metrics'}, 'gateway-router-ports-range',
         contains='gateway_router_metrics_port "metrics"'),
    Case('router-ports-fine', {'gateway_router_port': '31000'}, 'gateway-router-ports-range', absent=True),

    Case('router-port-is-nginx-port', dict(ROUTER, gateway_router_port=80), 'gateway-router-ports-clash',
         contains='gateway_router_port 80 is also gateway_listen_port'),
    Case('router-port-is-metrics-port', dict(ROUTER, gateway_router_metrics_port=30000), 'gateway-router-ports-clash',
         contains='is also gateway_router_metrics_port'),
    Case('router-port-is-tls-port', dict(ROUTER, gateway_router_port=443, **TLS), 'gateway-router-ports-clash',
         contains='gateway_tls_port'),
    Case('router-port-443-without-tls', dict(ROUTER, gateway_router_port=443), 'gateway-router-ports-clash', absent=True),
    Case('router-off-port-80', {'gateway_router_port': 80}, 'gateway-router-ports-clash', absent=True),

    Case('router-cache-threshold-above-one', {'gateway_router_cache_threshold': 1.5}, 'gateway-router-cache-threshold',
         contains='gateway_router_cache_threshold 1.5 is not a share'),
    Case('router-cache-threshold-text', {'gateway_router_cache_threshold': 'high'}, 'gateway-router-cache-threshold'),
    Case('router-cache-threshold-zero', {'gateway_router_cache_threshold': 0}, 'gateway-router-cache-threshold', absent=True),

    Case('router-balance-relative-below-one', {'gateway_router_balance_rel_threshold': 0.5}, 'gateway-router-balance',
         contains='gateway_router_balance_rel_threshold 0.5 (a number, 1 or more'),
    Case('router-balance-absolute-negative', {'gateway_router_balance_abs_threshold': -1}, 'gateway-router-balance',
         contains='gateway_router_balance_abs_threshold -1'),
    Case('router-balance-fine', {'gateway_router_balance_abs_threshold': 0, 'gateway_router_balance_rel_threshold': '1'},
         'gateway-router-balance', absent=True),

    Case('router-counts-zero', {'gateway_router_health_check_interval': 0, 'gateway_router_retries': '0'}, 'gateway-router-counts',
         contains='gateway_router_health_check_interval 0, gateway_router_retries "0": must be a whole number, 1 or more.'),
    Case('router-counts-text', {'gateway_router_add_timeout': '5m'}, 'gateway-router-counts', contains='gateway_router_add_timeout "5m"'),
    Case('router-counts-one', dict((name, 1) for name in ['gateway_router_retries', 'gateway_router_circuit_breaker_timeout']),
         'gateway-router-counts', absent=True),

    Case('router-timeout-shorter-than-nginx', dict(ROUTER, gateway_router_request_timeout=1800), 'gateway-router-request-timeout',
         contains=['gateway_router_request_timeout is 1800 s, shorter than gateway_read_timeout "3600s"', 'Set it to 3600 or more.']),
    Case('router-timeout-shorter-than-hours', dict(ROUTER, gateway_read_timeout='2h'), 'gateway-router-request-timeout',
         contains='Set it to 7200'),
    Case('router-timeout-as-long', dict(ROUTER, gateway_read_timeout='60m'), 'gateway-router-request-timeout', absent=True),
    Case('router-timeout-nginx-in-ms', dict(ROUTER, gateway_read_timeout='1500ms', gateway_router_request_timeout=1),
         'gateway-router-request-timeout', contains='Set it to 2 or more'),
    Case('router-off-timeout-short', {'gateway_router_request_timeout': 10}, 'gateway-router-request-timeout', absent=True),

    Case('verify-path-relative-said-elsewhere', {'gateway_verify_path': 'v1/models'}, 'gateway-verify-path-proxied', absent=True),
]


@pytest.mark.parametrize('case', CASES, ids=[case.id for case in CASES])
def test_rule(case):
    run_case(RULES, VALUES, CTX, case)


def test_defaults_have_no_problem():
    assert gateway_input_problems(VALUES, PLATFORM, endpoints=ENDPOINTS, groups=GROUPS, worker_key=WORKER_KEY) == []


def test_defaults_from_facts_have_no_problem():
    values = apply(VALUES, {'gateway_endpoints': []})
    assert gateway_input_problems(values, PLATFORM, endpoints=ENDPOINTS, endpoints_source=FACTS_SOURCE, from_facts=True,
                                  groups=list(GROUPS), worker_key=WORKER_KEY) == []


def test_the_bare_defaults_are_closed():
    """Without client keys the defaults (every address) are refused, by that rule alone."""
    values = apply(role_defaults('gateway'), {'gateway_endpoints': ENDPOINTS})
    found = RULES.check(values, dict(CTX))
    assert [rule_id for rule_id, _message in found] == ['gateway-open-without-keys']


def test_router_with_its_wheelhouse_has_no_problem():
    assert gateway_input_problems(apply(VALUES, ROUTER), PLATFORM, endpoints=ENDPOINTS, groups=GROUPS, worker_key=WORKER_KEY) == []


def test_tls_with_files_in_order_has_no_problem():
    assert gateway_input_problems(apply(VALUES, TLS), PLATFORM, endpoints=ENDPOINTS, groups=GROUPS, worker_key=WORKER_KEY,
                                  tls_files=TLS_FILES['tls_files']) == []


def test_no_message_shows_the_worker_key():
    key = 'worker-secret;'
    messages = gateway_input_problems(VALUES, PLATFORM, endpoints=ENDPOINTS, groups=GROUPS, worker_key=key)
    assert messages and not any(key in message for message in messages)


def test_no_message_shows_an_api_key():
    key = 'short-secret'
    messages = gateway_input_problems(apply(VALUES, {'gateway_api_keys': [key]}), PLATFORM, endpoints=ENDPOINTS, groups=GROUPS,
                                      worker_key=WORKER_KEY)
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
