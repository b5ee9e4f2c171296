# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's stand-in of vLLM's ROCm wheel index (labctl wheelhouse, build_index): vLLM's layout over the first
wheelhouse's wheels, kept by the wheelhouse pruning. The mirror role's pip reads it in
tests/unit/roles/test_mirror_index.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from labctl import wheelhouse

WHEELS = [
    {'file': 'vllm-0.32.0+cpu-py3-none-any.whl', 'name': 'vllm', 'version': '0.32.0+cpu', 'sha256': 'a' * 64},
    {'file': 'typing_extensions-4.15.0-py3-none-any.whl', 'name': 'typing-extensions', 'version': '4.15.0', 'sha256': 'b' * 64},
]


def test_pages_have_vllms_layout():
    pages = wheelhouse.index_pages(WHEELS, 'lab-0123456789ab', '0.32.0', 'cpu')
    assert sorted(pages) == [
        'rocm/0.32.0/cpu/index.html', 'rocm/0.32.0/cpu/requirements.lock', 'rocm/0.32.0/cpu/typing-extensions/index.html',
        'rocm/0.32.0/cpu/vllm/index.html', 'rocm/0.32.0/index.html',
        'rocm/lab-0123456789ab/cpu/index.html', 'rocm/lab-0123456789ab/cpu/typing-extensions/index.html',
        'rocm/lab-0123456789ab/cpu/vllm/index.html', 'rocm/lab-0123456789ab/index.html']
    assert '<a href="../../../lab-0123456789ab/vllm-0.32.0%2Bcpu-py3-none-any.whl">vllm-0.32.0+cpu-py3-none-any.whl</a>' \
        in pages['rocm/0.32.0/cpu/vllm/index.html']
    assert '<a href="cpu/">cpu/</a>' in pages['rocm/0.32.0/index.html']


def test_build_index_links_the_wheels_and_survives_pruning(tmp_path):
    first = tmp_path / 'wheels' / '0123456789ab'
    first.mkdir(parents=True)
    for wheel in WHEELS:
        (first / wheel['file']).write_bytes(b'wheel')
    (first / 'wheelhouse.json').write_text(json.dumps({'key': '0123456789ab', 'wheels': WHEELS}))
    root = str(tmp_path / 'wheels')
    final = wheelhouse.build_index(str(first), root=root)
    served = os.path.join(final, 'rocm', 'lab-0123456789ab', WHEELS[0]['file'])
    assert os.path.samefile(served, str(first / WHEELS[0]['file']))
    assert os.path.exists(os.path.join(final, 'rocm', '0.32.0', 'cpu', 'vllm', 'index.html'))
    wheelhouse.prune_wheelhouses(root, 1)
    assert os.path.exists(served)
    # A second build of the same wheelhouse changes nothing.
    assert wheelhouse.build_index(str(first), root=root) == final
