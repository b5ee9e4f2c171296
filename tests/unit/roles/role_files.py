# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the tests of the roles' own files share: the collection's plugins by their FQCN (Ansible's collection loader
over .collections, as a run finds them), a role file read as YAML, and a role's text trusted as templates the way a
run trusts a role's files (values given on top stay data)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import yaml

from ansible.template import trust_as_template
from ansible.utils.collection_loader import AnsibleCollectionConfig
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))

# Installed before the collection's modules are imported (the plugin loader then finds the same modules). Modules
# other tests imported as plain packages are set aside first (their tests keep what they hold), or the plugin loader
# finds no filter of theirs.
if AnsibleCollectionConfig.collection_finder is None:
    for _name in [name for name in sys.modules if name == 'ansible_collections' or name.startswith('ansible_collections.')]:
        del sys.modules[_name]
    _AnsibleCollectionFinder(paths=[os.path.join(ROOT, '.collections')])._install()


def load_yaml(path):
    """A file of the collection (a path under its root) as YAML; {} for an empty one."""
    with open(os.path.join(ROOT, path)) as handle:
        return yaml.safe_load(handle) or {}


def trusted(value):
    """A role's own text, every string of it trusted as a template."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return dict((key, trusted(item)) for key, item in value.items())
    if isinstance(value, list):
        return [trusted(item) for item in value]
    return value
