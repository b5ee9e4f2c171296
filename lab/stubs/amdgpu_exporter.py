# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's stand-in of AMD's Device Metrics Exporter (package amdgpu-exporter, unit amd-metrics-exporter).

Serves ``/metrics`` at the ``ServerPort`` of /etc/metrics/config.json (default 5000) with the names, types and labels
of AMD's exporter (every metric a gauge; labels gpu_id, serial_number, card_model, hostname and the partition labels),
one set per GPU of the host's simulated profile (labhost.py, installed beside it: /etc/llmfleet-lab/gpu-profile.json).
Nothing serves while the simulated driver is not loaded, as with the real exporter, whose gpuagent needs the driver.

The lab's fault switch: a file ``/run/llmfleet-lab/faults/gpu<N>.json`` (written by ``labctl fault``) changes what GPU
N reports, e.g. ``{"ecc_uncorrect": 2}`` (uncorrectable ECC errors counted since the switch was set),
``{"junction_temperature": 108}`` (a thermal event), ``{"health": 0}``. Removing the file clears the fault, as a reset
of the counters would. Pure standard library, Python 3.6+.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import socket
import sys

# Installed beside this file by the stub package; the unit runs this file, so its directory is on sys.path.
import labhost

try:
    from http.server import BaseHTTPRequestHandler, HTTPServer
except ImportError:  # pragma: no cover - Python 2 is not a lab host
    BaseHTTPRequestHandler = HTTPServer = None

CONFIG_PATH = os.environ.get('LLMFLEET_LAB_EXPORTER_CONFIG', '/etc/metrics/config.json')
DEFAULT_PORT = 5000

# (name, help) of every metric the stand-in serves, in AMD's exporter's words.
METRICS = [
    ('gpu_nodes_total', 'Number of GPUs in the node'),
    ('gpu_health', 'Health of the GPU (0 = Unhealthy | 1 = Healthy)'),
    ('gpu_junction_temperature', 'Current junction/hotspot temperature in Celsius'),
    ('gpu_memory_temperature', 'Current memory temperature in Celsius'),
    ('gpu_package_power', 'Current socket power in Watts'),
    ('gpu_power_usage', 'GPU Power usage in Watts'),
    ('gpu_gfx_activity', 'Graphics engine usage in Percentage (0-100)'),
    ('gpu_umc_activity', 'Memory engine usage in Percentage (0-100)'),
    ('gpu_used_vram', 'Used VRAM memory of the GPU (in MB)'),
    ('gpu_total_vram', 'Total VRAM memory of the GPU (in MB)'),
    ('gpu_free_vram', 'Free VRAM memory of the GPU (in MB)'),
    ('gpu_ecc_correct_total', 'Total Correctable error count'),
    ('gpu_ecc_uncorrect_total', 'Total Uncorrectable error count'),
    ('gpu_violation_processor_hot_residency_percentage', 'process hot residency percentage violation counter'),
    ('gpu_violation_ppt_residency_percentage', 'package power tracking percentage violation counter'),
    ('gpu_violation_socket_thermal_residency_percentage', 'socket thermal percentage violation counter'),
    ('gpu_violation_vr_thermal_residency_percentage', 'voltage rail percentage violation counter'),
    ('gpu_violation_hbm_thermal_residency_percentage', 'HBM percentage violation counter'),
    ('pcie_speed', 'Current PCIe speed in GT/s'),
    ('pcie_max_speed', 'Maximum capable PCIe speed in GT/s'),
    ('pcie_bandwidth', 'Current PCIe bandwidth in Mb/s'),
    ('pcie_replay_count', 'Total number of PCIe replays'),
]
# What a fault file may set (labhost.FAULT_KEYS), and the metric it sets.
FAULT_KEYS = {'ecc_uncorrect': 'gpu_ecc_uncorrect_total', 'ecc_correct': 'gpu_ecc_correct_total',
              'junction_temperature': 'gpu_junction_temperature', 'memory_temperature': 'gpu_memory_temperature',
              'health': 'gpu_health', 'pcie_replays': 'pcie_replay_count',
              'thermal_residency': 'gpu_violation_socket_thermal_residency_percentage'}


def read_json(path, default):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError):
        return default


def server_port(config):
    port = config.get('ServerPort', DEFAULT_PORT) if isinstance(config, dict) else DEFAULT_PORT
    return port if isinstance(port, int) and 0 < port < 65536 else DEFAULT_PORT


def read_faults(faults_dir=None):
    """GPU index -> {metric: value} from the fault switch's files (unknown keys and bad values are ignored)."""
    return dict((index, dict((FAULT_KEYS[key], float(value)) for key, value in values.items()))
                for index, values in labhost.read_fault_files(faults_dir).items())


def gpu_readings(gpu):
    """metric -> value of one idle GPU (labhost's expanded GPU: its model's facts and the profile's link)."""
    used = 285
    return {
        'gpu_health': 1, 'gpu_junction_temperature': gpu['temp_c'] + 7, 'gpu_memory_temperature': gpu['temp_c'],
        'gpu_package_power': gpu['idle_power_w'], 'gpu_power_usage': gpu['idle_power_w'], 'gpu_gfx_activity': 0,
        'gpu_umc_activity': 0, 'gpu_used_vram': used, 'gpu_total_vram': gpu['vram_mb'], 'gpu_free_vram': gpu['vram_mb'] - used,
        'gpu_ecc_correct_total': 0, 'gpu_ecc_uncorrect_total': 0,
        'gpu_violation_processor_hot_residency_percentage': 0, 'gpu_violation_ppt_residency_percentage': 0,
        'gpu_violation_socket_thermal_residency_percentage': 0, 'gpu_violation_vr_thermal_residency_percentage': 0,
        'gpu_violation_hbm_thermal_residency_percentage': 0,
        'pcie_speed': labhost.link_of(gpu)[0], 'pcie_max_speed': labhost.PCIE_SPEEDS[gpu['pcie_gen']],
        'pcie_bandwidth': 0, 'pcie_replay_count': 0,
    }


def _number(value):
    return ('%d' % value) if float(value).is_integer() else repr(float(value))


def render(gpus, hostname, faults=None):
    """The /metrics page of the host's GPUs (labhost's expanded GPUs), with the faults applied."""
    faults = faults or {}
    lines = []
    for name, text in METRICS:
        lines.append('# HELP %s %s' % (name, text))
        lines.append('# TYPE %s gauge' % name)
        if name == 'gpu_nodes_total':
            lines.append('%s{hostname="%s"} %d' % (name, hostname, len(gpus)))
            continue
        for gpu in gpus:
            partitions = gpu.get('partitions') or ('N/A', 'N/A')
            labels = ('card_model="%s",gpu_compute_partition_type="%s",gpu_id="%d",gpu_memory_partition_type="%s",'
                      'gpu_partition_id="0",hostname="%s",serial_number="%s"'
                      % (gpu['market_name'].replace('AMD Instinct ', ''), partitions[1].lower(), gpu['index'],
                         partitions[0].lower(), hostname, gpu['serial']))
            value = faults.get(gpu['index'], {}).get(name, gpu_readings(gpu)[name])
            lines.append('%s{%s} %s' % (name, labels, _number(value)))
    return '\n'.join(lines) + '\n'


def page():
    """The page now, or None while the simulated driver is not loaded."""
    if labhost.driver_state() is None:
        return None
    _cpus, gpus = labhost.machine(labhost.load_profile())
    return render(gpus, socket.gethostname(), read_faults())


def main(argv):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            text = page() if self.path.split('?')[0] == '/metrics' else None
            if text is None:
                self.send_response(404 if self.path.split('?')[0] != '/metrics' else 503)
                self.end_headers()
                return
            body = text.encode()
            self.send_response(200)
            self.send_header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            return

    port = server_port(read_json(CONFIG_PATH, {}))
    server = HTTPServer(('', port), Handler)
    server.serve_forever()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
