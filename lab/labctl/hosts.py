# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's hosts in podman: the network, the repository server, a systemd container per host of
inventories/sandbox (with its GPU profile, SSH host key and the lab key), known_hosts, and their removal."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import io
import json
import os
import shutil
import tarfile
import time

from . import tls
from .common import CONTAINERS_CONF, LAB, LAB_SRC, LABEL, REPO, ROOT, LabError, lab_env, podman, run, say, write_if_changed

INVENTORY = os.path.join(ROOT, 'inventories', 'sandbox')
NETWORK = 'llmfleet-lab'
# A fixed subnet: the sandbox inventory names each host's address (lab_address, from the top of
# the range, away from the addresses podman hands out to molecule's containers from the bottom),
# the gateways' certificates carry theirs, and the controller (the bridge, .1) is the admin range.
SUBNET = '10.89.77.0/24'
# The internal network: no route out of it (podman --internal), so a host only on it reaches nothing but its
# members; the molecule scenario "mirror" puts a GPU node and a gateway there and the mirror host on both networks.
INTERNAL_NETWORK = 'llmfleet-lab-internal'
INTERNAL_SUBNET = '10.89.78.0/24'
REPO_SERVER = 'llmfleet-lab-repo'
REPO_PORT = 8080
HOST_PREFIX = 'llmfleet-lab-'
PROFILE_PATH_IN_HOST = '/etc/llmfleet-lab/gpu-profile.json'
SSH_DIR = os.path.join(LAB, 'ssh')
SSH_KEY = os.path.join(SSH_DIR, 'id_ed25519')
KNOWN_HOSTS = os.path.join(LAB, 'known_hosts')


def exports(tag):
    """The environment that makes podman and molecule use the lab's configuration, image, network and repository."""
    return {'CONTAINERS_CONF': CONTAINERS_CONF, 'LLMFLEET_LAB_IMAGE': tag, 'LLMFLEET_LAB_NETWORK': NETWORK,
            'LLMFLEET_LAB_INTERNAL_NETWORK': INTERNAL_NETWORK, 'LLMFLEET_LAB_REPO_URL': 'http://%s:%d' % (REPO_SERVER, REPO_PORT)}


# ---------------------------------------------------------------------------------------------
# inventory and profiles

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
                      'address': hostvars.get('lab_address'),
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
# keys: the lab's SSH key, per-host SSH host keys

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


# ---------------------------------------------------------------------------------------------
# containers and the network

def container_state(name):
    rc, out = podman('container', 'inspect', '--format', '{{.State.Status}}|{{index .Config.Labels "llmfleet-lab.config"}}',
                     name, check=False, quiet=True)
    if rc != 0:
        return None, None
    status, _sep, config = out.strip().partition('|')
    return status, config


def network_exists(name=NETWORK):
    return podman('network', 'exists', name, check=False)[0] == 0


def network_subnet(name=NETWORK):
    _rc, out = podman('network', 'inspect', '--format', '{{range .Subnets}}{{.Subnet}} {{end}}', name, quiet=True)
    return out.split()


def network_internal(name):
    _rc, out = podman('network', 'inspect', '--format', '{{.Internal}}', name, quiet=True)
    return out.strip() == 'true'


def ensure_network():
    """The lab network (routed out through the controller) and the internal one (no route out), each with its subnet."""
    wanted = [(NETWORK, SUBNET, False), (INTERNAL_NETWORK, INTERNAL_SUBNET, True)]
    for name, subnet, internal in wanted:
        if not network_exists(name):
            continue
        subnets, is_internal = network_subnet(name), network_internal(name)
        if subnet not in subnets or is_internal != internal:
            say('    network %s has subnet %s (internal %s), not %s (internal %s): removing the lab to make it again' % (
                name, ' '.join(subnets), is_internal, subnet, internal))
            remove_all()
    for name, subnet, internal in wanted:
        if not network_exists(name):
            say('    podman network create %s (%s%s)' % (name, subnet, ', internal' if internal else ''))
            podman('network', 'create', '--subnet', subnet, '--label', '%s=network' % LABEL,
                   *(['--internal'] if internal else []), name)
        else:
            say('    network %s exists (%s)' % (name, subnet))


def ensure_repo_server(tag):
    config = hashlib.sha256(('%s|%s|%d' % (tag, REPO, REPO_PORT)).encode()).hexdigest()[:12]
    status, current = container_state(REPO_SERVER)
    if status is not None and current != config:
        say('    %s: configuration changed, recreating' % REPO_SERVER)
        podman('rm', '-f', '-t', '5', REPO_SERVER)
        status = None
    if status is None:
        say('    %s: python3 -m http.server %d serving .lab/repo read-only' % (REPO_SERVER, REPO_PORT))
        podman('run', '-d', '--name', REPO_SERVER, '--hostname', REPO_SERVER, '--label', '%s=repo' % LABEL,
               '--label', 'llmfleet-lab.config=%s' % config, '--network', NETWORK, '--init', '--stop-signal', 'SIGTERM',
               '--restart', 'always', '-v', '%s:/srv/repo:ro' % REPO, tag,
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
        if 'gateways' in host['groups']:
            cert, key = tls.server_pair(host['name'], host['address'])
            add(os.path.dirname(tls.CERT_IN_HOST).lstrip('/'), b'', 0o755, tarfile.DIRTYPE)
            add(tls.CERT_IN_HOST.lstrip('/'), cert, 0o644)
            add(tls.KEY_IN_HOST.lstrip('/'), key, 0o600)
    return buf.getvalue(), public


def ensure_host(host, tag, pubkey):
    """Create or start one host's container; return its known_hosts line."""
    name = HOST_PREFIX + host['name']
    profile = load_lab_profile(host['profile']) if host['profile'] else None
    if profile is not None and host['expected_gpus'] is not None and int(host['expected_gpus']) != len(profile['gpus']):
        raise LabError('%s: rocm_expected_gpu_count %s but profile %s has %d GPUs' % (
            host['name'], host['expected_gpus'], host['profile'], len(profile['gpus'])))
    files, public = host_files_tar(host, pubkey, profile)
    # /dev/shm: a vLLM server allocates about 240 MiB of shared-memory queues at start (podman's default is 64 MB).
    shm = '2g'
    config = hashlib.sha256(b'|'.join([tag.encode(), str(host['port']).encode(), shm.encode(), b'NET_ADMIN,SYS_ADMIN,SYS_PTRACE',
                                       str(host['address']).encode(), files])).hexdigest()[:12]
    status, current = container_state(name)
    if status is not None and current != config:
        say('    %s: configuration changed, recreating' % host['name'])
        podman('rm', '-f', '-t', '20', name)
        status = None
    if status is None:
        say('    %s: create (port 127.0.0.1:%d, gpu profile %s)' % (host['name'], host['port'], host['profile']))
        address = ['--ip', host['address']] if host['address'] else []
        # NET_ADMIN: the firewall role loads nftables rules into the host's own network namespace. SYS_ADMIN and
        # SYS_PTRACE: systemd on a node has every capability; it sets up the units' mount sandbox (ProtectSystem,
        # ReadWritePaths, PrivateTmp) only with SYS_ADMIN (without, silently off), and with ProtectProc=invisible
        # it sees a unit's processes only with SYS_PTRACE (without, a unit that also has PrivateUsers= and a User=
        # fails: "Failed to set up user namespacing", status 217/USER).
        podman('create', '--name', name, '--hostname', host['name'], '--label', '%s=host' % LABEL,
               '--label', 'llmfleet-lab.config=%s' % config, '--network', NETWORK, '--network-alias', host['name'],
               *address, '--cap-add', 'NET_ADMIN', '--cap-add', 'SYS_ADMIN', '--cap-add', 'SYS_PTRACE',
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


def start_hosts(tag):
    """The network, the repository server and every host of the inventory, then known_hosts; wait for SSH."""
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


def stop_running():
    """Stop (SIGRTMIN+3) every running lab host and keep it: `labctl up` starts it again.

    The repository server and molecule's instances go on (a molecule lane may be using them).
    """
    if shutil.which('podman') is None:
        say('    podman is not installed: no lab container runs')
        return
    _rc, out = podman('ps', '--filter', 'label=%s=host' % LABEL, '--filter', 'status=running', '--format', '{{.Names}}', quiet=True)
    names = out.split()
    if not names:
        say('    no lab host runs')
        return
    start = time.time()
    podman('stop', '-t', '30', *names)
    say('    stopped %s in %.1f s (make sandbox starts them again)' % (' '.join(names), time.time() - start))


def remove_all():
    """Stop (SIGRTMIN+3 for systemd hosts) and remove every lab container, then the networks."""
    names = lab_containers()
    if names:
        start = time.time()
        podman('stop', '-t', '30', *names)
        say('    stopped %s in %.1f s' % (' '.join(names), time.time() - start))
        podman('rm', *names)
    for name in (NETWORK, INTERNAL_NETWORK):
        if network_exists(name):
            rc, out = podman('network', 'rm', name, check=False)
            say('    network %s %s' % (name, 'removed' if rc == 0 else 'NOT removed: ' + out.strip()))
    left = lab_containers()
    if left:
        raise LabError('containers left: %s' % ' '.join(left))


def container_rows():
    """[(name, status, ports, memory)] of every lab container."""
    _rc, out = podman('ps', '-a', '--filter', 'label=%s' % LABEL, '--format',
                      '{{.Names}}\t{{.Status}}\t{{.Ports}}', quiet=True)
    rows = [line.split('\t') for line in out.strip().splitlines() if line.strip()]
    if not rows:
        return []
    _rc, stats = podman('stats', '--no-stream', '--format', '{{.Name}}\t{{.MemUsage}}', *[r[0] for r in rows],
                        check=False, quiet=True)
    mem = dict(line.split('\t', 1) for line in stats.strip().splitlines() if '\t' in line)
    return [(row[0], row[1], row[2] if len(row) > 2 else '', mem.get(row[0], '-')) for row in rows]
