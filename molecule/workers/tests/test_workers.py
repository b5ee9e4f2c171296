# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The workers on the 8 x MI300X lab instance: two dp workers serving (GPU 0 on NUMA node 0, GPU 4 on node 1),
their bindings checked against the profile's layout, the key, the hardening, the published endpoints, the tp and
hybrid plans the role rendered in check mode (side_effect.yml), and a --check --diff run that changes nothing.

The expected bindings come from the profile (lab/profiles/mi300x-8.json), not from the role: GPUs are numbered
in PCI order (as the stub tools report them), each CPU entry of the profile is a NUMA node whose CPUs are numbered
on from the previous entry's (as the NUMA stand-in numbers them), and the workers on a node
share its CPUs in contiguous, disjoint parts, the first ones one CPU more when uneven (roles/workers/README.md,
"CPU sets").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import json
import os
import re
import shlex
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'shared'))
from checks import assert_check_run_changes_nothing  # noqa: E402  pylint: disable=wrong-import-position
# The NUMA stand-in's own "0-3,8" writer: the form numactl takes.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'files'))
from numactl import cpu_list  # noqa: E402  pylint: disable=wrong-import-position

# The collection's unit reader, loaded from its file (plugins/plugin_utils/systemd_unit.py: it needs no collection loader).
_SYSTEMD_SPEC = importlib.util.spec_from_file_location('llmfleet_systemd_unit', os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), 'plugins', 'plugin_utils', 'systemd_unit.py'))
SYSTEMD_FILTER = importlib.util.module_from_spec(_SYSTEMD_SPEC)
_SYSTEMD_SPEC.loader.exec_module(SYSTEMD_FILTER)

testinfra_hosts = ['podman://llmfleet-molecule-%s' % os.environ.get('MOLECULE_SCENARIO_NAME', 'workers')]

PROJECT = os.environ.get('MOLECULE_PROJECT_DIRECTORY', '.')
EPHEMERAL = os.environ.get('MOLECULE_EPHEMERAL_DIRECTORY', '')
KEY = 'lab-worker-key-0123456789abcdefABCDEF'
MODEL = 'tiny-llama'
MODEL_PATH = '/var/lib/llmfleet/models/tiny-llama'
NUMACTL = '/usr/bin/numactl'
# name -> (GPUs, port) of the scenario's dp workers (molecule.yml: lab_workers_gpus), in the role's order.
DP = {'llmfleet-worker-0': ([0], 8000), 'llmfleet-worker-1': ([4], 8001)}
NAMES = sorted(DP)
VENV_RE = re.compile(r'^/opt/llmfleet/engines/vllm-0[.]32[.]0-[0-9a-f]{12}$')

with open(os.path.join(PROJECT, 'lab', 'profiles', 'mi300x-8.json')) as _profile:
    PROFILE = json.load(_profile)

# Asks a worker on the instance: the status and body of one request, with or without a key.
PROBE = r'''
import json, sys, urllib.error, urllib.request
url, key, body = sys.argv[1], sys.argv[2], sys.argv[3]
headers = {"Content-Type": "application/json"}
if key:
    headers["Authorization"] = "Bearer " + key
request = urllib.request.Request(url, data=body.encode() if body else None, headers=headers)
try:
    with urllib.request.urlopen(request, timeout=120) as response:
        print(json.dumps({"status": response.status, "body": response.read().decode()}))
except urllib.error.HTTPError as error:
    print(json.dumps({"status": error.code, "body": error.read().decode()}))
'''


def layout():
    """GPU index -> NUMA node, and NUMA node -> its CPUs, from the profile."""
    gpus = sorted(PROFILE['gpus'], key=lambda gpu: gpu['pci'])
    node_cpus, first = {}, 0
    for cpu in PROFILE['cpus']:
        node_cpus.setdefault(cpu['numa_node'], []).extend(range(first, first + cpu['cores']))
        first += cpu['cores']
    return dict((index, gpu['numa_node']) for index, gpu in enumerate(gpus)), node_cpus


def expected_bindings(groups):
    """(CPU list, memory nodes) of the workers over `groups` (lists of GPU indices), from the profile alone."""
    gpu_node, node_cpus = layout()
    nodes = [sorted(set(gpu_node[gpu] for gpu in group)) for group in groups]
    cpus = [[] for _group in groups]
    for node, all_cpus in node_cpus.items():
        members = [position for position, worker_nodes in enumerate(nodes) if node in worker_nodes]
        share, extra, start = len(all_cpus) // max(len(members), 1), len(all_cpus) % max(len(members), 1), 0
        for rank, position in enumerate(members):
            size = share + (1 if rank < extra else 0)
            cpus[position].extend(all_cpus[start:start + size])
            start += size
    return [(cpu_list(worker_cpus), ','.join(str(node) for node in worker_nodes)) for worker_cpus, worker_nodes in zip(cpus, nodes)]


def directives(text):
    """name -> [values] of a unit's directives, read by the collection's reader (systemd's continuation rules)."""
    found = {}
    for _section, name, value in SYSTEMD_FILTER.systemd_directives(text):
        found.setdefault(name, []).append(value)
    return found


def exec_start(unit):
    """The words of ExecStart (plain words only here: no quote, no % and no $ to unescape)."""
    (line,) = unit['ExecStart']
    assert not re.search(r'["\'%$\\]', line), line
    return shlex.split(line)


def environment(unit):
    return dict(word.partition('=')[::2] for value in unit.get('Environment', []) for word in shlex.split(value))


def flag(argv, name):
    return argv[argv.index(name) + 1]


def ask(host, url, key='', body=''):
    out = host.check_output('python3 -c %s %s %s %s' % (shlex.quote(PROBE), shlex.quote(url), shlex.quote(key), shlex.quote(body)))
    return json.loads(out)


def address(host):
    return host.check_output('hostname -I').split()[0]


def read_json(name):
    with open(os.path.join(EPHEMERAL, name)) as handle:
        return json.load(handle)


def rendered(name):
    data = read_json('workers-rendered-%s.json' % name)
    return data, dict((unit, directives(text)) for unit, text in data['units'].items())


def dp_bindings():
    return zip(NAMES, expected_bindings([DP[name][0] for name in NAMES]))


def test_dp_units_bind_each_worker_to_its_gpus_numa_node(host):
    assert list(expected_bindings([DP[name][0] for name in NAMES])) == [('0-103', '0'), ('104-207', '1')]
    for name, (cpus, nodes) in dp_bindings():
        gpus, port = DP[name]
        unit = directives(host.file('/etc/systemd/system/%s.service' % name).content_string)
        argv = exec_start(unit)
        assert argv[:3] == [NUMACTL, '--physcpubind=' + cpus, '--membind=' + nodes], argv
        assert VENV_RE.match(os.path.dirname(os.path.dirname(argv[3]))) and argv[3:6] == [argv[3], 'serve', MODEL_PATH], argv
        assert flag(argv, '--port') == str(port) and flag(argv, '--host') == address(host), argv
        assert '--tensor-parallel-size' not in argv
        env = environment(unit)
        assert env['CUDA_VISIBLE_DEVICES'] == ','.join(str(gpu) for gpu in gpus)
        assert 'HIP_VISIBLE_DEVICES' not in env and 'VLLM_API_KEY' not in env


def test_numactl_accepted_each_binding_for_the_profile(host):
    # The stand-in refuses a binding the profile's layout does not have; the running worker went through it.
    for name, (cpus, nodes) in dp_bindings():
        lines = [line for line in host.check_output('journalctl --no-pager -o cat -u %s.service' % name).splitlines()
                 if line.startswith('llmfleet-lab numactl:')]
        assert lines, name
        assert lines[-1].startswith('llmfleet-lab numactl: profile mi300x-8: CPUs %s, memory of node(s) %s;' % (cpus, nodes)), lines


def test_each_worker_serves_with_the_worker_key_and_refuses_without(host):
    base = 'http://%s' % address(host)
    completion = json.dumps({'model': MODEL, 'prompt': 'Hello', 'max_tokens': 1})
    for name in NAMES:
        url = '%s:%d' % (base, DP[name][1])
        assert host.service(name).is_running and host.service(name).is_enabled
        assert ask(host, url + '/health')['status'] == 200, name
        answer = ask(host, url + '/v1/completions', KEY, completion)
        assert answer['status'] == 200, (name, answer)
        body = json.loads(answer['body'])
        assert body['model'] == MODEL and len(body['choices']) == 1 and body['usage']['completion_tokens'] == 1, body
        for key in ('', 'wrong-key-0123456789abcdef'):
            assert ask(host, url + '/v1/completions', key, completion)['status'] == 401, (name, key)
            assert ask(host, url + '/v1/models', key)['status'] == 401, (name, key)


def test_worker_key_is_only_in_its_file(host):
    key_file = host.file('/var/lib/llmfleet/workers.key.env')
    assert key_file.user == 'llmfleet' and key_file.group == 'llmfleet' and key_file.mode == 0o600
    assert key_file.content_string == 'VLLM_API_KEY=%s\n' % KEY
    for name in DP:
        assert KEY not in host.file('/etc/systemd/system/%s.service' % name).content_string
        pid = host.check_output('systemctl show -p MainPID --value %s.service' % name)
        cmdline = host.check_output('tr "\\0" " " < /proc/%s/cmdline' % pid)
        assert KEY not in cmdline, cmdline
        assert host.check_output('stat -c %%U /proc/%s' % pid) == 'llmfleet'


def test_units_are_hardened_as_the_role_writes_them(host):
    wanted = {'User': 'llmfleet', 'Group': 'llmfleet', 'NoNewPrivileges': 'yes', 'ProtectSystem': 'strict', 'ProtectHome': 'yes', 'PrivateTmp': 'yes',
              'PrivateMounts': 'yes', 'ProtectKernelTunables': 'yes', 'ProtectKernelModules': 'yes', 'ProtectKernelLogs': 'yes',
              'ProtectControlGroups': 'yes', 'ProtectClock': 'yes', 'ProtectHostname': 'yes', 'ProtectProc': 'invisible',
              'LockPersonality': 'yes', 'RestrictRealtime': 'yes', 'RestrictSUIDSGID': 'yes',
              'RemoveIPC': 'yes', 'UMask': '0077', 'DevicePolicy': 'closed', 'KillMode': 'mixed', 'KillSignal': '2',
              'SendSIGKILL': 'yes', 'TimeoutStopUSec': '6s', 'Restart': 'always', 'RestartUSec': '2s',
              'LimitNOFILE': '16384', 'Type': 'exec'}
    for name in DP:
        out = host.check_output('systemctl show %s.service %s' % (name, ' '.join('-p %s' % key for key in sorted(wanted))))
        shown = dict(line.partition('=')[::2] for line in out.splitlines())
        assert dict((key, shown.get(key)) for key in wanted) == wanted, name
        unit = directives(host.file('/etc/systemd/system/%s.service' % name).content_string)
        assert unit['DeviceAllow'] == ['/dev/kfd rw', 'char-drm rw'], unit['DeviceAllow']
        assert unit['SystemCallFilter'] == ['@system-service', '~@privileged']
        assert unit['RestrictAddressFamilies'] == ['AF_UNIX AF_INET AF_INET6 AF_NETLINK']
        assert unit['CapabilityBoundingSet'] == unit['AmbientCapabilities'] == [''] and unit['RestrictNamespaces'] == ['yes']


def test_first_contact_passed_in_the_sandbox_and_was_recorded(host):
    # The engine was asked in llmfleet-worker-0's sandbox (cpu expected, cpu found: converge's log shows the line
    # "First contact: vllm 0.32.0+cpu ..."); the record is written only once the check passed, and its transient unit is
    # gone (--collect). The refusals (rocm expected, AITER's JIT directory read-only) are side_effect.yml's.
    record = host.file('/var/lib/llmfleet/workers.contact.sha256')
    assert record.user == 'root' and record.mode == 0o644
    assert re.match(r'^[0-9a-f]{64}\n$', record.content_string), record.content_string
    assert host.run('systemctl status llmfleet-worker-0-contact.service').rc == 4


def test_endpoints_fact_describes_each_worker(host):
    endpoints = read_json('workers-endpoints.json')
    venv = host.file('/opt/llmfleet/engines/current').linked_to
    assert VENV_RE.match(venv), venv
    assert [endpoint['name'] for endpoint in endpoints] == NAMES
    for endpoint in endpoints:
        gpus, port = DP[endpoint['name']]
        want = {'address': address(host), 'port': port, 'gpus': gpus, 'url': 'http://%s:%d' % (address(host), port),
                'model': MODEL, 'model_path': MODEL_PATH, 'engine': 'vllm', 'engine_version': '0.32.0', 'venv': venv}
        # The contract's keys (roles/workers/README.md); more may be added.
        assert dict((key, endpoint.get(key)) for key in want) == want, endpoint


def test_tp_plan_rendered_in_check_mode_spans_both_nodes():
    data, units = rendered('tp')
    gpus = list(range(8))
    ((cpus, nodes),) = expected_bindings([gpus])
    assert list(units) == ['llmfleet-worker-0'] and data['changed'] == [True]
    argv = exec_start(units['llmfleet-worker-0'])
    assert argv[:3] == [NUMACTL, '--physcpubind=' + cpus, '--membind=' + nodes] == [NUMACTL, '--physcpubind=0-207', '--membind=0,1']
    assert flag(argv, '--tensor-parallel-size') == '8' and flag(argv, '--port') == '8000'
    assert environment(units['llmfleet-worker-0'])['CUDA_VISIBLE_DEVICES'] == '0,1,2,3,4,5,6,7'
    # The dp worker on GPU 4 is no longer planned: the run would stop and remove it.
    assert data['stale'] == ['/etc/systemd/system/llmfleet-worker-1.service']
    assert [(e['name'], e['gpus'], e['port']) for e in data['endpoints']] == [('llmfleet-worker-0', gpus, 8000)]


def test_hybrid_plan_rendered_in_check_mode_keeps_each_group_on_its_node():
    data, units = rendered('hybrid')
    groups = [[0, 1, 2, 3], [4, 5, 6, 7]]
    bindings = expected_bindings(groups)
    assert bindings == [('0-103', '0'), ('104-207', '1')]
    assert sorted(units) == ['llmfleet-worker-0', 'llmfleet-worker-1'] and data['changed'] == [True, True] and data['stale'] == []
    for index, (group, (cpus, nodes)) in enumerate(zip(groups, bindings)):
        unit = units['llmfleet-worker-%d' % index]
        argv = exec_start(unit)
        assert argv[:3] == [NUMACTL, '--physcpubind=' + cpus, '--membind=' + nodes], argv
        assert flag(argv, '--tensor-parallel-size') == '4' and flag(argv, '--port') == str(8000 + index)
        assert environment(unit)['CUDA_VISIBLE_DEVICES'] == ','.join(str(gpu) for gpu in group)
    assert [(e['name'], e['gpus'], e['port']) for e in data['endpoints']] == [
        ('llmfleet-worker-0', groups[0], 8000), ('llmfleet-worker-1', groups[1], 8001)]


def test_hybrid_plan_of_groups_of_two_shares_each_node():
    plan = read_json('workers-plan-hybrid-2.json')
    groups = [[0, 1], [2, 3], [4, 5], [6, 7]]
    bindings = expected_bindings(groups)
    assert bindings == [('0-51', '0'), ('52-103', '0'), ('104-155', '1'), ('156-207', '1')]
    assert [(w['gpus'], w['cpus'], ','.join(str(node) for node in w['numa_nodes'])) for w in plan] == [
        (group, cpus, nodes) for group, (cpus, nodes) in zip(groups, bindings)]


def test_check_mode_on_the_converged_host_changes_nothing():
    assert_check_run_changes_nothing(__file__)


# SGLang (sglang.yml): its venv, its own parser on the seed's command lines, the workers role on them in check mode,
# the launcher's --help from the rendered unit. Serving SGLang needs a GPU (its kernels package): not tested here.
SGLANG_VENV_RE = re.compile(r'^/opt/llmfleet/engines-sglang/sglang-0[.]5[.]23-[0-9a-f]{12}$')
# The seed article's three SGLang command lines (sglang.yml) and SGLang 0.5.23's message for each wrong flag.
SEED_REFUSALS = {
    'cluster': ['unrecognized arguments: --enable-radix-cache'],
    'load_balance': ["argument --schedule-policy: invalid choice: 'shortest-queue' (choose from ", 'unrecognized arguments: --enable-load-balance'],
    'radix_cache': ['unrecognized arguments: --enable-radix-cache --radix-cache-max-size 100000'],
}
REFUSED_BY = 'sglang.launch_server refuses the flags: '
KEY_FILE = '/var/lib/llmfleet/workers.key.yaml'


def sglang():
    data = read_json('workers-sglang.json')
    return data, dict((unit, directives(text)) for unit, text in data['units'].items())


def test_sglang_is_installed_from_its_wheelhouse_in_a_venv_of_its_own(host):
    data, _units = sglang()
    engine = data['engine']
    assert (engine['name'], engine['version']) == ('sglang', '0.5.23')
    assert SGLANG_VENV_RE.match(engine['venv']), engine['venv']
    assert host.file('/opt/llmfleet/engines-sglang/current').linked_to == engine['venv']
    assert host.file(engine['venv'] + '/.llmfleet-engine').is_file
    assert host.check_output('%s/bin/python -c %s' % (engine['venv'], shlex.quote('import sglang; print(sglang.__version__)'))) == '0.5.23'
    # The vLLM workers' engine is where it was.
    assert VENV_RE.match(host.file('/opt/llmfleet/engines/current').linked_to)


@pytest.mark.parametrize('case', sorted(SEED_REFUSALS))
def test_sglangs_own_parser_refuses_each_wrong_flag_of_the_seed(case):
    data, _units = sglang()
    result = data['seed'][case]
    # The module's failure (registered; refusing is what the side effect checks): SGLang's message for each flag.
    assert result['msg'].startswith(REFUSED_BY), result
    assert result['parser'] == 'sglang.launch_server', result
    assert len(result['errors']) == len(SEED_REFUSALS[case]), result['errors']
    for error, expected in zip(result['errors'], SEED_REFUSALS[case]):
        assert error.startswith(expected), result['errors']


def test_sglangs_own_parser_accepts_the_corrected_command_line():
    data, _units = sglang()
    assert data['good'].get('failed') is False and 'errors' not in data['good'], data['good']
    assert data['good']['parser'] == 'sglang.launch_server'


def test_the_workers_role_stops_on_the_seeds_flags_with_sglangs_messages():
    data, _units = sglang()
    (message,) = data['refusal']
    assert message.startswith(REFUSED_BY), message
    assert "argument --schedule-policy: invalid choice: 'shortest-queue' (choose from " in message
    assert 'unrecognized arguments: --enable-load-balance --enable-radix-cache --radix-cache-max-size 100000' in message
    assert KEY not in message


def test_sglang_tp8_unit_runs_the_launcher_with_metrics_and_the_key_file():
    data, units = sglang()
    gpus = list(range(8))
    ((cpus, nodes),) = expected_bindings([gpus])
    assert list(units) == ['llmfleet-worker-0'] and data['changed'] == [True]
    unit = units['llmfleet-worker-0']
    argv = exec_start(unit)
    venv = data['engine']['venv']
    assert argv[:8] == [NUMACTL, '--physcpubind=' + cpus, '--membind=' + nodes, venv + '/bin/python', '-m',
                        'sglang.launch_server', '--model-path', MODEL_PATH]
    assert flag(argv, '--tp-size') == '8' and flag(argv, '--port') == '8000'
    assert flag(argv, '--context-length') == '4096' and flag(argv, '--mem-fraction-static') == '0.9'
    assert flag(argv, '--schedule-policy') == 'fcfs' and flag(argv, '--load-balance-method') == 'total_requests'
    assert argv.count('--enable-metrics') == 1
    assert argv[-2:] == ['--config', KEY_FILE] and KEY not in data['units']['llmfleet-worker-0']
    # SGLang reads the key from its --config file, not from an EnvironmentFile as vLLM does.
    assert not [value for value in unit.get('EnvironmentFile', []) if 'workers.key' in value], unit['EnvironmentFile']
    assert environment(unit)['CUDA_VISIBLE_DEVICES'] == '0,1,2,3,4,5,6,7'
    (endpoint,) = data['endpoints']
    assert (endpoint['engine'], endpoint['engine_version'], endpoint['venv']) == ('sglang', '0.5.23', venv)
    assert endpoint['health_url'] == endpoint['url'] + '/health_generate'


def test_sglang_launcher_help_runs_from_the_units_command_line_as_the_worker_user():
    data, units = sglang()
    help_run = data['help']
    unit = units['llmfleet-worker-0']
    argv = exec_start(unit)
    # The unit's command line less its --config file (the check run wrote no SGLang key file), then --help.
    (user,) = unit['User']
    assert user == 'llmfleet'
    assert help_run['argv'] == ['runuser', '-u', user, '--'] + argv[:-2] + ['--help']
    assert int(help_run['rc']) == 0
    assert help_run['stdout'].startswith('usage: sglang serve [-h] --model-path MODEL_PATH'), help_run['stdout'][:200]
    for option in ['--model-path', '--tp-size', '--schedule-policy', '--load-balance-method', '--enable-metrics',
                   '--disable-radix-cache', '--config']:
        assert option in help_run['stdout'], option
    # The seed's wrong flags are not SGLang's.
    for option in ['--enable-radix-cache', '--radix-cache-max-size', '--enable-load-balance']:
        assert re.search(r'(^|\s)%s\b' % re.escape(option), help_run['stdout']) is None, option
