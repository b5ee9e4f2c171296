# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The firewall of a node, derived from the inventory (``firewall_rules``).

Every host's rules follow from the groups: a GPU node opens its workers' API ports to the
gateways' private addresses (and itself), a gateway opens its listen ports to
``gateway_client_cidrs``, every host opens SSH to ``firewall_admin_cidrs``, and
``firewall_allow`` adds rules (for example a multi-node engine's ports to its own group).
Adding a gateway or a node to the inventory changes every host's rules on the next run.

The result is data for the template (``templates/etc/llmfleet/firewall.nft.j2``): rules of
``{family, saddr, proto, ports, comment}``, each value checked here, so that nothing a user
sets can add a statement, a line or a brace to the ruleset; an address that does not parse,
a port out of range or a comment with other characters raises instead of being written.
The role's input checks (``firewall_input_problems``) judge the same inputs with messages first.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import as_int, show
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.multinode import RAY_PEER_PORT_SPAN

# Ansible's group names (letters, digits, underscores; not starting with a digit).
GROUP_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*\Z')
# What a comment in the ruleset may hold: one line of plain characters, no quote, no ; { } # \.
COMMENT_RE = re.compile(r'^[A-Za-z0-9 ._,:/()+=@-]{1,100}\Z')
PORT_RANGE_RE = re.compile(r'^([0-9]{1,5})-([0-9]{1,5})\Z')
PROTOS = ('tcp', 'udp')
ALLOW_KEYS = ('ports', 'proto', 'from_groups', 'from_cidrs', 'comment')
# When neither workers_gpus nor rocm_expected_gpu_count says how many GPUs a node serves: the
# eight GPUs of an Instinct platform (MI300X, MI325X, MI355X OAM boards).
DEFAULT_GPU_COUNT = 8
# The firewall play runs before the workers role: its defaults are not loaded, the inventory's
# values are read with the workers and gateway roles' own defaults.
NODE_DEFAULTS = {'workers_port_base': 8000, 'workers_mode': 'dp', 'workers_tp_size': 1, 'workers_gpus': [],
                 'rocm_expected_gpu_count': None, 'gateway_listen_address': '', 'gateway_listen_port': 80,
                 'gateway_tls_port': 443, 'gateway_tls_certificate': '',
                 # The exporters role's ports (roles/exporters/defaults/main.yml), scraped by the monitoring hosts.
                 'exporters_node_exporter_port': 9100, 'exporters_amdgpu_exporter_port': 5000,
                 'exporters_amdgpu_exporter_enabled': True, 'exporters_nginx_exporter_port': 9113,
                 'exporters_gateway_log_port': 3903,
                 # One engine over a group's nodes (roles/workers/defaults/main.yml).
                 'workers_multinode_group': None, 'workers_multinode_master_port': 29501,
                 'workers_multinode_backend': 'mp', 'workers_ray_port': 6379, 'workers_ray_worker_ports': '10002-19999',
                 # The fleet's mirror (roles/mirror/defaults/main.yml).
                 'mirror_port': 8080, 'mirror_apt_cache': True, 'mirror_apt_cache_port': 3142}
# Where a multi-node engine's members connect besides the master port: torch's gloo pairs, vLLM's message queues and
# RCCL's bootstrap listen on ports the kernel picks, Linux's default net.ipv4.ip_local_port_range.
DEFAULT_MULTINODE_PORTS = '32768-60999'


def _int(value):
    """A non-negative int (as_int, without a sign), else None."""
    number = as_int(value)
    return number if number is not None and number >= 0 else None


def host_vars(hostvars, host):
    """The variables of ``host`` (a plain mapping; missing hosts give {})."""
    try:
        found = hostvars[host]
    except (KeyError, TypeError):
        return {}
    return found if isinstance(found, Mapping) else {}


def node_value(node_vars, name):
    """A workers_/gateway_ variable of the node, else that role's default."""
    value = node_vars.get(name)
    return NODE_DEFAULTS.get(name) if value is None else value


def parse_address(value):
    """An IPv4 or IPv6 address as text; None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        return None


def parse_cidr(value):
    """A network from "192.0.2.0/24", "2001:db8::/32" or an address; None when it is not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return ipaddress.ip_network(value, strict=False)
    except ValueError:
        return None


def address_of(hostvars, host):
    """(address, problem): the host's private address, or why it is unknown."""
    node_vars = host_vars(hostvars, host)
    explicit = node_vars.get('llmfleet_private_address')
    if explicit not in (None, ''):
        address = parse_address(explicit)
        if address is None:
            return None, ('llmfleet_private_address of %s is %s, not an IPv4 or IPv6 address.'
                          % (host, show(explicit)))
        return address, None
    facts = node_vars.get('ansible_facts') or {}
    default_ipv4 = facts.get('default_ipv4') if isinstance(facts, Mapping) else None
    fact = default_ipv4.get('address') if isinstance(default_ipv4, Mapping) else None
    if fact in (None, ''):
        return None, ('The private address of %s is unknown: it has no llmfleet_private_address and no'
                      ' ansible_facts.default_ipv4.address in this run (a --limit that leaves it out, or no network'
                      ' facts). Set llmfleet_private_address for %s, or run without --limit (or with a fact cache).'
                      % (host, host))
    address = parse_address(fact)
    if address is None:
        return None, 'ansible_facts.default_ipv4.address of %s is %s, not an address.' % (host, show(fact))
    return address, None


def ssh_connection(hostvars, host):
    """(client address, server port) of the controller's SSH session as the host saw it when its facts were gathered
    (ansible_facts.env.SSH_CONNECTION: "client port server port", after any NAT or port forward); None when unknown
    (a local connection, become that cleared the environment, no facts)."""
    facts = host_vars(hostvars, host).get('ansible_facts') or {}
    env = facts.get('env') if isinstance(facts, Mapping) else None
    text = env.get('SSH_CONNECTION') if isinstance(env, Mapping) else None
    fields = text.split(' ') if isinstance(text, str) else []
    if len(fields) != 4:
        return None
    client, port = parse_address(fields[0]), _int(fields[3])
    if client is None or port is None or not 1 <= port <= 65535:
        return None
    return client, port


def ssh_port(values, hostvars, host):
    """firewall_ssh_port when set; else the port the controller's SSH session arrived on; else ansible_port; else 22."""
    explicit = values.get('firewall_ssh_port')
    if explicit is not None:
        return explicit
    session = ssh_connection(hostvars, host)
    if session:
        return session[1]
    port = host_vars(hostvars, host).get('ansible_port')
    return 22 if port is None else port


def admits(cidrs, address):
    """Whether ``address`` is in one of ``cidrs`` (the invalid ones ignored)."""
    parsed = ipaddress.ip_address(address)
    return any(parsed in network for network in (parse_cidr(item) for item in cidrs or []) if network is not None
               and network.version == parsed.version)


def _members(groups, group):
    try:
        return list(groups.get(group) or [])
    except (AttributeError, TypeError):
        return []


def worker_port_count(node_vars, explicit=None):
    """How many consecutive API ports the node's workers take: firewall_worker_port_count when set,
    else one per worker as the workers role plans them (dp: one per GPU; tp: one; hybrid: one per
    group of workers_tp_size GPUs), the GPUs counted from workers_gpus, else rocm_expected_gpu_count,
    else eight. None when an input is not a count."""
    if explicit is not None:
        return _int(explicit)
    gpus = node_value(node_vars, 'workers_gpus')
    if gpus:
        if not isinstance(gpus, (list, tuple)):
            return None
        count = len(gpus)
    else:
        expected = node_vars.get('rocm_expected_gpu_count')
        count = DEFAULT_GPU_COUNT if expected in (None, '') else _int(expected)
    # A rank of a multi-node engine runs one worker over the node's GPUs, as in tp mode.
    mode = 'tp' if node_value(node_vars, 'workers_multinode_group') is not None else node_value(node_vars, 'workers_mode')
    tp_size = _int(node_value(node_vars, 'workers_tp_size'))
    if count is None or count < 1 or mode not in ('dp', 'tp', 'hybrid') or tp_size is None or tp_size < 1:
        return None
    if mode == 'tp':
        return 1
    if mode == 'hybrid':
        return max(1, -(-count // tp_size))
    return count


def worker_ports(node_vars, explicit=None):
    """(low, high) of the node's worker API ports; None when the inputs do not give valid ports."""
    base = _int(node_value(node_vars, 'workers_port_base'))
    count = worker_port_count(node_vars, explicit)
    if base is None or count is None or count < 1 or not 1 <= base <= 65535 or base + count - 1 > 65535:
        return None
    return base, base + count - 1


def mirror_ports(node_vars):
    """The mirror's ports (nginx, and apt-cacher-ng unless it is off); None when a port is invalid."""
    ports = [_int(node_value(node_vars, 'mirror_port'))]
    if node_value(node_vars, 'mirror_apt_cache'):
        ports.append(_int(node_value(node_vars, 'mirror_apt_cache_port')))
    if any(port is None or not 1 <= port <= 65535 for port in ports):
        return None
    return [(port, port) for port in sorted(set(ports))]


def gateway_ports(node_vars):
    """The gateway's listening ports as nginx opens them beyond loopback; None when a port is invalid."""
    listen_address = node_value(node_vars, 'gateway_listen_address')
    parsed = parse_address(listen_address) if listen_address else None
    if parsed is not None and ipaddress.ip_address(parsed).is_loopback:
        return []
    plain = _int(node_value(node_vars, 'gateway_listen_port'))
    tls = _int(node_value(node_vars, 'gateway_tls_port'))
    if plain is None or plain > 65535 or tls is None or not 1 <= tls <= 65535:
        return None
    ports = [plain] if plain else []
    if node_value(node_vars, 'gateway_tls_certificate'):
        ports.append(tls)
    return sorted(set(ports))


def metrics_ports(node_vars, is_worker_node, is_gateway, worker_range):
    """The ports the monitoring hosts scrape on a host, as (low, high); None when one is not a port.

    Every host: the node exporter. A GPU node: AMD's exporter (unless exporters_amdgpu_exporter_enabled is false) and
    the workers' API ports (their /metrics). A gateway: the nginx exporter and, unless 0, the gateway's log metrics."""
    names = ['exporters_node_exporter_port']
    if is_worker_node and node_value(node_vars, 'exporters_amdgpu_exporter_enabled') is not False:
        names.append('exporters_amdgpu_exporter_port')
    if is_gateway:
        names.append('exporters_nginx_exporter_port')
        if _int(node_value(node_vars, 'exporters_gateway_log_port')) != 0:
            names.append('exporters_gateway_log_port')
    ports = [_int(node_value(node_vars, name)) for name in names]
    if any(port is None or not 1 <= port <= 65535 for port in ports):
        return None
    specs = [(port, port) for port in ports]
    if is_worker_node:
        specs.append(worker_range)
    return sorted(set(specs))


def port_spec(value):
    """A port (8000) or range ("8000-8007") -> (low, high); None when not a valid port or range."""
    single = _int(value)
    if single is not None:
        return (single, single) if 1 <= single <= 65535 else None
    if isinstance(value, str):
        match = PORT_RANGE_RE.match(value.strip())
        if match:
            low, high = int(match.group(1)), int(match.group(2))
            if 1 <= low <= high <= 65535:
                return low, high
    return None


def allow_ports(entry):
    """The ports of a firewall_allow entry as a list of (low, high); None when any is invalid or none given."""
    ports = entry.get('ports')
    ports = ports if isinstance(ports, (list, tuple)) else [ports]
    specs = [port_spec(port) for port in ports]
    if not specs or any(spec is None for spec in specs):
        return None
    return specs


def is_group_name(value):
    return isinstance(value, str) and GROUP_RE.match(value) is not None


def is_comment(value):
    return isinstance(value, str) and COMMENT_RE.match(value) is not None


def member_addresses(hostvars, host):
    """Every IPv4 address of ``host`` but loopback (its gathered facts), else its private address: a member of a
    multi-node engine talks from its fabric interface, which need not be the one of its default route."""
    facts = host_vars(hostvars, host).get('ansible_facts') or {}
    found = facts.get('all_ipv4_addresses') if isinstance(facts, Mapping) else None
    addresses = [address for address in (parse_address(item) for item in found or [])
                 if address is not None and not ipaddress.ip_address(address).is_loopback]
    return addresses or [address_of(hostvars, host)[0]]


def multinode_group(node_vars, groups, host, strict=True):
    """The group whose engine ``host`` is a member of (workers_multinode_group), else None (also for a name that is
    not a group's, unless ``strict``: then that raises)."""
    group = node_value(node_vars, 'workers_multinode_group')
    if group is None:
        return None
    if not is_group_name(group):
        if not strict:
            return None
        raise AnsibleFilterError('workers_multinode_group %s of %s is not a group name' % (show(group), host))
    return group if host in _members(groups, group) else None


def multinode_ports(node_vars, values):
    """The ports a member of a multi-node engine opens to the other members, as (low, high); None when one is invalid.

    Always the ephemeral range (torch's gloo pairs, vLLM's message queues, RCCL's bootstrap); with vLLM's own launch the
    master port, with Ray (workers_multinode_backend: ray) the GCS port and the three after it (node manager, object
    manager, runtime-environment agent) and the Ray workers' range."""
    ephemeral = port_spec(values.get('firewall_multinode_ports') or DEFAULT_MULTINODE_PORTS)
    if node_value(node_vars, 'workers_multinode_backend') == 'ray':
        gcs = port_spec(node_value(node_vars, 'workers_ray_port'))
        workers = port_spec(node_value(node_vars, 'workers_ray_worker_ports'))
        if gcs is None or gcs[0] != gcs[1] or gcs[0] + RAY_PEER_PORT_SPAN > 65535 or workers is None:
            return None
        own = [(gcs[0], gcs[0] + RAY_PEER_PORT_SPAN), workers]
    else:
        master = port_spec(node_value(node_vars, 'workers_multinode_master_port'))
        if master is None or master[0] != master[1]:
            return None
        own = [master]
    return None if ephemeral is None else own + [ephemeral]


def needed_hosts(values, hostvars, groups, host):
    """The hosts whose private address this host's rules need: (host, why) pairs, in a stable order."""
    needed = []
    worker_group = values.get('firewall_worker_group')
    gateway_group = values.get('firewall_gateway_group')
    if host in _members(groups, worker_group):
        needed.append((host, 'it serves workers'))
        needed.extend((peer, 'a gateway of the workers') for peer in _members(groups, gateway_group))
    monitoring_group = values.get('firewall_monitoring_group')
    needed.extend((peer, 'a monitoring host') for peer in _members(groups, monitoring_group))
    if host in _members(groups, values.get('firewall_mirror_group')):
        needed.extend((peer, 'a host the mirror serves') for peer in _members(groups, 'all') if peer != host)
    group = multinode_group(host_vars(hostvars, host), groups, host, strict=False) if host in _members(groups, worker_group) else None
    needed.extend((peer, 'a member of its engine (workers_multinode_group %s)' % group)
                  for peer in _members(groups, group) if peer != host)
    for entry in values.get('firewall_allow') or []:
        from_groups = entry.get('from_groups') if isinstance(entry, Mapping) else None
        if isinstance(from_groups, (list, tuple)):
            for group in from_groups:
                needed.extend((peer, 'firewall_allow names its group %s' % group) for peer in _members(groups, group))
    seen = set()
    result = []
    for name, why in needed:
        if name not in seen:
            seen.add(name)
            result.append((name, why))
    return result


def address_problems(values, hostvars, groups, host):
    """Messages for each needed host whose private address is unknown or invalid."""
    problems = []
    for name, why in needed_hosts(values, hostvars, groups, host):
        _address, problem = address_of(hostvars, name)
        if problem:
            problems.append('%s (%s needs it: %s.)' % (problem, host, why))
    return problems


def _networks(items, what):
    networks = []
    for item in items:
        network = parse_cidr(item)
        if network is None:
            raise AnsibleFilterError('%s: %s is not an IPv4 or IPv6 network' % (what, show(item)))
        networks.append(network)
    return networks


def _by_family(networks):
    """{'ip': [...], 'ip6': [...]}: each family's networks collapsed (no overlap nft would refuse)."""
    result = {}
    for family, version in (('ip', 4), ('ip6', 6)):
        chosen = [network for network in networks if network.version == version]
        if chosen:
            collapsed = ipaddress.collapse_addresses(chosen)
            result[family] = [str(net.network_address) if net.prefixlen == net.max_prefixlen else str(net) for net in collapsed]
    return result


def _ports_text(specs):
    merged = []
    for low, high in sorted(set(specs)):
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return ['%d' % low if low == high else '%d-%d' % (low, high) for low, high in merged]


def _rules(networks, proto, specs, comment):
    """One rule per address family that has sources; one rule without source match when it is the whole world."""
    if not is_comment(comment):
        raise AnsibleFilterError('firewall comment %s is not one line of letters, digits and ._,:/()+=@- (at most 100)'
                                 % show(comment))
    if proto not in PROTOS:
        raise AnsibleFilterError('firewall proto %s is not tcp or udp' % show(proto))
    families = _by_family(networks)
    ports = _ports_text(specs)
    if families.get('ip') == ['0.0.0.0/0'] and families.get('ip6') == ['::/0']:
        return [{'family': '', 'saddr': [], 'proto': proto, 'ports': ports, 'comment': comment}]
    return [{'family': family, 'saddr': families[family], 'proto': proto, 'ports': ports, 'comment': comment}
            for family in ('ip', 'ip6') if family in families]


def firewall_rules(values, hostvars, groups, host):
    """Every firewall_* variable of ``host`` -> {'ssh': [rule], 'accept': [rule], 'summary': [str]}.

    ``ssh`` comes first in the input chain, ``accept`` after the essentials (established, loopback,
    ICMP); each rule is ``{family: ip|ip6|'', saddr: [address or network], proto: tcp|udp,
    ports: ['22', '8000-8007'], comment}``.
    """
    if not isinstance(values, Mapping):
        raise AnsibleFilterError('firewall_rules expects the firewall_* variables as a mapping')
    problems = address_problems(values, hostvars, groups, host)
    if problems:
        raise AnsibleFilterError(' '.join(problems))
    me = host_vars(hostvars, host)

    admin = _networks(values.get('firewall_admin_cidrs') or [], 'firewall_admin_cidrs')
    if not admin:
        raise AnsibleFilterError('firewall_admin_cidrs is empty: the ruleset would lock SSH out')
    port = port_spec(ssh_port(values, hostvars, host))
    if port is None or port[0] != port[1]:
        raise AnsibleFilterError('firewall_ssh_port %s is not a port' % show(ssh_port(values, hostvars, host)))
    ssh = _rules(admin, 'tcp', [port], 'SSH from firewall_admin_cidrs')

    accept = []
    worker_group = values.get('firewall_worker_group')
    gateway_group = values.get('firewall_gateway_group')
    for group in (worker_group, gateway_group):
        if not is_group_name(group):
            raise AnsibleFilterError('firewall group name %s is not a group name' % show(group))
    if host in _members(groups, worker_group):
        ports = worker_ports(me, values.get('firewall_worker_port_count'))
        if ports is None:
            raise AnsibleFilterError('the worker API ports of %s are not valid ports (workers_port_base, workers_gpus,'
                                     ' workers_mode, workers_tp_size, firewall_worker_port_count)' % host)
        sources = [address_of(hostvars, name)[0] for name in [host] + _members(groups, gateway_group)]
        accept.extend(_rules(_networks(sources, 'private address'), 'tcp', [ports],
                             'worker API from %s and the node itself' % gateway_group))
        group = multinode_group(me, groups, host)
        peers = [name for name in _members(groups, group) if name != host]
        if peers:
            specs = multinode_ports(me, values)
            if specs is None:
                raise AnsibleFilterError('the multi-node ports of %s are not valid ports (workers_multinode_master_port,'
                                         ' workers_ray_port, workers_ray_worker_ports, firewall_multinode_ports)' % host)
            sources = [address for name in peers for address in member_addresses(hostvars, name)]
            accept.extend(_rules(_networks(sources, 'member address'), 'tcp', specs,
                                 'multi-node engine from its other members'))
    if host in _members(groups, gateway_group):
        ports = gateway_ports(me)
        if ports is None:
            raise AnsibleFilterError('the gateway ports of %s are not valid ports (gateway_listen_port, gateway_tls_port)' % host)
        if ports:
            clients = _networks(values.get('firewall_gateway_client_cidrs') or [], 'gateway_client_cidrs')
            accept.extend(_rules(clients, 'tcp', [(port, port) for port in ports], 'gateway from gateway_client_cidrs'))
    if host in _members(groups, values.get('firewall_mirror_group')):
        specs = mirror_ports(me)
        if specs is None:
            raise AnsibleFilterError('the mirror ports of %s are not valid ports (mirror_port, mirror_apt_cache_port)' % host)
        sources = [address_of(hostvars, name)[0] for name in _members(groups, 'all') if name != host]
        if sources:
            accept.extend(_rules(_networks(sources, 'private address'), 'tcp', specs, 'mirror from the hosts it serves'))
    monitoring_group = values.get('firewall_monitoring_group')
    if monitoring_group is not None and not is_group_name(monitoring_group):
        raise AnsibleFilterError('firewall group name %s is not a group name' % show(monitoring_group))
    monitors = _members(groups, monitoring_group)
    if monitors:
        is_worker_node = host in _members(groups, worker_group)
        worker_range = worker_ports(me, values.get('firewall_worker_port_count')) if is_worker_node else None
        specs = metrics_ports(me, is_worker_node, host in _members(groups, gateway_group), worker_range)
        if specs is None:
            raise AnsibleFilterError('the exporter ports of %s are not valid ports (exporters_*_port)' % host)
        sources = [address_of(hostvars, name)[0] for name in monitors]
        accept.extend(_rules(_networks(sources, 'private address'), 'tcp', specs, 'metrics from %s' % monitoring_group))
    for index, entry in enumerate(values.get('firewall_allow') or []):
        what = 'firewall_allow[%d]' % index
        if not isinstance(entry, Mapping) or sorted(set(entry) - set(ALLOW_KEYS)):
            raise AnsibleFilterError('%s is not a mapping of %s' % (what, ', '.join(ALLOW_KEYS)))
        specs = allow_ports(entry)
        if specs is None:
            raise AnsibleFilterError('%s: ports %s are not ports 1-65535 or ranges "low-high"' % (what, show(entry.get('ports'))))
        from_groups, from_cidrs = entry.get('from_groups') or [], entry.get('from_cidrs') or []
        if not isinstance(from_groups, (list, tuple)) or not isinstance(from_cidrs, (list, tuple)):
            raise AnsibleFilterError('%s: from_groups and from_cidrs must be lists' % what)
        sources = list(from_cidrs)
        for group in from_groups:
            if not is_group_name(group):
                raise AnsibleFilterError('%s: from_groups %s is not a group name' % (what, show(group)))
            sources.extend(address_of(hostvars, name)[0] for name in _members(groups, group))
        accept.extend(_rules(_networks(sources, what), entry.get('proto', 'tcp'), specs, entry.get('comment', 'firewall_allow item %d' % index)))
    return {'ssh': ssh, 'accept': accept}
