# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each file a role writes is written by one task, named once: every template under roles/<role>/templates/ is the src
of exactly one template task of its role (or of one copy of its rendering by the template lookup), no template task
names a template that does not exist, and no two tasks of a role (template or copy) write the same destination. A loop
over a literal list counts once per item."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import glob
import os
import re

import pytest

from role_files import ROOT, load_yaml

WRITERS = ('template', 'copy')
LOOKUP = re.compile(r"lookup\('(?:ansible\.builtin\.)?template', '([^']+)'")
ROLES = sorted(os.path.basename(path) for path in glob.glob(os.path.join(ROOT, 'roles', '*')) if os.path.isdir(path))


def _tasks(items):
    for task in items or []:
        yield task
        for key in ('block', 'rescue', 'always'):
            yield from _tasks(task.get(key))


def _module(task):
    for name in WRITERS:
        for key in (name, 'ansible.builtin.' + name):
            if key in task:
                return name, task[key]
    return None, None


def _expand(value, task):
    """The value once per item of the task's literal loop; the value itself when it does not use the item or when the
    loop is an expression (then '{{ item }}' in a src stands for any name)."""
    loop = task.get('loop', task.get('with_items'))
    if '{{ item }}' not in value or not isinstance(loop, list):
        return [value]
    return [value.replace('{{ item }}', str(item)) for item in loop]


def writes(role):
    """[(module, src or None, dest, task file, task name)] of every template and copy task of the role."""
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, 'roles', role, 'tasks', '*.yml'))):
        relative = os.path.relpath(path, ROOT)
        for task in _tasks(load_yaml(relative) or []):
            module, args = _module(task)
            if module is None or not isinstance(args, dict):
                continue
            dests = _expand(str(args['dest']), task)
            srcs = _expand(str(args['src']), task) if 'src' in args else [None] * len(dests)
            for src, dest in zip(srcs, dests):
                found.append((module, src, dest, relative, task.get('name')))
            # A copy whose content is a template rendered by the template lookup writes that template.
            for src in LOOKUP.findall(str(args.get('content', ''))):
                found.append(('template', src, None, relative, task.get('name')))
    return found


def test_the_roles_write_files():
    """The walk finds the roles' writers at all (a change of layout must not leave the checks below empty)."""
    assert len([item for role in ROLES for item in writes(role) if item[0] == 'template']) >= 25


@pytest.mark.parametrize('role', ROLES)
def test_each_template_is_written_by_one_task(role):
    directory = os.path.join(ROOT, 'roles', role, 'templates')
    templates = sorted(os.path.relpath(path, directory) for path in glob.glob(os.path.join(directory, '**', '*.j2'), recursive=True))
    by_template = dict((template, []) for template in templates)
    for module, src, _dest, relative, name in writes(role):
        if module != 'template':
            continue
        matched = fnmatch.filter(templates, src.replace('{{ item }}', '*'))
        assert matched, '%s: %r names a template that does not exist: %s' % (relative, name, src)
        for template in matched:
            by_template[template].append('%s: %s' % (relative, name))
    assert dict((template, tasks) for template, tasks in by_template.items() if len(tasks) != 1) == {}


@pytest.mark.parametrize('role', ROLES)
def test_no_two_tasks_write_one_destination(role):
    by_dest = {}
    for _module_name, _src, dest, relative, name in writes(role):
        if dest is None:
            continue
        by_dest.setdefault(dest, []).append('%s: %s' % (relative, name))
    assert dict((dest, tasks) for dest, tasks in by_dest.items() if len(tasks) > 1) == {}
