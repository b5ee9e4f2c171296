# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The environment the workers role derives for each worker, per node (issue 36, Deliver item 5).

- ``VLLM_ROCM_USE_AITER``: AITER (AMD's kernel library) is on only where the engine's venv has it (the build's
  ``engine_build_aiter``) and every GPU of the node is a gfx target AITER supports (gfx942, gfx950: MI300X/A, MI325X,
  MI350X, MI355X); anywhere else ``0``. vLLM reads it as on for ``1`` or ``true`` (any case), off otherwise.
- ``AITER_JIT_DIR``: where AITER is on, a directory under the worker's own cache. AITER compiles kernels at import into
  ``AITER_JIT_DIR``, else its package directory, else ``~/.aiter``; the unit's ``ProtectSystem=strict`` leaves only
  the worker's tmp and cache writable, so without it the worker would crash.
- ``HSA_OVERRIDE_CPU_AFFINITY_DEBUG=0`` where the worker is pinned to CPUs (numactl): AMD's MI300X tuning guide; else
  ROCm's helper threads run on every core, outside the binding.

A name the user sets (``workers_rocm_env``, ``workers_env``) is never derived: the user's value wins, and a user's
``VLLM_ROCM_USE_AITER`` decides whether the JIT directory is given.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# The gfx targets AITER supports (ROCm/aiter; vLLM's Dockerfile.rocm_base builds it for gfx942 and gfx950).
AITER_TARGETS = ('gfx942', 'gfx950')


def aiter_supported(gfx_targets, targets=AITER_TARGETS):
    """Every target of the node is one AITER supports; a node with no known target is not."""
    gfx_targets = list(gfx_targets or [])
    return bool(gfx_targets) and all(target in set(targets or ()) for target in gfx_targets)


def _on(value):
    """vLLM's reading of VLLM_ROCM_USE_AITER (vllm/envs.py): "1" or "true", any case."""
    return str(value).strip().lower() in ('1', 'true')


def worker_env(built, gfx_targets, cache_dir, pinned, explicit=None, targets=AITER_TARGETS):
    """The variables the role derives for one worker, without the names in ``explicit`` (the user's).

    ``built``: the engine's venv has AITER; ``gfx_targets``: the node's GPU targets (one per GPU, None for an unknown
    one); ``cache_dir``: the worker's cache directory; ``pinned``: the worker runs under numactl.
    """
    explicit = explicit or {}
    derived = built and aiter_supported(gfx_targets, targets)
    env = {'VLLM_ROCM_USE_AITER': '1' if derived else '0'}
    if _on(explicit['VLLM_ROCM_USE_AITER']) if 'VLLM_ROCM_USE_AITER' in explicit else derived:
        env['AITER_JIT_DIR'] = cache_dir.rstrip('/') + '/aiter'
    if pinned:
        env['HSA_OVERRIDE_CPU_AFFINITY_DEBUG'] = '0'
    return dict((name, value) for name, value in env.items() if name not in explicit)
