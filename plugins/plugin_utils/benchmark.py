# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scaling benchmark's plan (``benchmark_shapes``) and input checks (``benchmark_input_problems``).

A shape is one way of serving on N GPUs: ``dp`` is N one-GPU workers behind the gateway, ``tp`` one
tensor-parallel server over N GPUs of one node, ``multinode`` the one engine a multi-node group serves
(``workers_multinode_group``: N is the group's GPUs, tensor x pipeline parallel as its plan says). The
benchmark uses the GPUs the inventory serves on (``workers_gpus``, or every GPU of the node when it is
empty), nodes in inventory order. A node whose inventory serving already has the shape's workers keeps
them, and the gateway drains the others; a node that must serve differently for a shape gets the workers
role's variables for it (``overrides``) and is put back as its inventory says afterwards.

A multi-node group is one unit: its members serve one engine, published by its first member (rank 0)
alone. The benchmark measures that engine as it is (``multinode``) and never reshapes it: the ``dp`` and
``tp`` shapes run on the nodes that serve alone, and the group's engine is drained meanwhile.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import RuleSet, as_int, as_number, is_absolute_path, show

MODES = ('dp', 'tp', 'multinode')
# The modes whose shapes the benchmark sets up on nodes that serve alone.
NODE_MODES = ('dp', 'tp')
SWEEPS = ('concurrency', 'request_rate')
DATASETS = ('random', 'sharegpt', 'prefix_repetition')
# One warm-up request per concurrent stream, at most this many.
MAX_WARMUPS = 64

RULES = RuleSet('benchmark')


def _served(node):
    """The GPU indices a node's inventory serves on."""
    return list(node.get('workers_gpus') or []) or list(node.get('gpus') or [])


def _counts(values):
    counts = values['benchmark_gpu_counts']
    if not isinstance(counts, list) or not counts:
        return []
    return [count for count in counts if not isinstance(count, bool) and isinstance(count, int) and count > 0]


def _fleet_gpus(nodes):
    return sum(len(_served(node)) for node in nodes)


def _gpus(count):
    return '%d GPU%s' % (count, '' if count == 1 else 's')


def _group_of(node):
    return node.get('workers_multinode_group')


def _solo(nodes):
    """The nodes that serve alone (in no multi-node group): where the dp and tp shapes run."""
    return [node for node in nodes if _group_of(node) is None]


def _tp_node(nodes, count):
    """The first node whose served GPUs a tp server over ``count`` GPUs divides, or None."""
    for node in nodes:
        served = len(_served(node))
        if served >= count and served % count == 0:
            return node
    return None


def _size(value):
    """A parallel size as the workers role takes it: None (its default) or a whole number of 1 or more; else False."""
    if value is None:
        return None
    number = as_int(value)
    return number if number is not None and number >= 1 else False


def _multinode_groups(nodes):
    """The multi-node groups the GPU nodes serve in, in inventory order of their first member.

    Each: name, members (inventory order), head (rank 0, the API), per_node (the GPUs each member serves), gpus (all
    of them), tp, pp (as the workers role plans them), and problems (why the benchmark cannot measure it as one
    engine; with problems the sizes may be missing).
    """
    by_name = dict((node['name'], node) for node in nodes)
    groups = []
    for node in nodes:
        name = _group_of(node)
        if name is None or name in [group['name'] for group in groups]:
            continue
        members = list(node.get('multinode_members') or [])
        group = {'name': name, 'members': members, 'head': members[0] if members else None, 'per_node': None,
                 'gpus': None, 'tp': None, 'pp': None, 'problems': []}
        groups.append(group)
        problems = group['problems']
        if not members:
            problems.append('%s names the group %s in workers_multinode_group, which the inventory does not have (or has'
                            ' no host): name an inventory group of the GPU nodes that serve one engine.'
                            % (node['name'], show(name)))
            continue
        outside = [member for member in members if member not in by_name]
        if outside:
            problems.append('the group %s has members that are not GPU nodes (%s): every rank of the engine is a host of'
                            ' gpu_nodes, whose serving the benchmark reads and puts back.' % (name, ', '.join(outside)))
        others = [member for member in members if member in by_name and _group_of(by_name[member]) != name]
        if others:
            problems.append('%s %s a member of the group %s but serve%s without it (workers_multinode_group %s): set'
                            ' workers_multinode_group to %s alike on every member (group_vars of the group).'
                            % (', '.join(others), 'is' if len(others) == 1 else 'are', name,
                               's' if len(others) == 1 else '',
                               ', '.join(show(_group_of(by_name[member])) for member in others), name))
        strangers = [other['name'] for other in nodes if _group_of(other) == name and other['name'] not in members]
        if strangers:
            one = len(strangers) == 1
            problems.append('%s name%s the group %s but %s not a member of it: add %s to the group or unset'
                            ' workers_multinode_group there.'
                            % (', '.join(strangers), 's' if one else '', name, 'is' if one else 'are', 'it' if one else 'them'))
        known = [by_name[member] for member in members if member in by_name]
        served = sorted(set(len(_served(member)) for member in known))
        if len(served) > 1:
            each = ', '.join('%s: %d' % (member['name'], len(_served(member))) for member in known)
            problems.append('the members of the group %s serve different numbers of GPUs (%s): every rank serves as many'
                            ' (workers_gpus).' % (name, each))
        sizes = [(show(member.get('workers_multinode_tensor_parallel_size')),
                  show(member.get('workers_multinode_pipeline_parallel_size'))) for member in known]
        if len(set(sizes)) > 1:
            each = ', '.join('%s: tp %s, pp %s' % ((member['name'],) + size) for member, size in zip(known, sizes))
            problems.append('the members of the group %s give different parallel sizes (%s): set'
                            ' workers_multinode_tensor_parallel_size and workers_multinode_pipeline_parallel_size alike on'
                            ' every member.' % (name, each))
        if problems or not known:
            continue
        tp = _size(known[0].get('workers_multinode_tensor_parallel_size'))
        pp = _size(known[0].get('workers_multinode_pipeline_parallel_size'))
        if tp is False or pp is False:
            problems.append('the group %s has parallel sizes tp %s, pp %s: give whole numbers of 1 or more, or null.'
                            % (name, show(known[0].get('workers_multinode_tensor_parallel_size')),
                               show(known[0].get('workers_multinode_pipeline_parallel_size'))))
            continue
        per_node = served[0]
        total = per_node * len(members)
        tp = tp or per_node
        pp = pp or len(members)
        if tp * pp != total:
            problems.append('the group %s has tensor parallel %d x pipeline parallel %d = %d ranks, but its %d members serve'
                            ' %s each (%d): make workers_multinode_tensor_parallel_size x'
                            ' workers_multinode_pipeline_parallel_size equal their GPUs.'
                            % (name, tp, pp, tp * pp, len(members), _gpus(per_node), total))
            continue
        group.update(per_node=per_node, gpus=total, tp=tp, pp=pp)
    return groups


def _group_record(group):
    return dict((key, group[key]) for key in ('name', 'members', 'head', 'tp', 'pp', 'gpus'))


def _dp_shape(nodes, count):
    """N one-GPU workers: the nodes' GPUs in inventory order."""
    members = []
    left = count
    for node in nodes:
        if left == 0:
            break
        served = _served(node)
        take = min(left, len(served))
        if take == 0:
            continue
        if node.get('workers_mode', 'dp') == 'dp':
            members.append({'node': node['name'], 'keep': take, 'overrides': None})
        else:
            members.append({'node': node['name'], 'keep': take,
                            'overrides': {'workers_mode': 'dp', 'workers_gpus': served[:take]}})
        left -= take
    return members


def _tp_shape(node, count):
    """One server over ``count`` GPUs of ``node``."""
    served = _served(node)
    mode = node.get('workers_mode', 'dp')
    already = ((mode == 'tp' and len(served) == count) or (mode == 'hybrid' and as_int(node.get('workers_tp_size')) == count)
               or (mode == 'dp' and count == 1))
    overrides = None if already else {'workers_mode': 'tp', 'workers_gpus': served[:count]}
    return [{'node': node['name'], 'keep': 1, 'overrides': overrides}]


def _plan(values, nodes, model_heads=None):
    """The shapes (without load points), the notes of what is left out, and the groups."""
    solo = _solo(nodes)
    groups = _multinode_groups(nodes)
    fleet = _fleet_gpus(solo)
    grouped = ', '.join('%s (%s)' % (group['name'], ', '.join(group['members'])) for group in groups)
    modes = [mode for mode in MODES if mode in values['benchmark_modes']]
    shapes = []
    skipped = []
    for mode in modes:
        if mode == 'multinode':
            if not groups:
                skipped.append('multinode: no GPU node serves in a multi-node group (workers_multinode_group).')
            measured = {}
            for group in groups:
                name = 'multinode-n%d' % group['gpus'] if group['gpus'] else 'multinode'
                if group['problems']:
                    skipped.append('%s (group %s): %s' % (name, group['name'], ' '.join(group['problems'])))
                elif group['gpus'] in measured:
                    skipped.append('%s (group %s): one engine over %s is measured already, the group %s\'s.'
                                   % (name, group['name'], _gpus(group['gpus']), measured[group['gpus']]))
                else:
                    measured[group['gpus']] = group['name']
                    shapes.append({'name': name, 'mode': mode, 'gpus': group['gpus'], 'group': _group_record(group),
                                   'members': [{'node': group['head'], 'keep': 1, 'overrides': None}]})
            continue
        if groups and not solo:
            skipped.append('%s: every GPU node serves in a multi-node group (%s), which the benchmark measures as one'
                           ' engine (multinode) and does not take apart; %s shapes run on nodes that serve alone.'
                           % (mode, grouped, mode))
            continue
        for count in sorted(_counts(values)):
            name = '%s-n%d' % (mode, count)
            if count > fleet:
                skipped.append('%s: %d GPUs, but the %s on %d.' % (
                    name, count, 'nodes that serve alone (in no multi-node group) serve' if groups else 'fleet serves',
                    fleet))
                continue
            if mode == 'tp' and count == 1 and 'dp' in modes:
                skipped.append('tp-n1: one one-GPU server, the shape dp-n1 measures.')
                continue
            if mode == 'tp' and model_heads and int(model_heads) % count:
                skipped.append('%s: the model\'s %d attention heads do not split over %d GPUs.' % (name, int(model_heads), count))
                continue
            if mode == 'dp':
                members = _dp_shape(solo, count)
            else:
                node = _tp_node(solo, count)
                if node is None:
                    raise AnsibleFilterError('benchmark_shapes: no node serves a multiple of %d GPUs; check the inputs first'
                                             % count)
                members = _tp_shape(node, count)
            shapes.append({'name': name, 'mode': mode, 'gpus': count, 'members': members})
    return shapes, skipped, groups


@RULES.rule('benchmark-gpu-counts')
def _gpu_counts(values, ctx):
    counts = values['benchmark_gpu_counts']
    if not isinstance(counts, list) or not counts or len(_counts(values)) != len(counts):
        return ('benchmark_gpu_counts is %s: give a non-empty list of positive GPU counts, e.g. [1, 2, 4, 8].' % show(counts))
    if len(set(counts)) != len(counts):
        return 'benchmark_gpu_counts %s names a count twice: give each count once.' % show(counts)
    return None


def _modes_valid(values):
    modes = values['benchmark_modes']
    return isinstance(modes, list) and modes and all(mode in MODES for mode in modes) and len(set(modes)) == len(modes)


@RULES.rule('benchmark-modes')
def _modes(values, ctx):
    modes = values['benchmark_modes']
    engine = ctx.get('engine') or 'vllm'
    if not isinstance(modes, list) or not modes:
        return 'benchmark_modes is %s: give a non-empty list of dp, tp and multinode.' % show(modes)
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown:
        return ('benchmark_modes names %s, which the benchmark does not have for the engine %s: dp (N one-GPU workers behind'
                ' the gateway), tp (one tensor-parallel server over N GPUs of one node) and multinode (the engine of a'
                ' multi-node group, workers_multinode_group).'
                % (', '.join(show(mode) for mode in unknown), engine))
    if len(set(modes)) != len(modes):
        return 'benchmark_modes %s names a mode twice: give each mode once.' % show(modes)
    return None


@RULES.rule('benchmark-tp-counts')
def _tp_counts(values, ctx):
    """A tp server runs on one node that serves alone: a count within them must fit one node's served GPUs and divide them."""
    modes = values['benchmark_modes']
    nodes = _solo(ctx.get('nodes') or [])
    if not isinstance(modes, list) or 'tp' not in modes or not nodes:
        return None
    fleet = _fleet_gpus(nodes)
    largest = max(len(_served(node)) for node in nodes)
    messages = []
    for count in _counts(values):
        if count > fleet or _tp_node(nodes, count) is not None:
            continue
        if count > largest:
            messages.append('benchmark_gpu_counts has %d with tp in benchmark_modes, but a tensor-parallel server runs on one'
                            ' node and the largest node serves on %s: leave %d out of benchmark_gpu_counts or tp out of'
                            ' benchmark_modes.' % (count, _gpus(largest), count))
        else:
            messages.append('benchmark_gpu_counts has %d with tp in benchmark_modes, but %d divides no node\'s served GPUs (%s):'
                            ' use counts that divide them, e.g. powers of two on 8-GPU nodes.'
                            % (count, count, ', '.join('%s: %d' % (node['name'], len(_served(node))) for node in nodes)))
    return messages


@RULES.rule('benchmark-multinode-group')
def _multinode_group(values, ctx):
    """A group the benchmark would measure as one engine must be one: its members, its GPUs, its sizes."""
    modes = values['benchmark_modes']
    if not isinstance(modes, list) or 'multinode' not in modes:
        return None
    return ['benchmark_modes has multinode, but %s' % problem
            for group in _multinode_groups(ctx.get('nodes') or []) for problem in group['problems']]


@RULES.rule('benchmark-nothing-to-measure')
def _nothing(values, ctx):
    """Settings and a fleet that leave no shape to run (the other rules speak of malformed settings)."""
    nodes = ctx.get('nodes') or []
    if not nodes or not _modes_valid(values) or len(_counts(values)) != len(values['benchmark_gpu_counts'] or []):
        return None
    try:
        shapes, skipped, groups = _plan(values, nodes)
    except AnsibleFilterError:
        return None  # benchmark-tp-counts names it
    if shapes:
        return None
    advice = ''
    if groups and 'multinode' not in values['benchmark_modes']:
        advice = ' Add multinode to benchmark_modes to measure the engine of %s.' % ', '.join(
            'the group %s' % group['name'] for group in groups)
    elif not groups and values['benchmark_modes'] == ['multinode']:
        advice = ' Set workers_multinode_group on the members of a group, or measure dp or tp.'
    return ('benchmark_modes %s with benchmark_gpu_counts %s leaves nothing to measure on this fleet: %s%s'
            % (show(values['benchmark_modes']), show(values['benchmark_gpu_counts']), ' '.join(skipped), advice))


@RULES.rule('benchmark-sweep')
def _sweep(values, ctx):
    if values['benchmark_sweep'] not in SWEEPS:
        return 'benchmark_sweep is %s: choose concurrency or request_rate.' % show(values['benchmark_sweep'])
    return None


@RULES.rule('benchmark-loads')
def _loads(values, ctx):
    loads = values['benchmark_loads_per_gpu']
    numbers = [as_number(load) for load in loads] if isinstance(loads, list) else []
    if not numbers or any(number is None or number <= 0 for number in numbers):
        return ('benchmark_loads_per_gpu is %s: give a non-empty list of positive numbers (concurrent requests or requests per'
                ' second per GPU), e.g. [1, 8, 32, 128].' % show(loads))
    if numbers != sorted(set(numbers)):
        return ('benchmark_loads_per_gpu %s is not increasing: the sweep stops at saturation, so give the loads from lowest to'
                ' highest, each once.' % show(loads))
    if values['benchmark_sweep'] == 'concurrency' and any(number != int(number) for number in numbers):
        return 'benchmark_loads_per_gpu %s: concurrencies are whole numbers.' % show(loads)
    return None


@RULES.rule('benchmark-counts-positive')
def _positive(values, ctx):
    names = ('benchmark_input_len', 'benchmark_output_len', 'benchmark_min_prompts', 'benchmark_prompts_per_load',
             'benchmark_prefix_len', 'benchmark_suffix_len', 'benchmark_num_prefixes', 'benchmark_point_timeout')
    return ['%s is %s: give a positive whole number.' % (name, show(values[name]))
            for name in names if (as_int(values[name]) or 0) <= 0]


@RULES.rule('benchmark-saturation-gain')
def _gain(values, ctx):
    gain = as_number(values['benchmark_saturation_gain'])
    if gain is None or not 0 <= gain < 1:
        return ('benchmark_saturation_gain is %s: give the share (0 to below 1, e.g. 0.05) by which a load point\'s throughput'
                ' must beat the previous one for the sweep to go on.' % show(values['benchmark_saturation_gain']))
    return None


@RULES.rule('benchmark-dataset')
def _dataset(values, ctx):
    dataset = values['benchmark_dataset']
    path = values['benchmark_dataset_path']
    if dataset not in DATASETS:
        return 'benchmark_dataset is %s: choose random, sharegpt or prefix_repetition.' % show(dataset)
    if dataset != 'sharegpt':
        return None
    if not is_absolute_path(path):
        return ('benchmark_dataset sharegpt needs benchmark_dataset_path, the absolute path on the controller of a ShareGPT-style'
                ' JSON file; it is %s.' % show(path))
    if not ctx.get('dataset_found'):
        return 'benchmark_dataset_path %s is not a file on the controller: give the path of a ShareGPT-style JSON file.' % show(path)
    return None


@RULES.rule('benchmark-client')
def _client(values, ctx):
    client = values['benchmark_client']
    if client not in [node['name'] for node in ctx.get('nodes') or []]:
        return ('benchmark_client is %s, not a host of the gpu_nodes group: the client runs `vllm bench serve` from a GPU node\'s'
                ' engine venv with its model\'s tokenizer.' % show(client))
    return None


def benchmark_nodes(names, hostvars, groups=None):
    """The GPU nodes in inventory order as the checks and the plan see them.

    ``names``: groups['gpu_nodes']; ``hostvars``: Ansible's hostvars; ``groups``: Ansible's groups (the members of a
    multi-node group, in inventory order). Each node: name, gpus (the indices of ansible_facts.rocm.gpus), its
    inventory's serving (workers_gpus, workers_mode, workers_tp_size) and its multi-node group
    (workers_multinode_group, None when it serves alone; multinode_members, the group's hosts in inventory order;
    workers_multinode_tensor_parallel_size and workers_multinode_pipeline_parallel_size, None for the defaults).
    """
    nodes = []
    for name in names:
        host = hostvars[name]
        facts = host.get('ansible_facts') or {}
        gpus = [gpu.get('index') for gpu in (facts.get('rocm') or {}).get('gpus') or []]
        group = host.get('workers_multinode_group')
        inventory_groups = groups if groups is not None else (host.get('groups') or {})
        nodes.append({'name': name, 'gpus': gpus, 'workers_gpus': list(host.get('workers_gpus') or []),
                      'workers_mode': host.get('workers_mode') or 'dp', 'workers_tp_size': host.get('workers_tp_size') or 1,
                      'workers_multinode_group': group,
                      'multinode_members': list(inventory_groups.get(group) or []) if group is not None else [],
                      'workers_multinode_tensor_parallel_size': host.get('workers_multinode_tensor_parallel_size'),
                      'workers_multinode_pipeline_parallel_size': host.get('workers_multinode_pipeline_parallel_size')})
    return nodes


def benchmark_input_problems(values, nodes, engine='vllm', dataset_found=False):
    """The benchmark's variables and the fleet's nodes (``benchmark_nodes``) -> a list of messages (empty when fine)."""
    return RULES.messages(values, {'nodes': nodes, 'engine': engine, 'dataset_found': dataset_found})


def _loads_for(values, count):
    """The load points of a shape over ``count`` GPUs."""
    points = []
    for per_gpu in values['benchmark_loads_per_gpu']:
        load = per_gpu * count
        if values['benchmark_sweep'] == 'concurrency':
            load = int(load)
        prompts = max(int(values['benchmark_min_prompts']), int(math.ceil(load * int(values['benchmark_prompts_per_load']))))
        warmups = min(int(math.ceil(load)), MAX_WARMUPS) if values.get('benchmark_warmup', True) else 0
        points.append({'load': load, 'num_prompts': prompts, 'warmups': warmups})
    return points


def benchmark_shapes(values, nodes, model_heads=None):
    """The shapes to measure, each with its nodes and load points, and notes of the shapes left out.

    ``model_heads``: the model's attention heads (config.json's num_attention_heads); a tp count that does not divide
    them is left out. Call after ``benchmark_input_problems`` found nothing.
    """
    if not nodes:
        raise AnsibleFilterError('benchmark_shapes: the inventory has no GPU node to measure')
    shapes, skipped, groups = _plan(values, nodes, model_heads)
    for shape in shapes:
        shape['points'] = _loads_for(values, shape['gpus'])
    return {'shapes': shapes, 'skipped': skipped,
            'overridden': sorted(set(member['node'] for shape in shapes for member in shape['members']
                                     if member['overrides'] is not None)),
            'groups': [_group_record(group) for group in groups if not group['problems']]}


def benchmark_client_endpoint(client, nodes, hostvars):
    """The worker endpoint whose venv, model name and model directory (the tokenizer) the client runs `vllm bench serve` with.

    The client's own first worker; a member of a multi-node group has none of its own but for rank 0, so it takes its
    group's (rank 0's endpoint, the group's only one: every member runs the same venv and model, which the workers role
    checks).
    """
    node = dict((each['name'], each) for each in nodes).get(client)
    if node is None:
        raise AnsibleFilterError('benchmark: the client %s is not a GPU node' % client)
    source = client
    if _group_of(node) is not None and node.get('multinode_members'):
        source = node['multinode_members'][0]
    endpoints = hostvars[source].get('llmfleet_worker_endpoints') or []
    if not endpoints:
        raise AnsibleFilterError(
            'benchmark: %s publishes no worker (llmfleet_worker_endpoints)%s: run playbooks/serve.yml first; the client runs'
            ' `vllm bench serve` from that worker\'s venv with its model\'s tokenizer'
            % (source, '' if source == client else ' for its group %s, of which the client %s is a member'
               % (_group_of(node), client)))
    return endpoints[0]


def benchmark_gateway_drained(shape, names, hostvars):
    """What the gateway drains for a shape: every worker of the GPU nodes but the shape's, as "address:port".

    Each member keeps the first ``keep`` workers of its node (llmfleet_worker_endpoints, as the workers role published
    them after the shape was applied). A multi-node group's engine is one worker of its first member (rank 0); the
    other members publish none.
    """
    kept = []
    for member in shape['members']:
        endpoints = hostvars[member['node']].get('llmfleet_worker_endpoints') or []
        if len(endpoints) < member['keep']:
            raise AnsibleFilterError('benchmark: %s serves %d worker(s), the shape %s needs %d'
                                     % (member['node'], len(endpoints), shape['name'], member['keep']))
        kept.extend(endpoint['url'] for endpoint in endpoints[:member['keep']])
    drained = []
    for name in names:
        for endpoint in hostvars[name].get('llmfleet_worker_endpoints') or []:
            if endpoint['url'] not in kept:
                drained.append(re.sub(r'^https?://', '', endpoint['url']).rstrip('/'))
    return drained
