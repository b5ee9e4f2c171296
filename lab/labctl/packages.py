# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stub ROCm and amdgpu .deb packages, from data: lab/packages/rocm.json (names, versions in AMD's
form, dependencies) and lab/packages/layouts.json (the files, links and maintainer scripts of each kind)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil

from .common import LAB_SRC, LabError, run, write_file

SPEC_JSON = os.path.join(LAB_SRC, 'packages', 'rocm.json')
LAYOUTS_JSON = os.path.join(LAB_SRC, 'packages', 'layouts.json')


def _load_json(path):
    with open(path) as handle:
        return json.load(handle)


def repo_spec():
    """lab/packages/rocm.json: the releases, suites and packages of the stub repository."""
    return _load_json(SPEC_JSON)


def package_layouts():
    """lab/packages/layouts.json: what a package of each 'files' kind holds."""
    return _load_json(LAYOUTS_JSON)


def _spec_package(spec, name):
    for group in ('packages', 'driver_packages', 'graphics_packages'):
        if name in (spec.get(group) or {}):
            return spec[group][name]
    return spec['exporter_packages'][name]


def package_versions(spec, release, suite):
    """Return {package: full version} of one ROCm release for one suite (jammy/noble)."""
    rel = spec['releases'][release]
    ubuntu = spec['suites'][suite]
    versions = {}
    for name, pkg in spec['packages'].items():
        # A development package has its library's version (version_of).
        component = release if pkg['version'] == 'rocm' else rel['versions'].get(pkg.get('version_of', name), pkg['version'])
        versions[name] = '%s.%s-%s~%s' % (component, rel['build'], rel['revision'], ubuntu)
    drv = rel['amdgpu']
    versions['amdgpu-dkms'] = '1:%s.%s-%s.%s' % (drv['kernel_driver'], drv['build'], drv['revision'], ubuntu)
    versions['amdgpu-dkms-firmware'] = '%s.0.%s-%s.%s' % (drv['release'], drv['build'], drv['revision'], ubuntu)
    # The graphics repository's packages (graphics/<release>/ubuntu): 1:<ROCm major.minor>.<build>-<graphics build>.<ubuntu>.
    for name in spec.get('graphics_packages') or {}:
        versions[name] = '1:%s.%s-%s.%s' % ('.'.join(release.split('.')[:2]), rel['build'], rel['graphics']['revision'],
                                            ubuntu)
    exporter = spec.get('exporter')
    for name in spec.get('exporter_packages') or {}:
        versions[name] = '%s-%s~%s' % (exporter['release'], exporter['revision'], ubuntu)
    return versions


def package_depends(spec, name, versions):
    pkg = _spec_package(spec, name)
    deps = []
    for dep in pkg['depends']:
        dep = dep.replace('{firmware}', versions['amdgpu-dkms-firmware'])
        if pkg.get('meta') and dep in versions:
            dep = '%s (= %s)' % (dep, versions[dep])
        deps.append(dep)
    return deps


def _text(lines, values):
    return ''.join(line.format(**values) + '\n' for line in lines)


def layout_values(spec, name, release, suite, versions, layout):
    """The names a layout's text and paths may use (the layout's own vars last, each from those before)."""
    rel = spec['releases'][release]
    values = {'name': name, 'version': versions[name], 'release': release, 'prefix': '/opt/rocm-%s' % release,
              'revision': rel['revision'], 'priority': int(rel['build']), 'ubuntu': spec['suites'][suite],
              'kernel_driver': rel['amdgpu']['kernel_driver'], 'driver_revision': rel['amdgpu']['revision'],
              'components': rel['versions']}
    for key, value in layout.get('vars', {}).items():
        values[key] = value.format(**values)
    return values


def control_fields(spec, name, versions, arch):
    pkg = _spec_package(spec, name)
    control = [('Package', name), ('Version', versions[name]), ('Architecture', arch), ('Maintainer', spec['maintainer'])]
    deps = package_depends(spec, name, versions)
    if deps:
        control.append(('Depends', ', '.join(deps)))
    control += [('Section', 'devel' if name.startswith('rocm') else 'misc'), ('Priority', 'optional'),
                ('Homepage', 'https://github.com/RadeonOpenCompute/ROCm'),
                ('Description', '%s\n llmfleet lab stub (same name, version and dependencies as AMD\'s; no GPU code).'
                 % pkg['description'])]
    return control


def stage_package(spec, name, release, suite, versions, root, layouts=None):
    """Fill root with the package's files and DEBIAN/ (control, maintainer scripts); return its architecture."""
    layouts = layouts or package_layouts()
    kind = _spec_package(spec, name)['files']
    if kind not in layouts['layouts']:
        raise LabError('package %s: no layout %r in %s' % (name, kind, LAYOUTS_JSON))
    layout = layouts['layouts'][kind]
    values = layout_values(spec, name, release, suite, versions, layout)

    def target(path):
        return os.path.join(root, path.format(**values).lstrip('/'))

    for entry in layout.get('files', []):
        if 'copy' in entry:
            with open(os.path.join(LAB_SRC, entry['copy']), 'rb') as handle:
                data = handle.read()
        elif 'entry' in entry:
            data = _text(layouts['entry_script'], dict(values, tool=entry['entry']))
        else:
            data = _text(entry['lines'], values)
        write_file(target(entry['path']), data, int(entry.get('mode', '0644'), 8))
    for link in layout.get('links', []):
        path = target(link['path'])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.symlink(link['target'].format(**values), path)
    for script, lines in sorted(layout.get('scripts', {}).items()):
        write_file(os.path.join(root, 'DEBIAN', script),
                   _text(layouts['maintainer_script_header'], {}) + _text(lines, values), 0o755)
    arch = layout.get('architecture', 'amd64')
    write_file(os.path.join(root, 'DEBIAN', 'control'),
               ''.join('%s: %s\n' % item for item in control_fields(spec, name, versions, arch)))
    return arch


def pool_path(name, version, arch):
    return 'pool/main/%s/%s/%s_%s_%s.deb' % (name[0], name, name, version.split(':', 1)[-1], arch)


def build_debs(spec, names, release, suite, versions, base, work):
    """Stage and build each package of names into base/pool/ (dpkg-deb), staging under work."""
    layouts = package_layouts()
    for name in names:
        root = os.path.join(work, '%s-%s-%s' % (name, release, suite))
        os.makedirs(root)
        arch = stage_package(spec, name, release, suite, versions, root, layouts)
        deb = os.path.join(base, pool_path(name, versions[name], arch))
        os.makedirs(os.path.dirname(deb), exist_ok=True)
        run(['dpkg-deb', '--root-owner-group', '-Zgzip', '--build', root, deb], quiet=True)
        shutil.rmtree(root)
