#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: benchmark_report
short_description: Write the report, table and plots of a scaling benchmark on the controller
version_added: 0.1.0
description:
  - Reads the results of one run of C(playbooks/benchmark.yml) from O(results_dir) (its C(run.json) and every
    C(raw/*.json), each the saved result of one C(vllm bench serve) load point) and writes beside them
    C(results.json) (the run, every load point's figures and the summary), C(results.csv) (one row per load point),
    C(report.md), and three plots, C(throughput.png), C(latency.png) and C(efficiency.png).
  - For each mode (C(dp), C(tp), C(multinode)) and GPU count N the saturation point is the load point with the
    highest output tokens/s. The scaling efficiency at N is that figure divided by N times the figure of one GPU (the
    mode's N=1 run, else another mode's N=1 run, as each is one server on one GPU).
  - C(report.md) names every multi-node group of the run (C(run.json)'s C(groups)) with its sizes, its members (the
    first is rank 0, the API) and the shape that measured it.
  - A raw result made without the C(--metadata) pairs C(llmfleet_mode), C(llmfleet_gpus), C(llmfleet_load_kind)
    and C(llmfleet_load), or without the percentile figures of C(--percentile-metrics ttft,tpot,itl,e2el
    --metric-percentiles 50,99), fails the task naming the file and what it lacks.
  - Each file is written to a temporary file in O(results_dir) and renamed over its name; a file that holds the
    same content already is left alone.
  - No module of C(ansible.builtin), C(community.general) or C(ansible.posix) computes a report. The saturation
    points, efficiencies and plots (matplotlib) need Python on the controller, and M(ansible.builtin.template) would
    do that arithmetic in Jinja.
author:
  - llmfleet.rocm contributors (@llmfleet)
options:
  results_dir:
    description: The directory of one benchmark run on the controller, holding C(run.json) and C(raw/).
    type: path
    required: true
requirements:
  - matplotlib (on the host that runs the module, the controller)
attributes:
  check_mode:
    support: full
    description: Says whether any file would change and writes none.
  diff_mode:
    support: none
    description: No diff is returned.
  platform:
    support: full
    platforms: posix
    description: Run on the controller (C(delegate_to=localhost)).
notes:
  - Figures from the lab (C(benchmark_lab=true) among the settings of C(run.json)) come from CPU workers; the report says so.
'''

EXAMPLES = r'''
- name: Write the benchmark report
  llmfleet.rocm.benchmark_report:
    results_dir: "{{ playbook_dir }}/../benchmark-results/{{ stamp }}"
  delegate_to: localhost
  run_once: true
'''

RETURN = r'''
files:
  description: The files of the report, as absolute paths.
  returned: success
  type: list
  elements: str
  sample: ["/srv/benchmark-results/20261202T045000Z/report.md"]
summary:
  description: The saturation point and scaling efficiency of each mode and GPU count (C(saturation)), the better
    mode per GPU count (C(better)), the load points with failed requests (C(failures)), the number of failed
    requests (C(failed_requests)) and of load points (C(points)), and all that in short text lines (C(lines)).
  returned: success
  type: dict
  sample:
    saturation:
      - {mode: dp, gpus: 1, load_kind: concurrency, load: 4, output_tps: 58.2, efficiency: 1.0, efficiency_base: dp N=1}
    better: [{gpus: 1, better: dp, output_tps: {dp: 58.2}, note: only dp ran at N=1}]
    failures: []
    failed_requests: 0
    points: 3
    lines: ["dp N=1: 58.2 output tok/s at concurrency 4, TTFT p50 61.0 ms, efficiency 100 %", "N=1: dp (only dp ran at N=1)"]
'''

import io
import json
import os
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible_collections.llmfleet.rocm.plugins.module_utils._atomic_file import write_atomic
from ansible_collections.llmfleet.rocm.plugins.module_utils._benchmark_report import (
    MODES, ReportError, csv_text, efficiency_base, load_order, point_figures, report_markdown,
    saturation_points, summarize)

MATPLOTLIB_IMPORT_ERROR = None
try:
    from matplotlib.figure import Figure
except ImportError:
    HAS_MATPLOTLIB = False
    MATPLOTLIB_IMPORT_ERROR = traceback.format_exc()
else:
    HAS_MATPLOTLIB = True

LAB_NOTE = 'lab run without GPUs: not GPU scaling'


def read_json(path, what):
    try:
        with open(path, encoding='utf-8') as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise ReportError('cannot read %s %s: %s' % (what, path, exc))


def read_results(results_dir):
    """The run (run.json) and the figures of every raw/*.json."""
    run = read_json(os.path.join(results_dir, 'run.json'), 'the run file')
    if not isinstance(run, dict):
        raise ReportError('%s is not a JSON object' % os.path.join(results_dir, 'run.json'))
    raw = os.path.join(results_dir, 'raw')
    names = sorted(name for name in os.listdir(raw) if name.endswith('.json')) if os.path.isdir(raw) else []
    if not names:
        raise ReportError('no raw results (%s/*.json): the benchmark ran no load point' % raw)
    points = [point_figures(read_json(os.path.join(raw, name), 'the result'), name) for name in names]
    return run, points


def new_figure(title, run):
    figure = Figure(figsize=(7, 4.5), dpi=100)
    axes = figure.add_subplot(1, 1, 1)
    if (run.get('settings') or {}).get('benchmark_lab') is True:
        title = '%s (%s)' % (title, LAB_NOTE)
    axes.set_title(title, fontsize=10)
    axes.grid(True, alpha=0.3)
    return figure, axes


def png_bytes(figure):
    out = io.BytesIO()
    figure.tight_layout()
    figure.savefig(out, format='png', metadata={'Software': None})
    return out.getvalue()


def throughput_plot(run, points, summary):
    figure, axes = new_figure('Output tokens/s at saturation', run)
    saturation = saturation_points(points)
    gpus = sorted(set(shape[1] for shape in saturation))
    for mode in MODES:
        counts = [count for count in gpus if (mode, count) in saturation]
        if counts:
            axes.plot(counts, [saturation[(mode, count)]['output_tps'] for count in counts], marker='o', label=mode)
    base_mode, base = efficiency_base(saturation, MODES[0])
    if base:
        axes.plot(gpus, [count * base for count in gpus], linestyle='--', color='grey',
                  label='ideal: N x %.1f (%s)' % (base, base_mode))
    axes.set_xticks(gpus)
    axes.set_xlabel('GPUs (N)')
    axes.set_ylabel('output tokens/s')
    axes.legend()
    return png_bytes(figure)


def short_load(point):
    """A point's load as a label: c=8 for a concurrency, 2/s for a request rate."""
    if point['load_kind'] == 'concurrency':
        return 'c=%s' % point['load']
    return '%s/s' % (point['load'] if point['load'] == 'inf' else '%g' % point['load'])


def latency_plot(run, points, summary):
    figure, axes = new_figure('Time to first token (p50) against throughput', run)
    kinds = set(point['load_kind'] for point in points)
    for mode, count, kind in sorted(set((point['mode'], point['gpus'], point['load_kind']) for point in points)):
        curve = sorted((point for point in points if (point['mode'], point['gpus'], point['load_kind']) == (mode, count, kind)),
                       key=lambda point: load_order(point['load']))
        label = '%s N=%d' % (mode, count) if len(kinds) == 1 else '%s N=%d, %s' % (mode, count, kind.replace('_', ' '))
        axes.plot([point['output_tps'] for point in curve], [point['ttft_p50_ms'] for point in curve], marker='o', label=label)
        for point in curve:
            axes.annotate(short_load(point), (point['output_tps'], point['ttft_p50_ms']), textcoords='offset points',
                          xytext=(4, 4), fontsize=7)
    axes.set_xlabel('output tokens/s')
    axes.set_ylabel('TTFT p50 (ms)')
    axes.legend()
    return png_bytes(figure)


def efficiency_plot(run, points, summary):
    figure, axes = new_figure('Scaling efficiency', run)
    rows = [row for row in summary['saturation'] if row['efficiency'] is not None]
    for mode in MODES:
        mine = [row for row in rows if row['mode'] == mode]
        if mine:
            axes.plot([row['gpus'] for row in mine], [100 * row['efficiency'] for row in mine], marker='o', label=mode)
    axes.axhline(100, linestyle='--', color='grey', label='linear scaling (100 %)')
    if not rows:
        axes.text(0.5, 0.5, 'no N=1 run: no efficiency', transform=axes.transAxes, ha='center')
    axes.set_xticks(sorted(set(row['gpus'] for row in summary['saturation'])))
    axes.set_xlabel('GPUs (N)')
    axes.set_ylabel('efficiency (%)')
    axes.set_ylim(bottom=0)
    axes.legend()
    return png_bytes(figure)


def report_files(run, points, summary):
    """Each report file's name and content (bytes)."""
    document = {'run': run, 'points': points, 'summary': summary}
    return [
        ('results.json', (json.dumps(document, indent=2) + '\n').encode('utf-8')),
        ('results.csv', csv_text(points).encode('utf-8')),
        ('report.md', report_markdown(run, points, summary).encode('utf-8')),
        ('throughput.png', throughput_plot(run, points, summary)),
        ('latency.png', latency_plot(run, points, summary)),
        ('efficiency.png', efficiency_plot(run, points, summary)),
    ]


def same_content(path, content):
    try:
        with open(path, 'rb') as handle:
            return handle.read() == content
    except OSError:
        return False


def main():
    module = AnsibleModule(
        argument_spec=dict(results_dir=dict(type='path', required=True)),
        supports_check_mode=True,
    )
    if not HAS_MATPLOTLIB:
        module.fail_json(msg=missing_required_lib('matplotlib'), exception=MATPLOTLIB_IMPORT_ERROR)
    results_dir = os.path.abspath(module.params['results_dir'])
    try:
        run, points = read_results(results_dir)
        summary = summarize(points)
        files = report_files(run, points, summary)
    except ReportError as exc:
        module.fail_json(msg=str(exc))
    changed = False
    paths = []
    for name, content in files:
        path = os.path.join(results_dir, name)
        paths.append(path)
        if same_content(path, content):
            continue
        changed = True
        if not module.check_mode:
            try:
                write_atomic(path, content)
            except OSError as exc:
                module.fail_json(msg='cannot write %s: %s' % (path, exc))
    module.exit_json(changed=changed, files=paths, summary=summary)


if __name__ == '__main__':
    main()
