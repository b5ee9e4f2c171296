# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Merge what amd-smi, rocm-smi and rocminfo said into the ``ansible_facts.rocm`` contract.

Pure functions: parsed dicts in, the facts dict out. Reading files (sysfs, the
ROCm version file) is left to the caller, which passes callables.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Source names as reported in ``sources`` and their precedence for each field.
SOURCE_ORDER = ('amd-smi', 'rocm-smi', 'rocminfo')
GPU_FIELDS = ('gfx_target', 'marketing_name', 'vram_bytes', 'numa_node', 'pci_address', 'compute_units', 'integrated')
# rocminfo names the architecture from the runtime itself: prefer it for gfx_target.
FIELD_ORDER = {
    'gfx_target': ('rocminfo', 'amd-smi', 'rocm-smi'),
}

_VERSION_RE = re.compile(r'^(?P<version>[0-9]+\.[0-9]+(?:\.[0-9]+)?)')


def rocm_version_from_file(text):
    """``/opt/rocm/.info/version`` holds ``7.1.1-38``; return ``7.1.1`` (None if unreadable)."""
    if not text:
        return None
    match = _VERSION_RE.match(text.strip())
    return match.group('version') if match else None


def _match_records(base, other):
    """Pair each record of ``other`` with a record of ``base``: by PCI address, else by position.

    Returns a list (same length as ``base``) of the matched ``other`` record or None, and the
    records of ``other`` that matched none. Partitions share a PCI address, so addresses are
    matched in order of appearance.
    """
    paired = [None] * len(base)
    if not other:
        return paired, []
    base_addresses = [record.get('pci_address') for record in base]
    other_addresses = [record.get('pci_address') for record in other]
    if all(base_addresses) and all(other_addresses):
        pending = {}
        for record in other:
            pending.setdefault(record['pci_address'], []).append(record)
        for position, address in enumerate(base_addresses):
            queue = pending.get(address)
            if queue:
                paired[position] = queue.pop(0)
        return paired, [record for queue in pending.values() for record in queue]
    if len(base) == len(other):
        return list(other), []
    return paired, list(other)


def merge(parsed, read_numa_node=None, rocm_version_text=None, driver_version_text=None):
    """Build the ``rocm`` facts; return ``(facts, warnings)``.

    ``parsed`` maps a source name (amd-smi, rocm-smi, rocminfo) to what its
    parser returned (a dict with ``gpus`` and maybe ``driver_version`` /
    ``rocm_version``). ``read_numa_node(pci_address)`` returns the NUMA node
    from sysfs or None. ``rocm_version_text`` is the content of
    ``/opt/rocm/.info/version`` and ``driver_version_text`` that of
    ``/sys/module/amdgpu/version``, each None when absent.

    The GPU list is the longest list a tool gave; the other tools add fields to the
    GPUs they can be matched with. A GPU another tool reports but that cannot be
    matched is not added (partitions make such counts differ) but is named in a warning.
    """
    sources = [name for name in SOURCE_ORDER if name in parsed]
    gpu_lists = dict((name, list(parsed[name].get('gpus') or [])) for name in sources)

    # The base list is the longest one: a tool that sees fewer GPUs (an iGPU it
    # skips) must not hide the others. Ties go to the first source in SOURCE_ORDER.
    base_name = None
    for name in sources:
        if base_name is None or len(gpu_lists[name]) > len(gpu_lists[base_name]):
            base_name = name
    base = gpu_lists.get(base_name, [])

    pairs = {}
    warnings = []
    for name in sources:
        if name == base_name:
            pairs[name] = list(base)
            continue
        pairs[name], unmatched = _match_records(base, gpu_lists[name])
        if unmatched:
            warnings.append('%s reports %d GPU(s) that %s does not (%s); they are left out of the facts.' % (
                name, len(unmatched), base_name,
                ', '.join(str(record.get('pci_address') or record.get('gfx_target')) for record in unmatched)))

    gpus = []
    for position in range(len(base)):
        gpu = {}
        for field in GPU_FIELDS:
            value = None
            for name in FIELD_ORDER.get(field, SOURCE_ORDER):
                record = pairs.get(name, [None] * len(base))[position]
                if record is not None and record.get(field) is not None:
                    value = record[field]
                    break
            gpu[field] = value
        if gpu['numa_node'] is None and gpu['pci_address'] and read_numa_node is not None:
            gpu['numa_node'] = read_numa_node(gpu['pci_address'])
        gpu['_position'] = position
        gpus.append(gpu)

    # Stable order: by PCI address when every GPU has one, partitions in the order the tool gave.
    if gpus and all(gpu['pci_address'] for gpu in gpus):
        gpus.sort(key=lambda gpu: (gpu['pci_address'], gpu['_position']))
    for index, gpu in enumerate(gpus):
        del gpu['_position']
        gpu['index'] = index

    rocm_version = None
    for name in sources:
        if parsed[name].get('rocm_version'):
            rocm_version = parsed[name]['rocm_version']
            break
    if rocm_version is None:
        rocm_version = rocm_version_from_file(rocm_version_text)

    driver_version = None
    for name in sources:
        if parsed[name].get('driver_version'):
            driver_version = parsed[name]['driver_version']
            break
    if driver_version is None and driver_version_text:
        driver_version = driver_version_text.strip() or None

    return {
        'gpu_count': len(gpus),
        'gfx_targets': sorted(set(gpu['gfx_target'] for gpu in gpus if gpu['gfx_target'])),
        'rocm_version': rocm_version,
        'driver_version': driver_version,
        'sources': sorted(sources),
        'gpus': [dict((key, gpu[key]) for key in ('index',) + GPU_FIELDS) for gpu in gpus],
    }, warnings
