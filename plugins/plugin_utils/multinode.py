# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One engine over the nodes of an inventory group (``workers_multinode_group``): who is who, and how each starts.

Everything here is pure: data in, data out. No Ansible imports.

vLLM 0.32 spreads one engine over several nodes with its own multiprocessing executor (``--nnodes``): every member
runs ``vllm serve`` with the same parallel sizes, ``--nnodes``, ``--master-addr`` and ``--master-port`` and its own
``--node-rank``; rank 0 (the group's first member in inventory order) serves the API, the others run ``--headless``.
torch.distributed meets at the master address and port; its gloo pairs, vLLM's message queues and RCCL's bootstrap
then connect on ports the kernel picks (the ephemeral range). Each member's fabric address is the IPv4 address of the
interface its ``/etc/llmfleet/rccl.env`` names in ``NCCL_SOCKET_IFNAME`` (the rdma role's choice, the one RCCL uses);
vLLM finds its own address through ``VLLM_HOST_IP`` and torch's gloo through ``GLOO_SOCKET_IFNAME``, so both are set
to it. By default tensor parallelism stays inside a node (its served GPUs) and pipeline parallelism spans the nodes.

With the Ray backend every member runs a Ray node instead (``ray start --block``: the head on rank 0, the others joining
its GCS), on fixed ports counted from the GCS port, and rank 0 alone runs ``vllm serve`` with
``--distributed-executor-backend ray``: vLLM places its ranks on the cluster's GPUs itself. ``--nnodes`` and Ray exclude
each other in vLLM 0.32.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import as_int
from ansible_collections.llmfleet.rocm.plugins.module_utils._validate_fabric import fabric_address

DEFAULT_MASTER_PORT = 29501
BACKENDS = ('mp', 'ray')
DEFAULT_RAY_PORT = 6379
DEFAULT_RAY_WORKER_PORTS = '10002-19999'
# Ray's fixed ports, counted from the GCS port (``ray start`` picks the others at random unless told), so a firewall
# can name them: a node's raylet and object manager, its runtime-environment agent, and the dashboard agent and metrics
# exporter, which run only with ray[default] (nothing but the node itself talks to those three).
RAY_PORT_OFFSETS = (('node-manager-port', 1), ('object-manager-port', 2), ('runtime-env-agent-port', 3),
                    ('dashboard-agent-grpc-port', 4), ('dashboard-agent-listen-port', 5), ('metrics-export-port', 6))
# The ports the other members connect to: the GCS (on the head), the raylet, the object manager, the runtime-environment
# agent (offsets 0-3), and the worker processes' range.
RAY_PEER_PORT_SPAN = 3
# What every member of one engine must have alike (RCCL hangs, or the ranks disagree, when one differs), with the fix.
_ALIKE = (('rocm', 'ROCm releases', 'install one release on all of them (rocm_version)'),
          ('venv', 'engine venvs', 'install one build of the engine on all of them (the engine role)'),
          ('model', "models (the engine role's marker)", 'install one model on all of them (the engine role)'),
          ('rccl', 'RCCL settings (/etc/llmfleet/rccl.env)', 'give them the same rdma_* variables'))
# rccl.env entries that name a node's own devices.
_PER_NODE = ('NCCL_SOCKET_IFNAME', 'NCCL_IB_HCA')


def _member(node):
    """One member's part: ``({name, interface, address, gpus, rocm, venv, model, rccl}, None)`` or ``(None, problem)``."""
    name = node['name']
    if node.get('absent'):
        return None, ('%s is a member of the group but not in this run (a --limit, or unreachable): the group\'s engine'
                      ' is planned and started with all its members.' % name)
    env, interface, address, problem = fabric_address(name, node)
    if problem:
        return None, problem + '.'
    # RCCL's settings but the node's own device names (interfaces, HCAs), which may differ between nodes.
    rccl = dict((key, value) for key, value in env.items() if key not in _PER_NODE)
    return {'name': name, 'interface': interface, 'address': address['address'], 'gpus': node.get('gpus'),
            'rocm': node.get('rocm_version'), 'venv': node.get('venv'), 'model': node.get('model'), 'rccl': rccl,
            'ray': node.get('ray')}, None


def _shown(value):
    if isinstance(value, dict):
        return '{%s}' % ', '.join('%s=%s' % item for item in sorted(value.items()))
    return 'unknown' if value in (None, '') else str(value)


def _size(value, name, problems):
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        problems.append('%s %r must be a whole number of 1 or more, or null.' % (name, value))
        return None
    return value


def worker_port_range(text):
    """'10002-19999' -> (10002, 19999), else None (not two ports 1024-65535, low before high)."""
    found = re.match(r'^\s*([0-9]{4,5})\s*-\s*([0-9]{4,5})\s*\Z', str(text if text is not None else ''))
    if not found:
        return None
    low, high = int(found.group(1)), int(found.group(2))
    return (low, high) if 1024 <= low <= high <= 65535 else None


def _ray_start(me, head, rank, port, worker_ports, temp_dir):
    """The arguments of ``ray start`` for one member (after the ``ray`` command)."""
    low, high = worker_ports
    args = ['start', '--block', '--disable-usage-stats', '--node-ip-address', me['address'], '--num-gpus', str(me['gpus']),
            '--temp-dir', temp_dir]
    if rank == 0:
        # The dashboard runs on the head only (ray start refuses the flag elsewhere): none.
        args += ['--head', '--port', str(port), '--include-dashboard=false']
    else:
        args += ['--address', '%s:%d' % (head['address'], port)]
    for flag, offset in RAY_PORT_OFFSETS:
        args += ['--' + flag, str(port + offset)]
    return args + ['--min-worker-port', str(low), '--max-worker-port', str(high)]


def multinode_plan(members, host, tp_size=None, pp_size=None, master_port=DEFAULT_MASTER_PORT, backend='mp',
                   ray_port=DEFAULT_RAY_PORT, ray_worker_ports=DEFAULT_RAY_WORKER_PORTS, ray_temp_dir='/tmp/ray'):
    """The part of ``host`` in the engine its group serves.

    ``members``: ``[{name, env_text, interfaces, gpus, rocm_version, venv, model}]`` in inventory order; ``env_text``
    is the member's rccl.env (None when it has none), ``interfaces`` maps interface names (``-`` written ``_``, as in
    Ansible's facts) to ``{ipv4: {address}}``, ``gpus`` is the number of GPUs the member serves; ``rocm_version``,
    ``venv`` (the real venv's name) and ``model`` (the model marker's digest) must be alike on every member, as must
    the RCCL environment but for the node's own device names; ``ray`` is whether the venv has Ray (for the Ray
    backend). A mapping of name -> record (None for a member that is not in this run) in inventory order is taken
    too. ``tp_size``/``pp_size``: None for the defaults (a node's GPUs; the number of nodes). ``backend``: ``mp`` (vLLM's ``--nnodes`` launch) or ``ray``;
    ``ray_port``: the GCS port, the other Ray ports follow it (``RAY_PORT_OFFSETS``); ``ray_worker_ports``: the range
    of Ray's worker processes, "low-high"; ``ray_temp_dir``: Ray's session directory on the member.

    Returns ``{problems, members, nnodes, rank, head, master_addr, master_port, tp, pp, address, interface, backend,
    flags, env, ray}``; with problems, the rest may be missing. ``flags`` are vLLM's (names without ``--``; with Ray,
    only rank 0 runs vLLM), ``env`` the member's, ``ray`` None or ``{address, args, head}``: the GCS address and the
    member's ``ray start`` arguments.
    """
    if isinstance(members, dict):
        members = [dict(record, name=name) if record else {'name': name, 'absent': True}
                   for name, record in members.items()]
    problems = []
    names = [node['name'] for node in members]
    if host not in names:
        return {'problems': ['%s is not a member of the group it names (workers_multinode_group): add it to the group'
                             ' or unset the variable for it.' % host]}
    if len(members) < 2:
        problems.append('The group of %s has one member: one node serves alone without workers_multinode_group.' % host)
    found = []
    for node in members:
        member, problem = _member(node)
        if problem:
            problems.append(problem)
        else:
            found.append(member)
    counts = sorted(set(member['gpus'] for member in found))
    if len(counts) > 1:
        problems.append('The members serve different numbers of GPUs (%s): every node of one engine serves as many'
                        ' (workers_gpus).' % ', '.join('%s %s' % (member['name'], member['gpus']) for member in found))
    for key, what, fix in _ALIKE:
        if len(set(repr(member[key]) for member in found)) > 1:
            problems.append('The members run different %s (%s): %s.' % (
                what, ', '.join('%s %s' % (member['name'], _shown(member[key])) for member in found), fix))
    if backend not in BACKENDS:
        problems.append('workers_multinode_backend %r must be one of %s.' % (backend, ', '.join(BACKENDS)))
    worker_ports = port = None
    if backend == 'ray':
        without = [member['name'] for member in found if not member['ray']]
        if without:
            problems.append('workers_multinode_backend is ray, but the engine venv of %s has no Ray (bin/ray): build Ray'
                            ' into the engine wheelhouse (engine_build_extra_packages) and install it with the engine'
                            ' (engine_packages), or use workers_multinode_backend mp.' % ', '.join(without))
        worker_ports = worker_port_range(ray_worker_ports)
        port = as_int(ray_port)
        last = RAY_PORT_OFFSETS[-1][1]
        if (port is None or not 1024 <= port <= 65535 - last or worker_ports is None
                or (worker_ports[0] <= port + last and port <= worker_ports[1])):
            problems.append('workers_ray_port %r and workers_ray_worker_ports %r must be a port 1024-%d and a range'
                            ' "low-high" of ports 1024-65535 that leaves out workers_ray_port to workers_ray_port + %d'
                            ' (Ray\'s own ports).' % (ray_port, ray_worker_ports, 65535 - last, last))
    tp = _size(tp_size, 'workers_multinode_tensor_parallel_size', problems)
    pp = _size(pp_size, 'workers_multinode_pipeline_parallel_size', problems)
    if problems:
        return {'problems': problems}
    per_node = counts[0]
    nnodes = len(members)
    tp = tp or per_node
    pp = pp or nnodes
    if tp * pp != nnodes * per_node:
        problems.append('Tensor parallel %d x pipeline parallel %d is %d ranks, but the %d members serve %d GPUs each (%d):'
                        ' make workers_multinode_tensor_parallel_size x workers_multinode_pipeline_parallel_size equal'
                        ' their GPUs.' % (tp, pp, tp * pp, nnodes, per_node, nnodes * per_node))
        return {'problems': problems}
    rank = names.index(host)
    me = found[rank]
    head = found[0]
    env = {'VLLM_HOST_IP': me['address'], 'GLOO_SOCKET_IFNAME': me['interface']}
    ray = None
    if backend == 'ray':
        # vLLM's driver on rank 0 joins the cluster at the address (its unit's RAY_ADDRESS; ray.init("auto")), and
        # places every rank itself.
        flags = {'tensor-parallel-size': tp, 'pipeline-parallel-size': pp, 'distributed-executor-backend': 'ray',
                 'headless': rank > 0}
        ray = {'head': rank == 0, 'address': '%s:%d' % (head['address'], port),
               'args': _ray_start(me, head, rank, port, worker_ports, ray_temp_dir)}
    else:
        flags = {'tensor-parallel-size': tp, 'pipeline-parallel-size': pp, 'nnodes': nnodes, 'node-rank': rank,
                 'master-addr': head['address'], 'master-port': int(master_port), 'distributed-executor-backend': 'mp',
                 'headless': rank > 0}
    return {'problems': [], 'members': [dict((key, member[key]) for key in ('name', 'address', 'interface')) for member in found],
            'nnodes': nnodes, 'rank': rank, 'head': head['name'], 'master_addr': head['address'],
            'master_port': int(master_port), 'tp': tp, 'pp': pp, 'address': me['address'], 'interface': me['interface'],
            'backend': backend, 'flags': flags, 'env': env, 'ray': ray}


def ray_status(text):
    """``ray status`` output -> ``{active, pending, failures}``: the node ids under Active and Pending, the lines under
    Recent failures (without "(no failures)"). Ray prints a manually started node as `` 1 node_<hex>``."""
    sections = {'Active:': 'active', 'Pending:': 'pending', 'Recent failures:': 'failures'}
    found = {'active': [], 'pending': [], 'failures': []}
    current = None
    for line in str(text or '').splitlines():
        stripped = line.strip()
        if stripped in sections:
            current = sections[stripped]
            continue
        if not line.startswith(' ') or not stripped:
            current = None
            continue
        if current is None or stripped.startswith('('):
            continue
        node = re.match(r'^[0-9]+ (node_[0-9a-f]+)\Z', stripped)
        if current == 'failures':
            found['failures'].append(stripped)
        elif node:
            found[current].append(node.group(1))
    return found
