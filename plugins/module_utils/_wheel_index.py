# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prebuilt path (``engine_source: wheels``): a hashed lock read.

- ``lock_entries`` / ``lock_problems``: a lock in pip's requirements format (as ``uv pip compile --generate-hashes`` or
  ``pip-compile --generate-hashes`` write it: ``name==version`` then one or more ``--hash=sha256:<hex>``, lines joined
  by a trailing backslash, comments and environment markers allowed). The nodes install it with ``--no-deps
  --require-hashes``, so every line must pin one version and carry its sha256.
  The mirror role's pip reads the same lock (``pip download``), with one rule more: no environment marker (``marker``),
  which pip judges for the mirror host's own Python.
- ``rocm_label_warnings``: a vLLM ROCm wheel's version ends in ``+rocm<digits>`` (vLLM's setup.py: the first three
  digits of the ROCm it was built against); a node whose ROCm is another release gets a warning.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_NAME_RE = re.compile(r'^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\Z')
_HASH_RE = re.compile(r'^--hash[= ]sha256:([0-9a-fA-F]{64})\Z')
_OTHER_HASH_RE = re.compile(r'^--hash[= ]')
_ROCM_LABEL_RE = re.compile(r'\+(?:.*[.])?rocm([0-9]+)(?:[.]|\Z)')


def normalize(name):
    """PEP 503's normalised project name (what pip asks an index for)."""
    return re.sub(r'[-_.]+', '-', str(name)).lower()


def _logical_lines(text):
    """(number of the first physical line, text) of each logical line: a trailing backslash continues a line; comments
    (a # at the start or after a space) are dropped."""
    lines, current, first = [], '', None
    for number, raw in enumerate((text or '').splitlines(), start=1):
        line = re.sub(r'(^|\s)#.*$', '', raw)
        if first is None:
            first = number
        if line.rstrip().endswith('\\'):
            current += line.rstrip()[:-1] + ' '
            continue
        current += line
        if current.strip():
            lines.append((first, current.strip()))
        current, first = '', None
    if current.strip():
        lines.append((first, current.strip()))
    return lines


def lock_entries(text):
    """The lock's requirements: a list of {line, name (normalised), version, hashes, marker, problem}; ``marker`` is the
    environment marker (the text after ``;``) or None; ``problem`` is None for a line the nodes can install with --no-deps
    --require-hashes, else why not."""
    entries = []
    for number, line in _logical_lines(text):
        words = line.split()
        hashes = [match.group(1).lower() for match in (_HASH_RE.match(word) for word in words) if match]
        others = [word for word in words if _OTHER_HASH_RE.match(word) and not _HASH_RE.match(word)]
        requirement, _semicolon, marker = ' '.join(word for word in words if not _OTHER_HASH_RE.match(word)).partition(';')
        requirement = requirement.strip()
        entry = {'line': number, 'name': None, 'version': None, 'hashes': hashes, 'marker': marker.strip() or None,
                 'problem': None}
        if line.startswith('-'):
            entry['problem'] = ('line %d is a pip option (%s): the role gives pip its indexes; the lock holds requirements'
                                ' only' % (number, words[0]))
        elif '==' not in requirement or '@' in requirement:
            entry['problem'] = 'line %d (%s) does not pin one version with ==' % (number, requirement)
        else:
            name, version = [part.strip() for part in requirement.split('==', 1)]
            match = _NAME_RE.match(name)
            if not match or not version or re.search(r'[\s,<>=!~*]', version):
                entry['problem'] = 'line %d (%s) does not pin one version with ==' % (number, requirement)
            else:
                entry['name'], entry['version'] = normalize(match.group(1)), version
                if others:
                    entry['problem'] = 'line %d (%s) has a hash other than sha256 (%s)' % (number, requirement, others[0])
                elif not hashes:
                    entry['problem'] = 'line %d (%s) has no --hash=sha256:<hex>' % (number, requirement)
        entries.append(entry)
    return entries


def lock_problems(text):
    """Why the nodes could not install the lock as it is (--no-deps --require-hashes): a list of sentences."""
    entries = lock_entries(text)
    if not entries:
        return ['it pins nothing']
    problems = [entry['problem'] for entry in entries if entry['problem']]
    names = [entry['name'] for entry in entries if entry['name']]
    twice = sorted(set(name for name in names if names.count(name) > 1))
    if twice:
        problems.append('%s pinned more than once' % ', '.join(twice))
    return problems


def rocm_label_warnings(entries, rocm_version):
    """Warnings for vLLM wheels built for another ROCm release than the node's (``rocm_version``, such as 7.2.3)."""
    digits = re.sub(r'[^0-9]', '', str(rocm_version or ''))
    if not digits:
        return []
    warnings = []
    for entry in entries:
        if entry.get('name') != 'vllm':
            continue
        match = _ROCM_LABEL_RE.search(entry['version'])
        if match and not digits.startswith(match.group(1)):
            warnings.append(
                'The lock pins vllm==%s, built against ROCm rocm%s (its version\'s label), and the node has ROCm %s: vLLM\'s ROCm'
                ' wheels carry kernels and a torch built for one ROCm release. Lock the variant built for the node\'s'
                ' release (https://wheels.vllm.ai/rocm/<version>/<variant>/), install the ROCm release the wheels were'
                ' built for, or build the engine (engine_source: build).'
                % (entry['version'], match.group(1), rocm_version))
    return warnings
