# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A verbatim mirror of an apt repository, checked against its signed Release.

Parses deb822 stanzas (Release, Packages), reads the index variants (plain, xz, gz, bz2), checks every
index the Release lists and every package its Packages indexes list, by size and strongest hash, and
reads gpgv's status lines. Pure: files and text in, values and problem messages out. No Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import bz2
import gzip
import hashlib
import io
import os
import re
import zlib

try:
    import lzma
except ImportError:  # a Python built without liblzma reads no .xz index
    lzma = None

# What a damaged compressed index raises.
READ_ERRORS = (EnvironmentError, EOFError, ValueError, zlib.error) + ((lzma.LZMAError,) if lzma else ())

# Strongest first. MD5Sum and SHA1 alone are refused.
STRONG_HASHES = (('SHA512', 'sha512'), ('SHA256', 'sha256'))
WEAK_HASHES = ('MD5Sum', 'MD5sum', 'SHA1')
INDEX_SUFFIXES = ('', '.xz', '.gz', '.bz2')
MAX_PROBLEMS = 20
CHUNK = 1024 * 1024

_FIELD_RE = re.compile(r'^(?P<name>[^\s:#][^\s:]*):(?P<value>.*)$')
_ARMOR_BEGIN = '-----BEGIN PGP PUBLIC KEY BLOCK-----'
_ARMOR_END = '-----END PGP PUBLIC KEY BLOCK-----'


class RepositoryError(Exception):
    """A file of the repository cannot be used at all (unparsable, no strong hash, bad signature)."""


def parse_deb822(text):
    """deb822 text -> list of stanzas, each a dict of field name -> value.

    A value that continues on indented lines keeps them, one per line, stripped (``SHA256`` of a Release
    becomes ``"\\n<hex> <size> <path>\\n..."``). Blank lines separate stanzas; ``#`` lines are comments.
    """
    stanzas = []
    current = {}
    name = None
    for number, line in enumerate((text or '').splitlines(), 1):
        if not line.strip():
            if current:
                stanzas.append(current)
            current, name = {}, None
        elif line.startswith('#'):
            continue
        elif line[0] in ' \t':
            if name is None:
                raise RepositoryError('line %d continues no field: %r' % (number, line))
            current[name] += '\n' + line.strip()
        else:
            match = _FIELD_RE.match(line)
            if not match:
                raise RepositoryError('line %d is not a "Field: value" line: %r' % (number, line))
            name = match.group('name')
            current[name] = match.group('value').strip()
    if current:
        stanzas.append(current)
    return stanzas


def hash_list(release, where):
    """A Release stanza -> (field, hashlib name, {path: (size, hex)}) from its strongest hash list."""
    for field, algorithm in STRONG_HASHES:
        if field in release:
            entries = {}
            for line in release[field].splitlines():
                if not line.strip():
                    continue
                parts = line.split()
                if len(parts) != 3 or not parts[1].isdigit():
                    raise RepositoryError('%s: a %s line is not "<hash> <size> <path>": %r' % (where, field, line))
                entries[parts[2]] = (int(parts[1]), parts[0].lower())
            return field, algorithm, entries
    weak = [field for field in WEAK_HASHES if field in release]
    if weak:
        raise RepositoryError('%s: no strong hash (only %s; SHA256 or SHA512 is needed)' % (where, ', '.join(weak)))
    raise RepositoryError('%s: no hash list (SHA256 or SHA512 is needed)' % where)


def read_index(name, data):
    """The bytes of an index file -> its text, decompressed by the file name's suffix."""
    if name.endswith('.gz'):
        data = gzip.GzipFile(fileobj=io.BytesIO(data)).read()
    elif name.endswith('.xz'):
        if lzma is None:
            raise RepositoryError('%s: this Python cannot read xz' % name)
        data = lzma.decompress(data)
    elif name.endswith('.bz2'):
        data = bz2.decompress(data)
    return data.decode('utf-8', 'replace')


def file_digest(path, algorithm):
    """(size, hex digest) of a file, read in chunks."""
    digest = hashlib.new(algorithm)
    size = 0
    with open(path, 'rb') as handle:
        while True:
            chunk = handle.read(CHUNK)
            if not chunk:
                break
            size += len(chunk)
            digest.update(chunk)
    return size, digest.hexdigest()


def short(digest):
    return digest[:16] + '...'


def inside(relative):
    """True when a relative path from a signed list stays inside the repository root."""
    if not relative or relative.startswith('/') or '\\' in relative:
        return False
    return '..' not in relative.split('/')


def compare(path, expected, found, field, source, label):
    """Problem messages of one file: ``expected`` and ``found`` are (size, hex); ``source`` names the list."""
    if found[0] != expected[0]:
        return ['%s: size differs from %s (%s %d bytes, file %d bytes)' % (path, source, label, expected[0], found[0])]
    if found[1] != expected[1]:
        return ['%s: %s differs from %s (%s %s, file %s)' % (path, field, source, label, short(expected[1]),
                                                             short(found[1]))]
    return []


def verify_suite(root, suite, release_text, components=None, architectures=None):
    """Check one suite of the tree at ``root`` against its (already verified) Release text.

    Returns ``{indexes, packages, bytes, problems}``: index files checked, distinct package files checked
    and their bytes, and every problem found (paths relative to ``root``). Raises RepositoryError when
    the Release itself cannot be used.
    """
    dists = 'dists/%s' % suite
    where = '%s/Release' % dists
    stanzas = parse_deb822(release_text)
    if len(stanzas) != 1:
        raise RepositoryError('%s: expected one stanza, found %d' % (where, len(stanzas)))
    release = stanzas[0]
    field, algorithm, entries = hash_list(release, where)
    if not components:
        components = release.get('Components', '').split()
    if not architectures:
        architectures = [arch for arch in release.get('Architectures', '').split() if arch not in ('all', 'source')]
    problems = []
    if not components:
        problems.append('%s: lists no Components (name them in components)' % where)
    if not architectures:
        problems.append('%s: lists no Architectures (name them in architectures)' % where)

    good = set()
    for name in sorted(entries):
        relative = '%s/%s' % (dists, name)
        if not inside(name):
            problems.append('%s: lists a path outside the suite: %s' % (where, name))
            continue
        full = os.path.join(root, relative)
        if not os.path.isfile(full):
            continue
        try:
            found = compare(relative, entries[name], file_digest(full, algorithm), field,
                            'the Release of %s' % suite, 'Release')
        except EnvironmentError as exc:
            found = ['%s: cannot be read: %s' % (relative, exc)]
        problems.extend(found)
        if not found:
            good.add(name)

    digests = {}
    sizes = {}
    for component in components:
        for arch in architectures:
            base = '%s/binary-%s/Packages' % (component, arch)
            label = '%s %s/binary-%s' % (suite, component, arch)
            names = [base + suffix for suffix in INDEX_SUFFIXES]
            usable = [name for name in names if name in good]
            if not usable:
                present = [name for name in names if os.path.isfile(os.path.join(root, dists, name))]
                if not present:
                    problems.append('%s/%s: missing (no Packages, Packages.xz, Packages.gz or Packages.bz2 for %s)'
                                    % (dists, base, label))
                else:
                    problems.extend('%s/%s: not listed in the Release of %s' % (dists, name, suite)
                                    for name in present if name not in entries)
                    problems.append('%s/%s: no variant matches the Release, the packages of %s are not checked'
                                    % (dists, base, label))
                continue
            name = usable[0]
            try:
                with open(os.path.join(root, dists, name), 'rb') as handle:
                    packages = parse_deb822(read_index(name, handle.read()))
            except (RepositoryError,) + READ_ERRORS as exc:
                problems.append('%s/%s: cannot be read: %s' % (dists, name, exc))
                continue
            source = 'the Packages index of %s' % label
            for stanza in packages:
                problems.extend(verify_package(root, stanza, source, digests, sizes))
    return dict(indexes=len(good), packages=len(sizes), bytes=sum(sizes.values()), problems=problems)


def verify_package(root, stanza, source, digests, sizes):
    """Problems of one Packages stanza; ``digests`` caches file digests, ``sizes`` collects the files found."""
    filename = stanza.get('Filename')
    package = stanza.get('Package', '?')
    if not filename:
        return ['%s: package %s has no Filename' % (source, package)]
    if not inside(filename):
        return ['%s: package %s has a Filename outside the repository: %s' % (source, package, filename)]
    size = stanza.get('Size', '')
    if not size.isdigit():
        return ['%s: package %s has no Size' % (source, package)]
    for field, algorithm in STRONG_HASHES:
        if stanza.get(field):
            break
    else:
        return ['%s: package %s has no strong hash (SHA256 or SHA512)' % (filename, package)]
    key = (filename, algorithm)
    if key not in digests:
        full = os.path.join(root, filename)
        try:
            digests[key] = file_digest(full, algorithm) if os.path.isfile(full) else None
        except EnvironmentError as exc:
            return ['%s: cannot be read: %s' % (filename, exc)]
    if digests[key] is None:
        return ['%s: missing (listed in %s)' % (filename, source)]
    sizes[filename] = digests[key][0]
    return compare(filename, (int(size), stanza[field].lower()), digests[key], field, source, 'index')


def summary(problems, limit=MAX_PROBLEMS):
    """The problem list as one message: the first ``limit``, then how many more."""
    shown = '; '.join(problems[:limit])
    if len(problems) > limit:
        shown += '; and %d more' % (len(problems) - limit)
    return shown


def keyring_bytes(data):
    """An OpenPGP public key file (binary, or ASCII-armored with one or more blocks) -> binary keyring bytes."""
    stripped = data.lstrip()
    if not stripped:
        raise RepositoryError('the keyring is empty')
    if not stripped.startswith(b'-----BEGIN PGP'):
        return data
    blocks = []
    lines = None
    for line in stripped.decode('ascii', 'replace').splitlines():
        line = line.strip()
        if line == _ARMOR_BEGIN:
            lines = []
        elif line == _ARMOR_END and lines is not None:
            blocks.append(''.join(lines))
            lines = None
        elif lines is not None and line and ':' not in line and not line.startswith('='):
            # Armor headers (Version: ...) hold a colon; the checksum line starts with "=".
            lines.append(line)
    if not blocks:
        raise RepositoryError('the keyring is armored but holds no complete PUBLIC KEY BLOCK')
    try:
        return b''.join(base64.b64decode(block.encode('ascii')) for block in blocks)
    except (TypeError, ValueError) as exc:
        raise RepositoryError("the keyring's armor is not valid base64: %s" % exc)


def signature_status(status, rc, err=''):
    """gpgv's ``--status-fd`` lines -> the signing key's fingerprint, or RepositoryError in plain words.

    ``err`` (gpgv's stderr) is quoted only when the status lines name no reason.
    """
    lines = {}
    for line in (status or '').splitlines():
        if line.startswith('[GNUPG:] '):
            parts = line[len('[GNUPG:] '):].split(' ', 1)
            lines.setdefault(parts[0], []).append(parts[1] if len(parts) > 1 else '')
    if 'BADSIG' in lines:
        raise RepositoryError('bad signature by key %s: the file was changed after it was signed (BADSIG)'
                              % lines['BADSIG'][0].split(' ', 1)[0])
    if 'GOODSIG' in lines and 'VALIDSIG' in lines:
        fields = lines['VALIDSIG'][0].split()
        # The tenth field is the primary key's fingerprint, the first that of the signing (sub)key.
        return fields[9] if len(fields) >= 10 else fields[0]
    for keyword, words in (('EXPKEYSIG', 'signed by key %s, which has expired'),
                           ('REVKEYSIG', 'signed by key %s, which is revoked'),
                           ('EXPSIG', 'the signature by key %s has expired'),
                           ('NO_PUBKEY', 'signed by key %s, which is not in the keyring'),
                           ('ERRSIG', 'the signature by key %s could not be checked')):
        if keyword in lines:
            raise RepositoryError('%s (%s)' % (words % lines[keyword][0].split(' ', 1)[0], keyword))
    if 'NODATA' in lines:
        raise RepositoryError('no OpenPGP signature found (NODATA)')
    last = [line.strip() for line in (err or '').splitlines() if line.strip()]
    raise RepositoryError('gpgv reported no valid signature (rc=%s)%s' % (rc, ': ' + last[-1] if last else ''))
