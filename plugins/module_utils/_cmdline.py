# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel command line (``/proc/cmdline``), read the way the kernel reads it.

One parser for every role: the preflight role judges the IOMMU and PCI settings with
``cmdline_readings``, the tuning role asks which of its arguments the running kernel lacks with
``kernel_args_missing``. Both go through ``parse_cmdline``:

- arguments are separated by white space; double quotes group (``"a b"``, ``key="a b"``) and are
  removed, as the kernel's ``next_arg`` does;
- dashes and underscores in a parameter's name are the same (``amd-iommu`` is ``amd_iommu``);
- everything after a lone ``--`` belongs to init and is not the kernel's.

Everything here is pure: text in, values out.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_TOKEN_RE = re.compile(r'(?:[^\s"]+|"[^"]*")+')


def _name(key):
    return key.replace('"', '').replace('-', '_')


def parse_cmdline(text):
    """The kernel command line as an ordered list of ``(key, value)``; value None for a bare flag."""
    args = []
    for token in _TOKEN_RE.findall(text or ''):
        if token == '--':
            break
        key, sep, value = token.partition('=')
        args.append((_name(key), value.replace('"', '') if sep else None))
    return args


def _args(cmdline):
    """``parse_cmdline`` of a text, or a list of pairs that was parsed already."""
    if cmdline is None or isinstance(cmdline, str):
        return parse_cmdline(cmdline)
    return [(_name(str(key)), None if value is None else str(value)) for key, value in cmdline]


def options(cmdline, key):
    """The comma-separated options of every occurrence of ``key``, in order (``iommu=pt,nobypass``)."""
    found = []
    for name, value in _args(cmdline):
        if name == _name(key) and value is not None:
            found.extend(option for option in value.split(',') if option)
    return found


def last_value(cmdline, key):
    """``(found, value)`` of the last occurrence of ``key`` (value None for a bare flag)."""
    found, last = False, None
    for name, value in _args(cmdline):
        if name == _name(key):
            found, last = True, value
    return found, last


def _last_of(found, choices):
    picked = [option for option in found if option in choices]
    return picked[-1] if picked else None


def kernel_args_missing(wanted, cmdline):
    """The arguments of ``wanted`` (``key`` or ``key=value``) that the command line does not have in effect.

    A flag is in effect when the command line has the parameter. ``key=value`` is in effect when
    the last occurrence of ``key`` has that value, or a comma list holding all of its options
    (``pci=noaer,realloc=off`` has ``pci=realloc=off``): a later occurrence replaces an earlier
    one, as for most parameters. The result keeps the order and spelling of ``wanted``.
    """
    args = _args(cmdline)
    missing = []
    for argument in wanted or []:
        key, sep, value = str(argument).partition('=')
        found, last = last_value(args, key)
        if not sep:
            present = found
        else:
            value = value.replace('"', '')
            present = found and last is not None and (
                last == value or set(option for option in value.split(',') if option) <= set(last.split(',')))
        if not present:
            missing.append(argument)
    return missing


def cmdline_readings(text):
    """What the preflight rules need from ``/proc/cmdline``: the IOMMU mode and ``pci=realloc``."""
    args = parse_cmdline(text)
    iommu = options(args, 'iommu')
    amd_iommu = options(args, 'amd_iommu')
    intel_iommu = options(args, 'intel_iommu')
    passthrough = options(args, 'iommu.passthrough')
    disabled_by = []
    if 'off' in amd_iommu:
        disabled_by.append('amd_iommu=off')
    if _last_of(iommu, ('off', 'force', 'noforce', 'pt', 'nopt')) == 'off':
        disabled_by.append('iommu=off')
    if _last_of(intel_iommu, ('on', 'off')) == 'off':
        disabled_by.append('intel_iommu=off')
    mode = _last_of(iommu, ('pt', 'nopt'))
    generic = _last_of(passthrough, ('0', '1', 'y', 'n', 'Y', 'N'))
    return {
        'text': (text or '').strip(),
        'iommu': iommu,
        'amd_iommu': amd_iommu,
        'intel_iommu': intel_iommu,
        'iommu_disabled_by': disabled_by,
        'iommu_passthrough': mode == 'pt' or (mode is None and generic in ('1', 'y', 'Y')),
        'pci_realloc_off': _last_of(options(args, 'pci'), ('realloc', 'realloc=on', 'realloc=off')) == 'realloc=off',
    }
