# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every module of labctl shares: the paths (.lab/ and the lab's sources), the error, output and
log (.lab/labctl.log), running a command, and hashing and writing files."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import hashlib
import os
import subprocess
import time

# lab/labctl/common.py -> the checkout
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB_SRC = os.path.join(ROOT, 'lab')
LAB = os.path.join(ROOT, '.lab')
REPO = os.path.join(LAB, 'repo')
LOG_PATH = os.path.join(LAB, 'labctl.log')
CONTAINERS_CONF = os.path.join(LAB, 'containers.conf')
# The label (key) of every image, container and network of the lab.
LABEL = 'llmfleet-lab'

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
# output and log

def log(text):
    """Append text to .lab/labctl.log, each line with a timestamp."""
    os.makedirs(LAB, exist_ok=True)
    with open(LOG_PATH, 'a') as handle:
        for line in text.splitlines() or ['']:
            handle.write('%s %s\n' % (time.strftime('%Y-%m-%dT%H:%M:%S'), line))


def say(text):
    print(text, flush=True)
    log(text)


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


def human(size):
    for unit in ('B', 'KiB', 'MiB', 'GiB'):
        if size < 1024 or unit == 'GiB':
            return '%.1f %s' % (size, unit) if unit != 'B' else '%d B' % size
        size /= 1024.0
    return '%d B' % size


# ---------------------------------------------------------------------------------------------
# commands

def lab_env(extra=None):
    env = dict(os.environ)
    env['CONTAINERS_CONF'] = CONTAINERS_CONF
    env.setdefault('LC_ALL', 'C.UTF-8')
    if extra:
        env.update(extra)
    return env


def run(argv, check=True, input_data=None, env=None, quiet=False, cwd=None):
    """Run argv (never a shell), log it and its output; return (rc, stdout text)."""
    log('$ %s' % ' '.join(argv))
    proc = subprocess.run(argv, input=input_data, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=env or lab_env(), cwd=cwd, check=False)
    out = proc.stdout.decode('utf-8', 'replace') if isinstance(proc.stdout, bytes) else proc.stdout
    if out and not quiet:
        log(out.rstrip('\n'))
    log('rc=%d' % proc.returncode)
    if check and proc.returncode != 0:
        tail = '\n'.join(out.rstrip('\n').splitlines()[-15:])
        raise LabError('command failed (rc=%d): %s\n%s' % (proc.returncode, ' '.join(argv), tail))
    return proc.returncode, out


def podman(*args, **kwargs):
    return run(['podman'] + list(args), **kwargs)


# ---------------------------------------------------------------------------------------------
# files

def sha256_files(paths, extra=b''):
    """One digest of the files' paths (relative to the checkout) and contents, independent of their order."""
    digest = hashlib.sha256(extra)
    for path in sorted(paths):
        digest.update(os.path.relpath(path, ROOT).encode() + b'\0')
        with open(path, 'rb') as handle:
            digest.update(handle.read())
        digest.update(b'\0')
    return digest.hexdigest()


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for block in iter(lambda: handle.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def tree_files(top):
    """Every file below top (compiled Python left out)."""
    files = []
    for dirpath, _dirs, names in os.walk(top):
        files += [os.path.join(dirpath, name) for name in names if not name.endswith('.pyc')]
    return files


def write_file(path, data, mode=0o644):
    """Write text or bytes to path (its directory created), then set its mode."""
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, 'wb') as handle:
        handle.write(data.encode('utf-8') if isinstance(data, str) else data)
    os.chmod(path, mode)


def write_if_changed(path, text, mode=0o644):
    """write_file unless path holds exactly that already; True when it wrote."""
    data = text.encode() if isinstance(text, str) else text
    if os.path.exists(path):
        with open(path, 'rb') as handle:
            if handle.read() == data:
                return False
    write_file(path, data, mode)
    return True


def read_stamp(path):
    """The stripped text of a marker file, or None when there is none."""
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return handle.read().strip()
