# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The prebuilt path's lock reading and the files found for it on package indexes.

The project pages below have the shape vLLM 0.32.0's .buildkite/scripts/generate-nightly-index.py writes (relative links
to the build's directory, "+" as %2B, no hash fragment, the directory named as the wheel file names the project) and the
shape of PyPI's simple pages (absolute links with #sha256= fragments); they are written for these tests.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils._wheel_index import (
    file_name_version, index_files, index_pages, lock_entries, lock_problems, normalize, page_links, rocm_label_warnings)

H1, H2, H3, H4 = ('1' * 64, '2' * 64, '3' * 64, '4' * 64)
VLLM_INDEX = 'https://wheels.vllm.ai/rocm/0.32.0/rocm723/'
PYPI = 'https://pypi.org/simple/'
COMMIT = '0123456789abcdef0123456789abcdef01234567'
VLLM_PAGE = '''<!DOCTYPE html>
<html>
  <meta name="pypi:repository-version" content="1.0">
  <body>
    <a href="../../../%s/vllm-0.32.0%%2Brocm723-cp312-cp312-manylinux_2_35_x86_64.whl">vllm-0.32.0+rocm723-cp312-cp312-manylinux_2_35_x86_64.whl</a><br/>
  </body>
</html>
''' % COMMIT
FLASH_PAGE = ('<html><body><a href="../../../%s/flash_attn-2.8.3-cp312-cp312-manylinux_2_35_x86_64.whl">'
              'flash_attn-2.8.3-cp312-cp312-manylinux_2_35_x86_64.whl</a></body></html>' % COMMIT)
NUMPY_PAGE = '''<html><body>
<a href="https://files.example/packages/aa/numpy-2.2.6-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl#sha256=%s">a</a>
<a href="https://files.example/packages/bb/numpy-2.2.6-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl#sha256=%s">b</a>
<a href="https://files.example/packages/cc/numpy-2.2.5-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl#sha256=%s">c</a>
<a href="https://files.example/packages/dd/numpy-2.2.6.tar.gz#sha256=%s">d</a>
</body></html>''' % (H2, H3, H4, '5' * 64)
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
    assert [(e['line'], e['name'], e['version'], e['hashes'], e['problem']) for e in entries] == [
        (2, 'flash-attn', '2.8.3', [H3], None),
        (4, 'numpy', '2.2.6', [H2, H3], None),
        (8, 'vllm', '0.32.0+rocm723', [H1], None),
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


@pytest.mark.parametrize('filename, expected', [
    pytest.param('vllm-0.32.0+rocm723-cp312-cp312-manylinux_2_35_x86_64.whl', ('vllm', '0.32.0+rocm723'), id='wheel'),
    pytest.param('triton_kernels-1.0.0-py3-none-any.whl', ('triton-kernels', '1.0.0'), id='underscore'),
    pytest.param('torch-2.13.0a0+git733fca1-1-cp312-cp312-linux_x86_64.whl', ('torch', '2.13.0a0+git733fca1'), id='build-tag'),
    pytest.param('numpy-2.2.6.tar.gz', ('numpy', '2.2.6'), id='sdist'),
    pytest.param('index.html', (None, None), id='not-a-file'),
])
def test_file_name_version(filename, expected):
    assert file_name_version(filename) == expected


def test_page_links_resolve_vllm_relative_links():
    links = page_links(VLLM_PAGE, VLLM_INDEX + 'vllm/')
    assert links == [{'file': 'vllm-0.32.0+rocm723-cp312-cp312-manylinux_2_35_x86_64.whl', 'sha256': None,
                      'url': 'https://wheels.vllm.ai/rocm/%s/vllm-0.32.0%%2Brocm723-cp312-cp312-manylinux_2_35_x86_64.whl' % COMMIT}]


def test_page_links_read_hash_fragments():
    links = page_links(NUMPY_PAGE, PYPI + 'numpy/')
    assert [(link['file'], link['sha256']) for link in links][:2] == [
        ('numpy-2.2.6-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl', H2),
        ('numpy-2.2.6-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl', H3)]
    assert '#' not in links[0]['url']


def test_index_pages_ask_both_spellings_in_index_order():
    pages = index_pages(lock_entries(LOCK), [VLLM_INDEX, PYPI.rstrip('/')])
    assert [page['url'] for page in pages] == [
        VLLM_INDEX + 'flash-attn/', VLLM_INDEX + 'flash_attn/', VLLM_INDEX + 'numpy/', VLLM_INDEX + 'vllm/',
        PYPI + 'flash-attn/', PYPI + 'flash_attn/', PYPI + 'numpy/', PYPI + 'vllm/']
    assert pages[0] == {'url': VLLM_INDEX + 'flash-attn/', 'index': VLLM_INDEX, 'name': 'flash-attn'}


def _read(pages, answers):
    """The pages as the uri loop reads them: answers maps a URL to its content (others answer 404)."""
    return [dict(page, status=200 if page['url'] in answers else 404, content=answers.get(page['url'], 'Not Found'))
            for page in pages]


def test_index_files_take_each_pin_from_the_first_index_that_links_it():
    entries = lock_entries(LOCK)
    pages = _read(index_pages(entries, [VLLM_INDEX, PYPI]), {
        VLLM_INDEX + 'vllm/': VLLM_PAGE, VLLM_INDEX + 'flash_attn/': FLASH_PAGE,
        PYPI + 'numpy/': NUMPY_PAGE,
        # PyPI has a vllm page too (its CUDA builds): the ROCm index came first.
        PYPI + 'vllm/': '<a href="https://files.example/vllm-0.32.0-cp38-abi3-manylinux1_x86_64.whl#sha256=%s">v</a>' % H4,
    })
    files, problems = index_files(entries, pages)
    assert problems == []
    assert [(item['name'], item['file'], item['sha256']) for item in files] == [
        ('flash-attn', 'flash_attn-2.8.3-cp312-cp312-manylinux_2_35_x86_64.whl', H3),
        ('numpy', 'numpy-2.2.6-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl', H2),
        ('numpy', 'numpy-2.2.6-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl', H3),
        ('vllm', 'vllm-0.32.0+rocm723-cp312-cp312-manylinux_2_35_x86_64.whl', H1),
    ]
    assert files[0]['url'] == 'https://wheels.vllm.ai/rocm/%s/flash_attn-2.8.3-cp312-cp312-manylinux_2_35_x86_64.whl' % COMMIT


def test_index_files_name_what_they_cannot_take():
    entries = lock_entries(LOCK.replace('numpy==2.2.6', 'numpy==2.2.5').replace('flash-attn==2.8.3', 'flash-attn==9.9'))
    two = VLLM_PAGE + VLLM_PAGE.replace('cp312-cp312', 'cp311-cp311')
    entries.append(lock_entries('vllm==0.32.0+rocm723 --hash=sha256:%s --hash=sha256:%s' % (H1, H2))[0])
    pages = _read(index_pages(entries, [VLLM_INDEX, PYPI]), {VLLM_INDEX + 'vllm/': two, PYPI + 'numpy/': NUMPY_PAGE})
    _files, problems = index_files(entries, pages)
    assert problems[0].startswith('flash-attn==9.9: no index links a file of it (read: %sflash-attn/' % VLLM_INDEX)
    assert problems[1] == ('numpy==2.2.5: none of the files %s links (numpy-2.2.5-cp312-cp312-manylinux_2_17_x86_64.'
                           'manylinux2014_x86_64.whl) has a sha256 the lock names' % PYPI)
    assert 'links 2 files of it without a hash' in problems[2] and 'keep one hash per line' in problems[2]
    assert len(problems) == 4


def test_rocm_label_warnings():
    entries = lock_entries(LOCK)
    assert rocm_label_warnings(entries, '7.2.3') == []
    assert 'the node has ROCm 7.1.1' in rocm_label_warnings(entries, '7.1.1')[0]


def test_normalize():
    assert normalize('Flash_Attn') == normalize('flash.attn') == 'flash-attn'
