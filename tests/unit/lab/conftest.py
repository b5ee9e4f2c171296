# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's tooling is the package lab/labctl/, and the stub tools are the modules of lab/stubs/ (gpusim,
validsim and amdgpu_exporter on labhost): the tests import both with lab/ and lab/stubs/ on the path."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

LAB = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), 'lab')
for _path in (os.path.join(LAB, 'stubs'), LAB):
    if _path not in sys.path:
        sys.path.insert(0, _path)
