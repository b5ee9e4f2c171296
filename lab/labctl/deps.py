# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Debian packages the lab needs on the controller."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import subprocess

from .common import lab_env, run, say, step

DEPS = ['podman', 'runc', 'conmon', 'uidmap', 'slirp4netns', 'fuse-overlayfs', 'netavark', 'aardvark-dns',
        'catatonit', 'iptables', 'debootstrap', 'dpkg-dev', 'apt-utils', 'gnupg', 'openssh-client', 'xz-utils',
        'git', 'openssl']


def installed(package):
    proc = subprocess.run(['dpkg-query', '-W', '-f=${Status}', package], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, check=False)
    return proc.returncode == 0 and proc.stdout.decode().strip() == 'install ok installed'


def install():
    """Install the missing ones (apt-get update once; a no-op when all are present)."""
    with step('deps: Debian packages of the lab'):
        missing = [pkg for pkg in DEPS if not installed(pkg)]
        if not missing:
            say('    all present: %s' % ' '.join(DEPS))
            return
        env = lab_env({'DEBIAN_FRONTEND': 'noninteractive'})
        say('    apt-get update')
        run(['apt-get', 'update'], env=env)
        say('    apt-get install %s' % ' '.join(missing))
        run(['apt-get', 'install', '-y', '--no-install-recommends'] + missing, env=env)
