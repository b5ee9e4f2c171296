# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine build's arithmetic: the architecture list, MAX_JOBS, and the build key of a set of components."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import KNOWN_GFX_TARGETS
from ansible_collections.llmfleet.rocm.plugins.module_utils._wheel_build import tree_digest

# A target with optional target features, as PYTORCH_ROCM_ARCH accepts them: gfx90a, gfx90a:xnack-.
_ARCH_RE = re.compile(r'^(?P<target>gfx[0-9a-f]+)(?P<features>(?::(?:xnack|sramecc)[+-])*)$')
_RDNA_RE = re.compile(r'^gfx1[0-9a-f]{3}')
_KEY_LENGTH = 16


def build_arch_list(value):
    """GPU targets as a sorted, distinct list, from a list or a ``;``/``,``/blank separated string."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        items = []
        for item in value:
            items.extend(build_arch_list(item))
    else:
        items = [item for item in re.split(r'[;,\s]+', to_text(value).strip()) if item]
    return sorted(set(items))


def build_arch_problems(arch):
    """The entries of an architecture list that are not known LLVM AMDGPU targets (with allowed features)."""
    problems = []
    for item in build_arch_list(arch):
        match = _ARCH_RE.match(item)
        if not match or match.group('target') not in KNOWN_GFX_TARGETS:
            problems.append(item)
    return problems


def build_arch_datacenter(arch):
    """The architecture list without the Radeon (RDNA, gfx1xxx) targets: flash-attention builds for CDNA only."""
    return [item for item in build_arch_list(arch) if not _RDNA_RE.match(item)]


def build_max_jobs(cpus, memory_mb, memory_per_job_mb=4096, reserved_memory_mb=4096):
    """Parallel compile jobs a builder can take: one per CPU, but no more than its memory holds.

    ``max(1, min(cpus, (memory_mb - reserved_memory_mb) // memory_per_job_mb))``: compiling PyTorch's and
    vLLM's HIP sources takes several GiB per job, and a build with one job per core runs out of memory first.
    """
    try:
        cpus, memory_mb = int(cpus), int(memory_mb)
        memory_per_job_mb, reserved_memory_mb = int(memory_per_job_mb), int(reserved_memory_mb)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('build_max_jobs: CPU and memory figures must be integers (%s)' % exc)
    if memory_per_job_mb < 1:
        raise AnsibleFilterError('build_max_jobs: memory_per_job_mb must be 1 or more')
    return max(1, min(cpus, (memory_mb - reserved_memory_mb) // memory_per_job_mb))


def _digest(document):
    text = json.dumps(document, sort_keys=True, separators=(',', ':'))
    return hashlib.sha256(text.encode('utf-8')).hexdigest()[:_KEY_LENGTH]


_COMPONENT_FIELDS = ('name', 'repo', 'ref', 'commit', 'subdir', 'steps', 'env', 'install')
_COMPONENT_DEFAULTS = {'subdir': [''], 'env': {}, 'install': False}
# Fields a stage has only when they are set, so that the keys of stages without them stay what they were: path (a
# directory on the builder, built from a copy, instead of repo and ref), export (a directory of the checkout kept as the
# stage's result, no steps, no wheels) and source_env (environment variable -> an earlier export stage, whose tree the
# variable names when this stage runs).
_OPTIONAL_FIELDS = ('path', 'export', 'source_env')


def _stage(component, commit):
    """One component with every field filled (repo and ref, or path), or the reason it cannot be a stage."""
    stage = dict(_COMPONENT_DEFAULTS)
    stage.update(component)
    stage['commit'] = commit
    if stage.get('path'):
        # A directory on the builder: no repository, its identity (a digest of its files) stands for the commit.
        stage.setdefault('repo', None)
        stage.setdefault('ref', None)
        needed = [field for field in _COMPONENT_FIELDS if field not in ('repo', 'ref')]
    else:
        needed = list(_COMPONENT_FIELDS)
    missing = [field for field in needed if stage.get(field) in (None, '')]
    if stage.get('steps') == [] and not stage.get('export'):
        missing.append('steps')
    if missing:
        raise AnsibleFilterError('build_plan: component %r lacks %s' % (component.get('name'), ', '.join(missing)))
    if isinstance(stage['subdir'], str):
        stage['subdir'] = [stage['subdir']]
    result = dict((field, stage[field]) for field in _COMPONENT_FIELDS)
    result.update((field, stage[field]) for field in _OPTIONAL_FIELDS if stage.get(field))
    return result


def _identities(trees):
    """Path component name -> the digest of its directory, from a find loop over the path components (``item`` the
    component, ``files`` with checksums)."""
    identities = {}
    for result in trees or []:
        if not isinstance(result, dict) or not isinstance(result.get('item'), dict):
            raise AnsibleFilterError('build_plan: trees must be the results of a find loop over the path components')
        item = result['item']
        identities[item.get('name')] = tree_digest(item.get('path'), result.get('files') or [])
    return identities


def build_plan(components, common, commits, extra_packages=None, trees=None):
    """The build key and the stages of a build.

    ``components``: the components in build order, each with name, repo, ref, steps (argument lists) and
    optionally subdir (candidates, default the checkout's top), env and install (whether later stages need its
    wheels); or, instead of repo and ref, path (a directory on the builder); optionally export (a directory of the
    checkout that is the stage's result: no steps, no wheels) and source_env (variable -> an earlier export stage).
    ``common``: what every stage depends on (ROCm version, architecture list, Python version, system, options).
    ``commits``: each component's ref resolved to a commit, in the same order (None for a path component).
    ``trees``: the files of each path component's directory (a find loop's results with checksums, ``item`` the
    component): the digest of its files, without what its copy leaves out, is its commit. ``extra_packages``:
    requirement specifiers the wheelhouse holds besides the built wheels and their dependencies (such as Ray); they
    are in the build key but in no stage's key, so a change builds no stage again.

    Each stage gets a key of its own inputs and of the stages before it (a changed vLLM ref rebuilds vLLM
    only; a changed PyTorch ref rebuilds everything after it). The build key covers all of them; the
    document it is computed from is stored in the wheelhouse.
    """
    if not isinstance(components, list) or not components:
        raise AnsibleFilterError('build_plan: components must be a non-empty list')
    if not isinstance(common, dict):
        raise AnsibleFilterError('build_plan: common must be a dictionary')
    if not isinstance(commits, list) or len(commits) != len(components):
        raise AnsibleFilterError('build_plan: commits must list one commit per component')
    identities = _identities(trees)
    stages = []
    previous = ''
    exports = set()
    for component, commit in zip(components, commits):
        if isinstance(component, dict) and component.get('path'):
            commit = identities.get(component.get('name'))
        stage = _stage(component, commit)
        for variable, name in (stage.get('source_env') or {}).items():
            if name not in exports:
                raise AnsibleFilterError('build_plan: component %r takes %s from %r, which is no export stage before it'
                                         % (stage['name'], variable, name))
        if stage.get('export'):
            exports.add(stage['name'])
        stage['key'] = _digest({'common': common, 'component': stage, 'after': previous})
        previous = stage['key']
        stages.append(stage)
    extra_packages = list(extra_packages or [])
    if not all(isinstance(item, str) and item.strip() for item in extra_packages):
        raise AnsibleFilterError('build_plan: extra_packages must be a list of requirement specifiers')
    document = {'format': 1, 'common': common, 'stages': [dict(stage) for stage in stages]}
    if extra_packages:
        document['extra_packages'] = extra_packages
    return {'key': _digest(document), 'document': document, 'stages': stages}
