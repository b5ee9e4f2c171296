# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kept only for ``gateway_router.py``'s import of ``gateway_server_keys``, now in plugins/plugin_utils/inputs/gateway.py
(the gateway role's filter of that name is in ``__inputs.py``). Exports no filter; goes when gateway_router.py imports
plugin_utils."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.inputs.gateway import gateway_server_keys  # noqa: F401 pylint: disable=unused-import


class FilterModule(object):
    def filters(self):
        return {}
