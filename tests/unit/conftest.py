# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared pytest wiring for the unit tests.

A test module that sets ``FIXTURE_TOOL = '<tool>'`` and has a test taking a
``note`` argument is run once per captured output under
``tests/unit/fixtures/<tool>/``: each ``<id>.yml`` note beside its capture
(``<id>.txt`` or ``<id>.json``). The note is passed as a dict with the YAML
keys plus ``id`` (the file stem), ``path`` and ``text`` (the capture).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import yaml

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures')
REQUIRED_KEYS = ('source', 'gpu', 'rocm_version', 'command', 'parser', 'notes')


def load_notes(tool):
    """Return the fixture notes of one tool, sorted by id, each with its capture text."""
    directory = os.path.join(FIXTURES, tool)
    notes = []
    for name in sorted(os.listdir(directory)):
        stem, ext = os.path.splitext(name)
        if ext != '.yml':
            continue
        with open(os.path.join(directory, name)) as handle:
            note = yaml.safe_load(handle)
        missing = [key for key in REQUIRED_KEYS if key not in note]
        if missing:
            raise ValueError('fixture note %s/%s lacks %s' % (tool, name, ', '.join(missing)))
        if 'expected' not in note and 'error' not in note:
            raise ValueError('fixture note %s/%s has neither expected nor error' % (tool, name))
        captures = [stem + ext2 for ext2 in ('.txt', '.json') if os.path.exists(os.path.join(directory, stem + ext2))]
        if len(captures) != 1:
            raise ValueError('fixture note %s/%s needs exactly one capture beside it, found %s' % (tool, name, captures))
        with open(os.path.join(directory, captures[0])) as handle:
            note['text'] = handle.read()
        note['id'] = stem
        note['path'] = os.path.join(directory, captures[0])
        notes.append(note)
    return notes


def pytest_generate_tests(metafunc):
    tool = getattr(metafunc.module, 'FIXTURE_TOOL', None)
    if tool and 'note' in metafunc.fixturenames:
        notes = load_notes(tool)
        metafunc.parametrize('note', notes, ids=[note['id'] for note in notes])
