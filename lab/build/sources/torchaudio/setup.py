"""Stand-in torchaudio: builds against the torch installed in the build environment, after its requirements.txt."""
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
    fake_build.record('torchaudio', 'torchaudio', {'torch': torch.__version__, 'torch_commit': torch.build_record()['commit']})

setup(name='torchaudio', version='2.11.0+git' + fake_build.commit()[:7], packages=['torchaudio'],
      package_data={'torchaudio': ['_llmfleet_build.json']}, install_requires=['torch'])
