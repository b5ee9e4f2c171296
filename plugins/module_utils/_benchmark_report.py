# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The figures and the report of a scaling benchmark (playbooks/benchmark.yml).

Everything here is pure: the result JSON of ``vllm bench serve`` in, plain
dicts, lists and text out. No Ansible imports.

Each load point of the benchmark is one ``vllm bench serve`` run whose
``--metadata`` pairs say what was measured: ``llmfleet_mode`` (``dp``: N
one-GPU workers behind the gateway, ``tp``: one server over N GPUs of one
node, ``multinode``: the one engine of a multi-node group over its N GPUs),
``llmfleet_gpus`` (N), ``llmfleet_load_kind`` (``concurrency`` or
``request_rate``) and ``llmfleet_load``. vLLM writes those pairs as top-level
string keys of the result beside its own figures. A result without them, or
without a figure the report needs, raises ``ReportError``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv
import io
import json
import math

MODES = ('dp', 'tp', 'multinode')
LOAD_KINDS = ('concurrency', 'request_rate')

HOW_TO_RUN = ('each load point must be a result of `vllm bench serve --save-result --percentile-metrics ttft,tpot,itl,e2el '
              '--metric-percentiles 50,99 --metadata llmfleet_mode=<dp|tp|multinode> llmfleet_gpus=<N> '
              'llmfleet_load_kind=<concurrency|request_rate> llmfleet_load=<load>`')

# The figures of one load point, in the order of the CSV columns.
POINT_COLUMNS = ('mode', 'gpus', 'load_kind', 'load', 'completed', 'failed', 'output_tps', 'request_tps',
                 'ttft_p50_ms', 'ttft_p99_ms', 'itl_p50_ms', 'itl_p99_ms', 'e2el_p50_ms', 'e2el_p99_ms',
                 'duration_s', 'source')

# Result key of vLLM for each figure that is a plain number.
RESULT_KEYS = (('completed', 'completed'), ('failed', 'failed'), ('output_tps', 'output_throughput'),
               ('request_tps', 'request_throughput'), ('duration_s', 'duration'))
PERCENTILES = (('ttft', '50'), ('ttft', '99'), ('itl', '50'), ('itl', '99'), ('e2el', '50'), ('e2el', '99'))


class ReportError(ValueError):
    """A result that cannot be reported on: what is wrong with which file."""


def _where(name):
    return name or 'a result'


def _number(result, key, name):
    """The number under ``key``; a missing or non-numeric value raises ReportError."""
    if key not in result:
        raise ReportError('%s lacks %s; %s' % (_where(name), key, HOW_TO_RUN))
    value = result[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ReportError('%s: %s is %r, not a number; %s' % (_where(name), key, value, HOW_TO_RUN))
    return value


def _percentile(result, metric, percent, name):
    """The pXX figure of a metric in ms; for the 50th the median stands in when pXX is absent."""
    keys = ['p%s_%s_ms' % (percent, metric)]
    if percent == '50':
        keys.append('median_%s_ms' % metric)
    for key in keys:
        if key in result:
            return _number(result, key, name)
    raise ReportError('%s lacks %s; %s' % (_where(name), ' or '.join(keys), HOW_TO_RUN))


def _metadata(result, key, name):
    if key not in result:
        raise ReportError('%s lacks the metadata %s; %s' % (_where(name), key, HOW_TO_RUN))
    value = result[key]
    if not isinstance(value, str) or not value.strip():
        raise ReportError('%s: the metadata %s is %r, not a non-empty string; %s' % (_where(name), key, value, HOW_TO_RUN))
    return value.strip()


def parse_load(kind, text):
    """A concurrency is a positive integer; a request rate a positive number (float) or ``'inf'``."""
    text = str(text).strip()
    if kind == 'request_rate' and text.lower() in ('inf', 'infinity'):
        return 'inf'
    try:
        value = int(text) if kind == 'concurrency' else float(text)
    except ValueError:
        value = None
    if value is None or math.isnan(value) or value <= 0 or (kind == 'request_rate' and math.isinf(value)):
        raise ValueError('%r is not a valid %s' % (text, 'concurrency (an integer of 1 or more)' if kind == 'concurrency'
                                                   else 'request rate (a positive number or inf)'))
    return value


def _rate(value):
    """vLLM's recorded request rate as a number (None when it is neither a number nor 'inf')."""
    try:
        return load_order(value)
    except (TypeError, ValueError):
        return None


def load_order(load):
    """A sort key for loads: numbers as they are, ``'inf'`` last."""
    return float('inf') if load == 'inf' else float(load)


def point_figures(result, name=''):
    """The figures of one load point from one ``vllm bench serve`` result (a dict); ``name`` names it in errors."""
    if not isinstance(result, dict):
        raise ReportError('%s is a %s, not a JSON object of vllm bench serve; %s'
                          % (_where(name), type(result).__name__, HOW_TO_RUN))
    mode = _metadata(result, 'llmfleet_mode', name)
    if mode not in MODES:
        raise ReportError('%s: the metadata llmfleet_mode is %r, not one of %s; %s' % (_where(name), mode, ', '.join(MODES), HOW_TO_RUN))
    gpus_text = _metadata(result, 'llmfleet_gpus', name)
    if not gpus_text.isdigit() or int(gpus_text) < 1:
        raise ReportError('%s: the metadata llmfleet_gpus is %r, not a GPU count of 1 or more; %s' % (_where(name), gpus_text, HOW_TO_RUN))
    kind = _metadata(result, 'llmfleet_load_kind', name)
    if kind not in LOAD_KINDS:
        raise ReportError('%s: the metadata llmfleet_load_kind is %r, not one of %s; %s'
                          % (_where(name), kind, ', '.join(LOAD_KINDS), HOW_TO_RUN))
    load_word = _metadata(result, 'llmfleet_load', name)
    try:
        load = parse_load(kind, load_word)
    except ValueError as exc:
        raise ReportError('%s: the metadata llmfleet_load: %s; %s' % (_where(name), exc, HOW_TO_RUN))
    # The metadata must agree with how the run was made, when vLLM recorded it.
    if kind == 'concurrency' and result.get('max_concurrency') not in (None, load):
        raise ReportError('%s: the metadata says concurrency %s but the run used --max-concurrency %s'
                          % (_where(name), load, result['max_concurrency']))
    if kind == 'request_rate' and 'request_rate' in result and _rate(result['request_rate']) != load_order(load):
        raise ReportError('%s: the metadata says request rate %s but the run used --request-rate %s'
                          % (_where(name), load, result['request_rate']))

    figures = dict(mode=mode, gpus=int(gpus_text), load_kind=kind, load=load)
    for figure, key in RESULT_KEYS:
        figures[figure] = _number(result, key, name)
    for figure in ('completed', 'failed'):
        if figures[figure] != int(figures[figure]) or figures[figure] < 0:
            raise ReportError('%s: %s is %r, not a request count' % (_where(name), figure, figures[figure]))
        figures[figure] = int(figures[figure])
    for metric, percent in PERCENTILES:
        figures['%s_p%s_ms' % (metric, percent)] = _percentile(result, metric, percent, name)
    figures['source'] = name
    return dict((column, figures[column]) for column in POINT_COLUMNS)


def _point_order(point):
    return (point['mode'], point['gpus'], point['load_kind'], load_order(point['load']))


def saturation_points(points):
    """Per (mode, gpus): the load point with the highest output tokens/s (at a tie, the lower load)."""
    best = {}
    for point in sorted(points, key=_point_order):
        shape = (point['mode'], point['gpus'])
        if shape not in best or point['output_tps'] > best[shape]['output_tps']:
            best[shape] = point
    return best


def efficiency_base(saturation, mode):
    """The tokens/s of one GPU for ``mode``: its own N=1 run, else another mode's (each is one one-GPU server)."""
    for base_mode in (mode,) + tuple(other for other in MODES if other != mode):
        if (base_mode, 1) in saturation:
            return base_mode, saturation[(base_mode, 1)]['output_tps']
    return None, None


def summarize(points):
    """Saturation point and scaling efficiency per (mode, N), the better mode per N, the failed requests."""
    seen = {}
    for point in points:
        key = (point['mode'], point['gpus'], point['load_kind'], load_order(point['load']))
        if key in seen:
            raise ReportError('%s and %s are both %s N=%d at %s %s: one result per load point'
                              % (seen[key], point['source'], point['mode'], point['gpus'], point['load_kind'], point['load']))
        seen[key] = point['source']
    saturation = saturation_points(points)
    rows = []
    for mode, gpus in sorted(saturation):
        point = saturation[(mode, gpus)]
        base_mode, base = efficiency_base(saturation, mode)
        efficiency = point['output_tps'] / (gpus * base) if base else None
        row = dict(point)
        row.update(efficiency=efficiency, efficiency_base='%s N=1' % base_mode if base else None)
        rows.append(row)

    better = []
    for gpus in sorted(set(shape[1] for shape in saturation)):
        tps = dict((mode, saturation[(mode, gpus)]['output_tps']) for mode in MODES if (mode, gpus) in saturation)
        if len(tps) == 1:
            mode = list(tps)[0]
            better.append(dict(gpus=gpus, better=mode, output_tps=tps, note='only %s ran at N=%d' % (mode, gpus)))
            continue
        ranked = sorted(tps, key=lambda mode: (-tps[mode], MODES.index(mode)))
        if tps[ranked[0]] == tps[ranked[1]]:
            equal = [mode for mode in ranked if tps[mode] == tps[ranked[0]]]
            better.append(dict(gpus=gpus, better=None, output_tps=tps,
                               note='%s are equal at N=%d' % (' and '.join(equal), gpus)))
        else:
            lead = 100.0 * (tps[ranked[0]] / tps[ranked[1]] - 1) if tps[ranked[1]] else float('inf')
            better.append(dict(gpus=gpus, better=ranked[0], output_tps=tps,
                               note='%s is %.1f %% ahead of %s' % (ranked[0], lead, ranked[1])))

    failures = [dict((key, point[key]) for key in ('mode', 'gpus', 'load_kind', 'load', 'failed', 'completed', 'source'))
                for point in sorted(points, key=_point_order) if point['failed']]
    failed_requests = sum(point['failed'] for point in points)
    return dict(saturation=rows, better=better, failures=failures, failed_requests=failed_requests, points=len(points),
                lines=summary_lines(rows, better, failed_requests))


def summary_lines(rows, better, failed_requests):
    """The summary in a few lines of text, for a task's output."""
    lines = ['%s N=%d: %.1f output tok/s at %s, TTFT p50 %.1f ms, efficiency %s' % (
        row['mode'], row['gpus'], row['output_tps'], load_text(row['load_kind'], row['load']), row['ttft_p50_ms'],
        '-' if row['efficiency'] is None else '%.0f %%' % (100 * row['efficiency'])) for row in rows]
    lines += ['N=%d: %s (%s)' % (row['gpus'], row['better'] or 'tie', row['note']) for row in better]
    if failed_requests:
        lines.append('%d request(s) failed: see report.md' % failed_requests)
    return lines


def csv_text(points):
    """One CSV row per load point (columns as POINT_COLUMNS, with a header), sorted by mode, N, kind and load."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator='\n')
    writer.writerow(POINT_COLUMNS)
    for point in sorted(points, key=_point_order):
        writer.writerow([point[column] for column in POINT_COLUMNS])
    return out.getvalue()


def load_text(kind, load):
    if kind == 'concurrency':
        return 'concurrency %s' % load
    return '%s req/s' % (load if load == 'inf' else ('%g' % load))


def _num(value, digits=1):
    return '-' if value is None else '%.*f' % (digits, value)


def _cell(value):
    if not isinstance(value, str):
        value = json.dumps(value, sort_keys=True)
    return value.replace('|', '\\|').replace('\n', ' ')


def _table(header, rows):
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '|'.join(['---'] * len(header)) + '|']
    lines.extend('| ' + ' | '.join(_cell(cell) for cell in row) + ' |' for row in rows)
    return lines


PLOTS = (
    ('throughput.png', 'Output tokens/s at saturation (the best load point of each shape) against the GPU count N, '
                       'one line per mode. The dashed line is ideal scaling: N times the tokens/s of one GPU '
                       '(the N=1 run). A mode\'s line below it by a growing gap scales less than linearly.'),
    ('latency.png', 'Time to first token (p50) against output tokens/s, one curve per mode and N over its load points '
                    '(each point labelled with its load). A curve climbs steeply where the shape saturates: more load '
                    'adds waiting, not throughput. A curve further right at the same height serves more at that latency.'),
    ('efficiency.png', 'Scaling efficiency against N per mode: saturation tokens/s divided by N times the tokens/s of '
                       'one GPU. 100 % (the dashed line) is linear scaling; below it, GPUs are added at a loss.'),
)


def group_lines(run):
    """One line per multi-node group of the run (run.json's groups): its engine's sizes, its members, its shape."""
    lines = []
    shapes = run.get('shapes') or []
    for group in run.get('groups') or []:
        if not isinstance(group, dict):
            continue
        members = list(group.get('members') or [])
        measured = [shape.get('name') for shape in shapes
                    if isinstance(shape, dict) and (shape.get('group') or {}).get('name') == group.get('name')]
        lines.append('- Multi-node group %s: one engine over %s GPUs, tensor parallel %s x pipeline parallel %s; members %s;'
                     ' %s' % (group.get('name', '-'), group.get('gpus', '-'), group.get('tp', '-'), group.get('pp', '-'),
                              ', '.join(('%s (rank 0, the API)' % member) if index == 0 else member
                                        for index, member in enumerate(members)) or '-',
                              ('measured as %s' % ', '.join(measured)) if measured else 'not measured (drained)'))
    return lines


def report_markdown(run, points, summary):
    """The benchmark report as Markdown: run, settings, saturation, better mode, every point, skipped shapes, plots."""
    run = run or {}
    settings = run.get('settings') or {}
    engine = run.get('engine') or {}
    gpu = run.get('gpu') or {}
    counts = gpu.get('count') or {}
    if isinstance(counts, dict):
        counts_text = ', '.join('%s: %s' % (host, counts[host]) for host in sorted(counts)) or '-'
    else:
        counts_text = str(counts)
    lines = ['# Scaling benchmark: %s %s' % (engine.get('name', 'engine'), engine.get('version', '')), '']
    if settings.get('benchmark_lab') is True:
        lines += ['> **Lab run.** These figures come from the lab, which has no GPUs: they test the benchmark itself '
                  'and say nothing about how the engine scales over GPUs.', '']
    lines += [
        '- Engine: %s %s' % (engine.get('name', '-'), engine.get('version', '-')),
        '- GPU: %s; count per node: %s' % (gpu.get('model', '-'), counts_text),
        '- Client: %s' % run.get('client', '-'),
        '- Gateway: %s' % run.get('gateway', '-'),
    ]
    lines += group_lines(run)
    lines += [
        '- Commit: %s' % run.get('commit', '-'),
        '- Started: %s; finished: %s' % (run.get('started', '-'), run.get('finished', '-')),
        '- Load points: %d; failed requests: %d' % (summary['points'], summary['failed_requests']),
        '',
        '## Settings',
        '',
    ]
    lines += _table(['setting', 'value'], [[key, settings[key]] for key in sorted(settings)]) if settings else ['(none recorded)']

    lines += ['', '## Saturation', '',
              'Per mode and GPU count N, the load point with the highest output tokens/s. Efficiency is its tokens/s '
              'divided by N times the tokens/s of one GPU (the N=1 run of the mode, else of another mode).', '']
    lines += _table(
        ['mode', 'N', 'load at saturation', 'output tok/s', 'req/s', 'TTFT p50 ms', 'TTFT p99 ms', 'ITL p50 ms',
         'ITL p99 ms', 'E2E p50 ms', 'E2E p99 ms', 'efficiency', 'failed'],
        [[row['mode'], str(row['gpus']), load_text(row['load_kind'], row['load']), _num(row['output_tps']),
          _num(row['request_tps'], 2), _num(row['ttft_p50_ms']), _num(row['ttft_p99_ms']), _num(row['itl_p50_ms']),
          _num(row['itl_p99_ms']), _num(row['e2el_p50_ms']), _num(row['e2el_p99_ms']),
          '-' if row['efficiency'] is None else '%.0f %%' % (100 * row['efficiency']), str(row['failed'])]
         for row in summary['saturation']])

    # dp and tp always; multinode when it ran.
    modes = [mode for mode in MODES if mode in ('dp', 'tp') or any(mode in row['output_tps'] for row in summary['better'])]
    lines += ['', '## Better mode per GPU count', '']
    lines += _table(['N', 'better mode'] + ['%s output tok/s' % mode for mode in modes] + ['note'],
                    [[str(row['gpus']), row['better'] or 'tie'] + [_num(row['output_tps'].get(mode)) for mode in modes]
                     + [row['note']] for row in summary['better']])

    lines += ['', '## Every load point', '']
    lines += _table(
        ['mode', 'N', 'load', 'completed', 'failed', 'output tok/s', 'req/s', 'TTFT p50 ms', 'TTFT p99 ms',
         'ITL p50 ms', 'ITL p99 ms', 'E2E p50 ms', 'E2E p99 ms', 'duration s', 'file'],
        [[point['mode'], str(point['gpus']), load_text(point['load_kind'], point['load']), str(point['completed']),
          str(point['failed']), _num(point['output_tps']), _num(point['request_tps'], 2), _num(point['ttft_p50_ms']),
          _num(point['ttft_p99_ms']), _num(point['itl_p50_ms']), _num(point['itl_p99_ms']), _num(point['e2el_p50_ms']),
          _num(point['e2el_p99_ms']), _num(point['duration_s']), point['source']]
         for point in sorted(points, key=_point_order)])

    if summary['failures']:
        lines += ['', '## Failed requests', '',
                  '%d request(s) failed; the figures of these load points count only the completed ones:' % summary['failed_requests'], '']
        lines += ['- %s N=%d at %s: %d failed, %d completed (%s)' % (
            row['mode'], row['gpus'], load_text(row['load_kind'], row['load']), row['failed'], row['completed'], row['source'])
            for row in summary['failures']]

    lines += ['', '## Not run', '']
    skipped = run.get('skipped') or []
    lines += ['- %s' % note for note in skipped] if skipped else ['Every shape of the settings ran.']

    lines += ['', '## Plots', '']
    lines += ['- `%s`: %s' % (name, text) for name, text in PLOTS]
    if settings.get('benchmark_lab') is True:
        lines += ['', 'This run had `benchmark_lab: true`: without GPUs the plots show the method, not GPU scaling.']
    return '\n'.join(lines) + '\n'
