# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared wiring of the input-rule tests (one test module per role, test_<role>_inputs.py).

A role's test module gives the valid inputs (its defaults, plus what a run adds) and a list of
``Case(id, changes, rule)``: ``changes`` applied to the valid inputs must make ``rule`` speak
(and, with ``absent=True``, must not). ``assert_every_rule_reached`` proves that each rule of the
role's RuleSet is triggered by at least one case and left quiet by at least one.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import copy
import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..'))

SUPPORTED = ['Debian 12', 'Ubuntu 22.04', 'Ubuntu 24.04']
PLATFORM = {
    'key': 'Debian-12', 'kernel': '6.1.0-28-amd64', 'name': 'Debian 12', 'supported': True,
    'supported_names': SUPPORTED, 'rocm_suite': 'jammy', 'kernel_packages': ['linux-headers-6.1.0-28-amd64'],
    'cpupower_packages': ['linux-cpupower'], 'kernel_managed': True, 'kernel_managed_reason': 'the node runs its own kernel',
    'mirror_url': '',
}
# A node of a site without a route out (llmfleet_mirror_url set).
MIRRORED = dict(PLATFORM, mirror_url='http://mirror-1:8080')
UNSUPPORTED = {
    'key': 'CentOS-9', 'kernel': '5.14.0', 'name': 'CentOS 9', 'supported': False, 'supported_names': SUPPORTED,
    'rocm_suite': '', 'kernel_packages': [], 'cpupower_packages': [], 'kernel_managed': True,
    'kernel_managed_reason': 'the node runs its own kernel',
}


class Case(collections.namedtuple('Case', 'id changes rule ctx absent contains')):
    """One input case: ``changes`` to the values, extra ``ctx``, the rule expected to speak (or not)."""

    def __new__(cls, id, changes, rule, ctx=None, absent=False, contains=None):
        return super(Case, cls).__new__(cls, id, changes, rule, ctx or {}, absent, contains)


def role_defaults(role):
    """The role's defaults/main.yml as data (templated defaults stay strings)."""
    with open(os.path.join(ROOT, 'roles', role, 'defaults', 'main.yml')) as handle:
        return yaml.safe_load(handle) or {}


def apply(values, changes):
    result = copy.deepcopy(values)
    result.update(copy.deepcopy(changes))
    return result


def run_case(ruleset, values, ctx, case):
    """Check one case; returns the rule ids that spoke."""
    merged_ctx = dict(ctx)
    merged_ctx.update(case.ctx)
    found = ruleset.check(apply(values, case.changes), merged_ctx)
    spoke = [rule_id for rule_id, _message in found]
    messages = [message for rule_id, message in found if rule_id == case.rule]
    if case.absent:
        assert case.rule not in spoke, '%s: rule %s spoke: %s' % (case.id, case.rule, messages)
    else:
        assert case.rule in spoke, '%s: rule %s did not speak (others: %s)' % (case.id, case.rule, found)
        if case.contains:
            for text in ([case.contains] if isinstance(case.contains, str) else case.contains):
                assert any(text in message for message in messages), '%s: no message of %s has %r: %s' % (
                    case.id, case.rule, text, messages)
    return spoke


def assert_every_rule_reached(ruleset, cases):
    """Every rule is triggered by a case and left quiet by another (the valid inputs count as one)."""
    triggered = set(case.rule for case in cases if not case.absent)
    missing = [rule_id for rule_id in ruleset.ids if rule_id not in triggered]
    assert not missing, 'rules of %s that no case triggers: %s' % (ruleset.role, missing)
    unknown = sorted(set(case.rule for case in cases) - set(ruleset.ids))
    assert not unknown, 'cases name rules %s has not: %s' % (ruleset.role, unknown)
