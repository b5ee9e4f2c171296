# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""AMD's apt repositories a node registers for one ROCm release: one source of the rule for the rocm role (its deb822
sources) and the mirror role (what a snapshot holds).

- ``rocm``: ``rocm/apt/<ROCm release>``, the ROCm user space.
- ``graphics``: ``graphics/<ROCm release>/ubuntu``, from ROCm 7.0 on. AMD's ROCm 7.x package-manager instructions for
  Ubuntu 22.04/24.04 and Debian 12 register it beside ``rocm`` with the same key and suite; since 7.0 it serves the
  user-space graphics packages (``amdgpu-core``, ``libdrm-amdgpu-*``, ``mesa-amdgpu-*``) that ROCm packages depend on
  and that the driver repository no longer carries (roles/rocm/README.md has the sources).
- ``amdgpu``: ``amdgpu/<amdgpu release>/ubuntu``, the kernel driver (amdgpu-dkms), its own numbering since 30.x.
- ``exporter``: ``device-metrics-exporter/apt/<release>``, AMD's Device Metrics Exporter (the exporters role).

Every one takes the suite of the node's row of the support table (jammy or noble; jammy on Debian 12) and component
``main``, and is signed by the same key.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Where each kind of repository sits under AMD's base URL (or a mirror's), by its release.
LAYOUT = {
    'rocm': 'rocm/apt/%s',
    'graphics': 'graphics/%s/ubuntu',
    'amdgpu': 'amdgpu/%s/ubuntu',
    'exporter': 'device-metrics-exporter/apt/%s',
}
# The first ROCm release whose instructions register the graphics repository.
GRAPHICS_SINCE = (7, 0)

_RELEASE_RE = re.compile(r'^(?P<major>[0-9]+)\.(?P<minor>[0-9]+)(?:\.[0-9]+)?\Z')


def repository_path(kind, release):
    """``('graphics', '7.1.1')`` -> ``graphics/7.1.1/ubuntu``, the path under the base URL."""
    return LAYOUT[kind] % release


def graphics_wanted(rocm_version, setting=None):
    """Whether a node registers the graphics repository: ``setting`` when it is true or false, else AMD's
    instructions (ROCm 7.0 and newer). A version that is not a release (the input checks refuse it) gives False."""
    if isinstance(setting, bool):
        return setting
    match = _RELEASE_RE.match(str(rocm_version or ''))
    if not match:
        return False
    return (int(match.group('major')), int(match.group('minor'))) >= GRAPHICS_SINCE


def node_repositories(base_url, rocm_version, amdgpu_version=None, graphics=None):
    """The repositories a node registers, in the order apt is given them: a list of {name, kind, release, path, uri}.

    ``amdgpu_version``: the driver's release, or empty/None where the node takes no driver. ``graphics``: true, false
    or None (AMD's instructions, ``graphics_wanted``). ``name`` is the source's file name under
    /etc/apt/sources.list.d (``amdgraphics`` is the name AMD gives the graphics repository in its RPM instructions).
    """
    base = str(base_url).rstrip('/')
    wanted = [('rocm', 'rocm', str(rocm_version))]
    if graphics_wanted(rocm_version, graphics):
        wanted.append(('amdgraphics', 'graphics', str(rocm_version)))
    if amdgpu_version:
        wanted.append(('amdgpu', 'amdgpu', str(amdgpu_version)))
    return [{'name': name, 'kind': kind, 'release': release, 'path': repository_path(kind, release),
             'uri': '%s/%s' % (base, repository_path(kind, release))}
            for name, kind, release in wanted]
