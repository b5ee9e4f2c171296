# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node's platform: its row of the support table and its kind, derived once by the base role."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import is_http_url, show

_APT_SPECIAL = re.compile(r'["\';{}\\]')

# ansible_facts.virtualization_type values of containers (the kernel is the host's).
CONTAINER_TYPES = frozenset(['container', 'containerd', 'docker', 'lxc', 'openvz', 'podman', 'systemd-nspawn', 'wsl'])
_LIST_KEYS = ('kernel_packages', 'cpupower_packages')


def _is_container(facts):
    return (facts.get('virtualization_role') == 'guest'
            and facts.get('virtualization_type') in CONTAINER_TYPES)


def _proxy_environment(http_proxy, no_proxy):
    """The environment of a download through the site's proxy: {} without one."""
    if not http_proxy:
        return {}
    hosts = ['localhost', '127.0.0.1', '::1']
    for host in no_proxy or []:
        if not isinstance(host, str) or not host.strip():
            continue
        if host.strip() not in hosts:
            hosts.append(host.strip())
    return {'http_proxy': http_proxy, 'https_proxy': http_proxy, 'no_proxy': ','.join(hosts)}


def node_platform(facts, table, kernel_managed=None, installed=None, mirror_url='', apt_proxy='', http_proxy='', no_proxy=None):
    """``ansible_facts`` + the support table -> the node's platform.

    ``table`` maps ``<distribution>-<major version>`` to the row of a supported system. The
    result holds the row (its ``{kernel}`` placeholders filled with the running kernel),
    ``key``, ``kernel``, ``name``, ``supported``, ``supported_names`` and the node's kind:
    ``kernel_managed`` (the kernel, its modules, its command line and /proc/sys are ours to
    change) and ``kernel_managed_reason``. An explicit ``kernel_managed`` (the inventory's
    ``llmfleet_node_kernel_managed``) wins; otherwise a container's kernel is the host's.
    ``installed`` (preflight_facts' ``installed`` reading of this run) gives ``packages`` (name ->
    version of every installed package) and ``held`` (the names dpkg holds); unread, both are empty.
    ``mirror_url`` (the inventory's ``llmfleet_mirror_url``) is where the node takes every download from on a site
    without a route out, ``apt_proxy`` (``llmfleet_apt_proxy``) the proxy of its distribution's archive ("" for none):
    ``mirror_url`` (without a trailing slash) and ``apt_proxy``. Each is "" or an http(s) URL.
    ``http_proxy`` (``llmfleet_http_proxy``; "" on the mirror host, which has its own) gives ``proxy_env``, the
    environment of the roles' downloads (pip, get_url, git, a repository's key): ``http_proxy``, ``https_proxy`` and
    ``no_proxy`` (loopback and ``no_proxy``: the fleet's own host names and addresses, reached directly); {} without
    a proxy.
    """
    if not isinstance(facts, dict) or not isinstance(table, dict) or not table:
        raise AnsibleFilterError('node_platform: expects ansible_facts and the support table (a non-empty mapping)')
    distribution = facts.get('distribution') or 'unknown'
    major = facts.get('distribution_major_version') or ''
    key = '%s-%s' % (distribution, major)
    row = table.get(key)
    kernel = facts.get('kernel') or ''
    platform = {
        'key': key,
        'kernel': kernel,
        'supported': row is not None,
        'name': (row or {}).get('name') or ('%s %s' % (distribution, facts.get('distribution_version') or major)).strip(),
        'supported_names': [table[name].get('name', name) for name in sorted(table)],
    }
    for name, value in (row or {}).items():
        if name == 'name':
            continue
        if isinstance(value, list):
            platform[name] = [str(item).replace('{kernel}', kernel) for item in value]
        else:
            platform[name] = value
    for name in _LIST_KEYS:
        platform.setdefault(name, [])
    platform.setdefault('rocm_suite', '')
    for name, value in (('llmfleet_mirror_url', mirror_url), ('llmfleet_apt_proxy', apt_proxy),
                        ('llmfleet_http_proxy', http_proxy)):
        # apt's configuration quotes the proxy: a quote, ; or brace would end its value.
        if not (isinstance(value, str) and (value.strip() == '' or (is_http_url(value.strip()) and not _APT_SPECIAL.search(value)))):
            raise AnsibleFilterError('%s %s must be "" or an http(s) URL without quotes, ";", braces or backslashes, such as'
                                     ' http://mirror-1:8080 (the mirror) or http://mirror-1:3142 (its apt proxy).' % (name, show(value)))
    platform['mirror_url'] = mirror_url.strip().rstrip('/')
    platform['apt_proxy'] = apt_proxy.strip()
    platform['proxy_env'] = _proxy_environment(http_proxy.strip(), no_proxy)
    platform.update(installed_packages(installed))
    if kernel_managed is not None:
        if not isinstance(kernel_managed, bool):
            raise AnsibleFilterError('llmfleet_node_kernel_managed must be true or false, not %r' % (kernel_managed,))
        platform['kernel_managed'] = kernel_managed
        platform['kernel_managed_reason'] = 'llmfleet_node_kernel_managed is set in the inventory'
    elif _is_container(facts):
        platform['kernel_managed'] = False
        platform['kernel_managed_reason'] = ('the node is a %s container: its kernel, boot loader and /proc/sys are the host\'s'
                                             % facts.get('virtualization_type'))
    else:
        platform['kernel_managed'] = True
        platform['kernel_managed_reason'] = 'the node runs its own kernel'
    return platform


def installed_packages(installed):
    """preflight_facts' ``installed`` reading -> ``packages`` (name -> version) and ``held`` (the names dpkg holds).

    Unread (None, as when dpkg-query was not there), both are empty.
    """
    if installed is not None and not isinstance(installed, dict):
        raise AnsibleFilterError('installed_packages: installed must be the mapping preflight_facts reads, not %r' % (installed,))
    packages = installed or {}
    return {
        'packages': dict((name, package['version']) for name, package in packages.items()),
        'held': sorted(name for name, package in packages.items() if package.get('held')),
    }


def platform_default(value, platform, name='kernel_managed'):
    """A role's own knob (``None`` = follow the node's kind) or the platform's value."""
    if value is not None:
        return value
    if not isinstance(platform, dict) or name not in platform:
        raise AnsibleFilterError('platform_default: llmfleet_platform has no %s: include llmfleet.rocm._common (tasks_from: platform) first' % name)
    return platform[name]
