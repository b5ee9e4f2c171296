# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks of the gateway role (``input_problems('gateway')``) and its server keys (``gateway_server_keys``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import (
    RuleSet, as_int, as_number, is_absolute_path, is_http_url, is_nginx_path, mirror_only_rule, show, supported_system_rule)

# What the inputs may hold.
_ADDRESS_RE = re.compile(r'^[A-Za-z0-9._:-]+\Z')
_DRAINED_RE = re.compile(r'^([A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]):[0-9]+\Z')
_HEADER_RE = re.compile(r'^[A-Za-z0-9-]+\Z')
_SIZE_RE = re.compile(r'^[0-9]+[kKmMgG]?\Z')
_TIME_RE = re.compile(r'^[0-9]+(ms|s|m|h|d)?\Z')
_RATE_RE = re.compile(r'^[1-9][0-9]*r/[sm]\Z')
_PORT_RE = re.compile(r'^[1-9][0-9]{0,4}\Z')
# Bearer token characters (RFC 6750 b64token); the key file writes them inside a regular
# expression, where only . and + need care.
_API_KEY_RE = re.compile(r'^[A-Za-z0-9._~+/-]{16,}=*\Z')
# A path written into an nginx file: absolute, and none of what nginx's grammar reads as more than
# a word (whitespace, ; { } quotes, $ variables, # comments, \ escapes).
_GROUP_RE = re.compile(r'^[A-Za-z0-9_.-]+\Z')
_DIRECTIVE_NAME_RE = re.compile(r'^[a-z_][a-z0-9_]*\Z')
# What the verify phase may ask: a path the gateway proxies (or its own health), in URL characters.
_VERIFY_PATH_RE = re.compile(r'^/(v1/[A-Za-z0-9._~/?&=%+:@,-]*|health|gateway/health)\Z')
# proxy_next_upstream's cases the role accepts (non_idempotent is refused on purpose).
_NEXT_UPSTREAM = ('error', 'timeout', 'invalid_header', 'http_500', 'http_502', 'http_503', 'http_504', 'http_403',
                  'http_404', 'http_429', 'off')

_SIZES = ('gateway_zone_size', 'gateway_client_max_body_size', 'gateway_client_body_buffer_size', 'gateway_rate_limit_zone_size',
          'gateway_conn_limit_zone_size', 'gateway_proxy_buffer_size')
_TIMES = ('gateway_keepalive_timeout', 'gateway_fail_timeout', 'gateway_connect_timeout', 'gateway_read_timeout',
          'gateway_send_timeout', 'gateway_next_upstream_timeout')
_COUNTS = ('gateway_keepalive', 'gateway_max_fails', 'gateway_next_upstream_tries', 'gateway_rate_limit_burst',
           'gateway_conn_limit_per_client')
_PORTS = ('gateway_listen_port', 'gateway_tls_port')
# The router's (cache_aware): a pip version pin, its loopback ports, and whole numbers of at least 1.
_VERSION_RE = re.compile(r'^[0-9]+(\.[0-9]+)*((a|b|rc|\.post|\.dev)[0-9]+)*\Z')
_ROUTER_PORTS = ('gateway_router_port', 'gateway_router_metrics_port')
_ROUTER_COUNTS = ('gateway_router_health_check_interval', 'gateway_router_health_check_timeout',
                  'gateway_router_health_failure_threshold', 'gateway_router_health_success_threshold', 'gateway_router_retries',
                  'gateway_router_circuit_breaker_failures', 'gateway_router_circuit_breaker_timeout',
                  'gateway_router_request_timeout', 'gateway_router_add_timeout')
_SECONDS = {'ms': 0.001, 's': 1, 'm': 60, 'h': 3600, 'd': 86400, '': 1}


def _well_formed(endpoint):
    """An entry usable at all: a mapping with a string address and a port."""
    return isinstance(endpoint, dict) and isinstance(endpoint.get('address'), str) and 'port' in endpoint


def _key(endpoint):
    address = endpoint['address']
    return '%s:%s' % (('[%s]' % address) if ':' in address else address, endpoint['port'])


def gateway_server_keys(endpoints):
    """The upstream's endpoints -> "address:port" of each usable one, IPv6 addresses in brackets."""
    return [_key(endpoint) for endpoint in (endpoints or []) if _well_formed(endpoint)]


def _text(value):
    """A size, time or rate as nginx reads it: a string, or a whole number written as one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return value if isinstance(value, str) else None


def _bool(value):
    if isinstance(value, str):
        return value.strip().lower() in ('true', 'yes', '1')
    return bool(value)


def _tls(values):
    return bool(values['gateway_tls_certificate']) and bool(values['gateway_tls_key'])


def _keys(ctx):
    return gateway_server_keys(ctx.get('endpoints'))


def _source(ctx):
    return ctx.get('endpoints_source') or 'gateway_endpoints'


def _group_known(values, ctx):
    return values['gateway_worker_group'] in (ctx.get('groups') or {})


RULES = RuleSet('gateway')
supported_system_rule(RULES)
mirror_only_rule(RULES, ['gateway_router_wheelhouse_url'])


@RULES.rule('gateway-worker-group-unknown')
def _worker_group(values, ctx):
    if _bool(ctx.get('from_facts')) and not _group_known(values, ctx):
        return ('gateway_worker_group %s is not a group of the inventory: name the group of the GPU nodes,'
                ' or list the workers in gateway_endpoints.' % show(values['gateway_worker_group']))
    return None


@RULES.rule('gateway-worker-group-name')
def _worker_group_name(values, ctx):
    group = values['gateway_worker_group']
    if not (isinstance(group, str) and _GROUP_RE.match(group)):
        return ('gateway_worker_group %s is not a group name (letters, digits, _ . and -): the configuration names it in'
                ' a comment.' % show(group))
    return None


@RULES.rule('gateway-hosts-without-endpoints')
def _hosts_missing(values, ctx):
    missing = ctx.get('hosts_missing') or []
    if _bool(ctx.get('from_facts')) and missing:
        return ('Hosts %s of group %s have no llmfleet_worker_endpoints fact: run the workers role on them in the same'
                ' ansible-playbook run (site.yml does) or keep facts in a fact cache, or list the workers in gateway_endpoints.'
                % (', '.join(str(host) for host in missing), values['gateway_worker_group']))
    return None


@RULES.rule('gateway-upstream-empty')
def _empty(values, ctx):
    if not ctx.get('endpoints') and (not _bool(ctx.get('from_facts')) or _group_known(values, ctx)):
        return ('The upstream would be empty: %s list no worker. Deploy the workers first, or list them in'
                ' gateway_endpoints as {address, port}.' % _source(ctx))
    return None


@RULES.rule('gateway-endpoints-malformed')
def _malformed(values, ctx):
    malformed = [endpoint for endpoint in (ctx.get('endpoints') or []) if not _well_formed(endpoint)]
    if malformed:
        return '%d entries of %s are not {address, port}: %s.' % (len(malformed), _source(ctx), show(malformed))
    return None


@RULES.rule('gateway-endpoint-addresses')
def _addresses(values, ctx):
    bad = [endpoint['address'] for endpoint in (ctx.get('endpoints') or [])
           if _well_formed(endpoint) and not _ADDRESS_RE.match(endpoint['address'])]
    if bad:
        return ('Addresses in %s that are not an IP address or a host name: %s (IPv6 without brackets).'
                % (_source(ctx), ', '.join(show(address) for address in bad)))
    return None


@RULES.rule('gateway-endpoint-ports')
def _ports(values, ctx):
    ports = [str(endpoint['port']) for endpoint in (ctx.get('endpoints') or []) if _well_formed(endpoint)]
    bad = [port for port in ports if not _PORT_RE.match(port) or int(port) > 65535]
    if bad:
        return 'Ports in %s outside 1..65535: %s.' % (_source(ctx), ', '.join(show(port) for port in bad))
    return None


@RULES.rule('gateway-servers-duplicate')
def _duplicates(values, ctx):
    keys = _keys(ctx)
    duplicates = []
    for key in keys:
        if keys.count(key) > 1 and key not in duplicates:
            duplicates.append(key)
    if duplicates:
        return ('Servers listed more than once in %s: %s (each worker needs the address the gateway reaches it on).'
                % (_source(ctx), ', '.join(duplicates)))
    return None


def _drained_ok(entry):
    return isinstance(entry, str) and _DRAINED_RE.match(entry) is not None


@RULES.rule('gateway-drained-format')
def _drained_format(values, ctx):
    bad = [entry for entry in values['gateway_drained'] if not _drained_ok(entry)]
    if bad:
        return ('gateway_drained entries are not "address:port" ("[fd00::1]:8000" for IPv6): %s.'
                % ', '.join(show(entry) for entry in bad))
    return None


@RULES.rule('gateway-drained-unknown')
def _drained_unknown(values, ctx):
    keys = _keys(ctx)
    unknown = [entry for entry in values['gateway_drained'] if _drained_ok(entry) and entry not in keys]
    if unknown:
        return ('gateway_drained names %s, which the upstream does not have (it has %s): nothing would be drained.'
                % (', '.join(unknown), ', '.join(keys)))
    return None


@RULES.rule('gateway-drained-all')
def _drained_all(values, ctx):
    keys = _keys(ctx)
    if keys and all(key in values['gateway_drained'] for key in keys) and values['gateway_outage_accepted'] is not True:
        return ('gateway_drained takes out every server (%s): every request would fail. Drain fewer servers at a time'
                ' (or set gateway_outage_accepted: true for a planned outage, as the roll of a fleet of one endpoint does).'
                % ', '.join(keys))
    return None


@RULES.rule('gateway-hash-header')
def _hash_header(values, ctx):
    header = values['gateway_hash_header']
    if not (isinstance(header, str) and _HEADER_RE.match(header)):
        return 'gateway_hash_header %s is not a header name (letters, digits and dashes), such as X-Session-ID.' % show(header)
    return None


def _bad(values, names, pattern):
    return ['%s %s' % (name, show(values[name])) for name in names
            if _text(values[name]) is None or not pattern.match(_text(values[name]))]


@RULES.rule('gateway-sizes')
def _sizes(values, ctx):
    bad = _bad(values, _SIZES, _SIZE_RE)
    if bad:
        return '%s: not an nginx size (a number with an optional k, m or g, like 16m).' % ', '.join(bad)
    return None


@RULES.rule('gateway-times')
def _times(values, ctx):
    bad = _bad(values, _TIMES, _TIME_RE)
    if bad:
        return '%s: not an nginx time (a number with an optional ms, s, m, h or d, like 3600s).' % ', '.join(bad)
    return None


@RULES.rule('gateway-counts-negative')
def _negative(values, ctx):
    bad = ['%s %s' % (name, show(values[name])) for name in _COUNTS
           if as_int(values[name]) is None or as_int(values[name]) < 0]
    if bad:
        return '%s: must not be negative (a whole number, 0 or more).' % ', '.join(bad)
    return None


def _at_least(values, name, minimum):
    number = as_int(values[name])
    if number is None or number < minimum:
        return '%s is %s: it must be at least %d.' % (name, show(values[name]), minimum)
    return None


@RULES.rule('gateway-keepalive-requests')
def _keepalive_requests(values, ctx):
    return _at_least(values, 'gateway_keepalive_requests', 1)


@RULES.rule('gateway-worker-connections')
def _worker_connections(values, ctx):
    return _at_least(values, 'gateway_worker_connections', 64)


@RULES.rule('gateway-next-upstream-off')
def _next_upstream(values, ctx):
    cases = values['gateway_next_upstream']
    if 'off' in cases and len(cases) > 1:
        return ('gateway_next_upstream %s has "off" together with other cases: use ["off"] alone, or the cases only.'
                % show(cases))
    return None


@RULES.rule('gateway-next-upstream-cases')
def _next_upstream_cases(values, ctx):
    cases = values['gateway_next_upstream']
    bad = [case for case in (cases if isinstance(cases, list) else [cases]) if case not in _NEXT_UPSTREAM]
    if bad:
        return ('gateway_next_upstream has %s, which the role does not pass to proxy_next_upstream: use cases of %s.'
                % (', '.join(show(case) for case in bad), ', '.join(_NEXT_UPSTREAM)))
    return None


@RULES.rule('gateway-ports-range')
def _ports_range(values, ctx):
    bad = ['%s %s' % (name, show(values[name])) for name in _PORTS
           if as_int(values[name]) is None or not 0 <= as_int(values[name]) <= 65535]
    if bad:
        return '%s: outside 0..65535.' % ', '.join(bad)
    return None


@RULES.rule('gateway-listen-address')
def _listen_address(values, ctx):
    address = values['gateway_listen_address']
    if address and not (isinstance(address, str) and _ADDRESS_RE.match(address)):
        return ('gateway_listen_address %s is not an IP address or a host name (IPv6 without brackets; "" for every IPv4'
                ' address).' % show(address))
    return None


@RULES.rule('gateway-tls-pair')
def _tls_pair(values, ctx):
    if bool(values['gateway_tls_certificate']) != bool(values['gateway_tls_key']):
        return ('Set both gateway_tls_certificate and gateway_tls_key, or neither (gateway_tls_certificate is %s,'
                ' gateway_tls_key is %s).' % (show(values['gateway_tls_certificate']), show(values['gateway_tls_key'])))
    return None


@RULES.rule('gateway-tls-files')
def _tls_files(values, ctx):
    results = [result for result in (ctx.get('tls_files') or []) if isinstance(result, dict) and 'stat' in result]
    missing = [result.get('item') for result in results if not result['stat'].get('exists')]
    missing += [result.get('item') for result in results if result['stat'].get('exists') and not result['stat'].get('isreg')]
    if missing:
        return ('TLS files missing on the node (or not regular files): %s. Put them there first, or correct'
                ' gateway_tls_certificate and gateway_tls_key.' % ', '.join(show(path) for path in missing))
    return None


@RULES.rule('gateway-tls-paths')
def _tls_paths(values, ctx):
    bad = ['%s %s' % (name, show(values[name])) for name in ('gateway_tls_certificate', 'gateway_tls_key')
           if values[name] and not is_nginx_path(values[name])]
    if bad:
        return ('%s: not an absolute path on the gateway node without whitespace or any of ; { } \' " $ # \\'
                ' (nginx would read them as more than a path).' % ', '.join(bad))
    return None


def _tls_key_stat(values, ctx):
    for result in ctx.get('tls_files') or []:
        if isinstance(result, dict) and result.get('item') == values['gateway_tls_key'] and 'stat' in result:
            return result['stat'] if result['stat'].get('exists') and result['stat'].get('isreg') else None
    return None


@RULES.rule('gateway-tls-key-private')
def _tls_key_private(values, ctx):
    found = _tls_key_stat(values, ctx)
    if not found or not values['gateway_tls_key']:
        return None
    mode = found.get('mode')
    try:
        bits = int(mode, 8) if isinstance(mode, str) else int(mode)
    except (TypeError, ValueError):
        bits = 0o777
    owner = found.get('pw_name') or found.get('uid')
    if found.get('uid') != 0 or bits & 0o027:
        return ('gateway_tls_key %s is owned by %s with mode %s on the node: a private key must be owned by root and'
                ' neither readable by others nor writable by its group (chown root and chmod 0600, or 0640 with a group'
                ' such as ssl-cert).' % (show(values['gateway_tls_key']), show(owner), show(mode)))
    return None


@RULES.rule('gateway-nothing-to-listen-on')
def _nothing(values, ctx):
    if as_int(values['gateway_listen_port']) == 0 and not _tls(values):
        return ('Nothing to listen on: gateway_listen_port is 0 and no TLS certificate is set. Set gateway_listen_port,'
                ' or gateway_tls_certificate and gateway_tls_key.')
    return None


@RULES.rule('gateway-ports-same')
def _same_ports(values, ctx):
    port = as_int(values['gateway_listen_port'])
    if _tls(values) and port is not None and port > 0 and port == as_int(values['gateway_tls_port']):
        return 'gateway_listen_port and gateway_tls_port are both %s: give them different ports.' % port
    return None


@RULES.rule('gateway-tls-port-unset')
def _tls_port(values, ctx):
    if _tls(values) and as_int(values['gateway_tls_port']) == 0:
        return 'gateway_tls_port is 0: it must be set (1..65535) with TLS.'
    return None


@RULES.rule('gateway-rate-limit')
def _rate(values, ctx):
    rate = values['gateway_rate_limit']
    if rate and not (isinstance(rate, str) and _RATE_RE.match(rate)):
        return 'gateway_rate_limit %s is not a rate like "20r/s" or "600r/m" ("" for no limit).' % show(rate)
    return None


@RULES.rule('gateway-api-keys')
def _api_keys(values, ctx):
    # The keys are secrets: the message counts the bad ones and never shows them.
    bad = [key for key in values['gateway_api_keys'] if not (isinstance(key, str) and _API_KEY_RE.match(key))]
    if bad:
        return ('gateway_api_keys has %d key(s) that are not at least 16 characters of A-Z a-z 0-9 . _ ~ + / -'
                ' (optionally ending in =); the keys are not shown.' % len(bad))
    return None


def _loopback(address):
    return address == 'localhost' or address == '::1' or (isinstance(address, str) and address.startswith('127.'))


@RULES.rule('gateway-open-without-keys')
def _open(values, ctx):
    address = values['gateway_listen_address']
    if values['gateway_api_keys'] or _bool(values['gateway_allow_open']) or _loopback(address):
        return None
    where = 'every address' if address in ('', '0.0.0.0', '::') else 'a network address'
    return ('gateway_listen_address %s listens on %s and gateway_api_keys is empty: anyone who reaches the gateway could'
            ' use the fleet. Set gateway_api_keys (from a vault), or listen on 127.0.0.1, or set gateway_allow_open: true'
            ' to serve without client keys on purpose.' % (show(address), where))


@RULES.rule('gateway-worker-key')
def _worker_key(values, ctx):
    # The fleet's secret: the message never shows it.
    key = ctx.get('worker_key')
    if not (isinstance(key, str) and _API_KEY_RE.match(key)):
        return ('llmfleet_worker_api_key is not at least 16 characters of A-Z a-z 0-9 . _ ~ + / - (optionally ending in ='
                '): the gateway sends it to the workers as a Bearer token. Leave it unset (the base role makes one) or give'
                ' such a key; the key is not shown.')
    return None


def directive_problem(line):
    """Why ``line`` is not one simple nginx directive on one line (None when it is one).

    Words and quoted strings as nginx reads them: exactly one ``;`` outside quotes, at the end; no
    ``{``, ``}`` or ``#`` outside quotes; no line break anywhere; the first word a directive name
    other than ``include`` (which would bring in text no rule has seen).
    """
    if not isinstance(line, str):
        return 'not a string'
    if '\n' in line or '\r' in line:
        return 'more than one line'
    quote = None
    escaped = False
    end = None
    for index, char in enumerate(line):
        if end is not None:
            if not char.isspace():
                return 'more after the ";" that ends the directive'
            continue
        if escaped:
            escaped = False
        elif char == '\\':
            escaped = True
        elif quote:
            if char == quote:
                quote = None
        elif char in '"\'':
            quote = char
        elif char in '{}':
            return 'a block ("{" or "}")'
        elif char == '#':
            return 'a comment ("#")'
        elif char == ';':
            end = index
    if quote or escaped:
        return 'an unterminated quote'
    if end is None:
        return 'no ";" at the end'
    words = line[:end].split()
    if not words or not _DIRECTIVE_NAME_RE.match(words[0]):
        return 'no directive name first'
    if words[0] == 'include':
        return 'an include (its file would escape the checks)'
    return None


@RULES.rule('gateway-extra-directives')
def _extra_directives(values, ctx):
    lines = values['gateway_extra_directives']
    bad = ['%s (%s)' % (show(line), directive_problem(line)) for line in (lines if isinstance(lines, list) else [lines])
           if directive_problem(line)]
    if bad:
        return ('gateway_extra_directives must each be one line holding one simple directive ending in ";", such as'
                ' "real_ip_header X-Forwarded-For;": %s.' % '; '.join(bad))
    return None


@RULES.rule('gateway-verify-path')
def _verify_path(values, ctx):
    path = values['gateway_verify_path']
    if path and not (isinstance(path, str) and path.startswith('/')):
        return 'gateway_verify_path %s must start with /, such as /v1/models ("" for the health endpoint only).' % show(path)
    return None


@RULES.rule('gateway-verify-path-proxied')
def _verify_path_proxied(values, ctx):
    path = values['gateway_verify_path']
    if isinstance(path, str) and path.startswith('/') and not _VERIFY_PATH_RE.match(path):
        return ('gateway_verify_path %s is not a path the gateway proxies (/v1/... or /health, in URL characters'
                ' without spaces, quotes or #): it would answer 404. Use /v1/models.' % show(path))
    return None


def _router(values):
    return values['gateway_routing'] == 'cache_aware'


@RULES.rule('gateway-router-wheelhouse')
def _router_wheelhouse(values, ctx):
    url = values['gateway_router_wheelhouse_url']
    if _router(values) and not is_http_url(url):
        return ('gateway_routing is cache_aware and gateway_router_wheelhouse_url is %s: give the http(s) URL of a wheelhouse'
                ' that holds vllm-router %s and its dependencies (pip installs the router from it with --no-index).'
                % (show(url), values['gateway_router_version']))
    return None


@RULES.rule('gateway-router-version')
def _router_version(values, ctx):
    version = values['gateway_router_version']
    if not (isinstance(version, str) and _VERSION_RE.match(version)):
        return ('gateway_router_version %s is not a version pip pins, such as "0.1.17" (pip installs vllm-router==<version>).'
                % show(version))
    return None


@RULES.rule('gateway-router-paths')
def _router_paths(values, ctx):
    bad = ['%s %s' % (name, show(values[name])) for name in ('gateway_router_base_dir', 'gateway_router_python')
           if not (is_absolute_path(values[name]) and values[name].strip('/') and not re.search(r'\s', values[name]))]
    if bad:
        return '%s: not an absolute path without whitespace (and not /).' % ', '.join(bad)
    return None


@RULES.rule('gateway-router-ports-range')
def _router_ports_range(values, ctx):
    bad = ['%s %s' % (name, show(values[name])) for name in _ROUTER_PORTS
           if as_int(values[name]) is None or not 1 <= as_int(values[name]) <= 65535]
    if bad:
        return '%s: outside 1..65535.' % ', '.join(bad)
    return None


@RULES.rule('gateway-router-ports-clash')
def _router_ports_clash(values, ctx):
    if not _router(values):
        return None
    taken = {'gateway_listen_port': as_int(values['gateway_listen_port'])}
    if _tls(values):
        taken['gateway_tls_port'] = as_int(values['gateway_tls_port'])
    taken['gateway_router_metrics_port'] = as_int(values['gateway_router_metrics_port'])
    port = as_int(values['gateway_router_port'])
    clashes = [name for name, other in sorted(taken.items()) if other and other == port]
    if clashes:
        return ('gateway_router_port %s is also %s: the router, its metrics and nginx each need a port of their own on'
                ' loopback.' % (port, ', '.join(clashes)))
    return None


@RULES.rule('gateway-router-cache-threshold')
def _router_cache_threshold(values, ctx):
    number = as_number(values['gateway_router_cache_threshold'])
    if number is None or not 0 <= number <= 1:
        return ('gateway_router_cache_threshold %s is not a share of the prompt between 0 and 1 (vllm-router\'s default is'
                ' 0.3).' % show(values['gateway_router_cache_threshold']))
    return None


@RULES.rule('gateway-router-balance')
def _router_balance(values, ctx):
    bad = []
    absolute = as_int(values['gateway_router_balance_abs_threshold'])
    if absolute is None or absolute < 0:
        bad.append('gateway_router_balance_abs_threshold %s (a whole number, 0 or more)'
                   % show(values['gateway_router_balance_abs_threshold']))
    relative = as_number(values['gateway_router_balance_rel_threshold'])
    if relative is None or relative < 1:
        bad.append('gateway_router_balance_rel_threshold %s (a number, 1 or more: the busiest worker\'s load over the'
                   ' idlest\'s)' % show(values['gateway_router_balance_rel_threshold']))
    if bad:
        return 'When the load wins over the cache: %s.' % '; '.join(bad)
    return None


@RULES.rule('gateway-router-counts')
def _router_counts(values, ctx):
    bad = ['%s %s' % (name, show(values[name])) for name in _ROUTER_COUNTS
           if as_int(values[name]) is None or as_int(values[name]) < 1]
    if bad:
        return '%s: must be a whole number, 1 or more.' % ', '.join(bad)
    return None


def _seconds(value):
    text = _text(value)
    match = _TIME_RE.match(text) if text is not None else None
    return int(text[:match.start(1)] if match.group(1) else text) * _SECONDS[match.group(1) or ''] if match else None


@RULES.rule('gateway-router-request-timeout')
def _router_request_timeout(values, ctx):
    limit = as_int(values['gateway_router_request_timeout'])
    read = _seconds(values['gateway_read_timeout'])
    if _router(values) and limit is not None and limit >= 1 and read is not None and limit < read:
        return ('gateway_router_request_timeout is %d s, shorter than gateway_read_timeout %s: the router would cut a'
                ' generation nginx still waits for. Set it to %d or more.'
                % (limit, show(values['gateway_read_timeout']), int(read + 0.999)))
    return None


def gateway_input_problems(values, platform, endpoints=None, endpoints_source='gateway_endpoints', from_facts=False,
                           groups=None, hosts_missing=None, tls_files=None, worker_key=None):
    """The gateway role's variables and the upstream it would have -> a list of messages (empty when they are fine).

    ``endpoints`` is the upstream as the role resolved it (gateway_endpoints, or the workers' facts),
    ``endpoints_source`` says where it came from, ``from_facts`` whether it came from the facts of
    gateway_worker_group, ``groups`` the inventory's groups, ``hosts_missing`` the hosts of that group
    without the fact, ``tls_files`` the stat results of the TLS certificate and key on the node, and
    ``worker_key`` the fleet's worker key (llmfleet_worker_api_key; checked, never shown).
    """
    return RULES.messages(values, {
        'platform': platform, 'endpoints': endpoints or [], 'endpoints_source': endpoints_source,
        'from_facts': from_facts, 'groups': groups or {}, 'hosts_missing': hosts_missing or [],
        'tls_files': tls_files or [], 'worker_key': worker_key,
    })
