# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prebuilt path's lock reading: the lines pip installs with --no-deps --require-hashes, the markers, the vLLM
wheels' ROCm label."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils._wheel_index import lock_entries, lock_problems, normalize, rocm_label_warnings

H1, H2, H3 = ('1' * 64, '2' * 64, '3' * 64)
LOCK = '''# uv pip compile --generate-hashes (shape)
flash-attn==2.8.3 \\
    --hash=sha256:%s
numpy==2.2.6 ; python_version >= "3.10" \\
    --hash=sha256:%s \\
    --hash=sha256:%s
    # via vllm
vllm==0.32.0+rocm723 --hash=sha256:%s
''' % (H3, H2, H3, H1)


def test_lock_entries_join_lines_drop_comments_and_markers():
    entries = lock_entries(LOCK)
    assert [(e['line'], e['name'], e['version'], e['hashes'], e['marker'], e['problem']) for e in entries] == [
        (2, 'flash-attn', '2.8.3', [H3], None, None),
        (4, 'numpy', '2.2.6', [H2, H3], 'python_version >= "3.10"', None),
        (8, 'vllm', '0.32.0+rocm723', [H1], None, None),
    ]
    assert lock_problems(LOCK) == []


@pytest.mark.parametrize('text, problem', [
    pytest.param('', 'it pins nothing', id='empty'),
    pytest.param('# only a comment\n', 'it pins nothing', id='comments-only'),
    pytest.param('vllm==0.32.0\n', 'line 1 (vllm==0.32.0) has no --hash=sha256:<hex>', id='no-hash'),
    pytest.param('vllm>=0.32 --hash=sha256:%s\n' % H1, 'line 1 (vllm>=0.32) does not pin one version with ==', id='range'),
    pytest.param('vllm==0.32.* --hash=sha256:%s\n' % H1, 'does not pin one version', id='wildcard'),
    pytest.param('vllm @ https://x/vllm.whl --hash=sha256:%s\n' % H1, 'does not pin one version', id='direct-url'),
    pytest.param('vllm==0.32.0 --hash=md5:%s\n' % ('0' * 32), 'has a hash other than sha256 (--hash=md5:', id='md5'),
    pytest.param('vllm==0.32.0 --hash=sha256:abc\n', 'has a hash other than sha256', id='short-hash'),
    pytest.param('--extra-index-url https://pypi.org/simple\n', 'line 1 is a pip option (--extra-index-url)', id='option'),
    pytest.param('vllm==0.32.0 --hash=sha256:%s\nVLLM==0.32.0 --hash=sha256:%s\n' % (H1, H2), 'vllm pinned more than once',
                 id='twice'),
])
def test_lock_problems(text, problem):
    assert any(problem in found for found in lock_problems(text)), lock_problems(text)


def test_extras_are_read_as_the_project():
    entry = lock_entries('torch[device-gfx942]==2.13.0+rocm10.0.0 --hash=sha256:%s' % H1)[0]
    assert (entry['name'], entry['version'], entry['problem']) == ('torch', '2.13.0+rocm10.0.0', None)


def test_rocm_label_warnings():
    entries = lock_entries(LOCK)
    assert rocm_label_warnings(entries, '7.2.3') == []
    assert 'the node has ROCm 7.1.1' in rocm_label_warnings(entries, '7.1.1')[0]


def test_normalize():
    assert normalize('Flash_Attn') == normalize('flash.attn') == 'flash-attn'
