# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What upstream supports, in one table: AMD's GPU / OS / ROCm matrix, where AMD packages its Device Metrics
Exporter, and the Pythons each vLLM release accepts. The preflight role judges a node against it.

Every entry is copied from the upstream text named in ``SOURCES`` (read for this table; nothing here is from
memory). Only what the collection supports is in it: ROCm 7.0, 7.1 and 7.2 (a release is its ``major.minor``
series, as AMD's footnotes say "For ROCm 7.1.x"), the systems of the collection's support table (the base role's
``_common_platforms`` keys), and AMD Instinct GPUs. What is not in the table is unknown, never refused.

ROCm 7.0 and 7.1: AMD's ``compatibility-matrix.rst`` lists Ubuntu 24.04.3 and 22.04.5 for every Instinct GPU (its
per-GPU footnotes restrict other systems only), and Debian 12 through one footnote per release:

- 7.0.x: "SLES 15 SP7 and Debian 12 are supported only on AMD Instinct MI300X, MI300A, MI250X, MI250, and MI210 GPUs"
  (footnote ``sles-db-700``; the 7.0.0 matrix has the same list); MI355X / MI350X "only supports Ubuntu 24.04.3,
  Ubuntu 22.04.5, RHEL 10.0, RHEL 9.6, RHEL 9.4, Oracle Linux 10, and Oracle Linux 9"; MI325X "only supports
  Ubuntu 24.04.3, Ubuntu 22.04.5, RHEL 9.6, and RHEL 9.4"; MI100 not on Debian 12.
- 7.1.x: "Debian 12 is supported only on AMD Instinct MI325X, MI300X, MI300A, MI250X, MI250, and MI210 GPUs"
  (footnote ``db12-710``); MI355X / MI350X "supports all listed supported distributions except RHEL 8.10,
  SLES 15 SP7, Debian 12, ..."; MI100 "only supports Ubuntu 24.04.3, Ubuntu 22.04.5, RHEL ..." (no Debian).

ROCm 7.2: the 7.2.3 matrix lists Ubuntu 24.04.3, 22.04.5 and Debian 13, 12 and moves the per-GPU lists to the
Instinct system table (``docs/compatibility/include/system-instinct.rst``; its 7.2 text, with RHEL 10.1 and 9.7):
the Ubuntu row has no GPU condition (every Instinct GPU); the Debian row gives "Debian 13, Debian 12" for MI355X,
MI350X, MI325X, MI300X and "Debian 12" for MI300A, MI250X, MI250. MI210 and MI100 have no Debian row.

The Device Metrics Exporter's Debian package: "Operating System: Ubuntu 22.04 or Ubuntu 24.04" (its installation
page), with repository lines for jammy and noble only.

vLLM's Python range is its ``pyproject.toml`` ``requires-python`` (the sdist on PyPI, the same files
tests/unit/fixtures/vllm_dockerfiles/<release>/SOURCE.md names with their sha256): 0.30.0 and 0.31.0
">=3.10,<3.15"; 0.32.0 and 0.33.0 ">=3.11,<3.15". Their ROCm images use Python 3.12 (``ARG PYTHON_VERSION`` of
Dockerfile.rocm_base).

Pure data and functions; no Ansible imports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

SOURCES = {
    'rocm_7.0': {
        'url': 'https://rocm.docs.amd.com/en/docs-7.0.2/compatibility/compatibility-matrix.html',
        'file': 'ROCm/ROCm docs/compatibility/compatibility-matrix.rst (7.0.0 and 7.1.0 versions of the file)',
        'says': 'For ROCm 7.0.x - SLES 15 SP7 and Debian 12 are supported only on AMD Instinct MI300X, MI300A, MI250X, '
                'MI250, and MI210 GPUs.',
    },
    'rocm_7.1': {
        'url': 'https://rocm.docs.amd.com/en/docs-7.1.0/compatibility/compatibility-matrix.html',
        'file': 'ROCm/ROCm docs/compatibility/compatibility-matrix.rst (7.1.0 version of the file)',
        'says': 'For ROCm 7.1.x - Debian 12 is supported only on AMD Instinct MI325X, MI300X, MI300A, MI250X, MI250, '
                'and MI210 GPUs.',
    },
    'rocm_7.2': {
        'url': 'https://rocm.docs.amd.com/projects/install-on-linux/en/docs-7.2.2/reference/system-requirements.html#supported-gpus',
        'file': 'ROCm/ROCm docs/compatibility/compatibility-matrix.rst (7.2.3 version) and '
                'docs/compatibility/include/system-instinct.rst (7.2 version)',
        'says': 'Supported Debian version: Debian 13, Debian 12 for MI355X, MI350X, MI325X, MI300X; Debian 12 for MI300A, '
                'MI250X, MI250. Supported Ubuntu versions: Ubuntu 24.04.3, Ubuntu 22.04.5 (every Instinct GPU).',
    },
    'exporter': {
        'url': 'https://github.com/ROCm/device-metrics-exporter/blob/main/docs/installation/deb-package.rst',
        'file': 'ROCm/device-metrics-exporter docs/installation/deb-package.rst',
        'says': 'System Requirements: Operating System: Ubuntu 22.04 or Ubuntu 24.04 (repository lines for jammy and noble).',
    },
    'vllm_python': {
        'url': 'https://pypi.org/project/vllm/#files',
        'file': 'vllm-<release>.tar.gz: pyproject.toml requires-python (and PKG-INFO Requires-Python)',
        'says': '0.30.0, 0.31.0: ">=3.10,<3.15"; 0.32.0, 0.33.0: ">=3.11,<3.15".',
    },
}

LATEST_MATRIX_URL = 'https://rocm.docs.amd.com/en/latest/compatibility/compatibility-matrix.html'

# The systems of the collection's support table (the base role's platform keys), by name.
SYSTEM_NAMES = {'Debian-12': 'Debian 12', 'Ubuntu-22': 'Ubuntu 22.04', 'Ubuntu-24': 'Ubuntu 24.04'}

# AMD Instinct GPUs (ROCm's system requirements: GPU, LLVM target).
INSTINCT_TARGETS = {
    'MI355X': 'gfx950',
    'MI350X': 'gfx950',
    'MI325X': 'gfx942',
    'MI300X': 'gfx942',
    'MI300A': 'gfx942',
    'MI250X': 'gfx90a',
    'MI250': 'gfx90a',
    'MI210': 'gfx90a',
    'MI100': 'gfx908',
}
_ALL_INSTINCT = tuple(INSTINCT_TARGETS)
# Series names some tools and PCI names give instead of the model ("AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2" is
# an MI250X's rocminfo name; "Aldebaran/MI200 [Instinct MI250X/MI250]" a PCI name): any model of the series.
INSTINCT_SERIES = {
    'MI350': ('MI355X', 'MI350X'),
    'MI300': ('MI325X', 'MI300X', 'MI300A'),
    'MI200': ('MI250X', 'MI250', 'MI210'),
}

# ROCm series -> system (the base role's platform key) -> the Instinct GPUs AMD supports there.
ROCM_MATRIX = {
    '7.0': {
        'Ubuntu-22': _ALL_INSTINCT,
        'Ubuntu-24': _ALL_INSTINCT,
        'Debian-12': ('MI300X', 'MI300A', 'MI250X', 'MI250', 'MI210'),
    },
    '7.1': {
        'Ubuntu-22': _ALL_INSTINCT,
        'Ubuntu-24': _ALL_INSTINCT,
        'Debian-12': ('MI325X', 'MI300X', 'MI300A', 'MI250X', 'MI250', 'MI210'),
    },
    '7.2': {
        'Ubuntu-22': _ALL_INSTINCT,
        'Ubuntu-24': _ALL_INSTINCT,
        'Debian-12': ('MI355X', 'MI350X', 'MI325X', 'MI300X', 'MI300A', 'MI250X', 'MI250'),
    },
}

# The systems AMD packages amdgpu-exporter for (platform keys).
EXPORTER_SYSTEMS = ('Ubuntu-22', 'Ubuntu-24')

# vLLM release -> (lowest Python accepted, first Python refused), from requires-python.
VLLM_PYTHON = {
    '0.30.0': ((3, 10), (3, 15)),
    '0.31.0': ((3, 10), (3, 15)),
    '0.32.0': ((3, 11), (3, 15)),
    '0.33.0': ((3, 11), (3, 15)),
}

# A model in a marketing name or a PCI description: "AMD Instinct MI300X", "Aqua Vanjaram [Instinct MI300X]",
# "Aldebaran/MI200 [Instinct MI250X/MI250]", "AMD Instinct MI300X VF".
_MODEL_RE = re.compile(r'(?<![A-Za-z0-9])MI(?P<number>[0-9]{2,3})(?P<suffix>[A-Za-z]?)(?![A-Za-z0-9])', re.I)
_SERIES_RE = re.compile(r'^\s*v?(?P<major>[0-9]+)\.(?P<minor>[0-9]+)')
_PYTHON_RE = re.compile(r'^\s*(?:Python\s+)?(?P<major>[0-9]+)\.(?P<minor>[0-9]+)(?:\.(?P<micro>[0-9]+))?')


def system_key(key):
    """The table's key of a system ('Debian-12' for 'debian-12'), or None for a system outside the table."""
    for known in SYSTEM_NAMES:
        if known.lower() == str(key or '').lower():
            return known
    return None


def rocm_series(version):
    """'7.1' for '7.1.1' (or '7.1.1-38', 'v7.1'); None for what does not start with major.minor."""
    match = _SERIES_RE.match(str(version or ''))
    return '%s.%s' % (match.group('major'), match.group('minor')) if match else None


def gpu_candidates(name, gfx_target=None):
    """(models, named): the Instinct models a GPU can be, from its name, else from its LLVM target.

    ``named`` lists every MI model the name mentions; a name that names models gives those of the table (a model
    outside it, an MI308X, gives none); a name that gives a series only (MI200) gives the series' models (of the
    LLVM target, when known). A name without either falls back to every Instinct GPU of the LLVM target.
    """
    named = []
    for match in _MODEL_RE.finditer(str(name or '')):
        model = ('MI%s%s' % (match.group('number'), match.group('suffix'))).upper()
        if model not in named:
            named.append(model)
    models = [model for model in named if model in INSTINCT_TARGETS]
    if not models:
        models = [model for series in named for model in INSTINCT_SERIES.get(series, ())]
        if gfx_target:
            models = [model for model in models if INSTINCT_TARGETS[model] == gfx_target]
    if named:
        return tuple(models), tuple(named)
    if gfx_target:
        return tuple(model for model in _ALL_INSTINCT if INSTINCT_TARGETS[model] == gfx_target), ()
    return (), ()


def judge_gpu(series, system, candidates):
    """'supported', 'unsupported' or 'unknown' for GPUs that are one of ``candidates`` on a system and a ROCm series."""
    supported = (ROCM_MATRIX.get(series) or {}).get(system)
    if supported is None or not candidates:
        return 'unknown'
    inside = [model for model in candidates if model in supported]
    if len(inside) == len(candidates):
        return 'supported'
    return 'unsupported' if not inside else 'unknown'


def supported_elsewhere(model, series, system):
    """(systems, series) where AMD supports ``model``: other systems with this ROCm series, other series on this system."""
    systems = sorted(key for key, models in (ROCM_MATRIX.get(series) or {}).items() if key != system and model in models)
    releases = sorted(key for key, systems_ in ROCM_MATRIX.items() if key != series and model in (systems_.get(system) or ()))
    return systems, releases


def python_version(text):
    """(major, minor, micro) from '3.10.12' or 'Python 3.10.12'; None when the text does not start so."""
    match = _PYTHON_RE.match(str(text or ''))
    if not match:
        return None
    return int(match.group('major')), int(match.group('minor')), int(match.group('micro') or 0)


def vllm_python_range(release):
    """((lowest), (first refused)) for a vLLM release in the table ('0.32.0', also '0.32.0+cpu'), else None."""
    return VLLM_PYTHON.get(str(release or '').split('+', 1)[0].strip())


def format_range(bounds):
    return '>=%d.%d,<%d.%d' % (bounds[0] + bounds[1])
