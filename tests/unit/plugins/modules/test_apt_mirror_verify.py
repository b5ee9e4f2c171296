# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""apt_mirror_verify as Ansible runs it, with the real gpgv, on a small repository signed by a throwaway key."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'module_utils'))
from test_apt_repository import CORE, PACKAGES, alter, build_repo, gpg_keys, sign  # noqa: E402,F401 pylint: disable=wrong-import-position,unused-import

pytestmark = pytest.mark.skipif(shutil.which('gpg') is None or shutil.which('gpgv') is None,
                                reason='needs gpg and gpgv')

BYTES = sum(len(item[3]) for item in PACKAGES)


@pytest.fixture
def repo(tmp_path, gpg_keys):  # noqa: F811 pylint: disable=redefined-outer-name
    """A signed repository (InRelease, Release, Release.gpg) of suite jammy under tmp_path/repo."""
    root = tmp_path / 'repo'
    build_repo(root)
    sign(gpg_keys['signer'], root)
    return str(root)


def dists(root, name):
    return os.path.join(root, 'dists', 'jammy', name)


def verify(node, root, key, **changes):
    args = dict(path=root, suites=['jammy'], keyring=key)
    args.update(changes)
    return node.run('apt_mirror_verify', **args)


@pytest.mark.parametrize('check_mode', [False, True], ids=['run', 'check-mode'])
def test_inrelease_with_a_binary_keyring_passes(node, repo, gpg_keys, check_mode):
    result = verify(node, repo, gpg_keys['signer'].binary, _ansible_check_mode=check_mode)
    assert result.get('failed') is not True, result
    assert result['changed'] is False
    assert result['suites'] == [dict(suite='jammy', signed_by=gpg_keys['signer'].fingerprint, indexes=2, packages=3,
                                     bytes=BYTES)]
    assert result['packages'] == 3 and result['bytes'] == BYTES


def test_release_with_release_gpg_and_an_armored_keyring_passes(node, repo, gpg_keys):
    os.remove(dists(repo, 'InRelease'))
    result = verify(node, repo, gpg_keys['signer'].armored, components=['main'], architectures=['amd64'])
    assert result.get('failed') is not True, result
    assert result['suites'][0]['signed_by'] == gpg_keys['signer'].fingerprint


def test_inrelease_is_read_from_the_verified_text_not_the_plain_release(node, repo, gpg_keys):
    with open(dists(repo, 'Release'), 'a') as handle:
        handle.write('SHA512:\n %s 1 main/binary-amd64/Packages\n' % ('0' * 128))
    result = verify(node, repo, gpg_keys['signer'].armored)
    assert result.get('failed') is not True, result


def test_a_release_changed_after_signing_is_a_bad_signature(node, repo, gpg_keys):
    os.remove(dists(repo, 'InRelease'))
    alter(dists(repo, 'Release'), offset=10)
    result = verify(node, repo, gpg_keys['signer'].binary)
    assert result['failed'] is True
    assert 'dists/jammy/Release: bad signature by key ' in result['msg']
    assert 'the file was changed after it was signed (BADSIG)' in result['msg']


def test_an_inrelease_changed_after_signing_is_a_bad_signature(node, repo, gpg_keys):
    with open(dists(repo, 'InRelease')) as handle:
        text = handle.read()
    with open(dists(repo, 'InRelease'), 'w') as handle:
        handle.write(text.replace('Origin: test', 'Origin: tost'))
    result = verify(node, repo, gpg_keys['signer'].binary)
    assert result['failed'] is True and 'dists/jammy/InRelease: bad signature by key' in result['msg']


def test_a_release_signed_by_another_key_is_refused(node, repo, gpg_keys):
    sign(gpg_keys['other'], repo)
    result = verify(node, repo, gpg_keys['signer'].binary)
    assert result['failed'] is True
    assert ('dists/jammy/InRelease: signed by key %s, which is not in the keyring (NO_PUBKEY)'
            % gpg_keys['other'].fingerprint[-16:]) in result['msg']


def test_a_suite_without_inrelease_or_signed_release_is_refused(node, repo, gpg_keys):
    os.remove(dists(repo, 'InRelease'))
    os.remove(dists(repo, 'Release.gpg'))
    result = verify(node, repo, gpg_keys['signer'].binary)
    assert result['failed'] is True
    assert result['problems'] == ['dists/jammy/InRelease: missing (neither InRelease nor Release with Release.gpg)']


def test_every_problem_is_collected(node, repo, gpg_keys):
    alter(os.path.join(repo, CORE))
    with open(os.path.join(repo, CORE), 'rb') as handle:
        found = hashlib.sha256(handle.read()).hexdigest()
    os.remove(os.path.join(repo, 'pool/main/h/hip-runtime-amd/hip-runtime-amd_7.1.1_amd64.deb'))
    result = verify(node, repo, gpg_keys['signer'].binary, suites=['jammy', 'noble'], components=['main', 'extra'])
    assert result['failed'] is True
    assert result['problems'] == [
        '%s: SHA256 differs from the Packages index of jammy main/binary-amd64 (index %s..., file %s...)'
        % (CORE, hashlib.sha256(PACKAGES[0][3]).hexdigest()[:16], found[:16]),
        'pool/main/h/hip-runtime-amd/hip-runtime-amd_7.1.1_amd64.deb: missing (listed in the Packages index of jammy '
        'main/binary-amd64)',
        'dists/jammy/extra/binary-amd64/Packages: missing (no Packages, Packages.xz, Packages.gz or Packages.bz2 for '
        'jammy extra/binary-amd64)',
        'dists/noble/InRelease: missing (neither InRelease nor Release with Release.gpg)']
    assert result['msg'].startswith('the mirror at %s failed verification (4 problems): %s: SHA256 differs'
                                    % (repo, CORE))


def test_only_md5_hashes_are_refused(node, tmp_path, gpg_keys):
    root = str(tmp_path / 'md5')
    build_repo(root, release_hashes=('MD5Sum',))
    sign(gpg_keys['signer'], root)
    result = verify(node, root, gpg_keys['signer'].binary)
    assert result['failed'] is True and 'dists/jammy/Release: no strong hash (only MD5Sum;' in result['msg']


def test_sha512_everywhere_passes(node, tmp_path, gpg_keys):
    root = str(tmp_path / 'sha512')
    build_repo(root, hashes=('SHA512',), variants=('.gz',), release_hashes=('SHA256', 'SHA512'))
    sign(gpg_keys['signer'], root)
    result = verify(node, root, gpg_keys['signer'].armored)
    assert result.get('failed') is not True, result
    assert result['suites'][0]['indexes'] == 1 and result['packages'] == 3


@pytest.mark.parametrize('changes, message', [
    ({'suites': []}, 'suites must name at least one suite'),
    ({'suites': ['../etc']}, "suites must be directories under dists/: '../etc'"),
    ({'keyring': '/nonexistent/key.gpg'}, 'cannot use the keyring /nonexistent/key.gpg: '),
    ({'path': '/nonexistent'}, '/nonexistent is not a repository root: it has no dists/ directory'),
], ids=['no-suites', 'suite-outside', 'no-keyring', 'no-root'])
def test_bad_arguments_fail_with_a_message(node, repo, gpg_keys, changes, message):
    result = verify(node, repo, gpg_keys['signer'].binary, **changes)
    assert result['failed'] is True and message in result['msg']
