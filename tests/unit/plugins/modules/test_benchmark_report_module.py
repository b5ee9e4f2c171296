# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""benchmark_report as Ansible runs it, on a results directory of recorded ``vllm bench serve`` results.

The raw results are the lab recordings of tests/unit/fixtures/vllm_bench_serve/ (see the README.md there).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv
import json
import os
import shutil

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', 'vllm_bench_serve')
RECORDED = sorted(name for name in os.listdir(FIXTURES) if name.endswith('.json'))
FILES = ['results.json', 'results.csv', 'report.md', 'throughput.png', 'latency.png', 'efficiency.png']
PNG_MAGIC = b'\x89PNG\r\n\x1a\n'

RUN = {'settings': {'benchmark_lab': True, 'benchmark_modes': ['dp', 'tp'], 'benchmark_gpu_counts': [1]}, 'engine': {'name': 'vllm', 'version': '0.32.0'},
       'gpu': {'model': 'none (CPU lab)', 'count': {'gpu-node-1': 1, 'gpu-node-2': 1}}, 'commit': '6eda2d4', 'skipped': [],
       'started': '2026-12-02T05:00:00Z', 'finished': '2026-12-02T05:03:00Z', 'client': 'gpu-node-1',
       'gateway': 'https://10.89.77.200'}


def results_dir(tmp_path, names=RECORDED, run=None):
    directory = tmp_path / 'benchmark-results' / '20261202T050000Z'
    (directory / 'raw').mkdir(parents=True)
    (directory / 'run.json').write_text(json.dumps(RUN if run is None else run))
    for name in names:
        shutil.copy(os.path.join(FIXTURES, name), str(directory / 'raw' / name))
    return directory


def test_the_report_files_are_written(node, tmp_path):
    directory = results_dir(tmp_path)
    result = node.run('benchmark_report', results_dir=str(directory))
    assert result['changed'] is True and 'failed' not in result
    assert result['files'] == [str(directory / name) for name in FILES]
    for name in FILES:
        assert (directory / name).is_file()
    for name in FILES[3:]:
        data = (directory / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 10000
    document = json.loads((directory / 'results.json').read_text())
    assert document['run'] == RUN and len(document['points']) == len(RECORDED)
    assert document['summary'] == result['summary'] and result['summary']['points'] == len(RECORDED)
    assert sorted(point['source'] for point in document['points']) == RECORDED
    rows = list(csv.reader((directory / 'results.csv').read_text().splitlines()))
    assert rows[0][:4] == ['mode', 'gpus', 'load_kind', 'load'] and len(rows) == len(RECORDED) + 1
    report = (directory / 'report.md').read_text()
    assert report.startswith('# Scaling benchmark: vllm 0.32.0') and 'say nothing about how the engine scales' in report
    assert sorted(os.listdir(str(directory))) == sorted(FILES + ['raw', 'run.json'])
    # The same results again: every file holds its content already.
    again = node.run('benchmark_report', results_dir=str(directory))
    assert again['changed'] is False and again['summary'] == result['summary']


def test_check_mode_writes_nothing(node, tmp_path):
    directory = results_dir(tmp_path)
    result = node.run('benchmark_report', _ansible_check_mode=True, results_dir=str(directory))
    assert result['changed'] is True and len(result['files']) == 6
    assert sorted(os.listdir(str(directory))) == ['raw', 'run.json']


def test_no_raw_results_fail_with_a_message(node, tmp_path):
    directory = results_dir(tmp_path, names=[])
    result = node.run('benchmark_report', results_dir=str(directory))
    assert result['failed'] is True and 'no raw results' in result['msg'] and str(directory / 'raw') in result['msg']
    assert sorted(os.listdir(str(directory))) == ['raw', 'run.json']


def test_a_result_without_metadata_fails_naming_it(node, tmp_path):
    directory = results_dir(tmp_path)
    path = directory / 'raw' / RECORDED[0]
    result = json.loads(path.read_text())
    del result['llmfleet_gpus']
    path.write_text(json.dumps(result))
    failed = node.run('benchmark_report', results_dir=str(directory))
    assert failed['failed'] is True
    assert '%s lacks the metadata llmfleet_gpus' % RECORDED[0] in failed['msg'] and '--metadata' in failed['msg']


def test_a_broken_json_file_or_a_missing_run_fails_with_a_message(node, tmp_path):
    directory = results_dir(tmp_path)
    (directory / 'raw' / 'cut.json').write_text('{"duration": ')
    failed = node.run('benchmark_report', results_dir=str(directory))
    assert failed['failed'] is True and 'cannot read the result' in failed['msg'] and 'cut.json' in failed['msg']
    (directory / 'run.json').unlink()
    failed = node.run('benchmark_report', results_dir=str(directory))
    assert failed['failed'] is True and 'cannot read the run file' in failed['msg']
