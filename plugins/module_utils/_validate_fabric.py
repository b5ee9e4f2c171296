# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The all-reduce across the nodes of a group, over the fabric: who takes part, the mpirun command, the verdict.

Everything here is pure: data in, data out. No Ansible imports.

``fabric_plan(nodes, options)`` groups the validated nodes (``validate_fabric_group``), and for each group of two
nodes or more says whether the run can take place (``skip``: why not) and how: the members in inventory order (the
first launches), each one's fabric address (the IPv4 address of the interface its ``/etc/llmfleet/rccl.env`` names
in ``NCCL_SOCKET_IFNAME``), its GPUs (one MPI rank each), its RCCL environment, the networks Open MPI may use, and
the threshold. ``mpirun_argv`` turns a group into Open MPI's command (one application context per node, so that each
node's ranks get that node's own RCCL environment), and ``judge_fabric`` judges the parsed rccl-tests report.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import re

from ansible_collections.llmfleet.rocm.plugins.module_utils._validate_thresholds import MESSAGE_8G

CHECK = 'fabric.all_reduce'
POLICY_SOURCE = ('llmfleet.rocm policy (AMD publishes no cross-node figure; its Cluster Validation Suite leaves it to '
                 'the site): validate_fabric_line_rate_fraction x the slowest member\'s RDMA line rate')
FIX_FABRIC_NET = ('check each member\'s NIC links (validate\'s pcie check, "ibv_devinfo"), the switch ports\' speed and '
                  'their PFC/ECN settings, that rdma_ib_hca names every NIC of the node, and run the check on pairs '
                  'of nodes (validate_fabric_group) to find the slow one')
PROGRAM_ARGS = ['-b', '8', '-e', '8G', '-f', '2', '-g', '1']
_ENV_LINE = re.compile(r'^(?P<name>[A-Za-z_][A-Za-z0-9_]*)="(?P<value>[^"]*)"$')


def parse_env_file(text):
    """The rdma role's /etc/llmfleet/rccl.env (``NAME="value"`` lines, comments) -> dict; other lines are refused."""
    env = {}
    for number, line in enumerate((text or '').splitlines(), 1):
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        match = _ENV_LINE.match(line)
        if not match:
            raise ValueError('line %d of the RCCL environment is not NAME="value": %r' % (number, line[:120]))
        env[match.group('name')] = match.group('value')
    return env


def _interface(env):
    """The first interface NCCL_SOCKET_IFNAME names ("=eth0,eth1": exact names; "eth": a prefix); None for an
    exclusion list ("^lo,docker"), which names no interface to meet on."""
    value = (env.get('NCCL_SOCKET_IFNAME') or '').strip()
    if value.startswith('^'):
        return None
    return value.lstrip('=').split(',')[0].strip() or None


def fabric_address(name, node):
    """A node's RCCL environment, its fabric interface and that interface's IPv4 facts, from ``node``'s ``env_text``
    (its /etc/llmfleet/rccl.env, None when it has none) and ``interfaces`` (network facts by interface name, ``-``
    written ``_``): ``(env, interface, ipv4, None)``, or ``(None, None, None, why not)``."""
    text = node.get('env_text')
    if text is None:
        return None, None, None, '%s has no /etc/llmfleet/rccl.env: run the rdma role (site.yml --tags rdma) on it' % name
    try:
        env = parse_env_file(text)
    except ValueError as error:
        return None, None, None, '%s: %s' % (name, error)
    interface = _interface(env)
    if not interface:
        return None, None, None, ('%s: its rccl.env names no interface in NCCL_SOCKET_IFNAME: set rdma_socket_ifname'
                                  ' and run the rdma role on it' % name)
    ipv4 = ((node.get('interfaces') or {}).get(interface.replace('-', '_')) or {}).get('ipv4') or {}
    if not ipv4.get('address'):
        return None, None, None, '%s: its fabric interface %s has no IPv4 address' % (name, interface)
    return env, interface, ipv4, None


def _line_rate_gbs(rdma):
    """The sum of the active RDMA ports' rates in GB/s, None when a rate is unknown or no port is active."""
    devices = [device for device in (rdma or {}).get('devices') or [] if device.get('active_ports')]
    rates = [device.get('active_rate_gbps') for device in devices]
    if not rates or any(rate is None for rate in rates):
        return None
    return sum(rates) / 8.0


def _member(name, node, require_rdma):
    """One node's part: (member dict, why it cannot take part or None)."""
    env, interface, address, problem = fabric_address(name, node)
    if problem:
        return None, problem
    active = [device['name'] for device in (node.get('rdma') or {}).get('devices') or [] if device.get('active_ports')]
    if require_rdma and not active:
        return None, ('%s has no RDMA device with an active port: the all-reduce would run over sockets, not the fabric '
                      '(set validate_fabric_require_rdma: false to run it anyway)' % name)
    gpus = node.get('gpus')
    if not gpus:
        return None, '%s: the node validation found no Instinct GPU to run ranks on' % name
    network = ipaddress.ip_interface(u'%s/%s' % (address['address'], address.get('netmask') or '32')).network
    return {'name': name, 'address': address['address'], 'network': str(network), 'interface': interface,
            'slots': int(gpus), 'env': env, 'rdma_devices': active, 'line_rate_gbs': _line_rate_gbs(node.get('rdma'))}, None


def fabric_plan(nodes, options):
    """``nodes``: ``[{name, group, env_text, rdma, interfaces, gpus}]`` in inventory order.

    ``interfaces`` maps interface names (``-`` written ``_``, as in Ansible's facts) to ``{ipv4: {address, netmask}}``.

    ``options``: ``require_rdma`` (bool), ``threshold`` (``{value, source}`` or None: the policy below),
    ``line_rate_fraction``. Returns ``{group: {group, members, launcher, hosts, np, networks, threshold, skip,
    findings}}`` for every group of two nodes or more (``findings``: the "not run" warning of a group that cannot run);
    a node alone in its group has nothing to run against and is left out.
    """
    groups = {}
    for node in nodes:
        groups.setdefault(str(node.get('group') or 'all'), []).append(node)
    plan = {}
    for group, members in sorted(groups.items()):
        if len(members) < 2:
            continue
        names = [node['name'] for node in members]
        entry = {'group': group, 'members': names, 'launcher': names[0], 'hosts': [], 'np': 0, 'networks': [],
                 'threshold': None, 'skip': None, 'findings': []}
        problems = []
        for node in members:
            member, problem = _member(node['name'], node, options.get('require_rdma', True))
            if problem:
                problems.append(problem)
            else:
                entry['hosts'].append(member)
        if problems:
            entry['skip'] = '; '.join(problems)
            entry['findings'] = skipped_findings(entry)
            plan[group] = entry
            continue
        entry['np'] = sum(host['slots'] for host in entry['hosts'])
        entry['networks'] = sorted(set(host['network'] for host in entry['hosts']))
        entry['threshold'] = _threshold(entry['hosts'], options)
        plan[group] = entry
    return plan


def _threshold(hosts, options):
    given = options.get('threshold')
    if given:
        return {'value': float(given['value']), 'source': given.get('source') or 'inventory (validate_fabric_threshold)'}
    rates = [host['line_rate_gbs'] for host in hosts]
    if any(rate is None for rate in rates):
        return None
    fraction = float(options.get('line_rate_fraction', 0.7))
    slowest = min(rates)
    return {'value': round(fraction * slowest, 2),
            'source': '%s (%s x %g GB/s)' % (POLICY_SOURCE, fraction, slowest)}


def mpirun_argv(mpirun, group, program, ssh_args, bind_to='numa'):
    """Open MPI's command for a group: global options, then one application context per member.

    Open MPI starts its daemons over SSH (``ssh_args``: key, known hosts, port) and keeps its own traffic to the
    group's networks; each member's ranks get that member's RCCL environment (``-x NAME=value``). Each rank is bound
    to ``bind_to`` (numa: the NUMA domain Open MPI places it in).
    """
    networks = ','.join(group['networks'])
    argv = [mpirun, '--allow-run-as-root', '--tag-output', '--bind-to', bind_to,
            '--mca', 'plm_rsh_args', ssh_args, '--mca', 'plm_rsh_no_tree_spawn', '1',
            '--mca', 'oob_tcp_if_include', networks, '--mca', 'btl_tcp_if_include', networks]
    for index, host in enumerate(group['hosts']):
        if index:
            argv.append(':')
        argv += ['-np', str(host['slots']), '-H', '%s:%d' % (host['address'], host['slots'])]
        for name, value in sorted(host['env'].items()):
            argv += ['-x', '%s=%s' % (name, value)]
        argv += [program] + PROGRAM_ARGS
    return argv


def _finding(level, check_id, message, figure=None, threshold=None, source=None):
    return {'level': level, 'id': check_id, 'gpu': None, 'figure': figure, 'threshold': threshold, 'source': source,
            'message': message}


def skipped_findings(group):
    """A group that could not run: one warning, so that nobody takes the fabric for checked."""
    return [_finding('warning', CHECK, 'the all-reduce across %s (group %s) did not run: %s'
                     % (', '.join(group['members']), group['group'], group['skip']))]


def judge_fabric(result, group):
    """Findings of one group's run from ``parse_rccl_tests``' result: every rank ran, no wrong value, bandwidth."""
    members = ', '.join(group['members'])
    where = 'the all-reduce across %s (group %s, %d ranks)' % (members, group['group'], group['np'])
    findings = []
    ranks = len(result.get('devices') or [])
    hosts = sorted(set(device['host'] for device in result.get('devices') or []))
    if ranks != group['np'] or len(hosts) != len(group['members']):
        findings.append(_finding('error', CHECK + '.ranks', '%s listed %d ranks on %d hosts (%s), expected %d on %d: '
                                 'read the run\'s output in the group\'s report directory' % (
                                     where, ranks, len(hosts), ', '.join(hosts), group['np'], len(group['members'])),
                                 ranks, group['np'], 'mpirun -np'))
    wrong = result.get('wrong_total') or 0
    bounds = result.get('out_of_bounds') or 0
    if wrong or bounds:
        findings.append(_finding('error', CHECK + '.wrong', '%s returned %d wrong values (%d out of bounds): data was '
                                 'corrupted between the nodes; %s' % (where, wrong, bounds, FIX_FABRIC_NET),
                                 wrong, 0, 'rccl-tests validation'))
    else:
        findings.append(_finding('ok', CHECK + '.wrong', '%s returned no wrong values' % where, 0, 0,
                                 'rccl-tests validation'))
    rows = [row for row in result.get('rows') or [] if row['size'] == MESSAGE_8G and row.get('in_place')]
    figure = rows[-1]['in_place']['busbw_gbs'] if rows else None
    threshold = group.get('threshold')
    what = '%s: in-place bus bandwidth at %d bytes' % (where, MESSAGE_8G)
    if figure is None:
        findings.append(_finding('error', CHECK + '.busbw', '%s: the report has no in-place row at %d bytes'
                                 % (where, MESSAGE_8G), None, threshold and threshold['value'],
                                 threshold and threshold['source']))
    elif threshold is None:
        findings.append(_finding('warning', CHECK + '.busbw', '%s is %s GB/s, not judged: no RDMA line rate is known '
                                 'for every member; set validate_fabric_threshold' % (what, figure), figure))
    elif figure >= threshold['value']:
        findings.append(_finding('ok', CHECK + '.busbw', '%s is %s GB/s, at least %s (%s)' % (
            what, figure, threshold['value'], threshold['source']), figure, threshold['value'], threshold['source']))
    else:
        findings.append(_finding('error', CHECK + '.busbw', '%s is %s GB/s, below %s (%s): %s' % (
            what, figure, threshold['value'], threshold['source'], FIX_FABRIC_NET), figure, threshold['value'],
            threshold['source']))
    return findings
