#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: controller_files
short_description: Write files on the controller, in one call, without running a module
version_added: 0.1.0
description:
  - Writes each file of O(files) on the controller, from its action plugin. No module runs on the node or on the
    controller, so a host's report costs no process of its own (a C(copy) delegated to localhost runs two modules per file).
  - A file that holds the content and mode already is left alone; another is written to a temporary file beside it and
    renamed over it, so a reader never sees half a file. Parent directories are created (C(0755) under the umask).
  - Meant for output on the controller, such as reports; the node's own files belong to M(ansible.builtin.template) and
    M(ansible.builtin.copy).
author:
  - llmfleet.rocm contributors (@llmfleet)
options:
  files:
    description: The files to write.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: A path on the controller (a relative one is taken from the directory ansible-playbook runs in).
        type: path
        required: true
      content:
        description: The text to write (UTF-8).
        type: str
        required: true
      mode:
        description: The file's mode, as an octal string.
        type: str
        default: '0644'
attributes:
  action:
    support: full
    description: The action plugin writes the files; no module runs.
  check_mode:
    support: full
    description: Says which files would change and writes none (a task with C(check_mode=false) writes them).
  diff_mode:
    support: none
    description: No diff is returned.
  platform:
    support: full
    platforms: posix
    description: The controller's file system.
notes:
  - The files are written with the controller user's rights.
'''

EXAMPLES = r'''
- name: Write the node's reports on the controller
  llmfleet.rocm.controller_files:
    files:
      - path: "{{ playbook_dir }}/reports/{{ inventory_hostname }}.json"
        content: "{{ report | to_nice_json }}\n"
      - path: "{{ playbook_dir }}/reports/{{ inventory_hostname }}.txt"
        content: "{{ lookup('ansible.builtin.template', 'report.txt.j2') }}"
  check_mode: false
'''

RETURN = r'''
paths:
  description: Every file of O(files), as an absolute path.
  returned: always
  type: list
  elements: str
written:
  description: The files this call wrote (in check mode, those it would write).
  returned: always
  type: list
  elements: str
'''
