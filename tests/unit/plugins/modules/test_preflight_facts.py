# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""preflight_facts run as Ansible runs it: stand-in mokutil and apt-cache printing real captures, and a
procfs and sysfs tree per test."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil

import pytest

FIXTURES = os.path.join(os.path.dirname(__file__), '..', '..', 'fixtures')
EFIVAR = 'SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c'
RUNNING = os.uname()[2]


def fixture(path):
    with open(os.path.join(FIXTURES, path)) as handle:
        return handle.read()


def proc(node, cmdline=None, numa_balancing=None):
    root = os.path.join(node.root, 'proc')
    if cmdline is not None:
        node.write(os.path.join(root, 'cmdline'), cmdline)
    if numa_balancing is not None:
        node.write(os.path.join(root, 'sys', 'kernel', 'numa_balancing'), numa_balancing)
    if not os.path.isdir(root):
        os.makedirs(root)
    return root


def efivar(node, raw):
    path = os.path.join(node.sysfs, 'firmware', 'efi', 'efivars', EFIVAR)
    os.makedirs(os.path.dirname(path))
    with open(path, 'wb') as handle:
        handle.write(raw)


def cpu_packages(node, ids):
    for cpu, package in enumerate(ids):
        node.write(os.path.join(node.sysfs, 'devices', 'system', 'cpu', 'cpu%d' % cpu, 'topology', 'physical_package_id'),
                   '%d\n' % package)


def run(node, **params):
    params.setdefault('sysfs_path', node.sysfs)
    params.setdefault('proc_path', proc(node))
    result = node.run('preflight_facts', **params)
    assert result.get('failed') is not True, result
    assert result['changed'] is False
    return result, result['ansible_facts']['preflight']


def test_every_reading_with_the_tools(node, tmp_path):
    node.tool('mokutil', {'--sb-state': ('mokutil/enabled-sos-issue.txt', 0, 'out')})
    node.tool('apt-cache', {'policy linux-headers-amd64 bash': ('apt_cache_policy/debian12-headers-meta-and-bash.txt', 0, 'out')})
    cpu_packages(node, [0, 0, 1, 1])
    result, facts = run(node, proc_path=proc(node, fixture('cmdline/csit-thunderx2-intel-iommu-on.txt'), '1\n'),
                        kernel_packages=['linux-headers-amd64', 'bash'], disk_path=str(tmp_path / 'not' / 'yet'),
                        kernel_args=['iommu=pt', 'intel_iommu=on'])
    calls = node.calls()
    assert [call['argv'][1:] for call in calls] == [['--sb-state'], ['policy', 'linux-headers-amd64', 'bash']]
    assert all(call['LC_ALL'] == 'C' and call['LANG'] == 'C' for call in calls)
    assert [argv[1:] for argv in result['commands']] == [['--sb-state'], ['policy', 'linux-headers-amd64', 'bash']]
    assert facts['kernel']['release'] == RUNNING and len(facts['kernel']['version']) == 3
    assert facts['cmdline']['intel_iommu'] == ['on'] and facts['cmdline']['iommu_passthrough'] is False
    assert facts['kernel_args_missing'] == ['iommu=pt']
    assert facts['numa_balancing'] == 1
    assert facts['secure_boot'] == {'state': 'enabled', 'source': 'mokutil', 'shim_validation': True, 'detail': 'SecureBoot enabled'}
    assert facts['kernel_packages'] == {'checked': True, 'error': None, 'packages': {
        'linux-headers-amd64': {'known': True, 'installed': None, 'candidate': '6.1.192-3'},
        'bash': {'known': True, 'installed': '5.2.15-2+b8', 'candidate': '5.2.15-2+b13'}}}
    disk = facts['disk']
    assert disk['path'] == str(tmp_path / 'not' / 'yet') and disk['mount'].startswith('/')
    assert disk['free_bytes'] > 0 and disk['free_gib'] == round(disk['free_bytes'] / 1024.0 ** 3, 1)
    assert facts['sockets'] == 2
    assert facts['paths'] == {}


def test_efivar_when_mokutil_does_not_answer(node):
    node.tool('mokutil', {'--sb-state': ('module/not-a-tool-output.txt', 1, 'err')})
    efivar(node, b'\x06\x00\x00\x00\x01')
    _result, facts = run(node, readings=['secure_boot'])
    assert facts['secure_boot'] == {'state': 'enabled', 'source': 'efivar', 'shim_validation': None,
                                    'detail': 'EFI variable SecureBoot = 1'}
    assert set(facts) == {'kernel', 'secure_boot', 'paths'}


def test_mokutil_without_efi(node):
    node.tool('mokutil', {'--sb-state': ('mokutil/no-efi-insights.txt', 255, 'err')})
    _result, facts = run(node, readings=['secure_boot'])
    assert (facts['secure_boot']['state'], facts['secure_boot']['source']) == ('no-efi', 'mokutil')


@pytest.mark.skipif(bool(shutil.which('mokutil')) or any(os.path.exists(os.path.join(d, 'mokutil')) for d in ('/usr/bin', '/usr/sbin', '/sbin', '/bin')),
                    reason='this machine has mokutil installed')
@pytest.mark.parametrize('raw, state, source', [
    (b'\x06\x00\x00\x00\x00', 'disabled', 'efivar'),
    (None, 'no-efi', None),
], ids=['efivar-off', 'no-efivar'])
def test_without_mokutil(node, raw, state, source):
    if raw is not None:
        efivar(node, raw)
    result, facts = run(node, readings=['secure_boot'])
    assert (facts['secure_boot']['state'], facts['secure_boot']['source']) == (state, source)
    assert result['commands'] == []


@pytest.mark.parametrize('capture, rc, stream, error', [
    ('apt_cache_policy/debian12-malformed-sources-entry.txt', 100, 'err',
     'apt-cache policy reported "E: Malformed entry 1 in list file /tmp/badparts/bad.list (Suite)"'),
    ('module/not-a-tool-output.txt', 0, 'out', 'apt-cache policy printed output llmfleet.rocm cannot read'),
    ('module/not-a-tool-output.txt', 139, 'err', 'apt-cache exited with 139'),
], ids=['apt-error-line', 'unreadable', 'crash'])
def test_apt_problems_are_readings(node, capture, rc, stream, error):
    node.tool('apt-cache', {'policy linux-headers-6.1.0-28-amd64': (capture, rc, stream)})
    _result, facts = run(node, readings=['kernel_packages'], kernel_packages=['linux-headers-6.1.0-28-amd64'])
    assert facts['kernel_packages']['checked'] is False and facts['kernel_packages']['packages'] is None
    assert facts['kernel_packages']['error'].startswith(error), facts['kernel_packages']


def test_kernel_packages_follow_the_running_kernel(node):
    node.tool('apt-cache', {'policy linux-headers-%s' % RUNNING: ('apt_cache_policy/debian12-unknown-kernel-headers.txt', 0, 'out')})
    _result, facts = run(node, readings=['kernel_packages'], kernel_packages=['linux-headers-6.1.0-28-amd64'],
                         kernel_packages_release='6.1.0-28-amd64')
    assert facts['kernel_packages']['packages'] == {'linux-headers-' + RUNNING: {'known': False, 'installed': None, 'candidate': None}}


def test_nothing_asked_runs_nothing(node, tmp_path):
    writable = tmp_path / 'writable'
    writable.write_text('0\n')
    readonly = tmp_path / 'readonly'
    readonly.write_text('0\n')
    readonly.chmod(0o444)
    paths = [str(writable), str(readonly), str(tmp_path / 'missing')]
    result, facts = run(node, readings=['cmdline', 'numa_balancing', 'kernel_packages'], paths=paths, kernel_args=['iommu=pt'])
    assert result['commands'] == []
    assert facts['cmdline'] is None and facts['kernel_args_missing'] == ['iommu=pt']
    assert facts['numa_balancing'] is None
    assert facts['kernel_packages'] == {'checked': False, 'packages': None, 'error': None}
    assert facts['paths'][str(writable)] == {'exists': True, 'writable': True}
    assert facts['paths'][str(tmp_path / 'missing')] == {'exists': False, 'writable': False}
    assert facts['paths'][str(readonly)]['exists'] is True
    if os.geteuid() != 0:
        assert facts['paths'][str(readonly)]['writable'] is False


def test_check_mode_reads_the_same(node):
    _result, facts = run(node, proc_path=proc(node, fixture('cmdline/firecracker-vm-init-args.txt')), readings=['cmdline'],
                         kernel_args=['quiet', 'pci=realloc=off'], _ansible_check_mode=True)
    assert facts['kernel_args_missing'] == ['pci=realloc=off']
    assert facts['cmdline']['text'].endswith('--auth-required')


def test_unknown_readings_are_refused(node):
    result = node.run('preflight_facts', readings=['bios'], sysfs_path=node.sysfs)
    assert result['failed'] is True and 'readings' in result['msg']


@pytest.mark.parametrize('option', ['files', 'globs', 'users', 'groups', 'units'])
def test_the_file_and_unit_readings_are_gone(node, option):
    # The roles write their files with template, copy and file tasks and keep their units with systemd_service.
    result = node.run('preflight_facts', readings=[], sysfs_path=node.sysfs, **{option: []})
    assert result['failed'] is True and 'Unsupported parameters' in result['msg'] and option in result['msg']


SHOW = '--show --showformat=${Package}\\t${Version}\\t${db:Status-Abbrev}\\n'


def test_installed_packages_are_read_only_when_asked(node):
    node.tool('dpkg-query', {SHOW: ('dpkg_query/lab-gpu-node-debian12-rocm7.1.1-held.txt', 0, 'out')})
    result, _facts = run(node, readings=['installed'])
    assert [call['argv'][1:] for call in node.calls()] == [SHOW.split(' ')]
    assert result['installed_error'] is None
    assert result['installed']['rocm-core'] == {'version': '7.1.1.70101-38~22.04', 'held': True}
    assert 'installed' not in result['ansible_facts']['preflight']
    result, _facts = run(node, readings=['disk'])
    assert 'installed' not in result and len(node.calls()) == 1


@pytest.mark.parametrize('capture, rc, error', [
    ('module/not-a-tool-output.txt', 0, 'cannot read'),
    ('module/not-a-tool-output.txt', 2, 'exited with 2'),
])
def test_dpkg_query_problems_are_readings(node, capture, rc, error):
    node.tool('dpkg-query', {SHOW: (capture, rc, 'out')})
    result, _facts = run(node, readings=['installed'])
    assert result['installed'] is None and error in result['installed_error']
