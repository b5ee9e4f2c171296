# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the compiler and the Python of a vLLM release's recipe come from, per system: one table.

The builder compiles with the gcc and the Python the release's ROCm image uses (its ``docker/Dockerfile.rocm_base``:
the engine_build role's recipe table says ``gcc`` and ``python_version`` per release), and every GPU node runs the
engine's venv on the same Python version (wheels are built for one). vLLM 0.32.0's image is Ubuntu 22.04 with gcc 13
from the ubuntu-toolchain-r/test PPA and Python 3.12 from the deadsnakes PPA (``add-apt-repository -y
ppa:deadsnakes/ppa``, ``ppa:ubuntu-toolchain-r/test``, then ``python3.12 python3.12-dev python3.12-venv gcc-13 g++-13``;
torch is built with gcc 13 because "torch 2.12 emits float->__bf16 libcalls (__truncsfbf2) absent from gcc-11
libgcc").

What each supported system gives (the base role's platform keys):

- Ubuntu 22.04 (jammy): python3 3.10, gcc 11 (build-essential). gcc 13 from the ubuntu-toolchain-r/test PPA, Python
  3.12 from the deadsnakes PPA, as upstream's image takes them.
- Ubuntu 24.04 (noble): python3 3.12 and gcc 13 from the archive.
- Debian 12 (bookworm): python3 3.11 and gcc 12; its archive has neither gcc 13 nor Python 3.12, and the PPAs are
  built for Ubuntu's releases.

The Python: a path the user gives is taken as it is (its version is asked from the interpreter, not from a variable);
a version the user gives must be one the system's table row has; otherwise the recipe's Python where the system has
it, else the system's own python3 where it is inside the release's range (vLLM's ``requires-python``: Debian 12's
3.11 for vLLM 0.32), else nothing, with a message naming what to set. The compiler: the version the user gives, else
the recipe's; a version the system's row does not have is refused with a message. A system's own python3 and gcc are
used as they are (``/usr/bin/python3``, build-essential's gcc).

Every PPA has its apt source and its key: the key is fetched from ``key_url`` and apt accepts only signatures by the
pinned fingerprint (``Signed-By: <keyring> <fingerprint>``). With the fleet's mirror (``llmfleet_mirror_url``), the
source and its key are the mirror's copy (``mirror_apt_repositories`` entry of the same name, ``apt/<name>/`` with the
key beside it as ``apt/<name>/key.asc``): the fingerprint pin stays.

Pure data and functions; no Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.module_utils import _support_matrix as matrix

# Where each fact of the table was read (nothing here is from memory).
SOURCES = {
    'upstream': 'vLLM 0.32.0 docker/Dockerfile.rocm_base (tests/unit/fixtures/vllm_dockerfiles/0.32.0/, its SOURCE.md): '
                'the deadsnakes and ubuntu-toolchain-r/test PPAs on rocm/dev-ubuntu-22.04, python3.12 and gcc-13.',
    'deadsnakes': 'https://launchpad.net/~deadsnakes/+archive/ubuntu/ppa (signing key F23C5A6CF475977595C89F51BA6932366A755776, '
                  'the fingerprint public build scripts pin for it: apt-key --recv-keys and keyserver look-ups of the PPA)',
    'ubuntu-toolchain-r-test': 'https://launchpad.net/~ubuntu-toolchain-r/+archive/ubuntu/test (signing key '
                               '60C317803A41BA51845E371A1E9377A2BA9EF27F, as above)',
}

# The keyserver Launchpad publishes PPA keys to; op=get&options=mr gives the armored key alone.
_KEYSERVER = 'https://keyserver.ubuntu.com/pks/lookup?op=get&options=mr&search=0x%s'

# The PPAs: Launchpad's archive URL (ppa.launchpadcontent.net), component, signing key.
PPAS = {
    'deadsnakes': {
        'page': 'https://launchpad.net/~deadsnakes/+archive/ubuntu/ppa',
        'uri': 'https://ppa.launchpadcontent.net/deadsnakes/ppa/ubuntu',
        'components': ['main'],
        'fingerprint': 'F23C5A6CF475977595C89F51BA6932366A755776',
    },
    'ubuntu-toolchain-r-test': {
        'page': 'https://launchpad.net/~ubuntu-toolchain-r/+archive/ubuntu/test',
        'uri': 'https://ppa.launchpadcontent.net/ubuntu-toolchain-r/test/ubuntu',
        'components': ['main'],
        'fingerprint': '60C317803A41BA51845E371A1E9377A2BA9EF27F',
    },
}
for _ppa in PPAS.values():
    _ppa['key_url'] = _KEYSERVER % _ppa['fingerprint']

# The key of a mirrored PPA, beside its copy on the fleet's mirror (apt/<name>/).
MIRROR_KEY_FILE = 'key.asc'
# Where the roles write a PPA's key (apt reads it as an armored keyring).
KEYRING = '/etc/apt/keyrings/llmfleet-%s.asc'

# System (the base role's platform key) -> its suite, its own python3 and gcc, and what else it can give, and from where
# (None: the archive).
SYSTEMS = {
    'Ubuntu-22': {
        'name': 'Ubuntu 22.04', 'suite': 'jammy', 'python': '3.10', 'gcc': '11',
        'pythons': {'3.12': 'deadsnakes'},
        'gccs': {'13': 'ubuntu-toolchain-r-test'},
    },
    'Ubuntu-24': {
        'name': 'Ubuntu 24.04', 'suite': 'noble', 'python': '3.12', 'gcc': '13',
        'pythons': {},
        'gccs': {},
    },
    'Debian-12': {
        'name': 'Debian 12', 'suite': 'bookworm', 'python': '3.11', 'gcc': '12',
        'pythons': {},
        'gccs': {},
    },
}

_VERSION_RE = re.compile(r'^(?P<major>[0-9]+)\.(?P<minor>[0-9]+)\Z')
_GCC_RE = re.compile(r'^[0-9]+\Z')


def _text(value):
    return str(value).strip() if value is not None else ''


def version_tuple(text):
    """(3, 12) for '3.12'; None for anything else."""
    match = _VERSION_RE.match(_text(text))
    return (int(match.group('major')), int(match.group('minor'))) if match else None


def _in_range(version, bounds):
    found = version_tuple(version)
    return found is not None and (not bounds or bounds[0] <= found < bounds[1])


def _range_text(bounds):
    return '>=%d.%d,<%d.%d' % (bounds[0] + bounds[1]) if bounds else 'any'


def recipe_needs(release, releases):
    """What the build of a vLLM release needs of a system: ``{release, python_version, python_range, gcc}`` from its
    entry of the recipe table (``releases``) and its requires-python (``_support_matrix.VLLM_PYTHON``); ``{}`` for no
    release. A release outside the table still has its Python range where the support matrix knows it."""
    release = _text(release)
    if not release:
        return {}
    entry = (releases or {}).get(release) or {}
    return {'release': release, 'python_version': _text(entry.get('python_version')) or None,
            'python_range': matrix.vllm_python_range(release), 'gcc': _text(entry.get('gcc')) or None}


def _python_entry(system, row, version):
    """The packages, path and source of Python ``version`` on a system's row (None where the row has none)."""
    if version == row['python']:
        return {'version': version, 'path': '/usr/bin/python3', 'packages': ['python3', 'python3-venv'],
                'dev_packages': ['python3-dev'], 'source': None, 'given': False}
    if version in row['pythons']:
        return {'version': version, 'path': '/usr/bin/python%s' % version,
                'packages': ['python%s' % version, 'python%s-venv' % version], 'dev_packages': ['python%s-dev' % version],
                'source': row['pythons'][version], 'given': False}
    return None


def _gcc_entry(row, version):
    if version == row['gcc']:
        source = None
    elif version in row['gccs']:
        source = row['gccs'][version]
    else:
        return None
    return {'version': version, 'cc': 'gcc-%s' % version, 'cxx': 'g++-%s' % version,
            'packages': ['gcc-%s' % version, 'g++-%s' % version], 'source': source}


def _offers(row, kind):
    own = row['python'] if kind == 'python' else row['gcc']
    others = row['pythons'] if kind == 'python' else row['gccs']
    return ', '.join(['%s (the archive\'s own)' % own]
                     + ['%s (%s PPA)' % (version, source) for version, source in sorted(others.items())])


def apt_source(name, system, mirror_url=''):
    """The apt source of PPA ``name`` for a system: name, uris, suites, components, key_url, fingerprint, keyring.
    With the fleet's mirror, its copy under apt/<name>/ and the key beside it."""
    ppa = PPAS[name]
    mirror = _text(mirror_url).rstrip('/')
    base = '%s/apt/%s' % (mirror, name) if mirror else ppa['uri']
    return {'name': name, 'uris': [base], 'suites': [SYSTEMS[system]['suite']], 'components': list(ppa['components']),
            'key_url': ('%s/%s' % (base, MIRROR_KEY_FILE)) if mirror else ppa['key_url'],
            'fingerprint': ppa['fingerprint'], 'keyring': KEYRING % name}


def toolchain(system, python_version='', gcc_version='', python_path='', recipe=None, mirror_url='', who='toolchain'):
    """What a system installs for a build (or an engine's venv) and from where.

    ``system``: the base role's platform key (Ubuntu-22, Ubuntu-24, Debian-12). ``python_version`` / ``gcc_version``:
    the user's (``"3.12"``, ``"13"``), ``""`` for the recipe's. ``python_path``: the user's Python (taken as it is;
    nothing installed for it). ``recipe``: ``{release, python_version, python_range: ((3, 11), (3, 15)), gcc}`` of the
    vLLM release the build follows (``{}``: no release, the system's own python3 and gcc). ``who``: ``toolchain`` or
    ``engine``, whose variables the messages name.

    Returns ``{system, python: {version, path, packages, dev_packages, source, given}, gcc: {version, cc, cxx,
    packages, source} or None, env: {CC, CXX} or {}, packages, apt_sources, fallback, problems}``.
    """
    recipe = recipe if isinstance(recipe, dict) else {}
    row = SYSTEMS.get(_text(system))
    variable = '%s_python' % who
    wanted_python = _text(python_version) or _text(recipe.get('python_version'))
    wanted_gcc = _text(gcc_version) or _text(recipe.get('gcc'))
    bounds = recipe.get('python_range')
    bounds = (tuple(bounds[0]), tuple(bounds[1])) if bounds else None
    release = _text(recipe.get('release')) or None
    result = {'system': _text(system), 'python': None, 'gcc': None, 'env': {}, 'packages': [], 'apt_sources': [],
              'fallback': None, 'problems': []}
    problems = result['problems']
    if row is None:
        problems.append('%s has no row in the toolchain table (it holds %s).' % (_text(system) or 'This system',
                                                                                 ', '.join(sorted(SYSTEMS))))
        return result
    name = row['name']
    # The Python.
    if _text(python_path):
        result['python'] = {'version': None, 'path': _text(python_path), 'packages': [], 'dev_packages': [],
                            'source': 'user', 'given': True}
    elif _text(python_version):
        if version_tuple(python_version) is None:
            problems.append('%s_version %r is not a Python version such as "3.12".' % (variable, _text(python_version)))
        else:
            result['python'] = _python_entry(system, row, _text(python_version))
            if result['python'] is None:
                problems.append('%s cannot give Python %s: it has %s. Set %s_version to one of those, or set %s to the '
                                'path of a Python %s you provide (such as a relocatable build unpacked from the fleet\'s '
                                'mirror).' % (name, _text(python_version), _offers(row, 'python'), variable, variable,
                                              _text(python_version)))
    else:
        entry = _python_entry(system, row, wanted_python) if wanted_python else None
        if entry is None and wanted_python and _in_range(row['python'], bounds):
            entry = _python_entry(system, row, row['python'])
            result['fallback'] = ('%s cannot give vLLM %s\'s Python %s (%s); its own Python %s is inside the release\'s '
                                  'range %s and is used.' % (name, release, wanted_python, _offers(row, 'python'),
                                                             row['python'], _range_text(bounds)))
        elif entry is None and not wanted_python:
            entry = _python_entry(system, row, row['python'])
        result['python'] = entry
        if entry is None:
            problems.append('%s cannot give vLLM %s\'s Python %s, and its own Python %s is outside the release\'s range %s'
                            ' (it has %s). Set %s to the path of a Python %s you provide (such as a relocatable build '
                            'unpacked from the fleet\'s mirror), or %s_version to one of those.'
                            % (name, release, wanted_python, row['python'], _range_text(bounds), _offers(row, 'python'),
                               variable, wanted_python, variable))
    if result['python'] and not result['python']['given'] and bounds and not _in_range(result['python']['version'], bounds):
        problems.append('Python %s (%s) is outside vLLM %s\'s range %s: set %s_version to a Python inside it (%s has %s).'
                        % (result['python']['version'], result['python']['path'], release, _range_text(bounds), variable,
                           name, _offers(row, 'python')))
    # The compiler (builds only).
    if who == 'toolchain' and wanted_gcc:
        if not _GCC_RE.match(wanted_gcc):
            problems.append('toolchain_gcc_version %r is not a gcc major version such as "13".' % wanted_gcc)
        else:
            result['gcc'] = _gcc_entry(row, wanted_gcc)
            if result['gcc'] is None:
                chosen = ('toolchain_gcc_version is %s' % wanted_gcc if _text(gcc_version)
                          else 'vLLM %s\'s recipe builds torch with gcc %s' % (release, wanted_gcc))
                problems.append('%s cannot give gcc %s (%s): it has %s. Build on a system that has it (Ubuntu 22.04 '
                                'through the ubuntu-toolchain-r/test PPA, Ubuntu 24.04 from its archive), or set '
                                'toolchain_gcc_version to the version it has ("%s") and accept that upstream did not '
                                'build with it (torch 2.12 and newer need gcc 13\'s libgcc, so that build may fail).'
                                % (name, wanted_gcc, chosen, _offers(row, 'gcc'), row['gcc']))
            else:
                result['env'] = {'CC': result['gcc']['cc'], 'CXX': result['gcc']['cxx']}
    sources = []
    for part in (result['python'], result['gcc']):
        if part and part.get('source') and part['source'] != 'user' and part['source'] not in sources:
            sources.append(part['source'])
    result['apt_sources'] = [apt_source(source, system, mirror_url) for source in sources]
    packages = []
    if result['python']:
        packages.extend(result['python']['packages'] + (result['python']['dev_packages'] if who == 'toolchain' else []))
    if result['gcc']:
        packages.extend(result['gcc']['packages'])
    result['packages'] = packages
    return result
