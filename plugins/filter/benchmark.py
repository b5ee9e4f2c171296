# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scaling benchmark's plan (``benchmark_shapes``) and input checks (``benchmark_input_problems``).

A shape is one way of serving on N GPUs: ``dp`` is N one-GPU workers behind the gateway, ``tp`` one
tensor-parallel server over N GPUs of one node. The benchmark uses the GPUs the inventory serves on
(``workers_gpus``, or every GPU of the node when it is empty), nodes in inventory order. A node whose
inventory serving already has the shape's workers keeps them, and the gateway drains the others; a node
that must serve differently for a shape gets the workers role's variables for it (``overrides``) and is
put back as its inventory says afterwards.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.module_utils.inputs import RuleSet, as_int, as_number, is_absolute_path, show

MODES = ('dp', 'tp')
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


def _tp_node(nodes, count):
    """The first node whose served GPUs a tp server over ``count`` GPUs divides, or None."""
    for node in nodes:
        served = len(_served(node))
        if served >= count and served % count == 0:
            return node
    return None


@RULES.rule('benchmark-gpu-counts')
def _gpu_counts(values, ctx):
    counts = values['benchmark_gpu_counts']
    if not isinstance(counts, list) or not counts or len(_counts(values)) != len(counts):
        return ('benchmark_gpu_counts is %s: give a non-empty list of positive GPU counts, e.g. [1, 2, 4, 8].' % show(counts))
    if len(set(counts)) != len(counts):
        return 'benchmark_gpu_counts %s names a count twice: give each count once.' % show(counts)
    return None


@RULES.rule('benchmark-modes')
def _modes(values, ctx):
    modes = values['benchmark_modes']
    engine = ctx.get('engine') or 'vllm'
    if not isinstance(modes, list) or not modes:
        return 'benchmark_modes is %s: give a non-empty list of dp and tp.' % show(modes)
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown:
        return ('benchmark_modes names %s, which the benchmark does not have for the engine %s: dp (N one-GPU workers behind'
                ' the gateway) and tp (one tensor-parallel server over N GPUs of one node).'
                % (', '.join(show(mode) for mode in unknown), engine))
    if len(set(modes)) != len(modes):
        return 'benchmark_modes %s names a mode twice: give each mode once.' % show(modes)
    return None


@RULES.rule('benchmark-tp-counts')
def _tp_counts(values, ctx):
    """A tp server runs on one node: a count within the fleet must fit one node's served GPUs and divide them."""
    modes = values['benchmark_modes']
    nodes = ctx.get('nodes') or []
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


def benchmark_nodes(names, hostvars):
    """The GPU nodes in inventory order as the checks and the plan see them.

    ``names``: groups['gpu_nodes']; ``hostvars``: Ansible's hostvars. Each node: name, gpus (the indices of
    ansible_facts.rocm.gpus), and its inventory's serving (workers_gpus, workers_mode, workers_tp_size).
    """
    nodes = []
    for name in names:
        host = hostvars[name]
        facts = host.get('ansible_facts') or {}
        gpus = [gpu.get('index') for gpu in (facts.get('rocm') or {}).get('gpus') or []]
        nodes.append({'name': name, 'gpus': gpus, 'workers_gpus': list(host.get('workers_gpus') or []),
                      'workers_mode': host.get('workers_mode') or 'dp', 'workers_tp_size': host.get('workers_tp_size') or 1})
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


def benchmark_shapes(values, nodes, model_heads=None):
    """The shapes to measure, each with its nodes and load points, and notes of the shapes left out.

    ``model_heads``: the model's attention heads (config.json's num_attention_heads); a tp count that does not divide
    them is left out. Call after ``benchmark_input_problems`` found nothing.
    """
    if not nodes:
        raise AnsibleFilterError('benchmark_shapes: the inventory has no GPU node to measure')
    fleet = _fleet_gpus(nodes)
    modes = [mode for mode in MODES if mode in values['benchmark_modes']]
    shapes = []
    skipped = []
    for mode in modes:
        for count in sorted(_counts(values)):
            name = '%s-n%d' % (mode, count)
            if count > fleet:
                skipped.append('%s: %d GPUs, but the fleet serves on %d.' % (name, count, fleet))
                continue
            if mode == 'tp' and count == 1 and 'dp' in modes:
                skipped.append('tp-n1: one one-GPU server, the shape dp-n1 measures.')
                continue
            if mode == 'tp' and model_heads and int(model_heads) % count:
                skipped.append('%s: the model\'s %d attention heads do not split over %d GPUs.' % (name, int(model_heads), count))
                continue
            if mode == 'dp':
                members = _dp_shape(nodes, count)
            else:
                node = _tp_node(nodes, count)
                if node is None:
                    raise AnsibleFilterError('benchmark_shapes: no node serves a multiple of %d GPUs; check the inputs first'
                                             % count)
                members = _tp_shape(node, count)
            shapes.append({'name': name, 'mode': mode, 'gpus': count, 'members': members,
                           'points': _loads_for(values, count)})
    return {'shapes': shapes, 'skipped': skipped,
            'overridden': sorted(set(member['node'] for shape in shapes for member in shape['members']
                                     if member['overrides'] is not None))}


def benchmark_gateway_drained(shape, names, hostvars):
    """What the gateway drains for a shape: every worker of the GPU nodes but the shape's, as "address:port".

    Each member keeps the first ``keep`` workers of its node (llmfleet_worker_endpoints, as the workers role published
    them after the shape was applied).
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


class FilterModule(object):
    def filters(self):
        return {'benchmark_nodes': benchmark_nodes, 'benchmark_input_problems': benchmark_input_problems,
                'benchmark_shapes': benchmark_shapes, 'benchmark_gateway_drained': benchmark_gateway_drained}
