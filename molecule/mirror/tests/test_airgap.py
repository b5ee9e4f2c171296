# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU node and the gateway on the internal network: they reach the mirror and nothing outside it (the lab's
repository server, which stands for AMD's and the wheel and model servers, by name or by address); what they
installed came from the mirror; the fleet serves a completion through the gateway."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import testinfra

testinfra_hosts = ['podman://llmfleet-molecule-mirror-node', 'podman://llmfleet-molecule-mirror-gateway']
# The mirror host's address on the internal network (molecule.yml).
MIRROR_ADDRESS = '10.89.78.250'
MIRROR = 'http://%s:8080' % MIRROR_ADDRESS
REPO_SERVER = 'llmfleet-lab-repo'
CONNECT = ('python3 -c "import socket, sys; s = socket.socket(); s.settimeout(5); '
           'print(s.connect_ex((sys.argv[1], int(sys.argv[2]))))" %s %s')


def repo_server_address():
    """The repository server's address on the lab network, as the mirror host (on both networks) resolves it."""
    mirror = testinfra.get_host('podman://llmfleet-molecule-mirror-1')
    return mirror.check_output('getent hosts %s' % REPO_SERVER).split()[0]


def test_the_outside_is_unreachable(host):
    address = repo_server_address()
    assert address.startswith('10.89.77.')
    # No route: connect() fails at once with ENETUNREACH (101), by address; the name does not resolve.
    assert host.check_output(CONNECT % (address, 8080)) == '101'
    assert host.run('getent hosts %s' % REPO_SERVER).rc != 0
    assert host.check_output('ip -4 route show default') == ''


def test_the_mirror_is_reachable(host):
    assert host.check_output(CONNECT % (MIRROR_ADDRESS, 8080)) == '0'
    manifest = json.loads(host.check_output('curl -sSf %s/manifest.json' % MIRROR))
    assert manifest['id']


def test_apt_goes_through_the_mirror(host):
    proxy = host.file('/etc/apt/apt.conf.d/01llmfleet-proxy').content_string
    assert 'Acquire::http::Proxy "http://%s:3142";' % MIRROR_ADDRESS in proxy
    for path in host.check_output('ls /etc/apt/sources.list.d').split():
        text = host.file('/etc/apt/sources.list.d/' + path).content_string
        for line in text.splitlines():
            if line.startswith('URIs:'):
                uri = line.split()[1]
                # The distribution's archive through the proxy; everything else on the mirror.
                assert uri.startswith(MIRROR + '/') or uri.startswith('http://deb.debian.org/'), (path, uri)


def test_the_node_installed_rocm_from_the_mirror_and_serves():
    host = testinfra.get_host('podman://llmfleet-molecule-mirror-node')
    assert host.package('rocm-core').is_installed
    assert host.package('rocm-core').version.startswith('7.1.1')
    sources = host.file('/etc/apt/sources.list.d/rocm.sources').content_string
    assert MIRROR + '/amd/rocm/apt/7.1.1' in sources
    assert host.socket('tcp://10.89.78.201:8000').is_listening


def test_the_node_installed_the_engine_from_the_mirrors_index():
    host = testinfra.get_host('podman://llmfleet-molecule-mirror-node')
    venv = host.file('/opt/llmfleet/engines/current').linked_to
    marker = host.file(venv + '/.llmfleet-engine').content_string
    data = json.loads(marker.split('\n', 1)[1])
    # The prebuilt path: the lock's hash names what the venv holds, not the URL it came from.
    assert data['source'] == 'wheels' and data['requirements'] == '' and len(data['requirements_sha256']) == 64
    digest = host.check_output('curl -sS %s/wheels/engine-index/requirements.lock | sha256sum' % MIRROR).split()[0]
    assert data['requirements_sha256'] == digest
    assert venv == '/opt/llmfleet/engines/vllm-0.32.0-' + digest[:12]
    assert host.check_output(venv + '/bin/python -c "import importlib.metadata as m; print(m.version(\'vllm\'))"') == '0.32.0+cpu'


def test_a_completion_through_the_gateway():
    host = testinfra.get_host('podman://llmfleet-molecule-mirror-gateway')
    body = json.dumps({'model': 'tiny-llama', 'prompt': 'The mirror', 'max_tokens': 4})
    out = host.check_output("curl -sS -H 'Authorization: Bearer lab-key-0123456789abcdef' -H 'Content-Type: "
                            "application/json' -d '%s' http://127.0.0.1/v1/completions" % body)
    answer = json.loads(out)
    assert answer['choices'][0]['text'], out
    assert answer['usage']['completion_tokens'] > 0
