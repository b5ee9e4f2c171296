# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The figures of benchmarks/maintenance_under_load.yml, from the gateways' record of their servers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.machinery
import importlib.util
import json
import os

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', 'benchmarks', 'maintenance_report.py')
LOADER = importlib.machinery.SourceFileLoader('maintenance_report', PATH)
SPEC = importlib.util.spec_from_loader('maintenance_report', LOADER)
report = importlib.util.module_from_spec(SPEC)
LOADER.exec_module(report)

ENDPOINTS = {'gpu-node-1': ['10.89.77.201:8000', '10.89.77.201:8001'], 'gpu-node-2': ['10.89.77.202:8000']}
ALL = '10.89.77.201:8000 10.89.77.201:8001 10.89.77.202:8000'
# The handler's line (roles/gateway/handlers/main.yml) as `journalctl -t llmfleet-gateway -o short-unix` prints it.
NGINX = ('{t} gateway-1 llmfleet-gateway[{pid}]: loaded 3 server(s): ' + ALL + '; drained {n}: {drained}\n')
ROUTER = '{t} gateway-1 llmfleet-gateway[{pid}]: router lists {n} worker(s): {listed}; removed -; added -\n'


def test_one_node_at_a_time_with_nginx():
    lines = [NGINX.format(t='100.0', pid=1, n=2, drained='10.89.77.201:8000 10.89.77.201:8001'),
             NGINX.format(t='160.5', pid=2, n=1, drained='10.89.77.202:8000'),
             NGINX.format(t='230.0', pid=3, n=0, drained='-')]
    figures = report.figures(report.drained_timeline(lines, ENDPOINTS), {'completed': 900, 'failed': 0}, 1)
    assert figures['seconds_out'] == {'gpu-node-1': 60.5, 'gpu-node-2': 69.5}
    assert figures['most_nodes_drained_at_once'] == 1
    assert figures['roll_seconds'] == 130.0
    assert figures['still_drained'] == [] and figures['problems'] == []


def test_the_router_lists_the_workers_it_serves():
    lines = [ROUTER.format(t='10', pid=1, n=1, listed='http://10.89.77.202:8000'),
             ROUTER.format(t='40', pid=2, n=3, listed=' '.join('http://' + key for key in ALL.split()))]
    timeline = report.drained_timeline(lines, ENDPOINTS)
    assert timeline == [(10.0, {'gpu-node-1'}), (40.0, set())]


def test_two_nodes_out_at_once_and_failed_requests_are_problems(tmp_path):
    lines = [NGINX.format(t='1', pid=1, n=3, drained=ALL), 'unrelated line\n', NGINX.format(t='2', pid=2, n=0, drained='-')]
    journal = tmp_path / 'journal'
    journal.write_text(''.join(lines))
    (tmp_path / 'endpoints.json').write_text(json.dumps(ENDPOINTS))
    (tmp_path / 'load.json').write_text(json.dumps({'completed': 10, 'failed': 2, 'errors': ['503', '503']}))
    out = tmp_path / 'out.json'
    assert report.main(['--journal', str(journal), '--endpoints', str(tmp_path / 'endpoints.json'),
                        '--load', str(tmp_path / 'load.json'), '--limit', '1', '--out', str(out)]) == 0
    written = json.loads(out.read_text())
    assert written['problems'] == ['2 request(s) failed', '2 nodes were drained at once, more than 1']


def test_a_node_left_drained_is_named():
    lines = [NGINX.format(t='5', pid=1, n=1, drained='10.89.77.202:8000')]
    figures = report.figures(report.drained_timeline(lines, ENDPOINTS), {'completed': 1, 'failed': 0}, 1)
    assert figures['still_drained'] == ['gpu-node-2'] and figures['seconds_out'] == {} and figures['roll_seconds'] is None
