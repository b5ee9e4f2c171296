# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The documentation in its place: README.md a front page, every relative link resolving, each variable documented
once (in its role's argument spec, which the role README points at), the support table saying what meta/runtime.yml
and requirements.txt say, and CHANGELOG.md what antsibull-changelog generates from changelogs/."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
README = os.path.join(ROOT, 'README.md')
README_MAX_BYTES = 12 * 1024
ROLES_DIR = os.path.join(ROOT, 'roles')
ROLES = sorted(name for name in os.listdir(ROLES_DIR) if os.path.isdir(os.path.join(ROLES_DIR, name)))

LINK = re.compile(r'\[[^\]]*\]\((?P<target>[^)\s]+)\)')
CODE_FENCE = re.compile(r'^\s*(```|~~~)')
HEADING = re.compile(r'^(?P<level>#{1,6})\s+(?P<text>.+?)\s*#*\s*$')
SKIPPED_DIRS = {'.git', '.venv', '.collections', '.cache', '.lab', '.ansible', 'tests/output', 'node_modules'}


def read(path):
    with open(path, encoding='utf-8') as handle:
        return handle.read()


def markdown_files():
    """Every Markdown file of the checkout that git tracks or would track (fixtures' notes included)."""
    try:
        listed = subprocess.run(['git', '-C', ROOT, 'ls-files', '--cached', '--others', '--exclude-standard', '*.md'],
                                stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        listed = []
        for folder, dirs, files in os.walk(ROOT):
            rel = os.path.relpath(folder, ROOT)
            dirs[:] = [d for d in dirs if os.path.normpath(os.path.join(rel, d)) not in SKIPPED_DIRS]
            listed.extend(os.path.normpath(os.path.join(rel, name)) for name in files if name.endswith('.md'))
    return sorted(path for path in listed if os.path.exists(os.path.join(ROOT, path)))


def prose_lines(text):
    """The lines outside fenced code blocks."""
    fenced = False
    for line in text.splitlines():
        if CODE_FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def slug(heading):
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces to dashes."""
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', heading).lower()
    text = re.sub(r'[^\w\- ]', '', text.replace('`', ''))
    return text.replace(' ', '-')


def anchors(path):
    seen = {}
    result = set()
    for line in prose_lines(read(path)):
        match = HEADING.match(line)
        if match:
            base = slug(match.group('text'))
            count = seen.get(base, 0)
            seen[base] = count + 1
            result.add(base if count == 0 else '%s-%d' % (base, count))
    result.update(re.findall(r'<a id="([^"]+)"', read(path)))
    return result


def relative_links(path):
    for line in prose_lines(read(os.path.join(ROOT, path))):
        for match in LINK.finditer(re.sub(r'`[^`]*`', '', line)):
            target = match.group('target')
            if re.match(r'^[a-z][a-z0-9+.-]*:', target) or target.startswith('//'):
                continue
            yield target


MARKDOWN = markdown_files()


def test_there_is_markdown_to_check():
    assert 'README.md' in MARKDOWN and len(MARKDOWN) > 10


def test_readme_is_a_front_page():
    size = os.path.getsize(README)
    assert size <= README_MAX_BYTES, 'README.md is %d bytes, more than %d: move the detail to docs/' % (size, README_MAX_BYTES)
    text = read(README)
    for heading in ('## The two set-up commands', '## Supported platforms', '## The stages', '## Where to read more'):
        assert heading in text, 'README.md lacks %r' % heading


def test_readme_names_the_two_set_up_commands():
    section = read(README).split('## The two set-up commands', 1)[1].split('\n## ', 1)[0]
    block = section.split('```sh', 1)[1].split('```', 1)[0]
    commands = [line.split('#', 1)[0].strip() for line in block.strip().splitlines()]
    assert commands == ['make sandbox', 'make test']


@pytest.mark.parametrize('path', MARKDOWN)
def test_relative_links_resolve(path):
    broken = []
    for target in relative_links(path):
        file_part, _sep, anchor = target.partition('#')
        resolved = os.path.normpath(os.path.join(ROOT, os.path.dirname(path), file_part)) if file_part else os.path.join(ROOT, path)
        if not os.path.exists(resolved):
            broken.append('%s (no such file)' % target)
        elif anchor and resolved.endswith('.md') and anchor not in anchors(resolved):
            broken.append('%s (no such heading)' % target)
    assert broken == [], '%s: %s' % (path, ', '.join(broken))


def test_the_support_table_says_what_ci_tests():
    runtime = yaml.safe_load(read(os.path.join(ROOT, 'meta', 'runtime.yml')))
    core = re.search(r'^ansible-core==(\d+)\.(\d+)\.', read(os.path.join(ROOT, 'requirements.txt')), re.M)
    assert core, 'requirements.txt pins no ansible-core'
    tested = '%s.%s' % core.groups()
    assert runtime['requires_ansible'] == '>=%s.0' % tested, 'meta/runtime.yml requires_ansible differs from the ansible-core CI tests'
    row = [line for line in read(README).splitlines() if line.startswith('| Controller |')]
    assert len(row) == 1, 'README.md has no Controller row in its support table'
    assert 'ansible-core %s' % tested in row[0] and runtime['requires_ansible'] in row[0], row[0]


@pytest.mark.parametrize('role', ROLES)
def test_role_readme_points_at_its_spec_instead_of_a_variable_table(role):
    """Each variable is documented once, in the argument spec (with a description: test_argument_specs.py); the README
    says how the role works and points at ansible-doc, and holds no table of the role's variables (a table headed
    Variable, or one whose rows each name an option of the spec and its default). Tables of how something works (the
    values of one variable, the rendered directives and why) stay."""
    text = read(os.path.join(ROLES_DIR, role, 'README.md'))
    assert '`ansible-doc -t role llmfleet.rocm.%s`' % role in text, '%s/README.md does not point at ansible-doc' % role
    spec = yaml.safe_load(read(os.path.join(ROLES_DIR, role, 'meta', 'argument_specs.yml')))
    options = spec['argument_specs']['main'].get('options') or {}
    tables = []
    for line in prose_lines(text):
        if line.startswith('|'):
            if tables and tables[-1][0] == 'open':
                tables[-1][1].append(line)
            else:
                tables.append(['open', [line]])
        elif tables:
            tables[-1][0] = 'closed'
    found = []
    for _state, rows in tables:
        cells = [[cell.strip() for cell in row.strip().strip('|').split('|')] for row in rows]
        header, body = cells[0], cells[2:]
        if header[0].lower().startswith('variable'):
            found.append(rows[0])
            continue
        listed = [row for row in body if re.fullmatch(r'`([a-z_]+)`', row[0]) and row[0].strip('`') in options]
        if body and len(listed) == len(body) and any('default' in cell.lower() for cell in header):
            found.append(rows[0])
    assert found == [], '%s/README.md repeats its argument spec in a table: %s' % (role, found)


def _antsibull_changelog():
    candidates = [os.environ.get('LLMFLEET_ANTSIBULL_CHANGELOG'),
                  os.path.join(os.path.dirname(sys.executable), 'antsibull-changelog'),
                  shutil.which('antsibull-changelog')]
    return next((path for path in candidates if path and os.access(path, os.X_OK)), None)


def test_the_changelog_is_set_up():
    config = yaml.safe_load(read(os.path.join(ROOT, 'changelogs', 'config.yaml')))
    assert config['output'] == [{'file': 'CHANGELOG.md', 'format': 'md'}]
    assert os.path.isdir(os.path.join(ROOT, 'changelogs', 'fragments'))
    releases = yaml.safe_load(read(os.path.join(ROOT, 'changelogs', 'changelog.yaml')))['releases']
    galaxy = yaml.safe_load(read(os.path.join(ROOT, 'galaxy.yml')))
    assert galaxy['version'] in releases, 'galaxy.yml version %s is not released in changelogs/changelog.yaml' % galaxy['version']
    assert re.search(r'^antsibull-changelog==[0-9.]+$', read(os.path.join(ROOT, 'requirements.txt')), re.M)


def test_changelog_md_is_generated_from_changelogs(tmp_path):
    tool = _antsibull_changelog()
    assert tool is not None, 'antsibull-changelog is not installed: make venv installs it from requirements.txt'
    shutil.copy(os.path.join(ROOT, 'galaxy.yml'), str(tmp_path))
    shutil.copytree(os.path.join(ROOT, 'changelogs'), str(tmp_path / 'changelogs'))
    subprocess.run([tool, 'generate', '--output', str(tmp_path / 'generated.md')], cwd=str(tmp_path), check=True,
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert read(str(tmp_path / 'generated.md')) == read(os.path.join(ROOT, 'CHANGELOG.md')), \
        'CHANGELOG.md is edited by hand or stale: run antsibull-changelog generate (docs/changelog.md)'
