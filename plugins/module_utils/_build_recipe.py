# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine_build role's recipe table: one entry per vLLM release, and the sources the role builds from it.

The table (``_engine_build_releases`` in roles/engine_build/vars/main.yml) is derived from each release's own
``docker/Dockerfile.rocm_base`` and ``docker/Dockerfile.rocm`` by ``vllm_rocm_recipe`` and ``table_entry`` below; the
Dockerfiles are test fixtures (tests/unit/fixtures/vllm_dockerfiles/<release>/), and a unit test derives the table
again from them and compares. ``sources`` gives each component the role builds its repository and ref: the user's
variable where it is set (not ""), else the recipe's of the release; ``problems`` says why a build cannot take its
sources from the table (a release outside it, a release of another shape). ``rocm_relation`` compares the recipe's
ROCm with the fleet's for the preflight role.

Pure data and functions; no Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# The components the role takes from a repository and a ref: role name -> the recipe's name ('torch' is the
# recipe's top-level entry). flash_attention and aiter only when their switch is on. triton_kernels is not built: its
# directory of ROCm's Triton at the recipe's commit is what vLLM's build reads (TRITON_KERNELS_SRC_DIR), where it
# would otherwise clone that repository itself.
BUILT = (
    ('pytorch', 'torch'),
    ('triton', 'triton'),
    ('torchvision', 'torchvision'),
    ('torchaudio', 'torchaudio'),
    ('flash_attention', 'flash_attention'),
    ('aiter', 'aiter'),
    ('triton_kernels', 'triton_kernels'),
)
# How the recipe gives a component the role takes from a repository: built from it, or fetched as an archive of it.
_FROM_REPOSITORY = ('build', 'archive')
OPTIONAL = ('flash_attention', 'aiter')
# What an entry records of the recipe's components besides torch (the image's own builds and sources).
RECORDED = ('triton', 'torchvision', 'torchaudio', 'flash_attention', 'aiter', 'mori', 'triton_kernels')
# The ROCm major release the collection supports (the rocm role installs 7.x).
ROCM_MAJOR = 7

_RELEASE_RE = re.compile(r'^v?(?P<release>[0-9]+\.[0-9]+\.[0-9]+)\Z')
_VERSION_RE = re.compile(r'^(?P<numbers>[0-9]+(?:\.[0-9]+)*)')


def release_of(ref):
    """'0.32.0' for the tag 'v0.32.0' (or '0.32.0'); None for a branch or a commit."""
    match = _RELEASE_RE.match(str(ref or '').strip())
    return match.group('release') if match else None


def _version(text):
    """(7, 2, 3) for '7.2.3', (7, 2, 0) for '7.2'; None for what is not a version."""
    match = _VERSION_RE.match(str(text or '').strip())
    if not match:
        return None
    numbers = [int(number) for number in match.group('numbers').split('.')]
    return tuple((numbers + [0, 0, 0])[:3])


def _component_entry(component):
    if component is None:
        return None
    if component.get('source') == 'wheels':
        return {'source': 'wheels', 'version': component.get('version')}
    if component.get('source') == 'rocm':
        return {'source': 'rocm', 'path': component.get('path')}
    return {'source': component.get('source'), 'repo': component.get('repo'), 'ref': component.get('ref')}


def table_entry(recipe, source, dockerfiles):
    """One entry of the table: ``recipe`` (what ``vllm_rocm_recipe`` returns for the release), ``source`` (where the
    Dockerfiles came from: ``{sdist, sha256, url}``) and ``dockerfiles`` (path in the release -> sha256 of the file)."""
    torch = recipe['torch']
    components = recipe['components']
    return {
        'source': dict(source),
        'dockerfiles': dict(dockerfiles),
        'python_version': recipe['python_version'],
        'rocm_version': recipe['rocm_version'],
        'rocm_source': recipe['rocm']['source'],
        'base_image': recipe['base_image'],
        'gcc': recipe['compilers']['gcc'],
        'torch': ({'source': 'build', 'repo': torch['repo'], 'ref': torch['ref']} if torch['source'] == 'build'
                  else {'source': torch['source'], 'version': torch['version']}),
        'components': dict((name, _component_entry(components.get(name))) for name in RECORDED),
    }


def unsupported(entry):
    """Why the collection cannot build a release the way its entry says (None when it can)."""
    reasons = []
    rocm = _version(entry.get('rocm_version'))
    if rocm is None or rocm[0] != ROCM_MAJOR:
        reasons.append('its ROCm is %s (%s), and the collection supports ROCm %d.x'
                       % (entry.get('rocm_version'), 'the ROCm SDK as wheels' if entry.get('rocm_source') == 'wheels'
                          else 'the base image\'s', ROCM_MAJOR))
    torch = entry.get('torch') or {}
    if torch.get('source') != 'build':
        reasons.append('it installs torch %s as wheels instead of building it from ROCm\'s fork'
                       % (torch.get('version') or '(no version)'))
    return '; '.join(reasons) or None


def _text(value):
    return value.strip() if isinstance(value, str) else ''


def _wanted(values, name):
    return name not in OPTIONAL or bool(values.get('engine_build_%s' % name))


def _recipe_release(values):
    """(release, how it was chosen): engine_build_recipe where set, else the release of engine_build_vllm_ref."""
    chosen = _text(values.get('engine_build_recipe'))
    if chosen:
        return release_of(chosen) or chosen, 'engine_build_recipe'
    return release_of(values.get('engine_build_vllm_ref')), 'engine_build_vllm_ref'


def _problems(values, releases, release, chosen_by, entry, reason, from_recipe, missing):
    """The messages of ``sources``: at most one, the first that applies."""
    known = ', '.join(sorted(releases, key=_version)) or 'none'
    if chosen_by == 'engine_build_recipe' and entry is None:
        return ['engine_build_recipe %s is not a release of the recipe table (%s): name one of them, or set it to ""'
                ' to follow engine_build_vllm_ref.' % (_text(values.get('engine_build_recipe')), known)]
    if reason and from_recipe:
        buildable = ', '.join(key for key in sorted(releases, key=_version) if not unsupported(releases[key])) or 'none'
        return ['vLLM %s cannot be built from its own recipe here: %s (its docker/Dockerfile.rocm_base). Pin'
                ' engine_build_vllm_ref to a release built on ROCm %d.x with torch from source (%s), or set'
                ' engine_build_recipe to one of them, or set %s yourself.'
                % (release, reason, ROCM_MAJOR, buildable, ', '.join(from_recipe))]
    if missing and entry is None:
        return ['engine_build_vllm_ref %s is not a release of the recipe table (%s), so %s %s no default: set'
                ' engine_build_recipe to the release that ref follows (its refs fill what you leave ""), or set %s'
                ' yourself.' % (_text(values.get('engine_build_vllm_ref')) or '""', known, ', '.join(missing),
                                'has' if len(missing) == 1 else 'have', ', '.join(missing))]
    if missing:
        return ['vLLM %s\'s recipe does not give %s: set %s yourself.'
                % (release, ', '.join(missing), 'it' if len(missing) == 1 else 'them')]
    return []


def sources(values, releases):
    """The role's variables (engine_build_*) and the table -> what the build takes from where.

    Returns ``{release, entry, supported, python_version, rocm_version, components, origins, problems}``: ``release`` the
    table's key in use (None when engine_build_vllm_ref is not a release tag and engine_build_recipe is ""), ``entry``
    its entry (None when the table has none), ``components`` role name -> ``{repo, ref}`` for pytorch, triton,
    torchvision, torchaudio, flash_attention, aiter and triton_kernels ("" where neither the user nor the recipe gives
    one), ``origins`` role name -> ``user`` (both set by the user), ``recipe`` (at least one from the recipe) or None
    (incomplete), ``problems`` the
    messages that stop the role before anything changes (only about the components the build needs; none when
    engine_build_components gives a whole recipe of its own).
    """
    releases = releases or {}
    release, chosen_by = _recipe_release(values)
    entry = releases.get(release) if release else None
    reason = unsupported(entry) if entry else None
    components = {}
    origins = {}
    from_recipe = []
    missing = []
    for name, recipe_name in BUILT:
        given = dict((field, _text(values.get('engine_build_%s_%s' % (name, field)))) for field in ('repo', 'ref'))
        if entry:
            upstream = entry['torch'] if recipe_name == 'torch' else (entry.get('components') or {}).get(recipe_name)
        else:
            upstream = None
        upstream = upstream if upstream and upstream.get('source') in _FROM_REPOSITORY else {}
        resolved = dict((field, given[field] or _text(upstream.get(field))) for field in ('repo', 'ref'))
        taken = [field for field in ('repo', 'ref') if not given[field]]
        components[name] = resolved
        origins[name] = 'user' if not taken else 'recipe' if all(resolved.values()) else None
        if _wanted(values, name):
            from_recipe.extend('engine_build_%s_%s' % (name, field) for field in taken)
            missing.extend('engine_build_%s_%s' % (name, field) for field in ('repo', 'ref') if not resolved[field])
    if values.get('engine_build_components'):
        # The user's whole recipe (engine_build_components) names its own sources: nothing to take from the table.
        problems = []
    else:
        problems = _problems(values, releases, release, chosen_by, entry, reason, from_recipe, missing)
    return {
        'release': release,
        'entry': entry,
        'supported': entry is not None and reason is None,
        'python_version': entry.get('python_version') if entry else None,
        'rocm_version': entry.get('rocm_version') if entry else None,
        'components': components,
        'origins': origins,
        'problems': problems,
    }


def rocm_relation(values, releases, fleet_rocm, source='rocm_version'):
    """(message, fix) when the recipe in use was built upstream on another ROCm than ``fleet_rocm`` (the fleet's
    rocm_version, or the installed release: ``source`` says which); None when they agree, when no recipe of the table
    is in use, or when a version is unknown."""
    found = sources(values, releases)
    recipe_rocm = found['rocm_version']
    if not found['entry'] or _version(recipe_rocm) is None or _version(fleet_rocm) is None:
        return None
    if _version(recipe_rocm) == _version(fleet_rocm):
        return None
    message = ('The build follows vLLM %s\'s recipe, which upstream builds and tests on ROCm %s; this fleet runs ROCm %s'
               ' (%s). The builder compiles those refs against the fleet\'s ROCm (the builder and every GPU'
               ' node run one release), a combination upstream did not build.'
               % (found['release'], recipe_rocm, fleet_rocm, source))
    fix = ('Set rocm_version to %s to build on the ROCm the recipe was made for; or keep %s and set the component refs'
           ' (engine_build_pytorch_ref, engine_build_triton_ref, ...) to ones known to build on it, then accept this'
           ' finding (preflight_accepted_findings).' % (recipe_rocm, fleet_rocm))
    return message, fix
