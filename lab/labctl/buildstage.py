# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the engine build needs in the lab, made on the controller and served by the repository server:

  sources     .lab/repo/sources/{pytorch,triton,torchvision,torchaudio,vllm,rccl-tests}.git: git repositories (served
              over HTTP) of stand-in sources with the real entry points (lab/build/sources/; Triton's also holds
              python/triton_kernels/triton_kernels, vLLM's TRITON_KERNELS_SRC_DIR); their commits are reproducible
              (fixed author, dates), so the same recipe always gives the same commits and build keys. --reset
              puts them back to their first commit; --advance NAME adds a commit to NAME's main branch
              (--build-seconds N makes the builds of that commit last N seconds). rccl-tests' tree also gets
              the simulated GPU layer (lab/stubs/gpusim.py, validsim.py, labhost.py) its binaries bundle.
  buildtools  .lab/repo/buildtools/: the toolchain role's pinned Python build tools as wheels (the lab hosts
              install them with --no-index, as a fleet does from its mirror).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import re
import shutil
import sys

from .common import LAB, LAB_SRC, REPO, ROOT, LabError, lab_env, read_stamp, run, say, step

SOURCES = os.path.join(LAB_SRC, 'build', 'sources')
COMPONENTS = ('pytorch', 'triton', 'torchvision', 'torchaudio', 'vllm', 'rccl-tests')
# Files from elsewhere in lab/ that a stand-in's tree gets (path in the tree: path under lab/), besides fake_build.py.
EXTRA_FILES = {'rccl-tests': tuple(('stubs/%s' % name, 'stubs/%s' % name) for name in ('gpusim.py', 'validsim.py', 'labhost.py'))}
TOOLCHAIN_DEFAULTS = os.path.join(ROOT, 'roles', 'toolchain', 'defaults', 'main.yml')
# The first commit's date; each later commit is one hour after the previous one.
EPOCH = 1767225600  # 2026-01-01T00:00:00Z


def _tree_files(name):
    """(relative path, absolute path) of a stand-in's files, with the shared fake_build.py at its top and its
    EXTRA_FILES."""
    root = os.path.join(SOURCES, name)
    files = [('fake_build.py', os.path.join(SOURCES, 'fake_build.py'))]
    files += [(rel, os.path.join(LAB_SRC, src)) for rel, src in EXTRA_FILES.get(name, ())]
    for top, _dirs, names in os.walk(root):
        for filename in names:
            path = os.path.join(top, filename)
            if '__pycache__' not in path:
                files.append((os.path.relpath(path, root), path))
    return sorted(files)


def recipe_hash():
    digest = hashlib.sha256()
    for name in COMPONENTS:
        for rel, path in _tree_files(name):
            digest.update(('%s/%s\0' % (name, rel)).encode())
            with open(path, 'rb') as handle:
                digest.update(handle.read())
    return digest.hexdigest()[:16]


def _git(work, args, when):
    env = lab_env({'GIT_AUTHOR_NAME': 'llmfleet lab', 'GIT_AUTHOR_EMAIL': 'lab@llmfleet.invalid',
                   'GIT_COMMITTER_NAME': 'llmfleet lab', 'GIT_COMMITTER_EMAIL': 'lab@llmfleet.invalid',
                   'GIT_AUTHOR_DATE': '@%d +0000' % when, 'GIT_COMMITTER_DATE': '@%d +0000' % when,
                   'GIT_CONFIG_NOSYSTEM': '1', 'HOME': LAB})
    return run(['git', '-C', work] + args, env=env)[1].strip()


def _publish(work, bare):
    """The work tree's main branch into the served bare repository (dumb HTTP needs update-server-info)."""
    if not os.path.isdir(bare):
        run(['git', 'init', '--quiet', '--bare', '--initial-branch=main', bare])
    run(['git', '-C', work, 'push', '--quiet', '--force', bare, 'main:main'])
    run(['git', '-C', bare, 'update-server-info'])
    run(['chmod', '-R', 'a+rX', bare])


def paths(name):
    return os.path.join(LAB, 'build-sources', name), os.path.join(REPO, 'sources', name + '.git')


def create(name):
    work, bare = paths(name)
    for path in (work, bare):
        if os.path.exists(path):
            shutil.rmtree(path)
    os.makedirs(work)
    for rel, path in _tree_files(name):
        dest = os.path.join(work, rel)
        if not os.path.isdir(os.path.dirname(dest)):
            os.makedirs(os.path.dirname(dest))
        shutil.copy2(path, dest)
    _git(work, ['init', '--quiet', '--initial-branch=main'], EPOCH)
    _git(work, ['add', '--all'], EPOCH)
    _git(work, ['commit', '--quiet', '-m', 'Stand-in %s sources' % name], EPOCH)
    _publish(work, bare)
    return _git(work, ['rev-parse', 'HEAD'], EPOCH)


def advance(name, build_seconds):
    work, bare = paths(name)
    count = int(_git(work, ['rev-list', '--count', 'HEAD'], EPOCH))
    when = EPOCH + 3600 * count
    with open(os.path.join(work, 'CHANGES'), 'a') as handle:
        handle.write('change %d\n' % count)
    seconds = os.path.join(work, 'BUILD_SECONDS')
    if build_seconds:
        with open(seconds, 'w') as handle:
            handle.write('%d\n' % build_seconds)
    elif os.path.exists(seconds):
        os.unlink(seconds)
    _git(work, ['add', '--all'], when)
    _git(work, ['commit', '--quiet', '-m', 'Change %d' % count], when)
    _publish(work, bare)
    return _git(work, ['rev-parse', 'HEAD'], when)


def sources(reset=False, advance_name=None, build_seconds=0):
    """Create the stand-in source repositories under .lab/repo/sources/ when their recipe changed (or reset),
    then add a commit to advance_name's main branch (its builds last build_seconds)."""
    root = os.path.join(REPO, 'sources')
    marker = os.path.join(root, '.recipe')
    want = recipe_hash()
    with step('sources: stand-in %s repositories (%s)' % (', '.join(COMPONENTS), want)):
        if read_stamp(marker) != want or reset:
            if not os.path.isdir(root):
                os.makedirs(root)
            for component in COMPONENTS:
                say('    %s.git at %s' % (component, create(component)))
            with open(marker, 'w') as handle:
                handle.write(want + '\n')
        else:
            say('    exist (recipe unchanged; --reset to go back to the first commits)')
        if advance_name:
            if advance_name not in COMPONENTS:
                raise LabError('--advance takes one of %s' % ', '.join(COMPONENTS))
            head = advance(advance_name, build_seconds)
            say('    %s.git main -> %s (builds take %d s)' % (advance_name, head, build_seconds))


def toolchain_pins():
    """toolchain_python_packages of the toolchain role's defaults (a plain YAML list of name==version)."""
    pins, inside = [], False
    with open(TOOLCHAIN_DEFAULTS) as handle:
        for line in handle:
            if re.match(r'^toolchain_python_packages:\s*$', line):
                inside = True
            elif inside and re.match(r'^\s+-\s+\S+==\S+\s*$', line):
                pins.append(line.strip()[1:].strip())
            elif inside and line.strip() and not line.startswith('#'):
                break
    return pins


def buildtools():
    """Download the toolchain role's pinned Python build tools as wheels into .lab/repo/buildtools/ (when the pins changed)."""
    pins = toolchain_pins()
    if not pins:
        raise LabError('no toolchain_python_packages found in %s' % TOOLCHAIN_DEFAULTS)
    root = os.path.join(REPO, 'buildtools')
    marker = os.path.join(root, '.pins')
    with step('buildtools: %s' % ' '.join(pins)):
        if (read_stamp(marker) or '').split() == pins:
            say('    exist (pins unchanged)')
            return
        partial = root + '.partial'
        if os.path.exists(partial):
            shutil.rmtree(partial)
        run([sys.executable, '-m', 'pip', 'download', '--disable-pip-version-check', '--progress-bar', 'off',
             '--only-binary=:all:', '--dest', partial] + pins)
        with open(os.path.join(partial, '.pins'), 'w') as handle:
            handle.write('\n'.join(pins) + '\n')
        run(['chmod', '-R', 'a+rX', partial])
        if os.path.exists(root):
            shutil.rmtree(root)
        os.rename(partial, root)
        say('    %d wheels' % len([name for name in os.listdir(root) if name.endswith('.whl')]))
