# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The firewall's rules from the inventory (firewall_rules), and the ruleset the role's template
renders from them: the sandbox's shape rule by rule, hostile values refused or inert, and the
rendered files checked by ``nft -c -f`` where nft is installed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import re
import shutil
import subprocess

import pytest
from ansible.errors import AnsibleFilterError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.firewall_rules import firewall_rules, worker_port_count
from input_rules import ROOT
from test_firewall_inputs import GROUPS, HOSTVARS, VALUES, hostvars_with, without_facts

TEMPLATE = os.path.join(ROOT, 'roles', 'firewall', 'templates', 'etc', 'llmfleet', 'firewall.nft.j2')
NFT = shutil.which('nft')


def _nft_can_check():
    """nft -c talks to the kernel (netlink, CAP_NET_ADMIN): without them it cannot check anything."""
    if NFT is None:
        return False
    proc = subprocess.run([NFT, '-c', '-f', '-'], input='table inet llmfleet_probe\n', stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    return proc.returncode == 0


NFT_CAN_CHECK = _nft_can_check()
NFT_MISSING = ('nft cannot check rulesets on this controller (not installed: apt-get install nftables; or no CAP_NET_ADMIN):'
               ' the rendered files are still checked line by line by the other tests')
ANY = {'family': '', 'saddr': []}


def rule(family, saddr, ports, comment, proto='tcp'):
    return {'family': family, 'saddr': saddr, 'proto': proto, 'ports': ports, 'comment': comment}


SSH = [rule('ip', ['10.89.77.1'], ['22'], 'SSH from firewall_admin_cidrs'),
       rule('ip6', ['2001:db8:1::/48'], ['22'], 'SSH from firewall_admin_cidrs')]

# The sandbox: gpu-node-1 and gpu-node-2 serve one worker each (workers_gpus: [0]), gateway-1 has TLS on.
EXPECTED = {
    'gpu-node-1': {'ssh': SSH, 'accept': [rule('ip', ['10.89.77.201', '10.89.77.211'], ['8000'],
                                               'worker API from gateways and the node itself')]},
    'gpu-node-2': {'ssh': SSH, 'accept': [rule('ip', ['10.89.77.202', '10.89.77.211'], ['8000'],
                                               'worker API from gateways and the node itself')]},
    'gateway-1': {'ssh': SSH, 'accept': [dict(rule('', [], ['80', '443'], 'gateway from gateway_client_cidrs'))]},
}


def render(rules, host='gpu-node-1'):
    with open(TEMPLATE) as handle:
        source = handle.read()
    templar = Templar(loader=DataLoader(), variables={'_firewall_rules': rules, 'inventory_hostname': host,
                                                      'ansible_managed': 'Ansible managed'})
    return templar.template(trust_as_template(source))


def nft_check(tmp_path, text):
    """``nft -c -f`` of the rendered file: (rc, output). Check mode changes nothing in the kernel."""
    path = tmp_path / 'firewall.nft'
    path.write_text(text)
    proc = subprocess.run([NFT, '-c', '-f', str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    return proc.returncode, proc.stdout


def input_chain(text):
    """The rule lines of the input chain, without comments and blank lines."""
    body = text.split('chain input {', 1)[1].split('\n\t}', 1)[0]
    return [line.strip() for line in body.splitlines() if line.strip() and not line.strip().startswith('#')]


@pytest.mark.parametrize('host', sorted(EXPECTED))
def test_sandbox_rules(host):
    assert firewall_rules(VALUES, HOSTVARS, GROUPS, host) == EXPECTED[host]


def test_a_new_gateway_opens_every_node_to_it():
    hostvars = dict(HOSTVARS, **{'gateway-2': {'llmfleet_private_address': 'fd00:77::212'}})
    groups = dict(GROUPS, gateways=['gateway-1', 'gateway-2'])
    accept = firewall_rules(VALUES, hostvars, groups, 'gpu-node-2')['accept']
    assert [(item['family'], item['saddr']) for item in accept] == [('ip', ['10.89.77.202', '10.89.77.211']),
                                                                    ('ip6', ['fd00:77::212'])]


def test_private_address_wins_over_facts():
    hostvars = hostvars_with('gateway-1', llmfleet_private_address='192.168.7.11')
    assert firewall_rules(VALUES, hostvars, GROUPS, 'gpu-node-1')['accept'][0]['saddr'] == ['10.89.77.201', '192.168.7.11']


def test_networks_collapse_and_any_drops_the_source_match():
    values = dict(VALUES, firewall_admin_cidrs=['10.0.0.0/8', '10.1.0.0/16', '10.0.0.5', '0.0.0.0/0', '::/0'])
    assert firewall_rules(values, HOSTVARS, GROUPS, 'gateway-1')['ssh'] == [dict(SSH[0], **ANY)]
    values = dict(VALUES, firewall_admin_cidrs=['10.0.0.0/8', '10.1.0.0/16', '10.0.0.5'])
    assert firewall_rules(values, HOSTVARS, GROUPS, 'gateway-1')['ssh'] == [dict(SSH[0], saddr=['10.0.0.0/8'])]


@pytest.mark.parametrize('node_vars, explicit, count', [
    ({}, None, 8),
    ({'rocm_expected_gpu_count': 2}, None, 2),
    ({'workers_gpus': [0, 1, 2], 'rocm_expected_gpu_count': 8}, None, 3),
    ({'workers_mode': 'tp'}, None, 1),
    ({'workers_mode': 'hybrid', 'workers_tp_size': 2}, None, 4),
    ({'workers_mode': 'hybrid', 'workers_tp_size': 4, 'rocm_expected_gpu_count': 2}, None, 1),
    ({}, 16, 16),
], ids=['default-eight', 'expected-count', 'gpus-listed', 'tp-one', 'hybrid-pairs', 'hybrid-larger-than-node', 'explicit'])
def test_worker_port_count(node_vars, explicit, count):
    assert worker_port_count(node_vars, explicit) == count


@pytest.mark.parametrize('explicit, node_vars, port', [
    (None, {'ansible_facts': {'env': {'SSH_CONNECTION': '10.89.77.1 51000 10.89.77.201 2222'}}, 'ansible_port': 2201}, '2222'),
    (None, {'ansible_facts': {'env': {}}, 'ansible_port': 2201}, '2201'),
    (None, {}, '22'),
    (2022, {'ansible_facts': {'env': {'SSH_CONNECTION': '10.89.77.1 51000 10.89.77.201 2222'}}}, '2022'),
], ids=['session', 'ansible-port', 'default', 'explicit'])
def test_ssh_port(explicit, node_vars, port):
    hostvars = dict(HOSTVARS, **{'gateway-1': dict(node_vars, llmfleet_private_address='10.89.77.211')})
    rules = firewall_rules(dict(VALUES, firewall_ssh_port=explicit), hostvars, GROUPS, 'gateway-1')
    assert [item['ports'] for item in rules['ssh']] == [[port], [port]]


def test_worker_range_and_gateway_without_tls():
    hostvars = hostvars_with('gpu-node-1', workers_gpus=[], rocm_expected_gpu_count=8, workers_port_base=9000)
    hostvars['gateway-1'].pop('gateway_tls_certificate')
    assert firewall_rules(VALUES, hostvars, GROUPS, 'gpu-node-1')['accept'][0]['ports'] == ['9000-9007']
    assert firewall_rules(VALUES, hostvars, GROUPS, 'gateway-1')['accept'][0]['ports'] == ['80']


def test_gateway_on_loopback_opens_nothing():
    hostvars = hostvars_with('gateway-1', gateway_listen_address='127.0.0.1')
    assert firewall_rules(VALUES, hostvars, GROUPS, 'gateway-1')['accept'] == []


def test_allow_from_group_and_cidrs():
    values = dict(VALUES, firewall_allow=[{'ports': [29500, '30000-30100', 30050], 'from_groups': ['gpu_nodes'],
                                           'from_cidrs': ['10.89.77.0/28'], 'comment': 'engine ranks'},
                                          {'ports': 9100, 'proto': 'udp', 'from_cidrs': ['192.0.2.10']}])
    accept = firewall_rules(values, HOSTVARS, GROUPS, 'gateway-1')['accept']
    assert accept[1:] == [rule('ip', ['10.89.77.0/28', '10.89.77.201', '10.89.77.202'], ['29500', '30000-30100'], 'engine ranks'),
                          rule('ip', ['192.0.2.10'], ['9100'], 'firewall_allow item 1', proto='udp')]


def _multinode(**changes):
    hostvars = hostvars_with('gpu-node-1', workers_multinode_group='gpu_nodes', **changes)
    hostvars['gpu-node-2'] = dict(hostvars['gpu-node-2'], workers_multinode_group='gpu_nodes',
                                  ansible_facts=dict(hostvars['gpu-node-2']['ansible_facts'],
                                                     all_ipv4_addresses=['10.89.77.202', '10.1.0.12', '127.0.0.1']))
    return hostvars


def test_a_multinode_engine_opens_its_ports_to_the_other_members_only():
    accept = firewall_rules(VALUES, _multinode(), GROUPS, 'gpu-node-1')['accept']
    # Every address of the other member (its fabric one too), not loopback, not the gateway, not the node itself.
    assert accept[1:] == [rule('ip', ['10.1.0.12', '10.89.77.202'], ['29501', '32768-60999'],
                               'multi-node engine from its other members')]
    # gpu-node-2 has no facts with every address here: its private address stands for it.
    accept = firewall_rules(dict(VALUES, firewall_multinode_ports='40000-40100'), _multinode(), GROUPS, 'gpu-node-2')['accept']
    assert accept[1:] == [rule('ip', ['10.89.77.201'], ['29501', '40000-40100'], 'multi-node engine from its other members')]


def test_a_ray_cluster_opens_its_ports_and_the_workers_range_to_the_other_members_only():
    accept = firewall_rules(VALUES, _multinode(workers_multinode_backend='ray'), GROUPS, 'gpu-node-1')['accept']
    # The GCS, node manager, object manager and runtime-environment agent ports, Ray's workers, the ephemeral range.
    assert accept[1:] == [rule('ip', ['10.1.0.12', '10.89.77.202'], ['6379-6382', '10002-19999', '32768-60999'],
                               'multi-node engine from its other members')]
    hostvars = _multinode(workers_multinode_backend='ray', workers_ray_port=7000, workers_ray_worker_ports='20000-20100')
    ports = firewall_rules(VALUES, hostvars, GROUPS, 'gpu-node-1')['accept'][1]['ports']
    assert ports == ['7000-7003', '20000-20100', '32768-60999']


def test_a_multinode_rank_opens_one_api_port():
    hostvars = hostvars_with('gpu-node-1', workers_gpus=[], workers_multinode_group='gpu_nodes')
    assert firewall_rules(VALUES, hostvars, GROUPS, 'gpu-node-1')['accept'][0]['ports'] == ['8000']
    assert firewall_rules(VALUES, hostvars_with('gpu-node-1', workers_gpus=[]), GROUPS, 'gpu-node-1')['accept'][0]['ports'] == ['8000-8007']


def test_no_multinode_group_no_rule():
    assert firewall_rules(VALUES, HOSTVARS, GROUPS, 'gpu-node-1') == EXPECTED['gpu-node-1']


def test_multinode_values_that_are_not_ports_raise():
    with pytest.raises(AnsibleFilterError, match='multi-node ports of gpu-node-1'):
        firewall_rules(VALUES, _multinode(workers_multinode_master_port='29501; accept'), GROUPS, 'gpu-node-1')
    with pytest.raises(AnsibleFilterError, match='not a group name'):
        firewall_rules(VALUES, hostvars_with('gpu-node-1', workers_multinode_group='a b'), GROUPS, 'gpu-node-1')


def test_unknown_peer_raises_naming_host_and_variable():
    with pytest.raises(AnsibleFilterError, match='gateway-1.*llmfleet_private_address'):
        firewall_rules(VALUES, without_facts('gateway-1'), GROUPS, 'gpu-node-1')


# Hostile values: each is refused by the filter itself, even when the role's preflight was skipped (tags).
HOSTILE = [
    ('comment-newline', {'firewall_allow': [{'ports': [1], 'from_cidrs': ['10.0.0.0/8'], 'comment': 'x\ntcp dport 1-65535 accept'}]}),
    ('comment-quote', {'firewall_allow': [{'ports': [1], 'from_cidrs': ['10.0.0.0/8'], 'comment': 'x" accept comment "y'}]}),
    ('comment-semicolon', {'firewall_allow': [{'ports': [1], 'from_cidrs': ['10.0.0.0/8'], 'comment': 'x; flush ruleset'}]}),
    ('comment-brace', {'firewall_allow': [{'ports': [1], 'from_cidrs': ['10.0.0.0/8'], 'comment': 'x } table ip t {'}]}),
    ('cidr-brace', {'firewall_admin_cidrs': ['10.0.0.0/8 } tcp dport 1-65535 accept']}),
    ('cidr-newline', {'firewall_admin_cidrs': ['10.0.0.0/8\naccept']}),
    ('port-statement', {'firewall_ssh_port': '22 accept'}),
    ('allow-port-brace', {'firewall_allow': [{'ports': ['1 } accept'], 'from_cidrs': ['10.0.0.0/8']}]}),
    ('allow-proto', {'firewall_allow': [{'ports': [1], 'proto': 'tcp dport 1-65535 accept;', 'from_cidrs': ['10.0.0.0/8']}]}),
    ('allow-unknown-key', {'firewall_allow': [{'ports': [1], 'from_cidrs': ['10.0.0.0/8'], 'verdict': 'accept'}]}),
    ('group-string', {'firewall_allow': [{'ports': [1], 'from_groups': 'gpu_nodes'}]}),
    ('group-name', {'firewall_gateway_group': 'gateways }'}),
    ('group-mapping', {'firewall_allow': [{'ports': [1], 'from_groups': [{'gpu_nodes': 1}]}]}),
]


@pytest.mark.parametrize('changes', [changes for _id, changes in HOSTILE], ids=[case_id for case_id, _changes in HOSTILE])
def test_hostile_values_are_refused(changes):
    values = copy.deepcopy(VALUES)
    values.update(changes)
    with pytest.raises(AnsibleFilterError):
        firewall_rules(values, HOSTVARS, GROUPS, 'gpu-node-1')


@pytest.mark.parametrize('field, value', [
    ('llmfleet_private_address', '10.89.77.211 } tcp dport 1-65535 accept'),
    ('llmfleet_private_address', '10.89.77.211\n'),
    ('workers_port_base', '8000 } accept'),
])
def test_hostile_host_values_are_refused(field, value):
    host = 'gateway-1' if field == 'llmfleet_private_address' else 'gpu-node-1'
    with pytest.raises(AnsibleFilterError):
        firewall_rules(VALUES, hostvars_with(host, **{field: value}), GROUPS, 'gpu-node-1')


def test_hostile_host_name_is_inert():
    """Host names never reach the ruleset: only addresses parsed by ipaddress, and the group's name."""
    hostvars = dict(HOSTVARS, **{'gw"; flush ruleset': {'llmfleet_private_address': '10.89.77.99'}})
    groups = dict(GROUPS, gateways=['gateway-1', 'gw"; flush ruleset'])
    text = render(firewall_rules(VALUES, hostvars, groups, 'gpu-node-1'))
    assert 'flush ruleset' not in text and 'gw' not in text
    assert 'ip saddr { 10.89.77.99, 10.89.77.201, 10.89.77.211 } tcp dport { 8000 } counter accept' in text


@pytest.mark.parametrize('host', sorted(EXPECTED))
def test_rendered_chain_order(host):
    lines = input_chain(render(EXPECTED[host], host))
    assert lines[0] == 'type filter hook input priority filter; policy drop;'
    # SSH from the admin ranges before any state, then loopback, replies, the invalid drop.
    assert [line.split(' counter')[0] for line in lines[1:3]] == [
        'ip saddr { 10.89.77.1 } tcp dport { 22 }', 'ip6 saddr { 2001:db8:1::/48 } tcp dport { 22 }']
    assert lines[3].startswith('iif "lo" accept')
    assert lines[4].startswith('ct state established,related accept')
    assert lines[-2].startswith('limit rate 5/minute burst 5 packets log prefix "llmfleet-firewall drop: "')
    assert lines[-1].startswith('counter drop')
    text = render(EXPECTED[host], host)
    assert re.search(r'^table inet llmfleet\ndelete table inet llmfleet\n\ntable inet llmfleet \{$', text, re.M)
    assert 'flush ruleset' not in text and 'chain forward' not in text


@pytest.mark.skipif(not NFT_CAN_CHECK, reason=NFT_MISSING)
@pytest.mark.parametrize('host', sorted(EXPECTED))
def test_nft_accepts_the_rendered_ruleset(tmp_path, host):
    values = dict(VALUES, firewall_allow=[{'ports': [29500, '30000-30100'], 'proto': 'udp', 'from_groups': ['gpu_nodes'],
                                           'from_cidrs': ['fd00::/8'], 'comment': 'engine ranks (v4+v6), 10.0.0.0/8'}])
    rc, output = nft_check(tmp_path, render(firewall_rules(values, HOSTVARS, GROUPS, host), host))
    assert rc == 0, output


@pytest.mark.skipif(not NFT_CAN_CHECK, reason=NFT_MISSING)
def test_nft_refuses_what_the_filter_refuses(tmp_path):
    """Proof that the refusals matter: a quote and braces pushed past the filter change the file's structure."""
    rules = copy.deepcopy(EXPECTED['gpu-node-1'])
    rules['accept'][0]['comment'] = 'x"; } } table ip evil { chain c { type filter hook input priority 0; policy accept; } } #'
    rc, output = nft_check(tmp_path, render(rules))
    assert rc != 0 or 'evil' in output, output
    rules['accept'][0]['comment'] = 'plain'
    assert nft_check(tmp_path, render(rules))[0] == 0


def test_readme_worked_example_is_what_the_filter_makes():
    """The role README's example (gpu-node-2 without workers_gpus, two GPUs expected) matches the filter's rules."""
    with open(os.path.join(ROOT, 'roles', 'firewall', 'README.md')) as handle:
        readme = handle.read()
    example = readme.split('## A worked example', 1)[1].split('```', 2)[1]
    hostvars = hostvars_with('gpu-node-2', workers_gpus=[], rocm_expected_gpu_count=2)
    current = None
    checked = 0
    for line in example.splitlines():
        if line.startswith('# '):
            current = line[2:].strip()
            lines = input_chain(render(firewall_rules(VALUES, hostvars, GROUPS, current), current))
        elif line.strip() and '...' not in line:
            assert line.strip() in lines, '%s: %s' % (current, line)
            checked += 1
    assert checked >= 5


def _netns_works():
    if NFT is None or shutil.which('unshare') is None:
        return False
    proc = subprocess.run(['unshare', '-n', NFT, 'list', 'tables'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    return proc.returncode == 0


@pytest.mark.skipif(not _netns_works(), reason='no throwaway network namespace here (unshare -n needs CAP_SYS_ADMIN) or no nft:'
                                               ' the real load is proven in the lab')
def test_load_save_restore_in_a_throwaway_network_namespace(tmp_path):
    """What load.yml does, for real, in a network namespace that lives as long as this one shell: load the rendered
    file twice (it replaces our table), save the table under the revert's head and load that back, then the marker of
    "no table" removes it; a table of someone else's stays throughout."""
    new = tmp_path / 'firewall.nft'
    new.write_text(render(EXPECTED['gpu-node-1']))
    script = '''set -e
nft add table ip theirs
nft -f {new}
nft -f {new}
nft list table inet llmfleet > {tmp}/listed
(printf 'table inet llmfleet\\ndelete table inet llmfleet\\n'; cat {tmp}/listed) > {tmp}/previous
nft -f {tmp}/previous
nft list table inet llmfleet > {tmp}/listed-again
printf 'table inet llmfleet\\ndelete table inet llmfleet\\n' | nft -f -
nft list tables
'''.format(new=new, tmp=tmp_path)
    proc = subprocess.run(['unshare', '-n', 'sh', '-c', script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.strip() == 'table ip theirs'
    listed = (tmp_path / 'listed').read_text()
    assert listed == (tmp_path / 'listed-again').read_text()
    assert listed.count('accept comment "SSH from firewall_admin_cidrs"') == 2
    assert 'ip saddr { 10.89.77.201, 10.89.77.211 } tcp dport 8000 counter packets 0 bytes 0 accept' in listed


# The monitoring hosts scrape every host's exporters and the workers' /metrics; with none, no rule.
MONITOR = {'ansible_facts': {'default_ipv4': {'address': '10.89.77.221'}}}


@pytest.mark.parametrize('host, changes, ports', [
    ('gpu-node-1', {}, ['5000', '8000', '9100']),
    ('gateway-1', {}, ['3903', '9100', '9113']),
    ('monitor-1', {}, ['9100']),
    ('gateway-1', {'exporters_gateway_log_port': 0}, ['9100', '9113']),
    ('gpu-node-1', {'exporters_amdgpu_exporter_enabled': False, 'exporters_node_exporter_port': 8001}, ['8000-8001']),
    ('gpu-node-2', {'workers_gpus': [0, 1, 2, 3]}, ['5000', '8000-8003', '9100']),
], ids=['gpu-node', 'gateway', 'monitoring-host', 'gateway-without-log', 'adjacent-ports-merge', 'four-workers'])
def test_monitoring_hosts_reach_the_metrics(host, changes, ports):
    hostvars = copy.deepcopy(HOSTVARS)
    hostvars['monitor-1'] = copy.deepcopy(MONITOR)
    hostvars[host] = dict(hostvars.get(host) or {}, **changes)
    groups = dict(GROUPS, monitoring=['monitor-1'], all=list(GROUPS.get('all', [])) + ['monitor-1'])
    values = dict(VALUES, firewall_monitoring_group='monitoring')
    metrics = [item for item in firewall_rules(values, hostvars, groups, host)['accept'] if item['comment'] == 'metrics from monitoring']
    assert metrics == [rule('ip', ['10.89.77.221'], ports, 'metrics from monitoring')]


def test_no_monitoring_host_no_metrics_rule():
    values = dict(VALUES, firewall_monitoring_group='monitoring')
    for host in EXPECTED:
        assert all(item['comment'] != 'metrics from monitoring' for item in firewall_rules(values, HOSTVARS, GROUPS, host)['accept'])


@pytest.mark.parametrize('changes, message', [
    ({'firewall_monitoring_group': 'mon-hosts'}, 'is not a group name'),
    ({'exporters_node_exporter_port': 70000}, 'exporter ports of gpu-node-1'),
], ids=['group-name', 'exporter-port'])
def test_monitoring_inputs_refused(changes, message):
    hostvars = copy.deepcopy(HOSTVARS)
    hostvars['monitor-1'] = copy.deepcopy(MONITOR)
    values = dict(VALUES, firewall_monitoring_group='monitoring')
    values.update(dict((key, value) for key, value in changes.items() if key.startswith('firewall_')))
    hostvars['gpu-node-1'].update(dict((key, value) for key, value in changes.items() if not key.startswith('firewall_')))
    with pytest.raises(AnsibleFilterError, match=message):
        firewall_rules(values, hostvars, dict(GROUPS, monitoring=['monitor-1']), 'gpu-node-1')


def test_an_unknown_monitoring_host_address_stops_the_rules():
    values = dict(VALUES, firewall_monitoring_group='monitoring')
    with pytest.raises(AnsibleFilterError, match='monitor-1'):
        firewall_rules(values, dict(HOSTVARS, **{'monitor-1': {}}), dict(GROUPS, monitoring=['monitor-1']), 'gpu-node-1')


MIRROR = {'ansible_facts': {'default_ipv4': {'address': '10.89.77.231'}}}


@pytest.mark.parametrize('changes, ports', [
    ({}, ['3142', '8080']),
    ({'mirror_apt_cache': False, 'mirror_port': 443}, ['443']),
], ids=['defaults', 'no-apt-cache'])
def test_the_mirror_opens_its_ports_to_every_other_host(changes, ports):
    hostvars = dict(copy.deepcopy(HOSTVARS), **{'mirror-1': dict(MIRROR, **changes)})
    groups = dict(GROUPS, mirrors=['mirror-1'], all=list(GROUPS['all']) + ['mirror-1'])
    accept = firewall_rules(VALUES, hostvars, groups, 'mirror-1')['accept']
    assert accept == [rule('ip', ['10.89.77.201', '10.89.77.202', '10.89.77.211'], ports, 'mirror from the hosts it serves')]
    # The hosts it serves open nothing for it.
    assert firewall_rules(VALUES, hostvars, groups, 'gpu-node-1') == EXPECTED['gpu-node-1']


def test_a_mirror_port_that_is_not_a_port_stops_the_rules():
    hostvars = dict(copy.deepcopy(HOSTVARS), **{'mirror-1': dict(MIRROR, mirror_apt_cache_port=0)})
    groups = dict(GROUPS, mirrors=['mirror-1'], all=list(GROUPS['all']) + ['mirror-1'])
    with pytest.raises(AnsibleFilterError, match='mirror ports of mirror-1'):
        firewall_rules(VALUES, hostvars, groups, 'mirror-1')
