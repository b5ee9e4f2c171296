# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a vLLM release builds or installs for ROCm (``vllm_rocm_recipe``), read from the release's own
``docker/Dockerfile.rocm_base`` and ``docker/Dockerfile.rocm``."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.vllm_recipe import RecipeError
from ansible_collections.llmfleet.rocm.plugins.plugin_utils.vllm_recipe import vllm_rocm_recipe as _recipe


def vllm_rocm_recipe(base_text, rocm_text):
    """The texts of ``docker/Dockerfile.rocm_base`` and ``docker/Dockerfile.rocm`` -> the release's recipe."""
    try:
        return _recipe(base_text, rocm_text)
    except RecipeError as exc:
        raise AnsibleFilterError('vllm_rocm_recipe: %s' % exc)


class FilterModule(object):
    def filters(self):
        return {'vllm_rocm_recipe': vllm_rocm_recipe}
