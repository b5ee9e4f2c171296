# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing a file in one rename, so that a reader sees the old file or the new one, never half of one."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile


def write_atomic(path, content, mode=0o644):
    """Write ``content`` (text or bytes) to a temporary file beside ``path``, flush it to disk, rename it over ``path``."""
    data = content.encode('utf-8') if not isinstance(content, bytes) else content
    handle, temp = tempfile.mkstemp(dir=os.path.dirname(path) or '.', prefix='.%s.' % os.path.basename(path))
    try:
        with os.fdopen(handle, 'wb') as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.rename(temp, path)
    except Exception:
        if os.path.exists(temp):
            os.remove(temp)
        raise
