# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a healthy node of each GPU model must reach, with the source of every figure,
and a pure function that judges parsed results against it.

Everything here is pure: data and dicts in, findings out. No Ansible imports.

The figures are AMD's system acceptance criteria (ROCm/system-acceptance-docs,
read at commit 23e7312, published at instinct.docs.amd.com/projects/
system-acceptance). Each threshold carries ``source`` (where the figure is
written), ``measure`` (which number of the tool's report it is compared to,
because AMD's pages do not all compare the same one) and ``command`` (the
run the figure is for: a different run is not comparable and is reported as
such, not judged). Inventories may override any threshold; an override
without a ``source`` is reported as coming from the inventory.

``judge(results, model)`` returns one finding per check:
``{'level': 'ok'|'warning'|'error', 'id', 'gpu', 'figure', 'threshold',
'source', 'message'}``. ``message`` names the figure, the threshold, its
source and, for a failure, the likely fix.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

ACCEPTANCE = 'https://github.com/ROCm/system-acceptance-docs/blob/23e73127964d71bde4dca3f8390c78eea2943851/docs/'
SRC_MI300X = ACCEPTANCE + 'gpus/mi300x.md'
SRC_MI325X = ACCEPTANCE + 'gpus/mi325x.md'
SRC_MI250 = ACCEPTANCE + 'gpus/mi250.md'
SRC_MI210 = ACCEPTANCE + 'gpus/mi210.md'
SRC_MI350X = ACCEPTANCE + 'gpus/mi350x.md'
SRC_MI355X = ACCEPTANCE + 'gpus/mi355x.md'
SRC_RCCL = ACCEPTANCE + 'common/rccl-benchmarking.md'
SRC_RVS = ACCEPTANCE + 'common/system-validation.md'
POLICY = ('llmfleet.rocm policy (AMD publishes no figure): counters from "amd-smi metric --json" / '
          '"amd-smi bad-pages --json", see https://rocm.docs.amd.com/projects/amdsmi/en/latest/')

ALL_REDUCE_8G = 'all_reduce_perf -b 8 -e 8G -f 2 -g 8'
MESSAGE_8G = 8589934592

RVS_CONF = '/opt/rocm/share/rocm-validation-suite/conf'


def _rvs_rules(conf_dir=None, source=SRC_RVS, shared=()):
    """The rvs modules, what AMD's acceptance page counts as a pass for each, and the configuration it runs.

    ``conf_dir`` is the model's directory under RVS_CONF as the model's acceptance page names it (MI300X,
    MI325X, MI210); None where the page names none (MI350X, MI355X), then ``conf`` is None too. ``shared``
    names the configurations rvs does not have for the model: those runs take rvs's shared ones under RVS_CONF.
    """
    def conf(name, per_model=True):
        if per_model and name not in shared:
            return '%s/%s/%s' % (RVS_CONF, conf_dir, name) if conf_dir else None
        return '%s/%s' % (RVS_CONF, name)
    return {
        'gst': {'criterion': '"met: TRUE" for every GPU (target GFLOP/s of the GPU\'s gst_single.conf)',
                'conf': conf('gst_single.conf'), 'source': source},
        'iet': {'criterion': '"pass: TRUE" for every GPU and action', 'conf': conf('iet_single.conf'),
                'source': source},
        'pebb': {'criterion': 'every CPU-GPU distance and a non-zero bandwidth for every transfer',
                 'conf': conf('pebb_single.conf'), 'source': source},
        'pbqt': {'criterion': '"peers:true" lines and a non-zero throughput for every pair',
                 'conf': conf('pbqt_single.conf', per_model=False), 'source': source},
        'peqt': {'criterion': '"peqt true" for every action (run as root)',
                 'conf': conf('peqt_single.conf', per_model=False), 'source': source},
        # AMD's pages measure HBM bandwidth with BabelStream under mpiexec (babelstream_mbps); rvs's own babel module
        # runs from its shared babel.conf and is judged by its verdict.
        'babel': {'criterion': 'rvs reports PASS for the action', 'conf': conf('babel.conf', per_model=False),
                  'source': SRC_RVS},
    }


def _mi300_class(source, conf_dir, rccl_source=None, rvs_shared=()):
    """MI300X and MI325X share every figure of AMD's acceptance pages."""
    return {
        'pcie_link': {'speed_gts': 32.0, 'width': 16, 'source': source,
                      'command': 'sudo lspci -d 1002:<device> -vvv | grep -e DevSta -e LnkSta'},
        'rccl_all_reduce': {'value': 304.0, 'measure': 'in_place_busbw_at_message', 'message_bytes': MESSAGE_8G,
                            'ranks': 8, 'command': ALL_REDUCE_8G, 'source': rccl_source or source},
        'transferbench_a2a': {'value': 32.9, 'measure': 'average_gbs', 'command': 'TransferBench a2a',
                              'source': source},
        'transferbench_p2p_unidirectional': {'value': 33.9, 'measure': 'average_gpu_gpu',
                                             'command': 'TransferBench p2p', 'source': source},
        'transferbench_p2p_bidirectional': {'value': 43.9, 'measure': 'average_gpu_gpu',
                                            'command': 'TransferBench p2p', 'source': source},
        # Test -> Transfer -> GB/s; Test 5 is CPU-only and has no GPU figure.
        'transferbench_config': {'tests': {1: {0: 47.1}, 2: {0: 48.4}, 3: {0: 31.9, 1: 38.9}, 4: {0: 1264.0},
                                           6: {0: 48.6}},
                                 'command': 'TransferBench examples/example.cfg', 'source': source},
        'rvs': _rvs_rules(conf_dir, source, rvs_shared),
        # BabelStream (hip-stream -n 50 -s 268435456, one rank per GPU), MB/s; not the rvs babel module.
        'babelstream_mbps': {'copy': 4177285.0, 'mul': 4067069.0, 'add': 3920853.0, 'triad': 3885301.0,
                             'dot': 3660781.0, 'command': 'mpiexec -n 8 wrapper.sh', 'source': source},
    }


THRESHOLDS = {
    'MI300X': _mi300_class(SRC_MI300X, 'MI300X', rccl_source=SRC_MI300X),
    # rvs/conf/MI325X/ has no iet_single.conf (iet_stress.conf only, at ROCm/ROCmValidationSuite 21584e14).
    'MI325X': _mi300_class(SRC_MI325X, 'MI325X', rvs_shared=('iet_single.conf',)),
    'MI350X': {
        'pcie_link': {'speed_gts': 32.0, 'width': 16, 'source': SRC_MI350X,
                      'command': 'sudo lspci -d 1002:75a0 -vvv | grep -e DevSta -e LnkSta'},
        # The MI350X page says 304 GB/s; common/rccl-benchmarking.md says 350 GB/s for MI350X/MI355X.
        # The per-GPU page is taken; the other figure is in the finding's message.
        'rccl_all_reduce': {'value': 304.0, 'measure': 'in_place_busbw_at_message', 'message_bytes': MESSAGE_8G,
                            'ranks': 8, 'command': ALL_REDUCE_8G, 'source': SRC_MI350X,
                            'note': '%s asks 350 GB/s for MI350X/MI355X' % SRC_RCCL},
        # The MI350X/MI355X pages qualify with AGFHC, not rvs: the common rvs criteria apply, with no conf.
        'rvs': _rvs_rules(None),
    },
    'MI355X': {
        'pcie_link': {'speed_gts': 32.0, 'width': 16, 'source': SRC_MI355X,
                      'command': 'sudo lspci -d 1002:75a3 -vvv | grep -e DevSta -e LnkSta'},
        'rccl_all_reduce': {'value': 304.0, 'measure': 'in_place_busbw_at_message', 'message_bytes': MESSAGE_8G,
                            'ranks': 8, 'command': ALL_REDUCE_8G, 'source': SRC_MI355X,
                            'note': '%s asks 350 GB/s for MI350X/MI355X' % SRC_RCCL},
        # The MI350X/MI355X pages qualify with AGFHC, not rvs: the common rvs criteria apply, with no conf.
        'rvs': _rvs_rules(None),
    },
    # The MI250 page applies to MI250X too (same gfx90a OAM platform, 8 GCDs per 4-OAM node).
    'MI250X': {
        'pcie_link': {'speed_gts': 16.0, 'width': 16, 'source': SRC_MI250,
                      'command': 'sudo lspci -d 1002:740c -vvv | grep -e DevSta -e LnkSta'},
        'rccl_all_reduce': {'value': 125.0, 'measure': 'peak_busbw_at_message', 'message_bytes': MESSAGE_8G,
                            'ranks': 8, 'command': ALL_REDUCE_8G, 'source': SRC_MI250},
        'transferbench_a2a': {'value': 800.0, 'measure': 'aggregate_gpu_gbs', 'command': 'TransferBench a2a',
                              'source': SRC_MI250},
        'transferbench_p2p_unidirectional': {'value': 30.0, 'measure': 'average_gpu_gpu',
                                             'command': 'TransferBench p2p', 'source': SRC_MI250},
        'transferbench_p2p_bidirectional': {'value': 55.0, 'measure': 'average_gpu_gpu',
                                            'command': 'TransferBench p2p', 'source': SRC_MI250},
        # The page names conf/MI250/, which rvs does not have; its rvs/conf/MI250X/ holds iet_stress.conf only (at
        # ROCm/ROCmValidationSuite 21584e14): the MI250X runs take rvs's shared gst, iet and pebb configurations.
        'rvs': _rvs_rules(None, SRC_MI250, shared=('gst_single.conf', 'iet_single.conf', 'pebb_single.conf')),
        'babelstream_mbps': {'copy': 1200000.0, 'mul': 1200000.0, 'add': 1100000.0, 'triad': 1100000.0,
                             'dot': 1200000.0, 'command': 'mpiexec -n 8 wrapper.sh', 'source': SRC_MI250},
    },
    'MI210': {
        'pcie_link': {'speed_gts': 16.0, 'width': 16, 'source': SRC_MI210,
                      'command': 'sudo lspci -d 1002:740f -vvv | grep -e DevSta -e LnkSta'},
        # -g 4 on one socket's quad; -g 8 across sockets is 8 GB/s.
        'rccl_all_reduce': {'value': 30.0, 'measure': 'avg_busbw', 'ranks': 4,
                            'command': 'all_reduce_perf -b 8 -e 8G -f 2 -g 4', 'source': SRC_MI210,
                            'note': 'with -g 8 (dual socket, cross-socket ring) the page asks 8 GB/s'},
        'transferbench_a2a': {'value': 80.0, 'measure': 'min_gpu_stotal_gbs', 'command': 'TransferBench a2a',
                              'source': SRC_MI210},
        'transferbench_p2p_unidirectional': {'value': 35.0, 'measure': 'same_socket_pairs',
                                             'command': 'TransferBench p2p', 'source': SRC_MI210},
        'transferbench_p2p_bidirectional': {'value': 65.0, 'measure': 'same_socket_pairs_both',
                                            'command': 'TransferBench p2p', 'source': SRC_MI210},
        'rvs': _rvs_rules('MI210', SRC_MI210),
        'babelstream_mbps': {'copy': 1230000.0, 'mul': 1225000.0, 'add': 1115000.0, 'triad': 1115000.0,
                             'dot': 1170000.0, 'command': 'mpiexec -n 4 wrapper.sh', 'source': SRC_MI210},
    },
}

# Health limits: AMD's acceptance pages ask no ECC or page figure; these are the collection's rules.
HEALTH = {
    'ecc_uncorrectable': {'value': 0, 'level': 'error', 'source': POLICY},
    'ecc_deferred': {'value': 0, 'level': 'error', 'source': POLICY},
    'ecc_correctable': {'value': 0, 'level': 'warning', 'source': POLICY},
    'pages_pending': {'value': 0, 'level': 'error', 'source': POLICY},
    'pages_retired': {'value': 0, 'level': 'warning', 'source': POLICY},
    'throttled': {'level': 'warning', 'source': POLICY},
}

_MODEL_RE = re.compile(r'\bMI(?P<number>\d{3})(?P<suffix>[A-Z]?)\b', re.IGNORECASE)
_MODEL_ALIASES = {'MI250': 'MI250X', 'MI300': 'MI300X', 'MI308X': 'MI300X'}

FIX_LINK = ('reseat the GPU (or its riser/retimer cable), check that the BIOS sets the slot to its full PCIe speed, '
            'then replace the part if it stays degraded')
FIX_FABRIC = ('check that every xGMI/PCIe link is up ("amd-smi topology"), that the kernel has iommu=pt and ACS is '
              'off, that the firmware is the same on all GPUs, and that the GPUs are idle; reseat or replace a GPU '
              'whose links are slow')
FIX_CORRUPTION = ('data came back wrong: the node must not serve; check "amd-smi metric -e" and dmesg for RAS '
                  'errors, update the firmware, and replace the GPU if it repeats')
FIX_RVS = 'rerun the action alone; if it fails again report it to the system vendor (AMD: replace the GPU)'
FIX_ECC = ('read "amd-smi bad-pages" and dmesg; reboot to retire pending pages; a GPU that keeps reporting '
           'uncorrectable or deferred errors must be replaced')


def model_key(name):
    """The table key for a marketing name (``AMD Instinct MI300X`` -> ``MI300X``), or None when unknown."""
    if not name:
        return None
    match = _MODEL_RE.search(str(name))
    if not match:
        return None
    key = ('MI%s%s' % (match.group('number'), match.group('suffix'))).upper()
    key = _MODEL_ALIASES.get(key, key)
    return key if key in THRESHOLDS else None


def thresholds_for(model, overrides=None):
    """The thresholds of a model with an inventory's overrides merged in (a deep copy).

    ``overrides`` maps a threshold name to the keys to replace, for example
    ``{'rccl_all_reduce': {'value': 290.0, 'source': 'site run 2026-11'}}``;
    without ``source`` the override is marked as coming from the inventory.
    """
    key = model_key(model)
    table = copy.deepcopy(THRESHOLDS[key]) if key else {}
    for name, values in (overrides or {}).items():
        entry = table.setdefault(name, {})
        entry.update(copy.deepcopy(values))
        if 'source' not in values:
            entry['source'] = 'inventory override of %s' % name
    return table


def _finding(level, check_id, message, figure=None, threshold=None, source=None, gpu=None):
    return {'level': level, 'id': check_id, 'gpu': gpu, 'figure': figure, 'threshold': threshold,
            'source': source, 'message': message}


def _compare(check_id, figure, threshold, what, fix, gpu=None, level='error', note=None):
    value = threshold['value']
    source = threshold['source']
    extra = ' (%s)' % note if note else ''
    if figure is None:
        return _finding('warning', check_id, '%s: the report has no figure to compare with %s (%s)'
                        % (what, value, source), None, value, source, gpu)
    if figure >= value:
        return _finding('ok', check_id, '%s is %s, at least %s (%s)%s' % (what, figure, value, source, extra),
                        figure, value, source, gpu)
    return _finding(level, check_id, '%s is %s, below %s (%s)%s: %s' % (what, figure, value, source, extra, fix),
                    figure, value, source, gpu)


def _judge_rccl_wrong(result):
    """Wrong values fail the node whatever the run was: rccl-tests checked the data and it came back wrong."""
    check = 'rccl.all_reduce.wrong'
    wrong = result.get('wrong_total') or 0
    bounds = result.get('out_of_bounds') or 0
    if wrong or bounds:
        return _finding('error', check, 'the all-reduce returned %d wrong values (%d out of bounds): %s'
                        % (wrong, bounds, FIX_CORRUPTION), wrong, 0, 'rccl-tests validation')
    if result.get('header') and result['header'].get('validation') is False:
        return _finding('warning', check, 'the all-reduce ran without validation (-c 0): its data was not checked; '
                        'run it with -c 1', None, 0, 'rccl-tests validation')
    return _finding('ok', check, 'the all-reduce returned no wrong values', 0, 0, 'rccl-tests validation')


def _judge_rccl(result, threshold):
    findings = [_judge_rccl_wrong(result)]
    check = 'rccl.all_reduce.busbw'
    ranks = len(result.get('devices') or [])
    if threshold.get('ranks') and ranks and ranks != threshold['ranks']:
        message = 'the all-reduce ran on %d ranks; the threshold %s (%s) is for "%s": not judged' % (
            ranks, threshold['value'], threshold['source'], threshold['command'])
        findings.append(_finding('warning', check, message, None, threshold['value'], threshold['source']))
        return findings
    measure = threshold['measure']
    if measure == 'avg_busbw':
        figure = result.get('avg_busbw_gbs')
        what = 'all-reduce average bus bandwidth (GB/s)'
    else:
        size = threshold['message_bytes']
        rows = [row for row in result.get('rows') or [] if row['size'] == size]
        if not rows:
            message = 'the all-reduce did not reach %d bytes; the threshold %s (%s) is for "%s": run it with -e 8G' % (
                size, threshold['value'], threshold['source'], threshold['command'])
            findings.append(_finding('warning', check, message, None, threshold['value'], threshold['source']))
            return findings
        row = rows[-1]
        if measure == 'in_place_busbw_at_message':
            figure = row['in_place']['busbw_gbs'] if row.get('in_place') else None
            what = 'all-reduce in-place bus bandwidth at %d bytes (GB/s)' % size
        else:
            parts = [part['busbw_gbs'] for part in (row.get('out_of_place'), row.get('in_place')) if part]
            figure = max(parts) if parts else None
            what = 'all-reduce bus bandwidth at %d bytes (GB/s)' % size
    findings.append(_compare(check, figure, threshold, what, FIX_FABRIC, note=threshold.get('note')))
    return findings


def _judge_a2a(a2a, threshold):
    measure = threshold['measure']
    if measure == 'min_gpu_stotal_gbs':
        totals = dict((gpu, row['stotal_gbs']) for gpu, row in a2a['rows'].items())
        findings = []
        for gpu in sorted(totals):
            findings.append(_compare('transferbench.a2a', totals[gpu], threshold,
                                     'all-to-all total from %s (GB/s)' % gpu, FIX_FABRIC, gpu=gpu))
        return findings
    figure = a2a.get(measure)
    what = {'average_gbs': 'all-to-all average bandwidth (GB/s)',
            'aggregate_gpu_gbs': 'all-to-all aggregate bandwidth (GB/s)'}[measure]
    return [_compare('transferbench.a2a', figure, threshold, what, FIX_FABRIC)]


def _gpu_pairs(matrix, directions):
    return [link for link in matrix['links'] if link['src'].startswith('GPU') and link['dst'].startswith('GPU')
            and link['src'] != link['dst'] and link['direction'] in directions and link['gbs'] is not None]


def _judge_p2p(matrix, threshold, kind):
    check = 'transferbench.p2p.%s' % kind
    findings = []
    measure = threshold['measure']
    if measure == 'average_gpu_gpu':
        figure = (matrix.get('averages') or {}).get('gpu_gpu')
        findings.append(_compare(check, figure, threshold, 'p2p %s GPU->GPU average (GB/s)' % kind, FIX_FABRIC))
        for link in _gpu_pairs(matrix, ('out', 'in')):
            if link['gbs'] < threshold['value']:
                arrow = '->' if link['direction'] == 'out' else '<-'
                message = 'p2p %s %s %s %s is %s GB/s, below %s (%s, which judges the average): %s' % (
                    kind, link['src'], arrow, link['dst'], link['gbs'], threshold['value'], threshold['source'],
                    FIX_FABRIC)
                findings.append(_finding('warning', check + '.link', message, link['gbs'], threshold['value'],
                                         threshold['source'], link['src']))
        return findings
    # MI210: "per same-socket peer-pair"; the pairs are those the node's topology calls same-socket.
    directions = ('both',) if measure == 'same_socket_pairs_both' else ('out',)
    pairs = threshold.get('pairs')
    links = [link for link in _gpu_pairs(matrix, directions)
             if pairs is None or (link['src'], link['dst']) in pairs or [link['src'], link['dst']] in pairs]
    if pairs is None:
        message = ('p2p %s: the threshold %s (%s) is for same-socket GPU pairs and no "pairs" were given in the '
                   'inventory: not judged' % (kind, threshold['value'], threshold['source']))
        findings.append(_finding('warning', check, message, None, threshold['value'], threshold['source']))
        return findings
    for link in links:
        findings.append(_compare(check, link['gbs'], threshold, 'p2p %s %s-%s (GB/s)' % (kind, link['src'], link['dst']),
                                 FIX_FABRIC, gpu=link['src']))
    return findings


def _judge_config(tests, threshold):
    findings = []
    by_number = dict((test['test'], test) for test in tests)
    for number in sorted(threshold['tests']):
        test = by_number.get(number)
        for transfer_index in sorted(threshold['tests'][number]):
            value = threshold['tests'][number][transfer_index]
            entry = {'value': value, 'source': threshold['source']}
            check = 'transferbench.config.test%d.transfer%d' % (number, transfer_index)
            transfers = dict((transfer['transfer'], transfer) for transfer in (test or {}).get('transfers', []))
            transfer = transfers.get(transfer_index)
            if transfer is None:
                findings.append(_finding('warning', check, 'Test %d Transfer %02d is not in the report; the '
                                         'threshold %s (%s) is for "%s"' % (number, transfer_index, value,
                                                                            threshold['source'], threshold['command']),
                                         None, value, threshold['source']))
                continue
            findings.append(_compare(check, transfer['gbs'], entry, 'Test %d Transfer %02d (%s) in GB/s'
                                     % (number, transfer_index, transfer['path']), FIX_FABRIC))
    return findings


def _judge_rvs(result, table):
    findings = []
    criteria = table.get('rvs', {})
    for action in result.get('actions', []):
        module = action['module']
        rule = criteria.get(module, {'criterion': 'rvs reports PASS', 'source': 'rvs'})
        check = 'rvs.%s.%s' % (module, action['action'])
        detail = ''
        if module == 'gst':
            missed = ['GPU %d: %s of %s GFLOPS' % (gpu['gpu_id'], gpu['gflops'], gpu['target_gflops'])
                      for gpu in action['gpus'] if gpu.get('met') is False]
            detail = '; '.join(missed)
        elif module == 'iet':
            detail = '; '.join('GPU %d reached %s W' % (gpu['gpu_id'], gpu['max_power_w'])
                               for gpu in action['gpus'] if gpu.get('passed') is False)
        elif module in ('pebb', 'pbqt'):
            detail = '; '.join('transfer %d/%d at 0 GBps' % (transfer['index'], transfer['of'])
                               for transfer in action['transfers'] if transfer['gbps'] <= 0)
        if action['passed'] is True:
            message = 'rvs %s "%s" passed (%s; %s)' % (module, action['action'], rule['criterion'], rule['source'])
            findings.append(_finding('ok', check, message, 'PASS', rule['criterion'], rule['source']))
        elif action['passed'] is False:
            findings.append(_finding('error', check, 'rvs %s "%s" failed%s (expected %s; %s): %s'
                                     % (module, action['action'], ': ' + detail if detail else '',
                                        rule['criterion'], rule['source'], FIX_RVS),
                                     'FAIL', rule['criterion'], rule['source']))
        else:
            findings.append(_finding('warning', check, 'rvs %s "%s" printed no verdict (expected %s; %s): rerun it '
                                     'and keep the whole log' % (module, action['action'], rule['criterion'],
                                                                 rule['source']),
                                     None, rule['criterion'], rule['source']))
    for line in result.get('errors', []):
        findings.append(_finding('error', 'rvs.error', 'rvs printed "%s": %s' % (line, FIX_RVS), line, None, 'rvs'))
    return findings


def _judge_pcie(links, threshold):
    findings = []
    for link in links:
        device = link.get('device') or link.get('pci_address')
        speed = link.get('speed_gts')
        width = link.get('width')
        figure = '%s GT/s x%s' % (speed, width)
        wanted = '%s GT/s x%s' % (threshold['speed_gts'], threshold['width'])
        check = 'pcie.link'
        if speed is None or width is None:
            findings.append(_finding('warning', check, 'GPU %s: no PCIe link speed/width to compare with %s (%s)'
                                     % (device, wanted, threshold['source']), None, wanted, threshold['source'], device))
        elif speed >= threshold['speed_gts'] and width >= threshold['width']:
            findings.append(_finding('ok', check, 'GPU %s link is %s, as %s asks' % (device, figure, threshold['source']),
                                     figure, wanted, threshold['source'], device))
        else:
            findings.append(_finding('error', check, 'GPU %s link is %s, expected %s (%s): %s'
                                     % (device, figure, wanted, threshold['source'], FIX_LINK),
                                     figure, wanted, threshold['source'], device))
    return findings


def _judge_health(metric, bad_pages, health):
    findings = []
    for gpu in (metric or {}).get('gpus', []):
        index = gpu['gpu']
        ecc = gpu.get('ecc') or {}
        for key, rule_name in (('uncorrectable', 'ecc_uncorrectable'), ('deferred', 'ecc_deferred'),
                               ('correctable', 'ecc_correctable')):
            rule = health[rule_name]
            count = ecc.get(key)
            check = 'health.%s' % rule_name
            if count is None:
                continue
            if count > rule['value']:
                findings.append(_finding(rule['level'], check, 'GPU %d has %d %s ECC errors (limit %d; %s): %s'
                                         % (index, count, key, rule['value'], rule['source'], FIX_ECC),
                                         count, rule['value'], rule['source'], index))
            else:
                findings.append(_finding('ok', check, 'GPU %d has no %s ECC errors' % (index, key), count,
                                         rule['value'], rule['source'], index))
        power = gpu.get('power') or {}
        violations = [name for name, active in sorted((gpu.get('violations') or {}).items()) if active]
        if power.get('throttled') or violations:
            rule = health['throttled']
            reason = ', '.join(violations) if violations else power.get('throttle_status')
            findings.append(_finding(rule['level'], 'health.throttled', 'GPU %d is throttled (%s; %s): check cooling, '
                                     'the power cap ("amd-smi static --limit") and the BMC\'s power settings'
                                     % (index, reason, rule['source']), reason, None, rule['source'], index))
    for gpu in (bad_pages or {}).get('gpus', []):
        index = gpu['gpu']
        for key, rule_name in (('pending', 'pages_pending'), ('retired', 'pages_retired')):
            rule = health[rule_name]
            pages = gpu.get(key)
            if pages is None:
                continue
            check = 'health.%s' % rule_name
            if len(pages) > rule['value']:
                findings.append(_finding(rule['level'], check, 'GPU %d has %d %s pages (limit %d; %s): %s'
                                         % (index, len(pages), key, rule['value'], rule['source'], FIX_ECC),
                                         len(pages), rule['value'], rule['source'], index))
            else:
                findings.append(_finding('ok', check, 'GPU %d has no %s pages' % (index, key), 0, rule['value'],
                                         rule['source'], index))
    return findings


def judge(results, model, overrides=None, health_overrides=None):
    """Judge parsed results of one node against the thresholds of its GPU model.

    ``results`` may hold any of: ``rccl_all_reduce`` (``parse_rccl_tests``
    of an all_reduce_perf run), ``transferbench`` (``parse_transferbench``;
    its a2a, p2p and config reports are each judged when present), ``rvs``
    (``parse_rvs``), ``pcie_links`` (a list of {device, speed_gts, width},
    for example from pcie_facts), ``amd_smi_metric``
    (``parse_amd_smi_metric_json``) and ``amd_smi_bad_pages``
    (``parse_amd_smi_bad_pages_json``). Returns the findings, one per check.
    A model missing from the table gives one warning and the health checks.
    """
    table = thresholds_for(model, overrides)
    health = copy.deepcopy(HEALTH)
    for name, values in (health_overrides or {}).items():
        health.setdefault(name, {}).update(values)
    findings = []
    if model_key(model) is None and not overrides:
        findings.append(_finding('warning', 'thresholds.model', 'no performance thresholds for GPU model %r (known: '
                                 '%s): only health checks were judged; give thresholds in the inventory'
                                 % (model, ', '.join(sorted(THRESHOLDS)))))
    if results.get('rccl_all_reduce') is not None and 'rccl_all_reduce' in table:
        findings.extend(_judge_rccl(results['rccl_all_reduce'], table['rccl_all_reduce']))
    transferbench = results.get('transferbench') or {}
    if transferbench.get('a2a') and 'transferbench_a2a' in table:
        findings.extend(_judge_a2a(transferbench['a2a'], table['transferbench_a2a']))
    p2p = transferbench.get('p2p') or {}
    for kind in ('unidirectional', 'bidirectional'):
        name = 'transferbench_p2p_%s' % kind
        if p2p.get(kind) and name in table:
            findings.extend(_judge_p2p(p2p[kind], table[name], kind))
    if transferbench.get('config') and 'transferbench_config' in table:
        findings.extend(_judge_config(transferbench['config'], table['transferbench_config']))
    if results.get('rvs') is not None:
        findings.extend(_judge_rvs(results['rvs'], table))
    if results.get('pcie_links') and 'pcie_link' in table:
        findings.extend(_judge_pcie(results['pcie_links'], table['pcie_link']))
    findings.extend(_judge_health(results.get('amd_smi_metric'), results.get('amd_smi_bad_pages'), health))
    return findings
