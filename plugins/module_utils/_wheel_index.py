# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prebuilt path (``engine_source: wheels``): a hashed lock read, and the files of an index (PEP 503) found for it.

- ``lock_entries`` / ``lock_problems``: a lock in pip's requirements format (as ``uv pip compile --generate-hashes`` or
  ``pip-compile --generate-hashes`` write it: ``name==version`` then one or more ``--hash=sha256:<hex>``, lines joined
  by a trailing backslash, comments and environment markers allowed). The nodes install it with ``--no-deps
  --require-hashes``, so every line must pin one version and carry its sha256.
- ``index_pages`` / ``index_files``: the mirror role reads each locked project's page on each index and takes the
  files the lock names. vLLM's ROCm index (``.buildkite/scripts/generate-nightly-index.py`` of vLLM 0.32.0) links its
  files relatively (``../../../<commit>/<file>``, ``+`` written ``%2B``), without hash fragments, and names a project's
  directory as its wheel file names it (``flash_attn/``), not normalised as pip asks (``flash-attn/``): both forms are
  read. PyPI's pages carry ``#sha256=`` fragments, which pick the locked file among a release's many.
- ``rocm_label_warnings``: a vLLM ROCm wheel's version ends in ``+rocm<digits>`` (vLLM's setup.py: the first three
  digits of the ROCm it was built against); a node whose ROCm is another release gets a warning.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

try:
    from html.parser import HTMLParser
    from urllib.parse import unquote, urljoin, urlsplit
except ImportError:  # pragma: no cover - Python 2 is not supported by the collection
    HTMLParser = object

_NAME_RE = re.compile(r'^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\Z')
_HASH_RE = re.compile(r'^--hash[= ]sha256:([0-9a-fA-F]{64})\Z')
_OTHER_HASH_RE = re.compile(r'^--hash[= ]')
_WHEEL_RE = re.compile(r'^(?P<name>[^-]+)-(?P<version>[^-]+)(?:-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl\Z')
_SDIST_RE = re.compile(r'^(?P<name>.+)-(?P<version>[0-9][^-]*)\.(?:tar\.gz|zip)\Z')
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
    """The lock's requirements: a list of {line, name (normalised), version, hashes, problem}; ``problem`` is None for a
    line the nodes can install with --no-deps --require-hashes, else why not."""
    entries = []
    for number, line in _logical_lines(text):
        words = line.split()
        hashes = [match.group(1).lower() for match in (_HASH_RE.match(word) for word in words) if match]
        others = [word for word in words if _OTHER_HASH_RE.match(word) and not _HASH_RE.match(word)]
        requirement = ' '.join(word for word in words if not _OTHER_HASH_RE.match(word)).split(';', 1)[0].strip()
        entry = {'line': number, 'name': None, 'version': None, 'hashes': hashes, 'problem': None}
        if line.startswith('-'):
            entry['problem'] = ('line %d is a pip option (%s): the role gives pip its index (engine_wheels_index_urls);'
                                ' the lock holds requirements only' % (number, words[0]))
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


def _index_root(url):
    return str(url).rstrip('/') + '/'


def _page_names(name):
    """The directories an index may give a project: pip's normalised name, and the name as wheel files write it."""
    names = [name, name.replace('-', '_')]
    return [item for position, item in enumerate(names) if item not in names[:position]]


def index_pages(entries, index_urls):
    """The project pages to read for the lock's entries, in the order of the indexes: a list of {url, index, name}."""
    pages = []
    for index in index_urls or []:
        for entry in entries:
            if not entry.get('name'):
                continue
            for directory in _page_names(entry['name']):
                page = {'url': '%s%s/' % (_index_root(index), directory), 'index': _index_root(index), 'name': entry['name']}
                if page not in pages:
                    pages.append(page)
    return pages


class _Links(HTMLParser):
    def __init__(self):
        HTMLParser.__init__(self, convert_charrefs=True)
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        if tag == 'a':
            href = dict(attrs).get('href')
            if href:
                self.hrefs.append(href)


def file_name_version(filename):
    """(normalised name, version) of a wheel or sdist file name, or (None, None)."""
    for pattern in (_WHEEL_RE, _SDIST_RE):
        match = pattern.match(filename)
        if match:
            return normalize(match.group('name')), match.group('version')
    return None, None


def page_links(html, page_url):
    """The files a project page links: a list of {file, url (absolute, without fragment), sha256 (or None)}."""
    parser = _Links()
    parser.feed(html or '')
    parser.close()
    links = []
    for href in parser.hrefs:
        absolute = urljoin(page_url, href)
        url, _sep, fragment = absolute.partition('#')
        filename = unquote(urlsplit(url).path.rsplit('/', 1)[-1])
        if not filename:
            continue
        match = re.match(r'^sha256=([0-9a-fA-F]{64})$', fragment)
        links.append({'file': filename, 'url': url, 'sha256': match.group(1).lower() if match else None})
    return links


def _same_version(left, right):
    return str(left).lower() == str(right).lower()


def index_files(entries, pages):
    """The files to fetch for the lock: a list of {name, file, url, sha256}, and a list of problems.

    ``pages``: each {url, index, name, status, content} (a page that answered other than 200 counts as absent). For
    each entry the first index whose pages link files of its version is used: links with a sha256 fragment count when
    the lock has that hash; a link without one is taken when the lock has exactly one hash for the entry and the page
    one file of that version (the fetch checks it against that hash)."""
    files, problems = [], []
    for entry in entries:
        if not entry.get('name'):
            continue
        found = None
        for index in _ordered_indexes(pages):
            links = []
            for page in pages:
                if page.get('index') == index and page.get('name') == entry['name'] and page.get('status') == 200:
                    links.extend(link for link in page_links(page.get('content') or '', page['url'])
                                 if _is_file_of(link['file'], entry))
            if links:
                found = (index, links)
                break
        label = '%s==%s' % (entry['name'], entry['version'])
        if found is None:
            problems.append('%s: no index links a file of it (read: %s)' % (
                label, ', '.join(page['url'] for page in pages if page.get('name') == entry['name']) or 'no page'))
            continue
        index, links = found
        hashed = [link for link in links if link['sha256'] in entry['hashes']]
        unhashed = [link for link in links if link['sha256'] is None]
        if hashed:
            chosen = hashed
        elif len(unhashed) == 1 and len(entry['hashes']) == 1:
            chosen = [dict(unhashed[0], sha256=entry['hashes'][0])]
        elif unhashed:
            problems.append('%s: %s links %d files of it without a hash (%s) and the lock has %d hashes for it: which file'
                            ' a hash belongs to cannot be told before fetching; keep one hash per line, the file the nodes'
                            ' install' % (label, index, len(unhashed), ', '.join(link['file'] for link in unhashed),
                                          len(entry['hashes'])))
            continue
        else:
            problems.append('%s: none of the files %s links (%s) has a sha256 the lock names' % (
                label, index, ', '.join(link['file'] for link in links)))
            continue
        for link in chosen:
            item = {'name': entry['name'], 'file': link['file'], 'url': link['url'], 'sha256': link['sha256']}
            if item not in files:
                files.append(item)
    return files, problems


def _is_file_of(filename, entry):
    """The file is a wheel or sdist of the entry's project and version (the version's case aside)."""
    name, version = file_name_version(filename)
    return name == entry['name'] and version is not None and _same_version(version, entry['version'])


def _ordered_indexes(pages):
    indexes = []
    for page in pages:
        if page.get('index') not in indexes:
            indexes.append(page.get('index'))
    return indexes


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
