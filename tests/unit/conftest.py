# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared pytest wiring for the unit tests.

A test module that sets ``FIXTURE_TOOL = '<tool>'`` and has a test taking a
``note`` argument is run once per captured output under
``tests/unit/fixtures/<tool>/``: each ``<id>.yml`` note beside its capture
(``<id>.txt`` or ``<id>.json``). The note is passed as a dict with the YAML
keys plus ``id`` (the file stem), ``path`` and ``text`` (the capture).

Module tests use the ``node`` fixture: a fake node whose stand-in tools print
captured outputs and record the argv and locale they were started with.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import json
import os
import stat
import subprocess
import sys

import pytest
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


# The directory holding ansible_collections/, as the test run imports it.
COLLECTIONS = os.path.abspath(os.path.join(
    list(importlib.util.find_spec('ansible_collections.llmfleet.rocm').submodule_search_locations)[0], '..', '..', '..'))

STANDIN = '''#!%(python)s
import json, os, sys
with open(%(log)r, 'a') as log:
    log.write(json.dumps({'argv': sys.argv, 'LC_ALL': os.environ.get('LC_ALL'), 'LANG': os.environ.get('LANG')}) + '\\n')
answers = %(answers)r
key = ' '.join(sys.argv[1:])
if key not in answers:
    sys.stderr.write('stand-in has no answer for: %%s\\n' %% key)
    sys.exit(64)
path, rc, stream = answers[key]
with open(path) as handle:
    (sys.stdout if stream == 'out' else sys.stderr).write(handle.read())
sys.exit(rc)
'''


class Node(object):
    """A fake node: a bin directory of stand-in tools, a ROCm directory and a sysfs tree."""

    def __init__(self, root):
        self.root = str(root)
        self.bin = os.path.join(self.root, 'bin')
        self.rocm = os.path.join(self.root, 'opt-rocm')
        self.sysfs = os.path.join(self.root, 'sys')
        self.log = os.path.join(self.root, 'calls.log')
        for path in (self.bin, self.rocm, self.sysfs):
            os.makedirs(path)

    def tool(self, name, answers):
        """``answers`` maps the argument string to (fixture path relative to fixtures/, rc, 'out' or 'err')."""
        resolved = dict((key, (os.path.join(FIXTURES, value[0]), value[1], value[2])) for key, value in answers.items())
        path = os.path.join(self.bin, name)
        with open(path, 'w') as handle:
            handle.write(STANDIN % {'python': sys.executable, 'log': self.log, 'answers': resolved})
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)

    @staticmethod
    def write(path, text):
        """Write ``text`` to ``path``, creating its directories (sysfs and ROCm files of the fake node)."""
        directory = os.path.dirname(path)
        if not os.path.isdir(directory):
            os.makedirs(directory)
        with open(path, 'w') as handle:
            handle.write(text)

    def rocm_version(self, text):
        self.write(os.path.join(self.rocm, '.info', 'version'), text)

    def numa(self, address, node):
        self.write(os.path.join(self.sysfs, 'bus', 'pci', 'devices', address, 'numa_node'), '%d\n' % node)

    def calls(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as handle:
            return [json.loads(line) for line in handle]

    def run(self, module, **params):
        """Run ``llmfleet.rocm.<module>`` as Ansible would, with only the stand-ins on PATH and a German locale."""
        args = os.path.join(self.root, 'args.json')
        with open(args, 'w') as handle:
            json.dump({'ANSIBLE_MODULE_ARGS': params}, handle)
        env = dict(os.environ, PATH=self.bin + os.pathsep + '/usr/bin:/bin', PYTHONPATH=COLLECTIONS,
                   LC_ALL='de_DE.UTF-8', LANG='de_DE.UTF-8')
        argv = [sys.executable, '-m', 'ansible_collections.llmfleet.rocm.plugins.modules.' + module, args]
        proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
        assert 'Traceback' not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
        return json.loads(proc.stdout)


@pytest.fixture
def node(tmp_path):
    """A fake node for module tests: stand-in tools, a ROCm directory, a sysfs tree."""
    return Node(tmp_path)
