# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks of the monitoring role (``input_problems('monitoring')``).

Besides the role's variables, the rules judge the targets the role would write: every host it scrapes
needs a known address, and every worker endpoint and exporter port must be one Prometheus can use.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.firewall_rules import is_group_name
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.prometheus_targets import monitoring_scrape_targets
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import (
    RuleSet, as_int, is_absolute_path, is_closed_address, is_http_url, is_one_line, show, supported_system_rule)

# A Prometheus duration as the role writes it: one number and one unit.
_DURATION_RE = re.compile(r'^[1-9][0-9]*(ms|s|m|h|d|w|y)\Z')

RULES = RuleSet('monitoring')
supported_system_rule(RULES)


def _listen_problem(name, value):
    if is_closed_address(value):
        return None
    return ('%s is %s: give a loopback or private address of this host (127.0.0.1, or its address on the fleet\'s private'
            ' network); the firewall role admits only the monitoring hosts.' % (name, show(value)))


@RULES.rule('monitoring-listen-address')
def _listen(values, ctx):
    return [message for message in (_listen_problem(name, values[name]) for name in
                                    ('monitoring_listen_address', 'monitoring_alertmanager_listen_address')) if message]


@RULES.rule('monitoring-listen-ports')
def _ports(values, ctx):
    names = ('monitoring_listen_port', 'monitoring_alertmanager_listen_port')
    bad = [name for name in names if as_int(values[name]) is None or not 1 <= as_int(values[name]) <= 65535]
    if bad:
        return ['%s is %s, not a port 1-65535.' % (name, show(values[name])) for name in bad]
    if as_int(values[names[0]]) == as_int(values[names[1]]) and values['monitoring_listen_address'] == values[
            'monitoring_alertmanager_listen_address']:
        return 'monitoring_listen_port and monitoring_alertmanager_listen_port are both %s on one address: give two ports.' % values[names[0]]
    return None


@RULES.rule('monitoring-durations')
def _durations(values, ctx):
    names = ('monitoring_scrape_interval', 'monitoring_evaluation_interval', 'monitoring_retention')
    return ['%s is %s, not a Prometheus duration such as 15s, 1m or 15d.' % (name, show(values[name]))
            for name in names if not (isinstance(values[name], str) and _DURATION_RE.match(values[name]))]


@RULES.rule('monitoring-webhook-url')
def _webhook(values, ctx):
    url = values['monitoring_alertmanager_webhook_url']
    if url == '' or (is_http_url(url) and is_one_line(url) and '"' not in url):
        return None
    return 'monitoring_alertmanager_webhook_url is %s: give an http:// or https:// URL, or "" to send alerts nowhere.' % show(url)


@RULES.rule('monitoring-paths')
def _paths(values, ctx):
    problems = []
    if not is_absolute_path(values['monitoring_config_dir']) or ' ' in values['monitoring_config_dir']:
        problems.append('monitoring_config_dir is %s, not an absolute path without spaces.' % show(values['monitoring_config_dir']))
    dashboards = values['monitoring_dashboards_dir']
    if dashboards != '' and not is_absolute_path(dashboards):
        problems.append('monitoring_dashboards_dir is %s: give an absolute path, or "" for no dashboards.' % show(dashboards))
    return problems


@RULES.rule('monitoring-group-names')
def _groups(values, ctx):
    node_groups = values['monitoring_node_groups']
    if not isinstance(node_groups, (list, tuple)):
        return 'monitoring_node_groups is %s, not a list of group names.' % show(node_groups)
    named = [('monitoring_node_groups', group) for group in node_groups]
    named += [(name, values[name]) for name in ('monitoring_gpu_group', 'monitoring_gateway_group')]
    return ['%s names %s, which is not a group name.' % (name, show(group)) for name, group in named if not is_group_name(group)]


@RULES.rule('monitoring-targets')
def _targets(values, ctx):
    try:
        monitoring_scrape_targets(values, ctx.get('hostvars') or {}, ctx.get('groups') or {})
    except AnsibleFilterError as exc:
        return 'The scrape targets cannot be written: %s.' % str(exc).rstrip('.')
    return None


def monitoring_input_problems(values, platform, hostvars=None, groups=None):
    """Messages for every problem of the monitoring role's inputs (empty when there is none)."""
    return RULES.messages(values, {'platform': platform, 'hostvars': hostvars or {}, 'groups': groups or {}})
