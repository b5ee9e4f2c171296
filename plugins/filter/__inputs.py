# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles' single input-check entry point, ``input_problems``: not API.

Every role checks its variables, and what it read of the node, before it changes anything::

    {{ _rocm_inputs | llmfleet.rocm.input_problems('rocm', llmfleet_platform, packages=...) }}

The filter hands the role's values and the further arguments to the named role's rule set
(plugins/plugin_utils/inputs/<role>.py, built on ``RuleSet`` of plugins/module_utils/_inputs.py; the benchmark's
lives beside its plan in plugins/plugin_utils/benchmark.py) and returns its messages, an empty list when all is well.
The arguments after the role's name are those of the rule set's ``<role>_input_problems`` function.

Not API: these filters serve the collection's own roles and may change in any release; a playbook should not call
them. The file name starts with ``__`` because ``ansible-doc -l`` skips such files (ansible/plugins/list.py), so the
listing shows the public filters only; the filters here still resolve by their FQCN.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import inspect

from ansible.errors import AnsibleFilterError

# Role -> where its rule set's entry is: (values, *args, **kwargs) -> messages. Imported when a role's check runs, not
# when the file is loaded: Ansible's filter loader loads this file in every process that compiles a template naming any
# of the collection's filters (plugins/filter/__roles.py says why that matters).
CHECKS = {
    'benchmark': ('benchmark', 'benchmark_input_problems'),
    'engine': ('inputs.engine', 'engine_input_problems'),
    'engine_build': ('inputs.engine_build', 'engine_build_input_problems'),
    'exporters': ('inputs.exporters', 'exporters_input_problems'),
    'firewall': ('inputs.firewall', 'firewall_input_problems'),
    'gateway': ('inputs.gateway', 'gateway_input_problems'),
    'mirror': ('inputs.mirror', 'mirror_input_problems'),
    'monitoring': ('inputs.monitoring', 'monitoring_input_problems'),
    'preflight': ('inputs.preflight', 'preflight_input_problems'),
    'rdma': ('inputs.rdma', 'rdma_input_problems'),
    'rocm': ('inputs.rocm', 'rocm_input_problems'),
    'toolchain': ('inputs.toolchain', 'toolchain_input_problems'),
    'tuning': ('inputs.tuning', 'tuning_input_problems'),
    'validate': ('inputs.validate', 'validate_input_problems'),
    'workers': ('inputs.workers', 'workers_input_problems'),
}


def rule_set(role):
    """The entry of a role's rule set, imported now."""
    module, function = CHECKS[role]
    return getattr(importlib.import_module('ansible_collections.llmfleet.rocm.plugins.plugin_utils.' + module), function)


def input_problems(inputs, role, *args, **kwargs):
    """A role's values (a mapping of its ``<role>_*`` variables) and its further arguments -> the messages of the
    role's input rules, empty when they are fine."""
    if not isinstance(role, str) or role not in CHECKS:
        raise AnsibleFilterError('input_problems: no input checks for the role %r; the roles that have them: %s'
                                 % (role, ', '.join(sorted(CHECKS))))
    check = rule_set(role)
    try:
        inspect.signature(check).bind(inputs, *args, **kwargs)
    except TypeError as exc:
        raise AnsibleFilterError("input_problems('%s'): the role's checks take %s%s; %s"
                                 % (role, check.__name__, inspect.signature(check), exc))
    return check(inputs, *args, **kwargs)


class FilterModule(object):
    def filters(self):
        return {'input_problems': input_problems}
