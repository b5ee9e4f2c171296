# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one kernel command line parser: real /proc/cmdline captures (tests/unit/fixtures/cmdline) and the
rules of the kernel's own reading (quotes, dashes, init's arguments, the last occurrence)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils._cmdline import (
    cmdline_readings,
    kernel_args_missing,
    last_value,
    options,
    parse_cmdline,
)

FIXTURE_TOOL = 'cmdline'


def test_capture(note):
    expected = note['expected']
    args = parse_cmdline(note['text'])
    assert len(args) == expected['args_count']
    assert list(args[0]) == expected['first']
    assert list(args[-1]) == expected['last']
    reading = cmdline_readings(note['text'])
    assert reading['text'] == note['text'].strip()
    assert reading['iommu_passthrough'] is expected['iommu_passthrough']
    assert reading['iommu_disabled_by'] == expected['iommu_disabled_by']
    assert reading['pci_realloc_off'] is expected['pci_realloc_off']
    assert kernel_args_missing(expected['wanted'], note['text']) == expected['missing']


def test_quotes_dashes_and_init_arguments():
    args = parse_cmdline('BOOT_IMAGE=/vmlinuz ro "quiet" amd-iommu=off,fullflush dyndbg="file x.c +p" -- iommu=off\n')
    assert args == [('BOOT_IMAGE', '/vmlinuz'), ('ro', None), ('quiet', None), ('amd_iommu', 'off,fullflush'),
                    ('dyndbg', 'file x.c +p')]


def test_readings_of_the_iommu_and_pci():
    reading = cmdline_readings('BOOT_IMAGE=/vmlinuz ro amd-iommu=off,fullflush iommu=pt pci=realloc=off,noaer -- iommu=off\n')
    assert reading['iommu_disabled_by'] == ['amd_iommu=off']
    assert reading['iommu_passthrough'] is True
    assert reading['pci_realloc_off'] is True
    assert reading['iommu'] == ['pt'] and reading['amd_iommu'] == ['off', 'fullflush']


@pytest.mark.parametrize('text, disabled, passthrough, realloc_off', [
    ('ro iommu=pt iommu=off pci=realloc=off', ['iommu=off'], True, True),
    ('ro iommu=pt iommu=nopt', [], False, False),
    ('ro iommu.passthrough=1', [], True, False),
    ('ro iommu.passthrough=1 iommu=nopt', [], False, False),
    ('ro intel_iommu=on intel_iommu=off pci=realloc=off pci=realloc', ['intel_iommu=off'], False, False),
    ('', [], False, False),
], ids=['iommu-off-last', 'nopt-last', 'generic-passthrough', 'nopt-beats-generic', 'intel-off-realloc-on-last', 'empty'])
def test_last_setting_wins(text, disabled, passthrough, realloc_off):
    reading = cmdline_readings(text)
    assert (reading['iommu_disabled_by'], reading['iommu_passthrough'], reading['pci_realloc_off']) == (disabled, passthrough, realloc_off)


@pytest.mark.parametrize('text, missing', [
    ('ro quiet iommu=pt pci=realloc=off amd_iommu=on', []),
    ('ro quiet', ['iommu=pt', 'pci=realloc=off', 'amd_iommu=on']),
    ('ro iommu=pt iommu=nopt pci=noaer,realloc=off amd-iommu=on', ['iommu=pt']),
    ('ro pci=realloc=off pci=noaer iommu=pt amd_iommu=on', ['pci=realloc=off']),
    ('ro iommu=pt pci="realloc=off" amd_iommu=on -- pci=noaer', []),
    ('ro iommu pci=realloc=off amd_iommu=on', ['iommu=pt']),
], ids=['all-there', 'none-there', 'nopt-later-comma-list', 'later-pci-replaces', 'quotes-and-init-args', 'bare-flag-is-no-value'])
def test_kernel_args_missing(text, missing):
    assert kernel_args_missing(['iommu=pt', 'pci=realloc=off', 'amd_iommu=on'], text) == missing


def test_flags_and_parsed_input():
    args = parse_cmdline('ro quiet splash=verbose')
    assert kernel_args_missing(['quiet', 'splash', 'nosmt'], args) == ['nosmt']
    assert kernel_args_missing([], 'ro') == [] and kernel_args_missing(None, None) == []
    assert options(args, 'splash') == ['verbose'] and last_value(args, 'ro') == (True, None)
    assert last_value(args, 'nosmt') == (False, None)
