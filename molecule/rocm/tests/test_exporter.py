# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""AMD's Device Metrics Exporter (the lab's stub from the stub repository) on the upgraded 2 x MI300X node: both
units running again after the driver upgrade, AMD's metrics per GPU, the lab's fault switch seen at the next scrape
and cleared, and the node exporter's ROCm release."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

testinfra_hosts = ['podman://llmfleet-molecule-%s' % os.environ.get('MOLECULE_SCENARIO_NAME', 'rocm')]

FAULT = '/run/llmfleet-lab/faults/gpu1.json'


def metric(host, name):
    """gpu_id -> value of one metric, as the exporter serves it now."""
    page = host.check_output('curl -fsS http://127.0.0.1:5000/metrics')
    return dict((match.group(1), float(match.group(2)))
                for match in re.finditer(r'^%s\{[^}]*gpu_id="(\d+)"[^}]*\} (\S+)$' % re.escape(name), page, re.M))


def test_the_exporter_runs_from_the_pinned_repository(host):
    assert host.package('amdgpu-exporter').is_installed
    assert 'device-metrics-exporter/apt/1.4.0' in host.file('/etc/apt/sources.list.d/llmfleet-amdgpu-exporter.sources').content_string
    for unit in ('gpuagent', 'amd-metrics-exporter'):
        assert host.service(unit).is_running and host.service(unit).is_enabled
    assert json.loads(host.file('/etc/metrics/config.json').content_string) == {'ServerPort': 5000, 'GPUConfig': {}}


def test_amd_s_metrics_per_gpu(host):
    assert metric(host, 'gpu_health') == {'0': 1.0, '1': 1.0}
    assert set(metric(host, 'gpu_junction_temperature')) == {'0', '1'}


def test_a_fault_is_seen_and_cleared(host):
    host.check_output("mkdir -p /run/llmfleet-lab/faults && echo '{\"ecc_uncorrect\": 2}' > %s" % FAULT)
    try:
        assert metric(host, 'gpu_ecc_uncorrect_total') == {'0': 0.0, '1': 2.0}
    finally:
        host.check_output('rm -f %s' % FAULT)
    assert metric(host, 'gpu_ecc_uncorrect_total') == {'0': 0.0, '1': 0.0}


def test_the_node_exporter_has_the_rocm_release(host):
    address = host.check_output("ip -4 -o addr show scope global | awk '{print $4}' | cut -d/ -f1 | head -1")
    page = host.check_output('curl -fsS http://%s:9100/metrics' % address)
    assert 'llmfleet_rocm_info{rocm_version="7.1.1"} 1' in page
    assert re.search(r'^node_reboot_required [01]$', page, re.M)
