# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each variable is documented once, in its role's argument spec: defaults/main.yml holds values, not prose.

The rule for a role's defaults/main.yml:
- its first line is ``---`` and its second the pointer ``# Documented in meta/argument_specs.yml: ansible-doc -t role
  llmfleet.rocm.<role>``;
- every other comment is a section heading of three full lines: a rule (``#`` and 20 or more dashes), one title line
  (``#``, a space, at most 80 characters, no sentence ending in a full stop), and a rule again;
- no comment follows a value on its line;
- every variable it sets has an entry in meta/argument_specs.yml whose description is one non-empty string or a list of
  non-empty strings (suboptions included).
A comment is found by the YAML scanner: a ``#`` at the start of a line or after a blank that is not inside a scalar
(so a ``#`` in a quoted string or a Jinja expression is no comment)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
ROLES_DIR = os.path.join(ROOT, 'roles')
ROLES = sorted(name for name in os.listdir(ROLES_DIR) if os.path.isdir(os.path.join(ROLES_DIR, name)))
POINTER = '# Documented in meta/argument_specs.yml: ansible-doc -t role llmfleet.rocm.%s'
RULE = re.compile(r'^# -{20,}$')
TITLE = re.compile(r'^# (?=\S)(?P<title>.{1,80})$')


def read(path):
    with open(path, encoding='utf-8') as handle:
        return handle.read()


def comments(text):
    """(line number, column, comment text to the end of the line) of every YAML comment of text."""
    scalar_spans = [(token.start_mark.index, token.end_mark.index)
                    for token in yaml.scan(text) if isinstance(token, yaml.ScalarToken)]
    found = []
    offset = 0
    for number, line in enumerate(text.splitlines(True)):
        for match in re.finditer(r'(?:^|(?<=\s))#', line):
            index = offset + match.start()
            if not any(start <= index < end for start, end in scalar_spans):
                found.append((number, match.start(), line[match.start():].rstrip('\n')))
                break
        offset += len(line)
    return found


def defaults_problems(role, text):
    """What in a role's defaults/main.yml text breaks the rule above ([] when nothing does)."""
    problems = []
    lines = text.splitlines()
    if lines[:2] != ['---', POINTER % role]:
        problems.append('the first two lines are not --- and the pointer %r' % (POINTER % role))
    found = comments(text)
    full_lines = {number for number, column, _comment in found if column == 0 or not lines[number][:column].strip()}
    for number, _column, comment in found:
        if number not in full_lines:
            problems.append('line %d: a comment after a value: %s' % (number + 1, comment))
    headings = set()
    for number in sorted(full_lines):
        if (RULE.match(lines[number]) and number + 2 in full_lines and number + 1 in full_lines
                and RULE.match(lines[number + 2]) and TITLE.match(lines[number + 1])
                and not lines[number + 1].rstrip().endswith('.')):
            headings.update((number, number + 1, number + 2))
    for number in sorted(full_lines - headings - {1}):
        problems.append('line %d: prose in defaults (document it in the argument spec): %s' % (number + 1, lines[number]))
    return problems


def description_problems(name, option):
    problems = []
    description = option.get('description')
    entries = description if isinstance(description, list) else [description]
    if not entries or not all(isinstance(entry, str) and entry.strip() for entry in entries):
        problems.append('%s has no description (or an empty entry in it)' % name)
    for sub_name, sub_option in (option.get('options') or {}).items():
        problems.extend(description_problems('%s.%s' % (name, sub_name), sub_option))
    return problems


@pytest.mark.parametrize('role', ROLES)
def test_defaults_hold_values_and_point_at_the_spec(role):
    path = os.path.join(ROLES_DIR, role, 'defaults', 'main.yml')
    assert os.path.exists(path), '%s has no defaults/main.yml' % role
    problems = defaults_problems(role, read(path))
    assert problems == [], '%s/defaults/main.yml:\n%s' % (role, '\n'.join(problems))


@pytest.mark.parametrize('role', ROLES)
def test_every_default_has_a_described_spec_entry(role):
    defaults = yaml.safe_load(read(os.path.join(ROLES_DIR, role, 'defaults', 'main.yml'))) or {}
    options = yaml.safe_load(read(os.path.join(ROLES_DIR, role, 'meta', 'argument_specs.yml')))['argument_specs']['main'].get('options') or {}
    assert defaults, '%s/defaults/main.yml sets no variable' % role
    problems = ['%s is not in the argument spec' % name for name in defaults if name not in options]
    for name in defaults:
        if name in options:
            problems.extend(description_problems(name, options[name]))
    assert problems == [], '%s: %s' % (role, '; '.join(problems))


GOOD = '''---
# Documented in meta/argument_specs.yml: ansible-doc -t role llmfleet.rocm.demo

# ------------------------------
# The upstream
# ------------------------------
demo_url: "http://example.org/#anchor"
demo_expr: "{{ x }} {# not a comment #}"
demo_list:
  - "# a string, not a comment"
'''


@pytest.mark.parametrize('text, expected', [
    (GOOD, []),
    (GOOD.replace('# Documented', '# Described'), ['the first two lines']),
    (GOOD.replace('demo_url:', '# The URL of the demo.\ndemo_url:'), ['prose in defaults']),
    (GOOD.replace('# The upstream', '# The upstream, which is where requests go.'), ['prose in defaults'] * 3),
    (GOOD.replace('# ------------------------------\ndemo_url', 'demo_url'), ['prose in defaults'] * 2),
    (GOOD.replace('demo_list:', 'demo_list:  # items'), ['a comment after a value']),
    (GOOD.replace('  - "# a', '  # a\n  - "# a'), ['prose in defaults']),
])
def test_the_defaults_rule_catches_prose(text, expected):
    problems = defaults_problems('demo', text)
    assert len(problems) == len(expected), problems
    for problem, words in zip(problems, expected):
        assert words in problem


@pytest.mark.parametrize('option, bad', [
    ({'description': 'Port.'}, False),
    ({'description': ['Port.', 'More.']}, False),
    ({}, True),
    ({'description': ''}, True),
    ({'description': ['Port.', '']}, True),
    ({'description': 'List.', 'options': {'port': {'description': []}}}, True),
])
def test_the_description_rule_catches_empty_entries(option, bad):
    assert bool(description_problems('demo_x', option)) is bad
