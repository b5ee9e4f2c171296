# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""apt_repository: deb822 stanzas, index variants, a small signed repository checked file by file.

The repository helpers here (``gpg_keys``, ``build_repo``, ``sign``) are shared with the module's tests.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import bz2
import gzip
import hashlib
import lzma
import os
import re
import shutil
import subprocess

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils._apt_repository import (
    RepositoryError, hash_list, keyring_bytes, parse_deb822, read_index, signature_status, summary, verify_suite)

PACKAGES = (
    ('rocm-core', '7.1.1', 'amd64', b'rocm-core package bytes\n' * 8),
    ('hip-runtime-amd', '7.1.1', 'amd64', b'hip runtime package bytes\n' * 20),
    ('rocm-language-runtime', '7.1.1', 'all', b'meta\n'),
)
CORE = 'pool/main/r/rocm-core/rocm-core_7.1.1_amd64.deb'
COMPRESSORS = {'': lambda data: data, '.gz': gzip.compress, '.xz': lzma.compress, '.bz2': bz2.compress}

needs_gpg = pytest.mark.skipif(shutil.which('gpg') is None or shutil.which('gpgv') is None, reason='needs gpg and gpgv')


class Key(object):
    """A throwaway signing key: its gpg home, fingerprint and exports (binary and armored)."""

    def __init__(self, home):
        self.home = str(home)
        os.chmod(self.home, 0o700)
        self.gpg('--quick-gen-key', 'test <t@example.invalid>', 'ed25519', 'sign', 'never')
        listing = self.gpg('--with-colons', '--list-keys').decode()
        self.fingerprint = [line.split(':')[9] for line in listing.splitlines() if line.startswith('fpr:')][0]
        self.binary = os.path.join(self.home, 'key.gpg')
        self.armored = os.path.join(self.home, 'key.asc')
        with open(self.binary, 'wb') as handle:
            handle.write(self.gpg('--export', self.fingerprint))
        with open(self.armored, 'wb') as handle:
            handle.write(self.gpg('--armor', '--export', self.fingerprint))

    def gpg(self, *args):
        return subprocess.check_output(['gpg', '--homedir', self.home, '--batch', '--yes', '--passphrase', '',
                                        '--pinentry-mode', 'loopback'] + list(args), stderr=subprocess.DEVNULL)

    def close(self):
        subprocess.call(['gpgconf', '--homedir', self.home, '--kill', 'gpg-agent'])


@pytest.fixture(scope='session')
def gpg_keys(tmp_path_factory):
    """Two keys, made once: ``signer`` signs the test repositories, ``other`` is a key the nodes do not trust."""
    if shutil.which('gpg') is None:
        pytest.skip('needs gpg')
    keys = dict((name, Key(tmp_path_factory.mktemp('gpg-' + name))) for name in ('signer', 'other'))
    yield keys
    for key in keys.values():
        key.close()


def write(path, data):
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path))
    with open(path, 'wb') as handle:
        handle.write(data)


def stanza(fields):
    return ''.join('%s: %s\n' % item for item in fields)


def build_repo(root, suite='jammy', hashes=('SHA256',), variants=('', '.gz'), release_hashes=('MD5Sum', 'SHA256')):
    """Write pool files, Packages variants and dists/<suite>/Release under ``root``; return the Release text."""
    root = str(root)
    stanzas = []
    for name, version, arch, data in PACKAGES:
        filename = 'pool/main/%s/%s/%s_%s_%s.deb' % (name[0], name, name, version, arch)
        write(os.path.join(root, filename), data)
        fields = [('Package', name), ('Version', version), ('Architecture', arch), ('Filename', filename),
                  ('Size', str(len(data)))]
        fields += [(field, hashlib.new(field.lower(), data).hexdigest()) for field in hashes]
        fields.append(('Description', '%s for the tests\n the long description' % name))
        stanzas.append(stanza(fields))
    packages = '\n'.join(stanzas).encode()
    dists = os.path.join(root, 'dists', suite)
    listed = {}
    for suffix in ('', '.gz', '.xz'):
        data = COMPRESSORS[suffix](packages)
        listed['main/binary-amd64/Packages' + suffix] = data
        if suffix in variants:
            write(os.path.join(dists, 'main', 'binary-amd64', 'Packages' + suffix), data)
    text = stanza([('Origin', 'test'), ('Suite', suite), ('Codename', suite), ('Architectures', 'amd64 all'),
                   ('Components', 'main'), ('Date', 'Thu, 03 Dec 2026 00:00:00 UTC')])
    for field in release_hashes:
        algorithm = 'md5' if field == 'MD5Sum' else field.lower()
        text += field + ':\n' + ''.join(' %s %d %s\n' % (hashlib.new(algorithm, data).hexdigest(), len(data), name)
                                        for name, data in sorted(listed.items()))
    write(os.path.join(dists, 'Release'), text.encode())
    return text


def sign(key, root, suite='jammy'):
    """Sign dists/<suite>/Release as InRelease (clear-signed) and Release.gpg (detached, armored)."""
    dists = os.path.join(str(root), 'dists', suite)
    release = os.path.join(dists, 'Release')
    key.gpg('--local-user', key.fingerprint, '--clearsign', '-o', os.path.join(dists, 'InRelease'), release)
    key.gpg('--local-user', key.fingerprint, '--armor', '--detach-sign', '-o', os.path.join(dists, 'Release.gpg'),
            release)


def alter(path, offset=3):
    """Change one byte of a file, keeping its size."""
    with open(path, 'r+b') as handle:
        handle.seek(offset)
        byte = handle.read(1)
        handle.seek(offset)
        handle.write(b'X' if byte != b'X' else b'Y')


def test_parse_deb822_keeps_continuation_lines_and_splits_stanzas():
    text = '# a comment\nOrigin: AMD\nSHA256:\n ab 12 main/binary-amd64/Packages\n\tcd 3 main/x\n\n\nPackage: b\n'
    assert parse_deb822(text) == [{'Origin': 'AMD', 'SHA256': '\nab 12 main/binary-amd64/Packages\ncd 3 main/x'},
                                  {'Package': 'b'}]
    with pytest.raises(RepositoryError, match='line 1 continues no field'):
        parse_deb822(' orphan\n')
    with pytest.raises(RepositoryError, match='line 2 is not a "Field: value" line'):
        parse_deb822('A: b\nno colon here\n')


def test_hash_list_takes_the_strongest_and_refuses_md5_and_sha1_alone():
    release = parse_deb822('MD5Sum:\n aa 1 x\nSHA256:\n BB 2 x\nSHA512:\n cc 3 x\n')[0]
    assert hash_list(release, 'dists/s/Release') == ('SHA512', 'sha512', {'x': (3, 'cc')})
    del release['SHA512']
    assert hash_list(release, 'dists/s/Release') == ('SHA256', 'sha256', {'x': (2, 'bb')})
    with pytest.raises(RepositoryError, match=r'dists/s/Release: no strong hash \(only MD5Sum, SHA1;'):
        hash_list(parse_deb822('MD5Sum:\n aa 1 x\nSHA1:\n bb 1 x\n')[0], 'dists/s/Release')
    with pytest.raises(RepositoryError, match='is not "<hash> <size> <path>"'):
        hash_list(parse_deb822('SHA256:\n aa x\n')[0], 'dists/s/Release')


@pytest.mark.parametrize('suffix', ['', '.gz', '.xz', '.bz2'])
def test_read_index_decompresses_by_suffix(suffix):
    assert read_index('Packages' + suffix, COMPRESSORS.get(suffix, bz2.compress)(b'Package: a\n')) == 'Package: a\n'


def test_a_clean_tree_passes_with_counts(tmp_path):
    text = build_repo(tmp_path)
    result = verify_suite(str(tmp_path), 'jammy', text)
    sizes = sum(len(item[3]) for item in PACKAGES)
    assert result == dict(indexes=2, packages=3, bytes=sizes, problems=[])


def test_gz_only_index_and_sha512_pass(tmp_path):
    text = build_repo(tmp_path, hashes=('SHA256', 'SHA512'), variants=('.gz',), release_hashes=('SHA256', 'SHA512'))
    result = verify_suite(str(tmp_path), 'jammy', text, ['main'], ['amd64'])
    assert result['problems'] == [] and result['indexes'] == 1 and result['packages'] == 3


def test_xz_only_index_passes(tmp_path):
    text = build_repo(tmp_path, variants=('.xz',))
    assert verify_suite(str(tmp_path), 'jammy', text)['packages'] == 3


def test_sha512_in_the_packages_index_is_the_one_checked(tmp_path):
    text = build_repo(tmp_path, hashes=('SHA256', 'SHA512'))
    alter(os.path.join(str(tmp_path), CORE))
    problems = verify_suite(str(tmp_path), 'jammy', text)['problems']
    assert len(problems) == 1 and problems[0].startswith(CORE + ': SHA512 differs from the Packages index')


def test_an_altered_package_is_named_with_both_hashes(tmp_path):
    text = build_repo(tmp_path)
    path = os.path.join(str(tmp_path), CORE)
    expected = hashlib.sha256(PACKAGES[0][3]).hexdigest()
    alter(path)
    with open(path, 'rb') as handle:
        found = hashlib.sha256(handle.read()).hexdigest()
    problems = verify_suite(str(tmp_path), 'jammy', text)['problems']
    assert problems == ['%s: SHA256 differs from the Packages index of jammy main/binary-amd64 (index %s..., file %s...)'
                        % (CORE, expected[:16], found[:16])]


def test_a_missing_package_is_named(tmp_path):
    text = build_repo(tmp_path)
    os.remove(os.path.join(str(tmp_path), CORE))
    result = verify_suite(str(tmp_path), 'jammy', text)
    assert result['problems'] == ['%s: missing (listed in the Packages index of jammy main/binary-amd64)' % CORE]
    assert result['packages'] == 2


def test_a_truncated_package_is_a_size_difference(tmp_path):
    text = build_repo(tmp_path)
    with open(os.path.join(str(tmp_path), CORE), 'r+b') as handle:
        handle.truncate(10)
    problems = verify_suite(str(tmp_path), 'jammy', text)['problems']
    assert problems == ['%s: size differs from the Packages index of jammy main/binary-amd64 (index %d bytes, '
                        'file 10 bytes)' % (CORE, len(PACKAGES[0][3]))]


def test_an_index_altered_after_the_release_is_named(tmp_path):
    text = build_repo(tmp_path, variants=('.gz',))
    alter(os.path.join(str(tmp_path), 'dists/jammy/main/binary-amd64/Packages.gz'), offset=20)
    result = verify_suite(str(tmp_path), 'jammy', text)
    assert result['indexes'] == 0
    assert result['problems'][0].startswith('dists/jammy/main/binary-amd64/Packages.gz: SHA256 differs from the '
                                            'Release of jammy (Release ')
    assert result['problems'][1:] == ['dists/jammy/main/binary-amd64/Packages: no variant matches the Release, the '
                                      'packages of jammy main/binary-amd64 are not checked']


def test_an_index_the_release_does_not_list_is_not_used(tmp_path):
    text = build_repo(tmp_path, variants=())
    write(os.path.join(str(tmp_path), 'dists/jammy/main/binary-amd64/Packages.bz2'), bz2.compress(b'Package: x\n'))
    problems = verify_suite(str(tmp_path), 'jammy', text)['problems']
    assert problems[0] == 'dists/jammy/main/binary-amd64/Packages.bz2: not listed in the Release of jammy'
    assert problems[1].startswith('dists/jammy/main/binary-amd64/Packages: no variant matches the Release')


def test_a_signed_but_damaged_index_is_named(tmp_path, monkeypatch):
    monkeypatch.setitem(COMPRESSORS, '.xz', lambda data: b'not xz at all')
    text = build_repo(tmp_path, variants=('.xz',))
    problems = verify_suite(str(tmp_path), 'jammy', text)['problems']
    assert len(problems) == 1 and problems[0].startswith('dists/jammy/main/binary-amd64/Packages.xz: cannot be read: ')


def test_a_release_without_components_or_architectures_needs_them_named(tmp_path):
    text = build_repo(tmp_path).replace('Components: main\n', '').replace('Architectures: amd64 all\n', '')
    assert verify_suite(str(tmp_path), 'jammy', text)['problems'] == [
        'dists/jammy/Release: lists no Components (name them in components)',
        'dists/jammy/Release: lists no Architectures (name them in architectures)']
    assert verify_suite(str(tmp_path), 'jammy', text, ['main'], ['amd64'])['packages'] == 3


def test_only_md5_hashes_are_refused(tmp_path):
    text = build_repo(tmp_path, release_hashes=('MD5Sum',))
    with pytest.raises(RepositoryError, match=r'^dists/jammy/Release: no strong hash \(only MD5Sum;'):
        verify_suite(str(tmp_path), 'jammy', text)


def test_a_requested_component_or_architecture_without_packages_is_named(tmp_path):
    text = build_repo(tmp_path)
    problems = verify_suite(str(tmp_path), 'jammy', text, ['main', 'proprietary'], ['amd64', 'arm64'])['problems']
    assert problems == [
        'dists/jammy/%s/binary-%s/Packages: missing (no Packages, Packages.xz, Packages.gz or Packages.bz2 for '
        'jammy %s/binary-%s)' % (component, arch, component, arch)
        for component, arch in (('main', 'arm64'), ('proprietary', 'amd64'), ('proprietary', 'arm64'))]


def test_paths_outside_the_root_are_refused(tmp_path):
    text = build_repo(tmp_path)
    text = text.replace('main/binary-amd64/Packages.xz', '../../../etc/passwd')
    problems = verify_suite(str(tmp_path), 'jammy', text)['problems']
    assert problems == ['dists/jammy/Release: lists a path outside the suite: ../../../etc/passwd']


def test_summary_caps_the_list():
    assert summary(['p%d' % number for number in range(25)]).endswith('; p19; and 5 more')
    assert summary(['a', 'b']) == 'a; b'


def test_signature_status_in_plain_words():
    good = ('[GNUPG:] NEWSIG\n[GNUPG:] GOODSIG 5A9C021A6417848D test <t@example.invalid>\n[GNUPG:] VALIDSIG '
            'SUBKEY 2026-12-03 1796259336 0 4 0 22 8 01 PRIMARY\n')
    assert signature_status(good, 0) == 'PRIMARY'
    assert signature_status(good + '[GNUPG:] ERRSIG 1234 22 8 01 1796259336 9 -\n[GNUPG:] NO_PUBKEY 1234\n', 2) == \
        'PRIMARY'
    cases = (
        ('[GNUPG:] BADSIG 5A9C021A6417848D test <t@example.invalid>',
         'bad signature by key 5A9C021A6417848D: the file was changed after it was signed (BADSIG)'),
        ('[GNUPG:] ERRSIG 1234 22 8 01 1 9 -\n[GNUPG:] NO_PUBKEY 1234',
         'signed by key 1234, which is not in the keyring (NO_PUBKEY)'),
        ('[GNUPG:] EXPKEYSIG 99 old <o@example.invalid>\n[GNUPG:] VALIDSIG A 1 2',
         'signed by key 99, which has expired (EXPKEYSIG)'),
        ('[GNUPG:] NODATA 1', 'no OpenPGP signature found (NODATA)'),
        ('', 'gpgv reported no valid signature (rc=2)'))
    with pytest.raises(RepositoryError, match=r'no valid signature \(rc=2\): gpgv: keyblock resource: No such file'):
        signature_status('', 2, 'gpgv: one\ngpgv: keyblock resource: No such file\n')
    for status, message in cases:
        with pytest.raises(RepositoryError, match=re.escape(message)):
            signature_status(status, 2)


@needs_gpg
def test_keyring_bytes_dearmors_to_the_binary_export(gpg_keys):
    key = gpg_keys['signer']
    with open(key.binary, 'rb') as handle:
        binary = handle.read()
    with open(key.armored, 'rb') as handle:
        armored = handle.read()
    assert keyring_bytes(armored) == binary
    assert keyring_bytes(binary) is binary
    with open(gpg_keys['other'].armored, 'rb') as handle:
        assert keyring_bytes(armored + handle.read()).startswith(binary)
    with pytest.raises(RepositoryError, match='holds no complete PUBLIC KEY BLOCK'):
        keyring_bytes(b'-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nabc\n')
    with pytest.raises(RepositoryError, match='the keyring is empty'):
        keyring_bytes(b'\n')
