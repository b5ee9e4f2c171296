# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks of the preflight role (``input_problems('preflight')``).

An unsupported system is not an input problem here: preflight reports it as the finding
os-unsupported (with the collection's one "Unsupported system" message) and still reads the node.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.preflight_findings import RULE_IDS
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import RuleSet, as_int, as_number, is_absolute_path, show

_KERNEL_RE = re.compile(r'^[0-9]+\.[0-9]+(\.[0-9]+)?\Z')

RULES = RuleSet('preflight')


@RULES.rule('preflight-min-kernel-format')
def _min_kernel(values, ctx):
    value = values['preflight_min_kernel']
    if not (isinstance(value, str) and _KERNEL_RE.match(value)):
        return 'preflight_min_kernel %s is not a kernel version such as 5.15 or 6.8.0.' % show(value)
    return None


@RULES.rule('preflight-disk-path-absolute')
def _disk_path(values, ctx):
    value = values['preflight_disk_path']
    if not (is_absolute_path(value) or value == '/'):
        return 'preflight_disk_path %s is not an absolute path: name the directory the ROCm packages or the builds use, such as /opt.' % show(value)
    return None


@RULES.rule('preflight-min-free-gib')
def _min_free(values, ctx):
    value = values['preflight_min_free_gib']
    number = as_number(value)
    if number is None or number < 0:
        return 'preflight_min_free_gib %s must be 0 (no check) or a positive number of GiB.' % show(value)
    return None


@RULES.rule('preflight-expected-gpu-count')
def _expected(values, ctx):
    value = values['preflight_expected_gpu_count']
    if value is None:
        return None
    number = as_int(value)
    if number is None or number < 1:
        return 'preflight_expected_gpu_count %s must be a positive number of GPUs, or null to accept any.' % show(value)
    return None


@RULES.rule('preflight-accepted-findings-unknown')
def _accepted(values, ctx):
    unknown = [item for item in values['preflight_accepted_findings'] or [] if item not in RULE_IDS]
    if unknown:
        return ('preflight_accepted_findings has unknown ids %s: use the finding ids the role README lists (for example'
                ' pcie-link-speed-downgraded).' % ', '.join(show(item) for item in unknown))
    return None


@RULES.rule('preflight-report-dir-empty')
def _report_dir(values, ctx):
    if values['preflight_write_report'] and not str(values['preflight_report_dir'] or '').strip():
        return ('preflight_report_dir %s is empty: name a directory on the controller, or set preflight_write_report: false.'
                % show(values['preflight_report_dir']))
    return None


def preflight_input_problems(values, platform):
    """The preflight role's variables -> a list of messages (empty when they are fine)."""
    return RULES.messages(values, {'platform': platform})
