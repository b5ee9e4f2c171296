# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks of the engine role (``input_problems('engine')``), the lock's pins included, and the warnings of the
prebuilt path (``engine_wheels_warnings``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.module_utils import _build_toolchain
from ansible_collections.llmfleet.rocm.plugins.module_utils._wheel_index import lock_entries, lock_problems, rocm_label_warnings
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import (
    RuleSet, as_int, is_absolute_path, is_http_url, mirror_only_rule, python_path_rule, show, supported_system_rule,
    toolchain_plan_rule)

_VERSION_RE = re.compile(r'^[0-9][0-9A-Za-z.+_-]*\Z')
_MODEL_NAME_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*\Z')
_CHECKSUM_RE = re.compile(r'^[a-z0-9]+:.+')
_DIRS = (('engine_base_dir', '/opt/llmfleet/engines'), ('engine_models_dir', '/var/lib/llmfleet/models'))
_SOURCES = ('build', 'wheels')
# How a lock for the prebuilt path is made (README, "The prebuilt path").
_LOCK_HOWTO = ('uv pip compile --generate-hashes --python-version 3.12 --python-platform x86_64-manylinux_2_35'
               ' --index-strategy unsafe-best-match --extra-index-url https://wheels.vllm.ai/rocm/<version>/<variant>/'
               ' requirements.in')


def lock_pins(text):
    """A lock (pip requirements format) -> the requirement of each line, without what follows its first space
    (hashes, markers, comments): ``name==version`` for a pinned line."""
    return [line.strip().split(' ', 1)[0] for line in text.splitlines()]


def unpinned(packages, text):
    """The entries of engine_packages the lock does not pin: a ``name==version`` must be a line of the lock as it
    is; a bare name (a source build, whose version carries its commit) only needs its name there (any case)."""
    pins = lock_pins(text)
    names = [pin.split('==', 1)[0].lower() for pin in pins]
    found = []
    for package in packages:
        package = str(package)
        missing = package if '==' in package and package not in pins else None
        if '==' not in package and package.lower() not in names:
            missing = package.lower()
        if missing is not None and missing not in found:
            found.append(missing)
    return found


def _lock_read(lock):
    """(text, None) from the lock's text or from the result of reading it (ansible.builtin.uri); (None, why) when
    it could not be read."""
    if isinstance(lock, str):
        return lock, None
    if not isinstance(lock, dict) or lock.get('skipped'):
        return None, 'it was not read'
    if lock.get('status') == 200 and isinstance(lock.get('content'), str):
        return lock['content'], None
    return None, lock.get('msg') or 'HTTP status %s' % lock.get('status', 'none')


RULES = RuleSet('engine')
supported_system_rule(RULES)
mirror_only_rule(RULES, ['engine_wheelhouse_url', 'engine_wheels_index_urls', 'engine_requirements_file', 'engine_model_source',
                         'engine_model_checksum'])


def _wheels(values):
    return values.get('engine_source') == 'wheels'


@RULES.rule('engine-source')
def _source(values, ctx):
    if values.get('engine_source') not in _SOURCES:
        return ('engine_source %s is neither build (the wheelhouse of the build stage, engine_wheelhouse_url) nor wheels'
                ' (published wheels from an index, engine_wheels_index_urls, with a hashed lock).' % show(values.get('engine_source')))
    return None


@RULES.rule('engine-version-format')
def _version(values, ctx):
    version = values['engine_version']
    if not (isinstance(version, str) and _VERSION_RE.match(version)):
        return 'engine_version %s is not a version such as 0.32.0 (letters, digits and . + _ - only).' % show(version)
    return None


@RULES.rule('engine-wheelhouse-url')
def _wheelhouse(values, ctx):
    if values.get('engine_source') == 'build' and not is_http_url(values['engine_wheelhouse_url']):
        return ('engine_wheelhouse_url %s is not an http(s) URL: set it to the wheelhouse the build stage publishes'
                ' (the lab: http://llmfleet-lab-repo:8080/wheels/latest/).' % show(values['engine_wheelhouse_url']))
    return None


@RULES.rule('engine-wheels-index-urls')
def _index_urls(values, ctx):
    if not _wheels(values):
        return None
    urls = values.get('engine_wheels_index_urls')
    if not isinstance(urls, list) or not urls or not all(is_http_url(url) for url in urls):
        return ('engine_source is wheels and engine_wheels_index_urls is %s: give the http(s) URLs of the indexes pip'
                ' takes the locked files from, such as [https://wheels.vllm.ai/rocm/<version>/<variant>/,'
                ' https://pypi.org/simple/], or the fleet\'s mirror (llmfleet_mirror_url, its wheels/engine-index/).'
                % show(urls))
    return None


@RULES.rule('engine-wheels-lock-required')
def _wheels_lock(values, ctx):
    if _wheels(values) and not values['engine_requirements_file']:
        return ('engine_source is wheels and engine_requirements_file is empty: the prebuilt path installs a lock, every'
                ' file pinned by its sha256 (the collection ships none for real releases). Make one, for example %s'
                ' (requirements.in: vllm==<version>+rocm<digits>), put it beside the index or on the mirror, and name'
                ' it in engine_requirements_file.' % _LOCK_HOWTO)
    return None


@RULES.rule('engine-packages-empty')
def _packages(values, ctx):
    if not values['engine_packages'] and not values['engine_requirements_file']:
        return ('engine_packages is empty: name what pip installs, for example [vllm==%s] (or set engine_requirements_file).'
                % values['engine_version'])
    return None


@RULES.rule('engine-keep-versions')
def _keep(values, ctx):
    number = as_int(values['engine_keep_versions'])
    if number is None or number < 1:
        return 'engine_keep_versions is %s: it must be 1 or more.' % show(values['engine_keep_versions'])
    return None


@RULES.rule('engine-dirs-absolute')
def _dirs(values, ctx):
    return ['%s %s must be an absolute path, such as %s.' % (name, show(values[name]), example)
            for name, example in _DIRS if not is_absolute_path(values[name])]


@RULES.rule('engine-model-name')
def _model_name(values, ctx):
    name = values['engine_model_name']
    if name and not (isinstance(name, str) and _MODEL_NAME_RE.match(name)):
        return 'engine_model_name %s is not a directory name (letters, digits, . _ -).' % show(name)
    return None


@RULES.rule('engine-model-source')
def _model_source(values, ctx):
    if ctx.get('model_kind') == 'unknown':
        return ('engine_model_source %s is neither an http(s) URL of a .tar.gz/.tgz, nor an absolute directory on the'
                ' controller, nor a hub id such as organisation/name.' % show(values['engine_model_source']))
    return None


@RULES.rule('engine-model-hub-without-route')
def _model_hub_mirrored(values, ctx):
    mirror = (ctx.get('platform') or {}).get('mirror_url')
    if mirror and ctx.get('model_kind') == 'hub':
        return ('engine_model_source %s is a model hub id, but the nodes reach nothing but the fleet\'s mirror %s'
                ' (llmfleet_mirror_url): mirror the model as an archive (mirror_models) and give its URL there, such as'
                ' %s/models/<name>.tar.gz with engine_model_checksum.' % (show(values['engine_model_source']), show(mirror), mirror))
    return None


@RULES.rule('engine-model-checksum')
def _model_checksum(values, ctx):
    checksum = values['engine_model_checksum']
    if checksum and not (isinstance(checksum, str) and _CHECKSUM_RE.match(checksum)):
        return ('engine_model_checksum %s is not <algorithm>:<hex or URL>, for example sha256:<hex> or'
                ' sha256:<URL of a sha256sum file>.' % show(checksum))
    return None


@RULES.rule('engine-model-directory-missing')
def _model_directory(values, ctx):
    if ctx.get('model_kind') == 'directory' and not ctx.get('model_source_is_directory'):
        return ('engine_model_source %s is not a directory on the controller: copy the model there, or give the URL'
                ' of an archive or a hub id.' % show(values['engine_model_source']))
    return None


def _lock_url(ctx):
    """The lock's URL when there is one to judge (an invalid wheelhouse URL has its own message)."""
    url = ctx.get('lock_url') or ''
    return url if is_http_url(url) else ''


@RULES.rule('engine-lock-unreadable')
def _lock_unreadable(values, ctx):
    url = _lock_url(ctx)
    if not url:
        return None
    text, why = _lock_read(ctx.get('lock'))
    if text is None:
        return ('The lock %s (engine_requirements_file %s) could not be read (%s): check engine_requirements_file and'
                ' engine_wheelhouse_url (the wheelhouse must hold the lock).' % (url, show(values['engine_requirements_file']), why))
    return None


@RULES.rule('engine-lock-unpinned')
def _lock_unpinned(values, ctx):
    url = _lock_url(ctx)
    text = _lock_read(ctx.get('lock'))[0] if url else None
    if text is None:
        return None
    missing = unpinned(values['engine_packages'], text)
    if missing:
        return ('%s does not pin %s (engine_packages). Point engine_wheelhouse_url at the wheelhouse built for'
                ' engine_version %s, or correct engine_packages.' % (url, ', '.join(missing), values['engine_version']))
    return None


@RULES.rule('engine-wheels-lock-hashes')
def _wheels_lock_hashes(values, ctx):
    url = _lock_url(ctx)
    text = _lock_read(ctx.get('lock'))[0] if url and _wheels(values) else None
    if text is None:
        return None
    problems = lock_problems(text)
    if problems:
        return ('%s cannot be installed with --no-deps --require-hashes (engine_source: wheels): %s. Every line must be'
                ' <name>==<version> --hash=sha256:<hex>, as uv pip compile --generate-hashes writes it.' % (url, '; '.join(problems)))
    return None


# The Python vLLM's published ROCm wheels (and the torch they pin) are built for: cp312.
WHEELS_PYTHON = (3, 12)


def _python_version(values, ctx):
    """(the venv's Python version as (major, minor), which Python that is): the answer of a Python given by path, else
    the per-system table's choice; None for the version when neither is known."""
    read = ctx.get('python_read')
    if isinstance(read, dict) and not read.get('skipped') and 'rc' in read:
        found = _build_toolchain.version_tuple(str(read.get('stdout') or '').strip()) if read.get('rc') == 0 else None
        return found, 'engine_python %s' % values.get('engine_python')
    plan = ctx.get('python_plan') if isinstance(ctx.get('python_plan'), dict) else {}
    python = plan.get('python') or {}
    return _build_toolchain.version_tuple(python.get('version')), 'the per-system table\'s %s' % python.get('path')


python_path_rule(RULES, 'engine_python', 'the per-system table\'s Python, which the role installs')
# engine_python "": the system cannot give the release's Python.
toolchain_plan_rule(RULES, 'engine-python-unavailable', 'python_plan')


@RULES.rule('engine-python-unreadable')
def _python_unreadable(values, ctx):
    read = ctx.get('python_read')
    if not isinstance(read, dict) or read.get('skipped') or 'rc' not in read or read.get('rc') == 0:
        return None
    why = ' '.join(str(read.get(key) or '').strip() for key in ('stderr', 'msg')).strip() or 'exit status %s' % read.get('rc')
    return ('engine_python %s does not run on this node (%s): install it there, or leave engine_python "" for the'
            ' per-system table\'s Python, which the role installs.' % (show(values.get('engine_python')), why))


@RULES.rule('engine-python-range')
def _python_range(values, ctx):
    """A Python given by path against the vLLM release's requires-python (the table's choice is inside it)."""
    read = ctx.get('python_read')
    if not isinstance(read, dict) or read.get('skipped') or read.get('rc') != 0 or values.get('engine_name', 'vllm') != 'vllm':
        return None
    found = _build_toolchain.version_tuple(str(read.get('stdout') or '').strip())
    bounds = _build_toolchain.matrix.vllm_python_range(values.get('engine_version'))
    if found is None or not bounds or bounds[0] <= found < bounds[1]:
        return None
    return ('engine_python %s is Python %d.%d, outside vLLM %s\'s requires-python %s: the venv would not import vLLM. Point'
            ' engine_python at a Python inside it, or leave it "" for the per-system table\'s.'
            % ((show(values.get('engine_python')),) + found + (values.get('engine_version'), _build_toolchain.matrix.format_range(bounds))))


def _wheels_fix(platform):
    """What a system can do for a Python 3.12 venv (the per-system table)."""
    key = (platform or {}).get('key')
    name = (platform or {}).get('name') or key
    plan = _build_toolchain.toolchain(key, python_version='%d.%d' % WHEELS_PYTHON, who='engine')
    if plan['problems']:
        return ('%s\'s archive has no Python 3.12: set engine_python to a Python 3.12 you provide (such as a relocatable'
                ' CPython build unpacked from the fleet\'s mirror), or build the engine here (engine_source: build), whose'
                ' wheels are built for the nodes\' own Python.' % name)
    source = plan['python']['source']
    return ('leave engine_python "" and set engine_python_version: "3.12" (%s gives it%s).'
            % (name, (' from the %s PPA' % source) if source else ' from its archive'))


@RULES.rule('engine-wheels-python')
def _wheels_python(values, ctx):
    """engine_source wheels: vLLM's published ROCm wheels (a vllm pinned with a +rocm label) are cp312."""
    if not _wheels(values) or not _lock_url(ctx):
        return None
    text = _lock_read(ctx.get('lock'))[0]
    rocm = [entry for entry in (lock_entries(text) if text is not None else [])
            if entry.get('name') == 'vllm' and '+rocm' in str(entry.get('version') or '')]
    found, where = _python_version(values, ctx)
    if not rocm or found is None or found == WHEELS_PYTHON:
        return None
    return ('engine_source is wheels and the lock pins vllm==%s, a published ROCm wheel built (with the torch it pins) for'
            ' CPython %d.%d, but the venv\'s Python would be %d.%d (%s): pip finds no wheel for it. Fix: %s'
            % ((rocm[0]['version'],) + WHEELS_PYTHON + found + (where, _wheels_fix(ctx.get('platform')))))


def engine_input_problems(values, platform, model_kind='none', model_source_is_directory=False, lock_url='', lock=None,
                          python_plan=None, python_read=None):
    """The engine role's variables and its lock -> a list of messages (empty when they are fine).

    ``model_kind`` is the form of engine_model_source as the role reads it (archive, directory, hub, none,
    unknown), ``model_source_is_directory`` whether it is a directory on the controller, ``lock_url`` the
    URL of the lock ("" without engine_requirements_file) and ``lock`` its text or the result of reading it.
    ``python_plan``: where the system takes the venv's Python (the build_toolchain filter, who=engine);
    ``python_read``: the result of asking a Python given by path its version (skipped for "").
    """
    return RULES.messages(values, {
        'platform': platform, 'model_kind': model_kind, 'model_source_is_directory': model_source_is_directory,
        'lock_url': lock_url or '', 'lock': lock, 'python_plan': python_plan, 'python_read': python_read,
    })


def engine_wheels_warnings(lock, rocm_version=''):
    """What the prebuilt path warns about (nothing stops): vLLM wheels whose +rocm label is another ROCm release than the
    node's. ``lock``: the lock's text or the result of reading it; ``rocm_version``: the node's ROCm ("" when unknown)."""
    text = _lock_read(lock)[0]
    return rocm_label_warnings(lock_entries(text), rocm_version) if text is not None else []
