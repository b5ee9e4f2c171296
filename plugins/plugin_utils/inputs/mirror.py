# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks of the mirror role (``input_problems('mirror')``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import re

from ansible_collections.llmfleet.rocm.plugins.module_utils._wheel_index import lock_entries, lock_problems
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import (
    RuleSet, as_int, is_absolute_path, is_http_url, is_ip_address, is_nginx_path, show, supported_system_rule)

_NAME_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*\Z')
_WORD_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._+-]*\Z')
_RELEASE_RE = re.compile(r'^[0-9]+\.[0-9]+(\.[0-9]+)?\Z')
_SHA256_RE = re.compile(r'^[0-9a-f]{64}\Z')
_FINGERPRINT_RE = re.compile(r'^[0-9A-Fa-f]{40}\Z')
_PYTHON_VERSION_RE = re.compile(r'^3\.[0-9]{1,2}\Z')
_PLATFORM_TAG_RE = re.compile(r'^[a-z0-9_]+\Z')


RULES = RuleSet('mirror')
supported_system_rule(RULES)


@RULES.rule('mirror-root-absolute')
def _root(values, ctx):
    root = values['mirror_root']
    if not (is_absolute_path(root) and is_nginx_path(root)):
        return ('mirror_root %s must be an absolute path without spaces or any of ;{}#$\'"\\ (nginx serves it), such as'
                ' /srv/llmfleet-mirror.' % show(root))
    return None


@RULES.rule('mirror-urls')
def _urls(values, ctx):
    found = []
    for name in ('mirror_amd_url', 'mirror_amd_key_url'):
        if not is_http_url(values[name]):
            found.append('%s %s must be an http(s) URL.' % (name, show(values[name])))
    return found


@RULES.rule('mirror-key-fingerprints')
def _fingerprints(values, ctx):
    pins = values['mirror_amd_key_fingerprints']
    bad = [pin for pin in pins if not (isinstance(pin, str) and _FINGERPRINT_RE.match(pin.replace(' ', '')))] \
        if isinstance(pins, list) else [pins]
    if bad:
        return ('mirror_amd_key_fingerprints %s must list OpenPGP fingerprints of 40 hex digits (spaces allowed), such'
                ' as the one `gpg --show-keys <key file>` prints.' % ', '.join(show(pin) for pin in bad))
    return None


@RULES.rule('mirror-architectures')
def _architectures(values, ctx):
    items = values['mirror_architectures']
    if not items or not all(isinstance(item, str) and _WORD_RE.match(item) for item in items):
        return 'mirror_architectures %s must list Debian architectures such as amd64.' % show(items)
    return None


@RULES.rule('mirror-fleet-releases')
def _fleet(values, ctx):
    found = []
    for node in ctx.get('fleet') or []:
        for field in ('rocm_version', 'amdgpu_version', 'exporter_version'):
            release = node.get(field) or ''
            if release and not _RELEASE_RE.match(str(release)):
                found.append('%s: %s %s is not a release such as 7.1.1; the mirror copies AMD\'s repository of that'
                             ' release.' % (node.get('host'), field.replace('_version', ''), show(release)))
        if not node.get('facts'):
            found.append('%s: its facts were not gathered, so its system (and the suite of AMD\'s repositories it'
                         ' uses) is not known; playbooks/mirror.yml gathers them.' % node.get('host'))
        elif not node.get('suite'):
            found.append('%s: its system is not in the support table, so no suite of AMD\'s repositories is known'
                         ' for it.' % node.get('host'))
    return found


@RULES.rule('mirror-nothing')
def _nothing(values, ctx):
    if not (ctx.get('fleet') or values['mirror_apt_repositories'] or values['mirror_wheelhouses'] or values['mirror_models']
            or values.get('mirror_wheel_indexes')):
        return ('The mirror has nothing to hold: the groups gpu_nodes and builders have no host, and'
                ' mirror_apt_repositories, mirror_wheelhouses, mirror_wheel_indexes and mirror_models are empty.')
    return None


def _entries(values, name, required):
    found = []
    items = values[name]
    if not isinstance(items, list):
        return ['%s must be a list.' % name], []
    good = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            found.append('%s[%d] %s must be a mapping with %s.' % (name, index, show(item), ', '.join(required)))
            continue
        missing = [key for key in required if not item.get(key)]
        if missing:
            found.append('%s[%d] lacks %s.' % (name, index, ', '.join(missing)))
            continue
        if not (isinstance(item['name'], str) and _NAME_RE.match(item['name'])):
            found.append('%s[%d].name %s must be a file name of letters, digits, ".", "_" or "-".'
                         % (name, index, show(item['name'])))
            continue
        good.append(item)
    names = [item['name'] for item in good]
    twice = sorted(set(item for item in names if names.count(item) > 1))
    if twice:
        found.append('%s names %s more than once.' % (name, ', '.join(show(item) for item in twice)))
    return found, good


@RULES.rule('mirror-apt-repositories')
def _apt(values, ctx):
    found, good = _entries(values, 'mirror_apt_repositories', ('name', 'url', 'suites'))
    for item in good:
        if not is_http_url(item['url']):
            found.append('mirror_apt_repositories %s: url %s must be an http(s) URL.' % (item['name'], show(item['url'])))
        for key in ('suites', 'components', 'architectures'):
            words = item.get(key) or []
            if not isinstance(words, list) or not all(isinstance(word, str) and _WORD_RE.match(word) for word in words):
                found.append('mirror_apt_repositories %s: %s %s must be a list of names such as jammy, main or amd64.'
                             % (item['name'], key, show(words)))
    return found


_FINGERPRINT_RE = re.compile(r'^[0-9A-Fa-f]{40}\Z')


@RULES.rule('mirror-apt-repository-keys')
def _apt_keys(values, ctx):
    """An entry signed by its own key (a Launchpad PPA's) names where the key is and the fingerprints it must have."""
    found = []
    for item in _entries(values, 'mirror_apt_repositories', ('name', 'url', 'suites'))[1]:
        url, pins = item.get('key_url'), item.get('key_fingerprints')
        if not url and not pins:
            continue
        if not is_http_url(url):
            found.append('mirror_apt_repositories %s: key_url %s must be the http(s) URL of its signing key (armored), given'
                         ' with key_fingerprints.' % (item['name'], show(url)))
        fingerprints = [str(fp).replace(' ', '') for fp in pins] if isinstance(pins, list) else []
        if not fingerprints or not all(_FINGERPRINT_RE.match(fp) for fp in fingerprints):
            found.append('mirror_apt_repositories %s: key_fingerprints %s must list the 40 hexadecimal digits of each key'
                         ' that may sign its Release files (the PPA\'s, such as F23C5A6CF475977595C89F51BA6932366A755776'
                         ' for deadsnakes): a key fetched from a URL is trusted only by its fingerprint.'
                         % (item['name'], show(pins)))
    return found


@RULES.rule('mirror-wheelhouses')
def _wheelhouses(values, ctx):
    found, good = _entries(values, 'mirror_wheelhouses', ('name', 'url'))
    for item in good:
        if not is_http_url(item['url']):
            found.append('mirror_wheelhouses %s: url %s must be an http(s) URL of the wheelhouse\'s directory (it holds'
                         ' SHA256SUMS).' % (item['name'], show(item['url'])))
        files = item.get('files') or []
        if not isinstance(files, list) or not all(isinstance(f, str) and _NAME_RE.match(f) for f in files):
            found.append('mirror_wheelhouses %s: files %s must list file names in the wheelhouse, such as'
                         ' requirements.txt.' % (item['name'], show(files)))
    return found


@RULES.rule('mirror-wheel-indexes')
def _wheel_indexes(values, ctx):
    found, good = _entries(values, 'mirror_wheel_indexes', ('name', 'index_urls', 'lock'))
    names = [item['name'] for item in values['mirror_wheelhouses'] if isinstance(item, dict)] if isinstance(
        values['mirror_wheelhouses'], list) else []
    for item in good:
        urls = item['index_urls']
        if not isinstance(urls, list) or not all(is_http_url(url) for url in urls):
            found.append('mirror_wheel_indexes %s: index_urls %s must list the http(s) URLs of package indexes (PEP 503),'
                         ' such as [https://wheels.vllm.ai/rocm/<version>/<variant>/, https://pypi.org/simple/].'
                         % (item['name'], show(urls)))
        if not is_http_url(item['lock']):
            found.append('mirror_wheel_indexes %s: lock %s must be the http(s) URL of the lock (every line'
                         ' <name>==<version> --hash=sha256:<hex>): the mirror fetches exactly the files it pins.'
                         % (item['name'], show(item['lock'])))
        if item['name'] in names:
            found.append('mirror_wheel_indexes %s: mirror_wheelhouses has an entry of that name too; both are served under'
                         ' wheels/<name>/: give one another name.' % item['name'])
        python_version = item.get('python_version')
        if python_version is not None and not (isinstance(python_version, str) and _PYTHON_VERSION_RE.match(python_version)):
            found.append('mirror_wheel_indexes %s: python_version %s must be the nodes\' Python as a string such as "3.12"'
                         ' (pip download --python-version).' % (item['name'], show(python_version)))
        platforms = item.get('platforms')
        if platforms is not None and not (isinstance(platforms, list) and platforms and all(
                isinstance(tag, str) and _PLATFORM_TAG_RE.match(tag) for tag in platforms)):
            found.append('mirror_wheel_indexes %s: platforms %s must list the nodes\' platform tags, such as'
                         ' [manylinux_2_35_x86_64, manylinux_2_28_x86_64] (pip download --platform, each manylinux tag the'
                         ' wheels carry: pip does not widen them).' % (item['name'], show(platforms)))
    return found


@RULES.rule('mirror-wheel-index-locks')
def _wheel_index_locks(values, ctx):
    """The locks as the sync fetched them (``locks``: the slurp loop's results, ``item`` the plan's index), judged before
    pip reads them: pip would take an option line as its own, and an environment marker is judged for the mirror host's
    Python, not the nodes'."""
    found = []
    for result in ctx.get('locks') or []:
        index = result['item']
        text = base64.b64decode(result['content']).decode('utf-8', 'replace')
        problems = lock_problems(text) + [
            'line %d (%s) has an environment marker (%s), which pip judges for the mirror host\'s own Python: lock for the'
            ' nodes\' one Python and platform (uv pip compile --python-version ... --python-platform ... writes no marker)'
            % (entry['line'], '%s==%s' % (entry['name'], entry['version']), entry['marker'])
            for entry in lock_entries(text) if entry['marker'] and not entry['problem']]
        if problems:
            found.append('mirror_wheel_indexes %s: the lock %s cannot be downloaded as it pins (pip download --no-deps'
                         ' --require-hashes): %s. Every line must be <name>==<version> --hash=sha256:<hex>. Nothing is'
                         ' served from this snapshot.' % (index['name'], index['lock'], '; '.join(problems)))
    return found


@RULES.rule('mirror-models')
def _models(values, ctx):
    found, good = _entries(values, 'mirror_models', ('name', 'url', 'checksum'))
    for item in good:
        if not is_http_url(item['url']):
            found.append('mirror_models %s: url %s must be an http(s) URL.' % (item['name'], show(item['url'])))
        checksum = item['checksum']
        if not (isinstance(checksum, str) and checksum.startswith('sha256:')
                and (_SHA256_RE.match(checksum[7:]) or is_http_url(checksum[7:]))):
            found.append('mirror_models %s: checksum %s must be "sha256:<64 hex digits>" or "sha256:<URL of a sha256sum'
                         ' file>"; a model is never mirrored unchecked.' % (item['name'], show(checksum)))
    return found


@RULES.rule('mirror-listen')
def _listen(values, ctx):
    found = []
    port = as_int(values['mirror_port'])
    if port is None or not 1 <= port <= 65535:
        found.append('mirror_port %s must be a TCP port (1-65535).' % show(values['mirror_port']))
    if not is_ip_address(values['mirror_listen_address']):
        found.append('mirror_listen_address %s must be the one IP address nginx and apt-cacher-ng listen on (the'
                     ' address the fleet reaches the mirror at).' % show(values['mirror_listen_address']))
    cert, key = values['mirror_tls_certificate'], values['mirror_tls_key']
    if bool(cert) != bool(key):
        found.append('mirror_tls_certificate and mirror_tls_key go together: give both paths (TLS) or neither (HTTP).')
    elif cert and not all(is_absolute_path(path) and is_nginx_path(path) for path in (cert, key)):
        found.append('mirror_tls_certificate %s and mirror_tls_key %s must be absolute paths on the mirror host, without'
                     ' spaces or any of ;{}#$\'"\\.' % (show(cert), show(key)))
    return found


@RULES.rule('mirror-keep')
def _keep(values, ctx):
    keep = as_int(values['mirror_keep_snapshots'])
    if keep is None or keep < 1:
        return ('mirror_keep_snapshots %s must be 1 or more (the served snapshot is always kept).'
                % show(values['mirror_keep_snapshots']))
    return None


@RULES.rule('mirror-proxy')
def _proxy(values, ctx):
    proxy = values['mirror_http_proxy']
    if proxy and not is_http_url(proxy):
        return 'mirror_http_proxy %s must be "" or an http(s) URL such as http://proxy.example:3128.' % show(proxy)
    return None


@RULES.rule('mirror-apt-cache-backends')
def _backends(values, ctx):
    backends = values['mirror_apt_cache_backends']
    if not values['mirror_apt_cache']:
        return None
    if not isinstance(backends, dict) or set(backends) != {'debian', 'ubuntu'} or not all(
            isinstance(urls, list) and urls and all(is_http_url(url) for url in urls) for urls in backends.values()):
        return ('mirror_apt_cache_backends %s must map debian and ubuntu each to a list of http(s) URLs of their'
                ' archives, such as {debian: [http://deb.debian.org/debian/], ubuntu: [http://archive.ubuntu.com/ubuntu/]}.'
                % show(backends))
    return None


@RULES.rule('mirror-host-is-a-gateway')
def _gateway(values, ctx):
    if ctx.get('gateway'):
        return ('This host is in the gateways group too: the mirror writes the whole of nginx\'s configuration, which'
                ' would replace the gateway\'s. Give the mirror a host of its own.')
    return None


def mirror_input_problems(values, platform, fleet=None, gateway=False, locks=None):
    """The mirror role's variables, the fleet it serves, whether this host is a gateway too and, once a sync fetched
    them, the locks of the package indexes (the slurp loop's results) -> a list of messages (empty when they are fine)."""
    return RULES.messages(values, {'platform': platform, 'fleet': fleet or [], 'gateway': gateway, 'locks': locks or []})
