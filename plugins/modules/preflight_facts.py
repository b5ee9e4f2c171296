#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: preflight_facts
short_description: Read the node settings Ansible's own modules and facts do not into C(ansible_facts.preflight)
version_added: 0.1.0
description:
  - Reads, in one call and without changing anything, what a GPU node is judged on that Ansible's own modules and facts
    do not read or do not judge (the kernel command line as the kernel takes it, NUMA balancing, Secure Boot, apt's view
    of the packages the running kernel needs, the free space where a directory will be, and the installed packages with
    their holds). In the same call it counts the CPU sockets and says whether paths exist and are writable, so that the
    preflight and tuning roles need no other. The GPUs, the PCIe tree, NUMA and RDMA come from
    M(llmfleet.rocm.rocm_facts), M(llmfleet.rocm.pcie_facts), M(llmfleet.rocm.numa_facts) and M(llmfleet.rocm.rdma_facts).
  - The running kernel's release and version, always.
  - C(cmdline) reads C(/proc/cmdline) with the collection's one kernel command line parser (the IOMMU mode from every
    C(iommu=), C(amd_iommu=) and C(intel_iommu=) in order, C(realloc=off) among the options of C(pci=)) and says which
    of I(kernel_args) the running kernel does not have in effect. The tuning role's preflight uses this.
  - C(numa_balancing) reads C(/proc/sys/kernel/numa_balancing) (null where the kernel has no NUMA balancing).
  - C(secure_boot) runs C(mokutil --sb-state) when it is installed and, where it is not or did not answer, reads the UEFI
    variable C(SecureBoot) from efivarfs.
  - C(kernel_packages) runs C(apt-cache policy) for I(kernel_packages) and says, per package, whether apt knows it and
    which version is installed and which is the candidate.
  - C(disk) gives the free space of the file system that holds I(disk_path) (the path need not exist yet; the nearest
    existing directory above it counts).
  - C(sockets) counts the CPU sockets from the kernel's CPU topology.
  - I(paths) says, for each path, whether it exists and is writable (the tuning role checks the files its settings need).
  - C(installed) runs C(dpkg-query --show) and returns, outside C(ansible_facts) (so that no fact cache keeps it past the
    run), every installed package with its version and whether it is held, which M(ansible.builtin.package_facts) does
    not say. The base role reads it once per run; the roles skip an install whose packages are all there. Asked for
    only by name (not in the default I(readings)).
  - A reading that fails is part of the result (an C(error), null, or C(unknown)), never a failure of the module, so that
    every other reading still arrives. Tools run with an argument list (no shell) and the C locale.
author:
  - llmfleet.rocm contributors (@llmfleet)
extends_documentation_fragment:
  - llmfleet.rocm.facts
  - llmfleet.rocm.facts.SYSFS
options:
  readings:
    description:
      - Which readings to take (the kernel's release is always read).
    type: list
    elements: str
    choices: [cmdline, numa_balancing, secure_boot, kernel_packages, disk, sockets, installed]
    default: [cmdline, numa_balancing, secure_boot, kernel_packages, disk, sockets]
  kernel_packages:
    description:
      - Packages the running kernel needs, for C(apt-cache policy) (for example C(linux-headers-<release>)). Empty asks nothing.
    type: list
    elements: str
    default: []
  kernel_packages_release:
    description:
      - The kernel release the names in I(kernel_packages) were made for (C(llmfleet_platform.kernel)). When the running
        kernel is another one (facts from a cache older than a reboot), apt is asked for the names with the running
        release in its place.
    type: str
  disk_path:
    description:
      - The path whose file system's free space C(disk) reads; the nearest existing directory above it counts.
    type: path
    default: /opt
  kernel_args:
    description:
      - Kernel arguments (C(key) or C(key=value)) to look for on the running command line; C(kernel_args_missing) lists
        those the running kernel does not have in effect.
    type: list
    elements: str
    default: []
  paths:
    description:
      - Paths to look at; C(paths) in the result says for each whether it exists and whether it is writable.
    type: list
    elements: path
    default: []
  proc_path:
    description:
      - Where procfs is mounted. Only tests, chroots and the lab change it (a container shows its host's
        C(/proc/cmdline); the molecule scenario C(preflight) points it at a stand-in with the kernel command line of
        its simulated node, through C(module_defaults)).
    type: path
    default: /proc
attributes:
  facts:
    support: full
    description: Sets C(ansible_facts.preflight); each call replaces it with its own readings.
notes:
  - C(mokutil) and C(apt-cache) are optional. Without C(mokutil) the Secure Boot state comes from efivarfs; without either,
    the node is taken to boot without UEFI (C(no-efi)). Without C(apt-cache), C(kernel_packages.error) says so.
seealso:
  - module: llmfleet.rocm.rocm_facts
  - module: llmfleet.rocm.pcie_facts
  - name: The kernel's command-line parameters
    description: What the kernel reads from its command line.
    link: https://docs.kernel.org/admin-guide/kernel-parameters.html
'''

EXAMPLES = r'''
- name: Read what preflight judges
  llmfleet.rocm.preflight_facts:
    kernel_packages: "{{ llmfleet_platform.kernel_packages }}"
    kernel_packages_release: "{{ llmfleet_platform.kernel }}"
    disk_path: /opt

- name: Warn when the IOMMU is not in pass-through mode
  ansible.builtin.debug:
    msg: The kernel command line has no iommu=pt.
  when: not ansible_facts.preflight.cmdline.iommu_passthrough

- name: Ask which kernel arguments the running kernel lacks, and whether a sysctl can be written now
  llmfleet.rocm.preflight_facts:
    readings: [cmdline]
    kernel_args: [iommu=pt, pci=realloc=off]
    paths: [/proc/sys/kernel/numa_balancing]
  register: node

- name: Show them
  ansible.builtin.debug:
    msg: >-
      Missing: {{ node.ansible_facts.preflight.kernel_args_missing }};
      writable: {{ node.ansible_facts.preflight.paths['/proc/sys/kernel/numa_balancing'].writable }}
'''

RETURN = r'''
ansible_facts:
  description: The facts set by the module.
  returned: always
  type: dict
  contains:
    preflight:
      description: The readings.
      returned: always
      type: dict
      contains:
        kernel:
          description: The running kernel.
          returned: always
          type: dict
          contains:
            release:
              description: Its release, as C(uname -r) prints it.
              type: str
              sample: 6.8.0-45-generic
            version:
              description: Major, minor and patch level, or null when the release does not start with a version.
              type: list
              elements: int
              sample: [6, 8, 0]
        cmdline:
          description: The kernel command line, or null when C(/proc/cmdline) could not be read.
          returned: when C(cmdline) is in I(readings)
          type: dict
          contains:
            text:
              description: The command line.
              type: str
              sample: BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=UUID=0b1e ro iommu=pt pci=realloc=off
            iommu:
              description: The options of every C(iommu=), in order.
              type: list
              elements: str
              sample: [pt]
            amd_iommu:
              description: The options of every C(amd_iommu=), in order.
              type: list
              elements: str
            intel_iommu:
              description: The options of every C(intel_iommu=), in order.
              type: list
              elements: str
            iommu_disabled_by:
              description: The arguments that turn the IOMMU off (C(amd_iommu=off), C(iommu=off), C(intel_iommu=off)).
              type: list
              elements: str
            iommu_passthrough:
              description: The IOMMU is in pass-through mode (C(iommu=pt), or C(iommu.passthrough=1)).
              type: bool
            pci_realloc_off:
              description: The last C(realloc) option of C(pci=) is C(realloc=off).
              type: bool
        kernel_args_missing:
          description: The arguments of I(kernel_args) the running kernel does not have in effect (all of them when
            C(/proc/cmdline) could not be read), in their order.
          returned: when C(cmdline) is in I(readings)
          type: list
          elements: str
          sample: [pci=realloc=off]
        numa_balancing:
          description: The value of C(kernel.numa_balancing), or null when the kernel has none.
          returned: when C(numa_balancing) is in I(readings)
          type: int
          sample: 0
        secure_boot:
          description: The Secure Boot state.
          returned: when C(secure_boot) is in I(readings)
          type: dict
          contains:
            state:
              description: C(enabled), C(disabled), C(no-efi) (no UEFI variables) or C(unknown).
              type: str
              sample: disabled
            source:
              description: C(mokutil), C(efivar), or null when neither told.
              type: str
            shim_validation:
              description: Whether shim validates what it loads (with Secure Boot on), or null when unknown.
              type: bool
            detail:
              description: What the state was read from, for a report.
              type: str
              sample: SecureBoot disabled
        kernel_packages:
          description: What apt says of I(kernel_packages).
          returned: when C(kernel_packages) is in I(readings)
          type: dict
          contains:
            checked:
              description: C(apt-cache policy) answered for every package.
              type: bool
            packages:
              description: Name to C(known) (apt has it), C(installed) and C(candidate) (versions, or null); null when
                not checked.
              type: dict
              sample: {linux-headers-6.8.0-45-generic: {known: true, installed: null, candidate: 6.8.0-45.45~22.04.1}}
            error:
              description: Why apt could not tell (not installed, an error line, an exit status), or null.
              type: str
        disk:
          description: The free space where I(disk_path) is.
          returned: when C(disk) is in I(readings)
          type: dict
          contains:
            path:
              description: I(disk_path), normalised.
              type: str
              sample: /opt
            mount:
              description: The mount point of its file system, or null when it could not be read.
              type: str
              sample: /
            free_bytes:
              description: Bytes free for an unprivileged user, or null.
              type: int
            free_gib:
              description: The same in GiB, one decimal, or null.
              type: float
              sample: 2900.0
        sockets:
          description: The number of CPU sockets (distinct physical package ids), or null when unknown.
          returned: when C(sockets) is in I(readings)
          type: int
          sample: 2
        paths:
          description: Per path of I(paths), C(exists) and C(writable).
          returned: always
          type: dict
          sample: {/proc/sys/kernel/numa_balancing: {exists: true, writable: false}}
installed:
  description: >-
    Every package dpkg has installed (state C(i)), by name, with its C(version) and C(held) (its selection is C(hold));
    null when C(dpkg-query) is not on the node or its answer could not be read.
  returned: when C(installed) is in I(readings)
  type: dict
  sample: {nftables: {version: 1.0.6-2+deb12u2, held: false}, rocm-core: {version: 7.1.1.70101-38~24.04, held: true}}
installed_error:
  description: Why C(installed) is null, or null.
  returned: when C(installed) is in I(readings)
  type: str
commands:
  description: The argument lists that were run, in order.
  returned: always
  type: list
  elements: list
  sample: [[/usr/bin/mokutil, --sb-state], [/usr/bin/apt-cache, policy, linux-headers-6.8.0-45-generic]]
'''

import os
import posixpath

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.llmfleet.rocm.plugins.module_utils import (
    _apt_policy as apt_policy, _cmdline as cmdline, _dpkg_query as dpkg_query, _kernel as kernel, _secure_boot as secure_boot)
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError
from ansible_collections.llmfleet.rocm.plugins.module_utils._tool_runner import (
    ToolRunner,
    first_lines,
    list_dir,
    output_text,
    read_bytes,
    read_text,
)

DEFAULT_READINGS = ['cmdline', 'numa_balancing', 'secure_boot', 'kernel_packages', 'disk', 'sockets']
READINGS = DEFAULT_READINGS + ['installed']
GIB = 1024 ** 3


def read_cmdline(proc_path, wanted):
    text = read_text(os.path.join(proc_path, 'cmdline'))
    if text is None:
        return None, list(wanted)
    return cmdline.cmdline_readings(text), cmdline.kernel_args_missing(wanted, text)


def read_secure_boot(runner, sysfs_path):
    mokutil_text, efivar, looked = None, None, False
    path = runner.find('mokutil')
    rc = None
    if path:
        rc, out, err = runner.run([path, '--sb-state'])
        mokutil_text = output_text(out, err)
    if rc != 0:
        looked = True
        efivar = read_bytes(os.path.join(sysfs_path, 'firmware', 'efi', 'efivars', secure_boot.EFIVAR_NAME))
    return secure_boot.secure_boot_reading(mokutil_text, efivar, looked)


def read_kernel_packages(runner, names, release, running):
    reading = {'checked': False, 'packages': None, 'error': None}
    if not names:
        return reading
    if release and release != running:
        names = [name.replace(release, running) for name in names]
    path = runner.find('apt-cache')
    if not path:
        reading['error'] = 'apt-cache is not installed on the node'
        return reading
    rc, out, err = runner.run([path, 'policy'] + list(names))
    text = output_text(out, err)
    packages, unreadable = None, None
    try:
        packages = apt_policy.parse_apt_policy(text, names)
    except ToolError as exc:
        reading['error'] = 'apt-cache policy reported "%s"' % exc.line
        return reading
    except ParseError as exc:
        unreadable = exc.detail
    if rc != 0:
        reading['error'] = 'apt-cache exited with %d: %s' % (rc, first_lines(text)[:300])
    elif unreadable is not None:
        reading['error'] = 'apt-cache policy printed output llmfleet.rocm cannot read (%s)' % unreadable
    else:
        reading.update(checked=True, packages=packages)
    return reading


def read_installed(runner):
    """(installed packages, None) or (None, why not)."""
    path = runner.find('dpkg-query')
    if not path:
        return None, 'dpkg-query is not installed on the node'
    argv = [path, '--show', '--showformat=' + dpkg_query.SHOW_FORMAT]
    rc, out, err = runner.run(argv)
    if rc != 0:
        return None, 'dpkg-query exited with %d: %s' % (rc, first_lines(output_text(out, err))[:300])
    try:
        return dpkg_query.parse_dpkg_query(out), None
    except ParseError as exc:
        return None, 'dpkg-query printed output llmfleet.rocm cannot read (%s)' % exc.detail


def read_disk(path):
    wanted = posixpath.normpath(path or '/')
    reading = {'path': wanted, 'mount': None, 'free_bytes': None, 'free_gib': None}
    existing = wanted
    while not os.path.isdir(existing) and existing != '/':
        existing = posixpath.dirname(existing)
    try:
        stats = os.statvfs(existing)
    except OSError:
        return reading
    mount = os.path.realpath(existing)
    while mount != '/' and not os.path.ismount(mount):
        mount = posixpath.dirname(mount)
    free = stats.f_bavail * stats.f_frsize
    reading.update(mount=mount, free_bytes=free, free_gib=round(free / float(GIB), 1))
    return reading


def read_sockets(sysfs_path):
    base = os.path.join(sysfs_path, 'devices', 'system', 'cpu')
    ids = [read_text(os.path.join(base, name, 'topology', 'physical_package_id'))
           for name in list_dir(base) if name.startswith('cpu') and name[3:].isdigit()]
    return kernel.count_sockets(ids)


def read_paths(paths):
    found = {}
    for path in paths:
        exists = os.path.exists(path)
        found[path] = {'exists': exists, 'writable': bool(exists and os.access(path, os.W_OK))}
    return found


def main():
    module = AnsibleModule(
        argument_spec=dict(
            readings=dict(type='list', elements='str', choices=READINGS, default=list(DEFAULT_READINGS)),
            kernel_packages=dict(type='list', elements='str', default=[]),
            kernel_packages_release=dict(type='str'),
            disk_path=dict(type='path', default='/opt'),
            kernel_args=dict(type='list', elements='str', default=[]),
            paths=dict(type='list', elements='path', default=[]),
            proc_path=dict(type='path', default='/proc'),
            sysfs_path=dict(type='path', default='/sys'),
        ),
        supports_check_mode=True,
    )
    params = module.params
    readings = params['readings']
    runner = ToolRunner(module)
    release = os.uname()[2]
    version = kernel.parse_kernel_version(release)
    facts = {'kernel': {'release': release, 'version': list(version) if version else None}}

    if 'cmdline' in readings:
        facts['cmdline'], facts['kernel_args_missing'] = read_cmdline(params['proc_path'], params['kernel_args'])
    if 'numa_balancing' in readings:
        facts['numa_balancing'] = kernel.parse_sysctl_int(read_text(os.path.join(params['proc_path'], 'sys', 'kernel', 'numa_balancing')))
    if 'secure_boot' in readings:
        facts['secure_boot'] = read_secure_boot(runner, params['sysfs_path'])
    if 'kernel_packages' in readings:
        facts['kernel_packages'] = read_kernel_packages(runner, params['kernel_packages'], params['kernel_packages_release'], release)
    if 'disk' in readings:
        facts['disk'] = read_disk(params['disk_path'])
    if 'sockets' in readings:
        facts['sockets'] = read_sockets(params['sysfs_path'])
    facts['paths'] = read_paths(params['paths'])
    result = {}
    if 'installed' in readings:
        result['installed'], result['installed_error'] = read_installed(runner)

    module.exit_json(changed=False, ansible_facts={'preflight': facts}, commands=runner.commands, **result)


if __name__ == '__main__':
    main()
