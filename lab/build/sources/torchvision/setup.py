"""Stand-in torchvision: builds against the torch installed in the build environment, as the real one does."""
import os
import sys

from setuptools import setup

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_build  # noqa: E402

if fake_build.building():
    try:
        import torch
    except ImportError:
        fake_build.fail('torch is not installed in the build environment (build PyTorch first)')
    fake_build.record('torchvision', 'torchvision', {'torch': torch.__version__, 'torch_commit': torch.build_record()['commit']})

setup(name='torchvision', version='0.28.0+git' + fake_build.commit()[:7], packages=['torchvision'],
      package_data={'torchvision': ['_llmfleet_build.json']}, install_requires=['torch'])
