# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The signed stub ROCm apt repository under .lab/repo: AMD's layout (rocm/apt/<release>,
graphics/<release>/ubuntu, amdgpu/<release>/ubuntu), apt-ftparchive indexes, signed with a throwaway GPG key kept in
.lab/gnupg."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import gzip
import os
import re
import shutil
import subprocess
import tempfile

from . import packages
from .common import LAB, LAB_SRC, REPO, read_stamp, run, say, sha256_files, step, tree_files, write_if_changed

STAMP = os.path.join(LAB, 'repo.stamp')
GNUPG = os.path.join(LAB, 'gnupg')
REPO_KEY_ASC = os.path.join(LAB, 'rocm.gpg.key')
REPO_KEY_BIN = os.path.join(LAB, 'rocm.gpg')
KEY_UID = 'llmfleet lab ROCm repository signing key (throwaway) <lab@llmfleet.invalid>'
# Served beside the apt repositories but made by `wheelhouse`, `model`, `sources`, `buildtools` and the molecule
# scenario build (builds/): a repository rebuild keeps them.
ENGINE_REPO_DIRS = ('wheels', 'models', 'sources', 'buildtools', 'builds')


# ---------------------------------------------------------------------------------------------
# the throwaway signing key

def gpg(*args, **kwargs):
    return run(['gpg', '--homedir', GNUPG, '--batch', '--no-tty'] + list(args), **kwargs)


def _fingerprints(out):
    return [line.split(':')[9] for line in out.splitlines() if line.startswith('fpr:')]


def ensure_repo_key():
    """Generate the throwaway signing key once (kept across repository rebuilds); return its fingerprint."""
    os.makedirs(GNUPG, mode=0o700, exist_ok=True)
    os.chmod(GNUPG, 0o700)
    _rc, out = gpg('--list-secret-keys', '--with-colons', check=False, quiet=True)
    fprs = _fingerprints(out)
    if not fprs:
        say('    gpg: generating the throwaway repository signing key')
        gpg('--passphrase', '', '--pinentry-mode', 'loopback', '--quick-gen-key', KEY_UID, 'ed25519', 'sign', 'never')
        _rc, out = gpg('--list-secret-keys', '--with-colons', quiet=True)
        fprs = _fingerprints(out)
    fpr = fprs[0]
    _rc, armored = gpg('--export', '--armor', fpr, quiet=True)
    write_if_changed(REPO_KEY_ASC, armored)
    binary = subprocess.run(['gpg', '--homedir', GNUPG, '--batch', '--export', fpr], stdout=subprocess.PIPE,
                            check=True).stdout
    write_if_changed(REPO_KEY_BIN, binary)
    return fpr


def stop_gpg_agent():
    run(['gpgconf', '--homedir', GNUPG, '--kill', 'gpg-agent'], check=False, quiet=True)


# ---------------------------------------------------------------------------------------------
# indexes and the build

def source_files():
    """What the repository is built from: the builder, the package data and the stub tools."""
    files = [os.path.abspath(__file__), os.path.abspath(packages.__file__)]
    for base in ('packages', 'stubs'):
        files += tree_files(os.path.join(LAB_SRC, base))
    return files


def sources_digest():
    return sha256_files(source_files())[:16]


def state():
    """'up to date' or 'NEEDS BUILD (...)' for labctl status."""
    return 'up to date' if read_stamp(STAMP) == sources_digest() else 'NEEDS BUILD (labctl repo)'


def write_indexes(spec, base, label, fpr):
    """Packages/Packages.gz per suite (apt-ftparchive), Release, InRelease and Release.gpg."""
    _rc, out = run(['apt-ftparchive', 'packages', 'pool'], cwd=base, quiet=True)
    stanzas = [s for s in out.strip().split('\n\n') if s.strip()]
    for suite, ubuntu in spec['suites'].items():
        mine = [s for s in stanzas if re.search(r'^Version: \S+[~.]%s$' % re.escape(ubuntu), s, re.M)]
        bindir = os.path.join(base, 'dists', suite, 'main', 'binary-amd64')
        os.makedirs(bindir, exist_ok=True)
        text = '\n\n'.join(mine) + '\n'
        with open(os.path.join(bindir, 'Packages'), 'w') as handle:
            handle.write(text)
        with gzip.GzipFile(os.path.join(bindir, 'Packages.gz'), 'wb', mtime=0) as handle:
            handle.write(text.encode())
        dist = os.path.join(base, 'dists', suite)
        opts = []
        for key, value in (('Origin', 'repo.radeon.com'), ('Label', label), ('Suite', suite), ('Codename', suite),
                           ('Architectures', 'amd64'), ('Components', 'main'),
                           ('Description', 'llmfleet lab stub of %s (throwaway key)' % label)):
            opts += ['-o', 'APT::FTPArchive::Release::%s=%s' % (key, value)]
        _rc, release_text = run(['apt-ftparchive'] + opts + ['release', '.'], cwd=dist, quiet=True)
        with open(os.path.join(dist, 'Release'), 'w') as handle:
            handle.write(release_text)
        for target, mode in (('InRelease', '--clearsign'), ('Release.gpg', '--detach-sign')):
            gpg('--yes', '--armor', '--local-user', fpr, '--digest-algo', 'SHA512', mode,
                '--output', os.path.join(dist, target), os.path.join(dist, 'Release'), quiet=True)


def _build_tree(spec, fpr, out, work):
    """Every release's ROCm, graphics and amdgpu repository into out/ (AMD's layout), with the key."""
    for release in spec['releases']:
        drv_release = spec['releases'][release]['amdgpu']['release']
        base = os.path.join(out, 'rocm', 'apt', release)
        gfx_base = os.path.join(out, 'graphics', release, 'ubuntu')
        drv_base = os.path.join(out, 'amdgpu', drv_release, 'ubuntu')
        for suite in spec['suites']:
            versions = packages.package_versions(spec, release, suite)
            packages.build_debs(spec, spec['packages'], release, suite, versions, base, work)
            packages.build_debs(spec, spec['graphics_packages'], release, suite, versions, gfx_base, work)
            packages.build_debs(spec, spec['driver_packages'], release, suite, versions, drv_base, work)
        write_indexes(spec, base, 'ROCm %s' % release, fpr)
        write_indexes(spec, gfx_base, 'graphics %s' % release, fpr)
        write_indexes(spec, drv_base, 'amdgpu %s' % drv_release, fpr)
        say('    ROCm %s + graphics %s + amdgpu %s: %d packages x %d suites' % (
            release, release, drv_release,
            len(spec['packages']) + len(spec['graphics_packages']) + len(spec['driver_packages']), len(spec['suites'])))
    # AMD's Device Metrics Exporter: its own repository, device-metrics-exporter/apt/<release>, with the same key.
    exporter = spec.get('exporter')
    if exporter:
        base = os.path.join(out, 'device-metrics-exporter', 'apt', exporter['release'])
        newest = sorted(spec['releases'])[-1]
        for suite in spec['suites']:
            versions = packages.package_versions(spec, newest, suite)
            packages.build_debs(spec, spec['exporter_packages'], newest, suite, versions, base, work)
        write_indexes(spec, base, 'device-metrics-exporter %s' % exporter['release'], fpr)
        say('    device-metrics-exporter %s: %d package(s) x %d suites'
            % (exporter['release'], len(spec['exporter_packages']), len(spec['suites'])))
    shutil.copy(REPO_KEY_ASC, os.path.join(out, 'rocm', 'rocm.gpg.key'))


def _replace_contents(out):
    """Move out/'s children into .lab/repo in place (the repository server bind-mounts it), keeping ENGINE_REPO_DIRS."""
    os.makedirs(REPO, exist_ok=True)
    for child in os.listdir(REPO):
        if child in ENGINE_REPO_DIRS:
            continue
        path = os.path.join(REPO, child)
        if os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    for child in os.listdir(out):
        shutil.move(os.path.join(out, child), os.path.join(REPO, child))
    run(['chmod', '-R', 'a+rX'] + [os.path.join(REPO, child) for child in os.listdir(REPO) if child not in ENGINE_REPO_DIRS])


def build():
    """Build the repository under .lab/repo unless its sources are unchanged (the signing key first, always)."""
    digest = sources_digest()
    with step('repo: stub ROCm apt repository %s' % digest):
        try:
            fpr = ensure_repo_key()
        finally:
            stop_gpg_agent()
        if read_stamp(STAMP) == digest and os.path.isdir(REPO):
            say('    unchanged (sources hash %s)' % digest)
            return
        spec = packages.repo_spec()
        work = tempfile.mkdtemp(prefix='repo-', dir=LAB)
        try:
            out = os.path.join(work, 'out')
            _build_tree(spec, fpr, out, work)
            _replace_contents(out)
            with open(STAMP, 'w') as handle:
                handle.write(digest + '\n')
        finally:
            shutil.rmtree(work, ignore_errors=True)
            stop_gpg_agent()
