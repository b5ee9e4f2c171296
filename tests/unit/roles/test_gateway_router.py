# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gateway's router (gateway_routing cache_aware): its worker list and the API calls that bring a running router
there (pure filters), and its files as the role renders them (the unit, the workers file, the command line against
vllm-router 0.1.17's --help), with ansible's Templar, the role's defaults and vars/main.yml."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import subprocess

import pytest

from ansible.errors import AnsibleFilterError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from role_files import ROOT, load_yaml as _load, trusted as _trusted  # the collection loader is installed by role_files

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.gateway_router import (  # noqa: E402
    gateway_router_changes, gateway_router_urls, gateway_router_workers)
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.systemd_unit import systemd_directives, systemd_split  # noqa: E402

ROLE = os.path.join(ROOT, 'roles', 'gateway')
HELP = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'vllm_router', 'help-0.1.17.txt')
RECIPE = os.path.join(ROOT, 'lab', 'engine', 'wheelhouse-router.json')
ENDPOINTS = [{'name': 'llmfleet-worker-0', 'address': '10.0.0.11', 'port': 8000},
             {'name': 'llmfleet-worker-1', 'address': '10.0.0.11', 'port': 8001},
             {'name': 'llmfleet-worker-0', 'address': 'fd00::12', 'port': 8000}]
ROUTER = {'gateway_routing': 'cache_aware', 'gateway_router_wheelhouse_url': 'http://repo.lab:8080/wheels/router/',
          'gateway_endpoints': ENDPOINTS}
UNIT = 'etc/systemd/system/llmfleet-gateway-router.service.j2'
WORKERS = 'etc/llmfleet/gateway-router/workers.env.j2'


# --------------------------------------------------------------------------------------------------
# The pure logic
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('endpoints, drained, urls', [
    pytest.param(ENDPOINTS, [], ['http://10.0.0.11:8000', 'http://10.0.0.11:8001', 'http://[fd00::12]:8000'], id='all'),
    pytest.param(ENDPOINTS, ['10.0.0.11:8001'], ['http://10.0.0.11:8000', 'http://[fd00::12]:8000'], id='one-drained'),
    pytest.param(ENDPOINTS, ['[fd00::12]:8000'], ['http://10.0.0.11:8000', 'http://10.0.0.11:8001'], id='ipv6-drained'),
    pytest.param(ENDPOINTS + [ENDPOINTS[0]], None, ['http://10.0.0.11:8000', 'http://10.0.0.11:8001', 'http://[fd00::12]:8000'],
                 id='each-once'),
    pytest.param([{'address': 'gpu-0', 'port': '8000'}, {'address': 'x'}, 'junk'], [], ['http://gpu-0:8000'],
                 id='unusable-entries-left-out'),
    pytest.param([], ['10.0.0.11:8000'], [], id='empty'),
])
def test_router_urls(endpoints, drained, urls):
    assert gateway_router_urls(endpoints, drained=drained) == urls


@pytest.mark.parametrize('current, wanted, remove, add', [
    pytest.param({'urls': ['http://a:1', 'http://b:1']}, ['http://a:1', 'http://b:1'], [], [], id='same'),
    pytest.param({'urls': ['http://b:1', 'http://a:1']}, ['http://a:1', 'http://b:1'], [], [], id='order-does-not-matter'),
    pytest.param({'urls': ['http://a:1', 'http://b:1']}, ['http://a:1'], ['http://b:1'], [], id='drain'),
    pytest.param({'urls': ['http://a:1']}, ['http://a:1', 'http://b:1'], [], ['http://b:1'], id='undrain'),
    pytest.param(['http://a:1/', 'http://c:1'], ['http://a:1', 'http://b:1'], ['http://c:1'], ['http://b:1'],
                 id='list-trailing-slash-swap'),
    pytest.param({'urls': ['http://a:1', 'http://a:1']}, [], ['http://a:1'], [], id='listed-twice-removed-once'),
    pytest.param({'urls': []}, ['http://[fd00::1]:8000'], [], ['http://[fd00::1]:8000'], id='empty-router'),
])
def test_router_sync(current, wanted, remove, add):
    assert gateway_router_changes(current, wanted) == {'remove': remove, 'add': add, 'changed': bool(remove or add)}


@pytest.mark.parametrize('current, wanted', [
    pytest.param({}, [], id='no-urls'),
    pytest.param({'urls': 'http://a:1'}, [], id='urls-not-a-list'),
    pytest.param({'urls': [1]}, [], id='url-not-a-string'),
    pytest.param({'urls': []}, 'http://a:1', id='wanted-not-a-list'),
])
def test_router_sync_refuses_what_is_not_a_list_of_urls(current, wanted):
    with pytest.raises(AnsibleFilterError):
        gateway_router_changes(current, wanted)


METRICS = os.path.join(ROOT, 'tests', 'unit', 'fixtures', 'vllm_router', 'metrics-0.1.17.txt')


def test_router_workers_read_from_the_routers_metrics():
    """A captured page of vllm-router 0.1.17: a listed worker held unhealthy, a removed one with two streams running."""
    with open(METRICS) as page:
        readings = gateway_router_workers(page.read())
    assert readings == {'http://127.0.0.1:18001': {'healthy': False, 'running': 0},
                        'http://127.0.0.1:18002': {'healthy': True, 'running': 2}}


@pytest.mark.parametrize('text, expected', [
    pytest.param('', {}, id='empty-page'),
    pytest.param('vllm_router_requests_total{route="/v1/completions"} 3\n', {}, id='no-worker-series'),
    pytest.param('vllm_router_running_requests{worker="http://a:1/"} 1\n', {'http://a:1': {'healthy': None, 'running': 1}},
                 id='running-without-health'),
    pytest.param('vllm_router_worker_health{worker="http://a:1"} 1\nvllm_router_running_requests{policy="x",worker="http://a:1"} 0\n',
                 {'http://a:1': {'healthy': True, 'running': 0}}, id='worker-label-not-first'),
])
def test_router_workers(text, expected):
    assert gateway_router_workers(text) == expected


@pytest.mark.parametrize('text', [
    pytest.param('vllm_router_worker_health{policy="x"} 1\n', id='no-worker-label'),
    pytest.param('not a sample line at all\n', id='not-prometheus'),
])
def test_router_workers_refuses_what_it_cannot_read(text):
    with pytest.raises(AnsibleFilterError):
        gateway_router_workers(text)


def test_a_drain_and_back_is_one_remove_then_one_add():
    """The drain sequence the role runs: remove from the router, (restart the worker), add back; a rerun calls nothing."""
    everything = gateway_router_urls(ENDPOINTS)
    drained = gateway_router_urls(ENDPOINTS, drained=['10.0.0.11:8001'])
    assert gateway_router_changes({'urls': everything}, drained) == {'remove': ['http://10.0.0.11:8001'], 'add': [], 'changed': True}
    assert gateway_router_changes({'urls': drained}, drained)['changed'] is False
    assert gateway_router_changes({'urls': drained}, everything) == {'remove': [], 'add': ['http://10.0.0.11:8001'], 'changed': True}


# --------------------------------------------------------------------------------------------------
# The files
# --------------------------------------------------------------------------------------------------

def _templar(overrides):
    variables = {'ansible_managed': 'Ansible managed', 'groups': {}, 'hostvars': {}}
    variables.update(_trusted(_load('roles/gateway/defaults/main.yml')))
    variables.update(_trusted(_load('roles/gateway/vars/main.yml')))
    variables.update(overrides)
    return Templar(loader=DataLoader(), variables=variables)


def _render(template, overrides):
    with open(os.path.join(ROLE, 'templates', template)) as handle:
        return _templar(overrides).template(trust_as_template(handle.read()), escape_backslashes=False,
                                            overrides={'trim_blocks': True, 'lstrip_blocks': False, 'newline_sequence': '\n'})


def _value(expression, overrides):
    return _templar(overrides).template(trust_as_template('{{ %s }}' % expression))


def _exec_start(text):
    """ExecStart's words up to --worker-urls (systemd's unquoting), and what follows it as written."""
    lines = [value for _section, name, value in systemd_directives(text) if name == 'ExecStart']
    assert len(lines) == 1, lines
    head, sep, tail = lines[0].partition(' --worker-urls ')
    assert sep, lines[0]
    return systemd_split(head, command_line=True), tail.strip()


def _help_flags():
    with open(HELP) as handle:
        return handle.read()


def test_unit_runs_the_pinned_router_on_loopback_with_the_workers_of_its_file():
    text = _render(UNIT, ROUTER)
    argv, workers = _exec_start(text)
    assert argv == _value('_gateway_router_argv', ROUTER)
    assert argv[0] == '/opt/llmfleet/gateway-router/vllm-router-0.1.17/bin/vllm-router'
    options = dict(zip(argv[1::2], argv[2::2]))
    assert options['--host'] == '127.0.0.1' and options['--port'] == '30000'
    assert options['--prometheus-host'] == '127.0.0.1' and options['--prometheus-port'] == '29000'
    assert options['--policy'] == 'cache_aware'
    assert options['--request-timeout-secs'] == '3600'
    assert options['--cb-timeout-duration-secs'] == '10'
    assert '--api-key' not in argv
    # Unbraced: systemd splits the variable into one word per URL.
    assert workers == '$LLMFLEET_GATEWAY_ROUTER_WORKERS'
    directives = systemd_directives(text)
    assert ('Service', 'EnvironmentFile', '/etc/llmfleet/gateway-router/workers.env') in directives
    for name, value in [('DynamicUser', 'yes'), ('NoNewPrivileges', 'yes'), ('CapabilityBoundingSet', ''),
                        ('ProtectSystem', 'strict'), ('PrivateDevices', 'yes'), ('MemoryDenyWriteExecute', 'yes'),
                        ('RestrictAddressFamilies', 'AF_UNIX AF_INET AF_INET6'), ('Restart', 'always')]:
        assert ('Service', name, value) in directives, name


def test_unit_without_circuit_breaker():
    argv, _workers = _exec_start(_render(UNIT, dict(ROUTER, gateway_router_circuit_breaker=False)))
    assert '--disable-circuit-breaker' in argv and '--cb-failure-threshold' not in argv


@pytest.mark.parametrize('changes', [
    pytest.param({}, id='defaults'),
    pytest.param({'gateway_router_circuit_breaker': False}, id='no-circuit-breaker'),
])
def test_every_flag_the_role_passes_is_in_the_pinned_routers_help(changes):
    """vllm-router 0.1.17's --help (captured): the same lookup router_venv.yml does on the node."""
    argv = _value('_gateway_router_argv', dict(ROUTER, **changes))
    flags = [word for word in argv if word.startswith('--')] + ['--worker-urls']
    assert [flag for flag in flags if flag not in _help_flags()] == []


def test_the_role_pins_the_version_the_lab_wheelhouse_holds_and_the_help_was_taken_from():
    with open(RECIPE) as handle:
        recipe = json.load(handle)
    pins = [item['requirement'] for item in recipe['wheels'] if item['requirement'].startswith('vllm-router==')]
    version = _load('roles/gateway/defaults/main.yml')['gateway_router_version']
    assert pins == ['vllm-router==' + version]
    assert os.path.basename(HELP) == 'help-%s.txt' % version


def test_workers_file_lists_the_workers_that_are_not_drained():
    text = _render(WORKERS, dict(ROUTER, gateway_drained=['10.0.0.11:8001']))
    lines = [line for line in text.split('\n') if line and not line.startswith('#')]
    assert lines == ['LLMFLEET_GATEWAY_ROUTER_WORKERS="http://10.0.0.11:8000 http://[fd00::12]:8000"']


def test_a_drain_changes_the_workers_file_and_not_the_unit():
    drained = dict(ROUTER, gateway_drained=['10.0.0.11:8001'])
    assert _render(WORKERS, ROUTER) != _render(WORKERS, drained)
    assert _render(UNIT, ROUTER) == _render(UNIT, drained)


def test_pip_installs_the_pin_from_the_wheelhouse_only():
    argv = _value('_gateway_router_pip_install_argv', ROUTER)
    assert argv == ['/opt/llmfleet/gateway-router/vllm-router-0.1.17/bin/pip', 'install', '--no-index', '--find-links',
                    'http://repo.lab:8080/wheels/router/', '--no-cache-dir', '--progress-bar', 'off', '--no-input',
                    '--trusted-host=repo.lab', 'vllm-router==0.1.17']
    https = _value('_gateway_router_pip_install_argv', dict(ROUTER, gateway_router_wheelhouse_url='https://wheels.example/r'))
    assert '--trusted-host=wheels.example' not in https and 'https://wheels.example/r/' in https


@pytest.mark.skipif(shutil.which('systemd-analyze') is None, reason='systemd-analyze is not installed on this machine')
def test_systemd_analyze_accepts_the_unit(tmp_path):
    base = tmp_path / 'router'
    binary = base / 'vllm-router-0.1.17' / 'bin' / 'vllm-router'
    binary.parent.mkdir(parents=True)
    binary.write_text('#!/bin/sh\nexit 0\n')
    binary.chmod(0o755)
    unit = tmp_path / 'llmfleet-gateway-router.service'
    unit.write_text(_render(UNIT, dict(ROUTER, gateway_router_base_dir=str(base))))
    result = subprocess.run(['systemd-analyze', 'verify', '--man=no', '--recursive-errors=no', str(unit)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_registered_readings_make_the_api_calls_and_the_venvs_to_drop():
    """vars/main.yml from what the role read: the router's list (GET /list_workers) and the venvs find found."""
    readings = dict(ROUTER, gateway_drained=['10.0.0.11:8001'],
                    __gateway_router_listed={'status': 200, 'json': {'urls': ['http://10.0.0.11:8000', 'http://10.0.0.13:8000']}},
                    __gateway_router_venvs={'files': [
                        {'path': '/opt/llmfleet/gateway-router/vllm-router-0.1.16', 'isdir': True},
                        {'path': '/opt/llmfleet/gateway-router/vllm-router-0.1.17', 'isdir': True}]})
    assert _value('_gateway_router_running', readings) is True
    assert _value('_gateway_router_sync', readings) == {'remove': ['http://10.0.0.13:8000'], 'add': ['http://[fd00::12]:8000'],
                                                        'changed': True}
    assert _value('_gateway_router_old_venvs', readings) == ['/opt/llmfleet/gateway-router/vllm-router-0.1.16']


@pytest.mark.parametrize('listed', [
    pytest.param({'status': -1, 'msg': 'Connection refused'}, id='refused'),
    pytest.param({'status': 404, 'json': {'detail': 'Not Found'}}, id='something-else-on-the-port'),
    pytest.param(None, id='not-read'),
])
def test_a_router_that_does_not_answer_is_started_not_called(listed):
    readings = dict(ROUTER)
    if listed is not None:
        readings['__gateway_router_listed'] = listed
    assert _value('_gateway_router_running', readings) is False
    assert _value('_gateway_router_sync', readings) == {'remove': [], 'add': [], 'changed': False}


@pytest.mark.parametrize('routing, packages, health', [
    pytest.param('cache_aware', ['nginx', 'python3-venv'], '/readiness', id='router'),
    pytest.param('least_conn', ['nginx'], '/health', id='nginx-alone'),
])
def test_packages_and_health_path(routing, packages, health):
    values = dict(ROUTER, gateway_routing=routing)
    assert _value('_gateway_packages', values) == packages
    assert _value('_gateway_proxied_locations', values)[1] == {'match': '= /health', 'uri': health}


def test_the_venv_is_built_again_unless_its_marker_holds_what_this_one_would_get():
    marker = _value('_gateway_router_marker_text', ROUTER)
    digest = _value("_gateway_router_marker_text | hash('sha1')", ROUTER)
    assert 'vllm-router' in marker
    assert _value('_gateway_router_venv_complete', dict(ROUTER, __gateway_router_marker={'stat': {'exists': True, 'checksum': digest}}))
    assert not _value('_gateway_router_venv_complete', dict(ROUTER, __gateway_router_marker={'stat': {'exists': True, 'checksum': '0' * 40}}))
    assert not _value('_gateway_router_venv_complete', dict(ROUTER, __gateway_router_marker={'stat': {'exists': False}}))
