# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's certificate authority: a gateway certificate that openssl verifies against the CA for the
gateway's name and address, kept across calls, made again when the address changes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess

import pytest

from labctl import tls


@pytest.fixture
def tls_dir(tmp_path, monkeypatch):
    directory = str(tmp_path / 'tls')
    monkeypatch.setattr(tls, 'TLS_DIR', directory)
    monkeypatch.setattr(tls, 'CA_KEY', os.path.join(directory, 'ca.key'))
    monkeypatch.setattr(tls, 'CA_CERT', os.path.join(directory, 'ca.crt'))
    monkeypatch.setattr(tls, 'say', lambda text: None)
    return directory


def openssl(*args, data=None):
    return subprocess.run(['openssl'] + list(args), input=data, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          check=False)


def test_the_gateway_certificate_verifies_for_its_name_and_address(tls_dir, tmp_path):
    chain, key = tls.server_pair('gateway-1', '10.89.77.211')
    leaf = tmp_path / 'leaf.pem'
    leaf.write_bytes(chain.split(b'-----END CERTIFICATE-----')[0] + b'-----END CERTIFICATE-----\n')
    assert openssl('verify', '-CAfile', tls.CA_CERT, '-verify_ip', '10.89.77.211', str(leaf)).returncode == 0
    assert openssl('verify', '-CAfile', tls.CA_CERT, '-verify_hostname', 'gateway-1', str(leaf)).returncode == 0
    assert openssl('verify', '-CAfile', tls.CA_CERT, '-verify_ip', '10.89.77.99', str(leaf)).returncode != 0
    assert b'PRIVATE KEY' in key
    assert oct(os.stat(os.path.join(tls_dir, 'gateway-1', 'server.key')).st_mode & 0o777) == '0o600'
    assert oct(os.stat(tls.CA_KEY).st_mode & 0o777) == '0o600'


def test_kept_across_calls_and_made_again_for_a_new_address(tls_dir):
    first = tls.server_pair('gateway-1', '10.89.77.211')
    assert tls.server_pair('gateway-1', '10.89.77.211') == first
    assert tls.server_pair('gateway-1', '10.89.77.212')[0] != first[0]
