# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus's scrape targets of the fleet, derived from the inventory (``monitoring_scrape_targets``).

Every host of ``monitoring_node_groups`` is a node exporter target; every host of ``monitoring_gpu_group``
an AMD Device Metrics Exporter target and, through its ``llmfleet_worker_endpoints`` fact (set by the
workers role), one target per worker; every host of ``monitoring_gateway_group`` an nginx exporter target
and a gateway log target, at the ports the exporters role gives them there (``exporters_*_port``).
Each target is labelled ``node`` (the inventory host); a worker's also ``worker``, ``gpu`` (its GPU
indexes, comma-separated), ``model``, ``engine`` and ``engine_version``.

The result is data for Prometheus's file-based discovery (one JSON file per job, written with
``to_nice_json``): an address that does not parse, a port out of range or a label value that is not a
string of one line raises instead of being written.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.firewall_rules import address_of, host_vars, parse_address
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import as_int, show

# The jobs, in the order Prometheus's configuration lists them; the alert rules name them.
JOBS = ('node', 'amd_gpu', 'nginx', 'gateway_log', 'workers')
# A label value we write: one line of printable characters.
_LABEL_RE = re.compile(r'^[^\x00-\x1f\x7f]{0,200}\Z')
# The exporters role's ports, read from each host's variables (that role's defaults when unset).
EXPORTER_PORTS = {'node': ('exporters_node_exporter_port', 9100), 'amd_gpu': ('exporters_amdgpu_exporter_port', 5000),
                  'nginx': ('exporters_nginx_exporter_port', 9113), 'gateway_log': ('exporters_gateway_log_port', 3903)}
_HOSTNAME_RE = re.compile(r'^[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*\Z')


def _members(groups, group):
    try:
        return list(groups.get(group) or [])
    except (AttributeError, TypeError):
        return []


def exporter_port(hostvars, host, job):
    """The port of a job's exporter on a host (its exporters_*_port, else that role's default); 0: none."""
    name, default = EXPORTER_PORTS[job]
    value = host_vars(hostvars, host).get(name)
    value = default if value is None else value
    port = as_int(value)
    if port is None or port > 65535 or port < 0 or (port == 0 and job != 'gateway_log'):
        raise AnsibleFilterError('%s of %s is %s, not a port 1-65535%s'
                                 % (name, host, show(value), ' (or 0: none)' if job == 'gateway_log' else ''))
    return port


def target_address(address, port):
    """"10.0.0.11:9100", "[fd00::1]:9100" or "node-1.example:9100"; raises on anything else."""
    parsed = parse_address(address)
    if parsed is not None:
        return ('[%s]:%d' if ':' in parsed else '%s:%d') % (parsed, port)
    if isinstance(address, str) and _HOSTNAME_RE.match(address):
        return '%s:%d' % (address, port)
    raise AnsibleFilterError('%s is not an address or a host name' % show(address))


def _label(value, what):
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise AnsibleFilterError('%s is %s, not a string' % (what, show(value)))
    text = str(value)
    if not _LABEL_RE.match(text):
        raise AnsibleFilterError('%s is %s: a label value is one line of at most 200 characters' % (what, show(value)))
    return text


def _host_address(hostvars, host):
    address, problem = address_of(hostvars, host)
    if problem:
        raise AnsibleFilterError(problem)
    return address


def _unique_hosts(groups, names):
    seen, hosts = set(), []
    for group in names:
        for host in _members(groups, group):
            if host not in seen:
                seen.add(host)
                hosts.append(host)
    return hosts


def worker_targets(hostvars, host):
    """The target groups of one GPU node's workers (none when it has no llmfleet_worker_endpoints yet)."""
    endpoints = host_vars(hostvars, host).get('llmfleet_worker_endpoints') or []
    if not isinstance(endpoints, (list, tuple)):
        raise AnsibleFilterError('llmfleet_worker_endpoints of %s is not a list' % host)
    result = []
    for index, endpoint in enumerate(endpoints):
        what = 'llmfleet_worker_endpoints[%d] of %s' % (index, host)
        if not isinstance(endpoint, Mapping):
            raise AnsibleFilterError('%s is not a mapping' % what)
        port = as_int(endpoint.get('port'))
        if port is None or not 1 <= port <= 65535:
            raise AnsibleFilterError('%s: port %s is not a port' % (what, show(endpoint.get('port'))))
        gpus = endpoint.get('gpus') or []
        if not isinstance(gpus, (list, tuple)) or any(as_int(gpu) is None for gpu in gpus):
            raise AnsibleFilterError('%s: gpus %s is not a list of GPU indexes' % (what, show(gpus)))
        labels = {'node': _label(host, 'the host name %s' % host),
                  'worker': _label(endpoint.get('name'), what + ': name'),
                  'gpu': ','.join(str(as_int(gpu)) for gpu in gpus),
                  'model': _label(endpoint.get('model', ''), what + ': model'),
                  'engine': _label(endpoint.get('engine', 'vllm'), what + ': engine'),
                  'engine_version': _label(endpoint.get('engine_version', ''), what + ': engine_version')}
        result.append({'targets': [target_address(endpoint.get('address'), port)], 'labels': labels})
    return result


def monitoring_scrape_targets(values, hostvars, groups):
    """job -> list of {targets: [address:port], labels: {...}}, for every job of JOBS (an empty list when it has none)."""
    if not isinstance(values, Mapping):
        raise AnsibleFilterError('monitoring_scrape_targets expects the monitoring_* variables as a mapping')
    node_groups = values.get('monitoring_node_groups') or []
    if not isinstance(node_groups, (list, tuple)):
        raise AnsibleFilterError('monitoring_node_groups is %s, not a list of group names' % show(node_groups))
    gpu_hosts = _members(groups, values.get('monitoring_gpu_group'))
    gateway_hosts = _members(groups, values.get('monitoring_gateway_group'))

    def exporter(hosts, job):
        result = []
        for host in hosts:
            port = exporter_port(hostvars, host, job)
            if port:
                result.append({'targets': [target_address(_host_address(hostvars, host), port)],
                               'labels': {'node': _label(host, 'the host name %s' % host)}})
        return result

    jobs = {'node': exporter(_unique_hosts(groups, node_groups), 'node'),
            'amd_gpu': exporter(gpu_hosts, 'amd_gpu'),
            'nginx': exporter(gateway_hosts, 'nginx'),
            'gateway_log': exporter(gateway_hosts, 'gateway_log'),
            'workers': [group for host in gpu_hosts for group in worker_targets(hostvars, host)]}
    return jobs


def monitoring_target_files(targets, directory):
    """The file-based discovery files of ``targets`` (job -> target groups) under ``directory``: for each job, in job
    order, its name (``targets-<job>``), path and content (JSON with sorted keys and a final newline)."""
    if not isinstance(targets, Mapping):
        raise AnsibleFilterError('monitoring_target_files expects the targets as a mapping of job to target groups')
    files = []
    for job in sorted(targets):
        if not re.match(r'^[a-z][a-z0-9_]*$', str(job)):
            raise AnsibleFilterError('monitoring_target_files: the job %s is no file name' % show(job))
        content = json.dumps(targets[job], indent=4, sort_keys=True, separators=(',', ': ')) + '\n'
        files.append({'name': 'targets-%s' % job, 'path': '%s/%s.json' % (str(directory).rstrip('/'), job), 'content': content})
    return files
