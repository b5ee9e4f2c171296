# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stand-in for ansible-test's pip bootstrap script, used where its download host is unreachable.

ansible-test runs this file in a virtual environment created without pip, with the
arguments it would give the bootstrap script (pip install options and ``pip==<version>``).
Bootstrapping from the interpreter's own ensurepip, then installing the requested pip
from the package index, gives the same environment.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import subprocess
import sys


def main():
    # ensurepip runs in a process of its own: it points PIP_CONFIG_FILE at /dev/null in the
    # environment of the process that calls it, which would hide the machine's pip settings.
    subprocess.check_call([sys.executable, '-m', 'ensurepip'])
    args = [arg for arg in sys.argv[1:] if arg not in ('--no-setuptools', '--no-wheel')]
    subprocess.check_call([sys.executable, '-m', 'pip', 'install'] + args)


if __name__ == '__main__':
    main()
