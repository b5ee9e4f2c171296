#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: apt_mirror_verify
short_description: Check a verbatim mirror of an apt repository against its signed Release files
version_added: 0.1.0
description:
  - Reads a mirror of an apt repository (as C(debmirror) writes it, C(dists/) and C(pool/) under one root) and
    checks it the way apt would before anything is served from it. Nothing is written.
  - For each suite of O(suites), the signature of C(dists/<suite>/InRelease) (or, without it, of C(dists/<suite>/Release)
    with C(Release.gpg)) is checked with C(gpgv) against O(keyring) alone. The Release text is taken from what C(gpgv)
    verified, never from the raw file.
  - Every index file the Release lists (with its strongest hash, C(SHA512) or else C(SHA256)) that is present must
    match its size and hash. For each component of O(components) and architecture of O(architectures), a
    C(Packages) index (plain, C(.xz), C(.gz) or C(.bz2)) must be present and match.
  - Every package of those indexes must be at its C(Filename) under O(path) with the size and strongest hash
    (C(SHA512) or else C(SHA256)) its index gives.
  - A Release with only C(MD5Sum) or C(SHA1) hashes is refused. Every problem is collected; the module fails
    naming the first 20 and how many more there are.
  - C(gpgv) runs with an argument list (no shell) and the C locale.
  - No module of C(ansible.builtin), C(community.general) or C(ansible.posix) checks a repository before it is served.
    Apt checks one only on a node's C(apt-get update), and C(gpgv) in M(ansible.builtin.command) with a
    M(ansible.builtin.stat) per file would parse the Release and Packages files in Jinja and run one module per
    package.
author:
  - llmfleet.rocm contributors (@llmfleet)
options:
  path:
    description: The repository root, holding C(dists/) and C(pool/).
    type: path
    required: true
  suites:
    description: The suites to check (directories under C(dists/)), at least one.
    type: list
    elements: str
    required: true
  keyring:
    description:
      - An OpenPGP public key file, binary or ASCII-armored (one or more key blocks), holding the keys the nodes
        trust for this repository. An armored file is converted to a temporary binary keyring for C(gpgv).
    type: path
    required: true
  components:
    description: The components whose C(Packages) indexes are checked; by default those the Release lists in C(Components).
    type: list
    elements: str
  architectures:
    description:
      - The architectures whose C(Packages) indexes are checked; by default those the Release lists in
        C(Architectures), without C(all) and C(source).
    type: list
    elements: str
attributes:
  check_mode:
    support: full
    description: The module only reads, in check mode as otherwise.
  diff_mode:
    support: none
    description: No diff is returned.
  platform:
    support: full
    platforms: posix
    description: Needs C(gpgv) on the host that holds the mirror.
requirements:
  - gpgv
notes:
  - Package files no index lists (left over in C(pool/)) are not looked at.
seealso:
  - name: Debian repository format
    description: The Release and Packages files this module reads.
    link: https://wiki.debian.org/DebianRepository/Format
'''

EXAMPLES = r'''
- name: Check the new snapshot of the ROCm repository before serving it
  llmfleet.rocm.apt_mirror_verify:
    path: /srv/mirror/snapshots/rocm-20261203
    suites: [noble]
    keyring: /etc/apt/keyrings/rocm.gpg
    architectures: [amd64]
  register: rocm_mirror

- name: Show what was checked
  ansible.builtin.debug:
    msg: "{{ rocm_mirror.packages }} packages, {{ rocm_mirror.bytes | human_readable }}"
'''

RETURN = r'''
suites:
  description: One entry per suite of O(suites), in that order.
  returned: success
  type: list
  elements: dict
  contains:
    suite:
      description: The suite's name.
      type: str
      sample: noble
    signed_by:
      description: Fingerprint of the primary key that signed the suite's Release.
      type: str
      sample: CA8BB4727A47B4D09B4EE8969386B48A1A693C5C
    indexes:
      description: Index files listed in the Release, present and checked.
      type: int
      sample: 12
    packages:
      description: Distinct package files checked.
      type: int
      sample: 1480
    bytes:
      description: Their size in bytes.
      type: int
      sample: 41205628416
packages:
  description: Package files checked over all suites (a file of two suites counts twice).
  returned: success
  type: int
  sample: 1480
bytes:
  description: Their size in bytes.
  returned: success
  type: int
  sample: 41205628416
problems:
  description: Every problem found, when the module fails on the tree's contents.
  returned: failure
  type: list
  elements: str
  sample: ["dists/noble/InRelease: missing (neither InRelease nor Release with Release.gpg)"]
'''

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.llmfleet.rocm.plugins.module_utils._apt_repository import (
    RepositoryError, keyring_bytes, signature_status, summary, verify_suite)

C_LOCALE = {'LC_ALL': 'C', 'LANG': 'C', 'LANGUAGE': 'C'}


def binary_keyring(module, path):
    """The keyring as a binary file gpgv reads: the file itself, or its armor decoded into a temporary file."""
    with open(path, 'rb') as handle:
        data = handle.read()
    binary = keyring_bytes(data)
    if binary is data:
        return os.path.abspath(path)
    target = os.path.join(module.tmpdir, 'keyring.gpg')
    with open(target, 'wb') as handle:
        handle.write(binary)
    return target


def signed_release(module, gpgv, keyring, root, suite):
    """Verify a suite's signature -> (signing fingerprint, verified Release text)."""
    dists = os.path.join(root, 'dists', suite)
    inrelease = os.path.join(dists, 'InRelease')
    release = os.path.join(dists, 'Release')
    detached = os.path.join(dists, 'Release.gpg')
    if os.path.isfile(inrelease):
        name = 'dists/%s/InRelease' % suite
        output = os.path.join(tempfile.mkdtemp(dir=module.tmpdir), 'Release')
        argv = [gpgv, '--status-fd', '1', '--keyring', keyring, '--output', output, inrelease]
    elif os.path.isfile(release) and os.path.isfile(detached):
        name = 'dists/%s/Release' % suite
        output = release
        argv = [gpgv, '--status-fd', '1', '--keyring', keyring, detached, release]
    else:
        raise RepositoryError('dists/%s/InRelease: missing (neither InRelease nor Release with Release.gpg)' % suite)
    rc, out, err = module.run_command(argv, check_rc=False, environ_update=dict(C_LOCALE))
    try:
        fingerprint = signature_status(out, rc, err)
    except RepositoryError as exc:
        raise RepositoryError('%s: %s' % (name, exc))
    # A good signature is enough when another signature of the file is by a key not in the keyring (gpgv rc=2).
    if not os.path.isfile(output):
        raise RepositoryError('%s: gpgv wrote no verified text (rc=%d)' % (name, rc))
    with open(output, 'rb') as handle:
        return fingerprint, handle.read().decode('utf-8', 'replace')


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', required=True),
            suites=dict(type='list', elements='str', required=True),
            keyring=dict(type='path', required=True, no_log=False),
            components=dict(type='list', elements='str'),
            architectures=dict(type='list', elements='str'),
        ),
        supports_check_mode=True,
    )
    root = os.path.abspath(module.params['path'])
    suites = module.params['suites']
    if not suites:
        module.fail_json(msg='suites must name at least one suite')
    bad = [suite for suite in suites if not suite or suite.startswith('/') or '..' in suite.split('/')]
    if bad:
        module.fail_json(msg='suites must be directories under dists/: %s' % ', '.join(repr(suite) for suite in bad))
    if not os.path.isdir(os.path.join(root, 'dists')):
        module.fail_json(msg='%s is not a repository root: it has no dists/ directory' % root)
    gpgv = module.get_bin_path('gpgv', required=True)
    try:
        keyring = binary_keyring(module, module.params['keyring'])
    except (RepositoryError, EnvironmentError) as exc:
        module.fail_json(msg='cannot use the keyring %s: %s' % (module.params['keyring'], exc))

    results = []
    problems = []
    for suite in suites:
        try:
            fingerprint, text = signed_release(module, gpgv, keyring, root, suite)
            checked = verify_suite(root, suite, text, module.params['components'], module.params['architectures'])
        except (RepositoryError, EnvironmentError) as exc:
            problems.append(str(exc))
            continue
        problems.extend(checked['problems'])
        results.append(dict(suite=suite, signed_by=fingerprint, indexes=checked['indexes'],
                            packages=checked['packages'], bytes=checked['bytes']))
    if problems:
        module.fail_json(msg='the mirror at %s failed verification (%d problem%s): %s'
                         % (root, len(problems), '' if len(problems) == 1 else 's', summary(problems)),
                         problems=problems)
    module.exit_json(changed=False, suites=results, packages=sum(item['packages'] for item in results),
                     bytes=sum(item['bytes'] for item in results))


if __name__ == '__main__':
    main()
