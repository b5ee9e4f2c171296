# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a system takes the gcc and the Python of a vLLM release's recipe (``build_toolchain``, public).

The engine build's own arithmetic (architecture list, MAX_JOBS, build key) is the roles' internals:
plugins/plugin_utils/build_plan.py, reached through plugins/filter/__roles.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

__all__ = ['FilterModule', 'build_toolchain']


def build_toolchain(system, release='', releases=None, python_version='', gcc_version='', python_path='', mirror_url='',
                    who='toolchain'):
    """Where a system takes the compiler and the Python of a vLLM release's recipe (module_utils/_build_toolchain.py)."""
    # Imported here, not when the file is loaded: plugins/filter/__roles.py says why.
    from ansible_collections.llmfleet.rocm.plugins.module_utils import _build_toolchain
    if who not in ('toolchain', 'engine'):
        raise AnsibleFilterError('build_toolchain: who is toolchain or engine, not %r' % (who,))
    if releases is not None and not isinstance(releases, dict):
        raise AnsibleFilterError('build_toolchain: releases must be the recipe table (release -> entry)')
    return _build_toolchain.toolchain(system, python_version=python_version, gcc_version=gcc_version,
                                      python_path=python_path, recipe=_build_toolchain.recipe_needs(release, releases),
                                      mirror_url=mirror_url, who=who)


class FilterModule(object):
    """llmfleet.rocm's public build filter."""

    def filters(self):
        return {'build_toolchain': build_toolchain}
