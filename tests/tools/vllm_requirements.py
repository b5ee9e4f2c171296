# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""vLLM's ROCm requirements resolved by pip's own resolver against what a build of the recipe makes, offline.

A ROCm build of vLLM installs ``requirements/rocm.txt`` (which includes ``common.txt``) next to wheels it built itself:
torch from ROCm's fork, Triton, torchvision, torchaudio, amdsmi, ... Whether pip can put the two together is decided by
version strings and pins alone: ``timm`` needs ``torchvision``; PyPI's torchvision pins one stock torch
(``torch==2.13.0``); a source-built torch is ``2.13.0+git733fca1`` (which that pin accepts: PEP 440 ignores a local
label, so PyPI's CUDA torchvision would be taken, and breaks at import) or, from a development branch,
``2.13.0a0+git733fca1`` (which it refuses: the resolution fails). This tool makes that question testable here:

- every package of the release's requirements, and everything they pull in, is a metadata-only stand-in wheel made
  from a snapshot of PyPI's metadata (name, version, Requires-Dist, Requires-Python, captured online by ``capture``
  below and kept as a fixture), with the environment markers already evaluated for the recipe's Python on x86_64
  Linux (pip evaluates markers for the interpreter it runs under, which is not the recipe's);
- every package the build makes is a stand-in carrying the version string and Requires-Dist that component's own
  build writes (``BUILDS`` below says where each rule comes from), and vLLM's stand-in requires what vLLM's setup.py
  declares for ROCm (the lines of requirements/rocm.txt);
- pip resolves the built wheels as the engine_build role's wheelhouse step does (``pip install --dry-run --report``
  of the built wheels, with the stages installed in the build's venv as constraints), from the stand-ins only; then
  ``problems()`` judges the report: a built package taken from anywhere but the build, or a package from the index
  that is a binary extension of stock torch (it pins ``torch==``), is a problem.

What this cannot show: whether the built wheels work together at import (ABI, HIP kernels, symbols): only a build on a
ROCm builder and an import on a GPU node show that. And PyPI moves: the snapshot is PyPI as it was when captured
(``captured`` in the file); ``capture`` refreshes it.

Usage (online, by hand): ``.venv/bin/python tests/tools/vllm_requirements.py capture 0.32.0`` writes
``tests/unit/fixtures/vllm_requirements/<release>.json``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from urllib.parse import unquote, urlparse
from urllib.request import urlopen

import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.path.join(ROOT, '.collections') not in sys.path:
    sys.path.append(os.path.join(ROOT, '.collections'))
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.vllm_recipe import vllm_rocm_recipe  # noqa: E402 pylint: disable=wrong-import-position
from ansible_collections.llmfleet.rocm.plugins.module_utils._build_recipe import sources  # noqa: E402 pylint: disable=wrong-import-position

FIXTURES = os.path.join(ROOT, 'tests', 'unit', 'fixtures')
DOCKERFILES = os.path.join(FIXTURES, 'vllm_dockerfiles')
SNAPSHOTS = os.path.join(FIXTURES, 'vllm_requirements')
# The platform the recipe's wheels are for: vLLM's ROCm base images are Ubuntu 22.04 (glibc 2.35) on x86_64.
PLATFORM = 'manylinux_2_35_x86_64'
# pip (23.2) takes a --platform literally: every manylinux tag that glibc 2.35 runs is named.
PLATFORM_TAGS = ['manylinux_2_%d_x86_64' % minor for minor in range(35, 4, -1)] + [
    'manylinux2014_x86_64', 'manylinux2010_x86_64', 'manylinux1_x86_64']

# What each component's own build writes, without the version overrides vLLM's Dockerfile.rocm_base does not set
# (PYTORCH_BUILD_VERSION, BUILD_VERSION, PYTORCH_VERSION, TRITON_WHEEL_VERSION_SUFFIX): the distribution name, the
# version from <base> (the checkout's own version file) and the commit, and the Requires-Dist. Sources:
# - torch: ROCm/pytorch tools/generate_torch_version.py get_torch_version(): version.txt + '+git' + sha[:7] when
#   PYTORCH_BUILD_VERSION is unset; setup.py main(): install_requires (no triton unless
#   PYTORCH_EXTRA_INSTALL_REQUIREMENTS is set).
# - triton: setup.py: TRITON_VERSION + get_git_version_suffix(), '+git' + `git rev-parse --short=8 HEAD` unless the
#   checked-out branch starts with 'release' (a detached checkout of a commit is not); install_requires is only
#   importlib-metadata for Python < 3.10.
# - torchvision: setup.py get_version(): version.txt + '+' + sha[:7] unless BUILD_VERSION; get_requirements():
#   numpy, torch (pinned only when PYTORCH_VERSION is set), pillow >= 5.3.0, != 8.3.*.
# - torchaudio: the same scheme as torchvision (version.txt + '+' + sha[:7]); requires torch, unpinned.
# - amdsmi: the wheel of /opt/rocm/share/amd_smi: its version is ROCm's, with ROCm's build hash.
# - flash_attn: flash_attn/__init__.py __version__; requires torch and einops.
# - amd-aiter: setuptools-scm on the tag.
# vLLM's own published ROCm wheels, built by this Dockerfile.rocm_base (vLLM 0.29.0: torch-2.12.0+git6bbd260,
# triton-3.7.1+gitf0b55c07, torchvision-0.27.1+df56172, torchaudio-2.11.0+34c52a6, amdsmi-26.2.2+c2d9476115,
# flash_attn-2.8.3, amd_aiter-0.1.19), carry exactly these shapes.
BUILDS = {
    'torch': {'distribution': 'torch', 'version': '{base}+git{commit7}',
              'requires': ['filelock', 'typing-extensions>=4.10.0', 'setuptools ; python_version >= "3.12"',
                           'sympy>=1.13.3', 'networkx>=2.5.1', 'jinja2', 'fsspec>=0.8.5']},
    'triton': {'distribution': 'triton', 'version': '{base}+git{commit8}',
               'requires': ['importlib-metadata ; python_version < "3.10"']},
    'torchvision': {'distribution': 'torchvision', 'version': '{base}+{commit7}',
                    'requires': ['numpy', 'torch', 'pillow >= 5.3.0, != 8.3.*']},
    'torchaudio': {'distribution': 'torchaudio', 'version': '{base}+{commit7}', 'requires': ['torch']},
    'amdsmi': {'distribution': 'amdsmi', 'version': '{base}', 'requires': []},
    'flash_attention': {'distribution': 'flash-attn', 'version': '{base}', 'requires': ['torch', 'einops']},
    'aiter': {'distribution': 'amd-aiter', 'version': '{base}', 'requires': []},
}
# The engine_build role's component names, where they differ from the recipe's.
ROLE_NAMES = {'pytorch': 'torch'}
# Packages that are compiled against torch's C++ ABI: from an index, they are built against a stock torch.
TORCH_EXTENSIONS = frozenset(('torchvision', 'torchaudio', 'torchcodec', 'xformers', 'flash-attn', 'amd-aiter',
                              'pytorch-triton-rocm'))

_INLINE_COMMENT_RE = re.compile(r'\s+#.*$')
_EXTRA_RE = re.compile(r'''\bextra\s*==\s*["']([^"']+)["']''')


class ResolutionFailed(Exception):
    """pip could not resolve: carries pip's own ERROR lines."""

    def __init__(self, lines):
        super(ResolutionFailed, self).__init__('\n'.join(lines))
        self.lines = lines


def target_environment(python_version):
    """The marker environment of the recipe's Python (``3.12``) on x86_64 Linux."""
    full = python_version + '.0'
    return {'implementation_name': 'cpython', 'implementation_version': full, 'os_name': 'posix',
            'platform_machine': 'x86_64', 'platform_python_implementation': 'CPython', 'platform_release': '',
            'platform_system': 'Linux', 'platform_version': '', 'python_full_version': full,
            'python_version': python_version, 'sys_platform': 'linux', 'extra': ''}


def requirement_lines(directory, top='rocm.txt'):
    """The requirements vLLM's setup.py declares for ROCm (get_requirements: the lines of requirements/rocm.txt, ``-r``
    files followed, option, comment and blank lines left out; setuptools drops inline comments)."""
    lines = []
    with open(os.path.join(directory, top)) as handle:
        for line in handle.read().strip().split('\n'):
            if line.startswith('-r '):
                lines.extend(requirement_lines(directory, line.split()[1]))
            elif line.strip() and not line.startswith('--') and not line.startswith('#'):
                lines.append(_INLINE_COMMENT_RE.sub('', line).strip())
    return lines


def _bare(requirement):
    text = requirement.name
    if requirement.extras:
        text += '[%s]' % ','.join(sorted(requirement.extras))
    if requirement.url:
        return '%s @ %s' % (text, requirement.url)
    return text + str(requirement.specifier)


def flatten(line, environment, extras=()):
    """A requirement with its environment markers evaluated for ``environment``: [] when it does not apply, the bare
    requirement when it always does, one ``; extra == "x"`` line per extra (of ``extras``) under which it applies."""
    requirement = Requirement(line)
    if requirement.marker is None:
        return [_bare(requirement)]
    if requirement.marker.evaluate(dict(environment, extra='')):
        return [_bare(requirement)]
    wanted = set(canonicalize_name(extra) for extra in _EXTRA_RE.findall(str(requirement.marker)))
    return ['%s ; extra == "%s"' % (_bare(requirement), extra) for extra in sorted(set(extras) | wanted)
            if extra in set(canonicalize_name(e) for e in extras) and requirement.marker.evaluate(dict(environment, extra=extra))]


def write_wheel(directory, name, version, requires=(), requires_python=None, extras=()):
    """A metadata-only wheel (py3-none-any): what pip's resolver reads of a distribution, and nothing else."""
    stem = '%s-%s' % (re.sub(r'[-_.]+', '_', name), version)
    path = os.path.join(directory, stem + '-py3-none-any.whl')
    metadata = ['Metadata-Version: 2.1', 'Name: %s' % name, 'Version: %s' % version]
    if requires_python:
        metadata.append('Requires-Python: %s' % requires_python)
    metadata.extend('Provides-Extra: %s' % extra for extra in extras)
    metadata.extend('Requires-Dist: %s' % line for line in requires)
    with zipfile.ZipFile(path, 'w') as archive:
        archive.writestr(stem + '.dist-info/METADATA', '\n'.join(metadata) + '\n')
        archive.writestr(stem + '.dist-info/WHEEL', 'Wheel-Version: 1.0\nGenerator: llmfleet-standin\n'
                                                    'Root-Is-Purelib: true\nTag: py3-none-any\n')
        archive.writestr(stem + '.dist-info/RECORD', '')
    return path


def load_checkouts():
    with open(os.path.join(SNAPSHOTS, 'checkouts.yml')) as handle:
        return yaml.safe_load(handle)


def release_recipe(release):
    """The recipe of a vLLM release, read from its Dockerfiles (the fixtures) by the collection's reader."""
    texts = []
    for name in ('Dockerfile.rocm_base', 'Dockerfile.rocm'):
        with open(os.path.join(DOCKERFILES, release, name)) as handle:
            texts.append(handle.read())
    return vllm_rocm_recipe(*texts)


def recipe_build(recipe):
    """What a build of ``recipe`` makes as Python wheels besides vLLM: component -> ref (torch when the release builds it,
    and every component of BUILDS that the image's default target builds from git or from ROCm)."""
    build = {}
    if recipe['torch']['source'] == 'build':
        build['torch'] = recipe['torch']['ref']
    for name in BUILDS:
        entry = recipe['components'].get(name)
        if name == 'torch' or not entry or not entry.get('in_image'):
            continue
        if entry['source'] == 'build':
            build[name] = entry['ref']
        elif entry['source'] == 'rocm':
            build[name] = 'rocm-%s' % recipe['rocm_version']
    return build


def role_build(role_dir=None):
    """What the engine_build role builds with its defaults: component -> ref, read from its files (the components of
    _engine_build_recipe in vars/main.yml; a component is off when defaults/main.yml sets engine_build_<name> to false;
    its ref is engine_build_<name>_ref, or where that is "" the ref of the recipe table's entry in use, as the role's
    engine_build_sources filter takes it; amdsmi, built from the builder's ROCm, is rocm-<the recipe's ROCm>). vLLM
    itself is left out (it is the package whose requirements resolve), and so is triton_kernels (no wheel)."""
    role_dir = role_dir or os.path.join(ROOT, 'roles', 'engine_build')
    with open(os.path.join(role_dir, 'defaults', 'main.yml')) as handle:
        defaults = yaml.safe_load(handle)
    with open(os.path.join(role_dir, 'vars', 'main.yml')) as handle:
        variables = yaml.safe_load(handle)
    found = sources(defaults, variables['_engine_build_releases'])
    if found['problems']:
        raise ValueError(' '.join(found['problems']))
    build = {}
    for name, recipe in variables['_engine_build_recipe'].items():
        if name == 'vllm' or defaults.get('engine_build_%s' % name, True) is False or recipe.get('export'):
            # vLLM is what resolves; an export (triton_kernels) is a directory vLLM's build reads, not a wheel.
            continue
        if name not in found['components']:
            # A path component (amdsmi): built from the builder's ROCm, the recipe's release where the fleet runs it.
            build[ROLE_NAMES.get(name, name)] = 'rocm-%s' % found['rocm_version']
            continue
        ref = found['components'][name]['ref']
        if not isinstance(ref, str) or '{' in ref:
            raise ValueError('engine_build_%s_ref is %r: not a ref this reader can take literally' % (name, ref))
        build[ROLE_NAMES.get(name, name)] = ref
    return build


def checkouts_for(build, checkouts=None):
    """component -> {base, commit} for ``build`` (component -> ref) from the recorded checkouts."""
    checkouts = checkouts if checkouts is not None else load_checkouts()
    found = {}
    for component, ref in build.items():
        entry = checkouts.get(component, {}).get(ref)
        if entry is None:
            raise KeyError('no recorded version for %s at %s: add what its version file says there to '
                           'tests/unit/fixtures/vllm_requirements/checkouts.yml' % (component, ref))
        found[component] = entry
    return found


def load_snapshot(release):
    with open(os.path.join(SNAPSHOTS, release + '.json')) as handle:
        return json.load(handle)


def built_version(component, base, commit):
    """The version string a build of ``component`` writes, from its checkout's base version and commit."""
    return BUILDS[component]['version'].format(base=base, commit7=commit[:7], commit8=commit[:8])


def built_packages(components, checkouts, python_version):
    """Stand-in descriptions of what a build makes: ``components`` names (recipe names: torch, triton, torchvision,
    ...), ``checkouts`` name -> {base, commit} (what the checkout's version file says, and its commit)."""
    environment = target_environment(python_version)
    packages = []
    for component in components:
        if component not in BUILDS:
            raise KeyError('no build rule for component %r (known: %s)' % (component, ', '.join(sorted(BUILDS))))
        if component not in checkouts:
            raise KeyError('no recorded checkout (base version, commit) for %r: add it to the checkouts' % component)
        rule = BUILDS[component]
        checkout = checkouts[component]
        requires = []
        for line in checkout.get('requires', rule['requires']):
            requires.extend(flatten(line, environment))
        packages.append({'component': component, 'name': rule['distribution'],
                         'version': built_version(component, str(checkout['base']), str(checkout['commit'])),
                         'requires': requires})
    return packages


def vllm_package(version, lines, python_version):
    """vLLM's stand-in: ``lines`` (requirement_lines()) as its Requires-Dist, markers evaluated."""
    environment = target_environment(python_version)
    requires = []
    for line in lines:
        requires.extend(flatten(line, environment))
    return {'component': 'vllm', 'name': 'vllm', 'version': version, 'requires': requires}


def write_index(directory, snapshot):
    """A file:// simple index (PEP 503: simple/<project>/index.html) of stand-in wheels for every package version of
    ``snapshot``, markers evaluated for its Python. Returns the index URL. (A flat --find-links directory works too,
    but pip lists the whole directory for every project it looks up: several times slower.)"""
    environment = target_environment(snapshot['python_version'])
    root = os.path.join(directory, 'simple')
    for name, versions in snapshot['packages'].items():
        project = os.path.join(root, canonicalize_name(name))
        os.makedirs(project)
        links = []
        for entry in versions:
            extras = [canonicalize_name(extra) for extra in entry.get('provides_extra') or []]
            requires = []
            for line in entry.get('requires_dist') or []:
                requires.extend(flatten(line, environment, extras))
            path = write_wheel(project, name, entry['version'], requires, entry.get('requires_python'), extras)
            links.append('<a href="%s">%s</a>' % (os.path.basename(path).replace('+', '%2B'), os.path.basename(path)))
        with open(os.path.join(project, 'index.html'), 'w') as handle:
            handle.write('<!DOCTYPE html>\n<html><body>\n%s\n</body></html>\n' % '\n'.join(links))
    return 'file://' + root


def _pip_env():
    """pip with no configuration of this machine's (its find-links, index) and no network."""
    env = dict((key, value) for key, value in os.environ.items() if not key.startswith('PIP_'))
    env.update({'PIP_CONFIG_FILE': os.devnull, 'PIP_DISABLE_PIP_VERSION_CHECK': '1', 'PIP_NO_INPUT': '1',
                'PYTHONNOUSERSITE': '1', 'LC_ALL': 'C.UTF-8'})
    return env


def resolve(workdir, index, built, python_version, installed=('torch', 'triton')):
    """Resolve the built stand-ins as the engine_build role's wheelhouse step does: the built wheels named as files,
    the stages installed in the build's venv (``installed``) pinned by a constraints file, ``index`` (write_index()'s
    file:// URL, nothing else) for the rest. Returns pip's report; raises ResolutionFailed with pip's ERROR lines."""
    built_dir = os.path.join(workdir, 'built')
    os.makedirs(built_dir)
    paths = [write_wheel(built_dir, package['name'], package['version'], package['requires']) for package in built]
    constraints = os.path.join(workdir, 'constraints.txt')
    with open(constraints, 'w') as handle:
        handle.write(''.join('%s==%s\n' % (package['name'], package['version']) for package in built
                             if package['component'] in installed))
    report = os.path.join(workdir, 'report.json')
    argv = [sys.executable, '-m', 'pip', 'install', '--dry-run', '--quiet', '--target', os.path.join(workdir, 'target'),
            '--index-url', index, '--only-binary=:all:', '--python-version', python_version,
            '--constraint', constraints, '--report', report] + paths
    proc = subprocess.run(argv, env=_pip_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False, cwd=workdir)
    if proc.returncode != 0:
        lines = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
        raise ResolutionFailed([line for line in lines if line.startswith('ERROR')] or lines[-20:])
    with open(report) as handle:
        return json.load(handle)


def _torch_pin(requires):
    for line in requires or []:
        requirement = Requirement(line)
        if canonicalize_name(requirement.name) == 'torch' and requirement.marker is None:
            for spec in requirement.specifier:
                if spec.operator in ('==', '==='):
                    return str(requirement.specifier)
    return None


def problems(report, built):
    """What is wrong with a resolution of the built packages (an empty list: nothing)."""
    found = []
    built_names = dict((canonicalize_name(package['name']), package) for package in built)
    resolved = {}
    for item in report.get('install', []):
        metadata = item.get('metadata', {})
        url = unquote(urlparse(item.get('download_info', {}).get('url', '')).path)
        resolved[canonicalize_name(metadata.get('name', ''))] = (metadata, url)
    for name, package in sorted(built_names.items()):
        metadata, url = resolved.get(name, ({}, ''))
        if os.path.basename(os.path.dirname(url)) != 'built' or metadata.get('version') != package['version']:
            found.append('%s: the resolution takes %s %s from %s, not the build\'s %s'
                         % (name, name, metadata.get('version'), url or 'nowhere', package['version']))
    for name, (metadata, url) in sorted(resolved.items()):
        if name in built_names:
            continue
        pin = _torch_pin(metadata.get('requires_dist'))
        if pin or name in TORCH_EXTENSIONS:
            found.append('%s %s comes from the index (%s), a build against a stock torch%s, not the torch this '
                         'recipe builds: build %s from source with the recipe'
                         % (name, metadata.get('version'), os.path.basename(url),
                            ' (it requires torch%s)' % pin if pin else '', name))
    return found


def check(release, components, checkouts, python_version, vllm_version, workdir, index=None, extra_lines=()):
    """Resolve ``release``'s requirements with the build of ``components``; return (report or None, problems)."""
    snapshot = load_snapshot(release)
    if index is None:
        index = write_index(os.path.join(workdir, 'index'), snapshot)
    lines = requirement_lines(os.path.join(DOCKERFILES, release, 'requirements')) + list(extra_lines)
    built = built_packages(components, checkouts, python_version)
    built.append(vllm_package(vllm_version, lines, python_version))
    try:
        report = resolve(workdir, index, built, python_version)
    except ResolutionFailed as exc:
        return None, ['pip cannot resolve vLLM %s\'s requirements with this build: %s' % (release, line)
                      for line in exc.lines]
    return report, problems(report, built)


# -- capture (online) -------------------------------------------------------------------------------------------

def _pypi_versions(name, floor, env, python_version):
    """Every release of ``name`` since ``floor`` with a wheel for the recipe's platform: its metadata as pip reads it
    (one ``pip install --dry-run --no-deps --report`` a version: PyPI's JSON API lists the releases)."""
    with urlopen('https://pypi.org/pypi/%s/json' % name, timeout=60) as response:
        releases = json.load(response)['releases']
    found = {}
    for version in sorted(releases, key=Version):
        if Version(version) < Version(floor) or Version(version).is_prerelease or not releases[version]:
            continue
        work = tempfile.mkdtemp(prefix='vllm-requirements-')
        report = os.path.join(work, 'report.json')
        argv = [sys.executable, '-m', 'pip', 'install', '--dry-run', '--quiet', '--no-deps', '--target',
                os.path.join(work, 'target'), '--only-binary=:all:', '--python-version', python_version,
                '--report', report, '%s==%s' % (name, version)]
        for tag in PLATFORM_TAGS:
            argv[argv.index('--report'):argv.index('--report')] = ['--platform', tag]
        if subprocess.run(argv, env=env, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
            continue
        with open(report) as handle:
            metadata = json.load(handle)['install'][0]['metadata']
        found[version] = {'version': version, 'requires_dist': metadata.get('requires_dist') or [],
                          'requires_python': metadata.get('requires_python') or None,
                          'provides_extra': metadata.get('provides_extra') or []}
    return found


def capture(release, alternatives):
    """Resolve the release's requirements against PyPI with the built stand-ins, and keep every resolved package's
    metadata; add every release since a floor of the packages that would replace a built one (``alternatives``)."""
    recipe = release_recipe(release)
    build = recipe_build(recipe)
    python_version = recipe['python_version']
    environment = target_environment(python_version)
    work = tempfile.mkdtemp(prefix='vllm-requirements-')
    built = built_packages(list(build), checkouts_for(build), python_version)
    built_dir = os.path.join(work, 'built')
    os.makedirs(built_dir)
    paths = [write_wheel(built_dir, package['name'], package['version'], package['requires']) for package in built]
    lines = []
    for line in requirement_lines(os.path.join(DOCKERFILES, release, 'requirements')):
        lines.extend(flatten(line, environment))
    requirements = os.path.join(work, 'requirements.txt')
    with open(requirements, 'w') as handle:
        handle.write('\n'.join(lines) + '\n')
    report = os.path.join(work, 'report.json')
    argv = [sys.executable, '-m', 'pip', 'install', '--dry-run', '--quiet', '--target', os.path.join(work, 'target'),
            '--find-links', built_dir, '--only-binary=:all:', '--python-version', python_version,
            '--report', report, '-r', requirements] + paths
    for tag in PLATFORM_TAGS:
        argv[argv.index('--report'):argv.index('--report')] = ['--platform', tag]
    env = _pip_env()
    env['PIP_INDEX_URL'] = 'https://pypi.org/simple'
    if os.environ.get('PIP_CERT'):
        env['PIP_CERT'] = os.environ['PIP_CERT']
    subprocess.run(argv, env=env, check=True)
    with open(report) as handle:
        resolved = json.load(handle)['install']
    built_names = set(canonicalize_name(package['name']) for package in built)
    packages = {}
    for item in resolved:
        metadata = item['metadata']
        name = canonicalize_name(metadata['name'])
        if name in built_names:
            continue
        packages[name] = [{'version': metadata['version'], 'requires_dist': metadata.get('requires_dist') or [],
                           'requires_python': metadata.get('requires_python') or None,
                           'provides_extra': metadata.get('provides_extra') or []}]
    for name, floor in alternatives.items():
        versions = _pypi_versions(name, floor, env, python_version)
        current = dict((entry['version'], entry) for entry in packages.get(name, []))
        current.update(versions)
        packages[name] = [current[key] for key in sorted(current, key=Version)]
    snapshot = {
        'release': release, 'captured': time.strftime('%Y-%m-%d'), 'index': 'https://pypi.org/simple',
        'python_version': python_version, 'platform': PLATFORM,
        'how': ('pip %s: install --dry-run --report --only-binary=:all: --python-version %s --platform %s of '
                'requirements/rocm.txt (markers evaluated for Python %s) with stand-ins of the built packages (%s) '
                'first in line; plus every release since %s of %s (listed by PyPI\'s JSON API, metadata read by pip)'
                % (_pip_version(), python_version, PLATFORM, python_version,
                   ', '.join('%s %s' % (p['name'], p['version']) for p in built),
                   ', '.join('%s (%s)' % (n, f) for n, f in alternatives.items()),
                   ', '.join(alternatives))),
        'packages': dict(sorted(packages.items())),
    }
    path = os.path.join(SNAPSHOTS, release + '.json')
    with open(path, 'w') as handle:
        json.dump(snapshot, handle, indent=1, sort_keys=True)
        handle.write('\n')
    return path


def _pip_version():
    return subprocess.run([sys.executable, '-m', 'pip', '--version'], stdout=subprocess.PIPE, universal_newlines=True,
                          check=True).stdout.split()[1]


def closure_gaps(snapshot):
    """Requirement names reachable from the snapshot's packages (markers evaluated) that it has no version of, or no
    version satisfying one requirement: a snapshot with gaps would make pip fail for a reason PyPI does not have."""
    environment = target_environment(snapshot['python_version'])
    versions = dict((name, [Version(entry['version']) for entry in entries])
                    for name, entries in snapshot['packages'].items())
    gaps = []
    for name, entries in snapshot['packages'].items():
        for entry in entries:
            extras = entry.get('provides_extra') or []
            for line in entry.get('requires_dist') or []:
                for flat in flatten(line, environment, extras):
                    requirement = Requirement(flat)
                    if requirement.marker is not None:
                        continue
                    target = canonicalize_name(requirement.name)
                    if target in ('torch', 'triton', 'vllm'):
                        continue
                    have = versions.get(target, [])
                    spec = SpecifierSet(str(requirement.specifier))
                    if not any(spec.contains(version, prereleases=True) for version in have):
                        gaps.append('%s %s requires %s' % (name, entry['version'], flat))
    return gaps


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n', 1)[0])
    sub = parser.add_subparsers(dest='command', required=True)
    cap = sub.add_parser('capture', help='resolve a release\'s requirements against PyPI and keep the metadata')
    cap.add_argument('release')
    cap.add_argument('--alternative', action='append', default=[], metavar='NAME=FLOOR',
                     help='also keep every release of NAME since FLOOR (default: torchvision=0.17, torchaudio=2.2)')
    args = parser.parse_args(argv)
    alternatives = dict(item.split('=', 1) for item in args.alternative) or {'torchvision': '0.17', 'torchaudio': '2.2'}
    path = capture(args.release, alternatives)
    print(path)
    gaps = closure_gaps(load_snapshot(args.release))
    for gap in gaps:
        print('gap: %s' % gap)
    return 1 if gaps else 0


if __name__ == '__main__':
    sys.exit(main())
