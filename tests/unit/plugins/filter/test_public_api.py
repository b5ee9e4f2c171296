# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The public filter API is what ``ansible-doc -l`` lists, each documented with examples; the roles' internal filters
(plugins/filter/__roles.py, and the input checks' entry point in __inputs.py) are not listed, still resolve by their
full name, and every filter the roles, playbooks and scenarios call exists."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import importlib
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..'))
FILTERS = os.path.join(ROOT, 'plugins', 'filter')
BIN = os.path.dirname(sys.executable)

# What a user of the collection calls in a playbook or an inventory.
PUBLIC = frozenset(['build_toolchain', 'cpu_list', 'engine_metrics', 'is_private_address', 'requests_in_flight',
                    'vllm_rocm_recipe'])


def _exports(path):
    module = importlib.import_module('ansible_collections.llmfleet.rocm.plugins.filter.' + os.path.basename(path)[:-3])
    return set(module.FilterModule().filters())


def _files(internal):
    return [path for path in sorted(glob.glob(os.path.join(FILTERS, '*.py')))
            if os.path.basename(path).startswith('__') == internal and os.path.basename(path) != '__init__.py']


def _ansible_doc(*args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, 'ansible.cfg'))
    run = subprocess.run([os.path.join(BIN, 'ansible-doc'), '-t', 'filter', '--json'] + list(args), cwd=ROOT, env=env,
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.fixture(scope='module')
def listed():
    return set(name.split('.', 2)[2] for name in _ansible_doc('-l', 'llmfleet.rocm'))


def test_ansible_doc_lists_exactly_the_public_filters(listed):
    public_files = set()
    for path in _files(internal=False):
        public_files |= _exports(path)
    assert listed == public_files == PUBLIC


def test_internal_filters_are_not_listed(listed):
    internal = set()
    for path in _files(internal=True):
        internal |= _exports(path)
    assert internal and not internal & listed
    assert not internal & PUBLIC


def test_every_public_filter_is_documented_with_examples():
    docs = _ansible_doc(*['llmfleet.rocm.' + name for name in sorted(PUBLIC)])
    for name in PUBLIC:
        entry = docs['llmfleet.rocm.' + name]
        assert entry['doc']['description'] and entry['doc']['short_description'], name
        assert 'llmfleet.rocm.%s' % name in entry['examples'], name
        assert entry['return'].get('_value', {}).get('description'), name
    # An internal filter keeps no page beside it.
    for path in _files(internal=True):
        for name in _exports(path):
            assert not os.path.exists(os.path.join(FILTERS, name + '.yml')), name


def test_internal_filters_resolve_by_their_full_name():
    """Ansible's own filter loader finds every internal filter (plugins/filter/__roles.py, __inputs.py)."""
    internal = set()
    for path in _files(internal=True):
        internal |= _exports(path)
    script = '\n'.join([
        'import json, sys',
        'from ansible.plugins.loader import filter_loader, init_plugin_loader',
        'init_plugin_loader([sys.argv[1]])',
        'print(json.dumps(dict((name, getattr(filter_loader.get("llmfleet.rocm." + name), "_original_path", None))'
        ' for name in sys.argv[2:])))',
    ])
    run = subprocess.run([sys.executable, '-c', script, os.path.join(ROOT, '.collections')] + sorted(internal),
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout.strip().splitlines()[-1])
    unresolved = sorted(name for name, path in found.items() if not path or not os.path.basename(path).startswith('__'))
    assert unresolved == []


def test_every_filter_the_collection_calls_exists():
    """A filter renamed or made internal leaves no call site behind (roles, playbooks, benchmarks, scenarios)."""
    exported = set()
    for path in _files(internal=False) + _files(internal=True):
        exported |= _exports(path)
    called = {}
    for top in ('roles', 'playbooks', 'benchmarks', 'molecule', 'tests', 'lab', 'inventories'):
        for directory, _dirs, names in os.walk(os.path.join(ROOT, top)):
            for name in names:
                if not name.endswith(('.yml', '.yaml', '.j2')):
                    continue
                path = os.path.join(directory, name)
                with open(path) as handle:
                    for found in re.findall(r'\|\s*llmfleet\.rocm\.([a-z0-9_]+)', handle.read()):
                        called.setdefault(found, os.path.relpath(path, ROOT))
    assert len(called) > 30
    assert dict((name, path) for name, path in called.items() if name not in exported) == {}
