# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The metric names a PromQL expression reads, and the names the fleet's exporters serve.

``metric_names`` drops what is not a metric name (strings, label matchers, ranges, the label lists of
by/without/on/ignoring/group_left/group_right, functions, keywords, numbers); promtool parses the same
expressions with Prometheus's own parser in the tests, so a wrong expression cannot hide here.
``served_names`` reads the sample names of real /metrics pages (tests/unit/fixtures/metrics and
tests/unit/fixtures/exporters)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shutil

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
UNPACKED_PROMTOOL = os.path.join(HERE, '..', '..', '..', '.cache', 'prometheus', 'root', 'usr', 'bin', 'promtool')
FIXTURES = os.path.join(HERE, '..', 'fixtures')
_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS_RE = re.compile(r'\{[^{}]*\}')
_RANGE_RE = re.compile(r'\[[^\]]*\]')
_LABEL_LIST_RE = re.compile(r'\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)')
_NAME_RE = re.compile(r'(?<![A-Za-z0-9_:.$])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?')
KEYWORDS = frozenset(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool',
                      'inf', 'nan', 'Inf', 'NaN'])
_SAMPLE_RE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)[{ ]')
# Series Prometheus makes itself: the scrape's own, and the alerts' state.
PROMETHEUS_NAMES = frozenset(['up', 'ALERTS', 'ALERTS_FOR_STATE', 'scrape_duration_seconds', 'scrape_samples_scraped'])


def metric_names(expr):
    """The metric names ``expr`` reads, sorted."""
    text = _STRING_RE.sub('""', expr)
    text = _MATCHERS_RE.sub(' ', text)
    text = _RANGE_RE.sub(' ', text)
    text = _LABEL_LIST_RE.sub(' ', text)
    names = set()
    for match in _NAME_RE.finditer(text):
        name, call = match.group(1), match.group(2)
        if call or name in KEYWORDS:
            continue
        names.add(name)
    return sorted(names)


def grafana_to_promql(expr):
    """A dashboard's expression with Grafana's variables replaced by what Prometheus parses."""
    return expr.replace('$__rate_interval', '5m').replace('$__interval', '1m').replace('"$node"', '".*"').replace('"$model"', '".*"')


def page_names(path):
    names = set()
    with open(path) as handle:
        for line in handle:
            match = _SAMPLE_RE.match(line)
            if match:
                names.add(match.group(1))
    return names


def served_names():
    """engine -> names: every sample name of the captured pages, per exporter."""
    result = {'vllm': set(), 'sglang': set(), 'node': set(), 'nginx': set(), 'amd_gpu': set()}
    metrics = os.path.join(FIXTURES, 'metrics')
    for name in sorted(os.listdir(metrics)):
        if name.endswith('.txt'):
            result[name.split('-')[0]].update(page_names(os.path.join(metrics, name)))
    exporters = os.path.join(FIXTURES, 'exporters')
    for prefix, key in (('node-exporter', 'node'), ('nginx-exporter', 'nginx'), ('amdgpu-exporter', 'amd_gpu')):
        for name in sorted(os.listdir(exporters)):
            if name.startswith(prefix) and name.endswith('.txt'):
                result[key].update(page_names(os.path.join(exporters, name)))
    # The node exporter's apt textfile collector (Debian's prometheus-node-exporter-collectors, apt_info.py).
    result['node'].add('node_reboot_required')
    return result


def find_promtool():
    """LLMFLEET_PROMTOOL, else the one tests/tools/promtool.sh unpacked, else promtool on PATH; the test fails without one."""
    for candidate in (os.environ.get('LLMFLEET_PROMTOOL'), UNPACKED_PROMTOOL, shutil.which('promtool')):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail('no promtool: run tests/tools/promtool.sh (it unpacks Debian\'s prometheus package into .cache/prometheus/)'
                ' or set LLMFLEET_PROMTOOL')
