# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The model the lab engine serves: .lab/repo/models/tiny-llama/ (+ tiny-llama.tar.gz, .sha256, and the
manifest tiny-llama.json): a random-init Llama with a BPE tokenizer trained on local text, made by
lab/engine/tiny_llama.py in a throwaway venv installed from the wheelhouse. Its key is the hash of the
script, the corpus files and the wheelhouse key.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import gzip
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time

from .common import LAB, LAB_SRC, REPO, human, run, say, sha256_file, step, write_file
from .wheelhouse import build as build_wheelhouse, wheelhouse_dir

MODEL_SCRIPT = os.path.join(LAB_SRC, 'engine', 'tiny_llama.py')
MODEL_NAME = 'tiny-llama'
MODELS = os.path.join(REPO, 'models')
# Packages the model builder needs in its throwaway venv (resolved inside the wheelhouse).
MODEL_BUILD_PACKAGES = ['torch', 'transformers', 'tokenizers', 'safetensors']


def dir_size(path):
    total = 0
    for dirpath, _dirs, names in os.walk(path):
        for name in names:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full):
                total += os.path.getsize(full)
    return total


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


def model_state():
    """'up to date', 'NEEDS BUILD (...)' for labctl status."""
    wheelhouse = wheelhouse_dir()
    if not wheelhouse:
        return 'NEEDS BUILD (labctl model; the wheelhouse first)'
    manifest_path = os.path.join(MODELS, MODEL_NAME + '.json')
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


def build():
    """Build the tiny Llama under .lab/repo/models/tiny-llama/ (+ .tar.gz) once per recipe, the wheelhouse first."""
    wheelhouse = build_wheelhouse()
    key = model_key(os.path.basename(wheelhouse))
    final = os.path.join(MODELS, MODEL_NAME)
    archive = final + '.tar.gz'
    manifest_path = final + '.json'
    with step('model: %s %s' % (MODEL_NAME, key)):
        if os.path.exists(manifest_path) and os.path.isdir(final) and os.path.exists(archive):
            with open(manifest_path) as handle:
                manifest = json.load(handle)
            if manifest.get('key') == key:
                say('    exists (recipe unchanged): %d parameters, %s' % (manifest['parameters'], human(manifest['archive_bytes'])))
                return final
        os.makedirs(MODELS, exist_ok=True)
        work = tempfile.mkdtemp(prefix='model-', dir=LAB)
        try:
            venv = os.path.join(work, 'venv')
            start = time.time()
            say('    throwaway venv from the wheelhouse (--no-index): %s' % ' '.join(MODEL_BUILD_PACKAGES))
            run([sys.executable, '-m', 'venv', venv])
            # --no-compile: the venv runs one script once, which compiles only what it imports; pip would compile
            # every module of torch and transformers first (most of the venv's time on two cores).
            run([os.path.join(venv, 'bin', 'pip'), 'install', '--no-index', '--find-links', wheelhouse,
                 '--no-cache-dir', '--no-compile', '--progress-bar', 'off'] + MODEL_BUILD_PACKAGES, env=clean_env())
            say('    venv ready in %.0f s' % (time.time() - start))
            out = os.path.join(work, MODEL_NAME)
            start = time.time()
            env = clean_env()
            env.update({'HF_HUB_OFFLINE': '1', 'TRANSFORMERS_OFFLINE': '1', 'TOKENIZERS_PARALLELISM': 'false',
                        'HF_HOME': os.path.join(work, 'hf'), 'PYTHONHASHSEED': '0', 'OMP_NUM_THREADS': '1'})
            _rc, output = run([os.path.join(venv, 'bin', 'python'), MODEL_SCRIPT, '--out', out] + corpus_files(), env=env)
            summary = json.loads(output.strip().splitlines()[-1])
            say('    trained the tokenizer (%d tokens) and saved the model (%d parameters) in %.0f s' % (
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
            write_file(archive + '.sha256', '%s  %s\n' % (digest, os.path.basename(archive)))
            write_file(manifest_path, json.dumps(manifest, indent=2, sort_keys=True) + '\n')
            say('    %s (%s), %s (%s, sha256 %s)' % (final, human(dir_size(final)), archive, human(manifest['archive_bytes']), digest[:16]))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return final
