# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The listening sockets read from ``ss -Hltnpe`` (tests/unit/fixtures/ss/README.md says how the output was captured)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.listening_sockets import parse_listening

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', 'ss')


def _capture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


CAPTURED = parse_listening(_capture('listening-debian12-iproute2-6.1.txt'))
BY_PORT = dict((socket['port'], socket) for socket in CAPTURED)

WORKER = [{'name': 'VLLM::EngineCor', 'pid': 28124}, {'name': 'VLLM::APIServer', 'pid': 28122}]
NGINX = [{'name': 'VLLM::EngineCor', 'pid': 28084}, {'name': 'nginx: master', 'pid': 27990}]


def test_every_line_is_a_socket():
    assert [socket['port'] for socket in CAPTURED] == [18000, 18006, 18004, 2211, 2221, 2201, 2202, 2024, 18002, 18005,
                                                       18001, 18003]


@pytest.mark.parametrize('port, expected', [
    (18000, {'address': '10.89.77.1', 'port': 18000, 'uid': 65534, 'processes': WORKER}),
    (18001, {'address': '::', 'port': 18001, 'uid': 65534, 'processes': WORKER}),
    (18002, {'address': '0.0.0.0', 'port': 18002, 'uid': 0, 'processes': NGINX}),
    (18003, {'address': '*', 'port': 18003, 'uid': 0, 'processes': NGINX}),
    (18005, {'address': '::1', 'port': 18005, 'uid': 0,
             'processes': [{'name': 'VLLM::EngineCor', 'pid': 28083}, {'name': 'sshd', 'pid': 27991}]}),
    (18006, {'address': '127.0.0.53', 'port': 18006, 'uid': 0, 'processes': [{'name': 'python3', 'pid': 28150}]}),
    (2024, {'address': '0.0.0.0', 'port': 2024, 'uid': 0, 'processes': []}),
], ids=['worker-v4-uid', 'worker-v6-uid', 'root-name-with-space', 'dual-stack-star', 'v6-loopback', 'bound-to-device',
        'holder-not-seen'])
def test_socket(port, expected):
    assert BY_PORT[port] == expected


def test_a_process_holding_a_socket_twice_is_listed_once():
    line = 'LISTEN 0 16 0.0.0.0:8000 0.0.0.0:* users:(("vllm",pid=9,fd=3),("vllm",pid=9,fd=7)) uid:999 ino:1 sk:2 <->'
    assert parse_listening(line) == [{'address': '0.0.0.0', 'port': 8000, 'uid': 999,
                                      'processes': [{'name': 'vllm', 'pid': 9}]}]


def test_a_name_that_looks_like_an_owner_is_not_the_owner():
    line = 'LISTEN 0 16 0.0.0.0:8000 0.0.0.0:* users:(("uid:7 x",pid=9,fd=3)) ino:1 sk:2 <->'
    assert parse_listening(line)[0]['uid'] == 0


@pytest.mark.parametrize('text', ['', '\n', None], ids=['empty', 'blank-line', 'none'])
def test_no_socket(text):
    assert parse_listening(text) == []


@pytest.mark.parametrize('text', [
    'State  Recv-Q Send-Q Local Address:Port Peer Address:PortProcess',
    'tcp   LISTEN 0      4096   0.0.0.0:22 0.0.0.0:*',
    'ESTAB 0 0 10.0.0.1:22 10.0.0.9:51000 users:(("sshd",pid=1,fd=4))',
    'LISTEN 0 4096 0.0.0.0:ssh 0.0.0.0:*',
], ids=['header', 'netid-column', 'not-listening', 'service-name'])
def test_output_of_another_command_is_refused(text):
    with pytest.raises(ValueError, match='line 1 of `ss -Hltnpe` is not a listening TCP socket'):
        parse_listening(text)
