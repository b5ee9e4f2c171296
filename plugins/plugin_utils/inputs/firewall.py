# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks of the firewall role (``input_problems('firewall')``).

Besides the firewall_* variables, the rules judge what the ruleset takes from the inventory: the
host's own workers_* and gateway_* values and the private addresses of the peers it opens ports
to (``hostvars``, ``groups``, ``host``), so that an unknown peer stops the run before anything
changes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.firewall_rules import (
    ALLOW_KEYS, PROTOS, address_problems, admits, allow_ports, gateway_ports, host_vars, is_comment, is_group_name,
    multinode_ports, node_value, parse_cidr, port_spec, ssh_connection, ssh_port, worker_port_count, worker_ports,
)
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import RuleSet, as_int, show, supported_system_rule

RULES = RuleSet('firewall')
supported_system_rule(RULES)


def _bad_cidrs(items):
    if not isinstance(items, (list, tuple)):
        return [items]
    return [item for item in items if parse_cidr(item) is None]


def _members(ctx, group):
    groups = ctx.get('groups') or {}
    return list(groups.get(group) or []) if isinstance(groups, Mapping) else []


def _node(ctx):
    return host_vars(ctx.get('hostvars') or {}, ctx.get('host'))


@RULES.rule('firewall-admin-cidrs-empty')
def _admin_empty(values, ctx):
    if not values.get('firewall_admin_cidrs'):
        return ('firewall_admin_cidrs is empty: set it to the ranges the controller and the administrators connect from'
                ' (as the hosts see them), such as ["192.0.2.0/24", "2001:db8:1::/48"]. The role never opens SSH to the'
                ' world by default.')
    return None


@RULES.rule('firewall-admin-cidrs-invalid')
def _admin_invalid(values, ctx):
    bad = _bad_cidrs(values.get('firewall_admin_cidrs') or [])
    if bad:
        return ('firewall_admin_cidrs must be a list of IPv4 or IPv6 networks such as "192.0.2.0/24" or "2001:db8::/32": %s.'
                % ', '.join(show(item) for item in bad))
    return None


@RULES.rule('firewall-ssh-port')
def _ssh_port(values, ctx):
    value = ssh_port(values, ctx.get('hostvars') or {}, ctx.get('host'))
    port = as_int(value)
    if port is None or not 1 <= port <= 65535:
        return ('firewall_ssh_port %s is not a port 1-65535 (the port sshd listens on, on the host; null: the port the'
                ' controller\'s session arrived on, else ansible_port, else 22).' % show(value))
    return None


# The controller's own session, as the host saw it: a ruleset that would not admit it is refused before it is
# written (confirm-or-revert stays the backstop for what this cannot see).
@RULES.rule('firewall-controller-locked-out')
def _controller(values, ctx):
    hostvars, host = ctx.get('hostvars') or {}, ctx.get('host')
    session = ssh_connection(hostvars, host)
    if session is None:
        return None
    client, arrived_on = session
    problems = []
    cidrs = values.get('firewall_admin_cidrs') or []
    if cidrs and not admits(cidrs, client):
        problems.append('The controller reaches %s from %s (SSH_CONNECTION, as the host sees it), which firewall_admin_cidrs'
                        ' %s does not include: the new ruleset would lock it out. Add that address or its network.'
                        % (host, client, show(cidrs)))
    port = as_int(ssh_port(values, hostvars, host))
    if port is not None and port != arrived_on:
        problems.append('The controller\'s SSH session to %s arrived on port %d, but firewall_ssh_port is %d: the new ruleset'
                        ' would lock it out. Leave firewall_ssh_port null (the session\'s port) or set it to %d.'
                        % (host, arrived_on, port, arrived_on))
    return problems


@RULES.rule('firewall-gateway-client-cidrs')
def _client_cidrs(values, ctx):
    cidrs = values['firewall_gateway_client_cidrs']
    if not cidrs:
        return ('gateway_client_cidrs (firewall_gateway_client_cidrs) is empty: no client could reach a gateway. Name the'
                ' clients\' networks, or leave it unset for anyone (["0.0.0.0/0", "::/0"]).')
    bad = _bad_cidrs(cidrs)
    if bad:
        return ('gateway_client_cidrs (firewall_gateway_client_cidrs) must be a list of IPv4 or IPv6 networks: %s.'
                % ', '.join(show(item) for item in bad))
    return None


@RULES.rule('firewall-group-names')
def _group_names(values, ctx):
    return ['%s %s is not a group name (letters, digits and underscores, not starting with a digit).' % (name, show(values[name]))
            for name in ('firewall_worker_group', 'firewall_gateway_group', 'firewall_monitoring_group', 'firewall_mirror_group')
            if not is_group_name(values[name])]


@RULES.rule('firewall-timeouts')
def _timeouts(values, ctx):
    confirm = as_int(values['firewall_confirm_timeout'])
    reconnect = as_int(values['firewall_reconnect_timeout'])
    if confirm is None or not 15 <= confirm <= 3600:
        return 'firewall_confirm_timeout %s must be whole seconds, 15-3600.' % show(values['firewall_confirm_timeout'])
    if reconnect is None or reconnect < 5 or reconnect + 10 > confirm:
        return ('firewall_reconnect_timeout %s must be whole seconds, at least 5 and at least 10 less than'
                ' firewall_confirm_timeout (%d), so that a good ruleset is confirmed before the revert fires.'
                % (show(values['firewall_reconnect_timeout']), confirm))
    return None


@RULES.rule('firewall-worker-ports')
def _worker_ports(values, ctx):
    explicit = values.get('firewall_worker_port_count')
    if explicit is not None:
        count = as_int(explicit)
        if count is None or not 1 <= count <= 1024:
            return 'firewall_worker_port_count %s must be null or a count 1-1024.' % show(explicit)
    if ctx.get('host') not in _members(ctx, values['firewall_worker_group']):
        return None
    node = _node(ctx)
    if worker_port_count(node, explicit) is None:
        return ('The worker count of %s cannot be derived: workers_mode %s (dp, tp, hybrid), workers_tp_size %s,'
                ' workers_gpus %s, rocm_expected_gpu_count %s; set firewall_worker_port_count for it.'
                % (ctx.get('host'), show(node_value(node, 'workers_mode')), show(node_value(node, 'workers_tp_size')),
                   show(node_value(node, 'workers_gpus')), show(node.get('rocm_expected_gpu_count'))))
    if worker_ports(node, explicit) is None:
        return ('workers_port_base %s of %s with %d worker port(s) is not within 1-65535.'
                % (show(node_value(node, 'workers_port_base')), ctx.get('host'), worker_port_count(node, explicit)))
    return None


@RULES.rule('firewall-multinode-ports')
def _multinode_ports(values, ctx):
    ports = values.get('firewall_multinode_ports')
    if port_spec(ports) is None:
        return ('firewall_multinode_ports %s must be a port or a range "low-high" within 1-65535 (the default'
                ' "32768-60999" is Linux\'s ephemeral range).' % show(ports))
    if ctx.get('host') not in _members(ctx, values['firewall_worker_group']):
        return None
    node = _node(ctx)
    group = node_value(node, 'workers_multinode_group')
    if group is not None and not is_group_name(group):
        return 'workers_multinode_group %s of %s is not a group name.' % (show(group), ctx.get('host'))
    if group is not None and multinode_ports(node, values) is None:
        names = (('workers_ray_port', 'workers_ray_worker_ports') if node_value(node, 'workers_multinode_backend') == 'ray'
                 else ('workers_multinode_master_port',))
        return ('%s of %s (%s) must be a port 1-65535%s.'
                % (' and '.join(names), ctx.get('host'), ', '.join(show(node_value(node, name)) for name in names),
                   ' and a range "low-high"' if len(names) > 1 else ''))
    return None


@RULES.rule('firewall-gateway-ports')
def _gateway_ports(values, ctx):
    if ctx.get('host') not in _members(ctx, values['firewall_gateway_group']):
        return None
    node = _node(ctx)
    if gateway_ports(node) is None:
        return ('The gateway ports of %s are not ports: gateway_listen_port %s (0-65535, 0 for no plain HTTP),'
                ' gateway_tls_port %s (1-65535).'
                % (ctx.get('host'), show(node_value(node, 'gateway_listen_port')), show(node_value(node, 'gateway_tls_port'))))
    return None


def _allow_entries(values):
    entries = values['firewall_allow']
    return list(enumerate(entries)) if isinstance(entries, (list, tuple)) else [(0, entries)]


@RULES.rule('firewall-allow-shape')
def _allow_shape(values, ctx):
    problems = []
    for index, entry in _allow_entries(values):
        if not isinstance(entry, Mapping):
            problems.append('firewall_allow[%d] %s must be a mapping of %s.' % (index, show(entry), ', '.join(ALLOW_KEYS)))
            continue
        unknown = sorted(set(entry) - set(ALLOW_KEYS))
        if unknown:
            problems.append('firewall_allow[%d] has unknown keys %s (known: %s).' % (index, ', '.join(unknown), ', '.join(ALLOW_KEYS)))
        if entry.get('proto', 'tcp') not in PROTOS:
            problems.append('firewall_allow[%d].proto %s must be tcp or udp.' % (index, show(entry.get('proto'))))
    return problems


@RULES.rule('firewall-allow-ports')
def _allow_ports(values, ctx):
    return ['firewall_allow[%d].ports %s must be ports 1-65535 or ranges "low-high", such as [29500, "30000-30100"].'
            % (index, show(entry.get('ports'))) for index, entry in _allow_entries(values)
            if isinstance(entry, Mapping) and allow_ports(entry) is None]


@RULES.rule('firewall-allow-sources')
def _allow_sources(values, ctx):
    problems = []
    for index, entry in _allow_entries(values):
        if not isinstance(entry, Mapping):
            continue
        groups, cidrs = entry.get('from_groups') or [], entry.get('from_cidrs') or []
        if not groups and not cidrs:
            problems.append('firewall_allow[%d] names no source: set from_groups (inventory groups) or from_cidrs (networks).'
                            % index)
            continue
        if not isinstance(groups, (list, tuple)) or any(not is_group_name(group) for group in groups):
            problems.append('firewall_allow[%d].from_groups %s must be a list of group names.' % (index, show(groups)))
        bad = _bad_cidrs(cidrs)
        if bad:
            problems.append('firewall_allow[%d].from_cidrs must be IPv4 or IPv6 networks: %s.'
                            % (index, ', '.join(show(item) for item in bad)))
    return problems


@RULES.rule('firewall-allow-comment')
def _allow_comment(values, ctx):
    return ['firewall_allow[%d].comment %s must be one line of at most 100 letters, digits, spaces and ._,:/()+=@-'
            ' (it is written into the ruleset).' % (index, show(entry.get('comment')))
            for index, entry in _allow_entries(values) if isinstance(entry, Mapping) and 'comment' in entry
            and not is_comment(entry.get('comment'))]


@RULES.rule('firewall-peer-addresses')
def _peers(values, ctx):
    entries = [entry for _index, entry in _allow_entries(values)]
    return address_problems(dict(values, firewall_allow=entries), ctx.get('hostvars') or {}, ctx.get('groups') or {}, ctx.get('host'))


def firewall_input_problems(values, platform, hostvars=None, groups=None, host=None):
    """The firewall role's variables and this host's peers -> a list of messages (empty when they are fine)."""
    return RULES.messages(values, {'platform': platform, 'hostvars': hostvars or {}, 'groups': groups or {}, 'host': host})
