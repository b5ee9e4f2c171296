# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the text that ROCm's TransferBench prints.

Everything here is pure: text in, dicts out. No Ansible imports.

Three reports are recognised, alone or together in one output:

* ``TransferBench a2a``: the all-to-all summary, a ``SRC\\DST  GPU 00 ...
  STotal Actual`` matrix of GB/s per GPU pair, an ``RTotal`` row and the
  ``Average bandwidth (GPU Timed)`` / ``Aggregate bandwidth`` lines;
* ``TransferBench p2p``: the ``Unidirectional`` and ``Bidirectional copy peak
  bandwidth`` matrices (rows ``CPU 00  ->``, ``GPU 03 <-``, ``GPU 03 <->``)
  each followed by its ``Averages (During UniDir|BiDir)`` line for CPU->CPU,
  CPU->GPU, GPU->CPU and GPU->GPU;
* a config file run (``TransferBench example.cfg``): ``Test N:`` blocks of
  ``Executor``, ``Transfer`` and ``Aggregate (CPU)`` lines.

Columns are split on whitespace, so a copy whose alignment was lost (as in
AMD's acceptance guide) still parses; a row with fewer or more figures than
its header, a matrix without its closing lines, or no report at all is
refused with ``ParseError``. ``[ERROR]`` lines raise ``ToolError``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError

TOOL = 'TransferBench'

HINT_ERROR = ('TransferBench stopped on a HIP error: check that it was built for this GPU\'s architecture '
              '(its CMake/Makefile GPU target list must include the gfx target of "amd-smi static --asic"), that '
              'the GPUs are idle, and "dmesg" for amdgpu errors.')

_VERSION_RE = re.compile(r'^TransferBench v(?P<version>[0-9][\w.]*)')
_ERROR_RE = re.compile(r'^\[ERROR\]\s*(?P<message>.+)$')
_WARN_RE = re.compile(r'^\[WARN\]\s*(?P<message>.+)$')
_DEVICE_RE = re.compile(r'\b(?P<kind>CPU|GPU|NIC)\s+(?P<index>\d+)\b')
_NUMBER = r'[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?'
_VALUE_RE = re.compile(r'^(?:%s|N/A)$' % _NUMBER)

# all-to-all
_A2A_SUMMARY_RE = re.compile(r'^Summary:\s*(?:\[(?P<bytes>\d+) bytes per Transfer\])?')
_RULE_RE = re.compile(r'^[=-]{3,}$')
_A2A_HEADER_RE = re.compile(r'^SRC\\+DST\s+(?P<rest>GPU\s+\d+.*\bSTotal\b.*)$')
_A2A_ROW_RE = re.compile(r'^GPU\s+(?P<index>\d+)\s+(?P<values>.+)$')
_A2A_RTOTAL_RE = re.compile(r'^RTotal\s+(?P<values>.+)$')
_A2A_TOTAL_RE = re.compile(
    r'^(?P<what>Average|Aggregate)\s+bandwidth\s+\((?P<timer>GPU|CPU) Timed\):\s*(?P<value>%s)\s*GB/s' % _NUMBER)

# peer-to-peer
_P2P_BYTES_RE = re.compile(r'^Bytes Per Direction\s+(?P<bytes>\d+)')
_P2P_TITLE_RE = re.compile(r'^(?P<kind>Unidirectional|Bidirectional) copy peak bandwidth GB/s(?P<rest>.*)$')
_P2P_HEADER_RE = re.compile(r'^SRC(?:\+EXE)?\\+DST\s+(?P<rest>.+)$')
_P2P_ROW_RE = re.compile(r'^(?P<kind>CPU|GPU|NIC)\s+(?P<index>\d+)\s+(?P<dir><->|->|<-|min|max|sd)\s+(?P<values>.+)$')
_P2P_AVG_HEADER_RE = re.compile(r'^CPU->CPU\s+CPU->GPU\s+GPU->CPU\s+GPU->GPU\s*$')
_P2P_AVG_RE = re.compile(r'^Averages \(During\s+(?P<kind>UniDir|BiDir)\):\s*(?P<values>.+)$')
_AVG_KEYS = ('cpu_cpu', 'cpu_gpu', 'gpu_cpu', 'gpu_gpu')
_DIRECTIONS = {'->': 'out', '<-': 'in', '<->': 'both'}

# config file
_TEST_RE = re.compile(r'^Test\s+(?P<test>\d+):')
_COMMENT_RE = re.compile(r'^##\s*(?P<text>.*)$')
_EXECUTOR_RE = re.compile(
    r'^Executor:\s*(?P<exe>(?:GPU|CPU|DMA|NIC)\s+\d+)\s*\|\s*(?P<gbs>%s)\s*GB/s\s*\|\s*(?P<ms>%s)\s*ms\s*\|'
    r'\s*(?P<bytes>\d+)\s*bytes\s*\|\s*(?P<sum>%s)\s*GB/s \(sum\)' % (_NUMBER, _NUMBER, _NUMBER))
_TRANSFER_RE = re.compile(
    r'^Transfer\s+(?P<index>\d+)\s*\|\s*(?P<gbs>%s)\s*GB/s\s*\|\s*(?P<ms>%s)\s*ms\s*\|\s*(?P<bytes>\d+)\s*bytes'
    r'\s*\|\s*(?P<path>.+?)\s*$' % (_NUMBER, _NUMBER))
_AGGREGATE_RE = re.compile(
    r'^Aggregate \(CPU\)\s*\|\s*(?P<gbs>%s)\s*GB/s\s*\|\s*(?P<ms>%s)\s*ms\s*\|\s*(?P<bytes>\d+)\s*bytes'
    % (_NUMBER, _NUMBER))


def _as_text(text):
    if isinstance(text, bytes):
        return text.decode('utf-8', 'replace')
    if not isinstance(text, str):
        raise ParseError(TOOL, 'expected the text TransferBench printed, got %s' % type(text).__name__)
    return text


def _value(text):
    return None if text == 'N/A' else float(text)


def _values(text, count, line):
    fields = text.split()
    if len(fields) != count or not all(_VALUE_RE.match(field) for field in fields):
        raise ParseError(TOOL, 'expected %d figures (GB/s or N/A) in the row %r, found %d: the table is cut or '
                         'garbled; run TransferBench again and keep its whole output' % (count, line[:200], len(fields)))
    return [_value(field) for field in fields]


def _name(kind, index):
    return '%s %02d' % (kind, int(index))


class _Lines(object):
    """The stripped, non-empty lines of the output, with a cursor."""

    def __init__(self, text):
        self.lines = [line.strip() for line in text.splitlines() if line.strip()]
        self.index = 0

    def peek(self):
        return self.lines[self.index] if self.index < len(self.lines) else None

    def next(self):
        line = self.peek()
        self.index += 1
        return line


def _parse_a2a(lines, summary):
    header = lines.next()
    while header is not None and _RULE_RE.match(header):
        header = lines.next()
    match = _A2A_HEADER_RE.match(header or '')
    if not match:
        raise ParseError(TOOL, 'expected the all-to-all matrix header "SRC\\DST GPU 00 ... STotal Actual" after %r, '
                         'found %r' % (summary, header))
    columns = [_name(kind, index) for kind, index in _DEVICE_RE.findall(match.group('rest'))]
    extra = match.group('rest').split()[-2:]
    if extra != ['STotal', 'Actual']:
        raise ParseError(TOOL, 'the all-to-all header does not end with "STotal Actual": %r' % header)
    width = len(columns) + 2
    result = {'bytes_per_transfer': None, 'gpus': columns, 'links': [], 'rows': {}, 'column_totals': None,
              'average_gbs': None, 'aggregate_gpu_gbs': None, 'aggregate_cpu_gbs': None}
    match = _A2A_SUMMARY_RE.match(summary)
    if match.group('bytes'):
        result['bytes_per_transfer'] = int(match.group('bytes'))
    while True:
        line = lines.peek()
        if line is None:
            break
        row = _A2A_ROW_RE.match(line)
        if row:
            lines.next()
            values = _values(row.group('values'), width, line)
            src = _name('GPU', row.group('index'))
            for dst, gbs in zip(columns, values[:-2]):
                if dst != src and gbs is not None:
                    result['links'].append({'src': src, 'dst': dst, 'gbs': gbs})
            result['rows'][src] = {'stotal_gbs': values[-2], 'actual_gbs': values[-1]}
            continue
        total = _A2A_RTOTAL_RE.match(line)
        if total:
            lines.next()
            fields = total.group('values').split()
            result['column_totals'] = [float(field) for field in fields if _VALUE_RE.match(field) and field != 'N/A']
            continue
        total = _A2A_TOTAL_RE.match(line)
        if total:
            lines.next()
            key = {('Average', 'GPU'): 'average_gbs', ('Aggregate', 'GPU'): 'aggregate_gpu_gbs',
                   ('Aggregate', 'CPU'): 'aggregate_cpu_gbs'}.get((total.group('what'), total.group('timer')))
            if key:
                result[key] = float(total.group('value'))
            continue
        break
    if len(result['rows']) != len(columns) or result['aggregate_cpu_gbs'] is None:
        raise ParseError(TOOL, 'the all-to-all summary is incomplete (%d of %d GPU rows, %s the "Aggregate '
                         'bandwidth (CPU Timed)" line): the output was cut; run TransferBench a2a again'
                         % (len(result['rows']), len(columns),
                            'with' if result['aggregate_cpu_gbs'] is not None else 'without'))
    if result['average_gbs'] is None and result['links']:
        result['average_gbs'] = round(sum(link['gbs'] for link in result['links']) / len(result['links']), 3)
    gbs = [link['gbs'] for link in result['links']]
    result['min_link_gbs'] = min(gbs) if gbs else None
    return result


def _parse_p2p_matrix(lines, title):
    header = lines.next()
    match = _P2P_HEADER_RE.match(header or '')
    if not match:
        raise ParseError(TOOL, 'expected the peer-to-peer matrix header "SRC+EXE\\DST CPU 00 ... GPU 00 ..." after '
                         '%r, found %r' % (title, header))
    columns = [_name(kind, index) for kind, index in _DEVICE_RE.findall(match.group('rest'))]
    if not columns:
        raise ParseError(TOOL, 'the peer-to-peer header names no CPU or GPU: %r' % header)
    matrix = {'links': [], 'averages': None}
    while True:
        line = lines.peek()
        if line is None:
            break
        row = _P2P_ROW_RE.match(line)
        if row:
            lines.next()
            values = _values(row.group('values'), len(columns), line)
            direction = _DIRECTIONS.get(row.group('dir'))
            if direction is None:
                continue  # min / max / sd rows of SHOW_ITERATIONS
            src = _name(row.group('kind'), row.group('index'))
            for dst, gbs in zip(columns, values):
                matrix['links'].append({'src': src, 'dst': dst, 'direction': direction, 'gbs': gbs})
            continue
        if _P2P_AVG_HEADER_RE.match(line):
            lines.next()
            continue
        avg = _P2P_AVG_RE.match(line)
        if avg:
            lines.next()
            values = _values(avg.group('values'), 4, line)
            matrix['averages'] = dict(zip(_AVG_KEYS, values))
        break
    if matrix['averages'] is None:
        raise ParseError(TOOL, 'the "%s" matrix ends without its "Averages (During ...)" line: the output was cut; '
                         'run TransferBench p2p again' % title[:60])
    gpu_links = [link['gbs'] for link in matrix['links']
                 if link['src'].startswith('GPU') and link['dst'].startswith('GPU') and link['src'] != link['dst']
                 and link['direction'] != 'both' and link['gbs'] is not None]
    matrix['min_gpu_gpu_gbs'] = min(gpu_links) if gpu_links else None
    return matrix


def _parse_config_test(lines, number, description):
    test = {'test': number, 'description': description, 'executors': [], 'transfers': [], 'aggregate_cpu_gbs': None}
    while True:
        line = lines.peek()
        if line is None:
            break
        match = _EXECUTOR_RE.match(line)
        if match:
            lines.next()
            test['executors'].append({'executor': match.group('exe'), 'gbs': float(match.group('gbs')),
                                      'ms': float(match.group('ms')), 'bytes': int(match.group('bytes')),
                                      'sum_gbs': float(match.group('sum'))})
            continue
        match = _TRANSFER_RE.match(line)
        if match:
            lines.next()
            test['transfers'].append({'transfer': int(match.group('index')), 'gbs': float(match.group('gbs')),
                                      'ms': float(match.group('ms')), 'bytes': int(match.group('bytes')),
                                      'path': match.group('path')})
            continue
        match = _AGGREGATE_RE.match(line)
        if match:
            lines.next()
            test['aggregate_cpu_gbs'] = float(match.group('gbs'))
        break
    if not test['transfers'] or test['aggregate_cpu_gbs'] is None:
        raise ParseError(TOOL, 'Test %d has %d Transfer lines and %s "Aggregate (CPU)" line: the output was cut or '
                         'is in an unknown format' % (number, len(test['transfers']),
                                                      'an' if test['aggregate_cpu_gbs'] is not None else 'no'))
    return test


def parse_transferbench(text):
    """Parse TransferBench output (``a2a``, ``p2p`` or a config file run).

    Returns ``{'version', 'a2a', 'p2p', 'config', 'warnings'}``; the reports
    that were not in the output are None.

    * ``a2a``: ``bytes_per_transfer``, ``gpus``, ``links`` (src, dst, gbs for
      every GPU pair), ``rows`` (per source GPU: stotal_gbs, actual_gbs),
      ``column_totals``, ``average_gbs``, ``aggregate_gpu_gbs``,
      ``aggregate_cpu_gbs``, ``min_link_gbs``;
    * ``p2p``: ``bytes_per_direction`` and ``unidirectional`` /
      ``bidirectional``, each with ``links`` (src is the row, dst the column;
      direction ``out`` for ``->`` rows, data from src to dst, ``in`` for
      ``<-`` rows, data from dst to src, ``both`` for the ``<->`` sums; gbs
      or None), ``averages`` (cpu_cpu, cpu_gpu, gpu_cpu, gpu_gpu) and
      ``min_gpu_gpu_gbs`` (the slowest GPU pair in one direction);
    * ``config``: a list of tests (test, description, executors, transfers
      with gbs, ms, bytes and path, aggregate_cpu_gbs).
    """
    text = _as_text(text)
    lines = _Lines(text)
    if not lines.lines:
        raise ParseError(TOOL, 'no output: expected the report of "TransferBench a2a", "TransferBench p2p" or a '
                         'config file run')
    for line in lines.lines:
        match = _ERROR_RE.match(line)
        if match:
            raise ToolError(TOOL, line, HINT_ERROR)
    result = {'version': None, 'a2a': None, 'p2p': None, 'config': None, 'warnings': []}
    description = None
    p2p_bytes = None
    while lines.peek() is not None:
        line = lines.next()
        match = _VERSION_RE.match(line)
        if match:
            result['version'] = match.group('version')
            continue
        if _A2A_SUMMARY_RE.match(line):
            result['a2a'] = _parse_a2a(lines, line)
            continue
        match = _P2P_BYTES_RE.match(line)
        if match:
            p2p_bytes = int(match.group('bytes'))
            continue
        match = _P2P_TITLE_RE.match(line)
        if match:
            if result['p2p'] is None:
                result['p2p'] = {'bytes_per_direction': p2p_bytes, 'unidirectional': None, 'bidirectional': None}
            result['p2p'][match.group('kind').lower()] = _parse_p2p_matrix(lines, line)
            continue
        match = _COMMENT_RE.match(line)
        if match:
            description = match.group('text') or None
            continue
        match = _TEST_RE.match(line)
        if match:
            if result['config'] is None:
                result['config'] = []
            result['config'].append(_parse_config_test(lines, int(match.group('test')), description))
            description = None
            continue
        match = _WARN_RE.match(line)
        if match:
            result['warnings'].append(line)
    if result['a2a'] is None and result['p2p'] is None and result['config'] is None:
        raise ParseError(TOOL, 'expected an all-to-all "Summary:" matrix, a "Unidirectional copy peak bandwidth" '
                         'matrix or "Test N:" blocks, found none; first line: %r' % lines.lines[0][:160])
    return result
