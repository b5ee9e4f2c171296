# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Debian 12 systemd base image of the lab hosts: debootstrap with the controller's mirror, the
recipe's setup.sh in a chroot, podman import. Its tag is the hash of lab/image/."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import re
import shutil
import subprocess
import time

from .common import LAB, LAB_SRC, LABEL, lab_env, podman, run, say, sha256_files, step

IMAGE_NAME = 'localhost/llmfleet-lab'
RECIPE_JSON = os.path.join(LAB_SRC, 'image', 'recipe.json')
SETUP_SH = os.path.join(LAB_SRC, 'image', 'setup.sh')


def debian_mirrors():
    """Return (mirror, security mirror) from the controller's apt sources."""
    mirror = security = None
    files = sorted(glob.glob('/etc/apt/sources.list.d/*.sources')) + sorted(glob.glob('/etc/apt/sources.list.d/*.list'))
    files += ['/etc/apt/sources.list']
    for path in files:
        if not os.path.isfile(path):
            continue
        with open(path) as handle:
            text = handle.read()
        entries = []
        if path.endswith('.sources'):
            for stanza in re.split(r'\n\s*\n', text):
                fields = {}
                for line in stanza.splitlines():
                    match = re.match(r'^(?P<key>[A-Za-z-]+):\s*(?P<value>.*)$', line)
                    if match:
                        fields[match.group('key').lower()] = match.group('value').split()
                if 'deb' in fields.get('types', []) and fields.get('enabled', ['yes'])[0] != 'no':
                    for uri in fields.get('uris', []):
                        entries.append((uri, fields.get('suites', [])))
        else:
            for line in text.splitlines():
                match = re.match(r'^deb\s+(?:\[[^\]]*\]\s+)?(?P<uri>\S+)\s+(?P<suite>\S+)', line)
                if match:
                    entries.append((match.group('uri'), [match.group('suite')]))
        for uri, suites in entries:
            if 'bookworm' in suites and mirror is None:
                mirror = uri.rstrip('/')
            if 'bookworm-security' in suites and security is None:
                security = uri.rstrip('/')
    mirror = mirror or 'http://deb.debian.org/debian'
    security = security or (mirror + '-security' if mirror.endswith('/debian') else 'http://deb.debian.org/debian-security')
    return mirror, security


def image_recipe():
    """(recipe, the files whose hash is the tag)."""
    with open(RECIPE_JSON) as handle:
        recipe = json.load(handle)
    return recipe, [RECIPE_JSON, SETUP_SH]


def image_tag():
    _recipe, files = image_recipe()
    return '%s:%s' % (IMAGE_NAME, sha256_files(files)[:12])


def image_exists(tag):
    return podman('image', 'exists', tag, check=False)[0] == 0


def build():
    """Build the image of the current recipe unless it exists; tag it :latest; drop unused older builds."""
    tag = image_tag()
    with step('image: %s' % tag):
        if image_exists(tag):
            say('    exists (recipe unchanged)')
            podman('tag', tag, IMAGE_NAME + ':latest')
            return
        recipe, _files = image_recipe()
        mirror, security = debian_mirrors()
        rootfs = os.path.join(LAB, 'image', 'rootfs')
        if os.path.exists(rootfs):
            shutil.rmtree(rootfs)
        os.makedirs(rootfs)
        start = time.time()
        say('    debootstrap --variant=%s %s from %s' % (recipe['variant'], recipe['suite'], mirror))
        run(['debootstrap', '--variant=' + recipe['variant'], '--include=' + ','.join(recipe['include']),
             recipe['suite'], rootfs, mirror], env=lab_env({'DEBIAN_FRONTEND': 'noninteractive'}))
        say('    debootstrap done in %.1f s; running setup.sh in the chroot' % (time.time() - start))
        shutil.copy(SETUP_SH, os.path.join(rootfs, 'lab-setup.sh'))
        run(['chroot', rootfs, '/bin/sh', '/lab-setup.sh'],
            env={'PATH': '/usr/sbin:/usr/bin:/sbin:/bin', 'LAB_MIRROR': mirror, 'LAB_MIRROR_SECURITY': security,
                 'DEBIAN_FRONTEND': 'noninteractive', 'LC_ALL': 'C'})
        os.unlink(os.path.join(rootfs, 'lab-setup.sh'))
        say('    podman import')
        tar = subprocess.Popen(['tar', '--numeric-owner', '--xattrs', '-C', rootfs, '-cf', '-', '.'], stdout=subprocess.PIPE)
        try:
            run(['podman', 'import', '--change', 'CMD=["/sbin/init"]', '--change', 'STOPSIGNAL=SIGRTMIN+3',
                 '--change', 'ENV=container=podman', '--change', 'LABEL=%s=image' % LABEL, '-', tag],
                input_data=tar.stdout.read())
        finally:
            tar.wait()
        podman('tag', tag, IMAGE_NAME + ':latest')
        shutil.rmtree(rootfs)
        # Drop older builds of the recipe that no container uses any more.
        _rc, out = podman('images', '--format', '{{.Repository}}:{{.Tag}}', '--filter', 'reference=%s' % IMAGE_NAME)
        for old in out.split():
            if old not in (tag, IMAGE_NAME + ':latest'):
                podman('rmi', old, check=False)


def ensure():
    """Build the image only when the current recipe's tag is missing; return the tag."""
    tag = image_tag()
    if not image_exists(tag):
        build()
    return tag
