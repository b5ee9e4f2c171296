"""Stand-in vLLM: builds for ROCm only, against the torch installed in the build environment."""
import os
import sys

from setuptools import setup

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_build  # noqa: E402

if fake_build.building():
    if os.environ.get('VLLM_TARGET_DEVICE') != 'rocm':
        fake_build.fail('VLLM_TARGET_DEVICE is %r: this build is for ROCm' % os.environ.get('VLLM_TARGET_DEVICE'))
    try:
        import torch
    except ImportError:
        fake_build.fail('torch is not installed in the build environment (build PyTorch first)')
    # vLLM's cmake/external_projects/triton_kernels.cmake takes this directory as the triton_kernels package; without
    # it, the real build clones ROCm/triton at a commit of its own.
    kernels = os.environ.get('TRITON_KERNELS_SRC_DIR')
    if not kernels or not os.path.isfile(os.path.join(kernels, '__init__.py')):
        fake_build.fail('TRITON_KERNELS_SRC_DIR is %r, not a triton_kernels package directory: the real build would clone'
                        ' ROCm/triton' % kernels)
    fake_build.record('vllm', 'vllm', {'torch': torch.__version__, 'torch_commit': torch.build_record()['commit'],
                                       'triton_kernels': sorted(os.listdir(kernels))})

setup(name='vllm', version='0.32.0+g' + fake_build.commit()[:7], packages=['vllm'],
      package_data={'vllm': ['_llmfleet_build.json']}, install_requires=['torch', 'triton', 'torchvision', 'packaging'])
