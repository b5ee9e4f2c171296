# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight's reports of the clean and the findings profile, the simulated bus, and a check-mode
run that must change nothing. The same findings are proven without a container in
tests/unit/lab/test_lab_pci.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'shared'))
from checks import assert_check_run_changes_nothing  # noqa: E402  pylint: disable=wrong-import-position

SCENARIO = os.environ.get('MOLECULE_SCENARIO_NAME', 'preflight')
INSTANCE = 'llmfleet-molecule-%s' % SCENARIO
testinfra_hosts = ['podman://%s' % INSTANCE]

REPORTS = os.path.join(os.environ.get('MOLECULE_EPHEMERAL_DIRECTORY', '.'), 'preflight-reports')
GIB = 1024 ** 3

# mi300x-8-findings with the role's defaults: (id, level, what the message names, fix), in report order.
with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'findings.json')) as _handle:
    FINDINGS = [(f['id'], f['level'], f['names'], f['fix']) for f in json.load(_handle)['findings']]
# The side effect's last run: the clean node of a fleet whose build (vLLM 0.32.0's recipe, upstream's on ROCm 7.2.3)
# runs on the lab's ROCm 7.1.1.
RECIPE_MESSAGE = ("The build follows vLLM 0.32.0's recipe, which upstream builds and tests on ROCm 7.2.3; this fleet runs"
                  " ROCm 7.1.1 (rocm_version). The builder compiles those refs against the fleet's ROCm (the builder and"
                  " every GPU node run one release), a combination upstream did not build.")
RDMA_NONE_FIX = 'Check the RDMA NICs and their drivers ("ls /sys/class/infiniband"), or set preflight_multi_node: false.'


def report(run, ext='json'):
    with open(os.path.join(REPORTS, run, '%s.%s' % (INSTANCE, ext))) as handle:
        return json.load(handle) if ext == 'json' else handle.read()


def levels(data):
    return [(item['id'], item['level']) for item in data['findings']]


def test_the_instance_has_its_clean_hardware_back(host):
    assert host.check_output('command -v lspci') == '/usr/local/bin/lspci'
    gpus = host.check_output('lspci -D -d 1002:').splitlines()
    assert [line.split()[0] for line in gpus] == ['0000:1b:00.0', '0000:3d:00.0', '0000:4e:00.0', '0000:5f:00.0',
                                                  '0000:9d:00.0', '0000:bd:00.0', '0000:cd:00.0', '0000:dd:00.0']
    assert 'iommu=pt pci=realloc=off' in host.file('/run/llmfleet-lab/proc/cmdline').content_string
    assert '"name": "mi300x-8",' in host.file('/etc/llmfleet-lab/gpu-profile.json').content_string


def test_the_clean_node_passes_with_full_links_and_bars():
    data = report('clean')
    assert data['stopping_levels'] == ['fail']
    assert levels(data) == [('kernel-packages-unchecked', 'info')]
    assert dict((key, int(value)) for key, value in data['counts'].items()) == {'fail': 0, 'warn': 0, 'info': 1}
    readings = data['readings']
    assert readings['gpu_count_pci'] == 8
    assert readings['cmdline']['iommu_passthrough'] is True and readings['cmdline']['pci_realloc_off'] is True
    for gpu in readings['gpus']:
        assert gpu['largest_bar_bytes'] == 256 * GIB, gpu
        link = gpu['link']
        assert (link['link_speed_gts'], link['link_width']) == (32.0, 16) == (link['link_cap_speed_gts'], link['link_cap_width']), gpu


def test_each_finding_with_its_level_and_fix():
    data = report('findings')
    assert data['stopping_levels'] == ['fail']
    assert levels(data) == [(rule, level) for rule, level, _text, _fix in FINDINGS]
    for item, (rule, _level, text, fix) in zip(data['findings'], FINDINGS):
        assert text in item['message'], (rule, item['message'])
        assert item['fix'] == fix, (rule, item['fix'])
    assert data['readings']['cmdline']['text'].endswith('ro amd_iommu=on pci=realloc=off')
    assert dict((key, int(value)) for key, value in data['counts'].items()) == {'fail': 0, 'warn': 4, 'info': 2}


def test_the_readable_report_gives_each_fix():
    text = report('findings', 'txt')
    # The template wraps the fixes: compare without white space.
    bare = ''.join(text.split())
    for rule, level, _text, fix in FINDINGS:
        assert '\n[%s] %s\n' % (level, rule) in text
        assert 'Fix:' + ''.join(fix.split()) in bare, rule
    assert '0000:3d:00.0  NUMA 0  largest BAR 256.0 GiB  link 32.0 GT/s x8 of 32.0 GT/s x16' in text


def test_a_multi_node_fleet_stops_on_its_warnings():
    data = report('multi-node')
    assert data['stopping_levels'] == ['fail', 'warn']
    assert [rule for rule, level in levels(data) if level == 'warn'] == [
        'gpu-bar-small', 'iommu-passthrough-missing', 'pcie-link-width-downgraded', 'pcie-link-speed-downgraded',
        'rdma-none', 'pcie-acs-enabled']
    found = dict((item['id'], item) for item in data['findings'])
    assert found['rdma-none']['fix'] == RDMA_NONE_FIX
    assert found['pcie-acs-enabled']['fix'] == dict((f[0], f[3]) for f in FINDINGS)['pcie-acs-enabled']
    assert data['readings']['multi_node'] is True and data['readings']['multi_node_from'] == 'inventory'


def test_a_build_on_another_rocm_than_its_recipe_is_a_warning():
    data = report('recipe')
    assert data['stopping_levels'] == ['fail']
    assert levels(data) == [('engine-recipe-rocm-differs', 'warn'), ('kernel-packages-unchecked', 'info')]
    finding = data['findings'][0]
    assert finding['message'] == RECIPE_MESSAGE
    assert finding['fix'].startswith('Set rocm_version to 7.2.3 to build on the ROCm the recipe was made for; or keep'
                                     ' 7.1.1 and set the component refs')
    assert dict((key, int(value)) for key, value in data['counts'].items()) == {'fail': 0, 'warn': 1, 'info': 1}
    text = report('recipe', 'txt')
    assert '\n[warn] engine-recipe-rocm-differs\n' in text


def test_a_debian_12_builder_of_vllm_0_32_0_stops_without_gcc_13():
    data = report('toolchain')
    assert levels(data) == [('build-toolchain-unavailable', 'fail'), ('engine-recipe-rocm-differs', 'warn'),
                            ('kernel-packages-unchecked', 'info')]
    finding = data['findings'][0]
    assert 'Debian 12 cannot give gcc 13 (vLLM 0.32.0\'s recipe builds torch with gcc 13)' in finding['message']
    assert 'toolchain_gcc_version' in finding['fix']
    # Its own Python 3.11 is inside vLLM 0.32's range: no Python finding; the table's choice is in the readings.
    assert data['readings']['toolchain'] == {'python': '3.11', 'python_path': '/usr/bin/python3', 'gcc': None, 'sources': []}


def test_check_mode_on_the_converged_host_changes_nothing():
    assert_check_run_changes_nothing(__file__)
    assert levels(report('clean')) == [('kernel-packages-unchecked', 'info')]
