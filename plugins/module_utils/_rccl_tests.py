# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the text that rccl-tests (``all_reduce_perf`` and the other ``*_perf`` programs) print.

Everything here is pure: text in, dicts out. No Ansible imports.

rccl-tests is AMD's fork of nccl-tests and prints the same report::

    # nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 ...
    #  Rank  0 Group  0 Pid 657053 on host device  0 [0000:75:00] AMD Instinct MI350X
    #       size         count      type   redop    root     time   algbw   busbw #wrong     time ...
               8             2     float     sum      -1    58.63    0.00    0.00      0    49.68 ...
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 111.827

The first group of time/algbw/busbw/#wrong columns is the out-of-place run,
the second the in-place run. Between the rows the library may print its own
lines (``NCCL INFO``/``NCCL WARN`` with ``NCCL_DEBUG``, ``mpirun`` prefixes
``[1,0]<stdout>:``); they are kept in ``warnings`` and do not stop the parse.
A report whose table has no ``# Avg bus bandwidth`` line after it was cut
short and is refused (``ParseError``); a run that stopped on a HIP/CUDA/RCCL
failure before it printed its report raises ``ToolError`` quoting the line.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError

TOOL = 'rccl-tests'

HINT_BUSY = ('Another process holds the GPUs (or they are in exclusive mode): stop the inference workers on this '
             'node (drain it at the gateway first) and run the test again.')
HINT_FAILURE = ('rccl-tests stopped before its report: check "dmesg" for amdgpu errors, that every GPU is visible '
                '("amd-smi list"), that RCCL and rccl-tests were built for this ROCm, and run it again with '
                'NCCL_DEBUG=WARN to see which call failed.')
HINT_TRUNCATED = ('The output ends before the "# Avg bus bandwidth" line: the run was killed, timed out or its '
                  'output was cut. Run it again and keep its whole standard output.')

# "[1,0]<stdout>:" (Open MPI --tag-output) in front of every line.
_MPI_PREFIX_RE = re.compile(r'^\[\d+,\d+\]<(?:stdout|stderr)>:')
_HEADER_RE = re.compile(
    r'^#\s*nThread\s+(?P<nthread>\d+)\s+nGpus\s+(?P<ngpus>\d+)\s+minBytes\s+(?P<min_bytes>\d+)'
    r'\s+maxBytes\s+(?P<max_bytes>\d+)\s+step:\s*(?P<step>\S+)(?P<rest>.*)$')
_VALIDATION_RE = re.compile(r'\bvalidation:\s*(?P<validation>\d+)')
_ITERS_RE = re.compile(r'\bwarmup iters:\s*(?P<warmup>\d+)\s+iters:\s*(?P<iters>\d+)')
_VERSION_RE = re.compile(
    r'^(?:#\s*)?(?:rccl|nccl)-tests(?::\s*Version|\s+version)\s+(?P<version>\S+)', re.IGNORECASE)
_LIB_VERSION_RE = re.compile(r'^(?P<key>RCCL|HIP|ROCm) version\s*:\s*(?P<value>\S+)')
_TEST_RE = re.compile(r'^#\s*Collective test (?:starting|concluded):\s*(?P<test>\S+)')
_RANK_RE = re.compile(
    r'^#\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)'
    r'\s+device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<name>.*?)\s*$')
_COLUMNS_RE = re.compile(r'^#\s*size\s+count\s+type\s+redop\b(?P<rest>.*)$')
# A table row starts with the size and element count, then the data type and the reduction.
_ROW_RE = re.compile(r'^\d+\s+\d+\s+\w+\s+\w+\s')
_OOB_RE = re.compile(r'^#\s*Out of bounds values\s*:\s*(?P<count>\d+)\s*(?P<status>OK|FAILED)?\s*$')
_AVG_RE = re.compile(r'^#\s*Avg bus bandwidth\s*:\s*(?P<value>[0-9.eE+-]+|nan|inf)\s*(?P<status>OK|FAILED)?\s*$')
_TOOL_FAILURE_RE = re.compile(
    r"Test (?P<kind>HIP|CUDA|NCCL|RCCL|MPI) failure\s+(?P<where>\S+)\s+'(?P<message>[^']*)'")
_TEST_FAILURE_RE = re.compile(r'Test failure\s+\S+')
_COUNT_RE = re.compile(r'^(?P<count>\d+)$')
_BUSY_RE = re.compile(r'busy or unavailable|already in use|exclusive', re.IGNORECASE)

_IDENTITY = ('size', 'count', 'type', 'redop')
_GROUP = ('time', 'algbw', 'busbw')


def _as_text(text):
    if isinstance(text, bytes):
        return text.decode('utf-8', 'replace')
    if not isinstance(text, str):
        raise ParseError(TOOL, 'expected the text rccl-tests printed, got %s' % type(text).__name__)
    return text


def _number(value, what, line):
    try:
        return float(value)
    except ValueError:
        raise ParseError(TOOL, 'expected a number for %s, found %r in the row %r' % (what, value, line.strip()[:160]))


def _wrong(value, line):
    """The #wrong column: an int (``96``, ``3*``), None for ``N/A`` (run with -c 0), or a float error (old format)."""
    text = value.rstrip('*')
    if text.upper() == 'N/A':
        return None
    if _COUNT_RE.match(text):
        return int(text)
    return _number(text, 'the error column', line)


def _columns(match, line):
    """The column layout after ``size count type redop``: has it a root column, how many run groups."""
    rest = match.group('rest').split()
    has_root = bool(rest) and rest[0] == 'root'
    if has_root:
        rest = rest[1:]
    groups = []
    while rest:
        group = rest[:4]
        if len(group) < 4 or tuple(group[:3]) != _GROUP or group[3] not in ('#wrong', 'error'):
            raise ParseError(TOOL, 'expected the column header "size count type redop [root] time algbw busbw #wrong '
                             '[time algbw busbw #wrong]", found %r' % line.strip()[:200])
        groups.append(group[3])
        rest = rest[4:]
    if not groups:
        raise ParseError(TOOL, 'the column header has no time/algbw/busbw columns: %r' % line.strip()[:200])
    return has_root, groups


def _row(fields, has_root, groups, line):
    expected = len(_IDENTITY) + (1 if has_root else 0) + 4 * len(groups)
    if len(fields) != expected:
        raise ParseError(TOOL, 'a table row has %d columns where the header has %d (cut or garbled output): %r'
                         % (len(fields), expected, line.strip()[:200]))
    row = {
        'size': int(fields[0]),
        'count': int(_number(fields[1], 'count', line)),
        'type': fields[2],
        'redop': fields[3],
        'root': None,
    }
    index = 4
    if has_root:
        row['root'] = int(_number(fields[4], 'root', line))
        index = 5
    for name, wrong_kind in zip(('out_of_place', 'in_place'), groups):
        part = fields[index:index + 4]
        row[name] = {
            'time_us': _number(part[0], 'time', line),
            'algbw_gbs': _number(part[1], 'algbw', line),
            'busbw_gbs': _number(part[2], 'busbw', line),
            'wrong': _wrong(part[3], line) if wrong_kind == '#wrong' else None,
            'error': _number(part[3], 'error', line) if wrong_kind == 'error' else None,
        }
        index += 4
    if len(groups) == 1:
        row['in_place'] = None
    return row


def _tool_error(lines):
    for line in lines:
        match = _TOOL_FAILURE_RE.search(line)
        if match:
            hint = HINT_BUSY if _BUSY_RE.search(match.group('message')) else HINT_FAILURE
            raise ToolError(TOOL, line, hint)
    for line in lines:
        if _TEST_FAILURE_RE.search(line):
            raise ToolError(TOOL, line, HINT_FAILURE)


def _clean_lines(text):
    lines = []
    for raw in text.splitlines():
        line = _MPI_PREFIX_RE.sub('', raw).rstrip()
        lines.append(line)
    return lines


def _summarise(result):
    rows = result['rows']
    largest = max(rows, key=lambda row: row['size'])
    wrong = 0
    for row in rows:
        for name in ('out_of_place', 'in_place'):
            part = row[name]
            if part and part['wrong']:
                wrong += part['wrong']
    result['wrong_total'] = wrong
    result['largest'] = largest
    busbw = [row[name]['busbw_gbs'] for row in rows for name in ('out_of_place', 'in_place') if row[name]]
    result['peak_busbw_gbs'] = max(busbw)


def parse_rccl_tests(text):
    """Parse the output of an rccl-tests (or nccl-tests) ``*_perf`` program.

    Returns a dict with ``test`` (``all_reduce_perf`` when the program names
    itself, else None), ``version``, ``rccl_version``, ``rocm_version``,
    ``header`` (nthread, ngpus, min_bytes, max_bytes, step, warmup_iters,
    iters, validation), ``devices`` (rank, group, pid, host, device, bus_id,
    name), ``rows`` (size, count, type, redop, root and ``out_of_place`` /
    ``in_place`` with time_us, algbw_gbs, busbw_gbs, wrong, error; in_place
    is None when the table has one group of columns),
    ``out_of_bounds``, ``out_of_bounds_ok``, ``avg_busbw_gbs``,
    ``avg_busbw_ok`` (the verdict rccl-tests adds when NCCL_TESTS_MIN_BW is
    set, else None), ``wrong_total``, ``largest`` (the row of the largest
    size), ``peak_busbw_gbs``, ``failures`` (``Test failure`` lines printed
    after a complete report) and ``warnings`` (library lines among the table).

    One output holds one program's report: what follows its "# Avg bus
    bandwidth" line is only searched for failure lines.
    """
    text = _as_text(text)
    lines = _clean_lines(text)
    if not any(line.strip() for line in lines):
        raise ParseError(TOOL, 'no output: expected the report of an rccl-tests program such as all_reduce_perf')
    result = {
        'test': None, 'version': None, 'rccl_version': None, 'rocm_version': None, 'header': None,
        'devices': [], 'rows': [], 'out_of_bounds': None, 'out_of_bounds_ok': None,
        'avg_busbw_gbs': None, 'avg_busbw_ok': None, 'failures': [], 'warnings': [],
    }
    layout = None
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if result['avg_busbw_gbs'] is not None:
            if _TEST_FAILURE_RE.search(stripped) or _TOOL_FAILURE_RE.search(stripped):
                result['failures'].append(stripped)
            continue
        match = _COLUMNS_RE.match(stripped)
        if match:
            layout = _columns(match, stripped)
            continue
        if layout and _ROW_RE.match(stripped):
            result['rows'].append(_row(stripped.split(), layout[0], layout[1], stripped))
            continue
        match = _AVG_RE.match(stripped)
        if match:
            if layout is None or not result['rows']:
                raise ParseError(TOOL, 'found "%s" but no table of results before it' % stripped[:120])
            result['avg_busbw_gbs'] = float(match.group('value'))
            result['avg_busbw_ok'] = {'OK': True, 'FAILED': False}.get(match.group('status'))
            continue
        match = _OOB_RE.match(stripped)
        if match:
            result['out_of_bounds'] = int(match.group('count'))
            result['out_of_bounds_ok'] = result['out_of_bounds'] == 0
            continue
        match = _HEADER_RE.match(stripped)
        if match:
            rest = match.group('rest')
            validation = _VALIDATION_RE.search(rest)
            iters = _ITERS_RE.search(rest)
            result['header'] = {
                'nthread': int(match.group('nthread')),
                'ngpus': int(match.group('ngpus')),
                'min_bytes': int(match.group('min_bytes')),
                'max_bytes': int(match.group('max_bytes')),
                'step': match.group('step'),
                'warmup_iters': int(iters.group('warmup')) if iters else None,
                'iters': int(iters.group('iters')) if iters else None,
                'validation': bool(int(validation.group('validation'))) if validation else None,
            }
            continue
        match = _RANK_RE.match(stripped)
        if match:
            result['devices'].append({
                'rank': int(match.group('rank')),
                'group': int(match.group('group')) if match.group('group') is not None else None,
                'pid': int(match.group('pid')),
                'host': match.group('host'),
                'device': int(match.group('device')),
                'bus_id': match.group('bus').lower(),
                'name': match.group('name') or None,
            })
            continue
        match = _VERSION_RE.match(stripped)
        if match:
            version = match.group('version')
            result['version'] = None if version.lower() == 'unknown' else version
            continue
        match = _LIB_VERSION_RE.match(stripped)
        if match:
            key = {'RCCL': 'rccl_version', 'ROCm': 'rocm_version'}.get(match.group('key'))
            if key:
                result[key] = match.group('value')
            continue
        match = _TEST_RE.match(stripped)
        if match:
            result['test'] = match.group('test')
            continue
        if stripped.startswith('#'):
            continue
        result['warnings'].append(stripped)
    if result['avg_busbw_gbs'] is None:
        _tool_error(lines)
        if layout is None:
            first = next(line.strip() for line in lines if line.strip())
            raise ParseError(TOOL, 'expected an rccl-tests report with a "#  size  count  type  redop ..." column '
                             'header and a "# Avg bus bandwidth" line, found: %r' % first[:160])
        raise ParseError(TOOL, HINT_TRUNCATED)
    _summarise(result)
    return result
