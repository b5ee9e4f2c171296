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

import inspect

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.benchmark import benchmark_input_problems
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs import (
    engine, engine_build, exporters, firewall, gateway, mirror, monitoring, preflight, rdma, rocm, toolchain, tuning,
    validate, workers)

# Role -> its rule set's entry: (values, *args, **kwargs) -> messages.
CHECKS = {
    'benchmark': benchmark_input_problems,
    'engine': engine.engine_input_problems,
    'engine_build': engine_build.engine_build_input_problems,
    'exporters': exporters.exporters_input_problems,
    'firewall': firewall.firewall_input_problems,
    'gateway': gateway.gateway_input_problems,
    'mirror': mirror.mirror_input_problems,
    'monitoring': monitoring.monitoring_input_problems,
    'preflight': preflight.preflight_input_problems,
    'rdma': rdma.rdma_input_problems,
    'rocm': rocm.rocm_input_problems,
    'toolchain': toolchain.toolchain_input_problems,
    'tuning': tuning.tuning_input_problems,
    'validate': validate.validate_input_problems,
    'workers': workers.workers_input_problems,
}


def input_problems(inputs, role, *args, **kwargs):
    """A role's values (a mapping of its ``<role>_*`` variables) and its further arguments -> the messages of the
    role's input rules, empty when they are fine."""
    check = CHECKS.get(role) if isinstance(role, str) else None
    if check is None:
        raise AnsibleFilterError('input_problems: no input checks for the role %r; the roles that have them: %s'
                                 % (role, ', '.join(sorted(CHECKS))))
    try:
        inspect.signature(check).bind(inputs, *args, **kwargs)
    except TypeError as exc:
        raise AnsibleFilterError("input_problems('%s'): the role's checks take %s%s; %s"
                                 % (role, check.__name__, inspect.signature(check), exc))
    return check(inputs, *args, **kwargs)


class FilterModule(object):
    def filters(self):
        return {'input_problems': input_problems}
