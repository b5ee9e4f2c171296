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
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmfleet.rocm.plugins.module_utils.validate_fabric import fabric_address

DEFAULT_MASTER_PORT = 29501
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
            'rocm': node.get('rocm_version'), 'venv': node.get('venv'), 'model': node.get('model'), 'rccl': rccl}, None


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


def multinode_plan(members, host, tp_size=None, pp_size=None, master_port=DEFAULT_MASTER_PORT):
    """The part of ``host`` in the engine its group serves.

    ``members``: ``[{name, env_text, interfaces, gpus, rocm_version, venv, model}]`` in inventory order; ``env_text``
    is the member's rccl.env (None when it has none), ``interfaces`` maps interface names (``-`` written ``_``, as in
    Ansible's facts) to ``{ipv4: {address}}``, ``gpus`` is the number of GPUs the member serves; ``rocm_version``,
    ``venv`` (the real venv's name) and ``model`` (the model marker's digest) must be alike on every member, as must
    the RCCL environment but for the node's own device names. A mapping of name -> record (None for a
    member that is not in this run) in inventory order is taken too. ``tp_size``/``pp_size``: None for the
    defaults (a node's GPUs; the number of nodes).

    Returns ``{problems, members, nnodes, rank, head, master_addr, master_port, tp, pp, address, interface, flags,
    env}``; with problems, the rest may be missing. ``flags`` are vLLM's (names without ``--``), ``env`` the member's.
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
    flags = {'tensor-parallel-size': tp, 'pipeline-parallel-size': pp, 'nnodes': nnodes, 'node-rank': rank,
             'master-addr': head['address'], 'master-port': int(master_port), 'distributed-executor-backend': 'mp',
             'headless': rank > 0}
    return {'problems': [], 'members': [dict((key, member[key]) for key in ('name', 'address', 'interface')) for member in found],
            'nnodes': nnodes, 'rank': rank, 'head': head['name'], 'master_addr': head['address'],
            'master_port': int(master_port), 'tp': tp, 'pp': pp, 'address': me['address'], 'interface': me['interface'],
            'flags': flags, 'env': {'VLLM_HOST_IP': me['address'], 'GLOO_SOCKET_IFNAME': me['interface']}}
