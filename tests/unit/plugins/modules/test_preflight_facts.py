# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""preflight_facts run as Ansible runs it: stand-in mokutil and apt-cache printing real captures, and a
procfs and sysfs tree per test."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
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
    assert set(facts) == {'kernel', 'secure_boot', 'paths', 'files', 'files_differing', 'users', 'groups', 'globs', 'units'}


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


def test_files_are_read_as_stat_would(node, tmp_path):
    record = tmp_path / 'record'
    record.write_text('flags\n')
    target = tmp_path / 'venv-1'
    target.mkdir()
    link = tmp_path / 'current'
    link.symlink_to(target)
    dangling = tmp_path / 'gone'
    dangling.symlink_to(tmp_path / 'nothing')
    files = [{'path': str(record), 'checksum': 'sha1'}, {'path': str(record) + '.x', 'checksum': 'sha256'},
             {'path': str(link), 'checksum': 'sha256', 'name': 'venv'}, {'path': str(dangling)}]
    _result, facts = run(node, readings=[], files=files)
    found = facts['files']
    assert found[str(record)] == {'exists': True, 'islnk': False, 'lnk_source': None,
                                  'checksum': hashlib.sha1(b'flags\n').hexdigest()}
    assert found[str(record) + '.x'] == {'exists': False, 'islnk': False, 'lnk_source': None, 'checksum': None}
    assert found['venv'] == {'exists': True, 'islnk': True, 'lnk_source': str(target), 'checksum': None}
    assert found[str(dangling)]['exists'] is True and found[str(dangling)]['islnk'] is True


def test_files_with_a_want_say_which_differ(node, tmp_path):
    import grp
    import pwd
    owner, group = pwd.getpwuid(os.getuid())[0], grp.getgrgid(os.getgid())[0]
    unit = tmp_path / 'unit'
    unit.write_text('[Unit]\n')
    unit.chmod(0o644)
    drifted = tmp_path / 'drifted'
    drifted.write_text('[Unit]\n')
    drifted.chmod(0o600)
    link = tmp_path / 'current'
    link.symlink_to('venv-1')
    digest = hashlib.sha1(b'[Unit]\n').hexdigest()
    same = dict(state='file', checksum=digest, owner=owner, group=group, mode='0644')
    files = [{'name': 'unit', 'path': str(unit), 'want': same},
             {'name': 'drifted', 'path': str(drifted), 'want': same},
             {'name': 'edited', 'path': str(unit), 'want': dict(same, checksum=hashlib.sha1(b'x').hexdigest())},
             {'name': 'missing', 'path': str(tmp_path / 'missing'), 'want': same},
             {'name': 'dir', 'path': str(tmp_path), 'want': dict(state='directory', owner=owner)},
             {'name': 'link', 'path': str(link), 'want': dict(state='link', src='venv-1')},
             {'name': 'moved', 'path': str(link), 'want': dict(state='link', src='venv-2')},
             {'name': 'gone', 'path': str(tmp_path / 'gone'), 'want': dict(state='absent')},
             {'name': 'read only', 'path': str(unit)},
             {'name': 'lines', 'path': str(unit), 'want': {'lines': ['[Unit]', 'Wants=x']}}]
    _result, facts = run(node, readings=[], files=files)
    assert facts['files_differing'] == {'drifted': ['mode 0600, wanted 0644'], 'edited': ['content differs'],
                                        'missing': ['is absent, wanted file'], 'moved': ['points at venv-1, wanted venv-2'],
                                        'lines': ["lacks 'Wants=x'"]}
    assert facts['files']['unit']['checksum'] == digest and facts['files']['read only']['checksum'] is None


@pytest.mark.parametrize('entry, message', [
    pytest.param({'path': '/etc/x', 'checksum': 'sha256', 'want': {'checksum': 'ab'}}, 'which is a SHA-1', id='want-checksum-sha256'),
    pytest.param({'path': '/etc/x', 'want': {'mode': 'rw-'}}, 'not an octal mode', id='want-mode-not-octal'),
])
def test_files_with_a_bad_want_are_refused(node, entry, message):
    result = node.run('preflight_facts', readings=[], files=[entry])
    assert result['failed'] is True and message in result['msg']


def test_accounts_as_the_name_service_has_them(node):
    import grp
    import pwd
    me = pwd.getpwuid(os.getuid())
    _result, facts = run(node, readings=[], users=[me.pw_name, 'llmfleet-nobody-such'],
                         groups=[grp.getgrgid(me.pw_gid).gr_name, 'llmfleet-no-such-group'])
    assert facts['users']['llmfleet-nobody-such'] is None
    assert facts['users'][me.pw_name]['group'] == grp.getgrgid(me.pw_gid).gr_name
    assert facts['users'][me.pw_name]['home'] == me.pw_dir and facts['users'][me.pw_name]['shell'] == me.pw_shell
    assert grp.getgrgid(me.pw_gid).gr_name not in facts['users'][me.pw_name]['groups']
    assert facts['groups'] == {grp.getgrgid(me.pw_gid).gr_name: {'exists': True, 'gid': me.pw_gid},
                               'llmfleet-no-such-group': {'exists': False, 'gid': None}}


def test_globs_list_what_find_would(node, tmp_path):
    (tmp_path / 'llmfleet-worker-0.service').write_text('')
    (tmp_path / 'llmfleet-worker-1.service').write_text('')
    (tmp_path / 'vllm-0.32.0-aaaaaaaaaaaa').mkdir()
    (tmp_path / 'other.service').write_text('')
    units, venvs = str(tmp_path / 'llmfleet-worker-*.service'), str(tmp_path / 'vllm-*')
    _result, facts = run(node, readings=[], globs=[units, venvs, str(tmp_path / 'none-*')])
    assert [m['path'] for m in facts['globs'][units]] == [str(tmp_path / 'llmfleet-worker-0.service'),
                                                          str(tmp_path / 'llmfleet-worker-1.service')]
    assert facts['globs'][venvs] == [{'path': str(tmp_path / 'vllm-0.32.0-aaaaaaaaaaaa'), 'state': 'directory',
                                      'mtime': os.stat(str(tmp_path / 'vllm-0.32.0-aaaaaaaaaaaa')).st_mtime}]
    assert facts['globs'][str(tmp_path / 'none-*')] == []


UNITS = ['ssh.service', 'llmfleet-nosuch.service', 'systemd-journald.service']


def test_units_as_systemctl_says(node):
    node.tool('systemctl', {'is-active ' + ' '.join(UNITS): ('systemctl/lab-debian12-is-active.txt', 0, 'out'),
                            'is-enabled ' + ' '.join(UNITS): ('systemctl/lab-debian12-is-enabled-missing-unit.txt', 1, 'out')})
    result, facts = run(node, readings=[], units=UNITS)
    assert [call['argv'][1:] for call in node.calls()] == [['is-active'] + UNITS, ['is-enabled'] + UNITS]
    assert facts['units'] == {
        'ssh.service': {'active': 'active', 'enabled': 'enabled'},
        'llmfleet-nosuch.service': {'active': 'inactive', 'enabled': 'unknown'},
        # is-enabled stopped at the unit before it: not taken for enabled.
        'systemd-journald.service': {'active': 'active', 'enabled': 'unknown'},
    }
    _result, facts = run(node, readings=[])
    assert facts['units'] == {} and len(node.calls()) == 2


def test_units_systemctl_does_not_say(node):
    # A systemctl that prints no state (here it fails with a message on standard error): nothing is taken for running.
    node.tool('systemctl', {})
    _result, facts = run(node, readings=[], units=['prometheus.service'])
    assert facts['units'] == {'prometheus.service': {'active': 'unknown', 'enabled': 'unknown'}}
    assert len(node.calls()) == 2
