# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The promtool binary the monitoring tests run.

``LLMFLEET_PROMTOOL`` names it (``make test`` sets it from tests/tools/promtool.sh, which unpacks
Debian's prometheus package into .cache/prometheus/); else the one that script left there; else
``promtool`` on PATH. Without one the tests fail: they are never skipped.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from promql_names import find_promtool


@pytest.fixture(scope='session')
def promtool():
    return find_promtool()
