# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a vLLM release builds or installs for ROCm (``vllm_rocm_recipe``), read from the release's own
``docker/Dockerfile.rocm_base`` and ``docker/Dockerfile.rocm``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError


def vllm_rocm_recipe(base_text, rocm_text):
    """The texts of ``docker/Dockerfile.rocm_base`` and ``docker/Dockerfile.rocm`` -> the release's recipe."""
    # Imported here, not when the file is loaded: plugins/filter/__roles.py says why.
    from ansible_collections.llmfleet.rocm.plugins.plugin_utils import vllm_recipe
    try:
        return vllm_recipe.vllm_rocm_recipe(base_text, rocm_text)
    except vllm_recipe.RecipeError as exc:
        raise AnsibleFilterError('vllm_rocm_recipe: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'vllm_rocm_recipe': vllm_rocm_recipe}
