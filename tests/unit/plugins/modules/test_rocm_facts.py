# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""rocm_facts run as Ansible runs it, with stand-in tools on PATH that print captured outputs.

Each stand-in records the argv and locale it was started with, so the tests assert
the exact commands the module runs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest


def run(node, **params):
    params.setdefault('rocm_path', node.rocm)
    params.setdefault('sysfs_path', node.sysfs)
    return node.run('rocm_facts', **params)


def test_bare_node_without_any_tool_reports_no_gpus(node):
    result = run(node)
    assert result.get('failed') is not True, result
    assert result['changed'] is False
    assert result['ansible_facts']['rocm'] == {'gpu_count': 0, 'gfx_targets': [], 'rocm_version': None,
                                               'driver_version': None, 'sources': [], 'gpus': []}
    assert result['commands'] == []


def test_bare_node_fails_when_gpus_are_required(node):
    result = run(node, require_gpus=True)
    assert result['failed'] is True
    assert 'No ROCm tool' in result['msg'] and 'install the ROCm packages' in result['msg']


def test_tool_choice_is_validated(node):
    result = run(node, tools=['nvidia-smi'])
    assert result['failed'] is True
    assert 'nvidia-smi' in result['msg']


RSMI_JSON_ARGS = '--showproductname --showbus --showtoponuma --showmeminfo vram --showdriverversion --json'
RSMI_TEXT_ARGS = '--showproductname --showbus --showtoponuma --showmeminfo vram --showdriverversion'
MI300X_BUSES = ['1b', '3d', '4e', '5f', '9d', 'bd', 'cd', 'dd']


def test_mi300x_node_from_rocminfo_with_numa_from_sysfs(node):
    node.tool('rocminfo', {'': ('rocminfo/mi300x-8-rocm6.2.3-support.txt', 0, 'out')})
    node.rocm_version('6.2.3-89\n')
    for position, bus in enumerate(MI300X_BUSES):
        node.numa('0000:%s:00.0' % bus, 0 if position < 4 else 1)
    result = run(node)
    rocm = result['ansible_facts']['rocm']
    assert rocm['gpu_count'] == 8
    assert rocm['gfx_targets'] == ['gfx942']
    assert rocm['rocm_version'] == '6.2.3'
    assert rocm['sources'] == ['rocminfo']
    assert [gpu['pci_address'] for gpu in rocm['gpus']] == ['0000:%s:00.0' % bus for bus in MI300X_BUSES]
    assert [gpu['numa_node'] for gpu in rocm['gpus']] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [gpu['index'] for gpu in rocm['gpus']] == list(range(8))
    assert rocm['gpus'][0]['marketing_name'] == 'AMD Instinct MI300X'
    assert rocm['gpus'][0]['compute_units'] == 304
    assert rocm['gpus'][0]['vram_bytes'] == 206141652992
    calls = node.calls()
    assert [call['argv'] for call in calls] == [[os.path.join(node.bin, 'rocminfo')]]
    assert all(call['LC_ALL'] == 'C' and call['LANG'] == 'C' for call in calls)


def test_mixed_igpu_and_dgpu_workstation_reports_both_and_marks_the_igpu(node):
    node.tool('rocminfo', {'': ('rocminfo/mi100-igpu-gfx1036-rocm5.7.0-support.txt', 0, 'out')})
    rocm = run(node)['ansible_facts']['rocm']
    assert rocm['gpu_count'] == 2
    assert rocm['gfx_targets'] == ['gfx1036', 'gfx908']
    by_target = dict((gpu['gfx_target'], gpu) for gpu in rocm['gpus'])
    assert by_target['gfx908']['integrated'] is False
    assert by_target['gfx1036']['integrated'] is True
    assert [gpu['pci_address'] for gpu in rocm['gpus']] == ['0000:03:00.0', '0000:0e:00.0']


def test_amd_smi_runs_with_exact_argv_and_disagreeing_tools_are_reported(node):
    # Two captures from two Strix Halo machines: the GPUs sit at different PCI addresses,
    # so the module must not pair them, and must say so.
    node.tool('amd-smi', {
        'static --json': ('amd_smi/strix-halo-gfx1151-static-list-fedora.json', 0, 'out'),
        'version': ('amd_smi/version-rx9060xt-rocm7.0.2.txt', 0, 'out'),
    })
    node.tool('rocminfo', {'': ('rocminfo/strix-halo-gfx1151-npu-rocm7.1-prompt.txt', 0, 'out')})
    result = run(node, tools=['amd-smi', 'rocminfo'])
    rocm = result['ansible_facts']['rocm']
    assert rocm['sources'] == ['amd-smi', 'rocminfo']
    assert rocm['gpu_count'] == 1
    assert rocm['gfx_targets'] == ['gfx1151']
    assert rocm['rocm_version'] == '7.0.2'
    assert rocm['driver_version'] == '6.17.1-300.fc43.x86_64'
    gpu = rocm['gpus'][0]
    assert (gpu['pci_address'], gpu['numa_node'], gpu['compute_units']) == ('0000:c4:00.0', 0, 40)
    assert any('0000:c5:00.0' in str(warning) for warning in result['warnings']), result
    assert [call['argv'][1:] for call in node.calls()] == [['static', '--json'], ['version'], []]
    assert all(call['argv'][0].startswith(node.bin) and call['LC_ALL'] == 'C' for call in node.calls())


def test_tools_in_the_rocm_bin_directory_are_found_without_path(node):
    os.rename(node.bin, os.path.join(node.rocm, 'bin'))
    node.bin = os.path.join(node.rocm, 'bin')
    node.tool('rocminfo', {'': ('rocminfo/rx7900xtx-gfx1100-rocm6.2.2-support.txt', 0, 'out')})
    result = run(node)
    assert result['ansible_facts']['rocm']['gfx_targets'] == ['gfx1100']
    assert result['commands'] == [[os.path.join(node.rocm, 'bin', 'rocminfo')]]


def test_rocm_smi_json_alias_becomes_the_real_target(node):
    node.tool('rocm-smi', {RSMI_JSON_ARGS: ('rocm_smi/mi250x-gcd-showproductname.json', 0, 'out')})
    rocm = run(node)['ansible_facts']['rocm']
    assert rocm['sources'] == ['rocm-smi']
    assert rocm['gfx_targets'] == ['gfx90a']


def test_rocm_smi_without_json_falls_back_to_text(node):
    node.tool('rocm-smi', {
        RSMI_JSON_ARGS: ('module/argparse-unrecognized-json.txt', 2, 'err'),
        RSMI_TEXT_ARGS: ('rocm_smi/mi210-2-rocm6.3.3-showproductname.txt', 0, 'out'),
    })
    result = run(node)
    assert result['ansible_facts']['rocm']['gpu_count'] == 2
    assert result['ansible_facts']['rocm']['gfx_targets'] == ['gfx90a']
    assert [call['argv'][1:] for call in node.calls()] == [RSMI_JSON_ARGS.split(), RSMI_TEXT_ARGS.split()]


@pytest.mark.parametrize('tool, args, fixture, rc, quoted, advice', [
    ('rocminfo', '', 'rocminfo/err-kfd-permission-denied-rocm5.txt', 1,
     'Unable to open /dev/kfd read-write: Permission denied', 'render'),
    ('rocminfo', '', 'rocminfo/err-not-loaded-rocm3.5.0.txt', 1, 'ROCk module is NOT loaded', 'amdgpu'),
    ('rocm-smi', RSMI_JSON_ARGS, 'rocm_smi/mi210-4-rocm6.2.3-driver-not-initialized.txt', 0, 'Driver not initialized', 'amdgpu'),
    ('rocminfo', '', 'rocminfo/err-hsa-out-of-resources-rocm6.0.0.txt', 1, 'HSA_STATUS_ERROR_OUT_OF_RESOURCES', 'dmesg'),
], ids=['rocminfo-permission', 'rocminfo-not-loaded', 'rocm-smi-driver', 'rocminfo-hsa-failure'])
def test_tool_errors_fail_with_the_tools_line_and_advice(node, tool, args, fixture, rc, quoted, advice):
    node.tool(tool, {args: (fixture, rc, 'out')})
    result = run(node)
    assert result['failed'] is True
    assert result['tool'] == tool
    assert quoted in result['msg'] and quoted in result['tool_line']
    assert advice in result['msg']


def test_unrecognised_output_is_a_clear_failure(node):
    node.tool('rocminfo', {'': ('module/not-a-tool-output.txt', 139, 'err')})
    result = run(node)
    assert result['failed'] is True
    assert 'rocminfo' in result['msg'] and '139' in result['msg'] and 'Segmentation fault' in result['msg']


def test_check_mode_reads_the_same(node):
    node.tool('rocminfo', {'': ('rocminfo/mi250x-1gcd-rocm6.2.1-support.txt', 0, 'out')})
    result = run(node, _ansible_check_mode=True)
    assert result['changed'] is False
    assert result['ansible_facts']['rocm']['gfx_targets'] == ['gfx90a']
