# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read serving engines' Prometheus metrics (public; the table of names: plugins/plugin_utils/engine_metrics.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils import engine_metrics as _table


def prometheus_samples(text):
    """Prometheus text exposition -> [(name, labels text, float value)]; comments skipped."""
    try:
        return _table.prometheus_samples(text)
    except _table.MetricsError as error:
        raise AnsibleFilterError(str(error))


def requests_in_flight(text, engine='vllm'):
    """Requests a serving engine (vllm or sglang) is running or holding in its queue, from its /metrics page."""
    try:
        return _table.requests_in_flight(text, engine)
    except _table.MetricsError as error:
        raise AnsibleFilterError(str(error))


def engine_metrics(text, engine='vllm'):
    """The readings of an engine's /metrics page (running, waiting, KV cache usage, ...); None where it lacks one."""
    try:
        return _table.engine_metrics(text, engine)
    except _table.MetricsError as error:
        raise AnsibleFilterError(str(error))


class FilterModule(object):
    """llmfleet.rocm's public metrics filters."""

    def filters(self):
        return {
            'engine_metrics': engine_metrics,
            'requests_in_flight': requests_in_flight,
        }
