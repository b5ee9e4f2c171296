#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: http_probe
short_description: Send HTTP requests in order, each until its answer has a wanted status, in one call
version_added: 0.1.0
description:
  - What a loop of M(ansible.builtin.uri) with C(until) and C(retries) checks, in one module call for every request.
    The roles' verify phases ask each exporter for its metrics, and each worker for its readiness, one token and a
    refusal without the worker key, on every run; a loop would cost one module run per request.
  - The requests are sent in order. Each one is sent until its answer has one of the statuses in C(status), at most
    C(retries) more times, C(delay) seconds apart. A connection that is refused, reset or timed out counts as an
    attempt with the status -1.
  - The first request that never gets a wanted status fails the module. The message names it, its URL, the last status
    and the start of the last answer, or why there was none. The requests after it are not sent.
  - Header values are never shown (the worker key is sent in one).
  - Requests go through M(ansible.builtin.uri)'s own library (C(fetch_url)), with its certificate checks. A proxy in the
    environment is not used, since every URL is one of the fleet's own.
  - M(ansible.builtin.uri) would also show the worker key, a header value, among its arguments (with C(-vvv)) unless
    C(no_log) hid its failure message too.
author:
  - llmfleet.rocm contributors (@llmfleet)
options:
  requests:
    description: The requests, in the order they are sent.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: What the request checks, for the results and the message; its URL when not given.
        type: str
      url:
        description: The URL (http or https).
        type: str
        required: true
      method:
        description: The HTTP method.
        type: str
        default: GET
      body:
        description: A body, sent as JSON with C(Content-Type application/json).
        type: raw
      headers:
        description: Headers to send. Their values are not shown.
        type: dict
      status:
        description: The statuses that answer the request as wanted.
        type: list
        elements: int
        default: [200]
      retries:
        description: How many more times to send it after an answer with another status.
        type: int
        default: 0
      delay:
        description: Seconds between two attempts.
        type: float
        default: 1
      timeout:
        description: Seconds to wait for one answer.
        type: float
        default: 30
  validate_certs:
    description: Check the certificate of an https URL.
    type: bool
    default: true
  ca_path:
    description: A PEM file of the certificate authorities to check an https URL's certificate with.
    type: path
attributes:
  check_mode:
    support: full
    description: The requests are sent in check mode too; the roles send only reads and one-token completions.
  diff_mode:
    support: none
    description: Nothing on the node changes.
'''

EXAMPLES = r'''
- name: Read each exporter's metrics
  llmfleet.rocm.http_probe:
    requests:
      - {url: "http://10.0.0.11:9100/metrics", retries: 10, delay: 2}
      - {url: "http://10.0.0.11:9113/metrics", retries: 10, delay: 2}

- name: Wait until the worker is ready, ask it for one token, and check that it refuses a request without the key
  llmfleet.rocm.http_probe:
    requests:
      - {name: readiness, url: "http://10.0.0.21:8000/health", retries: 120, delay: 5}
      - name: one token
        url: http://10.0.0.21:8000/v1/completions
        method: POST
        body: {model: llama, prompt: Hello, max_tokens: 1}
        headers: {Authorization: "Bearer {{ worker_key }}"}
        timeout: 120
      - {name: refused without the key, url: "http://10.0.0.21:8000/v1/models", status: [401]}
'''

RETURN = r'''
results:
  description: One entry per request sent, in order.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The request's name, or its URL.
      type: str
    url:
      description: The URL.
      type: str
    status:
      description: The status of the last answer (-1 for none).
      type: int
      sample: 200
    attempts:
      description: How many times it was sent.
      type: int
      sample: 1
    elapsed:
      description: Seconds from the first attempt to the last answer.
      type: float
      sample: 0.012
'''

import json
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.urls import fetch_url

EXCERPT = 300


def _answer(module, request):
    """One attempt: (status, the start of the answer or why there was none)."""
    headers = dict(request['headers'] or {})
    data = None
    if request['body'] is not None:
        data = json.dumps(request['body'])
        headers.setdefault('Content-Type', 'application/json')
    response, info = fetch_url(module, request['url'], data=data, headers=headers, method=request['method'].upper(),
                               timeout=request['timeout'], use_proxy=False)
    status = int(info.get('status', -1))
    # An error status: fetch_url has read its body already.
    if 'body' in info:
        return status, to_text(info['body'] or b'', errors='replace')[:EXCERPT]
    if response is not None:
        try:
            text = response.read(EXCERPT)
        except Exception as exc:  # pylint: disable=broad-except
            return -1, 'the answer could not be read: %s' % exc
        return status, to_text(text, errors='replace')
    return status, to_text(info.get('msg') or '', errors='replace')[:EXCERPT]


def probe(module, request, sleep=time.sleep, clock=time.time):
    """Send request until a wanted status or the retries are spent: its result and the last answer's start."""
    started = clock()
    attempts, status, text = 0, -1, ''
    while True:
        attempts += 1
        status, text = _answer(module, request)
        if status in request['status'] or attempts > request['retries']:
            break
        sleep(request['delay'])
    return {'name': request['name'] or request['url'], 'url': request['url'], 'status': status, 'attempts': attempts,
            'elapsed': round(clock() - started, 3)}, text


def main():
    module = AnsibleModule(
        argument_spec=dict(
            requests=dict(type='list', elements='dict', required=True, options=dict(
                name=dict(type='str'),
                url=dict(type='str', required=True),
                method=dict(type='str', default='GET'),
                body=dict(type='raw'),
                headers=dict(type='dict', no_log=True),
                status=dict(type='list', elements='int', default=[200]),
                retries=dict(type='int', default=0),
                delay=dict(type='float', default=1),
                timeout=dict(type='float', default=30),
            )),
            validate_certs=dict(type='bool', default=True),
            ca_path=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    for request in module.params['requests']:
        label = request['name'] or request['url']
        if not request['url'].startswith(('http://', 'https://')):
            module.fail_json(msg='requests: %s has the URL %r, which is not an http or https URL.' % (label, request['url']))
        if request['retries'] < 0 or request['delay'] < 0 or request['timeout'] <= 0:
            module.fail_json(msg='requests: %s needs retries and delay of at least 0 and a timeout above 0.' % label)
    results = []
    for request in module.params['requests']:
        result, text = probe(module, request)
        results.append(result)
        if result['status'] not in request['status']:
            module.fail_json(msg='%s: %s answered %d (wanted %s) after %d attempt(s): %s' % (
                result['name'], result['url'], result['status'], ' or '.join(str(code) for code in request['status']),
                result['attempts'], ' '.join(text.split())[:EXCERPT] or 'no answer'), results=results)
    module.exit_json(changed=False, results=results)


if __name__ == '__main__':
    main()
