# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read serving engines' Prometheus metrics."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError

# A sample line: name{labels} value [timestamp]
_SAMPLE_RE = re.compile(r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)(?:\s+\S+)?$')
IN_FLIGHT = ('vllm:num_requests_running', 'vllm:num_requests_waiting')


def prometheus_samples(text):
    """Prometheus text exposition -> [(name, labels text, float value)]; comments skipped."""
    samples = []
    for line in (text or '').splitlines():
        line = line.strip()
        if not line or line.startswith('#'):
            continue
        match = _SAMPLE_RE.match(line)
        if not match:
            raise AnsibleFilterError('not a Prometheus sample line: %r' % line[:120])
        samples.append((match.group('name'), match.group('labels') or '', float(match.group('value'))))
    return samples


def vllm_requests_in_flight(text):
    """Requests a vLLM server is running or holding in its queue, from its /metrics page."""
    samples = [value for name, _labels, value in prometheus_samples(text) if name in IN_FLIGHT]
    if not samples:
        raise AnsibleFilterError('the metrics have neither %s: is this a vLLM /metrics page?' % ' nor '.join(IN_FLIGHT))
    return int(sum(samples))


class FilterModule(object):
    """llmfleet.rocm metrics filters."""

    def filters(self):
        return {'vllm_requests_in_flight': vllm_requests_in_flight}
