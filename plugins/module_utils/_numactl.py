# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``numactl --hardware`` output and for the NUMA node files in sysfs.

Everything here is pure: text in, dicts out. No Ansible imports.

``numactl --hardware`` prints ``available: N nodes (list)``, then for each
node its CPUs, size and free memory in MB, then a distance matrix. Nodes can
be sparse (``0,8,252-255``), have no CPUs (GPU or CXL memory) or no memory
(AMD NPS4 with empty channels). With ``--cpu-compress`` the CPUs are ranges
with a count (``0-15 (16)``). On a kernel or container without NUMA support
it prints ``No NUMA available on this system`` and exits 1: the parser
returns ``available: False`` and no nodes, and the caller decides what to
report (the module falls back to sysfs).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError

TOOL = 'numactl'

NO_NUMA = 'No NUMA available on this system'
NO_DISTANCES = 'No distance information available.'

_AVAILABLE_RE = re.compile(r'^available: (?P<count>\d+) nodes? \((?P<nodes>[0-9,\-]*)\)$')
_CPUS_RE = re.compile(r'^node (?P<node>\d+) cpus:(?P<cpus>.*)$')
_MEM_RE = re.compile(r'^node (?P<node>\d+) (?P<which>size|free): (?:(?P<mb>\d+) MB|<not available>)$')
_DIST_HEADER_RE = re.compile(r'^node(?P<nodes>(?:\s+\d+)+)$')
_DIST_ROW_RE = re.compile(r'^(?P<node>\d+):(?P<values>(?:\s+\d+)+)$')
_COUNT_RE = re.compile(r'\s*\((?P<count>\d+)\)$')
_WARNING_RE = re.compile(r'^libnuma: Warning: .*$')
_CPULIST_ITEM_RE = re.compile(r'^(?P<first>\d+)(?:-(?P<last>\d+))?$')
_MEMINFO_RE = re.compile(r'^Node\s+\d+\s+(?P<key>MemTotal|MemFree):\s+(?P<kb>\d+)\s+kB$')


def parse_cpulist(text):
    """``0-7,64-71`` or ``0 1 2`` or ``0-15 (16)`` -> sorted list of ints; empty text -> []."""
    text = (text or '').strip()
    count = _COUNT_RE.search(text)
    if count:
        text = text[:count.start()]
    cpus = []
    for item in re.split(r'[\s,]+', text):
        if not item:
            continue
        match = _CPULIST_ITEM_RE.match(item)
        if not match:
            raise ParseError(TOOL, 'bad CPU list item %r in %r' % (item, text))
        first = int(match.group('first'))
        last = int(match.group('last')) if match.group('last') else first
        if last < first:
            raise ParseError(TOOL, 'backwards CPU range %r' % item)
        cpus.extend(range(first, last + 1))
    if count and len(cpus) != int(count.group('count')):
        raise ParseError(TOOL, 'CPU list %r does not hold %s CPUs' % (text, count.group('count')))
    return sorted(set(cpus))


def _new_node(node_id):
    return {'id': node_id, 'cpus': [], 'memory_mb': None, 'free_mb': None}


def parse_numactl_hardware(text):
    """Parse ``numactl --hardware``.

    Returns ``{'available': bool, 'nodes': [{'id', 'cpus', 'memory_mb', 'free_mb'}],
    'distances': [[...]], 'warnings': [...]}``; nodes are ordered by id and the
    distance matrix rows and columns follow the same order (empty when numactl
    has no distance information).
    """
    if text is None:
        raise ParseError(TOOL, 'no output')
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    warnings = [line for line in lines if _WARNING_RE.match(line)]
    lines = [line for line in lines if not _WARNING_RE.match(line)]
    if lines == [NO_NUMA]:
        return {'available': False, 'nodes': [], 'distances': [], 'warnings': warnings}
    if not lines:
        raise ParseError(TOOL, 'empty output')
    available = _AVAILABLE_RE.match(lines[0])
    if not available:
        raise ParseError(TOOL, 'first line %r is not "available: N nodes (...)"' % lines[0][:120])
    listed = parse_cpulist(available.group('nodes'))
    nodes = {}
    header = None
    rows = {}
    in_distances = False
    for line in lines[1:]:
        if line == 'node distances:':
            in_distances = True
            continue
        if line == NO_DISTANCES:
            continue
        if in_distances:
            head = _DIST_HEADER_RE.match(line)
            row = _DIST_ROW_RE.match(line)
            if head and header is None:
                header = [int(value) for value in head.group('nodes').split()]
            elif row:
                rows[int(row.group('node'))] = [int(value) for value in row.group('values').split()]
            else:
                raise ParseError(TOOL, 'unexpected line in the distance table: %r' % line[:120])
            continue
        cpus = _CPUS_RE.match(line)
        mem = _MEM_RE.match(line)
        if cpus:
            node_id = int(cpus.group('node'))
            nodes.setdefault(node_id, _new_node(node_id))['cpus'] = parse_cpulist(cpus.group('cpus'))
        elif mem:
            node_id = int(mem.group('node'))
            value = int(mem.group('mb')) if mem.group('mb') is not None else None
            nodes.setdefault(node_id, _new_node(node_id))['memory_mb' if mem.group('which') == 'size' else 'free_mb'] = value
        else:
            raise ParseError(TOOL, 'unexpected line %r' % line[:120])
    ids = sorted(nodes)
    if ids != listed or len(ids) != int(available.group('count')):
        raise ParseError(TOOL, 'nodes %s do not match "%s"' % (ids, lines[0]))
    distances = []
    if header is not None or rows:
        if header != ids or sorted(rows) != ids or any(len(rows[node]) != len(ids) for node in ids):
            raise ParseError(TOOL, 'distance table does not cover nodes %s' % ids)
        distances = [rows[node] for node in ids]
    return {'available': True, 'nodes': [nodes[node] for node in ids], 'distances': distances, 'warnings': warnings}


def parse_node_meminfo(text):
    """``/sys/devices/system/node/nodeN/meminfo`` -> (MemTotal MB, MemFree MB); missing values are None."""
    values = {}
    for line in (text or '').splitlines():
        match = _MEMINFO_RE.match(line.strip())
        if match:
            values[match.group('key')] = int(match.group('kb')) // 1024
    return values.get('MemTotal'), values.get('MemFree')


def parse_distance_line(text):
    """``/sys/devices/system/node/nodeN/distance`` (``10 32``) -> [10, 32]; unreadable -> None."""
    try:
        values = [int(value) for value in (text or '').split()]
    except ValueError:
        return None
    return values or None
