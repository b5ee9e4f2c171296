# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks of the toolchain role (``toolchain_input_problems``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.module_utils.inputs import RuleSet, is_absolute_path, show, supported_system_rule

_PIN_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]*==[0-9][0-9A-Za-z.+!_-]*\Z')
_RELEASE_RE = re.compile(r'^[0-9]+\.[0-9]+\.[0-9]+\Z')

RULES = RuleSet('toolchain')
supported_system_rule(RULES)


@RULES.rule('toolchain-no-rocm-release')
def _no_release(values, ctx):
    if not ctx.get('rocm_release'):
        return ('No ROCm release to match: ROCm is not installed on this builder (rocm_facts found no version) and neither'
                ' toolchain_rocm_version nor rocm_version is set. Run playbooks/driver.yml on it first.')
    return None


@RULES.rule('toolchain-rocm-release-format')
def _release_format(values, ctx):
    release = ctx.get('rocm_release')
    if release and not _RELEASE_RE.match(str(release)):
        return 'toolchain_rocm_version %s is not a ROCm release such as 7.1.1.' % show(release)
    return None


@RULES.rule('toolchain-python-packages-unpinned')
def _unpinned(values, ctx):
    unpinned = [item for item in values['toolchain_python_packages'] if not (isinstance(item, str) and _PIN_RE.match(item))]
    if unpinned:
        return ('toolchain_python_packages must pin every tool as name==version: %s.'
                % ', '.join(show(item) for item in unpinned))
    return None


@RULES.rule('toolchain-dir-absolute')
def _dir(values, ctx):
    if not is_absolute_path(values['toolchain_dir']):
        return 'toolchain_dir %s must be an absolute path, such as /opt/llmfleet/toolchain.' % show(values['toolchain_dir'])
    return None


def toolchain_input_problems(values, platform, rocm_release=''):
    """The toolchain role's variables -> a list of messages (empty when they are fine)."""
    return RULES.messages(values, {'platform': platform, 'rocm_release': rocm_release})


class FilterModule(object):
    def filters(self):
        return {'toolchain_input_problems': toolchain_input_problems}
