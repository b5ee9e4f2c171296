# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Serving engines' Prometheus metrics: one table of names per engine, and their readings from a /metrics page.

Everything here is pure: text in, dicts out. No Ansible imports, so filters and modules share it.

``METRIC_NAMES`` maps each engine (``vllm``, ``sglang``) to its names of the same readings. A name of ``None``
means the engine has no such metric. Sources of the names:

- vLLM 0.32 (its docs/usage/metrics.md): every name is on the lab's captures of vLLM 0.32.0 in
  tests/unit/fixtures/vllm_metrics/. Its older ``vllm:gpu_cache_usage_perc`` is gone: ``vllm:kv_cache_usage_perc``.
- SGLang 0.5.x (checked on 0.5.23's ``sglang/srt/observability/metrics_collector.py``): served only when the
  server runs with ``--enable-metrics``. SGLang has no hit/query counter pair: its prefix-cache hits are
  ``sglang:cached_tokens_total`` (prompt tokens found in the cache, per ``cache_source``) out of
  ``sglang:prompt_tokens_total`` (prompt tokens), and its gauge ``sglang:cache_hit_rate``. SGLang before 0.5
  named its inter-token histogram ``sglang:time_per_output_token_seconds``; that name is not read.

A page may hold several series of one name (vLLM: one per model and data-parallel ``engine``; SGLang: one per
``tp_rank``/``pp_rank``/``dp_rank`` and ``priority``). Counts are summed over them; a usage ratio is the largest.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

ENGINES = ('vllm', 'sglang')

# reading -> (kind, how series of one name combine). Histograms give <reading>_count and <reading>_sum_seconds.
READINGS = (
    ('running', 'int', 'sum'),
    ('waiting', 'int', 'sum'),
    ('kv_cache_usage', 'float', 'max'),
    ('prefix_cache_hits', 'float', 'sum'),
    ('prefix_cache_queries', 'float', 'sum'),
    ('prefix_cache_hit_rate', 'float', 'max'),
    ('prompt_tokens', 'float', 'sum'),
    ('generation_tokens', 'float', 'sum'),
    ('preemptions', 'float', 'sum'),
    ('ttft', 'histogram', 'sum'),
    ('itl', 'histogram', 'sum'),
    ('e2e_latency', 'histogram', 'sum'),
)

METRIC_NAMES = {
    'vllm': {
        'running': 'vllm:num_requests_running',
        'waiting': 'vllm:num_requests_waiting',
        'kv_cache_usage': 'vllm:kv_cache_usage_perc',
        'prefix_cache_hits': 'vllm:prefix_cache_hits_total',
        'prefix_cache_queries': 'vllm:prefix_cache_queries_total',
        'prefix_cache_hit_rate': None,
        'prompt_tokens': 'vllm:prompt_tokens_total',
        'generation_tokens': 'vllm:generation_tokens_total',
        'preemptions': 'vllm:num_preemptions_total',
        'ttft': 'vllm:time_to_first_token_seconds',
        'itl': 'vllm:inter_token_latency_seconds',
        'e2e_latency': 'vllm:e2e_request_latency_seconds',
    },
    'sglang': {
        'running': 'sglang:num_running_reqs',
        'waiting': 'sglang:num_queue_reqs',
        'kv_cache_usage': 'sglang:token_usage',
        'prefix_cache_hits': 'sglang:cached_tokens_total',
        'prefix_cache_queries': 'sglang:prompt_tokens_total',
        'prefix_cache_hit_rate': 'sglang:cache_hit_rate',
        'prompt_tokens': 'sglang:prompt_tokens_total',
        'generation_tokens': 'sglang:generation_tokens_total',
        'preemptions': None,
        'ttft': 'sglang:time_to_first_token_seconds',
        'itl': 'sglang:inter_token_latency_seconds',
        'e2e_latency': 'sglang:e2e_request_latency_seconds',
    },
}

# What to check when a page has neither in-flight name of the engine.
_HINTS = {
    'vllm': 'is this a vLLM /metrics page (vllm serve serves it on its API port)?',
    'sglang': 'is this an SGLang /metrics page, and does the server run with --enable-metrics (without it SGLang '
              'serves none of its sglang: metrics)?',
}

IN_FLIGHT_READINGS = ('running', 'waiting')

# A sample line: name{labels} value [timestamp]
_SAMPLE_RE = re.compile(r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)(?:\s+\S+)?$')


class MetricsError(ValueError):
    """A /metrics page, or the engine asked for, that this table cannot read; the message says what to check."""


def prometheus_samples(text):
    """Prometheus text exposition -> [(name, labels text, float value)]; comments skipped."""
    samples = []
    for line in (text or '').splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        match = _SAMPLE_RE.match(line)
        if not match:
            raise MetricsError('not a Prometheus sample line: %r' % line[:120])
        try:
            value = float(match.group('value'))
        except ValueError:
            raise MetricsError('not a Prometheus sample value: %r' % line[:120])
        samples.append((match.group('name'), match.group('labels') or '', value))
    return samples


def metric_names(engine):
    """The table of one engine; an unknown engine is a MetricsError naming the engines known."""
    if engine not in METRIC_NAMES:
        raise MetricsError('unknown engine %r: the metrics table knows %s (the engine of a worker endpoint, '
                           'workers_engine)' % (engine, ', '.join(ENGINES)))
    return METRIC_NAMES[engine]


def _values(samples):
    values = {}
    for name, _labels, value in samples:
        values.setdefault(name, []).append(value)
    return values


def _other_engines(values, engine):
    return [other for other in ENGINES if other != engine
            and any(name.startswith(other + ':') for name in values)]


def _missing_in_flight(engine, values):
    names = metric_names(engine)
    looked_for = ' nor '.join(names[reading] for reading in IN_FLIGHT_READINGS)
    message = 'the %s metrics have neither %s: %s' % (engine, looked_for, _HINTS[engine])
    others = _other_engines(values, engine)
    if others:
        message += ' The page holds %s metrics: is the endpoint\'s engine right?' % ' and '.join(others)
    return MetricsError(message)


def requests_in_flight(text, engine='vllm'):
    """Requests the engine is running or holding in its queue (every series summed), from its /metrics page."""
    names = metric_names(engine)
    values = _values(prometheus_samples(text))
    found = [value for reading in IN_FLIGHT_READINGS for value in values.get(names[reading], [])]
    if not found:
        raise _missing_in_flight(engine, values)
    return int(sum(found))


def _combine(found, how, kind):
    if not found:
        return None
    value = max(found) if how == 'max' else sum(found)
    return int(value) if kind == 'int' else float(value)


def engine_metrics(text, engine):
    """The table's readings from a /metrics page, as a dict; None where the page (or the engine) lacks one."""
    names = metric_names(engine)
    values = _values(prometheus_samples(text))
    readings = {'engine': engine}
    for reading, kind, how in READINGS:
        name = names[reading]
        if kind == 'histogram':
            readings[reading + '_count'] = _combine(values.get(name + '_count', []) if name else [], how, 'int')
            readings[reading + '_sum_seconds'] = _combine(values.get(name + '_sum', []) if name else [], how, 'float')
        else:
            readings[reading] = _combine(values.get(name, []) if name else [], how, kind)
    if readings['running'] is None and readings['waiting'] is None:
        raise _missing_in_flight(engine, values)
    return readings
