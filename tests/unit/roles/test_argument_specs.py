# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every role documents every default: meta/argument_specs.yml and defaults/main.yml never drift."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
ROLES_DIR = os.path.join(ROOT, 'roles')
ROLES = sorted(name for name in os.listdir(ROLES_DIR) if os.path.isdir(os.path.join(ROLES_DIR, name))) if os.path.isdir(ROLES_DIR) else []


def load(path):
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return yaml.safe_load(handle)


def test_there_are_roles_to_check():
    assert ROLES, 'no role found under roles/'


@pytest.mark.parametrize('role', ROLES)
def test_spec_and_defaults_agree(role):
    defaults = load(os.path.join(ROLES_DIR, role, 'defaults', 'main.yml')) or {}
    spec = load(os.path.join(ROLES_DIR, role, 'meta', 'argument_specs.yml'))
    assert spec, '%s has no meta/argument_specs.yml' % role
    options = spec['argument_specs']['main'].get('options') or {}
    assert sorted(set(defaults) - set(options)) == [], 'defaults of %s missing from its argument spec' % role
    # A private role (leading underscore) documents the collection-wide llmfleet_* variables it reads.
    prefix = 'llmfleet_' if role.startswith('_') else role + '_'
    for name, option in options.items():
        assert name.startswith(prefix), '%s: option %s does not carry the role name' % (role, name)
        assert option.get('description'), '%s: option %s has no description' % (role, name)
        assert option.get('type'), '%s: option %s has no type' % (role, name)
        if name in defaults:
            assert option.get('default') == defaults[name], '%s: default of %s differs between spec and defaults/main.yml' % (role, name)
        else:
            assert option.get('required'), '%s: option %s has neither a default nor required: true' % (role, name)


@pytest.mark.parametrize('role', ROLES)
def test_role_has_readme_and_phases(role):
    assert os.path.exists(os.path.join(ROLES_DIR, role, 'README.md')), '%s has no README.md' % role
    assert os.path.exists(os.path.join(ROLES_DIR, role, 'tasks', 'main.yml')), '%s has no tasks/main.yml' % role
