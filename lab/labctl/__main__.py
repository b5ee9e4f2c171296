# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run labctl: `python3 -m labctl` with lab/ on the path, or `python3 lab/labctl` (what lab/bin/labctl does)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import os
import sys

if not __package__:
    # Run as a directory: its own path is sys.path[0]; the package is imported from its parent instead.
    HERE = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [path for path in sys.path if os.path.abspath(path or '.') != HERE]
    sys.path.insert(0, os.path.dirname(HERE))

sys.exit(importlib.import_module('labctl.cli').main())
