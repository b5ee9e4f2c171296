# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan the serving workers of a node: which GPUs, which port, which CPUs and memory node each gets.

Pure functions over the facts contract (``ansible_facts.rocm``) and ``ansible_facts.numa``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.multinode import multinode_plan, ray_status
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.worker_env import AITER_TARGETS, worker_env
from ansible_collections.llmfleet.rocm.plugins.plugin_utils import first_contact as _first_contact


def cpu_list(cpus):
    """[0, 1, 2, 3, 8] -> '0-3,8' (the form numactl and taskset take)."""
    cpus = sorted(set(int(cpu) for cpu in cpus))
    ranges = []
    for cpu in cpus:
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ','.join('%d' % low if low == high else '%d-%d' % (low, high) for low, high in ranges)


def _groups(gpu_indices, mode, tp_size):
    if mode == 'dp':
        return [[index] for index in gpu_indices]
    if mode == 'tp':
        return [list(gpu_indices)]
    if mode == 'hybrid':
        if tp_size < 1 or len(gpu_indices) % tp_size:
            raise AnsibleFilterError('workers_tp_size %d does not divide the %d GPUs served' % (tp_size, len(gpu_indices)))
        return [list(gpu_indices[start:start + tp_size]) for start in range(0, len(gpu_indices), tp_size)]
    raise AnsibleFilterError('unknown workers mode %r (dp, tp, hybrid)' % (mode,))


def worker_plan(rocm, numa=None, mode='dp', tp_size=1, gpus=None, port_base=8000, prefix='llmfleet-worker'):
    """Return one dict per worker.

    ``rocm`` is ``ansible_facts.rocm``; ``numa`` is ``ansible_facts.numa`` (nodes with cpus) or None.
    Each worker: ``name``, ``index``, ``port``, ``gpus`` (indices), ``numa_nodes`` (of its GPUs, known
    ones only) and ``cpus`` (a numactl CPU list, '' when not pinned). Workers whose GPUs share a NUMA
    node get disjoint, contiguous shares of that node's CPUs; a GPU whose NUMA node is unknown, or not
    a node of this machine, leaves its worker unpinned.
    """
    by_index = dict((gpu['index'], gpu) for gpu in rocm.get('gpus') or [])
    selected = list(gpus) if gpus else sorted(by_index)
    unknown = [index for index in selected if index not in by_index]
    if unknown:
        raise AnsibleFilterError('workers_gpus names GPU(s) %s, but the node has %d GPU(s) (indices 0-%d)'
                                 % (', '.join(str(index) for index in unknown), len(by_index), len(by_index) - 1))
    if not selected:
        raise AnsibleFilterError('the node has no GPU to serve on')
    groups = _groups(selected, mode, int(tp_size))

    nodes = dict((node['id'], list(node.get('cpus') or [])) for node in (numa or {}).get('nodes') or [])
    workers = []
    for index, group in enumerate(groups):
        numa_nodes = sorted(set(by_index[gpu].get('numa_node') for gpu in group if by_index[gpu].get('numa_node') is not None))
        pinned = bool(numa_nodes) and all(node in nodes and nodes[node] for node in numa_nodes)
        workers.append({'name': '%s-%d' % (prefix, index), 'index': index, 'port': int(port_base) + index,
                        'gpus': group, 'numa_nodes': numa_nodes if pinned else [], 'cpus': []})

    # Share each NUMA node's CPUs among the workers pinned to it (alone on it: all of them).
    sharing = {}
    for worker in workers:
        for node in worker['numa_nodes']:
            sharing.setdefault(node, []).append(worker)
    for node, members in sharing.items():
        cpus = sorted(nodes[node])
        if len(cpus) < len(members):
            raise AnsibleFilterError('NUMA node %d has %d CPU(s) for %d workers: serve fewer GPUs on it or use tensor parallelism'
                                     % (node, len(cpus), len(members)))
        share, extra = divmod(len(cpus), len(members))
        start = 0
        for position, worker in enumerate(members):
            size = share + (1 if position < extra else 0)
            worker['cpus'].extend(cpus[start:start + size])
            start += size
    for worker in workers:
        worker['cpus'] = cpu_list(worker['cpus'])
    return workers


def engine_flags(flags):
    """{'port': 8000, 'enforce-eager': True, 'block-size': None} -> ['--enforce-eager', '--port', '8000'].

    Sorted by name; true renders the bare flag, false and None drop it; a list value repeats its values.
    """
    argv = []
    for name in sorted(flags):
        value = flags[name]
        if value is None or value is False:
            continue
        flag = '--' + str(name).lstrip('-')
        if value is True:
            argv.append(flag)
        elif isinstance(value, (list, tuple)):
            argv.append(flag)
            argv.extend(str(item) for item in value)
        else:
            argv.extend([flag, str(value)])
    return argv


# What a worker runs on, carried by its endpoint (llmfleet_worker_endpoints): the gateway, the rolling restart and
# the benchmarks read these instead of the workers role's variables.
_IDENTITY = ('model', 'model_path', 'engine', 'engine_version', 'venv')
# Each engine's readiness endpoint: vLLM's /health answers 200 once the engine serves; SGLang's /health answers 200
# without asking the engine anything (unless SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION), its /health_generate runs a
# one-token generation (sglang/srt/entrypoints/http_server.py, 0.5.23).
_HEALTH_PATHS = {'vllm': '/health', 'sglang': '/health_generate'}


def worker_commands(plan, command, flag_names, common_flags, bind_address, numa_pinning=True, numactl='/usr/bin/numactl',
                    identity=None, multinode=None, ray_command=None, ray_name='llmfleet-worker-ray', aiter=False,
                    gfx_targets=None, aiter_targets=AITER_TARGETS, env=None, cache_root='/var/lib/llmfleet/cache'):
    """Add to each planned worker its ``prefix`` (numactl or nothing) and ``argv`` (engine command and flags).

    ``flag_names`` maps host, port and tp to the engine's spelling of those flags. ``identity`` (what every
    worker of the node runs: model, model_path, engine, engine_version, venv) is copied into each endpoint, with
    ``health_url``, the engine's readiness endpoint (SGLang: /health_generate; vLLM and an unknown engine: /health).
    ``multinode`` (the node's part in a multi-node engine, ``workers_multinode_plan``) adds its flags; a headless
    member (not rank 0) listens nowhere and has no endpoint (None). With its Ray backend the node's first entry is its
    Ray node (``ray_name``, ``ray_command`` + the plan's ``ray start`` arguments, no endpoint), and only rank 0 runs
    the engine. Every entry has a ``kind``: ``engine`` or ``ray``.

    Every entry has an ``env`` too, what the role derives for its unit (plugin_utils/worker_env.py): AITER on
    (``VLLM_ROCM_USE_AITER``) where the engine has it (``aiter``) and every one of the node's ``gfx_targets`` is in
    ``aiter_targets``, with its JIT directory under the worker's cache (``cache_root``/<name>/aiter);
    ``HSA_OVERRIDE_CPU_AFFINITY_DEBUG=0`` where the worker is pinned. Names the user sets (``env``) are left out.
    """
    identity = dict((key, (identity or {}).get(key)) for key in _IDENTITY)
    workers = []

    def unit_env(name, pinned):
        return worker_env(aiter, gfx_targets, '%s/%s' % (cache_root.rstrip('/'), name), pinned, explicit=env,
                          targets=aiter_targets)

    for worker in plan:

        worker = dict(worker)
        flags = dict(common_flags)
        flags[flag_names['host']] = bind_address
        flags[flag_names['port']] = worker['port']
        if len(worker['gpus']) > 1:
            flags[flag_names['tp']] = len(worker['gpus'])
        headless = bool(multinode and multinode['flags'].get('headless'))
        if multinode:
            flags.update(multinode['flags'])
        if headless:
            del flags[flag_names['host']], flags[flag_names['port']]
        worker['flags'] = engine_flags(flags)
        worker['argv'] = list(command) + worker['flags']
        host = '[%s]' % bind_address if ':' in str(bind_address) else str(bind_address)
        worker['endpoint'] = None if headless else {
            'name': worker['name'], 'address': str(bind_address), 'port': worker['port'], 'gpus': list(worker['gpus']),
            'url': 'http://%s:%d' % (host, worker['port'])}
        if worker['endpoint']:
            worker['endpoint'].update(identity)
            worker['endpoint']['health_url'] = worker['endpoint']['url'] + _HEALTH_PATHS.get(identity['engine'], '/health')
            if multinode:
                # The other ranks of the engine, restarted with this one by a roll (llmfleet.rocm.rolling_restart_steps).
                worker['endpoint']['ranks'] = [{'node': member['name'], 'name': worker['name']}
                                               for member in multinode['members'][1:]]
        worker['prefix'] = []
        if numa_pinning and worker['cpus']:
            nodes = ','.join(str(node) for node in worker['numa_nodes'])
            worker['prefix'] = [numactl, '--physcpubind=' + worker['cpus'], '--membind=' + nodes]
        worker['kind'] = 'engine'
        worker['env'] = unit_env(worker['name'], bool(worker['prefix']))
        ray = (multinode or {}).get('ray')
        if ray:
            # The node's Ray node, on the engine's GPUs and CPUs; the engine (rank 0 only) runs on the cluster.
            workers.append(dict(worker, name=ray_name, kind='ray', port=None, endpoint=None, flags=list(ray['args']),
                                argv=list(ray_command or ['ray']) + list(ray['args']),
                                env=unit_env(ray_name, bool(worker['prefix']))))
            if headless:
                continue
            if worker['endpoint']:
                # A roll restarts every Ray node of the cluster (the head's too) under the stopped engine.
                worker['endpoint']['ranks'] = [{'node': member['name'], 'name': ray_name} for member in multinode['members']]
        workers.append(worker)
    return workers


def workers_multinode_plan(members, host, tp_size=None, pp_size=None, master_port=29501, backend='mp', ray_port=6379,
                           ray_worker_ports='10002-19999', ray_temp_dir='/tmp/ray'):
    """The node's part in the engine of its group (plugin_utils/multinode.py): problems, rank, flags, environment."""
    if not isinstance(members, (list, tuple, Mapping)):
        raise AnsibleFilterError('workers_multinode_plan expects the list of the group\'s members')
    if isinstance(members, Mapping):
        members = dict(members)
    return multinode_plan(members, host, tp_size=tp_size, pp_size=pp_size, master_port=master_port, backend=backend,
                          ray_port=ray_port, ray_worker_ports=ray_worker_ports, ray_temp_dir=ray_temp_dir)


def workers_ray_status(text):
    """``ray status`` output -> ``{active, pending, failures}`` (plugin_utils/multinode.py)."""
    return ray_status(text)


def is_private_address(address):
    """True for loopback, RFC 1918 / RFC 4193 private and link-local addresses: where workers may listen."""
    try:
        parsed = ipaddress.ip_address(str(address))
    except ValueError:
        return False
    if parsed.is_unspecified:
        return False
    return parsed.is_loopback or parsed.is_private or parsed.is_link_local


def workers_expected_platform(rocm, packages=None):
    """rocm or cpu: the platform a worker's engine must detect on this node (plugin_utils/first_contact.py)."""
    rocm = rocm if isinstance(rocm, Mapping) else {}
    return _first_contact.expected_platform(rocm.get('gpu_count') or len(rocm.get('gpus') or []), packages)


def first_contact_verdict(result, expected, engine='vllm', worker='the worker', venv=None):
    """The first-contact decision: ``problems`` (sentences with the fix) and ``summary`` (what was found)."""
    result = result if isinstance(result, Mapping) else {}
    return {'problems': _first_contact.contact_problems(dict(result), expected, engine=engine, worker=worker, venv=venv),
            'summary': _first_contact.contact_summary(dict(result), expected, engine=engine)}
