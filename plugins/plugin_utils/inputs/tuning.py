# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks of the tuning role (``input_problems('tuning')``).

The node's part: the role reads the files its settings need (``update-grub``,
``/proc/sys/kernel/numa_balancing``, the idle states and cpufreq of CPU 0) with one
``preflight_facts`` call, and only those that apply to this run (the boot loader is managed, the
settings apply now). ``node_paths`` is that reading, path -> ``{exists, writable}``: a path that is
in it was asked for, and the rules judge what was found.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import RuleSet, as_int, show, supported_system_rule

# One kernel argument: it lands in a shell-sourced GRUB file, so no spaces, quotes, $ or backticks.
_KERNEL_ARG_RE = re.compile(r'^[A-Za-z0-9_.,:/=+@%~-]+\Z')

# A cpufreq governor's name (/sys/devices/system/cpu/cpu0/cpufreq/scaling_available_governors): it is a word of a unit's ExecStart.
_GOVERNOR_RE = re.compile(r'^[a-z][a-z0-9_]*\Z')

RULES = RuleSet('tuning')
supported_system_rule(RULES)


def _asked(ctx, path):
    return path in (ctx.get('node_paths') or {})


def _exists(ctx, path):
    return bool(((ctx.get('node_paths') or {}).get(path) or {}).get('exists'))


def _writable(ctx, path):
    return bool(((ctx.get('node_paths') or {}).get(path) or {}).get('writable'))


def _files(ctx):
    return ctx.get('files') or {}


@RULES.rule('tuning-kernel-args-extra-format')
def _kernel_args(values, ctx):
    bad = [item for item in values['tuning_kernel_args_extra'] or [] if not (isinstance(item, str) and _KERNEL_ARG_RE.match(item))]
    if bad:
        return ('tuning_kernel_args_extra has items that are not single kernel arguments: %s. Give one argument per item,'
                ' without spaces, quotes, $ or backticks (for example amd_iommu=on).' % ', '.join(show(item) for item in bad))
    return None


@RULES.rule('tuning-cstate-states-empty')
def _cstates_empty(values, ctx):
    if values['tuning_cstate_limit'] and not values['tuning_cstate_disabled_states']:
        return ('tuning_cstate_disabled_states is empty: name the idle states to disable (for example [2]) or set'
                ' tuning_cstate_limit: false.')
    return None


@RULES.rule('tuning-cstate-states-not-idle')
def _cstates_polling(values, ctx):
    bad = [item for item in values['tuning_cstate_disabled_states'] or [] if as_int(item) is None or as_int(item) < 1]
    if bad:
        return ('tuning_cstate_disabled_states has %s: state 0 is polling, not an idle state; list the idle states by their'
                ' number, from 1 up.' % ', '.join(show(item) for item in bad))
    return None


@RULES.rule('tuning-update-grub-missing')
def _update_grub(values, ctx):
    path = _files(ctx).get('update_grub')
    if path and _asked(ctx, path) and not _exists(ctx, path):
        return ('%s is missing: this node does not boot through GRUB. Set tuning_boot_loader_managed: false and add %s to its'
                ' boot loader yourself, or set tuning_kernel_args: false.' % (path, ' '.join(ctx.get('kernel_args') or [])))
    return None


@RULES.rule('tuning-numa-balancing-missing')
def _numa_missing(values, ctx):
    path = _files(ctx).get('numa_balancing')
    if path and _asked(ctx, path) and not _exists(ctx, path):
        return 'The kernel has no %s (built without NUMA balancing): set tuning_numa_balancing: false.' % path
    return None


@RULES.rule('tuning-numa-balancing-read-only')
def _numa_readonly(values, ctx):
    path = _files(ctx).get('numa_balancing')
    if path and _exists(ctx, path) and not _writable(ctx, path):
        return ('%s is read-only on this node (a container?): set tuning_apply_now: false; the setting is still written to %s'
                ' and applies at boot.' % (path, _files(ctx).get('sysctl_file') or 'the sysctl file'))
    return None


@RULES.rule('tuning-cstates-missing')
def _cstates_missing(values, ctx):
    missing = [path for path in _files(ctx).get('cstates') or [] if _asked(ctx, path) and not _exists(ctx, path)]
    if missing:
        return ('CPU 0 has no %s: tuning_cstate_disabled_states %s names idle states this node does not have ("cpupower'
                ' idle-info" lists them). Fix the list or set tuning_cstate_limit: false.'
                % (', '.join(missing), show(values['tuning_cstate_disabled_states'])))
    return None


@RULES.rule('tuning-cstates-read-only')
def _cstates_readonly(values, ctx):
    readonly = [path for path in _files(ctx).get('cstates') or [] if _exists(ctx, path) and not _writable(ctx, path)]
    if readonly:
        return '%s is read-only on this node (a container?): set tuning_apply_now: false.' % ', '.join(readonly)
    return None


@RULES.rule('tuning-governor-missing')
def _governor_missing(values, ctx):
    path = _files(ctx).get('governor')
    if path and _asked(ctx, path) and not _exists(ctx, path):
        return ('CPU 0 has no frequency scaling (%s is missing: a VM, or the firmware keeps frequency control): set'
                ' tuning_cpu_governor: false.' % path)
    return None


@RULES.rule('tuning-governor-read-only')
def _governor_readonly(values, ctx):
    path = _files(ctx).get('governor')
    if path and _exists(ctx, path) and not _writable(ctx, path):
        return '%s is read-only on this node (a container?): set tuning_apply_now: false.' % path
    return None


@RULES.rule('tuning-governor-name')
def _governor_name(values, ctx):
    name = values['tuning_cpu_governor_name']
    if isinstance(name, str) and _GOVERNOR_RE.match(name):
        return None
    return ('tuning_cpu_governor_name %s is not a governor name (lower-case letters, digits and _, such as performance):'
            ' it is written into the ExecStart of llmfleet-cpu-governor.service; "cpupower frequency-info -g" lists the'
            ' governors of the node.' % show(name))


def tuning_input_problems(values, platform, node_paths=None, files=None, kernel_args=None):
    """The tuning role's variables and what the node has -> a list of messages (empty when they are fine)."""
    return RULES.messages(values, {'platform': platform, 'node_paths': node_paths or {}, 'files': files or {},
                                   'kernel_args': kernel_args or []})
