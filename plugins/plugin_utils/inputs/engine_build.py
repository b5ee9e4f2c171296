# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks of the engine_build role (``input_problems('engine_build')``).

Besides the role's variables, the rules judge what the build would be made of (the architecture list and the
components, from vars/main.yml), the facts of the GPU nodes the wheels are for (host -> ansible_facts, ``{}`` for a
host without facts), and, once the toolchain is installed and the refs are resolved, the build Python's version
against the Python the engine role gives each node, the builder's ROCm release, the commits the refs resolved to and
the directories of the path components.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections.abc import Mapping

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.build_plan import build_arch_problems
from ansible_collections.llmfleet.rocm.plugins.module_utils import _build_recipe, _build_toolchain
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import RuleSet, as_int, is_absolute_path, show

_COMPONENT_NAME_RE = re.compile(r'^[a-z][a-z0-9_]*\Z')
_COMMIT_RE = re.compile(r'^[0-9a-f]{7,40}\Z')

RULES = RuleSet('engine_build')


def _facts(ctx):
    """The GPU nodes' facts, host -> ansible_facts, in inventory order."""
    return [(host, facts if isinstance(facts, Mapping) else {}) for host, facts in (ctx.get('fleet') or {}).items()]


def _releases(releases):
    return releases if isinstance(releases, Mapping) else {}


def _without_rocm_facts(ctx):
    return [host for host, facts in _facts(ctx) if not isinstance(facts.get('rocm'), Mapping)]


def _component_label(index, component):
    name = component.get('name') if isinstance(component, Mapping) else None
    return show(name) if name else '#%d' % (index + 1)


@RULES.rule('engine_build-no-arch')
def _no_arch(values, ctx):
    if ctx.get('arch'):
        return None
    group = values['engine_build_gpu_group']
    without = _without_rocm_facts(ctx)
    if without:
        why = ('%s of group %s did not report ansible_facts.rocm (playbooks/build.yml reads them first: make those hosts'
               ' reachable, or set engine_build_rocm_arch).' % (', '.join(without), group))
    elif not ctx.get('fleet'):
        why = ('group %s has no host to take the GPU targets from: set engine_build_gpu_group to the group of the GPU nodes,'
               ' or set engine_build_rocm_arch.' % group)
    else:
        why = ('the hosts of group %s report no GPU target in ansible_facts.rocm: converge playbooks/driver.yml on them'
               ' first, or set engine_build_rocm_arch.' % group)
    return 'No GPU target to build for: engine_build_rocm_arch is empty and ' + why


@RULES.rule('engine_build-facts-missing')
def _facts_missing(values, ctx):
    without = _without_rocm_facts(ctx)
    if values['engine_build_rocm_arch'] or not ctx.get('arch') or not without:
        return None
    return ('Facts of %s are missing: their GPU targets would be left out of the build. Make them reachable, or set'
            ' engine_build_rocm_arch to the full list.' % ', '.join(without))


@RULES.rule('engine_build-arch-unknown')
def _arch_unknown(values, ctx):
    unknown = build_arch_problems(ctx.get('arch') or [])
    if not unknown:
        return None
    return ('engine_build_rocm_arch has unknown targets %s: use LLVM names such as gfx942 (MI300X), gfx90a (MI250X/MI210),'
            ' gfx950 (MI350X), optionally with :xnack- or :sramecc+.' % ', '.join(unknown))


def _node_python(facts, engine, build_release, releases):
    """The Python version the engine role gives a GPU node's venv by default (the per-system table's choice for the
    node's engine release, module_utils/_build_toolchain.py); None where it cannot be known here (the node's
    engine_python is a path, or its system is not known yet)."""
    if isinstance(engine, (list, tuple)):
        engine = dict(zip(('python', 'python_version', 'version'), engine))
    engine = engine if isinstance(engine, Mapping) else {}
    if engine.get('python') or not facts.get('distribution'):
        return None
    system = '%s-%s' % (facts.get('distribution'), facts.get('distribution_major_version'))
    release = engine.get('version') or build_release
    plan = _build_toolchain.toolchain(system, python_version=engine.get('python_version') or '',
                                      recipe=_build_toolchain.recipe_needs(release, _releases(releases)), who='engine')
    return (plan.get('python') or {}).get('version')


@RULES.rule('engine_build-python-mismatch')
def _python_mismatch(values, ctx):
    """Once the toolchain is there: the build Python's own version against each GPU node's engine Python."""
    builder = ctx.get('python')
    if not builder:
        return None
    engines = ctx.get('engines') or {}
    release = _build_recipe.sources(values, _releases(ctx.get('releases')))['release']
    others = []
    for host, facts in _facts(ctx):
        theirs = _node_python(facts, engines.get(host), release, ctx.get('releases'))
        if theirs is not None and theirs != builder:
            others.append('%s (%s)' % (host, theirs))
    if not others:
        return None
    return ('The wheels would be built for Python %s (toolchain_python on the builder), but the engine role gives %s'
            ' another Python (the per-system table of engine_python_version): build with the nodes\' Python'
            ' (toolchain_python_version), set engine_python_version on the nodes to %s where their system has it, or'
            ' give those nodes their own builder.' % (builder, ', '.join(others), builder))


def _complete(component):
    """A component names its source (repo and ref, or a path on the builder) and its steps (none for an export)."""
    if not isinstance(component, Mapping):
        return False
    source = bool(component.get('path')) or all(key in component for key in ('repo', 'ref'))
    return source and ('steps' in component or bool(component.get('export')))


@RULES.rule('engine_build-components-incomplete')
def _incomplete(values, ctx):
    incomplete = [_component_label(index, component) for index, component in enumerate(ctx.get('components') or [])
                  if not _complete(component)]
    if not incomplete:
        return None
    return ('engine_build_components has entries without repo and ref (or path) or without steps: %s. Give every'
            ' component its repository and ref (or a directory on the builder as path) and its steps (an export of a'
            ' checkout has none).' % ', '.join(incomplete))


@RULES.rule('engine_build-component-names')
def _names(values, ctx):
    names = [component.get('name') if isinstance(component, Mapping) else None for component in ctx.get('components') or []]
    if len(set(show(name) for name in names)) == len(names) and all(
            isinstance(name, str) and _COMPONENT_NAME_RE.match(name) for name in names):
        return None
    return 'Component names must be distinct, lower-case words: %s.' % ', '.join(show(name) for name in names)


@RULES.rule('engine_build-recipe')
def _recipe(values, ctx):
    if ctx.get('releases') is None:
        return None
    return _build_recipe.sources(values, ctx['releases'])['problems']


@RULES.rule('engine_build-aiter-arch')
def _aiter(values, ctx):
    arch = ctx.get('arch') or []
    if not values['engine_build_aiter'] or set(arch) & set(values['engine_build_aiter_arch']):
        return None
    return ('engine_build_aiter is on but none of engine_build_aiter_arch (%s) is in the architecture list (%s): turn'
            ' engine_build_aiter off, or build for a target AITER supports.'
            % (', '.join(values['engine_build_aiter_arch']), ', '.join(arch)))


@RULES.rule('engine_build-max-jobs')
def _max_jobs(values, ctx):
    jobs = as_int(values['engine_build_max_jobs'])
    if jobs is not None and jobs >= 0:
        return None
    return 'engine_build_max_jobs %s must be 0 (computed) or more.' % show(values['engine_build_max_jobs'])


@RULES.rule('engine_build-counts')
def _counts(values, ctx):
    bad = [name for name in ('engine_build_timeout', 'engine_build_poll_interval', 'engine_build_keep')
           if as_int(values[name]) is None or as_int(values[name]) < 1]
    if not bad:
        return None
    return ('engine_build_timeout, engine_build_poll_interval and engine_build_keep must be 1 or more: %s.'
            % ', '.join('%s is %s' % (name, show(values[name])) for name in bad))


# A pinned requirement: a distribution name, optional extras, ==, a version (pip's own spelling, without spaces).
_PINNED = re.compile(r'^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._,-]+\])?==[A-Za-z0-9.+!_-]+\Z')


@RULES.rule('engine_build-extra-packages')
def _extra_packages(values, ctx):
    packages = values.get('engine_build_extra_packages') or []
    if not isinstance(packages, list):
        return 'engine_build_extra_packages %s must be a list of name==version, such as ["ray==2.60.0"].' % show(packages)
    loose = [item for item in packages if not (isinstance(item, str) and _PINNED.match(item))]
    if not loose:
        return None
    return ('engine_build_extra_packages must pin each package as name==version (or name[extras]==version), so that'
            ' one key means one wheelhouse: %s.' % ', '.join(show(item) for item in loose))


@RULES.rule('engine_build-dir-absolute')
def _dir(values, ctx):
    if is_absolute_path(values['engine_build_dir']):
        return None
    return ('engine_build_dir %s must be an absolute path, such as /var/lib/llmfleet/build.'
            % show(values['engine_build_dir']))


@RULES.rule('engine_build-publish-dir-absolute')
def _publish_dir(values, ctx):
    publish = values['engine_build_publish_dir']
    if publish == '' or is_absolute_path(publish):
        return None
    return ('engine_build_publish_dir %s must be an absolute path on the controller, or "" to keep the wheelhouses on the'
            ' builder.' % show(publish))


# Once the toolchain is installed and the refs are resolved (tasks/resolve.yml); quiet before.

@RULES.rule('engine_build-other-rocm')
def _other_rocm(values, ctx):
    release = ctx.get('rocm_release')
    if release is None:
        return None
    others = [host for host, facts in _facts(ctx)
              if isinstance(facts.get('rocm'), Mapping) and facts['rocm'].get('rocm_version') != release]
    if not others:
        return None
    return ('The builder has ROCm %s but %s run another release: converge playbooks/driver.yml on the whole fleet first'
            ' (wheels link one ROCm release).' % (release, ', '.join(others)))


@RULES.rule('engine_build-ref-unresolved')
def _unresolved(values, ctx):
    # A path component has no ref: its loop item is skipped.
    unresolved = [result.get('item') or {} for result in ctx.get('refs') or [] if not result.get('skipped')
                  and not (isinstance(result.get('after'), str) and _COMMIT_RE.match(result['after']))]
    if not unresolved:
        return None
    return ('%s: neither a branch nor a tag of the repository, nor a commit id (7 to 40 hexadecimal digits). Check the refs'
            ' against the repositories.' % ', '.join('%s ref %s of %s' % (item.get('name'), show(item.get('ref')), item.get('repo'))
                                                     for item in unresolved))


@RULES.rule('engine_build-path-empty')
def _path_empty(values, ctx):
    """A path component (amdsmi: /opt/rocm/share/amd_smi of the ROCm packages) whose directory holds no Python project."""
    trees = ctx.get('trees')
    if trees is None:
        return None
    empty = []
    for result in trees.get('results') or []:
        item = result.get('item') or {}
        names = [entry.get('path', '')[len(str(item.get('path', '')).rstrip('/')) + 1:] for entry in result.get('files') or []]
        if not any(name in ('pyproject.toml', 'setup.py') for name in names):
            empty.append('%s (%s)' % (item.get('name'), item.get('path')))
    if not empty:
        return None
    return ('%s: no pyproject.toml or setup.py there. amdsmi is built from /opt/rocm/share/amd_smi, which ROCm\'s'
            ' amd-smi-lib package installs (the toolchain role installs it with toolchain_rocm_packages); set'
            ' engine_build_amdsmi_path where your ROCm has it.' % ', '.join(empty))


def engine_build_input_problems(values, arch, components, fleet, python=None, rocm_release=None, refs=None, releases=None,
                                engines=None, trees=None):
    """The engine_build role's variables, the build and the fleet's facts -> a list of messages (empty when fine).

    Once the toolchain is installed (tasks/resolve.yml): ``python`` the build Python's version (asked from it),
    ``engines`` GPU host -> its engine variables ([engine_python, engine_python_version, engine_version] where the
    inventory sets them, "" otherwise), ``rocm_release``, ``refs`` (the refs
    resolved) and ``trees`` (the files of each path component's directory, a find loop)."""
    return RULES.messages(values, {'arch': arch, 'components': components, 'fleet': fleet, 'python': python,
                                   'rocm_release': rocm_release, 'refs': refs, 'releases': releases, 'engines': engines,
                                   'trees': trees})


def engine_build_sources(values, releases):
    """The engine_build role's variables and its recipe table -> the repository and ref of every component it builds
    (the user's where set, else the recipe's), and what the recipe in use says."""
    return _build_recipe.sources(values, releases)
