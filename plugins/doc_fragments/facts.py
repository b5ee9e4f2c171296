# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation shared by the read-only facts modules of llmfleet.rocm."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Attributes of a module that only reads (llmfleet.rocm.facts) and the sysfs_path option (llmfleet.rocm.facts.SYSFS)."""

    DOCUMENTATION = r'''
options: {}
attributes:
  check_mode:
    support: full
    description: The module only reads; it runs the same in check mode.
  diff_mode:
    support: none
    description: Nothing is changed, so there is nothing to show.
'''

    SYSFS = r'''
options:
  sysfs_path:
    description:
      - Where sysfs is mounted. Only tests and chroots change it.
    type: path
    default: /sys
'''
