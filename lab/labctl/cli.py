# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""labctl: the local lab of llmfleet.rocm (podman systemd hosts, a signed stub ROCm apt
repository, simulated GPUs). Runs as root on the controller, Python 3 standard library only.

The command line: one subcommand per function cmd_<name> (its docstring is its line in --help), each
reading its own options and calling the modules of the package with them.
Every step prints what it does and how long it took; details go to .lab/labctl.log.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import time

from . import buildstage, deps, faults, hosts, image, lanes, model, repository, wheelhouse
from .common import CONTAINERS_CONF, CONTAINERS_CONF_TEXT, LAB, REPO, ROOT, LabError, lab_env, log, say, step, write_if_changed

# The command, as messages name it (lab/bin/labctl runs this package).
ENTRY = 'lab/bin/labctl'


def cmd_deps(_args):
    """Install the Debian packages the lab needs (apt-get update once; a no-op when all are present)."""
    deps.install()


def cmd_image(_args):
    """Build the Debian 12 systemd base image from lab/image (only when the recipe changed)."""
    image.build()


def cmd_repo(_args):
    """Build the signed stub ROCm apt repository under .lab/repo (only when its sources changed)."""
    repository.build()


def cmd_up(_args):
    """Create or start the network, repository server and sandbox hosts (idempotent)."""
    if not shutil.which('podman'):
        raise LabError('podman is missing: run "%s deps" first' % ENTRY)
    # The stand-in source repositories (rccl-tests' for the validation tools), made again when their recipe changed; the
    # model: seconds when cached, the first time a few minutes (pip wheel, tokenizer training); the router's wheelhouse:
    # the sandbox's gateway routes with vllm-router (gateway_routing: cache_aware), installed from wheels/router.
    tag = _image_beside(repository.build, buildstage.sources, model.build, wheelhouse.build_pinned)
    with step('up: network, repository server, hosts'):
        hosts.start_hosts(tag)


def cmd_down(_args):
    """Stop (SIGRTMIN+3 for systemd hosts) and remove every lab container and the lab network."""
    with step('down: containers and network'):
        hosts.remove_all()


def cmd_stop(_args):
    """Stop the running lab hosts, keeping them (labctl up, make sandbox, starts them again)."""
    with step('stop: running lab containers'):
        hosts.stop_running()


def cmd_status(_args):
    """Show the lab's image, repository, network and containers."""
    tag = image.image_tag()
    say('image     %s %s' % (tag, 'present' if image.image_exists(tag) else 'MISSING (labctl image)'))
    say('repo      %s %s' % (REPO, repository.state()))
    say('wheels    %s %s' % (os.path.join(wheelhouse.wheels_root(), wheelhouse.wheelhouse_key()),
                             'present' if wheelhouse.wheelhouse_dir() else 'NEEDS BUILD (labctl wheelhouse)'))
    say('model     %s %s' % (os.path.join(model.MODELS, model.MODEL_NAME), model.model_state()))
    for name in (hosts.NETWORK, hosts.INTERNAL_NETWORK):
        say('network   %s %s' % (name, 'exists' if hosts.network_exists(name) else 'absent'))
    rows = hosts.container_rows()
    if not rows:
        say('containers: none')
        return
    for row in rows:
        say('container %-28s %-22s %-26s mem %s' % row)


def cmd_env(_args):
    """Print the exports that make podman and molecule use the lab's configuration."""
    for key, value in hosts.exports(image.image_tag()).items():
        print('export %s=%s' % (key, value))


def _image_beside(*builders):
    """Build the image in a thread while `builders` run one after the other here; return the image's tag.

    The image is debootstrap's work (Debian's archive and the disk), the others pip's and the CPU's: on a cold machine
    they took about 170 s and 290 s one after the other. Their progress lines interleave.
    """
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        tag = pool.submit(image.ensure)
        for builder in builders:
            builder()
        return tag.result()


def _artifacts():
    """What the scenarios install, each built only when its recipe changed; returns the image's tag.

    The engine and workers scenarios install from the lab's wheelhouses and model; the mirror scenario mirrors the
    engine's and the router's wheelhouses and installs the engine from the stand-in of vLLM's ROCm wheel index
    (engine_source wheels); the build scenario builds from the stand-in sources with the pinned build tools.
    """
    return _image_beside(repository.build, model.build, wheelhouse.build_engine, wheelhouse.build_index,
                         wheelhouse.build_pinned, buildstage.buildtools, buildstage.sources)


def cmd_artifacts(_args):
    """Build what the molecule scenarios install: image, repository, model, wheelhouses, build tools, stand-in sources."""
    _artifacts()


def check_molecule_args(args):
    """Refuse --lanes with anything but `test --all`, before anything is built or started."""
    if args.lanes < 1:
        raise LabError('--lanes takes 1 or more, not %d' % args.lanes)
    if args.lanes > 1 and (args.molecule_args[:1] != ['test'] or '--all' not in args.molecule_args):
        raise LabError('--lanes runs "test --all" only, not "%s"' % ' '.join(args.molecule_args))
    if args.with_sandbox and args.lanes < 2:
        raise LabError('--with-sandbox runs the sandbox in a lane of its own: give --lanes 2 or more')


def cmd_molecule(args):
    """Run molecule (from .venv) with the lab's environment, network and repository server (--lanes N: test --all in N lanes)."""
    check_molecule_args(args)
    tag = _artifacts()
    molecule_args = list(args.molecule_args)
    # Leave the lab as found: what this command starts, it removes afterwards.
    lab_was_up = hosts.network_exists()
    with step('molecule: lab network and repository server'):
        hosts.ensure_network()
        hosts.ensure_repo_server(tag)
    molecule = hosts.ansible_bin('molecule')
    start = time.time()
    env = lab_env(hosts.exports(tag))
    env['PATH'] = os.path.join(ROOT, '.venv', 'bin') + os.pathsep + env.get('PATH', '')
    if args.lanes > 1:
        rest = [arg for arg in molecule_args[1:] if arg != '--all']
        names = lanes.scenarios(os.path.join(ROOT, 'molecule')) + ([lanes.SANDBOX] if args.with_sandbox else [])
        labctl = os.path.join(ROOT, 'lab', 'bin', 'labctl')
        codes = lanes.run(lambda share: lanes.lane_argv(share, [molecule, 'test'] + rest, [os.path.join(ROOT, 'tests', 'sandbox.sh')],
                                                        [labctl, 'stop']),
                          lanes.split(names, args.lanes), env, ROOT, os.path.join(ROOT, '.cache', 'test-logs'), say)
        rc = next((code for code in codes if code), 0)
    else:
        argv = [molecule] + molecule_args
        say('==> %s' % ' '.join(argv))
        rc = subprocess.call(argv, env=env, cwd=ROOT)
    say('<== molecule rc=%d: %.1f s' % (rc, time.time() - start))
    if not lab_was_up:
        cmd_down(args)
    if rc:
        raise LabError('molecule failed (rc=%d)' % rc)


def cmd_wheelhouse(_args):
    """Build the lab's wheelhouses under .lab/repo/wheels/ (latest, alternate, sglang, router, vllm-index; each when its recipe changed)."""
    wheelhouse.build_index(wheelhouse.build())
    wheelhouse.build_engine()
    wheelhouse.build_pinned()


def cmd_model(_args):
    """Build the tiny Llama under .lab/repo/models/tiny-llama/ and its .tar.gz (only when its recipe changed)."""
    model.build()


def cmd_sources(args):
    """Create the stand-in PyTorch/Triton/vLLM/rccl-tests source repositories under .lab/repo/sources/ (--reset, --advance NAME)."""
    buildstage.sources(reset=args.reset, advance_name=args.advance, build_seconds=args.build_seconds)


def cmd_buildtools(_args):
    """Download the toolchain role's pinned Python build tools as wheels into .lab/repo/buildtools/."""
    buildstage.buildtools()


def cmd_fault(args):
    """Set or clear a simulated fault on one GPU of a lab host (what its stub AMD exporter reports)."""
    with step('fault: %s GPU %d' % (args.host, args.gpu)):
        faults.apply(args.host, args.gpu, faults.fault_document(args))


COMMANDS = {
    'deps': cmd_deps,
    'image': cmd_image,
    'repo': cmd_repo,
    'up': cmd_up,
    'down': cmd_down,
    'stop': cmd_stop,
    'status': cmd_status,
    'env': cmd_env,
    'artifacts': cmd_artifacts,
    'molecule': cmd_molecule,
    'wheelhouse': cmd_wheelhouse,
    'model': cmd_model,
    'sources': cmd_sources,
    'buildtools': cmd_buildtools,
    'fault': cmd_fault,
}
# Commands that need neither root nor the containers.conf (they only print).
UNPRIVILEGED = ('env',)


def build_parser():
    parser = argparse.ArgumentParser(prog='labctl', description=__doc__.split('\n\n', maxsplit=1)[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='command', required=True)
    for name, func in COMMANDS.items():
        cmd = sub.add_parser(name, help=func.__doc__)
        cmd.set_defaults(func=func)
        if name == 'molecule':
            cmd.add_argument('--lanes', type=int, default=1, metavar='N',
                             help='run "test --all" as N molecule processes side by side (logs .cache/test-logs/molecule-lane-N.log)')
            cmd.add_argument('--with-sandbox', action='store_true',
                             help='with --lanes: run tests/sandbox.sh (make sandbox) as one more share, first in its lane')
            cmd.add_argument('molecule_args', nargs=argparse.REMAINDER)
        if name == 'fault':
            faults.add_arguments(cmd)
        if name == 'sources':
            cmd.add_argument('--reset', action='store_true', help='back to the first commits')
            cmd.add_argument('--advance', metavar='NAME', help='add a commit to the main branch of NAME')
            cmd.add_argument('--build-seconds', type=int, default=0, help='builds of the new commit take this long')
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    if os.geteuid() != 0 and args.command not in UNPRIVILEGED:
        print('labctl: run as root (podman rootful, debootstrap, chroot)', file=sys.stderr)
        return 2
    os.makedirs(LAB, exist_ok=True)
    if args.command not in UNPRIVILEGED:
        write_if_changed(CONTAINERS_CONF, CONTAINERS_CONF_TEXT)
        log('---- labctl %s' % ' '.join(sys.argv[1:] if argv is None else argv))
    start = time.time()
    try:
        args.func(args)
    except LabError as exc:
        say('labctl %s: ERROR: %s' % (args.command, exc))
        return 1
    if args.command not in ('env', 'molecule'):
        say('labctl %s: done in %.1f s' % (args.command, time.time() - start))
    return 0
