# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validation workloads of the llmfleet.rocm lab: rvs, all_reduce_perf and TransferBench (no GPU code runs here).

The stub packages rocm-validation-suite and transferbench, and the lab's rccl-tests build, install this module
beside gpusim.py (whose ``main`` hands these tools here) and labhost.py (the simulated host it reads: the GPUs
of /etc/llmfleet-lab/gpu-profile.json, the driver, the links). It prints, in the layouts the collection's
parsers read (proven against the captures in tests/unit/fixtures), what a validation run on the profile's
GPUs reports, its figures taken from those captures and scaled per GPU model:

- ``rvs -c <conf>`` for the modules gst, iet, pebb, pbqt, peqt and babel: the actions of the configuration
  file (the stub package ships configurations under share/rocm-validation-suite/conf), their result lines and
  rvs 1.6's closing summary; pebb's bandwidth follows the PCIe link each GPU trained to (``pcie_link``);
- ``all_reduce_perf -b 8 -e 8G -f 2 -g N`` (rccl-tests). Under Open MPI's mpirun (``OMPI_COMM_WORLD_*`` in
  the environment) each process is G = ``-g`` ranks of the job (ranks rank*G.., local devices
  local_rank*G..); a job across hosts takes the two-node curve, scaled by the profile's
  ``fabric_busbw_scale``, one within a host by its ``rccl_busbw_scale``. The real program gathers every
  rank's ``#  Rank`` line to MPI rank 0 over MPI; the stand-in has none, so every process prints its own rank
  lines, and rank 0 waits a second after its own (while mpirun forwards the others') before its table;
- ``TransferBench a2a`` and ``TransferBench p2p``: the all-to-all and peer-to-peer matrices.

Only the Instinct GPUs of a profile (those with a PERF entry) take part. Pure standard library, Python 3.6+.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import socket
import sys
import time

from labhost import LabGpuError, link_of


# Per GPU model: the factor applied to the MI300X captures' bandwidths (rccl: all-reduce bus bandwidth,
# tb: TransferBench), the gst GFLOPS as a multiple of the action's target, babel: the factor on the MI355X
# babel capture (HBM bandwidth from AMD's data sheets over MI355X's 8 TB/s). MI300X's figures are the
# captures'; the other models have no capture in tests/unit/fixtures, so their factors are set to sit
# above the figures of their acceptance page in plugins/module_utils/_validate_thresholds.py
# (not a measurement).
PERF = {
    # rccl/tb: mi300x-8gpu-acceptance-doc / mi300x-{a2a,p2p}-acceptance-doc as captured;
    # gst: 1687129 GFLOPS against the 1215000 target in mi300x-gst-single-acceptance.txt.
    'MI300X': {'rccl': 1.0, 'tb': 1.0, 'gst': 1687129.0 / 1215000.0, 'babel': 5.3 / 8.0},
    # MI250 page: 125 GB/s all-reduce peak at 8 GiB, 30/55 GB/s p2p, 800 GB/s a2a aggregate.
    'MI250X': {'rccl': 0.45, 'tb': 2.0, 'gst': 1687129.0 / 1215000.0, 'babel': 1.6 / 8.0},
    # MI210 page: 30 GB/s average all-reduce bus bandwidth with -g 4, 80 GB/s a2a per GPU.
    'MI210': {'rccl': 0.35, 'tb': 1.0, 'gst': 1687129.0 / 1215000.0, 'babel': 1.6 / 8.0},
}

OS_NAME = 'Debian GNU/Linux 12 (bookworm)'
RVS_VERSION = '1.6.75'  # the rvs of the mi355x-*-rvs1.6.75 captures
TRANSFERBENCH_VERSION = '1.62.00'  # the banner of mi350x-example-cfg-rocm7.0.txt


class UsageError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# the GPUs the validation tools run on

def tested_gpus(state):
    return [gpu for gpu in state.gpus if gpu['model'] in PERF]


def _model(gpus):
    return PERF[gpus[0]['model']] if gpus else PERF['MI300X']


# ---------------------------------------------------------------------------------------------
# rvs

RVS_USAGE = 'rvs (llmfleet lab stub): only "rvs -c <conf> [-d <level>]" is simulated\n'
_CONF_ACTION_RE = re.compile(r'^-\s*name:\s*(?P<name>\S+)\s*$')
_CONF_KEY_RE = re.compile(r'^\s+(?P<key>module|target_stress|target_power|host_to_device|device_to_host):\s*'
                          r'(?P<value>\S+)\s*$')


def read_rvs_conf(text):
    """The actions of an rvs configuration: [{name, module, target_stress, ...}] (the keys the stub uses)."""
    actions = []
    for line in text.splitlines():
        match = _CONF_ACTION_RE.match(line)
        if match:
            actions.append({'name': match.group('name')})
            continue
        match = _CONF_KEY_RE.match(line)
        if match and actions:
            actions[-1][match.group('key')] = match.group('value')
    return actions


class _Clock:
    """rvs's "[RESULT] [<seconds since boot>]" stamps, rising a little per line."""

    def __init__(self, start=302349.492047):
        self.now = start

    def line(self, message, step=0.001053):
        self.now += step
        return '[RESULT] [%.6f] %s' % (self.now, message)


def _tag(gpu):
    return '[GPU:: %d - %5d - %s]' % (gpu['node'], gpu['guid'], gpu['pci'])


def _rvs_gst(clock, action, gpus, perf):
    target = float(action.get('target_stress', 0))
    lines = []
    for gpu in gpus:
        reached = target * perf['gst']
        lines.append(clock.line('[%s] [GPU:: %d] Start of GPU ramp up' % (action['name'], gpu['guid'])))
        lines.append(clock.line('[%s] [GPU:: %d] GFLOPS %d' % (action['name'], gpu['guid'], reached * 0.91), 5.3))
        lines.append(clock.line('[%s] [GPU:: %d] End of GPU ramp up' % (action['name'], gpu['guid']), 1.0))
        lines.append(clock.line('[%s] [GPU:: %d] GFLOPS %d Target GFLOPS: %d met: %s'
                                % (action['name'], gpu['guid'], reached, target, 'TRUE' if reached >= target else 'FALSE'), 15.0))
    return lines, True


def _rvs_iet(clock, action, gpus, perf):
    target = float(action.get('target_power', 0))
    lines = []
    for gpu in gpus:
        lines.append(clock.line('[%s] [GPU:: %d] Power(W) %.6f' % (action['name'], gpu['guid'], gpu['idle_power_w'])))
    for gpu in gpus:
        lines.append(clock.line('[%s] [GPU:: %d] Power(W) %.6f' % (action['name'], gpu['guid'], target - 1), 5.0))
    for gpu in gpus:
        lines.append(clock.line('[%s] [GPU:: %d] pass: TRUE' % (action['name'], gpu['guid']), 60.0))
    return lines, True


def _numa_distance(cpu, gpu):
    """rvs pebb's CPU-GPU distance: 20 on the GPU's own socket, 52 across (mi355x-pebb-single-rvs1.6.75.txt)."""
    return 20 if cpu['numa_node'] == gpu['numa_node'] else 52


def _rvs_pebb(clock, action, gpus, cpus):
    """Host-device bandwidth: 57.678 GB/s near and 54.034 far at Gen5 x16 (mi355x-pebb-single-rvs1.6.75.txt),
    in proportion to the link the GPU trained to."""
    h2d = action.get('host_to_device', 'true') == 'true'
    d2h = action.get('device_to_host', 'false') == 'true'
    lines = []
    for gpu in gpus:
        for cpu in cpus:
            distance = _numa_distance(cpu, gpu)
            lines.append(clock.line('[%s] pcie-bandwidth [CPU:: %d] %s distance:%d PCIe:%d'
                                    % (action['name'], cpu['numa_node'], _tag(gpu), distance, distance)))
    total = len(gpus) * len(cpus)
    index = 0
    for gpu in gpus:
        speed, width = link_of(gpu)
        for cpu in cpus:
            index += 1
            near = cpu['numa_node'] == gpu['numa_node']
            gbps = (57.678 if near else 54.034) * speed * width / (32.0 * 16)
            lines.append(clock.line('[%s] pcie-bandwidth [%2d/%d] [CPU:: %d] %s h2d::%s d2h::%s %.3f GBps duration: '
                                    '%.6f secs' % (action['name'], index, total, cpu['numa_node'], _tag(gpu),
                                                   'true' if h2d else 'false', 'true' if d2h else 'false', gbps,
                                                   12.884901888 / gbps), 30.0 if index == 1 else 0.000011))
    return lines, True


def _rvs_pbqt(clock, action, gpus, perf):
    """GPU pairs: xGMI peers at distance 15 (mi355x-pbqt-single-rvs1.6.75.txt); the bandwidth is the
    model's TransferBench GPU->GPU figure, TransferBench being pbqt's transfer engine."""
    lines = []
    for src in gpus:
        for dst in gpus:
            if src is not dst:
                lines.append(clock.line('[%s] p2p %s %s peers:true distance:15 xGMI:15'
                                        % (action['name'], _tag(src), _tag(dst)), 0.000002))
    total = len(gpus) * (len(gpus) - 1)
    index = 0
    for src in gpus:
        for dst in gpus:
            if src is not dst:
                index += 1
                gbps = 48.44 * perf['tb']
                lines.append(clock.line('[%s] p2p-bandwidth[%d/%d] %s %s bidirectional: false %.3f GBps duration: '
                                        '%.6f secs' % (action['name'], index, total, _tag(src), _tag(dst), gbps,
                                                       13.958643712 / gbps), 30.0 if index == 1 else 0.001053))
    return lines, True


def _rvs_peqt(clock, action, gpus, perf):
    return [clock.line('[%s] peqt true' % action['name'], 0.3)], True


# The functions' MB/s on one MI355X GCD, from mi355x-babel-rvs1.6.75.txt (MBytes/sec, Max, Min, Avg).
BABEL = (('Read', 7090191.900, 7090191.900, 6638148.386, 7019091.298),
         ('Write', 6645670.223, 6645670.223, 5618652.956, 6106108.680),
         ('Copy', 6224488.986, 6224488.986, 6037686.546, 6150313.849),
         ('Mul', 6238685.230, 6238685.230, 6056284.950, 6152982.512),
         ('Add', 6008723.700, 6008723.700, 5485279.487, 5919255.626),
         ('Triad', 6031416.066, 6031416.066, 5879289.313, 5950804.403),
         ('Dot', 5844542.436, 5844542.436, 4912455.933, 5806381.609))


def _rvs_babel(clock, action, gpus, perf):
    lines = []
    rule = '-' * 81
    for gpu in gpus:
        lines.append(clock.line('[%s] [GPU:: %d] Starting the Babel memory stress test' % (action['name'], gpu['guid'])))
        lines.append(clock.line('Running kernels 2000 times, Precision: double', 0.00007))
        lines.append(clock.line('Array size: 6920.6 MB (=6.9 GB), Total size: 20761.8 MB (=20.8 GB)', 0.00004))
        lines += ['', clock.line('', 35.0), rule,
                  '%-12s%-12s%-15s%-15s%-15s%s' % ('GPU Id', 'Function', 'MBytes/sec', 'Max MB/s', 'Min MB/s', 'Avg MB/s'),
                  rule]
        for row in BABEL:
            figures = ['%-15.3f' % (value * perf['babel']) for value in row[1:]]
            lines.append(('%-12d%-12s%s' % (gpu['guid'], row[0], ''.join(figures))).rstrip())
        lines.append(rule)
    return lines, True


RVS_MODULES = {'gst': _rvs_gst, 'iet': _rvs_iet, 'pbqt': _rvs_pbqt, 'peqt': _rvs_peqt, 'babel': _rvs_babel}


def _box(left, right=None, width=69):
    if right is None:
        return '| %s |' % left.center(width - 2)
    return '| %-32s | %-32s |' % (left, right)


def _rvs_summary(state, gpus, verdicts):
    edge, rule = '+' + '=' * 69 + '+', '+' + '-' * 69 + '+'
    lines = ['', edge, _box('ROCm Validation Suite (RVS) Summary'), edge, _box('System Overview'), rule,
             _box('Operating System', OS_NAME), _box('RVS version', RVS_VERSION),
             _box('ROCm version', state.rocm_version or 'N/A'), _box('amdgpu version', state.driver or 'N/A'),
             _box('GPUs', str(len(gpus))), rule]
    for first in range(0, len(gpus), 2):
        pair = gpus[first:first + 2]
        names = ['%s - %d' % (gpu['market_name'], gpu['guid']) for gpu in pair]
        where = ['%d - %d - %s' % (gpu['index'], gpu['node'], gpu['pci']) for gpu in pair]
        lines += [_box(names[0], names[1] if len(names) > 1 else ''),
                  _box(where[0], where[1] if len(where) > 1 else ''), rule]
    lines[-1] = edge
    lines += ['| %-32s | %-14s | %-15s |' % ('Action Name', 'Module', 'Result'), edge]
    for name, module, passed in verdicts:
        lines += ['| %-32s | %-14s | %-15s |' % (name, module.upper(), 'PASS' if passed else 'FAIL'), rule]
    return lines


def render_rvs(state, args):
    """Return (stdout, stderr, rc) of ``rvs -c <conf> [-d <level>]``."""
    conf = None
    args = list(args)
    while args:
        arg = args.pop(0)
        if arg == '-c' and args:
            conf = args.pop(0)
        elif arg == '-d' and args:
            args.pop(0)
        else:
            return '', RVS_USAGE, 2
    if conf is None:
        return '', RVS_USAGE, 2
    try:
        with open(conf) as handle:
            actions = read_rvs_conf(handle.read())
    except (IOError, OSError):
        return 'RVS-ERROR: could not open the configuration file %s\n' % conf, '', 1
    if state.driver is None or state.kfd_error:
        return 'RVS-ERROR: no supported GPUs available (amdgpu is not loaded or /dev/kfd cannot be opened)\n', '', 1
    gpus = tested_gpus(state)
    perf = _model(gpus)
    clock = _Clock()
    lines, verdicts = [], []
    for action in actions:
        module = action.get('module', '')
        lines.append(clock.line('Action name :%s' % action['name']))
        lines.append(clock.line('Module name :%s' % module))
        if module == 'pebb':
            body, passed = _rvs_pebb(clock, action, gpus, state.cpus)
        elif module in RVS_MODULES:
            body, passed = RVS_MODULES[module](clock, action, gpus, perf)
        else:
            return '\n'.join(lines) + '\nRVS-ERROR: module %s is not simulated by the llmfleet lab stub\n' % module, '', 1
        lines += body
        verdicts.append((action['name'], module, passed))
    lines += _rvs_summary(state, gpus, verdicts)
    return '\n'.join(lines) + '\n', '', 0


# ---------------------------------------------------------------------------------------------
# rccl-tests all_reduce_perf

# (size, out-of-place time us, busbw GB/s, in-place time us, busbw GB/s) of the 8 x MI300X run in
# tests/unit/fixtures/rccl_tests/mi300x-8gpu-acceptance-doc.txt.
ALL_REDUCE_MI300X = (
    (8, 34.13, 0.0, 39.55, 0.0), (16, 38.73, 0.0, 38.92, 0.0), (32, 39.48, 0.0, 39.23, 0.0),
    (64, 39.18, 0.0, 54.09, 0.0), (128, 39.36, 0.01, 182.4, 0.0), (256, 41.24, 0.01, 44.39, 0.01),
    (512, 44.23, 0.02, 44.43, 0.02), (1024, 45.84, 0.04, 58.3, 0.03), (2048, 44.6, 0.08, 44.59, 0.08),
    (4096, 45.01, 0.16, 45.16, 0.16), (8192, 43.72, 0.33, 43.06, 0.33), (16384, 55.7, 0.51, 43.96, 0.65),
    (32768, 44.39, 1.29, 43.22, 1.33), (65536, 44.35, 2.59, 57.02, 2.01), (131072, 47.47, 4.83, 41.03, 5.59),
    (262144, 59.18, 7.75, 41.75, 10.99), (524288, 57.96, 15.83, 51.85, 17.7), (1048576, 58.47, 31.38, 58.94, 31.13),
    (2097152, 59.86, 61.31, 61.09, 60.08), (4194304, 90.74, 80.89, 90.5, 81.1), (8388608, 110.8, 132.49, 116.3, 126.23),
    (16777216, 169.7, 173.02, 171.7, 170.99), (33554432, 257.6, 227.99, 271.7, 216.14),
    (67108864, 428.1, 274.33, 437.3, 268.53), (134217728, 801.8, 292.96, 807.4, 290.9),
    (268435456, 1546.5, 303.76, 1554.9, 302.12), (536870912, 3038.1, 309.25, 3046.8, 308.36),
    (1073741824, 6003.9, 312.97, 6003.6, 312.99), (2147483648, 11938.0, 314.8, 11960.0, 314.22),
    (4294967296, 23849.0, 315.15, 23881.0, 314.74), (8589934592, 47488.0, 316.55, 47594.0, 315.84),
)
# The same columns of the 16 x MI210 run over two nodes (8 GPUs each, one rank per GPU, the fabric between
# them) in tests/unit/fixtures/rccl_tests/mi210-16rank-2node-rocm6.3.3.txt: the curve of a job across hosts.
# That capture stops at 4 GiB (-e 4G); its bus bandwidth is flat at about 15.2 GB/s from 128 MiB on, so the
# 8 GiB row is not measured: it repeats the 4 GiB bus bandwidths with twice the time.
ALL_REDUCE_CROSS_NODE = (
    (8, 322.0, 0.0, 319.7, 0.0), (16, 317.2, 0.0, 316.3, 0.0), (32, 304.0, 0.0, 298.0, 0.0),
    (64, 296.4, 0.0, 296.7, 0.0), (128, 296.0, 0.0, 295.8, 0.0), (256, 297.0, 0.0, 296.8, 0.0),
    (512, 298.0, 0.0, 297.4, 0.0), (1024, 296.8, 0.01, 297.5, 0.01), (2048, 298.1, 0.01, 298.4, 0.01),
    (4096, 299.7, 0.03, 300.5, 0.03), (8192, 303.3, 0.05, 301.4, 0.05), (16384, 308.0, 0.10, 307.7, 0.10),
    (32768, 312.2, 0.20, 312.1, 0.20), (65536, 350.8, 0.35, 347.7, 0.35), (131072, 541.5, 0.45, 535.4, 0.46),
    (262144, 695.1, 0.71, 687.0, 0.72), (524288, 701.2, 1.40, 700.4, 1.40), (1048576, 773.6, 2.54, 771.7, 2.55),
    (2097152, 794.8, 4.95, 790.1, 4.98), (4194304, 839.3, 9.37, 841.7, 9.34), (8388608, 1144.7, 13.74, 1143.3, 13.76),
    (16777216, 2023.3, 15.55, 2031.1, 15.49), (33554432, 3919.0, 16.05, 3919.0, 16.05),
    (67108864, 7940.6, 15.85, 7947.8, 15.83), (134217728, 16116.0, 15.62, 16141.0, 15.59),
    (268435456, 32932.0, 15.28, 33017.0, 15.24), (536870912, 65708.0, 15.32, 65890.0, 15.28),
    (1073741824, 132239.0, 15.22, 132035.0, 15.25), (2147483648, 264227.0, 15.24, 263454.0, 15.28),
    (4294967296, 530867.0, 15.17, 530931.0, 15.17),
    (8589934592, 1061734.0, 15.17, 1061862.0, 15.17),  # extended, not captured (see above)
)
# Open MPI's environment of each process mpirun starts; how long MPI rank 0 waits after its own rank lines
# before its table (the other processes' rank lines, forwarded by mpirun, come meanwhile), and how long the
# other processes wait before their rank lines (so that rank 0's header comes first, as in the real output).
OMPI_ENV = ('OMPI_COMM_WORLD_RANK', 'OMPI_COMM_WORLD_SIZE', 'OMPI_COMM_WORLD_LOCAL_RANK', 'OMPI_COMM_WORLD_LOCAL_SIZE')
MPI_RANK_LINES_WAIT = 1.0
MPI_OTHER_RANKS_WAIT = 0.5
ALL_REDUCE_TABLE_START = '#\n#%s%s' % (' ' * 62, 'out-of-place')
ALL_REDUCE_USAGE = ('all_reduce_perf (llmfleet lab stub): only -b <size> -e <size> -f <factor> -g <gpus> '
                    '[-c 0|1] are simulated\n')


def _bytes(text):
    match = re.match(r'^(\d+)([KMG]?)$', text.upper())
    if not match:
        raise UsageError(text)
    return int(match.group(1)) << {'': 0, 'K': 10, 'M': 20, 'G': 30}[match.group(2)]


def _all_reduce_part(size, time_us, busbw, ranks, scale):
    """time, algbw and busbw of one run, scaled; algbw = busbw * n / (2 (n - 1)) as rccl-tests counts it."""
    if ranks < 2:
        algbw = size / (time_us * 1e3)
        return time_us, algbw, 0.0
    busbw *= scale
    algbw = busbw * ranks / (2.0 * (ranks - 1))
    time = size / (algbw * 1e3) if algbw > 0.05 else time_us
    return time, size / (time * 1e3), busbw


def mpi_job(environ=None):
    """This process's place in an Open MPI job: {rank, size, local_rank, local_size} from mpirun's
    OMPI_COMM_WORLD_* variables (the local ones default to the world's), or a single process without them."""
    environ = os.environ if environ is None else environ
    rank_var, size_var, local_rank_var, local_size_var = OMPI_ENV
    try:
        rank, size = int(environ[rank_var]), int(environ[size_var])
    except (KeyError, ValueError):
        return {'rank': 0, 'size': 1, 'local_rank': 0, 'local_size': 1}
    try:
        local_rank, local_size = int(environ.get(local_rank_var, rank)), int(environ.get(local_size_var, size))
    except ValueError:
        local_rank, local_size = rank, size
    return {'rank': rank, 'size': size, 'local_rank': local_rank, 'local_size': local_size}


def render_all_reduce(state, args, host='localhost', pid=4242, environ=None):
    """Return (stdout, stderr, rc) of ``all_reduce_perf -b 8 -e 8G -f 2 -g N [-c 1]``.

    Under mpirun (``environ``, default os.environ, has OMPI_COMM_WORLD_*) this is one process's part: MPI
    rank 0 returns the whole report with only its own rank lines (all_reduce_under_mpirun splits it for the
    wait), any other rank its rank lines only. Without them: the single process of today, every GPU its own."""
    options = {'-b': '8', '-e': '32M', '-f': '2', '-g': '1', '-c': '1'}
    args = list(args)
    try:
        while args:
            arg = args.pop(0)
            if arg not in options or not args:
                raise UsageError(arg)
            options[arg] = args.pop(0)
        min_bytes, max_bytes = _bytes(options['-b']), _bytes(options['-e'])
        factor, ngpus, check = int(options['-f']), int(options['-g']), int(options['-c'])
    except (UsageError, ValueError):
        return '', ALL_REDUCE_USAGE, 2
    job = mpi_job(environ)
    ranks = job['size'] * ngpus  # every process drives -g GPUs
    first_device = job['local_rank'] * ngpus
    gpus = tested_gpus(state) if state.driver is not None and not state.kfd_error else []
    if job['local_size'] < job['size']:
        # The job spans hosts: the fabric's curve (fabric_busbw_scale makes it slow), not the GPU model's.
        curve, scale = ALL_REDUCE_CROSS_NODE, float(state.profile.get('fabric_busbw_scale', 1.0))
    else:
        curve, scale = ALL_REDUCE_MI300X, _model(gpus)['rccl'] * float(state.profile.get('rccl_busbw_scale', 1.0))
    head = ['# nThread 1 nGpus %d minBytes %d maxBytes %d step: %d(factor) warmup iters: 5 iters: 20 agg iters: 1 '
            'validation: %d graph: 0' % (ngpus, min_bytes, max_bytes, factor, check), '#',
            'rccl-tests: Version develop:ae3e635']
    if job['rank'] != 0:
        head = []  # only MPI rank 0 prints the header, the table and the summary
    if first_device + ngpus > len(gpus):
        # What rccl-tests prints when it asks HIP for a device that is not there (the process that does says so).
        return ''.join(line + '\n' for line in head) + '%s: Test HIP failure common.cu:1279 \'invalid device ordinal\'\n' \
            ' .. %s pid %d: Test failure common.cu:1158\n' % (host, host, pid), '', 3
    lines = head + (['# Using devices'] if head else [])
    for index in range(ngpus):
        device = first_device + index
        gpu = gpus[device]
        lines.append('#  Rank %2d Group  0 Pid %6d on %s device %2d [%s] %s'
                     % (job['rank'] * ngpus + index, pid, host, device, gpu['pci'][:-2], gpu['market_name']))
    if job['rank'] != 0:
        return '\n'.join(lines) + '\n', '', 0
    lines += ['#', '#%s%s' % (' ' * 62, 'out-of-place                       in-place          '),
              '#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   '
              'busbw #wrong',
              '#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  '
              '(GB/s)       ']
    figures = []
    for size, oop_time, oop_busbw, ip_time, ip_busbw in curve:
        if size < min_bytes or size > max_bytes:
            continue
        wrong = '0' if check else 'N/A'
        cells = []
        for time_us, busbw in ((oop_time, oop_busbw), (ip_time, ip_busbw)):
            took, algbw, bus = _all_reduce_part(size, time_us, busbw, ranks, scale)
            figures.append(bus)
            shown = ('%.2f' % took) if took < 1000 else ('%.1f' % took) if took < 10000 else '%d' % took
            cells.append('%8s %7.2f %7.2f %6s' % (shown, algbw, bus, wrong))
        lines.append('%12d  %12d     float     sum      -1 %s  %s' % (size, size // 4, cells[0], cells[1]))
    lines += ['# Errors with asterisks indicate errors that have exceeded the maximum threshold.',
              '# Out of bounds values : 0 OK',
              '# Avg bus bandwidth    : %g ' % round(sum(figures) / len(figures), 4) if figures else '# Avg bus bandwidth    : 0 ',
              '#']
    return '\n'.join(lines) + '\n', '', 0


def all_reduce_under_mpirun(result, environ=None, out=None, wait=None):
    """What ``render`` returns for all_reduce_perf: as rendered, but in a job of several processes, MPI rank 0's
    report up to its table goes to stdout now and, after MPI_RANK_LINES_WAIT seconds (the other processes' rank
    lines come meanwhile through mpirun), its table is returned for gpusim's main to print; the other processes
    return their rank lines after MPI_OTHER_RANKS_WAIT seconds (rank 0's header first).

    Not the real program's way (it gathers every rank line to rank 0 over MPI and prints them in rank order): the
    stand-in has no MPI. The collection's parser reads the rank lines wherever they come before the table."""
    text, err, rc = result
    job = mpi_job(environ)
    wait = time.sleep if wait is None else wait
    if rc != 0 or job['size'] < 2:
        return result
    if job['rank'] != 0:
        wait(MPI_OTHER_RANKS_WAIT)
        return result
    before, table = text.split(ALL_REDUCE_TABLE_START, 1)
    out = sys.stdout if out is None else out
    out.write(before)
    out.flush()
    wait(MPI_RANK_LINES_WAIT)
    return ALL_REDUCE_TABLE_START + table, err, rc


# ---------------------------------------------------------------------------------------------
# TransferBench a2a / p2p

# GPU -> GPU GB/s of the 8 x MI300X all-to-all in tests/unit/fixtures/transferbench/mi300x-a2a-acceptance-doc.txt
# (row: source, column: destination; None on the diagonal).
A2A_MI300X = (
    (None, 43.666, 36.624, 43.480, 36.677, 43.729, 36.871, 43.607),
    (37.858, None, 39.964, 37.983, 40.440, 38.410, 40.209, 38.156),
    (31.420, 34.604, None, 31.624, 34.795, 31.512, 34.678, 31.556),
    (30.883, 28.583, 30.972, None, 28.649, 30.883, 28.658, 30.918),
    (34.388, 35.432, 34.283, 35.309, None, 34.198, 35.236, 34.260),
    (29.553, 30.244, 29.432, 30.169, 29.448, None, 30.152, 29.392),
    (38.320, 40.466, 38.538, 40.823, 38.526, 40.436, None, 38.188),
    (42.405, 36.295, 42.521, 36.361, 42.635, 36.472, 42.553, None),
)
# From mi300x-p2p-acceptance-doc.txt: unidirectional CPU->CPU (near, far), CPU->GPU (near, far), GPU->CPU,
# GPU->GPU, GPU local; bidirectional per direction: CPU-GPU near (->, <-), far (->, <-), GPU->GPU, GPU<-GPU.
P2P_MI300X = {'cpu_cpu': (42.75, 38.85), 'cpu_gpu': (42.33, 41.53), 'gpu_cpu': 55.24, 'gpu_gpu': 48.44,
              'local': 1689.85, 'bi_near': (41.37, 54.66), 'bi_far': (39.96, 39.40), 'bi_gpu': (46.24, 46.22)}
TB_USAGE = 'TransferBench (llmfleet lab stub): only the presets "a2a" and "p2p" are simulated\n'


def _cell(value, width=10):
    return ('%*s' % (width, 'N/A')) if value is None else ('%*.3f' % (width, value))


def render_a2a(gpus, scale):
    if len(gpus) < 2:
        return None
    count = len(gpus)
    matrix = [[None if i == j else A2A_MI300X[i % 8][j % 8] * scale for j in range(count)] for i in range(count)]
    lines = ['Summary: [268435456 bytes per Transfer] [GFX:8] [1 Read(s) 1 Write(s)]', '=' * 75,
             'SRC\\DST ' + ''.join('GPU %02d     ' % j for j in range(count)) + '   STotal      Actual']
    stotals, actuals = [], []
    for i, row in enumerate(matrix):
        values = [value for value in row if value is not None]
        stotal, actual = sum(values), min(values) * len(values)
        stotals.append(stotal)
        actuals.append(actual)
        lines.append('GPU %02d ' % i + ''.join(_cell(value) for value in row) + '  %12.3f%12.3f' % (stotal, actual))
    columns = [sum(row[j] for row in matrix if row[j] is not None) for j in range(count)]
    aggregate = sum(stotals)
    lines += ['', 'RTotal ' + ''.join(_cell(value) for value in columns)
              + '  %12.3f%12.3f%12.3f' % (aggregate, min(actuals), max(actuals)), '',
              'Average   bandwidth (GPU Timed): %8.3f GB/s' % (aggregate / (count * (count - 1))),
              'Aggregate bandwidth (GPU Timed): %8.3f GB/s' % aggregate,
              'Aggregate bandwidth (CPU Timed): %8.3f GB/s' % (aggregate * 0.7044)]
    return lines


def _p2p_table(title, rows, devices, averages, kind):
    lines = [title, '     SRC\\DST ' + ''.join('%10s' % name for name in devices)]
    for label, values in rows:
        lines.append('%-13s' % label + ''.join(_cell(value, 10) for value in values))
    lines += ['%27s%10s%10s%10s' % ('CPU->CPU', 'CPU->GPU', 'GPU->CPU', 'GPU->GPU'),
              'Averages (During %s): ' % kind + ''.join(_cell(value, 10) for value in averages)]
    return lines


def _mean(values):
    values = [value for value in values if value is not None]
    return sum(values) / len(values) if values else None


def render_p2p(cpus, gpus, scale):
    p = P2P_MI300X
    devices = ['CPU %02d' % cpu['numa_node'] for cpu in cpus] + ['GPU %02d' % i for i in range(len(gpus))]

    def near(cpu, gpu):
        return cpu['numa_node'] == gpu['numa_node']

    uni, cc, cg, gc, gg = [], [], [], [], []
    for cpu in cpus:
        row = [p['cpu_cpu'][0] if other is cpu else p['cpu_cpu'][1] for other in cpus]
        row += [(p['cpu_gpu'][0] if near(cpu, gpu) else p['cpu_gpu'][1]) * scale for gpu in gpus]
        cc += row[:len(cpus)]
        cg += row[len(cpus):]
        uni.append(('  CPU %02d  ->' % cpu['numa_node'], row))
    for i, gpu in enumerate(gpus):
        row = [p['gpu_cpu'] * scale for _cpu in cpus]
        row += [p['local'] * scale if j == i else p['gpu_gpu'] * scale for j in range(len(gpus))]
        gc += row[:len(cpus)]
        gg += [value for j, value in enumerate(row[len(cpus):]) if j != i]
        uni.append(('  GPU %02d  ->' % i, row))
    lines = _p2p_table('Unidirectional copy peak bandwidth GB/s [Local read / Remote write] (GPU-Executor: GFX)', uni,
                       devices, [_mean(cc), _mean(cg), _mean(gc), _mean(gg)], 'UniDir')
    bi, cg, gc, gg = [], [], [], []
    for cpu in cpus:
        out = [None for _other in cpus] + [(p['bi_near'] if near(cpu, gpu) else p['bi_far'])[0] * scale for gpu in gpus]
        into = [None for _other in cpus] + [(p['bi_near'] if near(cpu, gpu) else p['bi_far'])[1] * scale for gpu in gpus]
        cg += out[len(cpus):]
        bi += [('  CPU %02d  ->' % cpu['numa_node'], out), ('  CPU %02d <-' % cpu['numa_node'], into),
               ('  CPU %02d <->' % cpu['numa_node'], [None if a is None else a + b for a, b in zip(out, into)])]
    for i, gpu in enumerate(gpus):
        out = [(p['bi_near'] if near(cpu, gpu) else p['bi_far'])[1] * scale for cpu in cpus]
        out += [None if j == i else p['bi_gpu'][0] * scale for j in range(len(gpus))]
        into = [(p['bi_near'] if near(cpu, gpu) else p['bi_far'])[0] * scale for cpu in cpus]
        into += [None if j == i else p['bi_gpu'][1] * scale for j in range(len(gpus))]
        gc += out[:len(cpus)]
        gg += out[len(cpus):]
        bi += [('  GPU %02d  ->' % i, out), ('  GPU %02d <-' % i, into),
               ('  GPU %02d <->' % i, [None if a is None else a + b for a, b in zip(out, into)])]
    lines += [''] + _p2p_table('Bidirectional copy peak bandwidth GB/s [Local read / Remote write] (GPU-Executor: GFX)',
                               bi, devices, [None, _mean(cg), _mean(gc), _mean(gg)], 'BiDir')
    return lines


def render_transferbench(state, args):
    """Return (stdout, stderr, rc) of ``TransferBench a2a`` / ``TransferBench p2p``."""
    if len(args) != 1 or args[0] not in ('a2a', 'p2p'):
        return '', TB_USAGE, 2
    head = ['TransferBench v%s' % TRANSFERBENCH_VERSION]
    if state.driver is None or state.kfd_error:
        return '\n'.join(head + ['[ERROR] No GPU devices detected (hipGetDeviceCount returned 0)']) + '\n', '', 1
    gpus = tested_gpus(state)
    scale = _model(gpus)['tb']
    if args[0] == 'a2a':
        body = render_a2a(gpus, scale)
        if body is None:
            return '\n'.join(head + ['[ERROR] a2a needs at least 2 GPUs, found %d' % len(gpus)]) + '\n', '', 1
    else:
        body = ['Bytes Per Direction 67108864'] + render_p2p(state.cpus, gpus, scale)
    return '\n'.join(head + body) + '\n', '', 0


# ---------------------------------------------------------------------------------------------
# entry point (gpusim's main hands these tools here)

TOOLS = {'rvs': render_rvs, 'all_reduce_perf': render_all_reduce, 'TransferBench': render_transferbench}


def render(tool, state, argv):
    """Return (stdout, stderr, rc) of one of the validation tools."""
    if tool == 'all_reduce_perf':
        return all_reduce_under_mpirun(render_all_reduce(state, argv, host=socket.gethostname(), pid=os.getpid()))
    if tool not in TOOLS:
        raise LabGpuError('unknown tool %s' % tool)
    return TOOLS[tool](state, argv)
