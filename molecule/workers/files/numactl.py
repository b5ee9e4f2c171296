# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""numactl with the NUMA layout of the lab instance's GPU profile (molecule scenario ``workers`` only).

A lab instance has the controller's CPUs (2, on one NUMA node), not those of the machine its GPU profile
simulates (``/etc/llmfleet-lab/gpu-profile.json``; ``mi300x-8``: 104 CPUs on each of 2 nodes). The real numactl
could neither show the profile's nodes nor bind a worker to them. prepare.yml diverts it to
``/usr/bin/numactl.lab-real`` and puts this stand-in at ``/usr/bin/numactl``, where the workers role finds it
(``llmfleet.rocm.numa_facts``) and where its units call it:

- ``numactl --hardware`` (``-H``) prints the profile's nodes in numactl's format. Each CPU entry of the profile
  is a node (its ``numa_node``) of ``cores`` CPUs, numbered on from the previous entry's; its memory from
  ``memory_kb``; distances 10 and 21.
- ``numactl --physcpubind=CPUS --membind=NODES COMMAND ...`` (also ``-C``, ``-m``, ``--cpunodebind``/``-N``,
  with ``=`` or a separate value) refuses, exit 1 as numactl does, a binding whose nodes the profile does not
  have or whose CPUs are not CPUs of those nodes. Otherwise it writes one line to stderr (the worker's journal)
  with what it bound, and runs COMMAND in its place (exec: the unit's main PID stays the same). The worker
  computes on the machine's CPU standing for the first bound node (node N: the N-th CPU this process may use,
  modulo their count) through ``VLLM_CPU_OMP_THREADS_BIND``, the CPU the CPU engine pins its compute threads
  to, unless the unit sets it.
- Anything else goes to the real numactl.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys

PROFILE = os.environ.get('LLMFLEET_LAB_GPU_PROFILE', '/etc/llmfleet-lab/gpu-profile.json')
REAL = '/usr/bin/numactl.lab-real'
TAG = 'llmfleet-lab numactl'
OPTIONS = {'--physcpubind': 'cpus', '-C': 'cpus', '--membind': 'mem', '-m': 'mem', '--cpunodebind': 'nodes', '-N': 'nodes'}


class Refused(Exception):
    pass


def load_nodes(path=PROFILE):
    """The profile's nodes: [{'id', 'cpus', 'memory_mb'}] by id."""
    with open(path) as handle:
        profile = json.load(handle)
    nodes, first = {}, 0
    for cpu in profile.get('cpus', []):
        count = int(cpu.get('cores', 2))
        node = nodes.setdefault(int(cpu.get('numa_node', len(nodes))), {'cpus': [], 'memory_mb': 0})
        node['cpus'].extend(range(first, first + count))
        node['memory_mb'] += int(cpu.get('memory_kb', 0)) // 1024
        first += count
    return profile.get('name', '?'), [dict(nodes[key], id=key) for key in sorted(nodes)]


def parse_list(text, what):
    """'0-3,8' -> [0, 1, 2, 3, 8]."""
    values = []
    for item in text.split(','):
        low, _sep, high = item.partition('-')
        if not low.isdigit() or (high and not high.isdigit()) or (high and int(high) < int(low)):
            raise Refused('invalid %s list "%s"' % (what, text))
        values.extend(range(int(low), int(high or low) + 1))
    return values


def cpu_list(cpus):
    ranges = []
    for cpu in sorted(set(cpus)):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ','.join('%d' % low if low == high else '%d-%d' % (low, high) for low, high in ranges)


def hardware(nodes):
    ids = [node['id'] for node in nodes]
    lines = ['available: %d nodes (%s)' % (len(nodes), cpu_list(ids))]
    for node in nodes:
        lines.append('node %d cpus: %s' % (node['id'], ' '.join(str(cpu) for cpu in node['cpus'])))
        lines.append('node %d size: %d MB' % (node['id'], node['memory_mb']))
        lines.append('node %d free: %d MB' % (node['id'], node['memory_mb'] * 9 // 10))
    lines.append('node distances:')
    lines.append('node ' + ''.join('%4d' % node_id for node_id in ids))
    for row in ids:
        lines.append('%3d: ' % row + ''.join('%4d' % (10 if row == col else 21) for col in ids))
    return '\n'.join(lines) + '\n'


def parse_binding(args):
    """(options, command) from numactl's arguments; None when they are not a binding this stand-in handles."""
    options, index = {}, 0
    while index < len(args) and args[index].startswith('-'):
        name, sep, value = args[index].partition('=')
        if name not in OPTIONS:
            return None
        if not sep:
            index += 1
            if index >= len(args):
                raise Refused('option %s needs a value' % name)
            value = args[index]
        options[OPTIONS[name]] = value
        index += 1
    if not options or index >= len(args):
        return None
    return options, args[index:]


def check_binding(nodes, options):
    """The bound CPUs and nodes; Refused when the profile has no such nodes or CPUs."""
    by_id = dict((node['id'], node) for node in nodes)
    named = []
    for key in ('mem', 'nodes'):
        if key in options:
            named.extend(parse_list(options[key], 'node'))
    missing = sorted(set(node for node in named if node not in by_id))
    if missing:
        raise Refused('node(s) %s not in the profile, whose nodes are %s' % (cpu_list(missing), cpu_list(by_id)))
    bound = sorted(set(named))
    cpus = parse_list(options['cpus'], 'CPU') if 'cpus' in options else []
    if cpus:
        home = sorted(set(cpu for node in (bound or by_id) for cpu in by_id[node]['cpus']))
        strays = sorted(set(cpus) - set(home))
        if strays:
            raise Refused('CPU(s) %s are not CPUs of node(s) %s (%s)' % (cpu_list(strays), cpu_list(bound or by_id), cpu_list(home)))
        if not bound:
            bound = sorted(set(node['id'] for node in nodes if set(node['cpus']) & set(cpus)))
    return cpus, bound


def run(argv, env=None):
    """Run argv in this process's place (numactl does the same); 1 when it cannot be run."""
    try:
        os.execvpe(argv[0], argv, env if env is not None else os.environ)
    except OSError as error:
        sys.stderr.write('%s: %s: %s\n' % (TAG, argv[0], error.strerror))
    return 1


def main(args):
    if args in (['--hardware'], ['-H']):
        _name, nodes = load_nodes()
        sys.stdout.write(hardware(nodes))
        return 0
    try:
        binding = parse_binding(args)
        if binding is None:
            return run([REAL] + args)
        options, command = binding
        name, nodes = load_nodes()
        cpus, bound = check_binding(nodes, options)
    except Refused as error:
        sys.stderr.write('%s: %s\n' % (TAG, error))
        return 1
    machine = sorted(os.sched_getaffinity(0))
    env = dict(os.environ)
    env.setdefault('VLLM_CPU_OMP_THREADS_BIND', str(machine[bound[0] % len(machine)] if bound else machine[0]))
    sys.stderr.write('%s: profile %s: CPUs %s, memory of node(s) %s; on this machine the engine computes on CPU %s\n'
                     % (TAG, name, cpu_list(cpus) or 'all', cpu_list(bound), env['VLLM_CPU_OMP_THREADS_BIND']))
    sys.stderr.flush()
    return run(command, env)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
