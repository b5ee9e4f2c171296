# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""ROCm releases and GPU targets: a package version's release, its version code, AMD's repositories of a release,
the gfx targets ROCm does not know."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.amd_repositories import node_repositories
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import KNOWN_GFX_TARGETS

_RELEASE_RE = re.compile(r'^(?:[0-9]+:)?(?P<major>[0-9]+)\.(?P<minor>[0-9]+)(?:\.(?P<patch>[0-9]+))?')


def rocm_release(package_version):
    """``7.1.1.70101-38~24.04`` (a rocm-core package version) -> ``7.1.1``; None when it is not one."""
    if package_version is None:
        return None
    match = _RELEASE_RE.match(str(package_version))
    if not match:
        return None
    return '%s.%s.%s' % (match.group('major'), match.group('minor'), match.group('patch') or '0')


def rocm_version_code(version):
    """``7.1.1`` -> ``70101``, the number AMD puts into every ROCm package version."""
    match = _RELEASE_RE.match(str(version))
    if not match:
        raise AnsibleFilterError('rocm_version_code: %r is not a ROCm version such as 7.1.1' % (version,))
    return '%d%02d%02d' % (int(match.group('major')), int(match.group('minor')), int(match.group('patch') or 0))


def rocm_repositories(base_url, rocm_version, amdgpu_version=None, graphics=None):
    """AMD's apt repositories a node registers for ``rocm_version`` under ``base_url`` (plugin_utils/amd_repositories.py).

    Judges nothing: the rocm role's input checks refuse a bad URL or release before the list is used, and a
    ``graphics`` that is not true or false follows AMD's instructions."""
    return node_repositories(base_url, rocm_version, amdgpu_version, graphics)


def unknown_gfx_targets(targets):
    """The entries of ``targets`` that are not LLVM AMDGPU processor names."""
    if isinstance(targets, str):
        targets = re.split(r'[;,\s]+', targets.strip())
    return [target for target in targets if target and target not in KNOWN_GFX_TARGETS]
