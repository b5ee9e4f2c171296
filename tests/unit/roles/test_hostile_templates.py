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
import sys

import pytest
import yaml

from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template
from ansible.utils.collection_loader import AnsibleCollectionConfig
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
# The collection's filters by their FQCN in the templates: Ansible's collection loader, installed before the
# collection's modules are imported (the plugin loader then finds the same modules).
# Modules other tests imported as plain packages are set aside first (their tests keep what they hold), or the
# plugin loader finds no filter of theirs.
if AnsibleCollectionConfig.collection_finder is None:
    for _name in [name for name in sys.modules if name == 'ansible_collections' or name.startswith('ansible_collections.')]:
        del sys.modules[_name]
    _AnsibleCollectionFinder(paths=[os.path.join(ROOT, '.collections')])._install()

from ansible_collections.llmfleet.rocm.plugins.filter.rdma_inputs import rdma_input_problems  # noqa: E402
from ansible_collections.llmfleet.rocm.plugins.filter.systemd import systemd_split  # noqa: E402
from ansible_collections.llmfleet.rocm.plugins.filter.tuning_inputs import tuning_input_problems  # noqa: E402
from ansible_collections.llmfleet.rocm.plugins.filter.workers import worker_commands, worker_plan  # noqa: E402
from ansible_collections.llmfleet.rocm.plugins.filter.workers_inputs import workers_input_problems  # noqa: E402

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


def _load(path):
    with open(os.path.join(ROOT, path)) as handle:
        return yaml.safe_load(handle) or {}


def _trusted(value):
    """The role's own files are templates (a run trusts them); the hostile values given on top stay data."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return dict((key, _trusted(item)) for key, item in value.items())
    if isinstance(value, list):
        return [_trusted(item) for item in value]
    return value


def _templar(role, overrides):
    variables = {'ansible_managed': 'Ansible managed', 'inventory_hostname': 'gpu-node-1', 'llmfleet_worker_api_key': KEY,
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


def _directives(text):
    """(section, name, value) of each directive, continuation lines joined as systemd joins them."""
    found = []
    section = None
    pending = ''
    for line in text.split('\n'):
        if not pending and (not line.strip() or line.lstrip()[:1] in '#;'):
            continue
        line = pending + line
        if line.endswith('\\'):
            pending = line[:-1] + ' '
            continue
        pending = ''
        if line.startswith('['):
            section = line.strip('[]')
            continue
        name, _sep, value = line.partition('=')
        found.append((section, name, value))
    assert not pending, 'the file ends inside a continued line'
    return found


def _environment(directives):
    environment = {}
    for _section, name, value in directives:
        if name == 'Environment':
            for word in systemd_split(value):
                key, _sep, item = word.partition('=')
                environment[key] = item
    return environment


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


def _worker_unit(overrides):
    # The plan as vars/main.yml makes it (_workers_plan), with the filters called directly: the plugin loader does
    # not find workers.py once other tests imported it as a plain module.
    engine = _value('workers', '_workers_engine', overrides)
    common = _value('workers', '_workers_common_flags', overrides)
    variables = _templar('workers', overrides).available_variables
    plan = worker_commands(worker_plan(ROCM, NUMA, mode='dp', tp_size=1, gpus=[], port_base=8000, prefix='llmfleet-worker'),
                           engine['command'], engine['flags'], common, variables['workers_bind_address'],
                           numa_pinning=variables['workers_numa_pinning'])
    return plan, _render('workers', WORKER_UNIT, overrides, worker=plan[0])


@pytest.mark.parametrize('engine', ['vllm', 'sglang'])
@pytest.mark.parametrize('rdma', [False, True])
def test_worker_unit_holds_exactly_the_hostile_values(tmp_path, engine, rdma):
    venv = _stub_venv(tmp_path)
    plain = {'workers_engine': engine, 'workers_rdma': rdma, 'workers_venv': venv, 'workers_numa_pinning': False,
             'workers_bind_address': '10.0.0.11'}
    hostile = dict(plain, workers_env=HOSTILE_ENV, workers_extra_flags=HOSTILE_FLAGS,
                   workers_model_path='/srv/models/my model %i $X')
    # The input rules let these through (they are values, not structure)...
    values = dict(_load('roles/workers/defaults/main.yml'), **hostile)
    assert workers_input_problems(values, PLATFORM, rocm=ROCM, numa=NUMA, api_key=KEY) == []

    _plan, baseline = _worker_unit(plain)
    plan, text = _worker_unit(hostile)
    directives = _directives(text)
    # ...and they add no directive: the same names in the same sections as with plain values.
    assert sorted(set((section, name) for section, name, _value in directives)) == \
        sorted(set((section, name) for section, name, _value in _directives(baseline)))

    # ExecStart is the worker's argv, word for word (SGLang: plus its --config file with the key).
    key_file = _value('workers', '_workers_key_file', hostile)
    expected = plan[0]['prefix'] + plan[0]['argv'] + (['--config', key_file] if engine == 'sglang' else [])
    assert _exec_start(directives) == expected
    assert '/srv/models/my model %i $X' in expected and 'x%y $HOME "q" a b' in expected

    # The environment holds the variables as given, and the internal sockets' settings.
    environment = _environment(directives)
    for name, value in HOSTILE_ENV.items():
        assert environment[name] == value, name
    assert environment['GLOO_SOCKET_IFNAME'] == 'lo' and environment['VLLM_HOST_IP'] == '127.0.0.1'
    assert environment['VLLM_LOOPBACK_IP'] == '127.0.0.1'

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
    directives = _directives(text)
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
