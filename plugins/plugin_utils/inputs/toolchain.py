# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks of the toolchain role (``input_problems('toolchain')``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.module_utils import _build_toolchain
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import (
    RuleSet, is_absolute_path, python_path_rule, show, supported_system_rule, toolchain_plan_rule)

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


python_path_rule(RULES, 'toolchain_python', 'the per-system table\'s Python')
# The system cannot give the recipe's (or the asked) gcc or Python.
toolchain_plan_rule(RULES, 'toolchain-unavailable', 'plan')


@RULES.rule('toolchain-python-range')
def _python_range(values, ctx):
    """Once the Python is there: its own version against the release's range (a Python given by path)."""
    found = _build_toolchain.version_tuple(ctx.get('python_found'))
    bounds = _build_toolchain.matrix.vllm_python_range(values.get('toolchain_vllm_release'))
    if found is None or not bounds or bounds[0] <= found < bounds[1]:
        return None
    return ('The build Python %s is Python %s, outside vLLM %s\'s requires-python %s: the build would fail or make wheels'
            ' the engine cannot import. Set toolchain_python to a Python inside it, or "" for the per-system table\'s.'
            % (ctx.get('python_path') or values.get('toolchain_python'), ctx.get('python_found'),
               values.get('toolchain_vllm_release'), _build_toolchain.matrix.format_range(bounds)))


@RULES.rule('toolchain-dir-absolute')
def _dir(values, ctx):
    if not is_absolute_path(values['toolchain_dir']):
        return 'toolchain_dir %s must be an absolute path, such as /opt/llmfleet/toolchain.' % show(values['toolchain_dir'])
    return None


def toolchain_input_problems(values, platform, rocm_release='', plan=None, python_found=None, python_path=None):
    """The toolchain role's variables -> a list of messages (empty when they are fine).

    ``plan``: what the system gives for the recipe (the build_toolchain filter); ``python_found``: the build Python's
    own version (``3.12``), asked once it is installed, and ``python_path`` its path."""
    return RULES.messages(values, {'platform': platform, 'rocm_release': rocm_release, 'plan': plan,
                                   'python_found': python_found, 'python_path': python_path})
