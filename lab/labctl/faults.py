# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's GPU fault switch (``labctl fault``): what the simulated GPU layer (lab/stubs/labhost.py; the
stand-in of AMD's Device Metrics Exporter and the stub amd-smi report it) says of one GPU of one lab host,
written into that host as /run/llmfleet-lab/faults/gpu<N>.json (gone at the host's next boot, as a counter
reset would be)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from .common import LabError, podman, say
from .hosts import HOST_PREFIX

FAULTS_DIR = '/run/llmfleet-lab/faults'
# Option -> key of the fault file (lab/stubs/labhost.py FAULT_KEYS), and the kind of value.
OPTIONS = (('ecc_uncorrect', int), ('ecc_correct', int), ('junction_temperature', float), ('memory_temperature', float),
           ('health', int), ('pcie_replays', int), ('thermal_residency', float))


def fault_document(args):
    """The fault file's data from the command's options (None: clear the fault)."""
    if args.clear:
        return None
    data = dict((key, getattr(args, key)) for key, _kind in OPTIONS if getattr(args, key) is not None)
    if not data:
        raise LabError('labctl fault: give a fault (%s) or --clear' % ', '.join('--' + key.replace('_', '-') for key, _k in OPTIONS))
    return data


def apply(host, gpu, data):
    """Write (or, with data None, remove) the fault of one GPU in one lab host."""
    if gpu < 0:
        raise LabError('labctl fault: --gpu %d is not a GPU index' % gpu)
    container = HOST_PREFIX + host
    path = '%s/gpu%d.json' % (FAULTS_DIR, gpu)
    if data is None:
        podman('exec', container, 'rm', '-f', path)
        say('    %s GPU %d: fault cleared' % (host, gpu))
        return
    podman('exec', '-i', container, 'sh', '-c', 'mkdir -p %s && cat > %s.tmp && mv %s.tmp %s' % (FAULTS_DIR, path, path, path),
           input_data=json.dumps(data, sort_keys=True).encode())
    say('    %s GPU %d: %s' % (host, gpu, json.dumps(data, sort_keys=True)))


def add_arguments(parser):
    parser.add_argument('host', help='a lab host of inventories/sandbox (gpu-node-1)')
    parser.add_argument('--gpu', type=int, required=True, help='the GPU index')
    parser.add_argument('--clear', action='store_true', help='remove the GPU\'s fault')
    for key, kind in OPTIONS:
        parser.add_argument('--' + key.replace('_', '-'), type=kind, help='report this %s' % key.replace('_', ' '))
