# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every input rule of the mirror role, triggered and quiet."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64

import pytest

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.mirror import RULES, mirror_input_problems
from input_rules import PLATFORM, UNSUPPORTED, Case, assert_every_rule_reached, role_defaults, run_case

VALUES = dict(role_defaults('mirror'), mirror_listen_address='10.0.0.5', mirror_http_proxy='')
NODE = {'host': 'gpu-1', 'facts': True, 'suite': 'jammy', 'rocm_version': '7.1.1', 'amdgpu_version': '30.20.1',
        'exporter_version': ''}
CTX = {'platform': PLATFORM, 'fleet': [NODE]}
WHEELHOUSE = {'name': 'engine', 'url': 'http://build.example/wheels/current/', 'files': ['requirements.txt']}
INDEX = {'name': 'engine-index', 'index_urls': ['https://wheels.vllm.ai/rocm/0.32.0/rocm723/', 'https://pypi.org/simple/'],
         'lock': 'http://locks.example/vllm-0.32.0-rocm723.lock'}
H1 = '1' * 64
H2 = '2' * 64


def locks(text, name='engine-index'):
    """The sync's slurp results for one index whose lock is text."""
    return {'locks': [{'item': dict(INDEX, name=name, lock_file='vllm-0.32.0-rocm723.lock', path='wheels/' + name),
                       'content': base64.b64encode(text.encode('utf-8')).decode('ascii')}]}


MODEL = {'name': 'llama.tar.gz', 'url': 'http://models.example/llama.tar.gz', 'checksum': 'sha256:' + 'a' * 64}

# A Launchpad PPA mirrored with its own key (the toolchain's and the engine's table: deadsnakes).
PPA = {'name': 'deadsnakes', 'url': 'https://ppa.launchpadcontent.net/deadsnakes/ppa/ubuntu', 'suites': ['jammy'],
       'key_url': 'https://keyserver.ubuntu.com/pks/lookup?op=get&options=mr&search=0xF23C5A6CF475977595C89F51BA6932366A755776',
       'key_fingerprints': ['F23C5A6CF475977595C89F51BA6932366A755776']}

CASES = [
    Case('unsupported-system', {}, 'mirror-unsupported-system', {'platform': UNSUPPORTED}, contains='CentOS 9'),
    Case('supported-system', {}, 'mirror-unsupported-system', absent=True),
    Case('relative-root', {'mirror_root': 'srv/mirror'}, 'mirror-root-absolute', contains='"srv/mirror"'),
    Case('root-with-a-variable', {'mirror_root': '/srv/$host'}, 'mirror-root-absolute', contains='"/srv/$host"'),
    Case('absolute-root', {'mirror_root': '/data/mirror'}, 'mirror-root-absolute', absent=True),
    Case('amd-url-not-http', {'mirror_amd_url': 'ftp://repo.example'}, 'mirror-urls', contains='mirror_amd_url'),
    Case('key-url-newline', {'mirror_amd_key_url': 'https://repo.example/k\nx'}, 'mirror-urls', contains='mirror_amd_key_url'),
    Case('urls-fine', {'mirror_amd_url': 'http://llmfleet-lab-repo:8080'}, 'mirror-urls', absent=True),
    Case('fingerprint-short', {'mirror_amd_key_fingerprints': ['1A693C5C']}, 'mirror-key-fingerprints', contains='"1A693C5C"'),
    Case('fingerprints-not-a-list', {'mirror_amd_key_fingerprints': 'CA8B'}, 'mirror-key-fingerprints'),
    Case('fingerprint-with-spaces', {'mirror_amd_key_fingerprints': ['CA8B B472 7A47 B4D0 9B4E  E896 9386 B48A 1A69 3C5C']},
         'mirror-key-fingerprints', absent=True),
    Case('no-architecture', {'mirror_architectures': []}, 'mirror-architectures'),
    Case('architecture-with-space', {'mirror_architectures': ['amd64 i386']}, 'mirror-architectures', contains='amd64 i386'),
    Case('architectures-fine', {'mirror_architectures': ['amd64', 'arm64']}, 'mirror-architectures', absent=True),
    Case('release-two-words', {}, 'mirror-fleet-releases', {'fleet': [dict(NODE, rocm_version='7.1 beta')]},
         contains='gpu-1: rocm "7.1 beta"'),
    Case('no-facts', {}, 'mirror-fleet-releases', {'fleet': [dict(NODE, facts=False, suite='')]}, contains='not gathered'),
    Case('unsupported-node', {}, 'mirror-fleet-releases', {'fleet': [dict(NODE, suite='')]}, contains='support table'),
    Case('releases-fine', {}, 'mirror-fleet-releases', absent=True),
    Case('nothing-to-hold', {}, 'mirror-nothing', {'fleet': []}, contains='nothing to hold'),
    Case('only-a-model', {'mirror_models': [MODEL]}, 'mirror-nothing', {'fleet': []}, absent=True),
    Case('repository-not-a-mapping', {'mirror_apt_repositories': ['http://x']}, 'mirror-apt-repositories',
         contains='must be a mapping'),
    Case('repository-without-suites', {'mirror_apt_repositories': [{'name': 'extra', 'url': 'http://x/'}]},
         'mirror-apt-repositories', contains='lacks suites'),
    Case('repository-bad-name', {'mirror_apt_repositories': [{'name': '../x', 'url': 'http://x/', 'suites': ['jammy']}]},
         'mirror-apt-repositories', contains='"../x"'),
    Case('repository-bad-url', {'mirror_apt_repositories': [{'name': 'extra', 'url': 'x', 'suites': ['jammy']}]},
         'mirror-apt-repositories', contains='url "x"'),
    Case('repository-bad-suite', {'mirror_apt_repositories': [{'name': 'extra', 'url': 'http://x/', 'suites': ['jammy main']}]},
         'mirror-apt-repositories', contains='suites'),
    Case('repositories-twice', {'mirror_apt_repositories': [{'name': 'extra', 'url': 'http://x/', 'suites': ['jammy']}] * 2},
         'mirror-apt-repositories', contains='more than once'),
    Case('repository-fine', {'mirror_apt_repositories': [{'name': 'extra', 'url': 'http://x/', 'suites': ['jammy'],
                                                          'components': ['main'], 'architectures': ['amd64']}]},
         'mirror-apt-repositories', absent=True),
    Case('repository-key-without-fingerprints', {'mirror_apt_repositories': [dict(PPA, key_fingerprints=None)]},
         'mirror-apt-repository-keys', contains=['deadsnakes: key_fingerprints null must list the 40 hexadecimal digits']),
    Case('repository-fingerprint-short', {'mirror_apt_repositories': [dict(PPA, key_fingerprints=['BA6932366A755776'])]},
         'mirror-apt-repository-keys', contains='"BA6932366A755776"'),
    Case('repository-fingerprints-without-key', {'mirror_apt_repositories': [dict(PPA, key_url='')]},
         'mirror-apt-repository-keys', contains='key_url "" must be the http(s) URL of its signing key'),
    Case('repository-own-key', {'mirror_apt_repositories': [PPA]}, 'mirror-apt-repository-keys', absent=True),
    Case('repository-amds-key', {'mirror_apt_repositories': [{'name': 'extra', 'url': 'http://x/', 'suites': ['jammy']}]},
         'mirror-apt-repository-keys', absent=True),
    Case('wheelhouse-bad-url', {'mirror_wheelhouses': [dict(WHEELHOUSE, url='/srv/wheels')]}, 'mirror-wheelhouses',
         contains='SHA256SUMS'),
    Case('wheelhouse-file-with-directory', {'mirror_wheelhouses': [dict(WHEELHOUSE, files=['../lock.txt'])]},
         'mirror-wheelhouses', contains='"../lock.txt"'),
    Case('wheelhouse-without-url', {'mirror_wheelhouses': [{'name': 'engine'}]}, 'mirror-wheelhouses', contains='lacks url'),
    Case('wheelhouse-fine', {'mirror_wheelhouses': [WHEELHOUSE]}, 'mirror-wheelhouses', absent=True),
    Case('index-urls-a-string', {'mirror_wheel_indexes': [dict(INDEX, index_urls='https://pypi.org/simple/')]},
         'mirror-wheel-indexes', contains='mirror_wheel_indexes engine-index: index_urls "https://pypi.org/simple/" must list'),
    Case('index-urls-a-path', {'mirror_wheel_indexes': [dict(INDEX, index_urls=['/srv/simple'])]}, 'mirror-wheel-indexes',
         contains='"/srv/simple"'),
    Case('index-lock-a-path', {'mirror_wheel_indexes': [dict(INDEX, lock='/srv/vllm.lock')]}, 'mirror-wheel-indexes',
         contains='lock "/srv/vllm.lock" must be the http(s) URL of the lock'),
    Case('index-without-lock', {'mirror_wheel_indexes': [dict(INDEX, lock='')]}, 'mirror-wheel-indexes', contains='lacks lock'),
    Case('index-named-as-a-wheelhouse', {'mirror_wheel_indexes': [dict(INDEX, name='engine')], 'mirror_wheelhouses': [WHEELHOUSE]},
         'mirror-wheel-indexes', contains='mirror_wheelhouses has an entry of that name too'),
    Case('index-twice', {'mirror_wheel_indexes': [INDEX, INDEX]}, 'mirror-wheel-indexes', contains='names "engine-index" more than once'),
    Case('index-fine', {'mirror_wheel_indexes': [INDEX], 'mirror_wheelhouses': [WHEELHOUSE]}, 'mirror-wheel-indexes', absent=True),
    Case('only-an-index', {'mirror_wheel_indexes': [INDEX]}, 'mirror-nothing', {'fleet': []}, absent=True),
    Case('index-python-a-number', {'mirror_wheel_indexes': [dict(INDEX, python_version=3.12)]}, 'mirror-wheel-indexes',
         contains='python_version 3.12 must be the nodes\' Python as a string such as "3.12"'),
    Case('index-python-with-micro', {'mirror_wheel_indexes': [dict(INDEX, python_version='3.12.3')]}, 'mirror-wheel-indexes',
         contains='"3.12.3"'),
    Case('index-platform-a-string', {'mirror_wheel_indexes': [dict(INDEX, platforms='manylinux_2_35_x86_64')]},
         'mirror-wheel-indexes', contains='platforms "manylinux_2_35_x86_64" must list'),
    Case('index-platform-with-a-space', {'mirror_wheel_indexes': [dict(INDEX, platforms=['manylinux_2_35_x86_64 any'])]},
         'mirror-wheel-indexes', contains='manylinux_2_35_x86_64 any'),
    Case('index-python-and-platforms', {'mirror_wheel_indexes': [dict(INDEX, python_version='3.12',
                                                                      platforms=['manylinux_2_35_x86_64'])]},
         'mirror-wheel-indexes', absent=True),
    Case('lock-option-line', {'mirror_wheel_indexes': [INDEX]}, 'mirror-wheel-index-locks',
         locks('vllm==0.32.0+rocm723 --hash=sha256:%s\n--extra-index-url http://elsewhere.example/simple\n' % H1),
         contains=['mirror_wheel_indexes engine-index: the lock http://locks.example/vllm-0.32.0-rocm723.lock cannot be'
                   ' downloaded', 'line 2 is a pip option (--extra-index-url)', 'Nothing is served']),
    Case('lock-unhashed-line', {'mirror_wheel_indexes': [INDEX]}, 'mirror-wheel-index-locks',
         locks('vllm==0.32.0+rocm723 --hash=sha256:%s\nnumpy==2.2.6\n' % H1),
         contains='line 2 (numpy==2.2.6) has no --hash=sha256:<hex>'),
    Case('lock-unpinned-line', {'mirror_wheel_indexes': [INDEX]}, 'mirror-wheel-index-locks',
         locks('numpy>=2 --hash=sha256:%s\n' % H1), contains='line 1 (numpy>=2) does not pin one version with =='),
    Case('lock-marker', {'mirror_wheel_indexes': [INDEX]}, 'mirror-wheel-index-locks',
         locks('numpy==2.2.6 ; python_version >= "3.12" --hash=sha256:%s\n' % H1),
         contains='line 1 (numpy==2.2.6) has an environment marker (python_version >= "3.12")'),
    Case('lock-empty', {'mirror_wheel_indexes': [INDEX]}, 'mirror-wheel-index-locks', locks('# nothing\n'),
         contains='it pins nothing'),
    Case('lock-fine', {'mirror_wheel_indexes': [INDEX]}, 'mirror-wheel-index-locks',
         locks('# uv pip compile\nflash-attn==2.8.3 \\\n    --hash=sha256:%s \\\n    --hash=sha256:%s\n' % (H1, H2)),
         absent=True),
    Case('lock-not-read-yet', {'mirror_wheel_indexes': [INDEX]}, 'mirror-wheel-index-locks', absent=True),
    Case('model-unchecked', {'mirror_models': [dict(MODEL, checksum='md5:abc')]}, 'mirror-models', contains='never mirrored unchecked'),
    Case('model-short-hash', {'mirror_models': [dict(MODEL, checksum='sha256:abc')]}, 'mirror-models'),
    Case('model-bad-url', {'mirror_models': [dict(MODEL, url='s3://bucket/x')]}, 'mirror-models', contains='"s3://bucket/x"'),
    Case('model-checksum-url', {'mirror_models': [dict(MODEL, checksum='sha256:http://models.example/x.sha256')]},
         'mirror-models', absent=True),
    Case('model-fine', {'mirror_models': [MODEL]}, 'mirror-models', absent=True),
    Case('port-zero', {'mirror_port': 0}, 'mirror-listen', contains='mirror_port 0'),
    Case('address-two-words', {'mirror_listen_address': '10.0.0.5 10.0.0.6'}, 'mirror-listen', contains='one IP address'),
    Case('address-with-a-directive', {'mirror_listen_address': '10.0.0.5:80;'}, 'mirror-listen', contains='one IP address'),
    Case('address-a-name', {'mirror_listen_address': 'mirror-1'}, 'mirror-listen', contains='one IP address'),
    Case('address-ipv6', {'mirror_listen_address': 'fd00::5'}, 'mirror-listen', absent=True),
    Case('tls-half', {'mirror_tls_certificate': '/etc/ssl/m.pem'}, 'mirror-listen', contains='go together'),
    Case('tls-relative', {'mirror_tls_certificate': 'm.pem', 'mirror_tls_key': 'm.key'}, 'mirror-listen',
         contains='absolute paths'),
    Case('tls-variable', {'mirror_tls_certificate': '/etc/ssl/$ssl_server_name.pem', 'mirror_tls_key': '/etc/ssl/m.key'},
         'mirror-listen', contains='absolute paths'),
    Case('tls-fine', {'mirror_tls_certificate': '/etc/ssl/m.pem', 'mirror_tls_key': '/etc/ssl/m.key'}, 'mirror-listen',
         absent=True),
    Case('keep-none', {'mirror_keep_snapshots': 0}, 'mirror-keep', contains='1 or more'),
    Case('keep-text', {'mirror_keep_snapshots': 'all'}, 'mirror-keep'),
    Case('keep-one', {'mirror_keep_snapshots': '1'}, 'mirror-keep', absent=True),
    Case('proxy-not-url', {'mirror_http_proxy': 'proxy:3128'}, 'mirror-proxy', contains='"proxy:3128"'),
    Case('host-is-a-gateway', {}, 'mirror-host-is-a-gateway', {'gateway': True}, contains='host of its own'),
    Case('host-of-its-own', {}, 'mirror-host-is-a-gateway', absent=True),
    Case('proxy-fine', {'mirror_http_proxy': 'http://proxy.example:3128'}, 'mirror-proxy', absent=True),
    Case('backends-newline', {'mirror_apt_cache_backends': {'debian': ['http://deb.example/debian/\nhttp://x/'],
                                                            'ubuntu': ['http://archive.ubuntu.com/ubuntu/']}},
         'mirror-apt-cache-backends', contains='mirror_apt_cache_backends'),
    Case('backends-without-ubuntu', {'mirror_apt_cache_backends': {'debian': ['http://deb.debian.org/debian/']}},
         'mirror-apt-cache-backends'),
    Case('backends-empty-list', {'mirror_apt_cache_backends': {'debian': [], 'ubuntu': []}}, 'mirror-apt-cache-backends'),
    Case('backends-without-cache', {'mirror_apt_cache': False, 'mirror_apt_cache_backends': {}}, 'mirror-apt-cache-backends',
         absent=True),
    Case('backends-fine', {'mirror_apt_cache_backends': {'debian': ['http://ftp.de.debian.org/debian/'],
                                                         'ubuntu': ['http://de.archive.ubuntu.com/ubuntu/']}},
         'mirror-apt-cache-backends', absent=True),
]


@pytest.mark.parametrize('case', CASES, ids=[case.id for case in CASES])
def test_rule(case):
    run_case(RULES, VALUES, CTX, case)


def test_defaults_have_no_problem():
    assert mirror_input_problems(VALUES, PLATFORM, [NODE]) == []


def test_every_rule_is_reached():
    assert_every_rule_reached(RULES, CASES)
