# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""monitoring_scrape_targets: the fleet's scrape targets from the inventory and the workers' endpoints."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import re

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.prometheus_targets import (
    JOBS, monitoring_scrape_targets, monitoring_target_files, target_address)

VALUES = {'monitoring_node_groups': ['gpu_nodes', 'gateways', 'monitoring'], 'monitoring_gpu_group': 'gpu_nodes',
          'monitoring_gateway_group': 'gateways'}
GROUPS = {'all': ['gpu-node-1', 'gpu-node-2', 'gateway-1', 'monitor-1'], 'gpu_nodes': ['gpu-node-1', 'gpu-node-2'],
          'gateways': ['gateway-1'], 'monitoring': ['monitor-1']}


def endpoint(name, address, port, gpus, version='0.32.0', engine='vllm'):
    return {'name': name, 'address': address, 'port': port, 'gpus': gpus, 'url': 'http://%s:%d' % (address, port),
            'model': 'tiny-llama', 'model_path': '/var/lib/llmfleet/models/tiny-llama', 'engine': engine,
            'engine_version': version, 'venv': '/opt/llmfleet/engines/x'}


HOSTVARS = {
    'gpu-node-1': {'ansible_facts': {'default_ipv4': {'address': '10.89.77.201'}},
                   'llmfleet_worker_endpoints': [endpoint('llmfleet-worker-0', '10.89.77.201', 8000, [0]),
                                                 endpoint('llmfleet-worker-1', '10.89.77.201', 8001, [1])]},
    'gpu-node-2': {'llmfleet_private_address': 'fd00::2',
                   'llmfleet_worker_endpoints': [endpoint('llmfleet-worker-0', 'fd00::2', 8000, [0, 1, 2, 3], engine='sglang',
                                                          version='0.5.23')]},
    'gateway-1': {'ansible_facts': {'default_ipv4': {'address': '10.89.77.211'}}},
    'monitor-1': {'ansible_facts': {'default_ipv4': {'address': '10.89.77.221'}}},
}


def targets(values=None, hostvars=None, groups=None):
    return monitoring_scrape_targets(values or VALUES, HOSTVARS if hostvars is None else hostvars, groups or GROUPS)


def addresses(job_groups):
    return [(group['targets'][0], group['labels']['node']) for group in job_groups]


@pytest.mark.parametrize('job, expected', [
    ('node', [('10.89.77.201:9100', 'gpu-node-1'), ('[fd00::2]:9100', 'gpu-node-2'), ('10.89.77.211:9100', 'gateway-1'),
              ('10.89.77.221:9100', 'monitor-1')]),
    ('amd_gpu', [('10.89.77.201:5000', 'gpu-node-1'), ('[fd00::2]:5000', 'gpu-node-2')]),
    ('nginx', [('10.89.77.211:9113', 'gateway-1')]),
    ('gateway_log', [('10.89.77.211:3903', 'gateway-1')]),
    ('workers', [('10.89.77.201:8000', 'gpu-node-1'), ('10.89.77.201:8001', 'gpu-node-1'), ('[fd00::2]:8000', 'gpu-node-2')]),
], ids=lambda value: value if isinstance(value, str) else None)
def test_targets_per_job(job, expected):
    assert addresses(targets()[job]) == expected


def test_every_job_is_there():
    assert sorted(targets()) == sorted(JOBS)


@pytest.mark.parametrize('index, labels', [
    (0, {'node': 'gpu-node-1', 'worker': 'llmfleet-worker-0', 'gpu': '0', 'model': 'tiny-llama', 'engine': 'vllm',
         'engine_version': '0.32.0'}),
    (2, {'node': 'gpu-node-2', 'worker': 'llmfleet-worker-0', 'gpu': '0,1,2,3', 'model': 'tiny-llama', 'engine': 'sglang',
         'engine_version': '0.5.23'}),
], ids=['dp-worker', 'tp-worker'])
def test_worker_labels(index, labels):
    assert targets()['workers'][index]['labels'] == labels


def test_a_host_in_two_groups_is_one_node_target():
    groups = dict(GROUPS, monitoring=['monitor-1', 'gateway-1'])
    assert [node for _address, node in addresses(targets(groups=groups)['node'])].count('gateway-1') == 1


def test_a_node_without_endpoints_yet_has_exporters_but_no_workers():
    hostvars = copy.deepcopy(HOSTVARS)
    del hostvars['gpu-node-1']['llmfleet_worker_endpoints']
    result = targets(hostvars=hostvars)
    assert [node for _a, node in addresses(result['workers'])] == ['gpu-node-2']
    assert ('10.89.77.201:5000', 'gpu-node-1') in addresses(result['amd_gpu'])


def test_gateway_log_port_zero_means_no_gateway_log_target():
    hostvars = copy.deepcopy(HOSTVARS)
    hostvars['gateway-1']['exporters_gateway_log_port'] = 0
    assert targets(hostvars=hostvars)['gateway_log'] == []


def test_a_host_s_own_exporter_port_is_used():
    hostvars = copy.deepcopy(HOSTVARS)
    hostvars['gpu-node-2']['exporters_node_exporter_port'] = '9200'
    assert ('[fd00::2]:9200', 'gpu-node-2') in addresses(targets(hostvars=hostvars)['node'])


@pytest.mark.parametrize('address, port, expected', [
    ('10.0.0.1', 9100, '10.0.0.1:9100'),
    ('fd00::1', 9100, '[fd00::1]:9100'),
    ('node-1.example.internal', 5000, 'node-1.example.internal:5000'),
], ids=['ipv4', 'ipv6', 'hostname'])
def test_target_address(address, port, expected):
    assert target_address(address, port) == expected


def _broken(path, value):
    hostvars = copy.deepcopy(HOSTVARS)
    node = hostvars['gpu-node-1']
    if path == 'address':
        node['llmfleet_worker_endpoints'][0]['address'] = value
    elif path == 'port':
        node['llmfleet_worker_endpoints'][0]['port'] = value
    elif path == 'name':
        node['llmfleet_worker_endpoints'][0]['name'] = value
    elif path == 'gpus':
        node['llmfleet_worker_endpoints'][0]['gpus'] = value
    elif path == 'endpoints':
        node['llmfleet_worker_endpoints'] = value
    elif path == 'private':
        node['llmfleet_private_address'] = value
    elif path == 'nofacts':
        del node['ansible_facts']
    return hostvars


@pytest.mark.parametrize('path, value, message', [
    ('address', '10.0.0.1\n- targets: [x]', 'not an address or a host name'),
    ('address', 'a b', 'not an address or a host name'),
    ('port', 70000, 'is not a port'),
    ('port', 'eighty', 'is not a port'),
    ('name', 'w0\nlabels: {}', 'one line'),
    ('name', None, 'not a string'),
    ('gpus', ['zero'], 'not a list of GPU indexes'),
    ('endpoints', 'x', 'is not a list'),
    ('endpoints', ['x'], 'is not a mapping'),
    ('private', '10.0.0.300', 'not an IPv4 or IPv6 address'),
    ('nofacts', None, 'private address of gpu-node-1 is unknown'),
], ids=['address-newline', 'address-space', 'port-range', 'port-word', 'name-newline', 'name-none', 'gpus-word',
        'endpoints-string', 'endpoint-string', 'private-address', 'address-unknown'])
def test_refuses_what_it_cannot_write(path, value, message):
    with pytest.raises(AnsibleFilterError, match=message):
        targets(hostvars=_broken(path, value))


@pytest.mark.parametrize('host, name, value', [
    ('gpu-node-1', 'exporters_node_exporter_port', 0),
    ('gpu-node-1', 'exporters_amdgpu_exporter_port', 65536),
    ('gateway-1', 'exporters_nginx_exporter_port', True),
    ('gateway-1', 'exporters_gateway_log_port', -1),
], ids=['node-zero', 'amdgpu-range', 'nginx-bool', 'log-negative'])
def test_refuses_bad_ports(host, name, value):
    hostvars = copy.deepcopy(HOSTVARS)
    hostvars[host][name] = value
    with pytest.raises(AnsibleFilterError, match='%s of %s' % (name, host)):
        targets(hostvars=hostvars)


def test_refuses_node_groups_that_are_not_a_list():
    with pytest.raises(AnsibleFilterError, match='monitoring_node_groups'):
        targets(values=dict(VALUES, monitoring_node_groups='gpu_nodes'))


def test_target_files_carry_their_name_path_and_content():
    targets = {'workers': [{'targets': ['10.0.0.5:8000'], 'labels': {'node': 'n1'}}], 'node': []}
    files = monitoring_target_files(targets, '/etc/prometheus/llmfleet/targets/')
    assert [entry['name'] for entry in files] == ['targets-node', 'targets-workers']
    assert files[1]['path'] == '/etc/prometheus/llmfleet/targets/workers.json'
    assert json.loads(files[1]['content']) == targets['workers'] and files[1]['content'].endswith(']\n')
    assert files[0]['content'] == '[]\n'
    assert all(set(entry) == {'name', 'path', 'content'} for entry in files)


@pytest.mark.parametrize('targets, message', [
    (['node'], 'expects the targets as a mapping'),
    ({'../x': []}, 'the job "../x" is no file name'),
])
def test_target_files_refuse(targets, message):
    with pytest.raises(AnsibleFilterError, match=re.escape(message)):
        monitoring_target_files(targets, '/etc/prometheus')
