# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one runner of the facts modules: find a tool, run an argv list in the C locale, parse it.

A module makes one ``ToolRunner(module)``. ``find`` looks the tool up on ``PATH``, then in the
extra directories (``get_bin_path(..., opt_dirs=...)``); ``run`` runs an argument list (never
a shell) with ``LANG=C``/``LC_ALL=C`` and remembers it in ``commands``; ``read`` runs and parses
in one go and turns what the parsers raise into ``fail_json``:

- ``ToolError``: the tool printed an error line. The module fails with that line (``tool_line``)
  and the parser's advice on what to do.
- ``ParseError``: output in no known format. After a non-zero exit that is the exit's failure
  (with the first lines of the output); after a zero exit the module says that it cannot read
  the output and which command to report.
- A non-zero exit that the parser did not explain fails too, unless the module accepts it.

Every failure names the tool (``tool``) and returns the commands run so far (``commands``).
The small file readers beside it are for sysfs and procfs, where a missing file is a reading
("not there"), not an error.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import ParseError, ToolError

C_LOCALE = {'LC_ALL': 'C', 'LANG': 'C', 'LANGUAGE': 'C'}
# Where system tools live besides PATH (a become without a login shell may have a short PATH).
SYSTEM_BIN_DIRS = ['/usr/bin', '/usr/sbin', '/sbin', '/bin']


def output_text(out, err):
    """Tools print errors on either stream: the parsers read both, stdout first."""
    out = out or ''
    err = err or ''
    if not err:
        return out
    return out + '\n' + err if out else err


def first_lines(text, count=5):
    """The first non-empty lines of ``text`` joined with `` | `` (for a message)."""
    lines = [line.strip() for line in (text or '').splitlines() if line.strip()]
    return ' | '.join(lines[:count]) or '(no output)'


def read_text(path):
    """The text of a file, or None when it cannot be read (missing, no permission)."""
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError, UnicodeDecodeError):
        return None


def read_bytes(path):
    """The bytes of a file, or None when it cannot be read."""
    try:
        with open(path, 'rb') as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def list_dir(path):
    """The sorted names in a directory, or [] when it cannot be listed."""
    try:
        return sorted(os.listdir(path))
    except (IOError, OSError):
        return []


class ToolRunner(object):
    """Finds and runs the tools of one module run; remembers the argument lists in ``commands``."""

    def __init__(self, module, opt_dirs=None):
        self.module = module
        self.opt_dirs = list(SYSTEM_BIN_DIRS if opt_dirs is None else opt_dirs)
        self.commands = []

    def find(self, name, opt_dirs=None):
        """The tool's path on PATH, else in the extra directories, or None when it is not installed.

        PATH first: ``get_bin_path`` alone would search ``opt_dirs`` before PATH.
        """
        return self.module.get_bin_path(name) or self.module.get_bin_path(
            name, opt_dirs=list(self.opt_dirs if opt_dirs is None else opt_dirs))

    def run(self, argv):
        """Run ``argv`` in the C locale: ``(rc, stdout, stderr)``. Never a shell, never ``check_rc``."""
        argv = [str(arg) for arg in argv]
        self.commands.append(argv)
        rc, out, err = self.module.run_command(argv, check_rc=False, environ_update=dict(C_LOCALE))
        return rc, out or '', err or ''

    def parse(self, tool, argv, parser, rc, out, err, accept_rc=None, raise_tool_errors=False):
        """Parse one run's output; failures go to ``fail_json`` (see the module docstring).

        ``accept_rc(rc, parsed)`` says whether a non-zero exit is an answer (for example
        numactl's exit 1 after "No NUMA available"). With ``raise_tool_errors`` a ``ToolError``
        is raised for the module to judge (it may still call ``fail_tool_error``).
        """
        text = output_text(out, err)
        try:
            parsed = parser(text)
        except ToolError as exc:
            if raise_tool_errors:
                raise
            self.fail_tool_error(exc, tool=tool)
        except ParseError as exc:
            if rc != 0:
                self.fail_exit(tool, argv, rc, text)
            self.fail_unreadable(tool, exc, argv)
        if rc != 0 and not (accept_rc is not None and accept_rc(rc, parsed)):
            self.fail_exit(tool, argv, rc, text)
        return parsed

    def read(self, tool, argv, parser, accept_rc=None, raise_tool_errors=False):
        """``run`` and ``parse`` in one: the parsed output, or the module fails."""
        rc, out, err = self.run(argv)
        return self.parse(tool, argv, parser, rc, out, err, accept_rc=accept_rc, raise_tool_errors=raise_tool_errors)

    def fail(self, msg, **extra):
        """``fail_json`` with the commands run so far."""
        extra.setdefault('commands', self.commands)
        self.module.fail_json(msg=msg, **extra)

    def fail_tool_error(self, exc, tool=None, **extra):
        """The tool's own error line and what to do about it."""
        tool = tool or exc.tool
        self.fail('%s reported an error: "%s". %s' % (tool, exc.line, exc.hint), tool=tool, tool_line=exc.line, **extra)

    def fail_unreadable(self, tool, exc, argv, **extra):
        """Output the parser does not know: say so and which command to report."""
        self.fail('%s printed output that llmfleet.rocm cannot read (%s). Please report it with the output of "%s".'
                  % (tool, exc.detail, ' '.join(argv)), tool=tool, **extra)

    def fail_exit(self, tool, argv, rc, text, **extra):
        """A non-zero exit that no error line explains, with the first lines of the output."""
        self.fail('%s failed: %s exited with %d: %s' % (tool, ' '.join(argv), rc, first_lines(text)), tool=tool, **extra)
