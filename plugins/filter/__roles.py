# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles' internal filters: not API, they may change or go in any release.

The roles and playbooks of this collection call these filters (``llmfleet.rocm.<name>``) to plan and render what they
write: workers and their commands, the rolling restart, the firewall's rules, Prometheus's targets, the mirror's
snapshot, the benchmark's shapes, the preflight's findings, values escaped for systemd. They are shaped by the roles'
variables and registered results, not by a user's playbook; their logic is in plugins/plugin_utils/, one file per
subject, unit-tested there.

Why the file name starts with ``__``: ``ansible-doc -l`` skips files of plugins/filter whose name starts with ``__``
(ansible-core's plugin listing), so these filters are not listed as the collection's API and carry no documentation,
while a fully qualified name (``llmfleet.rocm.worker_plan``) still resolves, because Ansible's filter loader imports
every file of the package. The public filters are the other files of plugins/filter, each with its documentation.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

# Ansible's filter loader imports every file of plugins/filter in each process that first compiles a template naming
# one of the collection's filters, and the controller forks a process per task and host; the collection loader compiles
# plugin_utils from source there (it keeps no bytecode). So a filter's module is imported when the filter is first
# called, and a task that names one filter does not import the code of all of them (the controller's main cost in a
# converged run, docs/measurements.md).
_PLUGIN_UTILS = 'ansible_collections.llmfleet.rocm.plugins.plugin_utils.'


def _on_call(module, name):
    """The function ``name`` of plugin_utils/<module>.py as a filter, imported at its first call."""
    def call(*args, **kwargs):
        return getattr(importlib.import_module(_PLUGIN_UTILS + module), name)(*args, **kwargs)
    call.__module__ = _PLUGIN_UTILS + module
    call.__name__ = call.__qualname__ = name
    return call


_FILTERS = {
    # The base role: the node's row of the support table and kind, and a role's knob that follows it.
    'node_platform': ('node_platform', 'node_platform'),
    'installed_packages': ('node_platform', 'installed_packages'),
    'platform_default': ('node_platform', 'platform_default'),
    # preflight
    'preflight_readings': ('preflight_findings', 'preflight_readings'),
    'preflight_findings': ('preflight_findings', 'preflight_findings'),
    'preflight_finding_lines': ('preflight_findings', 'preflight_finding_lines'),
    # rocm, toolchain, engine_build, validate
    'rocm_release': ('rocm_release', 'rocm_release'),
    'rocm_version_code': ('rocm_release', 'rocm_version_code'),
    'rocm_repositories': ('rocm_release', 'rocm_repositories'),
    'build_arch_list': ('build_plan', 'build_arch_list'),
    'build_arch_datacenter': ('build_plan', 'build_arch_datacenter'),
    'build_max_jobs': ('build_plan', 'build_max_jobs'),
    'build_plan': ('build_plan', 'build_plan'),
    'engine_build_sources': ('inputs.engine_build', 'engine_build_sources'),
    'engine_wheels_warnings': ('inputs.engine', 'engine_wheels_warnings'),
    'validate_build_problems': ('inputs.validate', 'validate_build_problems'),
    # workers
    'worker_plan': ('worker_plan', 'worker_plan'),
    'worker_commands': ('worker_plan', 'worker_commands'),
    'workers_multinode_plan': ('worker_plan', 'workers_multinode_plan'),
    'workers_ray_status': ('worker_plan', 'workers_ray_status'),
    'workers_expected_platform': ('worker_plan', 'workers_expected_platform'),
    'first_contact_verdict': ('worker_plan', 'first_contact_verdict'),
    'worker_restart_plan': ('rolling_restart', 'worker_restart_plan'),
    'systemd_exec_word': ('systemd_unit', 'systemd_exec_word'),
    'systemd_exec_line': ('systemd_unit', 'systemd_exec_line'),
    'systemd_environment': ('systemd_unit', 'systemd_environment'),
    'systemd_unit_read': ('systemd_unit', 'systemd_unit_read'),
    # the rolling restart (playbooks/tasks/roll.yml)
    'rolling_restart_batches': ('rolling_restart', 'rolling_restart_batches'),
    'rolling_restart_steps': ('rolling_restart', 'rolling_restart_steps'),
    # the node maintenance roll (playbooks/maintenance_roll.yml)
    'maintenance_batches': ('node_maintenance', 'maintenance_batches'),
    # gateway
    'gateway_router_urls': ('gateway_router', 'gateway_router_urls'),
    'gateway_router_changes': ('gateway_router', 'gateway_router_changes'),
    'gateway_router_workers': ('gateway_router', 'gateway_router_workers'),
    'gateway_server_keys': ('inputs.gateway', 'gateway_server_keys'),
    # firewall, monitoring
    'firewall_rules': ('firewall_rules', 'firewall_rules'),
    'monitoring_scrape_targets': ('prometheus_targets', 'monitoring_scrape_targets'),
    'monitoring_target_files': ('prometheus_targets', 'monitoring_target_files'),
    # mirror
    'mirror_fleet': ('mirror_plan', 'mirror_fleet'),
    'mirror_plan': ('mirror_plan', 'mirror_plan'),
    'sha256sums_files': ('mirror_plan', 'sha256sums_files'),
    'mirror_wheels': ('mirror_plan', 'mirror_wheels'),
    'mirror_manifest_repositories': ('mirror_plan', 'mirror_manifest_repositories'),
    # validate
    'validate_fleet_table': ('validate_fleet', 'validate_fleet_table'),
    'validate_fabric_plan': ('validate_fleet', 'validate_fabric_plan'),
    # benchmark
    'benchmark_nodes': ('benchmark', 'benchmark_nodes'),
    'benchmark_shapes': ('benchmark', 'benchmark_shapes'),
    'benchmark_gateway_drained': ('benchmark', 'benchmark_gateway_drained'),
    'benchmark_client_endpoint': ('benchmark', 'benchmark_client_endpoint'),
}


class FilterModule(object):
    """The roles' internal filters (not API)."""

    def filters(self):
        return dict((name, _on_call(module, function)) for name, (module, function) in _FILTERS.items())
