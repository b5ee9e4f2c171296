# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's certificate authority and its gateways' server certificates (openssl), kept under .lab/tls/.

The CA signs one certificate per gateway host for its name and lab address; the controller trusts
.lab/tls/ca.crt (tools/try_completions.py --ca-file). A certificate is made again only when its
names change or it is within 30 days of expiry."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from .common import LAB, run, say

TLS_DIR = os.path.join(LAB, 'tls')
CA_KEY = os.path.join(TLS_DIR, 'ca.key')
CA_CERT = os.path.join(TLS_DIR, 'ca.crt')
# Where a gateway host finds its certificate and key (inventories/sandbox says the same paths).
CERT_IN_HOST = '/etc/ssl/llmfleet-lab/gateway.crt'
KEY_IN_HOST = '/etc/ssl/llmfleet-lab/gateway.key'
DAYS = 825


def _fresh(cert, names_file, names):
    if not (os.path.exists(cert) and os.path.exists(names_file)):
        return False
    with open(names_file) as handle:
        if handle.read() != names:
            return False
    # openssl x509 -checkend: rc 0 when the certificate is still valid 30 days from now.
    rc, _out = run(['openssl', 'x509', '-checkend', str(30 * 86400), '-noout', '-in', cert], check=False, quiet=True)
    return rc == 0


def ensure_ca():
    os.makedirs(TLS_DIR, mode=0o700, exist_ok=True)
    if _fresh(CA_CERT, CA_CERT + '.names', 'llmfleet lab CA'):
        return
    say('    openssl: lab certificate authority %s' % CA_CERT)
    run(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
         '-keyout', CA_KEY, '-out', CA_CERT, '-days', str(DAYS), '-subj', '/CN=llmfleet lab CA',
         '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
        quiet=True)
    os.chmod(CA_KEY, 0o600)
    with open(CA_CERT + '.names', 'w') as handle:
        handle.write('llmfleet lab CA')


def server_pair(name, address):
    """(certificate PEM, key PEM) for a gateway host, signed by the lab CA for its name and address."""
    ensure_ca()
    directory = os.path.join(TLS_DIR, name)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    cert, key, csr = (os.path.join(directory, f) for f in ('server.crt', 'server.key', 'server.csr'))
    names = 'DNS:%s,IP:%s' % (name, address) if address else 'DNS:%s' % name
    if not _fresh(cert, cert + '.names', names):
        say('    openssl: server certificate for %s (%s)' % (name, names))
        run(['openssl', 'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
             '-keyout', key, '-out', csr, '-subj', '/CN=%s' % name], quiet=True)
        extensions = os.path.join(directory, 'server.ext')
        with open(extensions, 'w') as handle:
            handle.write('basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n'
                         'extendedKeyUsage=serverAuth\nsubjectAltName=%s\n' % names)
        run(['openssl', 'x509', '-req', '-in', csr, '-CA', CA_CERT, '-CAkey', CA_KEY, '-CAcreateserial',
             '-out', cert, '-days', str(DAYS), '-extfile', extensions], quiet=True)
        os.chmod(key, 0o600)
        with open(cert + '.names', 'w') as handle:
            handle.write(names)
    with open(cert, 'rb') as handle:
        cert_pem = handle.read()
    with open(CA_CERT, 'rb') as handle:
        chain = cert_pem + handle.read()
    with open(key, 'rb') as handle:
        return chain, handle.read()
