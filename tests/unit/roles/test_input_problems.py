# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles' input-check entry point, ``llmfleet.rocm.input_problems('<role>', ...)`` (plugins/filter/__inputs.py),
as a run reaches it: by its FQCN through Ansible's plugin loader. Each role's name leads to that role's rule set (the
rules themselves are tested in tests/unit/plugins/filter/test_<role>_inputs.py); an unknown name, or arguments the
role's checks do not take, is an error that names what is known; every role's tasks call it with a known role."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import re

import pytest

from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from role_files import ROOT, load_yaml  # the collection loader is installed by role_files

from ansible_collections.llmfleet.rocm.plugins.filter import __inputs  # noqa: E402

ROLES = ['benchmark', 'engine', 'engine_build', 'exporters', 'firewall', 'gateway', 'mirror', 'monitoring', 'preflight',
         'rdma', 'rocm', 'toolchain', 'tuning', 'validate', 'workers']
UNSUPPORTED = {'key': 'CentOS-9', 'name': 'CentOS 9', 'supported': False, 'supported_names': ['Debian 12'],
               'kernel_managed': True, 'mirror_url': ''}

# Role -> (changes to its defaults, the further arguments, a text only that role's rules say for them).
CALLS = {
    'benchmark': ({'benchmark_sweep': 'fastest'}, [[]], 'benchmark_sweep is "fastest"'),
    'engine_build': ({}, [[], [], {}], 'No GPU target to build for: engine_build_rocm_arch is empty'),
    'preflight': ({'preflight_min_kernel': 'latest'}, [UNSUPPORTED], 'preflight_min_kernel "latest"'),
}
for _role in ROLES:
    CALLS.setdefault(_role, ({}, [UNSUPPORTED], 'Unsupported system CentOS 9: the %s role supports Debian 12.' % _role))


def _render(expression, **variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expression))


def test_the_entry_point_knows_the_fifteen_roles():
    assert sorted(__inputs.CHECKS) == ROLES


@pytest.mark.parametrize('role', ROLES)
def test_each_role_is_reached_by_fqcn(role):
    changes, args, text = CALLS[role]
    values = dict(load_yaml('roles/%s/defaults/main.yml' % role), **changes)
    found = _render('{{ values | llmfleet.rocm.input_problems(role, *args) }}', values=values, role=role, args=args)
    assert text in ' '.join(found), found
    assert found == __inputs.rule_set(role)(values, *args)


def test_keyword_arguments_reach_the_role():
    values = load_yaml('roles/rocm/defaults/main.yml')
    checks = [{'item': {'uri': 'https://repo.radeon.com/rocm/apt/7.1.1', 'kind': 'rocm'}, 'status': 404}]
    found = _render("{{ values | llmfleet.rocm.input_problems('rocm', platform, release_checks=checks) }}",
                    values=values, platform=UNSUPPORTED, checks=checks)
    assert any(message.startswith('https://repo.radeon.com/rocm/apt/7.1.1 has no') for message in found), found


@pytest.mark.parametrize('role', ['nope', 'rocm_inputs', '', None, ['rocm']])
def test_an_unknown_role_names_the_known_ones(role):
    with pytest.raises(AnsibleError, match='no input checks for the role .*; the roles that have them: %s\\Z'
                       % re.escape(', '.join(ROLES))):
        _render('{{ {} | llmfleet.rocm.input_problems(role) }}', role=role)


def test_arguments_the_role_does_not_take_name_its_checks():
    with pytest.raises(AnsibleError, match=re.escape("input_problems('rocm'): the role's checks take rocm_input_problems("
                                                     "values, platform, release_checks=None, packages=None);")):
        _render("{{ {} | llmfleet.rocm.input_problems('rocm', {}, color='blue') }}")


def test_every_role_calls_it_with_a_known_role():
    called = set()
    for path in glob.glob(os.path.join(ROOT, 'roles', '*', 'tasks', '*.yml')):
        with open(path) as handle:
            text = handle.read()
        assert not re.search(r'llmfleet\.rocm\.[a-z_]+_input_problems\b', text), path
        for role in re.findall(r"llmfleet\.rocm\.input_problems\('([^']*)'", text):
            assert role in ROLES, '%s calls input_problems for %r' % (path, role)
            assert os.path.basename(os.path.dirname(os.path.dirname(path))) == role, path
            called.add(role)
    assert sorted(called) == ROLES
