# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The scaling benchmark's input check (``benchmark_input_problems``); its rules and its plan are in
plugins/plugin_utils/benchmark.py (the plan's filters: plugins/filter/__roles.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.benchmark import benchmark_input_problems


class FilterModule(object):
    def filters(self):
        return {'benchmark_input_problems': benchmark_input_problems}
