"""Stand-in torchvision: its version and the record of the build that made it."""
import json
import os
from importlib.metadata import version

__version__ = version('torchvision')


def build_record():
    with open(os.path.join(os.path.dirname(__file__), '_llmfleet_build.json')) as handle:
        return json.load(handle)
