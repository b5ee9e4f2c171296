# The workers role's first-contact probe (README, "First contact"). The role passes this file on the standard input of
# the engine venv's Python, started by systemd-run with the worker unit's user, environment and hardening. It changes
# nothing: it imports the engine, asks it which platform it detected and whether AITER is active, and prints one line,
# "LLMFLEET_CONTACT <json>", last; the decision is the role's (plugins/plugin_utils/first_contact.py).
import importlib
import importlib.util
import json
import logging
import os
import sys
import tempfile
import traceback

ENGINE = sys.argv[1] if len(sys.argv) > 1 else 'vllm'
report = {'engine': ENGINE, 'python': list(sys.version_info[:3]), 'executable': sys.executable,
          'user': os.getuid(), 'env': {}}
for name in ('VLLM_ROCM_USE_AITER', 'AITER_JIT_DIR', 'VLLM_TARGET_DEVICE', 'HOME'):
    report['env'][name] = os.environ.get(name)


def error(exc):
    """The exception's own last line (its type and message)."""
    return ''.join(traceback.format_exception_only(type(exc), exc)).strip()


def version(name):
    try:
        from importlib.metadata import version as dist_version
        return dist_version(name)
    except Exception:
        return None


def writable(path):
    """Whether a file can be created in the directory, as the worker would (no file is left behind)."""
    result = {'path': path, 'exists': os.path.isdir(path), 'writable': False, 'error': None}
    try:
        with tempfile.NamedTemporaryFile(dir=path, prefix='.llmfleet-contact-'):
            result['writable'] = True
    except Exception as exc:
        result['error'] = error(exc)
    return result


if ENGINE == 'vllm':
    report['version'] = version('vllm')
    # vLLM logs why each platform was or was not detected at debug level (vllm.platforms): keep its own words.
    words = []

    class Keep(logging.Handler):
        def emit(self, record):
            words.append(record.getMessage())

    detection = logging.getLogger('vllm.platforms')
    detection.setLevel(logging.DEBUG)
    detection.addHandler(Keep(logging.DEBUG))
    try:
        from vllm.platforms import current_platform as platform
        report['platform'] = {'class': type(platform).__name__, 'device_name': getattr(platform, 'device_name', None),
                              'device_type': getattr(platform, 'device_type', None),
                              'is_rocm': bool(platform.is_rocm()), 'is_cpu': bool(platform.is_cpu())}
    except Exception as exc:
        report['platform'] = {'error': error(exc)}
    report['detection'] = words
    # vLLM's own AITER switch: envs.VLLM_ROCM_USE_AITER, IS_AITER_FOUND (the aiter package is importable) and
    # rocm_aiter_ops.is_enabled() (None or False unless ROCm, a CDNA3+ GPU, aiter found and the switch on).
    try:
        from vllm import envs
        from vllm import _aiter_ops
        enabled = _aiter_ops.rocm_aiter_ops.is_enabled()
        report['aiter'] = {'requested': bool(envs.VLLM_ROCM_USE_AITER), 'found': bool(_aiter_ops.IS_AITER_FOUND),
                           'enabled': bool(enabled), 'error': None}
    except Exception as exc:
        report['aiter'] = {'requested': None, 'found': None, 'enabled': None, 'error': error(exc)}
elif ENGINE == 'sglang':
    report['version'] = version('sglang')
    try:
        importlib.import_module('sglang')
        report['import_error'] = None
    except Exception as exc:
        report['import_error'] = error(exc)
    # SGLang decides its platform per call (sglang.srt.utils is_hip / is_cuda / is_cpu), not once for the process.
    try:
        from sglang.srt import utils as sglang_utils
        report['platform'] = {'is_rocm': bool(sglang_utils.is_hip()), 'is_cpu': bool(sglang_utils.is_cpu())}
    except Exception as exc:
        report['platform'] = {'error': error(exc)}
    try:
        report['aiter'] = {'requested': None, 'found': importlib.util.find_spec('aiter') is not None, 'enabled': None,
                           'error': None}
    except Exception as exc:
        report['aiter'] = {'requested': None, 'found': None, 'enabled': None, 'error': error(exc)}

# ROCm's Python bindings, which vLLM's ROCm detection imports (vllm/platforms/__init__.py, rocm_platform_plugin):
# asked after the engine's own detection, which stays as it would be in the worker.
try:
    importlib.import_module('amdsmi')
    report['amdsmi'] = {'imported': True, 'error': None}
except Exception as exc:
    report['amdsmi'] = {'imported': False, 'error': error(exc)}

# AITER compiles its kernels at import into AITER_JIT_DIR: that directory must take a new file inside this sandbox.
if report['env'].get('AITER_JIT_DIR'):
    report['jit_dir'] = writable(report['env']['AITER_JIT_DIR'])

sys.stdout.flush()
print('LLMFLEET_CONTACT ' + json.dumps(report, sort_keys=True))
