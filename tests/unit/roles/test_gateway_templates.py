# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gateway's nginx templates rendered with hostile values: refused, or parsed to exactly what was meant.

The real templates are rendered with ansible's Templar, the role's defaults and vars/main.yml (as
the role renders them), and parsed directive by directive with crossplane (the nginx configuration
parser). Each hostile value (a newline and a directive, ``%``, ``$``, quotes, a space, ``;``, ``{``,
``}``, ``#``) in each variable that reaches an nginx file is either refused by
``input_problems('gateway')`` with a message that names the variable, or the parsed configuration
holds exactly the baseline's directives plus what the value means. With an nginx binary on PATH (or
in LLMFLEET_NGINX), the rendered tree also passes ``nginx -t``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import re
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.gateway import gateway_input_problems, gateway_server_keys

try:
    import crossplane
except ImportError:  # pinned in requirements.txt; without it only the parsing tests are skipped
    crossplane = None

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
ROLE = os.path.join(ROOT, 'roles', 'gateway')
TEMPLATES = {
    'gateway.conf': 'etc/nginx/conf.d/llmfleet-gateway.conf.j2',
    'api-keys.conf': 'etc/nginx/llmfleet-gateway/api-keys.conf.j2',
    'worker-key.conf': 'etc/nginx/llmfleet-gateway/worker-key.conf.j2',
}
PLATFORM = {'key': 'Debian-12', 'name': 'Debian 12', 'supported': True, 'supported_names': ['Debian 12']}
CLIENT_KEY = 'lab-key-0123456789abcdef'
WORKER_KEY = 'Wk0123456789abcdefABCDEFGHIJKLMNOPQRSTUVWXYZabcd'
ENDPOINTS = [{'name': 'llmfleet-worker-0', 'address': '10.0.0.11', 'port': 8000},
             {'name': 'llmfleet-worker-1', 'address': '10.0.0.12', 'port': 8001}]
BASE = {'gateway_endpoints': ENDPOINTS, 'gateway_api_keys': [CLIENT_KEY], 'gateway_rate_limit': '20r/s'}
TLS = {'gateway_tls_certificate': '/etc/ssl/gw.pem', 'gateway_tls_key': '/etc/ssl/gw.key'}
ROUTER = {'gateway_routing': 'cache_aware', 'gateway_router_wheelhouse_url': 'http://repo.lab:8080/wheels/router/'}

# What an nginx word may not smuggle in.
HOSTILE = ['\nreturn 200 "x";', ';', '{', '}', '%', '$x', '"', "'", ' space', '#c', ';\n}\nserver {\nlisten 81;']
# Every variable whose value is written into an nginx file as text (scalars; lists are below).
SCALARS = ['gateway_zone_size', 'gateway_keepalive', 'gateway_keepalive_timeout', 'gateway_keepalive_requests',
           'gateway_max_fails', 'gateway_fail_timeout', 'gateway_connect_timeout', 'gateway_read_timeout',
           'gateway_send_timeout', 'gateway_next_upstream_tries', 'gateway_next_upstream_timeout',
           'gateway_client_max_body_size', 'gateway_client_body_buffer_size', 'gateway_proxy_buffer_size', 'gateway_listen_address',
           'gateway_listen_port', 'gateway_tls_port', 'gateway_rate_limit', 'gateway_rate_limit_burst',
           'gateway_rate_limit_zone_size', 'gateway_conn_limit_per_client', 'gateway_conn_limit_zone_size',
           'gateway_hash_header', 'gateway_worker_group', 'gateway_tls_certificate', 'gateway_tls_key',
           'gateway_worker_connections', 'gateway_router_port']
# Lists whose elements are written (gateway_extra_directives has its own cases below).
LISTS = ['gateway_next_upstream', 'gateway_api_keys']
# nginx reads a % in a path as a %: accepted, and written as that one word (see below).
ACCEPTED = [('gateway_tls_certificate', '%'), ('gateway_tls_key', '%')]
# Read by the templates but never written as text: compared, chosen from, or only counted.
NOT_WRITTEN = ['gateway_routing', 'gateway_drained', 'gateway_endpoints', 'gateway_extra_directives']


def _load(name):
    with open(os.path.join(ROLE, name)) as handle:
        return yaml.safe_load(handle)


def _trusted(value, trust):
    if isinstance(value, str):
        return trust(value)
    if isinstance(value, list):
        return [_trusted(item, trust) for item in value]
    if isinstance(value, dict):
        return dict((key, _trusted(item, trust)) for key, item in value.items())
    return value


@pytest.fixture(scope='module')
def templar_class():
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template
    return lambda variables: Templar(loader=DataLoader(), variables=variables), trust_as_template


def values_of(changes):
    values = _load('defaults/main.yml')
    values.update(copy.deepcopy(BASE))
    values.update(copy.deepcopy(changes))
    return values


def problems(changes, worker_key=WORKER_KEY, from_facts=False):
    values = values_of(changes)
    return gateway_input_problems(values, PLATFORM, endpoints=values['gateway_endpoints'] or ENDPOINTS, from_facts=from_facts,
                                  groups={'gpu_nodes': [], values['gateway_worker_group']: []}, worker_key=worker_key)


def render(templar_class, tmp_path, changes, worker_key=WORKER_KEY, from_facts=False):
    """Render every template of the gateway into tmp_path; the path of a main nginx.conf that includes them."""
    make, trust = templar_class
    values = values_of(changes)
    variables = _trusted(_load('vars/main.yml'), trust)
    variables.update(_trusted(_load('defaults/main.yml'), trust))
    # The user's values as data, never as templates (as inventory values reach a role).
    variables.update(copy.deepcopy(BASE))
    variables.update(copy.deepcopy(changes))
    variables.update({
        'ansible_managed': 'Ansible managed', 'llmfleet_worker_api_key': worker_key, 'groups': {},
        '_gateway_access_log': str(tmp_path / 'access.log'), '_gateway_error_log': str(tmp_path / 'error.log'),
        '_gateway_api_keys_file': str(tmp_path / 'api-keys.conf'),
        '_gateway_worker_key_file': str(tmp_path / 'worker-key.conf'),
    })
    # The one value vars/main.yml computes with the collection's own filter (not loadable by name in a
    # bare Templar): the same function.
    variables['_gateway_server_keys'] = gateway_server_keys(ENDPOINTS if from_facts else values['gateway_endpoints'])
    if from_facts:
        variables.update({'_gateway_from_facts': True, '_gateway_endpoints': ENDPOINTS,
                          '_gateway_endpoints_source': trust("{{ 'the llmfleet_worker_endpoints facts of group ' ~ gateway_worker_group }}")})
    templar = make(variables)
    for name, source in TEMPLATES.items():
        if name == 'api-keys.conf' and not values['gateway_api_keys']:
            continue
        with open(os.path.join(ROLE, 'templates', source)) as handle:
            text = templar.template(trust(handle.read()))
        (tmp_path / name).write_text(text)
    main = tmp_path / 'nginx.conf'
    main.write_text('pid %s;\nevents {}\nhttp {\n    include %s;\n}\n' % (tmp_path / 'nginx.pid', tmp_path / 'gateway.conf'))
    return str(main)


def parse(main):
    if crossplane is None:
        pytest.skip('crossplane (the nginx configuration parser) is not installed')
    payload = crossplane.parse(main, combine=True, strict=False, check_ctx=True, check_args=True)
    assert payload['status'] == 'ok', payload['errors']
    return payload['config'][0]['parsed']


def flat(tree, path=()):
    """Every directive as (enclosing blocks, name, args)."""
    found = []
    for item in tree:
        found.append((path, item['directive'], tuple(item['args'])))
        if 'block' in item:
            found.extend(flat(item['block'], path + ((item['directive'],) + tuple(item['args']),)))
    return found


def blocks(tree, directive):
    return [item for item in tree if item['directive'] == directive]


def http(tree):
    return blocks(tree, 'http')[0]['block']


def locations(server):
    return dict((' '.join(item['args']), item['block']) for item in blocks(server['block'], 'location'))


def args(block, directive):
    return [tuple(item['args']) for item in blocks(block, directive)]


def nginx_binary():
    return os.environ.get('LLMFLEET_NGINX') or shutil.which('nginx') or (
        '/usr/sbin/nginx' if os.access('/usr/sbin/nginx', os.X_OK) else None)


# --------------------------------------------------------------------------------------------------
# The baseline: what the templates mean
# --------------------------------------------------------------------------------------------------

def test_plain_http_serves_only_the_fleet_paths_with_the_worker_key(templar_class, tmp_path):
    assert problems({}) == []
    tree = http(parse(render(templar_class, tmp_path, {})))
    servers = blocks(tree, 'server')
    assert len(servers) == 1
    server = servers[0]
    assert args(server['block'], 'listen') == [('80',)]
    assert args(server['block'], 'server_tokens') == [('off',)]
    found = locations(server)
    assert sorted(found) == ['/', '/v1/', '= /gateway/error/404', '= /gateway/error/413', '= /gateway/error/429',
                             '= /gateway/error/502', '= /gateway/error/504', '= /gateway/health', '= /health', '= /v1']
    # Only /v1/ and /health are proxied, each to the same path of the workers.
    proxied = dict((name, args(block, 'proxy_pass')) for name, block in found.items() if args(block, 'proxy_pass'))
    assert proxied == {'/v1/': [('http://llmfleet_workers/v1/',)], '= /health': [('http://llmfleet_workers/health',)]}
    for name in ('/v1/', '= /health'):
        block = found[name]
        headers = dict((item[0], item[1:]) for item in args(block, 'proxy_set_header'))
        # The client's Authorization is replaced by the worker key.
        assert headers['Authorization'] == ('Bearer ' + WORKER_KEY,)
        assert [item for item in args(block, 'proxy_set_header') if item[0].lower() == 'authorization'] == [
            ('Authorization', 'Bearer ' + WORKER_KEY)]
        assert args(block, 'limit_conn') == [('llmfleet_gateway_conn', '256')]
        assert args(block, 'limit_conn_status') == [('429',)]
        assert args(block, 'limit_req') == [('zone=llmfleet_gateway', 'burst=40', 'nodelay')]
        assert [item['args'] for item in blocks(block, 'if')] == [['$llmfleet_gateway_authorized', '=', '0']]
    # Everything else: 404, in the OpenAI error shape.
    assert args(found['/'], 'return') == [('404',)] and args(found['= /v1'], 'return') == [('404',)]
    assert ('404', '/gateway/error/404') in args(server['block'], 'error_page')
    body = args(found['= /gateway/error/404'], 'return')[0][1]
    assert '"type":"not_found_error"' in body and body.startswith('{"error":{"message":')
    assert args(tree, 'limit_conn_zone') == [('$binary_remote_addr', 'zone=llmfleet_gateway_conn:10m')]
    # The client keys: one case-sensitive regular expression each.
    maps = dict((item['args'][1], item['block']) for item in blocks(tree, 'map'))
    assert args(maps['$llmfleet_gateway_authorized'], 'default') == [('0',)]
    entries = [tuple([item['directive']] + item['args']) for item in maps['$llmfleet_gateway_authorized']]
    assert ('~^[Bb]earer +lab-key-0123456789abcdef$', '1') in entries


def test_tls_redirects_plain_http_and_never_proxies_it(templar_class, tmp_path):
    tree = http(parse(render(templar_class, tmp_path, dict(TLS))))
    redirect, main = blocks(tree, 'server')
    assert [item['directive'] for item in redirect['block']] == ['listen', 'server_tokens', 'access_log', 'error_log', 'return']
    assert args(redirect['block'], 'listen') == [('80',)]
    assert args(redirect['block'], 'return') == [('308', 'https://$host$request_uri')]
    assert args(redirect['block'], 'server_tokens') == [('off',)]
    assert args(main['block'], 'listen') == [('443', 'ssl')]
    assert args(main['block'], 'ssl_protocols') == [('TLSv1.2', 'TLSv1.3')]
    assert args(main['block'], 'ssl_certificate_key') == [('/etc/ssl/gw.key',)]
    assert args(main['block'], 'server_tokens') == [('off',)]


def test_tls_on_another_port_redirects_there(templar_class, tmp_path):
    tree = http(parse(render(templar_class, tmp_path, dict(TLS, gateway_tls_port=8443, gateway_listen_port=8080))))
    redirect = blocks(tree, 'server')[0]
    assert args(redirect['block'], 'listen') == [('8080',)]
    assert args(redirect['block'], 'return') == [('308', 'https://$host:8443$request_uri')]


def test_tls_only_has_no_plain_server(templar_class, tmp_path):
    tree = http(parse(render(templar_class, tmp_path, dict(TLS, gateway_listen_port=0))))
    assert [args(server['block'], 'listen') for server in blocks(tree, 'server')] == [[('443', 'ssl')]]


def test_no_limits_and_no_keys_when_opened_on_purpose(templar_class, tmp_path):
    changes = {'gateway_api_keys': [], 'gateway_allow_open': True, 'gateway_conn_limit_per_client': 0, 'gateway_rate_limit': ''}
    assert problems(changes) == []
    tree = http(parse(render(templar_class, tmp_path, changes)))
    assert not args(tree, 'limit_conn_zone') and not args(tree, 'limit_req_zone')
    block = locations(blocks(tree, 'server')[0])['/v1/']
    assert not blocks(block, 'if') and not args(block, 'limit_conn')
    # Open to clients, still the worker key towards the workers.
    assert ('Authorization', 'Bearer ' + WORKER_KEY) in args(block, 'proxy_set_header')


def _upstream(tree):
    return [item['block'] for item in blocks(tree, 'upstream')][0]


@pytest.mark.parametrize('routing, method', [
    pytest.param('least_conn', [('least_conn', ())], id='least-conn'),
    pytest.param('round_robin', [], id='round-robin'),
    pytest.param('session_hash', [('hash', ('$llmfleet_gateway_hash_key', 'consistent'))], id='session-hash'),
])
def test_nginx_routing_methods(templar_class, tmp_path, routing, method):
    changes = {'gateway_routing': routing, 'gateway_drained': ['10.0.0.12:8001']}
    assert problems(changes) == []
    tree = http(parse(render(templar_class, tmp_path, changes)))
    upstream = _upstream(tree)
    assert [(item['directive'], tuple(item['args'])) for item in upstream if item['directive'] in ('least_conn', 'hash')] == method
    assert args(upstream, 'server') == [('10.0.0.11:8000', 'max_fails=1', 'fail_timeout=5s'),
                                        ('10.0.0.12:8001', 'max_fails=1', 'fail_timeout=5s', 'down')]
    maps = [item['args'][1] for item in blocks(tree, 'map')]
    assert ('$llmfleet_gateway_hash_key' in maps) == (routing == 'session_hash')


def test_cache_aware_points_nginx_at_the_router_alone(templar_class, tmp_path):
    assert problems(ROUTER) == []
    tree = http(parse(render(templar_class, tmp_path, ROUTER)))
    upstream = _upstream(tree)
    # The router on loopback, never taken out; no balancing method of nginx's, no worker.
    assert args(upstream, 'server') == [('127.0.0.1:30000', 'max_fails=0')]
    assert not blocks(upstream, 'least_conn') and not blocks(upstream, 'hash')
    assert args(upstream, 'keepalive') == [('32',)]
    found = locations(blocks(tree, 'server')[0])
    proxied = dict((name, args(block, 'proxy_pass')) for name, block in found.items() if args(block, 'proxy_pass'))
    # /health asks the router's readiness (503 without a healthy worker), /v1/ goes through as before.
    assert proxied == {'/v1/': [('http://llmfleet_workers/v1/',)], '= /health': [('http://llmfleet_workers/readiness',)]}
    # nginx keeps the keys, the limits and the worker key (the router passes Authorization on to the workers).
    block = found['/v1/']
    assert ('Authorization', 'Bearer ' + WORKER_KEY) in args(block, 'proxy_set_header')
    assert args(block, 'limit_req') == [('zone=llmfleet_gateway', 'burst=40', 'nodelay')]
    assert [item['args'] for item in blocks(block, 'if')] == [['$llmfleet_gateway_authorized', '=', '0']]


def test_cache_aware_drain_leaves_nginx_as_it_is(templar_class, tmp_path):
    """A drain changes the router's list, not nginx's configuration: no reload."""
    texts = []
    for index, drained in enumerate([[], ['10.0.0.12:8001']]):
        directory = tmp_path / str(index)
        directory.mkdir()
        render(templar_class, directory, dict(ROUTER, gateway_drained=drained))
        texts.append((directory / 'gateway.conf').read_text().replace(str(directory), ''))
    assert texts[0] == texts[1]


def test_cache_aware_router_port_in_the_upstream(templar_class, tmp_path):
    tree = http(parse(render(templar_class, tmp_path, dict(ROUTER, gateway_router_port=31000))))
    assert args(_upstream(tree), 'server') == [('127.0.0.1:31000', 'max_fails=0')]


# --------------------------------------------------------------------------------------------------
# Hostile values
# --------------------------------------------------------------------------------------------------

def _hostile_cases():
    defaults = _load('defaults/main.yml')
    cases = []
    for name in SCALARS:
        base = str(values_of(TLS)[name] if name.startswith('gateway_tls_') and name != 'gateway_tls_port' else defaults[name])
        for index, text in enumerate(HOSTILE):
            if (name, text) not in ACCEPTED:
                cases.append(pytest.param(name, base + text, id='%s-%d' % (name, index)))
    for name in LISTS:
        base = values_of({})[name][0]
        for index, text in enumerate(HOSTILE):
            cases.append(pytest.param(name, [base + text], id='%s-%d' % (name, index)))
    for index, text in enumerate(HOSTILE):
        cases.append(pytest.param('gateway_endpoints', [dict(ENDPOINTS[0], address='10.0.0.11' + text)], id='address-%d' % index))
        cases.append(pytest.param('gateway_endpoints', [dict(ENDPOINTS[0], port='8000' + text)], id='port-%d' % index))
        cases.append(pytest.param('gateway_extra_directives', ['add_header X-A 1;' + text], id='extra-%d' % index))
    return cases


@pytest.mark.parametrize('name, value', _hostile_cases())
def test_hostile_value_is_refused_naming_the_variable(name, value):
    changes = {name: value}
    if name.startswith('gateway_tls_') and name != 'gateway_tls_port':
        changes = dict(TLS, **changes)
    messages = problems(changes, from_facts=name == 'gateway_worker_group')
    # Each ends in what nginx would read as more than the one word meant: refused.
    assert messages, 'accepted %s = %r' % (name, value)
    named = 'gateway_endpoints' if name == 'gateway_endpoints' else name
    assert any(named in message for message in messages), messages


@pytest.mark.parametrize('text', HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_worker_key_is_refused_and_not_shown(text):
    key = WORKER_KEY + text
    messages = problems({}, worker_key=key)
    assert any('llmfleet_worker_api_key' in message for message in messages)
    assert not any(key in message for message in messages)


def test_every_value_written_into_an_nginx_file_has_hostile_cases():
    used = set()
    for source in TEMPLATES.values():
        with open(os.path.join(ROLE, 'templates', source)) as handle:
            used.update(re.findall(r'\b(gateway_[a-z_]+)', handle.read()))
    assert sorted(used - set(SCALARS) - set(LISTS) - set(NOT_WRITTEN)) == []


def _same_but(baseline, parsed, added=()):
    """parsed == baseline plus the entries of added (each (enclosing blocks, name, args))."""
    rest = list(parsed)
    for entry in added:
        assert entry in rest, (entry, [item for item in rest if item[1] == entry[1]])
        rest.remove(entry)
    assert rest == baseline


SERVER = (('http',), ('server',))


@pytest.mark.parametrize('changes, added, from_facts', [
    # A worker's name goes into a comment only, cleaned of anything but name characters.
    pytest.param({'gateway_endpoints': [dict(ENDPOINTS[0], name='w0\nserver 10.9.9.9:1;'), ENDPOINTS[1]]}, [], False,
                 id='endpoint-name-with-newline'),
    pytest.param({'gateway_endpoints': [dict(ENDPOINTS[0], name='w0 } # {%'), ENDPOINTS[1]]}, [], False, id='endpoint-name-braces'),
    # Quoted arguments keep their ; { } $ as text: one directive, exactly these arguments.
    pytest.param({'gateway_extra_directives': ['add_header X-A "a;b {c} $x";']},
                 [(SERVER, 'add_header', ('X-A', 'a;b {c} $x'))], False, id='extra-quoted-specials'),
    pytest.param({'gateway_extra_directives': ["add_header X-B 'it\\'s' always;", 'real_ip_header X-Forwarded-For;']},
                 [(SERVER, 'add_header', ('X-B', "it's", 'always')), (SERVER, 'real_ip_header', ('X-Forwarded-For',))], False,
                 id='extra-escaped-quote'),
    pytest.param({'gateway_worker_group': 'gpu-nodes.a_1', 'gateway_endpoints': []}, [], True, id='group-name-in-comment'),
    pytest.param({'gateway_client_max_body_size': '1G', 'gateway_read_timeout': '2h'},
                 [(SERVER, 'client_max_body_size', ('1G',)),
                  (SERVER + (('location', '/v1/'),), 'proxy_read_timeout', ('2h',)),
                  (SERVER + (('location', '=', '/health'),), 'proxy_read_timeout', ('2h',))], False,
                 id='size-and-time'),
])
def test_accepted_value_changes_nothing_but_what_it_means(templar_class, tmp_path, changes, added, from_facts):
    assert problems(changes, from_facts=from_facts) == []
    baseline_dir = tmp_path / 'baseline'
    case_dir = tmp_path / 'case'
    baseline_dir.mkdir()
    case_dir.mkdir()
    baseline = flat(parse(render(templar_class, baseline_dir, {})))
    parsed = flat(parse(render(templar_class, case_dir, changes, from_facts=from_facts)))
    # File paths differ only by the directory.
    parsed = [(path, name, tuple(arg.replace(str(case_dir), str(baseline_dir)) for arg in argv)) for path, name, argv in parsed]
    # A changed value replaces the baseline's directive of the same name and place.
    replaced = set((path, name) for path, name, _args in added)
    baseline = [entry for entry in baseline if (entry[0], entry[1]) not in replaced or entry[1] == 'add_header']
    _same_but(baseline, parsed, added)


def test_percent_in_a_tls_path_is_one_word(templar_class, tmp_path):
    changes = {'gateway_tls_certificate': '/etc/ssl/gw%41.pem', 'gateway_tls_key': '/etc/ssl/private/gw%.key'}
    assert problems(changes) == []
    main = blocks(http(parse(render(templar_class, tmp_path, changes))), 'server')[1]
    assert args(main['block'], 'ssl_certificate') == [('/etc/ssl/gw%41.pem',)]
    assert args(main['block'], 'ssl_certificate_key') == [('/etc/ssl/private/gw%.key',)]


def test_keys_with_every_allowed_character_stay_one_word(templar_class, tmp_path):
    client = 'Lab.Key+two/AB~C_D-EFGHIJ=='
    worker = 'W.k+/~_-0123456789abcdefXYZ=='
    assert problems({'gateway_api_keys': [client]}, worker_key=worker) == []
    tree = http(parse(render(templar_class, tmp_path, {'gateway_api_keys': [client]}, worker_key=worker)))
    maps = dict((item['args'][1], item['block']) for item in blocks(tree, 'map'))
    entries = [tuple([item['directive']] + item['args']) for item in maps['$llmfleet_gateway_authorized']]
    assert entries == [('default', '0'), ('~^[Bb]earer +Lab[.]Key[+]two/AB~C_D-EFGHIJ==$', '1')]
    block = locations(blocks(tree, 'server')[0])['/v1/']
    assert ('Authorization', 'Bearer ' + worker) in args(block, 'proxy_set_header')


# --------------------------------------------------------------------------------------------------
# nginx itself, when it is there
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('changes', [
    pytest.param({}, id='plain'),
    pytest.param(dict(TLS, gateway_routing='session_hash', gateway_extra_directives=['add_header X-A "a;b {c}";']), id='tls-hash-extra'),
    pytest.param(dict(ROUTER, gateway_drained=['10.0.0.12:8001']), id='cache-aware-drained'),
])
def test_nginx_accepts_the_rendered_tree(templar_class, tmp_path, changes):
    binary = nginx_binary()
    if not binary:
        pytest.skip('no nginx binary (set LLMFLEET_NGINX)')
    if changes.get('gateway_tls_certificate'):
        if not shutil.which('openssl'):
            pytest.skip('no openssl to make a test certificate')
        changes = dict(changes, gateway_tls_certificate=str(tmp_path / 'gw.pem'), gateway_tls_key=str(tmp_path / 'gw.key'))
        subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=gw',
                        '-keyout', changes['gateway_tls_key'], '-out', changes['gateway_tls_certificate']],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    main = render(templar_class, tmp_path, changes)
    with open(main) as handle:
        text = handle.read()
    # A prefix of its own: logs and temporary directories in tmp_path (the gateway needs no MIME types).
    temp = ''.join('    %s_temp_path %s;\n' % (kind, tmp_path / kind) for kind in ('client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'))
    with open(main, 'w') as handle:
        handle.write('error_log %s;\n%s' % (tmp_path / 'main-error.log', text.replace('http {\n', 'http {\n' + temp, 1)))
    proc = subprocess.run([binary, '-t', '-q', '-p', str(tmp_path), '-c', main, '-e', str(tmp_path / 'startup.log')],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout
