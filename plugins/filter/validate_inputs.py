# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks of the validate role (``validate_input_problems``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmfleet.rocm.plugins.module_utils.inputs import RuleSet, as_int, as_number, is_absolute_path, show, supported_system_rule
from ansible_collections.llmfleet.rocm.plugins.module_utils.validate_thresholds import HEALTH, THRESHOLDS

COMPUTE_PARTITIONS = ('SPX', 'DPX', 'TPX', 'QPX', 'CPX')
MEMORY_PARTITIONS = ('NPS1', 'NPS2', 'NPS4', 'NPS8')
THRESHOLD_NAMES = sorted(set(name for table in THRESHOLDS.values() for name in table))

RULES = RuleSet('validate')
supported_system_rule(RULES)


@RULES.rule('validate-threshold-names')
def _threshold_names(values, ctx):
    overrides = values['validate_thresholds']
    if not isinstance(overrides, dict):
        return 'validate_thresholds is %s: give a mapping of threshold name to the keys to replace.' % show(overrides)
    messages = []
    for name, entry in sorted(overrides.items()):
        if name not in THRESHOLD_NAMES:
            messages.append('validate_thresholds names %s, which is no threshold of the table (known: %s).'
                            % (show(name), ', '.join(THRESHOLD_NAMES)))
        elif not isinstance(entry, dict):
            messages.append('validate_thresholds.%s is %s: give a mapping such as {value: 290.0, source: "where the figure'
                            ' comes from"}.' % (name, show(entry)))
        elif 'value' in entry and as_number(entry['value']) is None:
            messages.append('validate_thresholds.%s.value is %s: give a number.' % (name, show(entry['value'])))
    return messages


@RULES.rule('validate-health-names')
def _health_names(values, ctx):
    overrides = values['validate_health_thresholds']
    if not isinstance(overrides, dict):
        return 'validate_health_thresholds is %s: give a mapping of limit name to {value: N}.' % show(overrides)
    messages = []
    for name, entry in sorted(overrides.items()):
        if name not in HEALTH:
            messages.append('validate_health_thresholds names %s, which is no health limit (known: %s).'
                            % (show(name), ', '.join(sorted(HEALTH))))
        elif not isinstance(entry, dict) or ('value' in entry and (as_int(entry['value']) is None or as_int(entry['value']) < 0)):
            messages.append('validate_health_thresholds.%s is %s: give a mapping such as {value: 0}, the value a whole'
                            ' number from 0.' % (name, show(entry)))
    return messages


@RULES.rule('validate-partitions')
def _partitions(values, ctx):
    expected = values['validate_expected_partitions']
    if not isinstance(expected, dict) or set(expected) - set(['compute', 'memory']):
        return ('validate_expected_partitions is %s: give {compute: "", memory: ""} with a mode or "" (not checked).'
                % show(expected))
    messages = []
    for kind, modes in (('compute', COMPUTE_PARTITIONS), ('memory', MEMORY_PARTITIONS)):
        mode = expected.get(kind) or ''
        if mode and str(mode).upper() not in modes:
            messages.append('validate_expected_partitions.%s is %s: choose one of %s, or "" not to check it.'
                            % (kind, show(mode), ', '.join(modes)))
    return messages


@RULES.rule('validate-report-dir')
def _report_dir(values, ctx):
    if not is_absolute_path(values['validate_report_dir']) or values['validate_report_dir'].rstrip('/') == '':
        return 'validate_report_dir is %s: give an absolute directory on the node, not /.' % show(values['validate_report_dir'])
    return None


@RULES.rule('validate-timeout')
def _timeout(values, ctx):
    if (as_int(values['validate_timeout']) or 0) <= 0:
        return 'validate_timeout is %s: give the seconds a node\'s validation may take.' % show(values['validate_timeout'])
    return None


@RULES.rule('validate-drain-without-gateways')
def _drain(values, ctx):
    if (values['validate_drain'] or values['validate_on_failure'] == 'drain') and not ctx.get('gateways'):
        return ('validate_drain or validate_on_failure: drain needs the gateways group, and the inventory has no gateway:'
                ' set validate_drain: false and validate_on_failure: fail.')
    return None


def validate_input_problems(values, platform, gateways=None):
    """The validate role's variables -> a list of messages (empty when fine). ``gateways``: the gateways group's hosts."""
    return RULES.messages(values, {'platform': platform, 'gateways': gateways or []})


class FilterModule(object):
    def filters(self):
        return {'validate_input_problems': validate_input_problems}
