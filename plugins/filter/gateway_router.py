# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gateway's router (gateway_routing cache_aware): its worker list (``gateway_router_urls``) and the API calls
that bring a running router's list there (``gateway_router_sync``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.llmfleet.rocm.plugins.filter.gateway_inputs import gateway_server_keys


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
        raise AnsibleFilterError('gateway_router_sync: a worker URL is not a string: %r' % (url,))
    return url.rstrip('/')


def gateway_router_sync(current, wanted):
    """What the router lists now (GET /list_workers: its ``urls``, or that answer itself) and the URLs it should list ->
    ``{'remove': [...], 'add': [...], 'changed': bool}``, only the differences, each in the order given.

    Removals come first in the role (a drained worker leaves before anything else happens). URLs compare without a
    trailing slash; a URL the router lists twice is removed once.
    """
    if isinstance(current, dict):
        current = current.get('urls')
    if not isinstance(current, list) or not isinstance(wanted, list):
        raise AnsibleFilterError('gateway_router_sync: expects two lists of URLs (the router\'s urls and the wanted ones),'
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


class FilterModule(object):
    def filters(self):
        return {'gateway_router_urls': gateway_router_urls, 'gateway_router_sync': gateway_router_sync}
