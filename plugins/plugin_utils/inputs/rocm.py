# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks of the rocm role (``input_problems('rocm')``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.rocm_release import rocm_release, unknown_gfx_targets
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import (
    RuleSet, as_int, is_http_url, mirror_only_rule, show, supported_system_rule)

_RELEASE_RE = re.compile(r'^[0-9]+\.[0-9]+(?:\.[0-9]+)?\Z')
# A name as it appears in a message without quotes (a gfx target, a package).
_PLAIN_RE = re.compile(r'^[A-Za-z0-9_.:+-]+\Z')

RULES = RuleSet('rocm')
supported_system_rule(RULES)
mirror_only_rule(RULES, ['rocm_repo_base_url', 'rocm_repo_key_url'])


def _plain(value):
    return value if isinstance(value, str) and _PLAIN_RE.match(value) else show(value)


def _release_tuple(version):
    release = rocm_release(version)
    return tuple(int(part) for part in release.split('.')) if release else None


def _base_url(values):
    return str(values['rocm_repo_base_url']).rstrip('/')


@RULES.rule('rocm-version-format')
def _version(values, ctx):
    version = values['rocm_version']
    if isinstance(version, str) and _RELEASE_RE.match(version) and _release_tuple(version) >= (6, 0, 0):
        return None
    return ('rocm_version %s is not a ROCm release such as 7.1.1 (6.0 or newer): set it, quoted, to one of the releases'
            ' listed under %s/rocm/apt/.' % (show(version), _base_url(values)))


@RULES.rule('rocm-amdgpu-version-format')
def _amdgpu_version(values, ctx):
    version = values['rocm_amdgpu_version']
    if not values['rocm_install_driver'] or (isinstance(version, str) and _RELEASE_RE.match(version)):
        return None
    return ('rocm_amdgpu_version %s is not an amdgpu release such as 30.20.1: set it, quoted, to one of the releases'
            ' listed under %s/amdgpu/ (or rocm_install_driver: false).' % (show(version), _base_url(values)))


@RULES.rule('rocm-repo-base-url')
def _base(values, ctx):
    if is_http_url(values['rocm_repo_base_url']):
        return None
    return ('rocm_repo_base_url %s is not an http(s) URL: give AMD\'s (https://repo.radeon.com) or a mirror\'s with the'
            ' same layout.' % show(values['rocm_repo_base_url']))


@RULES.rule('rocm-pin-priority-range')
def _pin(values, ctx):
    priority = as_int(values['rocm_pin_priority'])
    if priority is not None and 1 <= priority <= 32767:
        return None
    return ('rocm_pin_priority %s is outside 1..32767: keep it above 1000 (1001) so that the distribution\'s packages'
            ' cannot shadow AMD\'s.' % (priority if priority is not None else show(values['rocm_pin_priority'])))


@RULES.rule('rocm-packages-empty')
def _packages(values, ctx):
    if values['rocm_packages']:
        return None
    return 'rocm_packages is empty: name at least one meta package, for example [rocm].'


@RULES.rule('rocm-expected-gfx-targets-unknown')
def _targets(values, ctx):
    unknown = unknown_gfx_targets(values['rocm_expected_gfx_targets'])
    if not unknown:
        return None
    return ('rocm_expected_gfx_targets has unknown targets %s: use LLVM names such as gfx942 (MI300X), gfx90a (MI250X/MI210),'
            ' gfx950 (MI350X).' % ', '.join(_plain(target) for target in unknown))


@RULES.rule('rocm-expected-gpu-count')
def _count(values, ctx):
    count = values['rocm_expected_gpu_count']
    if count is None or (as_int(count) is not None and as_int(count) >= 1):
        return None
    return 'rocm_expected_gpu_count %s must be a positive number of GPUs or null (any non-zero count).' % show(count)


@RULES.rule('rocm-kernel-managed-type')
def _kernel_managed(values, ctx):
    value = values['rocm_kernel_managed']
    if value is None or isinstance(value, bool):
        return None
    return ('rocm_kernel_managed %s must be true, false or null (null follows the node\'s kind,'
            ' llmfleet_platform.kernel_managed).' % show(value))


@RULES.rule('rocm-graphics-repository-type')
def _graphics(values, ctx):
    value = values['rocm_graphics_repository']
    if value is None or isinstance(value, bool):
        return None
    return ('rocm_graphics_repository %s must be true, false or null (null follows AMD\'s instructions: the graphics'
            ' repository from ROCm 7.0 on).' % show(value))


# The node's answers, given by the preflight's tasks (None before they ran).

@RULES.rule('rocm-release-missing')
def _missing(values, ctx):
    checks = ctx.get('release_checks')
    if not checks:
        return None
    missing = [check['item'] for check in checks if check.get('status') == 404]
    if not missing:
        return None
    suite = (ctx.get('platform') or {}).get('rocm_suite') or ''
    # What to check for each missing repository: the variable that names its release, where its releases are listed.
    fixes = []
    for item in missing:
        kind = item.get('kind') or item.get('name')
        if kind == 'amdgpu':
            fix = 'rocm_amdgpu_version (%s) against %s/amdgpu/' % (show(values['rocm_amdgpu_version']), _base_url(values))
        elif kind == 'graphics':
            fix = ('rocm_version (%s) against %s/graphics/ (a mirror without it: mirror it, or rocm_graphics_repository:'
                   ' false where the site serves its packages another way)' % (show(values['rocm_version']), _base_url(values)))
        else:
            fix = 'rocm_version (%s) against %s/rocm/apt/' % (show(values['rocm_version']), _base_url(values))
        if fix not in fixes:
            fixes.append(fix)
    return ('%s has no %s suite (HTTP 404). Check %s.'
            % (', '.join(item['uri'] for item in missing), suite, '; '.join(fixes)))


def _release_change(values, ctx):
    """(installed release, -1 | 0 | 1 for rocm_version older, the same, newer), or None before the node was read or
    for a release that does not parse."""
    installed = (ctx.get('packages') or {}).get('rocm-core')
    have = _release_tuple(installed) if installed else None
    want = _release_tuple(values['rocm_version'])
    if have is None or want is None:
        return None
    return rocm_release(installed), (want > have) - (want < have)


@RULES.rule('rocm-downgrade')
def _downgrade(values, ctx):
    change = _release_change(values, ctx)
    if values['rocm_allow_downgrade'] or change is None or change[1] >= 0:
        return None
    return ('ROCm %s is installed and rocm_version asks for the older %s. Set rocm_allow_downgrade=true to downgrade,'
            ' or raise rocm_version.' % (change[0], show(values['rocm_version'])))


@RULES.rule('rocm-upgrade')
def _upgrade(values, ctx):
    # Until upgrades take the nodes out a few at a time, an installed ROCm changes only where the operator says so: a
    # new default of rocm_version must not restart and reboot every node of a run at once.
    change = _release_change(values, ctx)
    if values['rocm_allow_upgrade'] or change is None or change[1] <= 0:
        return None
    return ('ROCm %s is installed and rocm_version asks for %s: the upgrade stops the node\'s workers and reboots it,'
            ' on every node of the run at once (llmfleet_serial). Set rocm_allow_upgrade=true for this run (with'
            ' llmfleet_serial limiting the nodes taken out together), or set rocm_version to %s to keep it.'
            % (change[0], show(values['rocm_version']), change[0]))


def rocm_input_problems(values, platform, release_checks=None, packages=None):
    """The rocm role's variables (and, once read, the node's answers) -> a list of messages (empty when they are fine)."""
    return RULES.messages(values, {'platform': platform, 'release_checks': release_checks, 'packages': packages})
