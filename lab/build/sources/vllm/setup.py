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
    fake_build.record('vllm', 'vllm', {'torch': torch.__version__, 'torch_commit': torch.build_record()['commit']})

setup(name='vllm', version='0.32.0+g' + fake_build.commit()[:7], packages=['vllm'],
      package_data={'vllm': ['_llmfleet_build.json']}, install_requires=['torch', 'triton', 'packaging'])
