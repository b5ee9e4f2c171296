# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""apt's own resolver on the lab's stub packages, in a throwaway apt root (no container, no signing: local unsigned
repositories, a simulated install): the stub rocm installs with the rocm and graphics repositories of its release and
is refused without the graphics one, as the lab's hosts see it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import subprocess

import pytest
from labctl import packages

pytestmark = pytest.mark.skipif(not all(shutil.which(tool) for tool in ('dpkg-deb', 'apt-ftparchive', 'apt-get')),
                                reason='needs dpkg-deb, apt-ftparchive and apt-get')
RELEASE = '7.1.1'
SUITE = 'jammy'


@pytest.fixture(scope='module')
def repositories(tmp_path_factory):
    """Unsigned flat repositories of the stub packages of one release and suite: rocm, graphics, and stand-ins for
    the Debian packages the stubs depend on (python3, kmod, pciutils)."""
    spec = packages.repo_spec()
    work = str(tmp_path_factory.mktemp('stub-apt'))
    versions = packages.package_versions(spec, RELEASE, SUITE)
    out = os.path.join(work, 'repo')
    for kind, group in (('rocm', 'packages'), ('graphics', 'graphics_packages')):
        packages.build_debs(spec, spec[group], RELEASE, SUITE, versions, os.path.join(out, kind), work)
    for name in ('python3', 'kmod', 'pciutils'):
        root = os.path.join(work, 'debian-' + name)
        os.makedirs(os.path.join(root, 'DEBIAN'))
        with open(os.path.join(root, 'DEBIAN', 'control'), 'w') as handle:
            handle.write('Package: %s\nVersion: 1\nArchitecture: all\nMaintainer: lab <lab@llmfleet.invalid>\n'
                         'Description: stand-in of the distribution package\n' % name)
        os.makedirs(os.path.join(out, 'debian'), exist_ok=True)
        subprocess.run(['dpkg-deb', '-b', root, os.path.join(out, 'debian', name + '.deb')], check=True,
                       stdout=subprocess.DEVNULL)
    for kind in ('rocm', 'graphics', 'debian'):
        index = subprocess.run(['apt-ftparchive', 'packages', '.'], cwd=os.path.join(out, kind), check=True,
                               stdout=subprocess.PIPE, universal_newlines=True).stdout
        with open(os.path.join(out, kind, 'Packages'), 'w') as handle:
            handle.write(index)
    return work, out


def simulate(repositories, kinds, package):
    """apt-get install -s of package with the given repositories (and the Debian stand-ins): (rc, output)."""
    work, out = repositories
    root = os.path.join(work, 'apt-' + '-'.join(kinds))
    for directory in ('etc/apt/preferences.d', 'var/lib/apt/lists/partial', 'var/cache/apt/archives/partial'):
        os.makedirs(os.path.join(root, directory), exist_ok=True)
    with open(os.path.join(root, 'etc/apt/sources.list'), 'w') as handle:
        for kind in list(kinds) + ['debian']:
            handle.write('deb [trusted=yes] file:%s/%s ./\n' % (out, kind))
    status = os.path.join(root, 'status')
    open(status, 'w').close()
    options = ['-o', 'Dir=' + root, '-o', 'Dir::State::status=' + status, '-o', 'Dir::Etc::sourceparts=-',
               '-o', 'Debug::NoLocking=1']
    subprocess.run(['apt-get'] + options + ['update', '-qq'], check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # A refused install is an answer here, not an error.
    result = subprocess.run(['apt-get'] + options + ['install', '-s', '--no-install-recommends', package], check=False,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    return result.returncode, result.stdout


def test_rocm_installs_with_the_graphics_repository(repositories):
    rc, output = simulate(repositories, ['rocm', 'graphics'], 'rocm=7.1.1.70101-38~22.04')
    assert rc == 0, output
    assert 'Inst amdgpu-core (1:7.1.70101-' in output


def test_rocm_is_refused_without_it(repositories):
    rc, output = simulate(repositories, ['rocm'], 'rocm=7.1.1.70101-38~22.04')
    assert rc != 0
    assert 'Depends: amdgpu-core (= 1:7.1.70101-' in output and 'not installable' in output


def test_the_runtime_alone_does_not_need_it(repositories):
    rc, output = simulate(repositories, ['rocm'], 'rocm-hip-runtime=7.1.1.70101-38~22.04')
    assert rc == 0, output
    assert 'amdgpu-core' not in output
