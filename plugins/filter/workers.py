# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Public filters for a user's own worker tasks: ``cpu_list`` (CPU numbers as numactl and taskset take them) and
``is_private_address`` (an address a worker may listen on).

The workers role's plan (GPUs, ports, CPUs, commands of each worker) is the roles' internals:
plugins/plugin_utils/worker_plan.py, reached through plugins/filter/__roles.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

__all__ = ['FilterModule', 'cpu_list', 'is_private_address']


# The code is in plugins/plugin_utils/worker_plan.py, imported at the call, not when the file is loaded
# (plugins/filter/__roles.py says why).
def cpu_list(cpus):
    """CPU numbers -> the list notation numactl and taskset take ("0-3,8")."""
    from ansible_collections.llmfleet.rocm.plugins.plugin_utils import worker_plan
    return worker_plan.cpu_list(cpus)


def is_private_address(address):
    """True for loopback, private and link-local addresses: where workers may listen."""
    from ansible_collections.llmfleet.rocm.plugins.plugin_utils import worker_plan
    return worker_plan.is_private_address(address)


class FilterModule(object):
    """llmfleet.rocm's public worker filters."""

    def filters(self):
        return {'cpu_list': cpu_list, 'is_private_address': is_private_address}
