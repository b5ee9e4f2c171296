# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gateway's router (gateway_routing cache_aware): its worker list (``gateway_router_urls``), the API calls
that bring a running router's list there (``gateway_router_changes``), and what the router itself says of each worker
(``gateway_router_workers``: healthy or not, requests it holds there)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.gateway import gateway_server_keys
from ansible_collections.llmfleet.rocm.plugins.plugin_utils import engine_metrics

# vllm-router 0.1.17's per-worker series on its metrics port: a gauge of 1 (healthy) or 0, and the requests it has sent
# to the worker that have not finished (streams included; they stay counted after the worker left its list).
_HEALTH = 'vllm_router_worker_health'
_RUNNING = 'vllm_router_running_requests'
_WORKER_LABEL_RE = re.compile(r'(?:^|,)\s*worker="(?P<url>[^"]*)"')


def gateway_router_urls(endpoints, drained=None):
    """The upstream's endpoints and gateway_drained -> the router's worker URLs, "http://address:port" of every server
    that is not drained, in the upstream's order (IPv6 addresses in brackets, each server once)."""
    drained = set(drained or [])
    urls = []
    for key in gateway_server_keys(endpoints):
        url = 'http://%s' % key
        if key not in drained and url not in urls:
            urls.append(url)
    return urls


def _normal(url):
    if not isinstance(url, str):
        raise AnsibleFilterError('gateway_router_changes: a worker URL is not a string: %r' % (url,))
    return url.rstrip('/')


def gateway_router_changes(current, wanted):
    """What the router lists now (GET /list_workers: its ``urls``, or that answer itself) and the URLs it should list ->
    ``{'remove': [...], 'add': [...], 'changed': bool}``, only the differences, each in the order given.

    Removals come first in the role (a drained worker leaves before anything else happens). URLs compare without a
    trailing slash; a URL the router lists twice is removed once.
    """
    if isinstance(current, dict):
        current = current.get('urls')
    if not isinstance(current, list) or not isinstance(wanted, list):
        raise AnsibleFilterError('gateway_router_changes: expects two lists of URLs (the router\'s urls and the wanted ones),'
                                 ' got %r and %r' % (current, wanted))
    have = [_normal(url) for url in current]
    want = [_normal(url) for url in wanted]
    remove = []
    for url in have:
        if url not in want and url not in remove:
            remove.append(url)
    add = []
    for url in want:
        if url not in have and url not in add:
            add.append(url)
    return {'remove': remove, 'add': add, 'changed': bool(remove or add)}


def gateway_router_workers(text):
    """The router's metrics page -> ``{url: {'healthy': bool or None, 'running': int}}`` for every worker it has a
    series of (a worker it no longer lists may keep one: judge only the URLs it lists). ``healthy`` is None where the
    page has no health series for the worker; ``running`` is 0 where it has no request series."""
    try:
        samples = engine_metrics.prometheus_samples(text)
    except engine_metrics.MetricsError as error:
        raise AnsibleFilterError('gateway_router_workers: %s' % error)
    workers = {}
    for name, labels, value in samples:
        if name not in (_HEALTH, _RUNNING):
            continue
        match = _WORKER_LABEL_RE.search(labels)
        if not match:
            raise AnsibleFilterError('gateway_router_workers: a %s series without a worker label: {%s}' % (name, labels))
        worker = workers.setdefault(_normal(match.group('url')), {'healthy': None, 'running': 0})
        if name == _HEALTH:
            worker['healthy'] = value >= 1
        else:
            worker['running'] += int(value)
    return workers
