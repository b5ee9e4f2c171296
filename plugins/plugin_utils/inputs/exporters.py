# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks of the exporters role (``input_problems('exporters')``).

Besides the role's variables, the rules judge the node's ROCm release as llmfleet.rocm.rocm_facts read it (it is
written into the node exporter's textfile) and whether the node is a gateway (its ports then count too).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from collections.abc import Mapping

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.firewall_rules import is_group_name
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import (
    RuleSet, as_int, is_closed_address, is_http_url, mirror_only_rule, show, supported_system_rule)

_VERSION_RE = re.compile(r'^[0-9]+(\.[0-9]+){1,3}\Z')
# AMD's field and label names (GPU_JUNCTION_TEMPERATURE, CARD_MODEL).
_AMD_NAME_RE = re.compile(r'^[A-Z][A-Z0-9_]*\Z')
_LABEL_NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*\Z')
# A custom label's value: one line of printable characters without quotes or backslashes.
_LABEL_VALUE_RE = re.compile(r'^[^"\\\x00-\x1f\x7f]{0,100}\Z')

RULES = RuleSet('exporters')
supported_system_rule(RULES)
mirror_only_rule(RULES, ['exporters_amdgpu_exporter_repo_base_url', 'exporters_amdgpu_exporter_repo_key_url'])


@RULES.rule('exporters-listen-address')
def _listen(values, ctx):
    value = values['exporters_listen_address']
    if is_closed_address(value):
        return None
    return ('exporters_listen_address is %s: give a loopback or private address of this node (its address on the fleet\'s'
            ' private network); the firewall role opens the exporters\' ports to the monitoring hosts only.' % show(value))


@RULES.rule('exporters-ports')
def _ports(values, ctx):
    names = ['exporters_node_exporter_port', 'exporters_amdgpu_exporter_port', 'exporters_nginx_status_port',
             'exporters_nginx_exporter_port']
    problems = ['%s is %s, not a port 1-65535.' % (name, show(values[name]))
                for name in names if as_int(values[name]) is None or not 1 <= as_int(values[name]) <= 65535]
    log_port = as_int(values['exporters_gateway_log_port'])
    if log_port is None or not 0 <= log_port <= 65535:
        problems.append('exporters_gateway_log_port is %s, not a port 1-65535 or 0 (none).' % show(values['exporters_gateway_log_port']))
    if problems:
        return problems
    used = names[:2] + (names[2:] + ['exporters_gateway_log_port'] if ctx.get('gateway') else [])
    ports = [(name, as_int(values[name])) for name in used if as_int(values[name])]
    taken = {}
    for name, port in ports:
        if port in taken:
            problems.append('%s and %s are both %d on this node: give each listener its own port.' % (taken[port], name, port))
        taken.setdefault(port, name)
    return problems


@RULES.rule('exporters-group-names')
def _groups(values, ctx):
    return ['%s is %s, not a group name.' % (name, show(values[name]))
            for name in ('exporters_gpu_group', 'exporters_gateway_group') if not is_group_name(values[name])]


@RULES.rule('exporters-amdgpu-version')
def _version(values, ctx):
    value = values['exporters_amdgpu_exporter_version']
    if isinstance(value, str) and _VERSION_RE.match(value):
        return None
    return ('exporters_amdgpu_exporter_version is %s: give the release of AMD\'s Device Metrics Exporter as in its repository\'s'
            ' path, such as "1.4.0" (quoted).' % show(value))


@RULES.rule('exporters-amdgpu-urls')
def _urls(values, ctx):
    problems = []
    base = values['exporters_amdgpu_exporter_repo_base_url']
    if not is_http_url(base) or base.endswith('/') or '"' in base:
        problems.append('exporters_amdgpu_exporter_repo_base_url is %s: give the base URL of AMD\'s repositories (or a mirror),'
                        ' http:// or https://, without a trailing /.' % show(base))
    key = values['exporters_amdgpu_exporter_repo_key_url']
    if not is_http_url(key):
        problems.append('exporters_amdgpu_exporter_repo_key_url is %s, not an http:// or https:// URL.' % show(key))
    return problems


@RULES.rule('exporters-amdgpu-names')
def _names(values, ctx):
    problems = []
    for name in ('exporters_amdgpu_exporter_fields', 'exporters_amdgpu_exporter_labels'):
        items = values[name]
        if not isinstance(items, (list, tuple)):
            problems.append('%s is %s, not a list.' % (name, show(items)))
            continue
        bad = [item for item in items if not (isinstance(item, str) and _AMD_NAME_RE.match(item))]
        if bad:
            problems.append('%s has %s: AMD\'s exporter names its fields and labels in upper case (GPU_JUNCTION_TEMPERATURE,'
                            ' CARD_MODEL).' % (name, ', '.join(show(item) for item in bad)))
    return problems


@RULES.rule('exporters-amdgpu-custom-labels')
def _custom(values, ctx):
    labels = values['exporters_amdgpu_exporter_custom_labels']
    if not isinstance(labels, Mapping):
        return 'exporters_amdgpu_exporter_custom_labels is %s, not a mapping of label name to value.' % show(labels)
    bad = [(key, value) for key, value in labels.items()
           if not (isinstance(key, str) and _LABEL_NAME_RE.match(key) and not key.startswith('__'))
           or not (isinstance(value, str) and _LABEL_VALUE_RE.match(value))]
    if not bad:
        return None
    return ('exporters_amdgpu_exporter_custom_labels has %s: a label name is letters, digits and _ (not starting with __ or a digit),'
            ' a value one line of text without quotes or backslashes.' % ', '.join('%s: %s' % (show(k), show(v)) for k, v in bad))


@RULES.rule('exporters-amdgpu-health-thresholds')
def _thresholds(values, ctx):
    thresholds = values['exporters_amdgpu_exporter_health_thresholds']
    if not isinstance(thresholds, Mapping):
        return 'exporters_amdgpu_exporter_health_thresholds is %s, not a mapping of field to error count.' % show(thresholds)
    bad = [(key, value) for key, value in thresholds.items()
           if not (isinstance(key, str) and _AMD_NAME_RE.match(key)) or as_int(value) is None or as_int(value) < 0]
    if not bad:
        return None
    return ('exporters_amdgpu_exporter_health_thresholds has %s: give an upper-case field name (GPU_ECC_UNCORRECT_UMC) and a'
            ' count of 0 or more.' % ', '.join('%s: %s' % (show(k), show(v)) for k, v in bad))


@RULES.rule('exporters-rocm-version')
def _rocm_version(values, ctx):
    version = ctx.get('rocm_version') or ''
    if version == '' or (isinstance(version, str) and _VERSION_RE.match(version)):
        return None
    return ('The ROCm release llmfleet.rocm.rocm_facts read on this node is %s, which is not a version; run the driver stage'
            ' (playbooks/driver.yml) again and look at its rocm_facts output.' % show(version))


def exporters_input_problems(values, platform, rocm_version='', gateway=False):
    """Messages for every problem of the exporters role's inputs (empty when there is none)."""
    return RULES.messages(values, {'platform': platform, 'rocm_version': rocm_version, 'gateway': gateway})
