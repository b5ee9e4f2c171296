# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks a parser against the note beside a real capture (tests/unit/fixtures/<tool>/<id>.yml).

A note has the keys of tests/unit/conftest.py and either ``expected`` (a
subset of the parser's result: dicts may leave keys out, lists must match
in length and order) with optional ``counts`` (``{path: length}``) and
``picks`` (``{path: subset}``, a path being dotted keys and list indices
such as ``rows.17.in_place``), or ``error`` (ToolError/ParseError) with
``error_match`` (text in the message) and ``error_hint`` (the name of the
hint constant, looked up in the parser's module and then rocm_common).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.llmfleet.rocm.plugins.module_utils import _rocm_common as rocm_common
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError

ERRORS = {'ToolError': ToolError, 'ParseError': ParseError}
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'fixtures')


def capture(tool, name):
    """The text of a capture under tests/unit/fixtures/<tool>/."""
    with open(os.path.join(FIXTURES, tool, name)) as handle:
        return handle.read()


def resolve(value, path):
    """The part of ``value`` at a dotted path (``rows.17.in_place``)."""
    for part in str(path).split('.'):
        if isinstance(value, list):
            value = value[int(part)]
        else:
            assert isinstance(value, dict) and part in value, 'no %r in %r' % (part, value)
            value = value[part]
    return value


def assert_subset(expected, actual, where='result'):
    """Every key/item in ``expected`` must be in ``actual``; lists must match in length and order."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), '%s: expected a dict, got %r' % (where, actual)
        for key, value in expected.items():
            assert key in actual, '%s: missing key %r (keys: %s)' % (where, key, sorted(actual))
            assert_subset(value, actual[key], '%s.%s' % (where, key))
    elif isinstance(expected, list):
        assert isinstance(actual, list), '%s: expected a list, got %r' % (where, actual)
        assert len(expected) == len(actual), '%s: expected %d items, got %d: %r' % (
            where, len(expected), len(actual), actual)
        for index, (want, got) in enumerate(zip(expected, actual)):
            assert_subset(want, got, '%s[%d]' % (where, index))
    elif isinstance(expected, float) or isinstance(actual, float):
        assert actual is not None and not isinstance(actual, bool), '%s: expected %r, got %r' % (where, expected, actual)
        assert abs(float(actual) - float(expected)) < 1e-9, '%s: expected %r, got %r' % (where, expected, actual)
        assert isinstance(actual, float), '%s: expected a float, got %r' % (where, actual)
    else:
        assert expected == actual and type(expected) is type(actual), \
            '%s: expected %r, got %r' % (where, expected, actual)


def check_note(note, module):
    """Run the note's parser (a function of ``module``) on its capture and check what the note says."""
    parser = getattr(module, note['parser'])
    if 'error' in note:
        with pytest.raises(ERRORS[note['error']]) as excinfo:
            parser(note['text'])
        assert note['error_match'] in str(excinfo.value), str(excinfo.value)
        if 'error_hint' in note:
            hint = getattr(module, note['error_hint'], None) or getattr(rocm_common, note['error_hint'])
            assert excinfo.value.hint == hint
        return None
    result = parser(note['text'])
    assert_subset(note['expected'], result)
    for path, length in (note.get('counts') or {}).items():
        assert len(resolve(result, path)) == length, '%s: expected %d items, got %d' % (
            path, length, len(resolve(result, path)))
    for path, wanted in (note.get('picks') or {}).items():
        assert_subset(wanted, resolve(result, path), path)
    return result
