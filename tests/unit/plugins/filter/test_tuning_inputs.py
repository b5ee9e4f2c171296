# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every input rule of the tuning role, triggered and quiet; the node's part as preflight_facts reads it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.tuning import RULES, tuning_input_problems
from input_rules import PLATFORM, UNSUPPORTED, Case, assert_every_rule_reached, role_defaults, run_case

VALUES = role_defaults('tuning')
GRUB = '/usr/sbin/update-grub'
NUMA = '/proc/sys/kernel/numa_balancing'
GOVERNOR = '/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor'
STATE2 = '/sys/devices/system/cpu/cpu0/cpuidle/state2/disable'
STATE9 = '/sys/devices/system/cpu/cpu0/cpuidle/state9/disable'
FILES = {'update_grub': GRUB, 'numa_balancing': NUMA, 'governor': GOVERNOR, 'cstates': [STATE2],
         'sysctl_file': '/etc/sysctl.d/90-llmfleet-tuning.conf'}
ARGS = ['iommu=pt', 'pci=realloc=off']
HERE = {'exists': True, 'writable': True}
READ_ONLY = {'exists': True, 'writable': False}
GONE = {'exists': False, 'writable': False}
# A real node whose boot loader is ours and whose settings apply now: every file there and writable.
NODE = {GRUB: HERE, NUMA: HERE, GOVERNOR: HERE, STATE2: HERE}
CTX = {'platform': PLATFORM, 'node_paths': NODE, 'files': FILES, 'kernel_args': ARGS}


def _node(**changes):
    found = dict(NODE)
    for path, reading in changes.items():
        found[{'grub': GRUB, 'numa': NUMA, 'governor': GOVERNOR, 'state2': STATE2}[path]] = reading
    return {'node_paths': found}


CASES = [
    Case('unsupported-system', {}, 'tuning-unsupported-system', {'platform': UNSUPPORTED}, contains='CentOS 9'),
    Case('supported-system', {}, 'tuning-unsupported-system', absent=True),
    Case('extra-arg-with-space', {'tuning_kernel_args_extra': ['quiet splash']}, 'tuning-kernel-args-extra-format',
         contains=['tuning_kernel_args_extra', '"quiet splash"']),
    Case('extra-arg-with-dollar', {'tuning_kernel_args_extra': ['amd_iommu=$x']}, 'tuning-kernel-args-extra-format', contains='"amd_iommu=$x"'),
    Case('extra-arg-number', {'tuning_kernel_args_extra': [1]}, 'tuning-kernel-args-extra-format'),
    Case('governor-two-lines', {'tuning_cpu_governor_name': 'performance\nExecStartPre=/usr/bin/id'}, 'tuning-governor-name',
         contains='tuning_cpu_governor_name "performance\\nExecStartPre=/usr/bin/id"'),
    Case('governor-specifier', {'tuning_cpu_governor_name': 'perf%n'}, 'tuning-governor-name'),
    Case('governor-space', {'tuning_cpu_governor_name': 'performance --cpu 0'}, 'tuning-governor-name'),
    Case('governor-plain', {'tuning_cpu_governor_name': 'schedutil'}, 'tuning-governor-name', absent=True),
    Case('extra-arg-plain', {'tuning_kernel_args_extra': ['amd_iommu=on', 'pcie_aspm=off']}, 'tuning-kernel-args-extra-format',
         absent=True),
    Case('cstates-empty', {'tuning_cstate_disabled_states': []}, 'tuning-cstate-states-empty', contains='tuning_cstate_limit: false'),
    Case('cstates-empty-limit-off', {'tuning_cstate_disabled_states': [], 'tuning_cstate_limit': False}, 'tuning-cstate-states-empty',
         absent=True),
    Case('cstate-zero', {'tuning_cstate_disabled_states': [0, 2]}, 'tuning-cstate-states-not-idle', contains='has 0:'),
    Case('cstate-word', {'tuning_cstate_disabled_states': ['C2']}, 'tuning-cstate-states-not-idle', contains='"C2"'),
    Case('cstate-two-and-three', {'tuning_cstate_disabled_states': [2, '3']}, 'tuning-cstate-states-not-idle', absent=True),
    Case('no-grub', {}, 'tuning-update-grub-missing', _node(grub=GONE),
         contains=['/usr/sbin/update-grub is missing', 'iommu=pt pci=realloc=off', 'tuning_boot_loader_managed: false']),
    Case('grub-there', {}, 'tuning-update-grub-missing', absent=True),
    Case('grub-not-asked', {}, 'tuning-update-grub-missing', {'node_paths': {}}, absent=True),
    Case('no-numa-balancing', {}, 'tuning-numa-balancing-missing', _node(numa=GONE), contains='tuning_numa_balancing: false'),
    Case('numa-balancing-there', {}, 'tuning-numa-balancing-missing', absent=True),
    Case('numa-balancing-read-only', {}, 'tuning-numa-balancing-read-only', _node(numa=READ_ONLY),
         contains=['tuning_apply_now: false', '/etc/sysctl.d/90-llmfleet-tuning.conf']),
    Case('numa-balancing-writable', {}, 'tuning-numa-balancing-read-only', absent=True),
    Case('no-state-9', {'tuning_cstate_disabled_states': [9]}, 'tuning-cstates-missing',
         {'files': dict(FILES, cstates=[STATE9]), 'node_paths': dict(NODE, **{STATE9: GONE})}, contains=['state9', '[9]']),
    Case('state-2-there', {}, 'tuning-cstates-missing', absent=True),
    Case('state-2-read-only', {}, 'tuning-cstates-read-only', _node(state2=READ_ONLY), contains='tuning_apply_now: false'),
    Case('state-2-writable', {}, 'tuning-cstates-read-only', absent=True),
    Case('no-cpufreq', {}, 'tuning-governor-missing', _node(governor=GONE), contains='tuning_cpu_governor: false'),
    Case('cpufreq-there', {}, 'tuning-governor-missing', absent=True),
    Case('cpufreq-read-only', {}, 'tuning-governor-read-only', _node(governor=READ_ONLY), contains='tuning_apply_now: false'),
    Case('cpufreq-not-asked', {}, 'tuning-governor-read-only', {'node_paths': {}}, absent=True),
]


@pytest.mark.parametrize('case', CASES, ids=[case.id for case in CASES])
def test_rule(case):
    run_case(RULES, VALUES, CTX, case)


def test_defaults_on_a_ready_node_have_no_problem():
    assert tuning_input_problems(VALUES, PLATFORM, node_paths=NODE, files=FILES, kernel_args=ARGS) == []


def test_a_container_that_asks_for_nothing_has_no_problem():
    assert tuning_input_problems(VALUES, dict(PLATFORM, kernel_managed=False)) == []


def test_every_rule_is_reached():
    assert_every_rule_reached(RULES, CASES)
