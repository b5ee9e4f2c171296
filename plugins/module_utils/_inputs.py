# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks of the roles, as pure functions.

Each role keeps its rules in one ``RuleSet``: a rule is a function of the role's variables
(``values``, a mapping of every ``<role>_*`` variable) and a context (``ctx``: the platform from
the base role, and whatever node readings the role feeds in), returning ``None``, one message or a
list of messages. A message names the variable, the value and what to do. The rule sets live in
plugins/plugin_utils/inputs/<role>.py; the roles ask them through one filter,
``llmfleet.rocm.input_problems('<role>', ...)`` (plugins/filter/__inputs.py), which returns the messages; the tests
call ``RuleSet.check`` to see which rule spoke, so that every rule is proven to be reachable.

Only controller code imports this file (filters, plugin_utils, and module_utils/multinode.py for the filters).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import json
import re

_ABSOLUTE_PATH_RE = re.compile(r'^/[^\x00-\x1f\x7f]*\Z')
_HTTP_URL_RE = re.compile(r'^https?://[^/\s]+[^\s]*\Z')
# A value that a file we write keeps on one line (no line breaks, no other control characters).
_ONE_LINE_RE = re.compile(r'^[^\x00-\x1f\x7f]*\Z')
# A path nginx reads as it is: absolute, no space, no character nginx gives a meaning ($ a variable, ; { } # quotes).
_NGINX_PATH_RE = re.compile(r'^/[^\s;{}\'"$#\\]*\Z')


class RuleSet(object):
    """The input rules of one role, in the order they are checked."""

    def __init__(self, role):
        self.role = role
        self.rules = []

    def rule(self, rule_id):
        """Decorator: register ``func(values, ctx)`` under ``rule_id``."""
        if any(existing == rule_id for existing, _func in self.rules):
            raise ValueError('rule %s is registered twice' % rule_id)

        def register(func):
            self.rules.append((rule_id, func))
            return func
        return register

    @property
    def ids(self):
        return [rule_id for rule_id, _func in self.rules]

    def check(self, values, ctx=None):
        """Run every rule: a list of ``(rule_id, message)``."""
        values = dict(values or {})
        ctx = dict(ctx or {})
        found = []
        for rule_id, func in self.rules:
            try:
                result = func(values, ctx)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                result = ('%s role: the check %s could not read its inputs (%s: %s); check the types of the %s_* variables'
                          ' against the role\'s meta/argument_specs.yml.' % (self.role, rule_id, type(exc).__name__, exc, self.role))
            if result is None:
                continue
            if isinstance(result, str):
                result = [result]
            found.extend((rule_id, message) for message in result if message)
        return found

    def messages(self, values, ctx=None):
        return [message for _rule_id, message in self.check(values, ctx)]


def supported_system_rule(ruleset):
    """Register the rule every node role shares: the node's system is in the support table."""
    role = ruleset.role

    @ruleset.rule('%s-unsupported-system' % role)
    def _unsupported(values, ctx):
        platform = ctx.get('platform') or {}
        if platform.get('supported'):
            return None
        return ('Unsupported system %s: the %s role supports %s.'
                % (platform.get('name') or 'unknown', role, ', '.join(platform.get('supported_names') or [])))
    return _unsupported


def mirror_only_rule(ruleset, names):
    """Register ``<role>-outside-mirror``: with the fleet's mirror set (the platform's ``mirror_url``, from
    llmfleet_mirror_url), each URL among the variables ``names`` (a "sha256:<URL>" checksum included) must be on it:
    the nodes of a site without a route out reach nothing else."""
    role = ruleset.role

    @ruleset.rule('%s-outside-mirror' % role)
    def _outside(values, ctx):
        mirror = (ctx.get('platform') or {}).get('mirror_url') or ''
        if not mirror:
            return None
        found = []
        for name in names:
            value = values.get(name)
            for item in (value if isinstance(value, list) else [value]):
                url = item[7:] if isinstance(item, str) and item.startswith('sha256:') else item
                if is_http_url(url) and url != mirror and not url.startswith(mirror + '/'):
                    found.append('%s %s is not on the fleet\'s mirror %s (llmfleet_mirror_url): the nodes reach nothing else.'
                                 ' Mirror it (playbooks/mirror.yml) and give its URL there, or leave %s to its default.'
                                 % (name, show(item), show(mirror), name))
        return found
    return _outside


def python_path_rule(ruleset, name, default):
    """Register ``<role>-python-path``: the variable ``name`` is "" or null (``default``, the Python the role takes
    then) or the absolute path of a Python."""
    @ruleset.rule('%s-python-path' % ruleset.role)
    def _python_path(values, ctx):
        python = values.get(name)
        if python in ('', None) or is_absolute_path(python):
            return None
        return ('%s %s must be "" (%s) or the absolute path of a Python, such as /opt/python3.12/bin/python3.12.'
                % (name, show(python), default))
    return _python_path


def toolchain_plan_rule(ruleset, rule_id, key):
    """Register ``rule_id``: on a supported system, the problems of the plan ``ctx[key]`` (the build_toolchain filter,
    module_utils/_build_toolchain.py): the per-system table cannot give the gcc or Python asked for. Quiet before the
    plan is made and on a system the support table refuses (``<role>-unsupported-system`` speaks then)."""
    @ruleset.rule(rule_id)
    def _unavailable(values, ctx):
        plan = ctx.get(key)
        if not isinstance(plan, dict) or not (ctx.get('platform') or {}).get('supported'):
            return None
        return list(plan.get('problems') or [])
    return _unavailable


def show(value):
    """A value as it appears in a message (JSON: quotes and escapes show what was given)."""
    try:
        return json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def is_absolute_path(value):
    return isinstance(value, str) and _ABSOLUTE_PATH_RE.match(value) is not None and value != '/'


def is_nginx_path(value):
    return isinstance(value, str) and _NGINX_PATH_RE.match(value) is not None


def is_ip_address(value):
    try:
        ipaddress.ip_address(value if isinstance(value, str) else '')
    except ValueError:
        return False
    return True


def is_http_url(value):
    return isinstance(value, str) and _HTTP_URL_RE.match(value) is not None


def is_closed_address(value):
    """A loopback, private or link-local address (not 0.0.0.0 or ::): a listener only its own network reaches."""
    try:
        parsed = ipaddress.ip_address(value) if isinstance(value, str) else None
    except ValueError:
        return False
    return parsed is not None and not parsed.is_unspecified and (parsed.is_loopback or parsed.is_private or parsed.is_link_local)


def is_one_line(value):
    return isinstance(value, str) and _ONE_LINE_RE.match(value) is not None


def as_int(value):
    """An int from an int or a string of digits; None for anything else (bools included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.match(r'^-?[0-9]+\Z', value.strip()):
        return int(value.strip())
    return None


def as_number(value):
    """A float from a number or a numeric string; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).strip())
    except ValueError:
        return None


def max_unavailable(value, total):
    """How many of `total` workers a roll may take out at once, from a count (2, "2") or a percentage ("10%").

    A percentage is of `total`, rounded down; the result is at least 1 and, when there are two workers or more,
    at most total - 1 (never all of them). Raises ValueError with the reason for anything else."""
    text = value.strip() if isinstance(value, str) else value
    if isinstance(text, str) and text.endswith('%'):
        percent = as_int(text[:-1])
        if percent is None or not 0 < percent <= 100 or text[:-1].strip().startswith('-'):
            raise ValueError('a percentage must be a whole number from 1 to 100 followed by %')
        count = int(total) * percent // 100
    else:
        count = as_int(text)
        if count is None or count < 1:
            raise ValueError('it must be a count of 1 or more, or a percentage such as "10%"')
    count = max(1, count)
    return min(count, int(total) - 1) if int(total) > 1 else 1
