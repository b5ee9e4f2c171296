# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The modules of lab/stubs/ import each other without a circle (labhost at the bottom, the tools above it), and
every stub package, and the rccl-tests stand-in's binaries, carry the stub modules their modules import."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import glob
import os

import pytest

# lab/ (conftest.py)
from labctl import buildstage, packages

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
STUBS = os.path.join(ROOT, 'lab', 'stubs')
MODULES = sorted(os.path.splitext(os.path.basename(path))[0] for path in glob.glob(os.path.join(STUBS, '*.py')))


def imported(path, top_level_only=False):
    """The names of lab/stubs/ modules that the file imports (anywhere in it, or at module level only)."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    nodes = tree.body if top_level_only else ast.walk(tree)
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(alias.name.split('.')[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split('.')[0])
    return sorted(names & set(MODULES))


def import_graph(top_level_only=False):
    return dict((name, imported(os.path.join(STUBS, name + '.py'), top_level_only)) for name in MODULES)


def circles(graph):
    """Every import circle of the graph, each as the path that closes it (a -> b -> a)."""
    found = []

    def visit(name, path):
        for target in graph.get(name, ()):
            if target in path:
                found.append(path[path.index(target):] + [target])
            else:
                visit(target, path + [target])

    for name in sorted(graph):
        visit(name, [name])
    return found


def closure(graph, name):
    seen = set([name])
    todo = [name]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_the_circle_finder_finds_circles():
    assert circles({'a': ['b'], 'b': ['c'], 'c': ['a']})
    assert circles({'a': ['a']}) == [['a', 'a']]
    assert circles({'a': ['b', 'c'], 'b': ['c'], 'c': []}) == []


def test_the_stubs_import_each_other_without_a_circle():
    assert set(['labhost', 'gpusim', 'validsim', 'amdgpu_exporter']) <= set(MODULES)
    graph = import_graph()
    assert circles(graph) == [], 'import circles in lab/stubs/: %s' % circles(graph)


def test_labhost_is_the_base():
    graph = import_graph()
    assert graph['labhost'] == [], 'labhost imports no other stub module'
    assert all('labhost' in targets for name, targets in graph.items() if name != 'labhost')


def _stub_copies(files):
    return set(os.path.splitext(os.path.basename(entry['copy']))[0] for entry in files
               if entry.get('copy', '').startswith('stubs/') and entry['copy'].endswith('.py'))


@pytest.mark.parametrize('kind', sorted(packages.package_layouts()['layouts']))
def test_each_package_carries_what_its_stub_modules_import(kind):
    graph = import_graph(top_level_only=True)
    copies = _stub_copies(packages.package_layouts()['layouts'][kind].get('files', []))
    for name in copies:
        assert closure(graph, name) <= copies, '%s: %s needs %s beside it' % (kind, name, sorted(closure(graph, name) - copies))


def test_the_validation_tools_packages_carry_validsim():
    # gpusim.main imports validsim only for rvs, all_reduce_perf and TransferBench.
    layouts = packages.package_layouts()['layouts']
    for kind in ('tool:rvs', 'tool:transferbench'):
        assert 'validsim' in _stub_copies(layouts[kind]['files'])


def test_the_rccl_tests_stand_in_bundles_what_it_imports():
    graph = import_graph()
    bundled = set(os.path.splitext(os.path.basename(rel))[0] for rel, _src in buildstage.EXTRA_FILES['rccl-tests'])
    assert closure(graph, 'gpusim') <= bundled
