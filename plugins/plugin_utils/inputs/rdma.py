# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks of the rdma role (``input_problems('rdma')``).

Besides the role's variables, the rules judge the node: its RDMA devices (``llmfleet.rocm.rdma_facts``), its
network interfaces and the interface of its default IPv4 route (gathered facts), and what the role is about to
write from them (the interfaces of NCCL_SOCKET_IFNAME and the devices of NCCL_IB_HCA, chosen in vars/main.yml).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import RuleSet, show, supported_system_rule

_MODULE_RE = re.compile(r'^[A-Za-z0-9_-]+\Z')
_PLUGIN_RE = re.compile(r'^[A-Za-z0-9_.+/-]*\Z')
_ENV_NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*\Z')
# The file is read by systemd and by shells alike: no quotes, backslashes, $, backticks or line breaks.
_ENV_VALUE_RE = re.compile(r'^[^"\'\\$`\x00-\x1f\x7f]*\Z')
# NCCL_DEBUG's levels (NCCL compares them without case).
NCCL_DEBUG_LEVELS = ('VERSION', 'WARN', 'INFO', 'TRACE')
# Variables the role's own options set; rdma_env_extra may not set them again.
MANAGED_ENV_NAMES = ('NCCL_SOCKET_IFNAME', 'NCCL_IB_HCA', 'NCCL_NET_PLUGIN', 'HSA_NO_SCRATCH_RECLAIM', 'NCCL_DEBUG')

RULES = RuleSet('rdma')
supported_system_rule(RULES)


def _names(items):
    return ', '.join(str(item) for item in items)


@RULES.rule('rdma-modules-extra-names')
def _modules(values, ctx):
    bad = [item for item in values['rdma_modules_extra'] if not (isinstance(item, str) and _MODULE_RE.match(item))]
    if not bad:
        return None
    return ('rdma_modules_extra has names that are not kernel module names: %s. Give the names modprobe takes,'
            ' such as mlx5_ib.' % ', '.join(show(item) for item in bad))


@RULES.rule('rdma-load-modules-now-type')
def _load_now(values, ctx):
    value = values['rdma_load_modules_now']
    if value is None or isinstance(value, bool):
        return None
    return ('rdma_load_modules_now %s must be true, false or null (null follows the node\'s kind,'
            ' llmfleet_platform.kernel_managed).' % show(value))


@RULES.rule('rdma-socket-ifname-unknown')
def _unknown_ifnames(values, ctx):
    # Names picked from the RDMA devices come from the node itself; only the inventory's may be wrong.
    if not str(values['rdma_socket_ifname']).strip():
        return None
    interfaces = ctx.get('interfaces') or []
    unknown = [name for name in ctx.get('socket_ifnames') or [] if name not in interfaces]
    if not unknown:
        return None
    return ('rdma_socket_ifname names %s, which this node does not have (it has %s): give exact interface names,'
            ' comma-separated, or "" to pick one from the RDMA devices.' % (_names(unknown), _names(sorted(interfaces))))


@RULES.rule('rdma-no-socket-ifname')
def _no_ifname(values, ctx):
    if ctx.get('socket_ifnames'):
        return None
    return ('No interface for NCCL_SOCKET_IFNAME: no RDMA device has an active port with a network interface and there is'
            ' no default IPv4 route. Set rdma_socket_ifname to the interface of the GPU network.')


@RULES.rule('rdma-management-interface')
def _management(values, ctx):
    devices = ctx.get('devices') or []
    management = ctx.get('management_ifname') or ''
    if (not devices or values['rdma_allow_management_interface'] or not management
            or management not in (ctx.get('socket_ifnames') or [])):
        return None
    netdevs = [netdev for device in devices for netdev in device.get('netdevs') or []]
    return ('NCCL_SOCKET_IFNAME would be %s, the interface of the default IPv4 route (the management network), while this'
            ' node has RDMA devices (%s). Set rdma_socket_ifname to the interface of the GPU network%s, or set'
            ' rdma_allow_management_interface: true to bootstrap over the management network.'
            % (management, _names(device.get('name') for device in devices),
               ' (interfaces of the RDMA devices: %s)' % _names(netdevs) if netdevs else ''))


@RULES.rule('rdma-ib-hca-unknown')
def _unknown_hcas(values, ctx):
    names = [device.get('name') for device in ctx.get('devices') or []]
    unknown = [name for name in ctx.get('ib_hca_devices') or [] if name not in names]
    if not unknown:
        return None
    return ('rdma_ib_hca names %s, which this node does not have (%s): give exact device names, comma-separated, each'
            ' optionally with :<port>, or "" to use every device with an active port.'
            % (_names(unknown), _names(names) if names else 'it has no RDMA device'))


@RULES.rule('rdma-net-plugin')
def _plugin(values, ctx):
    plugin = values['rdma_net_plugin']
    if isinstance(plugin, str) and _PLUGIN_RE.match(plugin):
        return None
    return ('rdma_net_plugin %s is not a plugin name or path (no spaces, quotes or $): give the library\'s file name,'
            ' such as librccl-net.so, or its absolute path.' % show(plugin))


@RULES.rule('rdma-env-rccl-net-plugin')
def _rccl_net_plugin(values, ctx):
    if 'RCCL_NET_PLUGIN' not in values['rdma_env_extra']:
        return None
    return 'rdma_env_extra sets RCCL_NET_PLUGIN, which RCCL does not read: the variable is NCCL_NET_PLUGIN; set rdma_net_plugin instead.'


@RULES.rule('rdma-env-managed-names')
def _taken(values, ctx):
    taken = [name for name in values['rdma_env_extra'] if name in MANAGED_ENV_NAMES]
    if not taken:
        return None
    return ('rdma_env_extra sets %s, which the role sets from its own options (rdma_socket_ifname, rdma_ib_hca,'
            ' rdma_net_plugin, rdma_hsa_no_scratch_reclaim, rdma_nccl_debug): set those instead.' % _names(taken))


@RULES.rule('rdma-env-names')
def _env_names(values, ctx):
    bad = [name for name in values['rdma_env_extra'] if not (isinstance(name, str) and _ENV_NAME_RE.match(name))]
    if not bad:
        return None
    return ('rdma_env_extra has names that are not environment variable names: %s. Use letters, digits and _, not'
            ' starting with a digit.' % ', '.join(show(name) for name in bad))


@RULES.rule('rdma-env-values')
def _env_values(values, ctx):
    bad = [name for name, value in values['rdma_env_extra'].items()
           if not isinstance(value, (str, int, float)) or (isinstance(value, str) and not _ENV_VALUE_RE.match(value))]
    if not bad:
        return None
    return ('rdma_env_extra has values for %s that are not plain strings or numbers (no quotes, backslashes, $, backticks,'
            ' line breaks or other control characters).' % _names(bad))


@RULES.rule('rdma-nccl-debug-level')
def _nccl_debug(values, ctx):
    level = values['rdma_nccl_debug']
    if isinstance(level, str) and (level == '' or level.upper() in NCCL_DEBUG_LEVELS):
        return None
    return ('rdma_nccl_debug %s is not a level of NCCL_DEBUG: use one of %s, or "" to leave NCCL_DEBUG unset.'
            % (show(level), ', '.join(NCCL_DEBUG_LEVELS)))


def rdma_input_problems(values, platform, devices=None, interfaces=None, management_ifname='', socket_ifnames=None,
                        ib_hca_devices=None):
    """The rdma role's variables and the node's readings -> a list of messages (empty when they are fine)."""
    return RULES.messages(values, {
        'platform': platform, 'devices': devices or [], 'interfaces': interfaces or [],
        'management_ifname': management_ifname or '', 'socket_ifnames': socket_ifnames or [],
        'ib_hca_devices': ib_hca_devices or [],
    })
