# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reader of vLLM's ROCm Dockerfiles: what one vLLM release builds or installs for its ROCm image.

Every vLLM release carries two Dockerfiles for ROCm. ``docker/Dockerfile.rocm_base`` makes the base image: ROCm
(a ROCm image, or the ROCm SDK as Python wheels), Python, PyTorch (built from ROCm's fork, or installed as wheels)
and the GPU libraries vLLM uses (Triton, AITER, flash-attention, MORI, amdsmi, ...). ``docker/Dockerfile.rocm``
builds vLLM on that base, with the sources and extras of its own stages (triton_kernels, NIXL and UCX, LMCache,
DeepEP). Each release pins its components with ``ARG`` defaults: ``<NAME>_REPO`` beside ``<NAME>_BRANCH``,
``_REF`` or ``_COMMIT`` for a git source, ``<NAME>_VERSION`` for a wheel.

``vllm_rocm_recipe`` reads both texts (``ARG`` and ``ENV`` values, the stages and which of them the default
target reaches, git checkouts, ``pip install`` lines with their pins and index URLs) and returns the recipe as
data. A text it cannot read raises ``RecipeError`` (a ``ValueError``) that names what is missing. Pure functions;
no Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import shlex

BASE_LABEL = 'Dockerfile.rocm_base'
VLLM_LABEL = 'Dockerfile.rocm'

# Docker's instruction keywords (case-insensitive in a Dockerfile).
_KEYWORDS = frozenset((
    'ADD', 'ARG', 'CMD', 'COPY', 'ENTRYPOINT', 'ENV', 'EXPOSE', 'FROM', 'HEALTHCHECK', 'LABEL', 'MAINTAINER',
    'ONBUILD', 'RUN', 'SHELL', 'STOPSIGNAL', 'USER', 'VOLUME', 'WORKDIR',
))

_CONTINUATION_RE = re.compile(r'\\\s*$')
_INSTRUCTION_RE = re.compile(r'^(?P<keyword>[A-Za-z]+)(?:\s+(?P<args>.*))?$', re.S)
_HEREDOC_RE = re.compile(r'<<(?P<strip>-?)(?P<quote>["\']?)(?P<word>[A-Za-z_][A-Za-z0-9_]*)(?P=quote)')
_FROM_RE = re.compile(r'^(?:--\S+\s+)*(?P<image>\S+)(?:\s+[Aa][Ss]\s+(?P<name>\S+))?$')
# ${NAME}, ${NAME:-word}, ${NAME:+word} and $NAME, as Docker expands them in ARG, ENV and FROM.
_VAR_RE = re.compile(r'\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::(?P<op>[-+])(?P<word>[^}]*))?\}'
                     r'|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))')
# A stage used by another one: COPY --from=<stage>, RUN --mount=...,from=<stage>,...
_FROM_STAGE_RE = re.compile(r'(?:--|[,=])from=(?P<stage>[^\s,]+)')
_GIT_FETCH_RE = re.compile(r'\bgit\s+(?:clone|checkout|fetch)\b')
_PIP_INSTALL_RE = re.compile(r'(?:^|[\s;&|(])(?:python[0-9.]*\s+-m\s+)?(?:uv\s+)?pip[0-9.]*\s+install\b'
                             r'(?P<args>[^;&|\n]*)')
_REQUIREMENT_RE = re.compile(r'^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)(?:\[[^\]]*\])?'
                             r'(?P<spec>(?:===|==|!=|~=|<=|>=|<|>)[^\s;]+)$')
_INDEX_URL_RE = re.compile(r'(?:^|\s)--index-url(?:=|\s+)(?P<url>\S+)')
_EXTRA_INDEX_URL_RE = re.compile(r'(?:^|\s)--extra-index-url(?:=|\s+)(?P<url>\S+)')
_PPA_RE = re.compile(r'\badd-apt-repository\s+(?:-\S+\s+)*(?P<ppa>ppa:[^\s;&|]+)')
_GCC_SELECT_RE = re.compile(r'\bupdate-alternatives\s+--install\s+/usr/bin/gcc\s+gcc\s+'
                            r'/usr/bin/gcc-(?P<version>[0-9]+)\b')
_AMDSMI_RE = re.compile(r'\bcd\s+(?P<path>["\']?[^\s&;|]*/amd_smi["\']?)\s*&&\s*pip[0-9.]*\s+(?:wheel|install)\s+\.')
_DEVICE_EXTRA_RE = re.compile(r'(?P<package>[A-Za-z0-9_.-]+)\[device-\$\{?arch\}?\]')
_ROCM_SDK_RE = re.compile(r'(?P<package>rocm\[(?P<extras>[^\]$]+)\])')
_ROCM_TAG_RE = re.compile(r'^(?P<version>[0-9]+\.[0-9]+(?:\.[0-9]+)?)(?:-(?P<variant>[A-Za-z0-9_.-]+))?$')
_OS_RE = re.compile(r'(?:^|[/-])(?P<distribution>ubuntu|debian)[-:](?P<version>[0-9]+(?:\.[0-9]+)?)')
_PYTHON_VERSION_RE = re.compile(r'^3\.[0-9]+$')
_ARG_PREFIX_RE = re.compile(r'^(?P<prefix>[A-Z][A-Z0-9_]*?)_REPO$')
_CODELOAD_RE = re.compile(r'^https://codeload\.github\.com/(?P<owner>[^/\s]+)/(?P<name>[^/\s]+)/tar\.gz/')
_PATCH_ARG_RE = re.compile(r'^ROCPROFILER_SDK_PR_[0-9]+$')

# pip options that take the next word as their value.
_PIP_VALUE_OPTIONS = frozenset((
    '-r', '--requirement', '-c', '--constraint', '-i', '--index-url', '--extra-index-url', '-f', '--find-links',
    '-t', '--target', '--prefix', '--root', '-e', '--editable', '--trusted-host', '--platform', '--python-version',
    '--implementation', '--abi', '--only-binary', '--no-binary', '--progress-bar', '--cache-dir', '--log', '--src',
    '--upgrade-strategy', '--config-settings', '-C',
))

_REF_SUFFIXES = ('_BRANCH', '_REF', '_COMMIT')

# Components read from <PREFIX>_REPO and its ref ARG (and <PREFIX>_VERSION where a release sets one); the wheel
# package and version ARG where a release installs the component as a wheel instead. Any other <PREFIX>_REPO
# pair in the files is reported as well, under its prefix in lower case.
_COMPONENTS = (
    ('triton', 'TRITON', 'triton', 'TRITON_VERSION'),
    ('torchvision', 'PYTORCH_VISION', 'torchvision', 'TORCHVISION_VERSION'),
    ('torchaudio', 'PYTORCH_AUDIO', 'torchaudio', 'TORCHAUDIO_VERSION'),
    ('flash_attention', 'FA', None, None),
    ('aiter', 'AITER', None, None),
    ('mori', 'MORI', None, None),
    ('nixl', 'NIXL', None, None),
    ('ucx', 'UCX', None, None),
    ('lmcache', 'LMCACHE', None, None),
    ('rocshmem', 'ROCSHMEM', None, None),
    ('deepep', 'DEEPEP', None, None),
)
# Prefixes that are not components: vLLM itself (its own source), PyTorch (``torch``), the ROCm monorepo
# (``rocm_runtime``, ``rocprofiler_sdk``).
_NOT_COMPONENTS = frozenset(('VLLM', 'PYTORCH', 'ROCM_SYSTEMS'))
# Parts of ROCm rebuilt from the ROCm monorepo (ROCM_SYSTEMS_REPO) at a commit.
_ROCM_SYSTEMS_COMPONENTS = (
    ('rocm_runtime', 'ROCM_RUNTIME_COMMIT'),
    ('rocprofiler_sdk', 'ROCPROFILER_SDK_COMMIT'),
)
_TRITON_KERNELS_ARG = 'ROCM_TRITON_KERNELS_COMMIT'

NOTE_TRITON_KERNELS = ('Dockerfile.rocm pins no triton_kernels source (no ARG %s): vLLM\'s build fetches it as '
                       'cmake/external_projects/triton_kernels.cmake says, unless TRITON_KERNELS_SRC_DIR points at '
                       'a checkout.' % _TRITON_KERNELS_ARG)
NOTE_TORCH_VERSION = ('The Dockerfiles do not set PYTORCH_BUILD_VERSION: the version of the built torch wheel is '
                      'what the fork\'s version.txt and its git commit give.')


class RecipeError(ValueError):
    """A text the reader cannot use: not a Dockerfile, or a Dockerfile without something the recipe needs."""


class _Dockerfile(object):
    """One parsed Dockerfile: ARG and ENV values, and its stages in order."""

    def __init__(self, label):
        self.label = label
        self.args = {}
        self.env = {}
        self.stages = []

    def values(self):
        """ARG defaults and ENV values in one mapping (ENV wins, as in Docker)."""
        values = dict(self.args)
        values.update(self.env)
        return values

    def stage(self, name):
        for stage in self.stages:
            if stage['name'] == name:
                return stage
        return None

    def instructions(self, keywords=('RUN', 'ADD')):
        """(stage, keyword, args, line) of every instruction with one of ``keywords``, in file order."""
        for stage in self.stages:
            for keyword, args, line in stage['instructions']:
                if keyword in keywords:
                    yield stage, keyword, args, line


def _expand(text, values):
    """Expand ${NAME}, ${NAME:-word}, ${NAME:+word} and $NAME from ``values``; unknown names stay as written."""
    def replace(match):
        name = match.group('braced') or match.group('bare')
        value = values.get(name)
        op = match.group('op')
        if op == '-':
            return value if value else _expand(match.group('word'), values)
        if op == '+':
            return _expand(match.group('word'), values) if value else ''
        return match.group(0) if value is None else value
    return _VAR_RE.sub(replace, text)


def _words(args, label, line):
    """Split an ARG or ENV instruction into words as a shell does, up to a trailing comment."""
    try:
        words = shlex.split(args, comments=False, posix=True)
    except ValueError as exc:
        raise RecipeError('%s line %d: cannot split %r into words (%s)' % (label, line, args, exc))
    for index, word in enumerate(words):
        if word.startswith('#'):
            return words[:index]
    return words


def _logical_lines(text, label):
    """(line number, instruction text) of every instruction: continuation lines joined, comments left out, and a
    heredoc's body kept after its instruction."""
    lines = text.splitlines()
    count = len(lines)
    index = 0
    while index < count:
        first = index + 1
        line = lines[index]
        index += 1
        if not line.strip() or line.strip().startswith('#'):
            continue
        parts = []
        while True:
            match = _CONTINUATION_RE.search(line)
            if not match:
                parts.append(line.strip())
                break
            parts.append(line[:match.start()].strip())
            # Docker skips empty and comment lines inside a continued instruction.
            while index < count and (not lines[index].strip() or lines[index].strip().startswith('#')):
                index += 1
            if index >= count:
                break
            line = lines[index]
            index += 1
        logical = ' '.join(part for part in parts if part)
        heredoc = _HEREDOC_RE.search(logical)
        if heredoc and logical.split(None, 1)[0].upper() in ('RUN', 'COPY', 'ADD'):
            body = []
            while index < count and lines[index].strip() != heredoc.group('word'):
                body.append(lines[index])
                index += 1
            if index >= count:
                raise RecipeError('%s line %d: the heredoc %s is never closed' % (label, first, heredoc.group('word')))
            index += 1
            logical = '\n'.join([logical] + body)
        yield first, logical


def parse_dockerfile(text, label):
    """The text of a Dockerfile -> its ARG defaults, ENV values and stages.

    ARG defaults and ENV values are kept once per name (the first the file gives), expanded with the values known
    at that point. Each stage is ``{name, index, line, image, parent, instructions, uses}``: ``image`` its FROM
    (expanded with the ARG defaults before the first FROM), ``parent`` the stage it starts from or None,
    ``uses`` the stages it takes files from (``COPY --from``, ``RUN --mount=...,from=``).
    """
    if not isinstance(text, str):
        raise RecipeError('%s: expected the text of docker/%s, got %s' % (label, label, type(text).__name__))
    if not text.strip():
        raise RecipeError('%s: the text is empty (expected the content of docker/%s)' % (label, label))
    dockerfile = _Dockerfile(label)
    global_args = {}
    stage = None
    for line, logical in _logical_lines(text, label):
        match = _INSTRUCTION_RE.match(logical)
        keyword = match.group('keyword').upper() if match else None
        if keyword not in _KEYWORDS:
            raise RecipeError('%s line %d: not a Dockerfile instruction: %r (expected the content of docker/%s)'
                              % (label, line, logical.split('\n', 1)[0][:80], label))
        args = (match.group('args') or '').strip()
        if keyword == 'FROM':
            found = _FROM_RE.match(args)
            if not found:
                raise RecipeError('%s line %d: cannot read the FROM instruction %r' % (label, line, args))
            image = _expand(found.group('image'), global_args)
            parent = image if dockerfile.stage(image) else None
            stage = {'name': found.group('name') or str(len(dockerfile.stages)), 'index': len(dockerfile.stages),
                     'line': line, 'image': image, 'parent': parent, 'instructions': [], 'uses': []}
            dockerfile.stages.append(stage)
            continue
        if keyword == 'ARG':
            for word in _words(args, label, line):
                name, sep, value = word.partition('=')
                if sep and name not in dockerfile.args:
                    dockerfile.args[name] = _expand(value, dockerfile.values())
                    if stage is None:
                        global_args[name] = dockerfile.args[name]
        elif keyword == 'ENV':
            words = _words(args, label, line)
            if words and '=' not in words[0]:
                # The legacy form: ENV NAME value with spaces
                words = ['%s=%s' % (words[0], ' '.join(words[1:]))]
            for word in words:
                name, sep, value = word.partition('=')
                if sep and name not in dockerfile.env:
                    dockerfile.env[name] = _expand(value, dockerfile.values())
        elif stage is None:
            raise RecipeError('%s line %d: %s before the first FROM' % (label, line, keyword))
        if stage is not None:
            stage['instructions'].append((keyword, args, line))
            for used in _FROM_STAGE_RE.finditer(args):
                name = _expand(used.group('stage'), global_args)
                if name.isdigit() and int(name) < len(dockerfile.stages):
                    name = dockerfile.stages[int(name)]['name']
                if dockerfile.stage(name) and name not in stage['uses']:
                    stage['uses'].append(name)
    if not dockerfile.stages:
        raise RecipeError('%s: no FROM instruction, so not a Dockerfile (expected the content of docker/%s)'
                          % (label, label))
    return dockerfile


def _reached(dockerfile):
    """Names of the stages that the file's default target (its last stage) is built from, that stage included."""
    todo = [dockerfile.stages[-1]['name']]
    seen = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        stage = dockerfile.stage(name)
        todo.extend(stage['uses'])
        if stage['parent']:
            todo.append(stage['parent'])
    return seen


def _uses_var(text, name):
    return re.search(r'\$\{?%s\b' % re.escape(name), text) is not None


def _where(dockerfile, name, reached, want=None):
    """(stage name, in the default target) of the first RUN or ADD that uses ${name} (and matches ``want``)."""
    for stage, keyword, args, dummy in dockerfile.instructions():
        if _uses_var(args, name) and (want is None or keyword == 'ADD' or want.search(args)):
            return stage['name'], stage['name'] in reached
    return None, False


def _literal(dockerfile, name, what):
    """The default of ARG ``name``, which must be set and fully expanded."""
    value = dockerfile.args.get(name)
    if value is None:
        raise RecipeError('%s: %s needs ARG %s with a default, and the file has none' % (dockerfile.label, what, name))
    if '$' in value or not value.strip():
        raise RecipeError('%s: ARG %s has no usable default for %s: %r' % (dockerfile.label, name, what, value))
    return value.strip()


def _ref_arg(dockerfile, prefix):
    for suffix in _REF_SUFFIXES:
        if prefix + suffix in dockerfile.args:
            return prefix + suffix
    return None


def _index_urls(args, values):
    index = _INDEX_URL_RE.search(args)
    extra = [_expand(found.group('url'), values) for found in _EXTRA_INDEX_URL_RE.finditer(args)]
    return (_expand(index.group('url'), values) if index else None), extra


def _git_component(dockerfile, prefix, reached, what):
    """{source: build, repo, ref, version, dockerfile, stage, in_image} of <prefix>_REPO and its ref, or None."""
    ref_arg = _ref_arg(dockerfile, prefix)
    repo_arg = prefix + '_REPO'
    if ref_arg is None and repo_arg not in dockerfile.args:
        return None
    if ref_arg is None:
        raise RecipeError('%s: ARG %s is set but none of %s gives its ref'
                          % (dockerfile.label, repo_arg, ', '.join(prefix + suffix for suffix in _REF_SUFFIXES)))
    stage, in_image = _where(dockerfile, ref_arg, reached, _GIT_FETCH_RE)
    version = dockerfile.args.get(prefix + '_VERSION')
    return {
        'source': 'build',
        'repo': _literal(dockerfile, repo_arg, what),
        'ref': _literal(dockerfile, ref_arg, what),
        'version': version if version and '$' not in version else None,
        'dockerfile': dockerfile.label,
        'stage': stage,
        'in_image': in_image,
    }


def _wheel_component(dockerfile, package, version_arg, reached, what):
    """{source: wheels, version, index_url, extra_index_urls, dockerfile, stage, in_image}, or None."""
    if version_arg is None or version_arg not in dockerfile.args:
        return None
    version = _literal(dockerfile, version_arg, what)
    wanted = re.compile(r'(?:^|[\s"\'])%s==\$\{?%s\b' % (re.escape(package), re.escape(version_arg)))
    for stage, dummy, args, dummy_line in dockerfile.instructions(('RUN',)):
        if wanted.search(args):
            index_url, extra = _index_urls(args, dockerfile.values())
            return {'source': 'wheels', 'version': version, 'index_url': index_url, 'extra_index_urls': extra,
                    'dockerfile': dockerfile.label, 'stage': stage['name'], 'in_image': stage['name'] in reached}
    return {'source': 'wheels', 'version': version, 'index_url': None, 'extra_index_urls': [],
            'dockerfile': dockerfile.label, 'stage': None, 'in_image': False}


def _torch(base, reached):
    if 'PYTORCH_BRANCH' in base.args or 'PYTORCH_REPO' in base.args:
        torch = _git_component(base, 'PYTORCH', reached, 'PyTorch built from source')
        del torch['version']
        return torch
    torch = _wheel_component(base, 'torch', 'TORCH_VERSION', reached, 'PyTorch as wheels')
    if torch is None:
        raise RecipeError('%s: no PyTorch: neither ARG PYTORCH_REPO and PYTORCH_BRANCH (built from source) nor ARG '
                          'TORCH_VERSION (wheels); is this docker/%s?' % (base.label, BASE_LABEL))
    return torch


def _rocm(base, base_image, reached):
    """ROCm as the base image carries it, or as the SDK's wheels."""
    if 'ROCM_SDK_VERSION' in base.args:
        version = _literal(base, 'ROCM_SDK_VERSION', 'the ROCm SDK')
        for stage, dummy, args, dummy_line in base.instructions(('RUN',)):
            package = _ROCM_SDK_RE.search(args)
            if package and _uses_var(args, 'ROCM_SDK_VERSION'):
                index_url, extra = _index_urls(args, base.values())
                return {'source': 'wheels', 'version': version, 'package': package.group('package'),
                        'index_url': index_url, 'extra_index_urls': extra, 'dockerfile': base.label,
                        'stage': stage['name'], 'in_image': stage['name'] in reached}
        raise RecipeError('%s: ARG ROCM_SDK_VERSION is set but no RUN installs the rocm[...] wheels with it'
                          % base.label)
    repository, sep, tag = base_image.rpartition(':')
    found = _ROCM_TAG_RE.match(tag) if sep and 'rocm' in repository.lower() else None
    if not found:
        raise RecipeError('%s: cannot tell the ROCm version: the base image %r is not a ROCm image tagged with its '
                          'version, and there is no ARG ROCM_SDK_VERSION' % (base.label, base_image))
    return {'source': 'image', 'version': found.group('version'), 'image': base_image}


def _amdsmi(base, reached):
    for stage, dummy, args, dummy_line in base.instructions(('RUN',)):
        found = _AMDSMI_RE.search(args)
        if found:
            path = _expand(found.group('path').strip('"\''), base.values())
            return {'source': 'rocm', 'path': path, 'dockerfile': base.label, 'stage': stage['name'],
                    'in_image': stage['name'] in reached}
    return None


def _triton_kernels(vllm, reached):
    if _TRITON_KERNELS_ARG not in vllm.args:
        return None
    ref = _literal(vllm, _TRITON_KERNELS_ARG, 'the triton_kernels source')
    url = repo = path = None
    url_re = re.compile(r'(?P<url>https?://\S*\$\{?%s\}?\S*)' % _TRITON_KERNELS_ARG)
    path_re = re.compile(r'[^\s"\']*\$\{%s\}/(?P<path>[^\s"\']+)' % _TRITON_KERNELS_ARG)
    for dummy, dummy_keyword, args, dummy_line in vllm.instructions():
        found = url_re.search(args)
        if found and url is None:
            url = _expand(found.group('url'), vllm.values())
            codeload = _CODELOAD_RE.match(url)
            if codeload:
                repo = 'https://github.com/%s/%s.git' % (codeload.group('owner'), codeload.group('name'))
        found = path_re.search(args)
        if found and path is None:
            path = found.group('path')
    stage, in_image = _where(vllm, _TRITON_KERNELS_ARG, reached, _GIT_FETCH_RE)
    return {'source': 'archive', 'repo': repo, 'ref': ref, 'url': url, 'path': path,
            'src_dir': vllm.env.get('TRITON_KERNELS_SRC_DIR'), 'dockerfile': vllm.label, 'stage': stage,
            'in_image': in_image}


def _rocm_systems(base, reached):
    found = {}
    for name, ref_arg in _ROCM_SYSTEMS_COMPONENTS:
        if ref_arg not in base.args:
            found[name] = None
            continue
        stage, in_image = _where(base, ref_arg, reached, _GIT_FETCH_RE)
        found[name] = {'source': 'build', 'repo': _literal(base, 'ROCM_SYSTEMS_REPO', name),
                       'ref': _literal(base, ref_arg, name), 'version': None, 'dockerfile': base.label,
                       'stage': stage, 'in_image': in_image}
    if found['rocprofiler_sdk'] is not None:
        found['rocprofiler_sdk']['patches'] = [value for name, value in base.args.items() if _PATCH_ARG_RE.match(name)]
    return found


def _components(base, vllm, reached):
    components = {}
    known = set(('PYTORCH',))
    for name, prefix, package, version_arg in _COMPONENTS:
        known.add(prefix)
        entry = None
        for dockerfile in (base, vllm):
            entry = _git_component(dockerfile, prefix, reached[dockerfile.label], name)
            if entry is None and package:
                entry = _wheel_component(dockerfile, package, version_arg, reached[dockerfile.label], name)
            if entry is not None:
                break
        components[name] = entry
    if components['aiter'] is not None:
        arch = base.values().get('AITER_ROCM_ARCH')
        components['aiter']['gpu_archs'] = [item for item in arch.split(';') if item] if arch else None
        stage = base.stage(components['aiter']['stage'] or '')
        components['aiter']['use_system_triton'] = bool(stage) and any(
            re.search(r'\bAITER_USE_SYSTEM_TRITON=1\b', args) for dummy, args, dummy_line in stage['instructions'])
    components['amdsmi'] = _amdsmi(base, reached[base.label])
    components['triton_kernels'] = _triton_kernels(vllm, reached[vllm.label])
    components.update(_rocm_systems(base, reached[base.label]))
    # Any other <PREFIX>_REPO with a ref: a component this reader has no name for yet.
    for dockerfile in (base, vllm):
        for arg in sorted(dockerfile.args):
            found = _ARG_PREFIX_RE.match(arg)
            if not found or found.group('prefix') in known or found.group('prefix') in _NOT_COMPONENTS:
                continue
            name = found.group('prefix').lower()
            if name not in components and _ref_arg(dockerfile, found.group('prefix')):
                components[name] = _git_component(dockerfile, found.group('prefix'), reached[dockerfile.label], name)
    return components


def _pins(base):
    """Version constraints of the packages the base's first stage installs with pip (literal versions only)."""
    pins = {}
    for keyword, args, line in base.stages[0]['instructions']:
        if keyword != 'RUN':
            continue
        for found in _PIP_INSTALL_RE.finditer(args):
            try:
                words = shlex.split(found.group('args'), posix=True)
            except ValueError as exc:
                raise RecipeError('%s line %d: cannot split the pip install arguments %r (%s)'
                                  % (base.label, line, found.group('args').strip(), exc))
            skip = False
            for word in words:
                if skip:
                    skip = False
                    continue
                if word.startswith('-'):
                    skip = word in _PIP_VALUE_OPTIONS
                    continue
                requirement = _REQUIREMENT_RE.match(word)
                if requirement and '$' not in word:
                    name = re.sub(r'[-_.]+', '-', requirement.group('name')).lower()
                    pins.setdefault(name, requirement.group('spec'))
    return pins


def _compilers(base):
    gcc = None
    stages = []
    for stage, dummy, args, dummy_line in base.instructions(('RUN',)):
        found = _GCC_SELECT_RE.search(args)
        if found:
            gcc = gcc or found.group('version')
            if stage['name'] not in stages:
                stages.append(stage['name'])
    return {'gcc': gcc, 'gcc_stages': stages}


def _ppas(base):
    ppas = []
    for dummy, dummy_keyword, args, dummy_line in base.instructions(('RUN',)):
        for found in _PPA_RE.finditer(args):
            if found.group('ppa') not in ppas:
                ppas.append(found.group('ppa'))
    return ppas


def _device_packages(base):
    packages = []
    for dummy, dummy_keyword, args, dummy_line in base.instructions(('RUN',)):
        for found in _DEVICE_EXTRA_RE.finditer(args):
            package = '%s[device-<arch>]' % found.group('package')
            if package not in packages:
                packages.append(package)
    return packages


def _check_vllm_file(vllm):
    """Dockerfile.rocm installs vLLM's requirements/rocm.txt; the base does not."""
    if not any('requirements/rocm.txt' in args for dummy, dummy_keyword, args, dummy_line
               in vllm.instructions(('RUN', 'COPY'))):
        raise RecipeError('%s: no stage installs vLLM\'s requirements/rocm.txt; is this docker/%s (the second '
                          'argument) rather than the base?' % (vllm.label, VLLM_LABEL))


def vllm_rocm_recipe(base_text, rocm_text):
    """The texts of a vLLM release's ``docker/Dockerfile.rocm_base`` and ``docker/Dockerfile.rocm`` -> its recipe.

    Returns ``{python_version, rocm_version, rocm, base_image, os, torch, components, pins, compilers, ppas,
    pytorch_rocm_arch, device_packages, notes}``:

    - ``rocm``: ``{source: image, version, image}`` (the base image's ROCm) or ``{source: wheels, version,
      package, index_url, extra_index_urls, stage, in_image}`` (the ROCm SDK as Python wheels).
    - ``torch``: ``{source: build, repo, ref, dockerfile, stage, in_image}`` (built from the ref) or
      ``{source: wheels, version, index_url, extra_index_urls, dockerfile, stage, in_image}``.
    - ``components``: name -> None when the release has no such component, else one of
      ``{source: build, repo, ref, version, ...}`` (built from git; ``version`` where the release states it),
      ``{source: wheels, version, index_url, extra_index_urls, ...}``, ``{source: rocm, path, ...}`` (amdsmi,
      built from ROCm's own copy), ``{source: archive, repo, ref, url, path, src_dir, ...}`` (triton_kernels, a
      source archive whose directory vLLM's build takes through TRITON_KERNELS_SRC_DIR). Every entry names the
      ``dockerfile`` and ``stage`` it comes from and ``in_image``: whether the file's default target (its last
      stage) is built from that stage (False for optional extras such as LMCache and for CI-only stages).
      ``aiter`` adds ``gpu_archs`` and ``use_system_triton``; ``rocprofiler_sdk`` adds ``patches`` (commits).
    - ``pins``: package -> version constraint of the base's first stage's pip installs (``pybind11: <3.1.0``).
    - ``compilers``: ``{gcc: '13' or None, gcc_stages}``; None means the distribution's default gcc.
    - ``ppas``: the Ubuntu PPAs the base adds (Python and gcc come from them).
    - ``notes``: name -> sentence, for what these files do not pin.

    Raises ``RecipeError`` for a text that is not a Dockerfile or lacks an ARG the recipe needs.
    """
    base = parse_dockerfile(base_text, BASE_LABEL)
    vllm = parse_dockerfile(rocm_text, VLLM_LABEL)
    _check_vllm_file(vllm)
    reached = {BASE_LABEL: _reached(base), VLLM_LABEL: _reached(vllm)}

    python_version = _literal(base, 'PYTHON_VERSION', 'the Python version (is this docker/%s?)' % BASE_LABEL)
    if not _PYTHON_VERSION_RE.match(python_version):
        raise RecipeError('%s: ARG PYTHON_VERSION is %r, not a Python 3 version such as 3.12'
                          % (BASE_LABEL, python_version))
    base_image = base.args.get('BASE_IMAGE') or base.stages[0]['image']
    if '$' in base_image:
        raise RecipeError('%s: the base image %r has no default (ARG BASE_IMAGE)' % (BASE_LABEL, base_image))
    rocm = _rocm(base, base_image, reached[BASE_LABEL])
    os_found = _OS_RE.search(base_image)
    arch = base.args.get('PYTORCH_ROCM_ARCH')
    components = _components(base, vllm, reached)

    notes = {}
    if components['triton_kernels'] is None:
        notes['triton_kernels'] = NOTE_TRITON_KERNELS
    torch = _torch(base, reached[BASE_LABEL])
    if torch['source'] == 'build' and 'PYTORCH_BUILD_VERSION' not in base_text:
        notes['torch'] = NOTE_TORCH_VERSION
    return {
        'python_version': python_version,
        'rocm_version': rocm['version'],
        'rocm': rocm,
        'base_image': base_image,
        'os': ({'distribution': os_found.group('distribution'), 'version': os_found.group('version')}
               if os_found else None),
        'torch': torch,
        'components': components,
        'pins': _pins(base),
        'compilers': _compilers(base),
        'ppas': _ppas(base),
        'pytorch_rocm_arch': [item for item in arch.split(';') if item] if arch and '$' not in arch else None,
        'device_packages': _device_packages(base),
        'notes': notes,
    }
