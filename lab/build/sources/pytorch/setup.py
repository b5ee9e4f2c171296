"""Stand-in PyTorch: builds only after the ROCm preparation step, for PYTORCH_ROCM_ARCH."""
import json
import os
import sys

from setuptools import setup

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_build  # noqa: E402

if fake_build.building():
    if not os.path.exists('torch/_hipified.json'):
        fake_build.fail('run python3 tools/amd_build/build_amd.py first (the ROCm preparation step)')
    if not os.environ.get('PYTORCH_ROCM_ARCH'):
        fake_build.fail('PYTORCH_ROCM_ARCH is not set')
    with open('torch/_hipified.json') as handle:
        fake_build.record('pytorch', 'torch', {'prepared': json.load(handle)})

setup(name='torch', version='2.10.0a0+git' + fake_build.commit()[:7], packages=['torch'],
      package_data={'torch': ['_llmfleet_build.json', '_hipified.json']}, python_requires='>=3.9')
