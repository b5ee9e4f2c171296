# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mirror role's plan (``mirror_plan``) and the reading of a wheelhouse's SHA256SUMS (``sha256sums_files``).

The plan says what one snapshot holds: AMD's apt repositories for exactly the releases and suites the fleet uses
(each with the debmirror command that copies it verbatim), the keys the nodes trust, the wheelhouses, the package
indexes (each with the pip command that downloads what its lock pins) and the models. Its key is a digest of all that:
a snapshot is made again only when what is asked changes (AMD's release paths never change once published), or when a
refresh is asked for.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import hashlib
import json
import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.six.moves.urllib.parse import urlsplit

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.amd_repositories import graphics_wanted, repository_path
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import show

# Where AMD's repositories sit in a snapshot: <mirror URL>/amd/ is what the nodes take as their rocm_repo_base_url.
AMD_PREFIX = 'amd'
# The mirror host's own pip (python3-pip). PIP_CONFIG_FILE=/dev/null skips every pip.conf, the system's too, which
# --isolated keeps reading; --isolated drops the PIP_* variables and the user's configuration.
PIP = ['env', 'PIP_CONFIG_FILE=/dev/null', '/usr/bin/python3', '-m', 'pip', '--isolated']
# A SHA256SUMS line: a plain file name (a wheel's or an sdist's), which the mirror's fetch uses as it is: in the
# wheelhouse's directory, after its URL, as curl's and sha256sum's argument. No directory, no leading "." or "-".
_SUMS_LINE_RE = re.compile(r'^([0-9a-fA-F]{64}) [ *]([A-Za-z0-9_][A-Za-z0-9._+-]*)\Z')


def _strip(url):
    return url.rstrip('/')


def _debmirror_argv(url, suites, components, architectures, keyring):
    """debmirror's arguments for one repository (the target directory is added by the task)."""
    parts = urlsplit(url)
    return ['debmirror', '--nosource', '--method=%s' % parts.scheme, '--host=%s' % parts.netloc,
            '--root=%s' % (parts.path.strip('/') or '/'), '--dist=%s' % ','.join(suites),
            '--section=%s' % ','.join(components), '--arch=%s' % ','.join(architectures),
            '--keyring=%s' % keyring, '--rsync-extra=none', '--diff=none', '--progress']


def _repository(name, path, url, suites, components, architectures, keyring):
    return {'name': name, 'path': path, 'url': _strip(url), 'suites': sorted(set(suites)),
            'components': list(components), 'architectures': list(architectures),
            'debmirror': _debmirror_argv(_strip(url), sorted(set(suites)), components, architectures, keyring)}


def _pip_download_argv(index_urls, python_version, platforms):
    """pip's arguments for one package index: exactly the files the lock pins (no dependency resolved, binaries only,
    every sha256 checked) from the first index that has them, for the nodes' Python and platforms where given (the
    mirror host's own otherwise). The task adds --dest and -r. An http index is trusted by host name, as the nodes'
    pip trusts the mirror: the lock's hashes check every file."""
    hosts = sorted(set(urlsplit(url).hostname for url in index_urls if url.startswith('http://')))
    argv = PIP + ['download', '--no-deps', '--require-hashes', '--only-binary', ':all:', '--no-cache-dir',
                  '--progress-bar', 'off', '--no-input', '--disable-pip-version-check', '--index-url', index_urls[0]]
    argv += ['--extra-index-url=%s' % url for url in index_urls[1:]] + ['--trusted-host=%s' % host for host in hosts]
    if python_version:
        argv += ['--python-version', str(python_version)]
    for platform in platforms:
        argv += ['--platform', platform]
    return argv


def _wheel_index(item):
    index_urls = [_strip(url) + '/' for url in item['index_urls']]
    python_version, platforms = item.get('python_version') or '', list(item.get('platforms') or [])
    index = {'name': item['name'], 'index_urls': index_urls, 'lock': item['lock'], 'lock_file': _lock_file(item['lock']),
             'path': 'wheels/%s' % item['name'], 'pip': _pip_download_argv(index_urls, python_version, platforms)}
    if python_version:
        index['python_version'] = str(python_version)
    if platforms:
        index['platforms'] = platforms
    return index


def _apt_repository(extra, architectures, keyring):
    """An entry of mirror_apt_repositories: signed by AMD's key, or by its own (key_url and key_fingerprints, such as a
    Launchpad PPA's): then it is checked with a keyring of that key alone, and the key is served beside it."""
    name = extra['name']
    if extra.get('key_url'):
        keyring = '%s/apt-%s.gpg' % (keyring.rsplit('/', 1)[0], name)
    repository = _repository(name, 'apt/%s' % name, extra['url'], extra['suites'], extra.get('components') or ['main'],
                             extra.get('architectures') or architectures, keyring)
    if extra.get('key_url'):
        repository['own_key'] = {'url': extra['key_url'], 'path': 'apt/%s/key.asc' % name, 'keyring': keyring,
                                 'fingerprints': [str(fp).replace(' ', '').upper() for fp in extra.get('key_fingerprints') or []]}
    return repository


def _lock_file(url):
    """The lock's file name as the mirror serves it beside the index (the engine role's engine_requirements_file)."""
    name = urlsplit(url).path.rstrip('/').rsplit('/', 1)[-1]
    return name if name and name not in ('.', '..') else 'requirements.lock'


def mirror_fleet(hosts, hostvars, platforms, defaults, monitoring=False):
    """What each node of the fleet installs from AMD: its suite (the support table's, from its distribution facts)
    and its rocm, graphics, amdgpu and Device Metrics Exporter releases (its own variables, else the roles'
    ``defaults``). The graphics release is the ROCm release where the node registers that repository (the rocm role's
    rule, ``rocm_graphics_repository``), else empty.

    ``monitoring``: the fleet has a monitoring host, so the GPU nodes run AMD's exporter where it is enabled."""
    fleet = []
    for host in hosts or []:
        node = hostvars[host] if host in hostvars else {}
        facts = node.get('ansible_facts') or {}

        def value(name, node=node):
            return node[name] if name in node else defaults.get(name)

        key = '%s-%s' % (facts.get('distribution'), facts.get('distribution_major_version'))
        rocm_version = str(value('rocm_version') or '')
        fleet.append({
            'host': host,
            'facts': bool(facts.get('distribution')),
            'suite': (platforms.get(key) or {}).get('rocm_suite') or '',
            'rocm_version': rocm_version,
            'graphics_version': rocm_version if graphics_wanted(rocm_version, value('rocm_graphics_repository')) else '',
            'amdgpu_version': str(value('rocm_amdgpu_version') or '') if value('rocm_install_driver') else '',
            'exporter_version': (str(value('exporters_amdgpu_exporter_version') or '')
                                 if monitoring and value('exporters_amdgpu_exporter_enabled') else ''),
        })
    return fleet


def mirror_plan(values, fleet, keyring):
    """The snapshot's contents from the mirror_* variables and the fleet's nodes.

    ``fleet``: one mapping per node that installs AMD packages, with ``suite`` (from the support table),
    ``rocm_version``, ``graphics_version`` (empty when the node registers no graphics repository), ``amdgpu_version``
    (empty when the node takes no driver) and ``exporter_version`` (empty when it runs no AMD exporter).
    ``keyring``: the path of the binary keyring debmirror checks AMD's Release files with.
    """
    if not isinstance(values, dict) or not isinstance(fleet, list):
        raise AnsibleFilterError('mirror_plan expects the mirror_* variables (a dict) and the fleet (a list)')
    amd = _strip(values['mirror_amd_url'])
    architectures = list(values['mirror_architectures'])
    releases = {}
    for node in fleet:
        for kind, field in (('rocm', 'rocm_version'), ('graphics', 'graphics_version'), ('amdgpu', 'amdgpu_version'),
                            ('exporter', 'exporter_version')):
            release = node.get(field) or ''
            if release:
                releases.setdefault((kind, str(release)), set()).add(node['suite'])
    repositories = []
    for (kind, release), suites in sorted(releases.items()):
        relative = repository_path(kind, release)
        repositories.append(_repository('%s-%s' % (kind, release), '%s/%s' % (AMD_PREFIX, relative),
                                        '%s/%s' % (amd, relative), suites, ['main'], architectures, keyring))
    for extra in values['mirror_apt_repositories']:
        repositories.append(_apt_repository(extra, architectures, keyring))
    plan = {
        'repositories': repositories,
        'key': {'url': values['mirror_amd_key_url'], 'path': '%s/rocm/rocm.gpg.key' % AMD_PREFIX},
        'wheelhouses': [{'name': item['name'], 'url': _strip(item['url']) + '/', 'path': 'wheels/%s' % item['name'],
                         'files': list(item.get('files') or [])}
                        for item in values['mirror_wheelhouses']],
        'wheel_indexes': [_wheel_index(item) for item in values.get('mirror_wheel_indexes') or []],
        'models': [{'name': item['name'], 'url': item['url'], 'checksum': item['checksum'],
                    'path': 'models/%s' % item['name']}
                   for item in values['mirror_models']],
    }
    # A plan without wheel indexes keeps the id it had before they could be asked for (no new snapshot on an upgrade).
    request = {'plan': dict((key, value) for key, value in plan.items() if value or key != 'wheel_indexes'),
               'refresh': values.get('mirror_refresh_id') or ''}
    plan['id'] = hashlib.sha256(json.dumps(request, sort_keys=True).encode('utf-8')).hexdigest()[:16]
    return plan


def sha256sums_files(text):
    """A wheelhouse's SHA256SUMS (``<sha256>  <file>`` lines) -> a list of {file, sha256}; refuses anything else."""
    files, seen = [], set()
    for number, line in enumerate((text or '').splitlines(), start=1):
        if not line.strip():
            continue
        match = _SUMS_LINE_RE.match(line.strip())
        if not match:
            raise AnsibleFilterError('SHA256SUMS line %d is not "<sha256>  <file name>" (a file name of letters, digits,'
                                     ' "_", ".", "+" or "-", not starting with "." or "-"): %s' % (number, show(line)))
        if match.group(2) in seen:
            raise AnsibleFilterError('SHA256SUMS line %d names %s again' % (number, match.group(2)))
        seen.add(match.group(2))
        files.append({'file': match.group(2), 'sha256': match.group(1).lower()})
    if not files:
        raise AnsibleFilterError('SHA256SUMS lists no file')
    return files


def mirror_wheels(results):
    """The wheels to fetch, from the slurped SHA256SUMS of each wheelhouse (a loop's results, ``item`` the
    wheelhouse): a list of {url, path, sha256}."""
    wheels = []
    for result in results or []:
        wheelhouse = result['item']
        text = base64.b64decode(result['content']).decode('utf-8', 'replace')
        try:
            files = sha256sums_files(text)
        except AnsibleFilterError as exc:
            raise AnsibleFilterError('wheelhouse %s (%sSHA256SUMS): %s' % (wheelhouse['name'], wheelhouse['url'], exc))
        wheels.extend({'url': wheelhouse['url'] + item['file'], 'path': '%s/%s' % (wheelhouse['path'], item['file']),
                       'sha256': item['sha256']} for item in files)
    return wheels


def mirror_manifest_repositories(results):
    """The repositories as the check found them (apt_mirror_verify's results in a loop) for the manifest."""
    return [{'name': result['item']['name'], 'path': result['item']['path'], 'url': result['item']['url'],
             'suites': result.get('suites') or [], 'packages': result.get('packages'), 'bytes': result.get('bytes')}
            for result in results or []]
