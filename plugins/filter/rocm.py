# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""No filter. The names plugins/filter/rocm_inputs.py and its tests
import from here, until the input checks move to plugins/plugin_utils.

What they are: plugins/plugin_utils/rocm_release.py. Delete this file when nothing imports from it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.rocm_release import rocm_release, rocm_version_code, unknown_gfx_targets

__all__ = ['FilterModule', 'rocm_release', 'rocm_version_code', 'unknown_gfx_targets']


class FilterModule(object):
    def filters(self):
        return {}
