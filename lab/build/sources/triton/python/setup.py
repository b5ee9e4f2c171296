"""Stand-in Triton (its setup.py under python/, as in ROCm's fork)."""
import os
import sys

from setuptools import setup

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import fake_build  # noqa: E402

if fake_build.building():
    fake_build.record('triton', 'triton')

setup(name='triton', version='3.5.0+git' + fake_build.commit()[:7], packages=['triton'],
      package_data={'triton': ['_llmfleet_build.json']})
