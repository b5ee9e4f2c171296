# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Values written into systemd unit files, escaped for systemd (not for a shell).

systemd splits ``ExecStart=`` into words at white space, honours double quotes with C-style
backslash escapes, expands specifiers (``%n``, ``%h``, ...) everywhere and ``$VAR``/``${VAR}`` in
command lines. A value a user sets must stay one word with the characters it had: ``%`` becomes
``%%``, ``$`` in a command line ``$$``, and a word with anything but plain characters is quoted.
A line break or another control character can never be written: it is refused.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.errors import AnsibleFilterError

_PLAIN_RE = re.compile(r'^[A-Za-z0-9_@+=:,./-]+\Z')
_CONTROL_RE = re.compile(r'[\x00-\x1f\x7f]')
_ENV_NAME_RE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*\Z')


def _text(value, what):
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list, tuple)):
        raise AnsibleFilterError('%s: %r is not a string or a number' % (what, value))
    text = str(value)
    if _CONTROL_RE.search(text):
        raise AnsibleFilterError('%s: %r holds a line break or another control character, which a unit file cannot'
                                 ' hold in one value' % (what, text))
    return text


def _quoted(text):
    return '"%s"' % text.replace('\\', '\\\\').replace('"', '\\"')


def systemd_exec_word(value):
    """One word of an ``ExecStart=`` line: specifiers and variables escaped, quoted when needed."""
    text = _text(value, 'systemd_exec_word')
    text = text.replace('%', '%%').replace('$', '$$')
    if _PLAIN_RE.match(text):
        return text
    return _quoted(text)


def systemd_exec_line(argv, separator=' '):
    """An argv list as the words of an ``ExecStart=`` line, joined with ``separator``."""
    if not isinstance(argv, (list, tuple)) or not argv:
        raise AnsibleFilterError('systemd_exec_line: expects a non-empty list of arguments, got %r' % (argv,))
    return separator.join(systemd_exec_word(word) for word in argv)


def systemd_environment(name, value):
    """The value of one ``Environment=`` assignment, ``"NAME=value"`` (specifiers escaped)."""
    if not isinstance(name, str) or not _ENV_NAME_RE.match(name):
        raise AnsibleFilterError('systemd_environment: %r is not an environment variable name' % (name,))
    text = _text(value, 'systemd_environment(%s)' % name).replace('%', '%%')
    return _quoted('%s=%s' % (name, text))


_ESCAPES = {'\\': '\\', '"': '"', "'": "'", 'n': '\n', 't': '\t', 's': ' ', 'a': '\a', 'b': '\b', 'f': '\f',
            'r': '\r', 'v': '\v'}


def _unescape(text, index):
    """The character of the C escape at ``text[index]`` (a backslash) and the index after it."""
    if index + 1 >= len(text):
        raise ValueError('a backslash ends the text: %r' % text)
    char = text[index + 1]
    if char in _ESCAPES:
        return _ESCAPES[char], index + 2
    if char == 'x' and re.match(r'[0-9a-fA-F]{2}', text[index + 2:index + 4]):
        return chr(int(text[index + 2:index + 4], 16)), index + 4
    raise ValueError('unknown escape \\%s in %r' % (char, text))


def systemd_split(text, command_line=False):
    """The words systemd reads from a directive's value (test helper, the inverse of the filters above).

    Specifiers first (``%%`` is ``%``; any other ``%`` would be expanded by systemd and is an error here), then the
    words: split at white space, double or single quotes group, C escapes inside and outside quotes. With
    ``command_line`` (``ExecStart=``), ``$$`` is ``$`` and a lone ``$`` (a variable systemd would expand) is an error.
    """
    if re.search(r'%[^%]', text.replace('%%', '')) or text.replace('%%', '').endswith('%'):
        raise ValueError('a specifier systemd would expand in %r' % text)
    text = text.replace('%%', '%')
    words = []
    index = 0
    while True:
        while index < len(text) and text[index] in ' \t':
            index += 1
        if index >= len(text):
            return words
        word = []
        while index < len(text) and text[index] not in ' \t':
            char = text[index]
            if char in '"\'':
                end = index + 1
                while True:
                    if end >= len(text):
                        raise ValueError('an unterminated quote in %r' % text)
                    if text[end] == char:
                        break
                    if text[end] == '\\':
                        unescaped, end = _unescape(text, end)
                        word.append(unescaped)
                        continue
                    word.append(text[end])
                    end += 1
                index = end + 1
            elif char == '\\':
                unescaped, index = _unescape(text, index)
                word.append(unescaped)
            else:
                word.append(char)
                index += 1
        word = ''.join(word)
        if command_line:
            if re.search(r'\$[^$]', word.replace('$$', '')) or word.replace('$$', '').endswith('$'):
                raise ValueError('a variable systemd would expand in %r' % word)
            word = word.replace('$$', '$')
        words.append(word)


def systemd_directives(text):
    """(section, name, value) of each directive of a unit's text, in order, continuation lines joined as systemd joins
    them (a line ending in a backslash goes on with the next, the backslash read as a space); comments and empty lines
    skipped."""
    found = []
    section = None
    pending = ''
    for line in text.split('\n'):
        if not pending and (not line.strip() or line.lstrip()[:1] in '#;'):
            continue
        line = pending + line
        if line.endswith('\\'):
            pending = line[:-1] + ' '
            continue
        pending = ''
        if line.startswith('['):
            section = line.strip().strip('[]')
            continue
        name, _sep, value = line.partition('=')
        found.append((section, name.strip(), value.strip()))
    if pending:
        raise ValueError('the unit ends inside a continued line')
    return found


def systemd_unit_read(text):
    """What systemd runs from a unit's text: ``exec_start`` (the last ExecStart='s words, or None), ``user`` (User=, or
    None) and ``environment`` (every Environment= assignment, name -> value), each read by systemd's rules."""
    if not isinstance(text, str):
        raise AnsibleFilterError('systemd_unit_read: expects the text of a unit, got %r' % (text,))
    try:
        directives = systemd_directives(text)
        exec_start, user, environment = None, None, {}
        for _section, name, value in directives:
            if name == 'ExecStart':
                exec_start = systemd_split(value, command_line=True)
            elif name == 'User':
                user = value
            elif name == 'Environment':
                for word in systemd_split(value):
                    key, _sep, item = word.partition('=')
                    environment[key] = item
    except ValueError as exc:
        raise AnsibleFilterError('systemd_unit_read: %s' % exc)
    return {'exec_start': exec_start, 'user': user, 'environment': environment}
