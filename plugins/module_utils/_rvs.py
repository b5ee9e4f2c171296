# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the text log of the ROCm Validation Suite (``rvs -c <conf>``).

Everything here is pure: text in, dicts out. No Ansible imports.

rvs prints one ``[RESULT] [<seconds>] ...`` line per event. Each action of
the configuration starts with ``Action name :<name>`` and ``Module name
:<module>``; its result lines carry ``[<action>]`` and, per GPU, ``[GPU::
<gpu id>]`` (gst, iet) or ``[GPU:: <node> - <gpu id> - <pci address>]``
(pebb, pbqt). The modules read here:

* ``gst``: ``GFLOPS <n> Target GFLOPS: <t> met: TRUE|FALSE`` per GPU;
* ``iet``: ``Power(W) <w>`` samples and ``pass: TRUE|FALSE`` per GPU;
* ``pebb``: CPU-GPU ``distance`` lines and ``pcie-bandwidth [i/n] ... h2d::
  d2h:: <x> GBps`` transfers;
* ``pbqt``: ``p2p ... peers:true|false distance:<d> xGMI:<d>`` and
  ``p2p-bandwidth[i/n] ... bidirectional: <b> <x> GBps`` transfers;
* ``babel``: the ``GPU Id Function MBytes/sec Max Min Avg`` table;
* ``peqt``: ``peqt true|false``.

rvs 1.6 and later end with a boxed summary (system overview and one
``| action | MODULE | PASS/FAIL |`` row per action); its verdict is taken
when present. Lines of other modules are kept as a count, not guessed at.
A log without any action is refused (``ParseError``); ``RVS-ERROR`` lines
before any action raise ``ToolError``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import (
    ParseError,
    ToolError,
    normalize_pci_address,
)

TOOL = 'rvs'

HINT_RVS = ('rvs could not run the test: check that the rocm-validation-suite package matches the installed ROCm, '
            'that the configuration file exists for this GPU model (/opt/rocm/share/rocm-validation-suite/conf/'
            '<GPU>/) and that the user may open /dev/kfd; run "rvs -g" to list the GPUs it sees.')

_NUM = r'[0-9]+(?:\.[0-9]+)?'
_LINE_RE = re.compile(r'^\[(?P<level>[A-Z]+)\s*\]\s*\[\s*(?P<ts>[0-9.]+)\s*\]\s?(?P<msg>.*)$')
_ACTION_RE = re.compile(r'^Action name\s*:\s*(?P<name>\S+)')
_MODULE_RE = re.compile(r'^Module name\s*:\s*(?P<module>\S+)')
_TAGGED_RE = re.compile(r'^\[(?P<action>[^\]]+)\]\s*(?P<rest>.*)$')
_GPU = r'\[GPU::\s*(?P<%s_node>\d+)\s*-\s*(?P<%s_id>\d+)\s*-\s*(?P<%s_pci>[0-9a-fA-F:.]+)\s*\]'
_GST_RE = re.compile(r'^\[GPU::\s*(?P<id>\d+)\]\s+GFLOPS\s+(?P<gflops>%s)'
                     r'(?:\s+Target GFLOPS:\s*(?P<target>%s)\s+met:\s*(?P<met>TRUE|FALSE))?' % (_NUM, _NUM))
_IET_POWER_RE = re.compile(r'^\[GPU::\s*(?P<id>\d+)\]\s+Power\(W\)\s+(?P<watts>%s)' % _NUM)
_IET_PASS_RE = re.compile(r'^\[GPU::\s*(?P<id>\d+)\]\s+pass:\s*(?P<passed>TRUE|FALSE)')
_PEBB_DISTANCE_RE = re.compile(
    r'^pcie-bandwidth\s+\[CPU::\s*(?P<cpu>\d+)\]\s+%s\s+distance:\s*(?P<distance>\d+)\s+PCIe:\s*(?P<pcie>\d+)'
    % (_GPU % ('g', 'g', 'g')))
_PEBB_BW_RE = re.compile(
    r'^pcie-bandwidth\s*\[\s*(?P<n>\d+)/\s*(?P<total>\d+)\]\s+\[CPU::\s*(?P<cpu>\d+)\]\s+%s\s+'
    r'h2d::(?P<h2d>true|false)\s+d2h::(?P<d2h>true|false)\s+(?P<gbps>%s)\s*GBps' % (_GPU % ('g', 'g', 'g'), _NUM))
_PBQT_PEERS_RE = re.compile(
    r'^p2p\s+%s\s+%s\s+peers:\s*(?P<peers>true|false)(?:\s+distance:\s*(?P<distance>\d+))?'
    r'(?:\s+(?P<link>[A-Za-z]+):\s*(?P<link_distance>\d+))?' % (_GPU % ('s', 's', 's'), _GPU % ('d', 'd', 'd')))
_PBQT_BW_RE = re.compile(
    r'^p2p-bandwidth\s*\[\s*(?P<n>\d+)/\s*(?P<total>\d+)\]\s+%s\s+%s\s+bidirectional:\s*(?P<bidir>true|false)'
    r'\s+(?P<gbps>%s)\s*GBps' % (_GPU % ('s', 's', 's'), _GPU % ('d', 'd', 'd'), _NUM))
_PEQT_RE = re.compile(r'^peqt\s+(?P<result>true|false)\b')
_BABEL_ROW_RE = re.compile(
    r'^(?P<id>\d+)\s+(?P<function>Read|Write|Copy|Mul|Add|Triad|Dot|Nstream)\s+(?P<mbps>%s)\s+(?P<max>%s)'
    r'\s+(?P<min>%s)\s+(?P<avg>%s)\s*$' % (_NUM, _NUM, _NUM, _NUM))
_SUMMARY_ROW_RE = re.compile(r'^\|\s*(?P<action>[^|\s]+)\s*\|\s*(?P<module>[A-Z0-9_]+)\s*\|\s*(?P<result>[A-Z_]+)\s*\|$')
_SYSTEM_ROW_RE = re.compile(
    r'^\|\s*(?P<key>Operating System|RVS version|ROCm version|amdgpu version|GPUs)\s*\|\s*(?P<value>.*?)\s*\|$')
_SYSTEM_KEYS = {'Operating System': 'os', 'RVS version': 'rvs_version', 'ROCm version': 'rocm_version',
                'amdgpu version': 'amdgpu_version', 'GPUs': 'gpus'}
_ERROR_RE = re.compile(r'^(?:RVS-ERROR\b.*|\[ERROR\s*\].*)$')


def _as_text(text):
    if isinstance(text, bytes):
        return text.decode('utf-8', 'replace')
    if not isinstance(text, str):
        raise ParseError(TOOL, 'expected the text rvs printed, got %s' % type(text).__name__)
    return text


def _gpu(match, prefix):
    return {
        'node': int(match.group(prefix + '_node')),
        'gpu_id': int(match.group(prefix + '_id')),
        'pci_address': normalize_pci_address(match.group(prefix + '_pci')),
    }


def _bool(text):
    return text.upper() == 'TRUE'


def _new_action(name):
    return {'action': name, 'module': None, 'gpus': [], 'distances': [], 'transfers': [], 'peers': [],
            'bandwidth': [], 'checks': [], 'other_lines': 0, 'summary_result': None, 'passed': None}


def _gpu_entry(action, gpu_id):
    for entry in action['gpus']:
        if entry['gpu_id'] == gpu_id:
            return entry
    entry = {'gpu_id': gpu_id}
    action['gpus'].append(entry)
    return entry


def _gst(action, rest):
    match = _GST_RE.match(rest)
    if not match:
        return False
    entry = _gpu_entry(action, int(match.group('id')))
    gflops = float(match.group('gflops'))
    entry['gflops_max'] = max(entry.get('gflops_max') or 0.0, gflops)
    entry.setdefault('gflops', None)
    entry.setdefault('target_gflops', None)
    entry.setdefault('met', None)
    if match.group('met'):
        entry['gflops'] = gflops
        entry['target_gflops'] = float(match.group('target'))
        entry['met'] = _bool(match.group('met'))
    return True


def _iet(action, rest):
    match = _IET_POWER_RE.match(rest)
    if match:
        entry = _gpu_entry(action, int(match.group('id')))
        entry['max_power_w'] = max(entry.get('max_power_w') or 0.0, float(match.group('watts')))
        entry.setdefault('passed', None)
        return True
    match = _IET_PASS_RE.match(rest)
    if match:
        entry = _gpu_entry(action, int(match.group('id')))
        entry.setdefault('max_power_w', None)
        entry['passed'] = _bool(match.group('passed'))
        return True
    return False


def _pebb(action, rest):
    match = _PEBB_DISTANCE_RE.match(rest)
    if match:
        action['distances'].append({'cpu': int(match.group('cpu')), 'gpu': _gpu(match, 'g'),
                                    'distance': int(match.group('distance')), 'pcie_distance': int(match.group('pcie'))})
        return True
    match = _PEBB_BW_RE.match(rest)
    if match:
        action['transfers'].append({'index': int(match.group('n')), 'of': int(match.group('total')),
                                    'cpu': int(match.group('cpu')), 'gpu': _gpu(match, 'g'),
                                    'h2d': match.group('h2d') == 'true', 'd2h': match.group('d2h') == 'true',
                                    'gbps': float(match.group('gbps'))})
        return True
    return False


def _pbqt(action, rest):
    match = _PBQT_PEERS_RE.match(rest)
    if match:
        action['peers'].append({
            'src': _gpu(match, 's'), 'dst': _gpu(match, 'd'), 'peers': match.group('peers') == 'true',
            'distance': int(match.group('distance')) if match.group('distance') else None,
            'link_type': match.group('link'),
        })
        return True
    match = _PBQT_BW_RE.match(rest)
    if match:
        action['transfers'].append({'index': int(match.group('n')), 'of': int(match.group('total')),
                                    'src': _gpu(match, 's'), 'dst': _gpu(match, 'd'),
                                    'bidirectional': match.group('bidir') == 'true',
                                    'gbps': float(match.group('gbps'))})
        return True
    return False


def _peqt(action, rest):
    match = _PEQT_RE.match(rest)
    if match:
        action['checks'].append(match.group('result') == 'true')
        return True
    return False


_MODULE_PARSERS = {'gst': _gst, 'iet': _iet, 'pebb': _pebb, 'pbqt': _pbqt, 'peqt': _peqt}


def _verdict(action):
    """True/False from the summary or the module's own lines, None when the log does not say."""
    if action['summary_result'] is not None:
        return action['summary_result'] == 'PASS'
    module = action['module']
    if module == 'gst':
        flags = [gpu['met'] for gpu in action['gpus']]
    elif module == 'iet':
        flags = [gpu['passed'] for gpu in action['gpus']]
    elif module in ('pebb', 'pbqt'):
        flags = [transfer['gbps'] > 0 for transfer in action['transfers']]
    elif module == 'peqt':
        flags = action['checks']
    else:
        return None
    if not flags or any(flag is None for flag in flags):
        return None
    return all(flags)


def parse_rvs(text):
    """Parse an rvs log.

    Returns ``{'actions': [...], 'system': {...} or None, 'errors': [...],
    'passed': bool or None}``. Each action has ``action``, ``module``,
    ``gpus`` (gst: gpu_id, gflops_max, gflops, target_gflops, met; iet:
    gpu_id, max_power_w, passed; babel: gpu_id and per function
    mbps/max_mbps/min_mbps/avg_mbps), ``distances`` and ``transfers`` (pebb:
    cpu, gpu{node, gpu_id, pci_address}, h2d, d2h, gbps), ``peers`` and
    ``transfers`` (pbqt: src, dst, peers, distance, link_type; bidirectional,
    gbps), ``checks`` (peqt), ``other_lines``, ``summary_result`` (PASS/FAIL
    from rvs's closing table) and ``passed``. ``passed`` at the top is False
    when any action failed, True when all passed, None when the log does not
    say for some action.
    """
    text = _as_text(text)
    raw_lines = [line.rstrip() for line in text.splitlines()]
    if not any(line.strip() for line in raw_lines):
        raise ParseError(TOOL, 'no output: expected an rvs log with "[RESULT] [...] Action name :..." lines')
    actions = []
    by_name = {}
    system = None
    errors = []
    current = None
    for raw in raw_lines:
        line = raw.strip()
        if not line:
            continue
        if _ERROR_RE.match(line):
            errors.append(line)
            continue
        match = _LINE_RE.match(line)
        if match:
            message = match.group('msg').strip()
            found = _ACTION_RE.match(message)
            if found:
                current = _new_action(found.group('name'))
                actions.append(current)
                by_name[current['action']] = current
                continue
            found = _MODULE_RE.match(message)
            if found and current is not None:
                current['module'] = found.group('module').lower()
                continue
            found = _TAGGED_RE.match(message)
            if found and found.group('action') in by_name:
                action = by_name[found.group('action')]
                handler = _MODULE_PARSERS.get(action['module'])
                if not (handler and handler(action, found.group('rest').strip())):
                    action['other_lines'] += 1
            elif current is not None:
                current['other_lines'] += 1
            continue
        match = _BABEL_ROW_RE.match(line)
        if match and current is not None and current['module'] == 'babel':
            entry = _gpu_entry(current, int(match.group('id')))
            entry[match.group('function').lower()] = {
                'mbps': float(match.group('mbps')), 'max_mbps': float(match.group('max')),
                'min_mbps': float(match.group('min')), 'avg_mbps': float(match.group('avg'))}
            continue
        match = _SYSTEM_ROW_RE.match(line)
        if match:
            system = system or {}
            value = match.group('value')
            key = _SYSTEM_KEYS[match.group('key')]
            system[key] = int(value) if key == 'gpus' and value.isdigit() else value
            continue
        match = _SUMMARY_ROW_RE.match(line)
        if match and match.group('action') in by_name:
            by_name[match.group('action')]['summary_result'] = match.group('result')
            continue
    if not actions:
        if errors:
            raise ToolError(TOOL, errors[0], HINT_RVS)
        first = next(line.strip() for line in raw_lines if line.strip())
        raise ParseError(TOOL, 'expected an rvs log with "[RESULT] [<time>] Action name :<action>" and "Module name '
                         ':<module>" lines, found: %r' % first[:160])
    for action in actions:
        if action['module'] is None:
            raise ParseError(TOOL, 'the action %r has no "Module name :" line: the log is cut or not an rvs log'
                             % action['action'])
        action['passed'] = _verdict(action)
    verdicts = [action['passed'] for action in actions]
    if errors or False in verdicts:
        passed = False
    elif None in verdicts:
        passed = None
    else:
        passed = True
    return {'actions': actions, 'system': system, 'errors': errors, 'passed': passed}
