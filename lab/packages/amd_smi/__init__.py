"""llmfleet lab stub of ROCm's amdsmi Python package (/opt/rocm/share/amd_smi of amd-smi-lib): a name and a version,
no library behind it.

vLLM asks amdsmi_init() and amdsmi_get_processor_handles() whether ROCm is there; the stub's init fails as the real
one does on a host whose amdgpu driver is not loaded, so vLLM takes another platform. The engine build turns this
directory into a wheel (pip wheel .), as vLLM's image builds the real one.
"""
try:
    from importlib.metadata import version as _version
    __version__ = _version('amdsmi')
except Exception:  # imported from the directory itself, not installed
    __version__ = '0'


class AmdSmiLibraryException(Exception):
    """What the real package raises when its library call fails."""


def amdsmi_init(*_args, **_kwargs):
    raise AmdSmiLibraryException('llmfleet lab stub: no amd-smi library behind this package (the lab has no GPU driver)')


def amdsmi_get_processor_handles():
    return []


def amdsmi_shut_down():
    return None
