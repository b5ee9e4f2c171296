# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hostile values through the real templates of the workers, tuning and rdma roles (issue 11, item 5).

Each template is rendered with ansible's Templar and the role's own defaults and vars (what a run
templates), with values holding a line break plus a directive, ``%``, ``$``, quotes and spaces.
Each such value is either refused (by the role's input rules, and by the systemd filters should a
value get past them), or the rendered file, read back the way its reader reads it, holds exactly
what was meant: the unit's directives are the same as with plain values, its ExecStart words are
the worker's argv and its environment the variables given (``systemd_split``, systemd's rules),
and ``systemd-analyze verify`` accepts the unit where this machine has it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import subprocess

import pytest
import yaml

from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from role_files import ROOT, load_yaml as _load, trusted as _trusted  # the collection loader is installed by role_files

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.rdma import rdma_input_problems  # noqa: E402
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.systemd_unit import systemd_directives, systemd_split, systemd_unit_read  # noqa: E402
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.tuning import tuning_input_problems  # noqa: E402
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.worker_plan import worker_commands, worker_plan  # noqa: E402
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.workers import workers_input_problems  # noqa: E402
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.multinode import multinode_plan  # noqa: E402

PLATFORM = {'key': 'Debian-12', 'name': 'Debian 12', 'supported': True, 'supported_names': ['Debian 12'],
            'kernel_managed': True}
KEY = 'aB3' * 16
ROCM = {'gpu_count': 2, 'gpus': [{'index': 0, 'numa_node': 0}, {'index': 1, 'numa_node': 0}]}
NUMA = {'nodes': [{'id': 0, 'cpus': [0, 1, 2, 3]}]}
HAS_SYSTEMD_ANALYZE = shutil.which('systemd-analyze') is not None

# Values that must come through as they are: specifiers, variables, quotes, spaces, shell characters.
HOSTILE_ENV = {'PCT': '100% %n %h', 'DOLLAR': '$HOME ${USER}', 'QUOTES': 'say "hi" it\'s', 'SPACES': '  a  b  ',
               'SHELL': '`id`; $(id) && x', 'BACKSLASH': 'C:\\dir\\', 'EMPTY': ''}
HOSTILE_FLAGS = {'served-model-name': 'x%y $HOME "q" a b', 'max-model-len': 512, 'enforce-eager': True,
                 'chat-template': '/srv/t %i.jinja'}
# A line break plus a directive that would run as root.
INJECTIONS = [
    ('workers_env', {'A': '1\nExecStartPre=+/usr/bin/id'}),
    ('workers_rocm_env', {'HSA_NO_SCRATCH_RECLAIM': '1\nUser=root'}),
    ('workers_extra_flags', {'served-model-name': 'm\nExecStartPre=+/usr/bin/id'}),
    ('workers_model_path', '/models/m\nExecStartPre=+/usr/bin/id'),
    ('workers_served_model_name', 'm\rUser=root'),
]


def _templar(role, overrides):
    variables = {'ansible_managed': 'Ansible managed', 'inventory_hostname': 'gpu-node-1', 'llmfleet_worker_api_key': KEY,
                 'ansible_check_mode': False,
                 'ansible_facts': {'rocm': ROCM, 'numa': NUMA}, 'llmfleet_platform': PLATFORM}
    variables.update(_trusted(_load('roles/%s/defaults/main.yml' % role)))
    variables.update(_trusted(_load('roles/%s/vars/main.yml' % role)))
    variables.update(overrides)
    return Templar(loader=DataLoader(), variables=variables)


def _render(role, template, overrides, **loop_vars):
    templar = _templar(role, dict(overrides, **loop_vars))
    with open(os.path.join(ROOT, 'roles', role, 'templates', template)) as handle:
        # As the template action renders a file (plugins/action/template.py): backslashes as written, trim_blocks.
        return templar.template(trust_as_template(handle.read()), escape_backslashes=False,
                                overrides={'trim_blocks': True, 'lstrip_blocks': False, 'newline_sequence': '\n'})


def _value(role, expression, overrides):
    return _templar(role, overrides).template(trust_as_template('{{ %s }}' % expression))


def _exec_start(directives):
    lines = [value for _section, name, value in directives if name == 'ExecStart']
    assert len(lines) == 1, lines
    return systemd_split(lines[0], command_line=True)


def _verify(tmp_path, text, name):
    unit = tmp_path / name
    unit.write_text(text)
    result = subprocess.run(['systemd-analyze', 'verify', '--man=no', '--recursive-errors=no', str(unit)],
                            capture_output=True, text=True, check=False)
    return result.returncode, result.stdout + result.stderr


def _stub_venv(tmp_path):
    """A venv whose engine binaries exist, for systemd-analyze (it checks the executables of Exec lines)."""
    venv = tmp_path / 'venv'
    (venv / 'bin').mkdir(parents=True)
    for name in ('vllm', 'python'):
        stub = venv / 'bin' / name
        stub.write_text('#!/bin/sh\nexit 0\n')
        stub.chmod(0o755)
    return str(venv)


WORKER_UNIT = 'etc/systemd/system/llmfleet-worker.service.j2'
MODEL_MARKER_SHA256 = 'a' * 64
RCCL_SHA256 = 'b' * 64


def _reads(venv):
    """What the role's preflight read registers (__workers_reads): the venv as a directory, rccl.env and the marker."""
    return _files({'record': {'exists': False}, 'venv': {'exists': True, 'islnk': False},
                   'rccl': {'exists': True, 'checksum': RCCL_SHA256}, 'model': {'exists': True, 'checksum': MODEL_MARKER_SHA256}})


def _files(readings):
    """The stat loop's result, one stat per name, as the workers role registers it."""
    return {'results': [{'item': {'name': name}, 'stat': stat} for name, stat in readings.items()]}


def _worker_unit(overrides):
    # The plan as vars/main.yml makes it (_workers_plan), with the filters called directly: the plugin loader does
    # not find workers.py once other tests imported it as a plain module.
    engine = _value('workers', '_workers_engine', overrides)
    common = _value('workers', '_workers_common_flags', overrides)
    variables = _templar('workers', overrides).available_variables
    plan = worker_commands(worker_plan(ROCM, NUMA, mode='dp', tp_size=1, gpus=[], port_base=8000, prefix='llmfleet-worker'),
                           engine['command'], engine['flags'], common, variables['workers_bind_address'],
                           numa_pinning=variables['workers_numa_pinning'],
                           identity=_value('workers', '_workers_identity', overrides))
    return plan, _render('workers', WORKER_UNIT, overrides, worker=plan[0])


@pytest.mark.parametrize('engine', ['vllm', 'sglang'])
@pytest.mark.parametrize('rdma', [False, True])
def test_worker_unit_holds_exactly_the_hostile_values(tmp_path, engine, rdma):
    venv = _stub_venv(tmp_path)
    plain = {'workers_engine': engine, 'workers_rdma': rdma, 'workers_venv': venv, 'workers_numa_pinning': False,
             'workers_bind_address': '10.0.0.11', '__workers_reads': _reads(venv)}
    hostile = dict(plain, workers_env=HOSTILE_ENV, workers_extra_flags=HOSTILE_FLAGS,
                   workers_model_path='/srv/models/my model %i $X')
    # The input rules let these through (they are values, not structure)...
    values = dict(_load('roles/workers/defaults/main.yml'), **hostile)
    assert workers_input_problems(values, PLATFORM, rocm=ROCM, numa=NUMA, api_key=KEY) == []

    _plan, baseline = _worker_unit(plain)
    plan, text = _worker_unit(hostile)
    directives = systemd_directives(text)
    # ...and they add no directive: the same names in the same sections as with plain values.
    assert sorted(set((section, name) for section, name, _value in directives)) == \
        sorted(set((section, name) for section, name, _value in systemd_directives(baseline)))

    # ExecStart is the worker's argv, word for word (SGLang: plus its --config file with the key).
    key_file = _value('workers', '_workers_key_file', hostile)
    expected = plan[0]['prefix'] + plan[0]['argv'] + (['--config', key_file] if engine == 'sglang' else [])
    assert _exec_start(directives) == expected
    assert '/srv/models/my model %i $X' in expected and 'x%y $HOME "q" a b' in expected

    # The environment holds the variables as given, and the internal sockets' settings.
    environment = systemd_unit_read(text)['environment']
    for name, value in HOSTILE_ENV.items():
        assert environment[name] == value, name
    assert environment['GLOO_SOCKET_IFNAME'] == 'lo' and environment['VLLM_HOST_IP'] == '127.0.0.1'
    assert environment['VLLM_LOOPBACK_IP'] == '127.0.0.1'
    # What the worker runs on, besides its command line (issue 12): the model marker's and rccl.env's digests, and
    # vLLM's API server leaves once its engine core died.
    assert environment['LLMFLEET_MODEL_MARKER_SHA256'] == MODEL_MARKER_SHA256
    assert environment['LLMFLEET_RCCL_ENV_SHA256'] == RCCL_SHA256
    assert environment['VLLM_KEEP_ALIVE_ON_ENGINE_DEATH'] == '0'
    # The unit runs the real venv a link names; the endpoint says which, and what it serves.
    assert expected[0] == venv + ('/bin/vllm' if engine == 'vllm' else '/bin/python')
    assert dict((key, plan[0]['endpoint'][key]) for key in ('model', 'model_path', 'engine', 'venv')) == \
        {'model': 'model', 'model_path': '/srv/models/my model %i $X', 'engine': engine, 'venv': venv}
    # Kill settings fitted to vLLM's process tree (roles/workers/README.md, "Stop and crash recovery").
    service = dict((name, value) for section, name, value in directives if section == 'Service')
    assert dict((name, service[name]) for name in ('KillMode', 'KillSignal', 'SendSIGKILL', 'Restart')) == \
        {'KillMode': 'mixed', 'KillSignal': 'SIGINT', 'SendSIGKILL': 'yes', 'Restart': 'always'}

    # The key is in no unit; vLLM reads it from its EnvironmentFile.
    assert KEY not in text
    files = [value for _section, name, value in directives if name == 'EnvironmentFile']
    assert files == ['-/etc/llmfleet/rccl.env'] + ([key_file] if engine == 'vllm' else [])

    rdma_lines = [(name, value) for _section, name, value in directives
                  if value in ('char-infiniband_verbs rw', '/dev/infiniband/rdma_cm rw') or name == 'LimitMEMLOCK']
    assert rdma_lines == ([('LimitMEMLOCK', 'infinity'), ('DeviceAllow', 'char-infiniband_verbs rw'),
                           ('DeviceAllow', '/dev/infiniband/rdma_cm rw')] if rdma else [])

    if not HAS_SYSTEMD_ANALYZE:
        pytest.skip('systemd-analyze is not installed on this machine: the unit was parsed, not verified by systemd')
    rc, output = _verify(tmp_path, text, 'llmfleet-worker-0.service')
    assert rc == 0, output


def _ray_member(name, address):
    return {'name': name, 'env_text': 'NCCL_SOCKET_IFNAME="=ens5"\n', 'gpus': 2, 'rocm_version': '7.1.1', 'venv': 'v',
            'model': 'm', 'ray': True, 'interfaces': {'ens5': {'ipv4': {'address': address}}}}


@pytest.mark.parametrize('host', ['gpu-node-1', 'gpu-node-2'])
def test_ray_units_of_a_multinode_engine(tmp_path, host):
    venv = _stub_venv(tmp_path)
    (tmp_path / 'venv' / 'bin' / 'ray').write_text('#!/bin/sh\nexit 0\n')
    (tmp_path / 'venv' / 'bin' / 'ray').chmod(0o755)
    part = multinode_plan([_ray_member('gpu-node-1', '10.1.0.11'), _ray_member('gpu-node-2', '10.1.0.12')], host,
                          backend='ray', ray_temp_dir='/var/lib/llmfleet/ray/tmp')
    assert part['problems'] == []
    overrides = {'workers_venv': venv, 'workers_numa_pinning': False, 'workers_bind_address': '10.0.0.11',
                 'workers_multinode_group': 'gpu_nodes', 'workers_multinode_backend': 'ray', 'inventory_hostname': host,
                 '__workers_multinode_part': part, '__workers_reads': _reads(venv), 'workers_ray_auth_token': 'f' * 64}
    engine = _value('workers', '_workers_engine', overrides)
    plan = worker_commands(worker_plan(ROCM, NUMA, mode='tp', prefix='llmfleet-worker-engine'), engine['command'],
                           engine['flags'], _value('workers', '_workers_common_flags', overrides), '10.0.0.11',
                           numa_pinning=False, identity=_value('workers', '_workers_identity', overrides), multinode=part,
                           ray_command=[venv + '/bin/ray'], ray_name='llmfleet-worker-ray')
    assert [worker['name'] for worker in plan] == (['llmfleet-worker-ray', 'llmfleet-worker-engine-0']
                                                   if host == 'gpu-node-1' else ['llmfleet-worker-ray'])
    ray_text = _render('workers', WORKER_UNIT, overrides, worker=plan[0])
    directives = systemd_directives(ray_text)
    service = dict((name, value) for section, name, value in directives if section == 'Service')
    assert _exec_start(directives) == [venv + '/bin/ray'] + part['ray']['args']
    # Ray's own stop: SIGTERM to the whole group; its session directory outside the private /tmp; no worker key.
    assert dict((name, service[name]) for name in ('KillMode', 'KillSignal', 'Restart', 'User')) == \
        {'KillMode': 'control-group', 'KillSignal': 'SIGTERM', 'Restart': 'always', 'User': 'llmfleet'}
    assert service['ReadWritePaths'].split()[-1] == '/var/lib/llmfleet/ray'
    assert 'ExecStop' not in service
    assert [value for _section, name, value in directives if name == 'EnvironmentFile'] == ['-/etc/llmfleet/rccl.env']
    environment = systemd_unit_read(ray_text)['environment']
    # GPU visibility for Ray on ROCm: HIP and CUDA alike, never ROCR; the token by its path, never its value.
    assert environment['HIP_VISIBLE_DEVICES'] == environment['CUDA_VISIBLE_DEVICES'] == '0,1'
    assert not [name for name in environment if name.startswith('ROCR')]
    assert environment['RAY_EXPERIMENTAL_NOSET_HIP_VISIBLE_DEVICES'] == '1'
    assert environment['RAY_AUTH_MODE'] == 'token' and environment['RAY_AUTH_TOKEN_PATH'] == '/var/lib/llmfleet/ray.token'
    assert environment['VLLM_HOST_IP'] == part['address'] and environment['GLOO_SOCKET_IFNAME'] == 'ens5'
    assert 'f' * 64 not in ray_text and 'RAY_ADDRESS' not in environment
    texts = {'llmfleet-worker-ray.service': ray_text}
    if host == 'gpu-node-1':
        engine_text = _render('workers', WORKER_UNIT, overrides, worker=plan[1])
        engine_directives = systemd_directives(engine_text)
        assert '--distributed-executor-backend ray' in ' '.join(_exec_start(engine_directives))
        unit = dict((name, value) for section, name, value in engine_directives if section == 'Unit')
        assert unit['After'].split() == unit['Wants'].split() == ['network-online.target', 'llmfleet-worker-ray.service']
        engine_service = [value for section, name, value in engine_directives if name == 'ReadWritePaths']
        assert engine_service[0].endswith(' /var/lib/llmfleet/ray')
        assert systemd_unit_read(engine_text)['environment']['RAY_ADDRESS'] == '10.1.0.11:6379'
        texts['llmfleet-worker-engine-0.service'] = engine_text
    if not HAS_SYSTEMD_ANALYZE:
        pytest.skip('systemd-analyze is not installed on this machine: the units were parsed, not verified by systemd')
    for name, text in texts.items():
        rc, output = _verify(tmp_path, text, name)
        assert rc == 0, output


@pytest.mark.parametrize('variable, value', INJECTIONS, ids=[name for name, _value in INJECTIONS])
def test_worker_unit_refuses_a_line_break(variable, value):
    values = dict(_load('roles/workers/defaults/main.yml'), workers_bind_address='10.0.0.11')
    values[variable] = value
    problems = workers_input_problems(values, PLATFORM, rocm=ROCM, numa=NUMA, api_key=KEY)
    assert problems and variable in problems[0]
    # Past the rules (a caller that skipped preflight), the systemd filters refuse to write it.
    with pytest.raises(AnsibleError):
        _worker_unit({'workers_bind_address': '10.0.0.11', variable: value})


def test_the_acceptance_injection_is_refused_naming_the_variable():
    values = dict(_load('roles/workers/defaults/main.yml'), workers_bind_address='10.0.0.11',
                  workers_env={'A': '1\nExecStartPre=+/usr/bin/id'})
    problems = workers_input_problems(values, PLATFORM, rocm=ROCM, numa=NUMA, api_key=KEY)
    assert problems == ['workers_env entry "A": "1\\nExecStartPre=+/usr/bin/id" has a line break or another control'
                        ' character, which would end its line in the worker unit: give it on one line.']


@pytest.mark.parametrize('engine, expected', [('vllm', 'VLLM_API_KEY=' + KEY), ('sglang', 'api-key: "%s"' % KEY)])
def test_worker_key_file(engine, expected):
    text = _value('workers', '_workers_key_text', {'workers_engine': engine})
    assert text == expected
    if engine == 'sglang':
        assert yaml.safe_load(text) == {'api-key': KEY}
    else:
        assert systemd_split(text) == [expected]


# tuning: the two CPU power units (the sysctl file holds the role's own kernel.numa_balancing = 0, nothing a user sets).
@pytest.mark.parametrize('template, overrides, words', [
    ('etc/systemd/system/llmfleet-cstate-limit.service.j2', {'tuning_cstate_disabled_states': [2, '3']},
     [['--cpu', 'all', 'idle-set', '--disable', '2'], ['--cpu', 'all', 'idle-set', '--disable', '3']]),
    ('etc/systemd/system/llmfleet-cpu-governor.service.j2', {'tuning_cpu_governor_name': 'schedutil'},
     [['--cpu', 'all', 'frequency-set', '--governor', 'schedutil']]),
])
def test_tuning_units(tmp_path, template, overrides, words):
    cpupower = tmp_path / 'cpupower'
    cpupower.write_text('#!/bin/sh\nexit 0\n')
    cpupower.chmod(0o755)
    text = _render('tuning', template, dict(overrides, _tuning_cpupower=str(cpupower)))
    directives = systemd_directives(text)
    assert [systemd_split(value, command_line=True) for _section, name, value in directives if name == 'ExecStart'] == \
        [[str(cpupower)] + item for item in words]
    if not HAS_SYSTEMD_ANALYZE:
        pytest.skip('systemd-analyze is not installed on this machine: the unit was parsed, not verified by systemd')
    rc, output = _verify(tmp_path, text, os.path.basename(template)[:-3])
    assert rc == 0, output


@pytest.mark.parametrize('variable, value', [
    ('tuning_cpu_governor_name', 'performance\nExecStartPre=+/usr/bin/id'),
    ('tuning_cpu_governor_name', 'performance %n'),
    ('tuning_cstate_disabled_states', ['2\nExecStartPre=+/usr/bin/id']),
    ('tuning_kernel_args_extra', ['quiet"\nGRUB_DISABLE=x']),
    ('tuning_kernel_args_extra', ['a=$(id)']),
])
def test_tuning_refuses(variable, value):
    values = dict(_load('roles/tuning/defaults/main.yml'))
    values[variable] = value
    problems = tuning_input_problems(values, PLATFORM)
    assert problems and variable in ' '.join(problems)


def test_tuning_grub_dropin_holds_the_arguments():
    args = ['amd_iommu=on', 'x=100%', 'a,b:c/d@e~f+g']
    text = _render('tuning', 'etc/default/grub.d/llmfleet-tuning.cfg.j2', {'tuning_kernel_args_extra': args})
    assert tuning_input_problems(dict(_load('roles/tuning/defaults/main.yml'), tuning_kernel_args_extra=args), PLATFORM) == []
    # update-grub sources the file with a shell: read it the same way.
    result = subprocess.run(['sh', '-c', '. "$1"; printf %s "$GRUB_CMDLINE_LINUX_DEFAULT"', 'sh', '/dev/stdin'],
                            input=text, capture_output=True, text=True, check=True, env={'GRUB_CMDLINE_LINUX_DEFAULT': 'quiet'})
    assert result.stdout.split(' ') == ['quiet', 'iommu=pt', 'pci=realloc=off'] + args


# rdma: the NCCL/RCCL environment file (read by systemd and by shells) and the modules-load file.
RDMA_VALUES = {'rdma_env_extra': {'NCCL_ALGO': 'Ring,Tree', 'NCCL_X': '100% a  b #c ;d', 'NCCL_N': 3},
               'rdma_nccl_debug': 'INFO', 'rdma_net_plugin': 'librccl-net.so', 'rdma_socket_ifname': 'eth0'}


def test_rccl_env_holds_exactly_the_values():
    values = dict(_load('roles/rdma/defaults/main.yml'), **RDMA_VALUES)
    assert rdma_input_problems(values, PLATFORM, interfaces=['eth0'], socket_ifnames=['eth0']) == []
    overrides = dict(RDMA_VALUES, ansible_facts={'interfaces': ['eth0'], 'rdma': {'devices': []}})
    text = _render('rdma', 'etc/llmfleet/rccl.env.j2', overrides)
    expected = {'NCCL_SOCKET_IFNAME': '=eth0', 'NCCL_NET_PLUGIN': 'librccl-net.so', 'HSA_NO_SCRATCH_RECLAIM': '1',
                'NCCL_DEBUG': 'INFO', 'NCCL_ALGO': 'Ring,Tree', 'NCCL_X': '100% a  b #c ;d', 'NCCL_N': '3'}
    # As systemd reads an EnvironmentFile: NAME="value" lines, comments skipped, no specifiers.
    read = {}
    for line in text.split('\n'):
        if line and not line.startswith('#'):
            name, _sep, value = line.partition('=')
            assert value.startswith('"') and value.endswith('"') and '"' not in value[1:-1], line
            read[name] = value[1:-1]
    assert read == expected
    # As a shell reads it.
    result = subprocess.run(['sh', '-c', 'set -a; . /dev/stdin; env'], input=text, capture_output=True, text=True,
                            check=True, env={})
    shell = dict(line.split('=', 1) for line in result.stdout.splitlines() if '=' in line)
    assert dict((name, shell[name]) for name in expected) == expected


@pytest.mark.parametrize('variable, value', [
    ('rdma_env_extra', {'A': 'x\nLD_PRELOAD=/tmp/x.so'}),
    ('rdma_env_extra', {'A': 'x"; id; "'}),
    ('rdma_env_extra', {'A': '$(id)'}),
    ('rdma_env_extra', {'A\nB': '1'}),
    ('rdma_nccl_debug', 'INFO\nLD_PRELOAD=/tmp/x.so'),
    ('rdma_net_plugin', 'lib x.so'),
    ('rdma_modules_extra', ['mlx5_ib\nblacklist x']),
])
def test_rdma_refuses(variable, value):
    values = dict(_load('roles/rdma/defaults/main.yml'), rdma_socket_ifname='eth0')
    values[variable] = value
    problems = rdma_input_problems(values, PLATFORM, interfaces=['eth0'], socket_ifnames=['eth0'])
    assert problems and variable in ' '.join(problems)


def test_modules_load_file_holds_one_module_a_line():
    text = _render('rdma', 'etc/modules-load.d/llmfleet-rdma.conf.j2', {'rdma_modules_extra': ['mlx5_ib', 'bnxt_re']})
    assert [line for line in text.split('\n') if line and not line.startswith('#')] == \
        ['rdma_cm', 'ib_ipoib', 'ib_uverbs', 'rdma_ucm', 'mlx5_ib', 'bnxt_re']


# Issue 12: what the workers run on, as vars/main.yml derives it from the engine role's fact and preflight's stat.
ENGINE = {'name': 'vllm', 'version': '0.32.0', 'venv': '/opt/llmfleet/engines/vllm-0.32.0-3f1c2a9e0b7d',
          'model_name': 'tiny-llama', 'model_path': '/var/lib/llmfleet/models/tiny-llama', 'model_id': 'sha256:' + 'c' * 64,
          'model_marker_sha256': 'd' * 64, 'model_changed': False}
CURRENT = _files({'venv': {'exists': True, 'islnk': True, 'lnk_source': '/opt/llmfleet/engines/vllm-0.31.1'},
                  'model': {'exists': True, 'checksum': MODEL_MARKER_SHA256}, 'rccl': {'exists': False}})


@pytest.mark.parametrize('overrides, expression, expected', [
    ({'llmfleet_engine': ENGINE}, 'workers_venv', ENGINE['venv']),
    ({'llmfleet_engine': ENGINE}, 'workers_model_path', ENGINE['model_path']),
    ({'llmfleet_engine': ENGINE}, 'workers_served_model_name', 'tiny-llama'),
    ({'llmfleet_engine': dict(ENGINE, name='sglang')}, 'workers_engine', 'sglang'),
    ({'llmfleet_engine': dict(ENGINE, model_name='', model_path='')}, 'workers_served_model_name', 'model'),
    ({'llmfleet_engine': dict(ENGINE, model_name='', model_path='')}, 'workers_model_path', '/var/lib/llmfleet/models/model'),
    ({}, 'workers_venv', '/opt/llmfleet/engines/current'),
    ({}, 'workers_engine', 'vllm'),
    # current resolved to the venv it names, and that venv's version read from its name.
    ({'__workers_reads': CURRENT}, '_workers_venv', '/opt/llmfleet/engines/vllm-0.31.1'),
    ({'__workers_reads': CURRENT}, '_workers_identity.engine_version', '0.31.1'),
    ({'__workers_reads': CURRENT}, '_workers_engine.command[0]', '/opt/llmfleet/engines/vllm-0.31.1/bin/vllm'),
    ({'llmfleet_engine': ENGINE}, '_workers_identity.engine_version', '0.32.0'),
    # A venv whose name does not say its version (not one of the engine role's): no version rather than a guess.
    ({'workers_venv': '/srv/venv'}, '_workers_identity.engine_version', ''),
    # The model's identity: the engine role's marker digest when it installed this model, else the marker's as read.
    ({'llmfleet_engine': ENGINE, '__workers_reads': CURRENT}, '_workers_model_marker_sha256', 'd' * 64),
    ({'__workers_reads': CURRENT}, '_workers_model_marker_sha256', MODEL_MARKER_SHA256),
    ({'llmfleet_engine': ENGINE, 'workers_model_path': '/srv/other', '__workers_reads': CURRENT},
     '_workers_model_marker_sha256', MODEL_MARKER_SHA256),
    ({}, '_workers_model_marker_sha256', ''),
    ({'llmfleet_engine': dict(ENGINE, model_changed=True)}, '_workers_model_changed', True),
    ({'llmfleet_engine': dict(ENGINE, model_changed=True), 'workers_model_path': '/srv/other'}, '_workers_model_changed', False),
    ({}, '_workers_model_changed', False),
    # rccl.env: its digest, "absent" without it, and a change the rdma role makes in this check run.
    ({'__workers_reads': CURRENT}, '_workers_rccl_env_sha256', 'absent'),
    ({'__workers_reads': _reads('/v')}, '_workers_rccl_env_sha256', RCCL_SHA256),
    ({'__workers_reads': _reads('/v'), 'ansible_check_mode': True, '__rdma_env_file': {'changed': True}},
     '_workers_rccl_env_sha256', 'changes in this run'),
    ({'__workers_reads': _reads('/v'), 'ansible_check_mode': False, '__rdma_env_file': {'changed': True}},
     '_workers_rccl_env_sha256', RCCL_SHA256),
], ids=lambda value: None if isinstance(value, dict) else str(value))
def test_what_the_workers_run_on(overrides, expression, expected):
    assert _value('workers', expression, overrides) == expected


# Preflight reads (one stat each) only what this run needs: the model's marker unless the engine role published its digest
# for this very model in this run, Ray's command only for one engine over several nodes.
@pytest.mark.parametrize('overrides, expected', [
    ({}, ['record', 'contact', 'venv', 'rccl', 'model']),
    ({'llmfleet_engine': ENGINE}, ['record', 'contact', 'venv', 'rccl']),
    ({'llmfleet_engine': ENGINE, 'workers_model_path': '/srv/other'}, ['record', 'contact', 'venv', 'rccl', 'model']),
    ({'workers_multinode_group': 'pairs'}, ['record', 'contact', 'venv', 'rccl', 'model', 'ray']),
], ids=['alone', 'after-the-engine-role', 'another-model', 'multinode'])
def test_what_preflight_reads(overrides, expected):
    reads = _value('workers', '_workers_reads_wanted', overrides)
    assert [read['name'] for read in reads] == expected
    paths = dict((read['name'], read['path']) for read in reads)
    assert paths['venv'] == _value('workers', 'workers_venv', overrides)
    if 'model' in paths:
        assert paths['model'] == _value('workers', 'workers_model_path', overrides).rstrip('/') + '/.llmfleet-model'
    if 'ray' in paths:
        assert paths['ray'] == _value('workers', 'workers_venv', overrides) + '/bin/ray'


def test_endpoint_carries_what_the_worker_runs_on():
    overrides = {'llmfleet_engine': ENGINE, 'workers_bind_address': '10.0.0.11'}
    plan, _text = _worker_unit(overrides)
    assert plan[0]['endpoint'] == {'name': 'llmfleet-worker-0', 'address': '10.0.0.11', 'port': 8000, 'gpus': [0],
                                   'url': 'http://10.0.0.11:8000', 'model': 'tiny-llama', 'model_path': ENGINE['model_path'],
                                   'engine': 'vllm', 'engine_version': '0.32.0', 'venv': ENGINE['venv'],
                                   'health_url': 'http://10.0.0.11:8000/health'}


# SGLang serves /metrics only with --enable-metrics, which the roll's drain reads: always on, whatever the extra flags
# say (an input rule refuses it off); each endpoint names the engine and its readiness endpoint.
@pytest.mark.parametrize('engine, extra, metrics, health', [
    ('sglang', {}, True, '/health_generate'),
    ('sglang', {'enable-metrics': False}, True, '/health_generate'),
    ('vllm', {}, False, '/health'),
], ids=['sglang', 'sglang-extra-flag-off', 'vllm'])
def test_sglang_workers_always_serve_metrics(engine, extra, metrics, health):
    overrides = {'llmfleet_engine': dict(ENGINE, name=engine), 'workers_bind_address': '10.0.0.11',
                 'workers_extra_flags': extra}
    plan, text = _worker_unit(overrides)
    assert ('--enable-metrics' in plan[0]['argv']) is metrics
    assert plan[0]['argv'].count('--enable-metrics') == (1 if metrics else 0)
    assert ('--enable-metrics' in _exec_start(systemd_directives(text))) is metrics
    assert (plan[0]['endpoint']['engine'], plan[0]['endpoint']['health_url']) == (engine, 'http://10.0.0.11:8000' + health)


# The engine role's llmfleet_engine (roles/engine/tasks/configure.yml) from its vars.
LOCK = {'content': 'vllm==0.32.0 --hash=sha256:00\n'}


@pytest.mark.parametrize('overrides, expression, expected', [
    ({'engine_model_name': 'm', 'engine_model_source': 'http://repo/m.tar.gz', 'engine_model_checksum': 'sha256:' + 'A' * 64},
     '_engine_model_id', 'sha256:' + 'A' * 64),
    ({'engine_model_name': 'm', 'engine_model_source': 'http://repo/m.tar.gz', 'engine_model_checksum': 'sha256:http://repo/m.sha256'},
     '_engine_model_id', 'archive http://repo/m.tar.gz sha256:http://repo/m.sha256'),
    ({'engine_model_name': 'm', 'engine_model_source': 'org/model', 'engine_model_revision': 'abc123'},
     '_engine_model_id', 'org/model@abc123'),
    ({'engine_model_name': 'm', 'engine_model_source': '/srv/m'}, '_engine_model_id', 'directory /srv/m'),
    ({}, '_engine_model_id', ''),
    # Activated: this version's venv (in check mode too); not activated: the venv current names, its version from its name.
    ({'__engine_lock': LOCK, 'engine_requirements_file': 'requirements.txt', 'engine_wheelhouse_url': 'http://repo/w/'},
     '_engine_published_venv', '/opt/llmfleet/engines/vllm-0.32.0-' + 'x'),
    ({'engine_activate': False, '__engine_current': {'stat': {'islnk': True, 'lnk_source': '/opt/llmfleet/engines/vllm-0.31.1'}}},
     '_engine_published_venv', '/opt/llmfleet/engines/vllm-0.31.1'),
    ({'engine_activate': False, '__engine_current': {'stat': {'islnk': True, 'lnk_source': '/opt/llmfleet/engines/vllm-0.31.1-0123456789ab'}}},
     '_engine_published_version', '0.31.1'),
    ({'__engine_current': {'skipped': True}}, '_engine_published_version', '0.32.0'),
], ids=lambda value: None if isinstance(value, dict) else str(value)[:40])
def test_what_the_engine_publishes(overrides, expression, expected):
    overrides = dict({'__engine_current': {'skipped': True}}, **overrides)
    found = _value('engine', expression, overrides)
    if expected.endswith('-x'):
        assert found.startswith(expected[:-1]) and len(found) == len(expected) - 1 + 12
    else:
        assert found == expected


# What changed, and which workers run, as the role registers them (the template loop, systemctl is-active, the stat of
# each restart mark): vars/main.yml's _workers_restarts, the decision of the service phase and of the roll.
PLANNED = [{'name': 'llmfleet-worker-0'}, {'name': 'llmfleet-worker-1'}]
MARKS = {name: '/var/lib/llmfleet/%s.restart-pending' % name for name in ('llmfleet-worker-0', 'llmfleet-worker-1')}


def _registered(changed=(), active=('active', 'active'), marked=(), key_changed=False, gateways=('gw-1',)):
    return {'__workers_planned': PLANNED, 'groups': {'gateways': list(gateways)},
            '__workers_units': {'changed': bool(changed), 'results': [
                {'worker': worker, 'changed': worker['name'] in changed} for worker in PLANNED]},
            '__workers_active': {'rc': 0, 'stdout_lines': list(active)},
            '__workers_key': {'changed': key_changed},
            '__workers_reads': _files(dict((name, {'exists': name in marked}) for name in MARKS))}


@pytest.mark.parametrize('registered, expected', [
    pytest.param(_registered(), {'restart': [], 'pending': {}, 'marks': []}, id='nothing-changed'),
    pytest.param(_registered(changed=['llmfleet-worker-1']),
                 {'restart': [], 'pending': {'llmfleet-worker-1': MARKS['llmfleet-worker-1']},
                  'marks': [{'path': MARKS['llmfleet-worker-1'], 'state': 'touch'}]}, id='running-unit-changed-waits-for-the-roll'),
    pytest.param(_registered(changed=['llmfleet-worker-1'], active=('active', 'inactive')),
                 {'restart': ['llmfleet-worker-1'], 'pending': {}, 'marks': []}, id='stopped-worker-starts-now'),
    pytest.param(_registered(key_changed=True),
                 {'restart': [], 'pending': MARKS, 'marks': [{'path': MARKS[name], 'state': 'touch'} for name in MARKS]},
                 id='new-key-rolls-every-worker'),
    pytest.param(_registered(marked=['llmfleet-worker-0']),
                 {'restart': [], 'pending': {'llmfleet-worker-0': MARKS['llmfleet-worker-0']}, 'marks': []},
                 id='mark-of-an-earlier-run-still-rolls'),
    pytest.param(_registered(changed=['llmfleet-worker-0'], gateways=()),
                 {'restart': ['llmfleet-worker-0'], 'pending': {}, 'marks': []}, id='no-gateway-restarts-now'),
])
def test_the_roll_decision_reads_the_registered_results(registered, expected):
    assert _value('workers', '_workers_units_written', registered) == [
        result['worker']['name'] for result in registered['__workers_units']['results'] if result['changed']]
    assert _value('workers', '_workers_restarts', registered) == expected


def test_units_no_longer_planned_come_from_find():
    found = {'files': [{'path': '/etc/systemd/system/llmfleet-worker-%d.service' % index} for index in range(3)]}
    assert _value('workers', '_workers_stale_units', {'__workers_planned': PLANNED, '__workers_unit_files': found}) == [
        '/etc/systemd/system/llmfleet-worker-2.service']


def _aiter_plan(overrides):
    """The plan with the arguments vars/main.yml gives worker_commands for AITER and pinning, templated by the role."""
    engine = _value('workers', '_workers_engine', overrides)
    variables = _templar('workers', overrides).available_variables
    return worker_commands(worker_plan(ROCM, NUMA, mode='dp', tp_size=1, gpus=[], port_base=8000, prefix='llmfleet-worker'),
                           engine['command'], engine['flags'], _value('workers', '_workers_common_flags', overrides),
                           variables['workers_bind_address'], numa_pinning=variables['workers_numa_pinning'],
                           identity=_value('workers', '_workers_identity', overrides),
                           aiter=_value('workers', 'workers_aiter | bool', overrides),
                           gfx_targets=_value('workers', 'ansible_facts.rocm.gfx_targets | default([])', overrides),
                           aiter_targets=_value('workers', 'workers_aiter_targets', overrides),
                           env=_value('workers', 'workers_rocm_env | combine(workers_env)', overrides),
                           cache_root=_value('workers', "_workers_home ~ '/cache'", overrides))


@pytest.mark.parametrize('gfx, build, user, on', [
    ('gfx942', {'engine_build_aiter': True}, {}, True),
    ('gfx950', {'engine_build_aiter': True}, {}, True),
    ('gfx90a', {'engine_build_aiter': True}, {}, False),
    ('gfx942', {'engine_build_aiter': False}, {}, False),
    ('gfx942', {}, {}, False),  # the build's switch not in the play: engine_build's default (false)
    ('gfx942', {'engine_build_aiter': True, 'engine_build_aiter_arch': ['gfx950']}, {}, False),
    ('gfx90a', {}, {'VLLM_ROCM_USE_AITER': '1'}, True),  # the user's setting wins
    ('gfx942', {'engine_build_aiter': True}, {'VLLM_ROCM_USE_AITER': '0'}, False),
])
@pytest.mark.parametrize('pinned', [True, False])
def test_worker_unit_aiter_per_node_and_affinity_where_pinned(tmp_path, gfx, build, user, on, pinned):
    venv = _stub_venv(tmp_path)
    overrides = dict(build, workers_venv=venv, workers_numa_pinning=pinned, workers_bind_address='10.0.0.11',
                     workers_env=user, __workers_reads=_reads(venv),
                     ansible_facts={'rocm': dict(ROCM, gfx_targets=[gfx]), 'numa': NUMA})
    plan = _aiter_plan(overrides)
    text = _render('workers', WORKER_UNIT, overrides, worker=plan[0])
    environment = systemd_unit_read(text)['environment']
    cache = '/var/lib/llmfleet/cache/llmfleet-worker-0'
    assert environment['VLLM_ROCM_USE_AITER'] == ('1' if on else '0')
    assert environment.get('AITER_JIT_DIR') == (cache + '/aiter' if on else None)
    assert environment.get('HSA_OVERRIDE_CPU_AFFINITY_DEBUG') == ('0' if pinned else None)
    assert _exec_start(systemd_directives(text))[0] == ('/usr/bin/numactl' if pinned else venv + '/bin/vllm')
    # The JIT directory is one the hardened unit may write (its cache), and one the role creates as the worker's user.
    service = dict((name, value) for section, name, value in systemd_directives(text) if section == 'Service')
    assert service['ProtectSystem'] == 'strict' and cache in service['ReadWritePaths'].split()
    dirs = _value('workers', '_workers_dirs', dict(overrides, __workers_planned=plan))
    assert (cache + '/aiter' in dirs) is on
    assert dirs.index(cache) < dirs.index(cache + '/aiter') if on else True
    # systemd-analyze checks that ExecStart's command exists: numactl for a pinned worker.
    if HAS_SYSTEMD_ANALYZE and (not pinned or os.access('/usr/bin/numactl', os.X_OK)):
        rc, output = _verify(tmp_path, text, 'llmfleet-worker-0.service')
        assert rc == 0, output


def test_the_sandbox_runs_its_cpu_engine_with_aiter_off():
    # The lab's nodes simulate MI300X (gfx942) but serve vLLM's CPU build, and the build stage is off there
    # (engine_build_enabled: false, engine_build_aiter unset): AITER is off in their workers.
    sandbox = _load('inventories/sandbox/group_vars/all.yml')
    assert 'engine_build_aiter' not in sandbox and sandbox['engine_build_enabled'] is False
    overrides = {'ansible_facts': {'rocm': dict(ROCM, gfx_targets=['gfx942']), 'numa': NUMA}}
    assert _value('workers', 'workers_aiter | bool', overrides) is False
