# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks of the workers role (``input_problems('workers')``).

Besides the role's variables, the rules judge what preflight read on the node: the GPUs
(``ansible_facts.rocm``), the NUMA layout (``ansible_facts.numa``), the listening TCP sockets (the output of one
``ss -Hltnpe``, read by ``plugin_utils/listening_sockets.py``) and the workers' user's passwd entry (``getent``; its
sockets are the workers' own). The plan the rules look at (ports, CPU shares) is the one ``llmfleet.rocm.worker_plan``
makes for the units.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.listening_sockets import parse_listening
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.worker_plan import cpu_list, is_private_address, worker_plan
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import (
    RuleSet, as_int, as_number, is_one_line, max_unavailable, show, supported_system_rule)

# Values that end up on a line of a worker's unit (User=, Environment=, ExecStart=).
_UNIT_SCALARS = ('workers_bind_address', 'workers_venv', 'workers_model_path', 'workers_served_model_name', 'workers_user')
_UNIT_MAPPINGS = ('workers_rocm_env', 'workers_env', 'workers_extra_flags')

RULES = RuleSet('workers')
supported_system_rule(RULES)


def _host(ctx):
    return ctx.get('host') or 'this node'


def _node_gpus(ctx):
    """The indices of the node's GPUs (ansible_facts.rocm.gpus[].index)."""
    return [gpu.get('index') for gpu in (ctx.get('rocm') or {}).get('gpus') or []]


def _served(values, ctx):
    """The GPUs the workers serve on: workers_gpus, or every GPU of the node when it is empty."""
    return list(values['workers_gpus'] or []) or _node_gpus(ctx)


def _unknown_gpus(values, ctx):
    node = _node_gpus(ctx)
    return [index for index in values['workers_gpus'] or [] if isinstance(index, bool) or index not in node]


def _tp_size_fits(values, ctx):
    if values['workers_mode'] != 'hybrid':
        return True
    tp_size = as_int(values['workers_tp_size'])
    return tp_size is not None and tp_size >= 1 and len(_served(values, ctx)) % tp_size == 0


def _plan(values, ctx, numa=None):
    """The workers' plan as the role makes it, or ``(None, error)`` when it cannot be made."""
    if _unknown_gpus(values, ctx) or not _tp_size_fits(values, ctx) or not _served(values, ctx):
        return None, None
    # Ports and CPU shares do not depend on a bad port base, and tp_size counts in hybrid mode only.
    tp_size = as_int(values['workers_tp_size']) if values['workers_mode'] == 'hybrid' else 1
    try:
        return worker_plan(ctx.get('rocm') or {}, numa, mode=values['workers_mode'], tp_size=tp_size,
                           gpus=values['workers_gpus'], port_base=as_int(values['workers_port_base']) or 0), None
    except AnsibleFilterError as exc:
        return None, exc


@RULES.rule('workers-bind-address-public')
def _bind_address(values, ctx):
    address = values['workers_bind_address']
    if not is_private_address(address):
        return ('workers_bind_address %s is not a loopback or private address: workers must not be reachable from public'
                ' networks; use 127.0.0.1 or the node\'s private address.' % show(address))
    return None


@RULES.rule('workers-gpus-unknown')
def _gpus_unknown(values, ctx):
    unknown = _unknown_gpus(values, ctx)
    if not unknown:
        return None
    node = [index for index in _node_gpus(ctx) if isinstance(index, int)]
    return ('workers_gpus %s names GPU(s) %s that %s does not have (it has %d%s): choose among those indices, or set'
            ' workers_gpus to [] to serve on every GPU.'
            % (show(values['workers_gpus']), ', '.join(show(index) for index in unknown), _host(ctx),
               (ctx.get('rocm') or {}).get('gpu_count', len(node)), ': ' + cpu_list(node) if node else ''))


@RULES.rule('workers-tp-size-divides')
def _tp_size(values, ctx):
    if _tp_size_fits(values, ctx):
        return None
    served = len(_served(values, ctx))
    divisors = [size for size in range(1, served + 1) if served % size == 0]
    return ('workers_tp_size %s does not divide the %d GPUs served on %s: choose a divisor of %d (%s), or set workers_gpus.'
            % (show(values['workers_tp_size']), served, _host(ctx), served, ', '.join(str(size) for size in divisors)))


@RULES.rule('workers-port-base-range')
def _port_base(values, ctx):
    base = as_int(values['workers_port_base'])
    served = len(_served(values, ctx))
    highest = 65535 - served
    if base is None or base < 1024 or base > highest:
        return ('workers_port_base %s leaves no room for the workers below 65536: worker i listens on workers_port_base + i,'
                ' and the %d GPUs served on %s need a base from 1024 to %d.'
                % (show(values['workers_port_base']), served, _host(ctx), highest))
    return None


@RULES.rule('workers-gpu-memory-utilization-range')
def _gpu_memory_utilization(values, ctx):
    share = as_number(values['workers_gpu_memory_utilization'])
    if share is None or not 0 < share <= 1:
        return ('workers_gpu_memory_utilization %s must be in (0, 1]: the share of each GPU\'s memory the engine may use,'
                ' such as 0.9.' % show(values['workers_gpu_memory_utilization']))
    return None


@RULES.rule('workers-unit-values-one-line')
def _one_line(values, ctx):
    problems = []
    for name in _UNIT_SCALARS:
        value = values[name]
        if isinstance(value, str) and not is_one_line(value):
            problems.append('%s %s has a line break or another control character, which would end its line in the'
                            ' worker unit: give it on one line.' % (name, show(value)))
    for name in _UNIT_MAPPINGS:
        for key, value in sorted((values[name] or {}).items(), key=lambda item: str(item[0])):
            items = value if isinstance(value, (list, tuple)) else [value]
            if not all(is_one_line(item) for item in [str(key)] + [item for item in items if isinstance(item, str)]):
                problems.append('%s entry %s: %s has a line break or another control character, which would end its'
                                ' line in the worker unit: give it on one line.' % (name, show(key), show(value)))
    return problems


_ENV_NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*\Z')
_FLAG_NAME_RE = re.compile(r'^-{0,2}[A-Za-z0-9][A-Za-z0-9_-]*\Z')


@RULES.rule('workers-unit-names')
def _unit_names(values, ctx):
    """Names that become Environment= names or flags of the unit: a pattern, so no value can add a directive."""
    problems = []
    for name in ('workers_rocm_env', 'workers_env'):
        bad = [key for key in (values[name] or {}) if not (isinstance(key, str) and _ENV_NAME_RE.match(key))]
        if bad:
            problems.append('%s has names that are not environment variable names (letters, digits and _, not first a'
                            ' digit): %s.' % (name, ', '.join(show(key) for key in bad)))
    bad = [key for key in (values['workers_extra_flags'] or {}) if not (isinstance(key, str) and _FLAG_NAME_RE.match(key))]
    if bad:
        problems.append('workers_extra_flags has names that are not flag names (letters, digits, - and _, such as'
                        ' max-model-len): %s.' % ', '.join(show(key) for key in bad))
    return problems


_USER_RE = re.compile(r'^[a-z_][a-z0-9_-]{0,31}\Z')
# The worker key: it is written unquoted into an environment file and sent in a header, so a plain alphabet.
_API_KEY_RE = re.compile(r'^[A-Za-z0-9._~+/-]{16,}=*\Z')
# The flag names the role gives the engine itself, whatever their spelling (--api-key, api_key).
_KEY_FLAGS = ('api-key',)
_SGLANG_KEY_FLAGS = ('api-key', 'config')
# Not given to the filter: the key is not judged (a caller other than the role's preflight).
_NO_KEY = object()


def _flag_name(name):
    return str(name).lstrip('-').replace('_', '-')


@RULES.rule('workers-user-name')
def _user_name(values, ctx):
    user = values['workers_user']
    if isinstance(user, str) and _USER_RE.match(user):
        return None
    return ('workers_user %s is not a system user name (lower-case letters, digits, _ and -, not first a digit or -, at'
            ' most 32 characters): it is the unit\'s User= and the owner of the worker key; use such as llmfleet.'
            % show(user))


@RULES.rule('workers-extra-flags-api-key')
def _extra_flags_key(values, ctx):
    taken = _SGLANG_KEY_FLAGS if values['workers_engine'] == 'sglang' else _KEY_FLAGS
    bad = [name for name in (values['workers_extra_flags'] or {}) if _flag_name(name) in taken]
    if not bad:
        return None
    return ('workers_extra_flags sets %s: the worker key would be on the command line, visible to every user of the node'
            ' in /proc. The role gives the engine its key from a 0600 file (vLLM: VLLM_API_KEY in an EnvironmentFile;'
            ' SGLang: its --config file): set llmfleet_worker_api_key instead, and leave %s out of workers_extra_flags.'
            % (', '.join(show(name) for name in bad), ' and '.join(taken)))


@RULES.rule('workers-extra-flags-sglang-metrics')
def _sglang_metrics(values, ctx):
    if values['workers_engine'] != 'sglang':
        return None
    flags = values['workers_extra_flags'] or {}
    bad = [name for name in flags if _flag_name(name) == 'enable-metrics' and flags[name] is not True]
    if not bad:
        return None
    return ('workers_extra_flags sets %s to %s: the role always gives SGLang workers --enable-metrics, because the'
            ' rolling restart waits on their /metrics (sglang:num_running_reqs, sglang:num_queue_reqs) until no request'
            ' is in flight; without it SGLang serves no /metrics page. Leave enable-metrics out of workers_extra_flags.'
            % (', '.join(show(name) for name in bad), ', '.join(show(flags[name]) for name in bad)))


@RULES.rule('workers-env-api-key')
def _env_key(values, ctx):
    bad = ['%s sets %s' % (name, key) for name in ('workers_rocm_env', 'workers_env')
           for key in (values[name] or {}) if str(key) == 'VLLM_API_KEY']
    if not bad:
        return None
    return ('%s: the worker key would be written into the unit, readable by every user of the node. The role writes it to'
            ' a 0600 file the unit reads: set llmfleet_worker_api_key instead, and leave VLLM_API_KEY out of the'
            ' environment variables.' % ' and '.join(bad))


@RULES.rule('workers-api-key-format')
def _api_key(values, ctx):
    key = ctx.get('api_key', _NO_KEY)
    if key is _NO_KEY or (isinstance(key, str) and _API_KEY_RE.match(key)):
        return None
    # Never the value: it is a secret.
    return ('llmfleet_worker_api_key is not at least 16 characters of A-Z a-z 0-9 . _ ~ + / - (its value is not shown):'
            ' give such a key from a vault, or leave it unset and the base role makes one (48 letters and digits) under'
            ' llmfleet_secrets_dir.')


@RULES.rule('workers-rdma-type')
def _rdma_type(values, ctx):
    value = values['workers_rdma']
    if value is None or isinstance(value, bool):
        return None
    return ('workers_rdma %s must be true, false or null (null follows the node: on where it has RDMA devices).'
            % show(value))


@RULES.rule('workers-restart')
def _restart(values, ctx):
    value = values['workers_restart']
    if value in ('auto', 'now', 'rolling'):
        return None
    return ('workers_restart %s must be auto (rolling when the inventory has gateways, else now), now (restart a changed'
            ' worker at once) or rolling (leave it to the roll of playbooks/serve.yml).' % show(value))


@RULES.rule('workers-max-unavailable')
def _max_unavailable(values, ctx):
    try:
        max_unavailable(values['workers_max_unavailable'], 2)
    except ValueError as error:
        return 'workers_max_unavailable %s is not usable: %s.' % (show(values['workers_max_unavailable']), error)
    return None


@RULES.rule('workers-numa-cpus-short')
def _numa_cpus(values, ctx):
    if ctx.get('numa') is None:
        return None
    _plan_found, error = _plan(values, ctx, ctx['numa'])
    if error is not None:
        return ('The workers of %s cannot be planned: %s (workers_gpus, workers_mode, workers_tp_size).'
                % (_host(ctx), str(error).rstrip('.')))
    return None


def _own_uid(values, ctx):
    """The workers' user's uid from its passwd entry (getent: [password, uid, gid, gecos, home, shell]); None while the
    user does not exist (a first run: no socket is the workers' own)."""
    entry = (ctx.get('passwd') or {}).get(values['workers_user'])
    if isinstance(entry, (list, tuple)) and len(entry) > 1:
        return as_int(entry[1])
    return None


@RULES.rule('workers-ports-taken')
def _ports_taken(values, ctx):
    listening = ctx.get('listening')
    plan, _error = _plan(values, ctx)
    if listening is None or not plan or as_int(values['workers_port_base']) is None:
        return None
    try:
        sockets = parse_listening(listening)
    except ValueError as exc:
        return 'The listening sockets of %s cannot be judged (%s): ports of the planned workers may be taken.' % (
            _host(ctx), exc)
    ports = set(worker['port'] for worker in plan)
    own = _own_uid(values, ctx)
    clashes = [socket for socket in sockets if socket['port'] in ports and (own is None or socket['uid'] != own)]
    if not clashes:
        return None
    taken = sorted(set(socket['port'] for socket in clashes))
    names = []
    for socket in sorted(clashes, key=lambda socket: socket['port']):
        for name in [process['name'].strip() for process in socket['processes']] or ['']:
            name = name or 'a program ss cannot name'
            if name not in names:
                names.append(name)
    return ('Port(s) %s of the planned workers are taken by %s on %s: choose another workers_port_base (now %s) or stop'
            ' what listens there.' % (', '.join(str(port) for port in taken), ', '.join(names), _host(ctx),
                                      show(values['workers_port_base'])))


@RULES.rule('workers-multinode')
def _multinode(values, ctx):
    group = values.get('workers_multinode_group')
    if group is None:
        return None
    if not isinstance(group, str) or not re.match(r'^[A-Za-z_][A-Za-z0-9_]*\Z', group):
        return 'workers_multinode_group %s must be the name of an inventory group, or null.' % show(group)
    if values['workers_engine'] != 'vllm':
        return ('workers_multinode_group is set, but workers_engine is %s: one engine over several nodes is built for'
                ' vLLM (its --nnodes launch); serve this engine on each node alone.' % show(values['workers_engine']))
    port = as_int(values.get('workers_multinode_master_port'))
    if port is None or not 1024 <= port <= 65535:
        return ('workers_multinode_master_port %s must be a port 1024-65535 that no worker API uses.'
                % show(values.get('workers_multinode_master_port')))
    for name in ('workers_multinode_tensor_parallel_size', 'workers_multinode_pipeline_parallel_size'):
        size = values.get(name)
        if size is not None and (as_int(size) is None or as_int(size) < 1):
            return '%s %s must be a whole number of 1 or more, or null.' % (name, show(size))
    token = values.get('workers_ray_auth_token')
    if values.get('workers_multinode_backend') == 'ray' and not (isinstance(token, str) and _API_KEY_RE.match(token)):
        # Never the value: it is a secret.
        return ('workers_ray_auth_token is not at least 16 characters of A-Z a-z 0-9 . _ ~ + / - (its value is not shown):'
                ' give such a token from a vault, or leave it unset and the role makes one per group under'
                ' llmfleet_secrets_dir.')
    return None


def workers_input_problems(values, platform, rocm=None, numa=None, listening=None, passwd=None, host='', api_key=_NO_KEY):
    """The workers role's variables and what preflight read on the node -> a list of messages (empty when fine).

    ``listening`` is the standard output of ``ss -Hltnpe`` on the node; ``passwd`` the ``getent_passwd`` facts that
    hold the workers' user (its entry missing or null: the user does not exist yet). ``api_key`` is the fleet's worker
    key (llmfleet_worker_api_key): judged, never shown.
    """
    return RULES.messages(values, {'platform': platform, 'rocm': rocm, 'numa': numa, 'listening': listening,
                                   'passwd': passwd, 'host': host, 'api_key': api_key})
