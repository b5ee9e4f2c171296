# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the lab tooling that need no container: the simulated GPU tools against the
real parsers, the stub repository's package shape, the image recipe hash, the inventory."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import re
import subprocess
import sys
import zipfile

import pytest
import yaml

from ansible_collections.llmfleet.rocm.plugins.module_utils import _amd_smi as amd_smi, _rocm_smi as rocm_smi, _rocminfo as rocminfo
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import (
    HINT_DRIVER, HINT_PERMISSION, ToolError, normalize_gfx)

# lab/stubs/ and lab/ (conftest.py)
import gpusim
import labhost
from labctl import cli, common, image, packages, repository

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PROFILES = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, 'lab', 'profiles', '*.json')))
ROCM_SMI_ARGS = ['--showproductname', '--showbus', '--showtoponuma', '--showmeminfo', 'vram', '--showdriverversion']


def profile(name):
    with open(os.path.join(ROOT, 'lab', 'profiles', name + '.json')) as handle:
        return json.load(handle)


def expected(name):
    """The profile's GPUs as the facts contract describes them, in PCI order."""
    gpus = sorted(profile(name)['gpus'], key=lambda gpu: gpu['pci'])
    return [{'pci_address': g['pci'], 'numa_node': g['numa_node'], 'gfx_target': labhost.MODELS[g['model']]['gfx'],
             'compute_units': labhost.MODELS[g['model']]['compute_units'],
             'vram_bytes': labhost.MODELS[g['model']]['vram_mb'] * 1024 * 1024,
             'apu': labhost.MODELS[g['model']]['apu']} for g in gpus]


def state(name, **kwargs):
    kwargs.setdefault('driver', '6.16.6')
    kwargs.setdefault('rocm_version', '7.1.1')
    return labhost.State(profile=profile(name), **kwargs)


def test_there_are_the_four_profiles():
    assert set(['mi300x-8', 'mi300x-2', 'mi250x-4', 'mi210-plus-igpu']) <= set(PROFILES)


@pytest.mark.parametrize('name', PROFILES)
def test_profile_is_consistent(name):
    data = profile(name)
    assert data['gpus'], 'a profile has GPUs'
    nodes = set(cpu['numa_node'] for cpu in data['cpus'])
    for gpu in data['gpus']:
        assert gpu['model'] in labhost.MODELS
        assert gpu['numa_node'] in nodes, 'GPU %s on a NUMA node without CPUs' % gpu['pci']
        assert normalize_gfx(labhost.MODELS[gpu['model']]['gfx']) == labhost.MODELS[gpu['model']]['gfx']
    assert len(set(gpu['pci'] for gpu in data['gpus'])) == len(data['gpus'])


def test_mi300x_8_is_two_sockets_four_gpus_each():
    numa = [gpu['numa_node'] for gpu in expected('mi300x-8')]
    assert numa == [0, 0, 0, 0, 1, 1, 1, 1]
    assert set(gpu['gfx_target'] for gpu in expected('mi300x-8')) == set(['gfx942'])


@pytest.mark.parametrize('name', PROFILES)
def test_rocminfo_output_parses_to_the_profile(name):
    out, err, rc = gpusim.render_rocminfo(state(name))
    assert rc == 0 and err == ''
    assert out.startswith('\x1b[37mROCk module version 6.16.6 is loaded\x1b[0m\n')
    assert out.rstrip().endswith('*** Done ***')
    gpus = rocminfo.parse_rocminfo(out)['gpus']
    want = expected(name)
    assert [g['pci_address'] for g in gpus] == [w['pci_address'] for w in want]
    assert [g['gfx_target'] for g in gpus] == [w['gfx_target'] for w in want]
    assert [g['compute_units'] for g in gpus] == [w['compute_units'] for w in want]
    # rocminfo's pool of an APU is system memory, not the VRAM carve-out the SMI tools report.
    assert [g['vram_bytes'] for g, w in zip(gpus, want) if not w['apu']] == [w['vram_bytes'] for w in want if not w['apu']]


@pytest.mark.parametrize('name', PROFILES)
def test_rocm_smi_output_parses_to_the_profile(name):
    out, err, rc = gpusim.render_rocm_smi(state(name), ROCM_SMI_ARGS + ['--json'])
    assert rc == 0 and err == ''
    parsed = rocm_smi.parse_rocm_smi_json(out)
    want = expected(name)
    assert parsed['driver_version'] == '6.16.6'
    assert [(g['pci_address'], g['numa_node'], g['gfx_target'], g['vram_bytes']) for g in parsed['gpus']] == [
        (w['pci_address'], w['numa_node'], w['gfx_target'], w['vram_bytes']) for w in want]


@pytest.mark.parametrize('tool,args', [('rocm-smi', []), ('rocm-smi', ROCM_SMI_ARGS), ('rocm-smi', ['--showpower', '--json']),
                                       ('amd-smi', ['static']), ('amd-smi', ['process', '--json']),
                                       ('amd-smi', ['metric', '--clock', '--json'])])
def test_what_the_collection_does_not_run_says_so(tool, args):
    render = {'rocm-smi': gpusim.render_rocm_smi, 'amd-smi': gpusim.render_amd_smi}[tool]
    out, err, rc = render(state('mi300x-2'), args)
    assert (out, rc) == ('', 2) and 'llmfleet lab stub' in err and 'simulated' in err


@pytest.mark.parametrize('name', PROFILES)
def test_amd_smi_static_and_list_parse_to_the_profile(name):
    st = state(name)
    want = expected(name)
    out, _err, rc = gpusim.render_amd_smi(st, ['static', '--json'])
    assert rc == 0
    static = amd_smi.parse_amd_smi_static_json(out)
    assert static['driver_version'] == '6.16.6'
    assert [(g['pci_address'], g['numa_node'], g['gfx_target'], g['vram_bytes'], g['compute_units']) for g in static['gpus']] == [
        (w['pci_address'], w['numa_node'], w['gfx_target'], w['vram_bytes'], w['compute_units']) for w in want]
    out, _err, rc = gpusim.render_amd_smi(st, ['list', '--json'])
    listed = amd_smi.parse_amd_smi_list_json(out)['gpus']
    assert [g['pci_address'] for g in listed] == [w['pci_address'] for w in want]


@pytest.mark.parametrize('release,tool,driver', [('7.0.2', '26.0.2+39589fda', '6.14.14'), ('7.1.1', '26.2.0+021c61fc', '6.16.6')])
def test_amd_smi_version_per_release(release, tool, driver):
    out, _err, _rc = gpusim.render_amd_smi(state('mi300x-2', rocm_version=release, driver=driver), ['version'])
    parsed = amd_smi.parse_amd_smi_version(out)
    assert parsed['tool_version'] == tool and parsed['rocm_version'] == release and parsed['driver_version'] == driver


def _text(result):
    out, err, _rc = result
    return out + err


def test_without_the_driver_every_tool_prints_the_driver_error():
    st = state('mi300x-8', loaded=False)
    for parse, result in ((rocminfo.parse_rocminfo, gpusim.render_rocminfo(st)),
                          (rocm_smi.parse_rocm_smi_json, gpusim.render_rocm_smi(st, ROCM_SMI_ARGS + ['--json'])),
                          (amd_smi.parse_amd_smi_static_json, gpusim.render_amd_smi(st, ['static', '--json']))):
        with pytest.raises(ToolError) as info:
            parse(_text(result))
        assert info.value.hint == HINT_DRIVER
    assert gpusim.render_rocminfo(st)[2] == 1


def test_a_user_outside_render_gets_the_permission_errors():
    st = state('mi300x-8', kfd_error='Permission denied', user='nobody')
    out, _err, rc = gpusim.render_rocminfo(st)
    assert rc == 1 and 'Unable to open /dev/kfd read-write: Permission denied' in out
    assert 'nobody is not member of "render" group' in out
    for parse, result in ((rocminfo.parse_rocminfo, (out, '', rc)),
                          (amd_smi.parse_amd_smi_static_json, gpusim.render_amd_smi(st, ['static', '--json']))):
        with pytest.raises(ToolError) as info:
            parse(_text(result))
        assert info.value.hint == HINT_PERMISSION


def test_driver_state_comes_from_the_simulated_sysfs(tmp_path):
    assert labhost.driver_state(str(tmp_path)) is None
    module = tmp_path / 'module' / 'amdgpu'
    module.mkdir(parents=True)
    (module / 'version').write_text('6.14.14\n')
    (module / 'initstate').write_text('coming\n')
    assert labhost.driver_state(str(tmp_path)) is None
    (module / 'initstate').write_text('live\n')
    assert labhost.driver_state(str(tmp_path)) == '6.14.14'


# --- stub repository ------------------------------------------------------------------------

SPEC = packages.repo_spec()
EXTERNAL = set(['python3', 'kmod', 'pciutils'])


@pytest.mark.parametrize('release', sorted(SPEC['releases']))
@pytest.mark.parametrize('suite', sorted(SPEC['suites']))
def test_package_versions_have_amds_form(release, suite):
    versions = packages.package_versions(SPEC, release, suite)
    ubuntu = SPEC['suites'][suite]
    build = SPEC['releases'][release]['build']
    assert versions['rocm-core'] == '%s.%s-%s~%s' % (release, build, SPEC['releases'][release]['revision'], ubuntu)
    for name in SPEC['packages']:
        assert re.match(r'^[0-9][0-9.]*\.%s-[0-9]+~%s$' % (build, re.escape(ubuntu)), versions[name]), versions[name]
    assert re.match(r'^1:[0-9.]+\.[0-9]{8}-[0-9]+\.%s$' % re.escape(ubuntu), versions['amdgpu-dkms'])
    assert versions['amdgpu-dkms-firmware'].startswith(SPEC['releases'][release]['amdgpu']['release'] + '.0.')
    # The graphics repository's packages: 1:<ROCm major.minor>.<ROCm build>-<graphics build>.<Ubuntu release>, the
    # suffix the repository's index of each suite selects by.
    major_minor = '.'.join(release.split('.')[:2])
    for name in SPEC['graphics_packages']:
        assert re.match(r'^1:%s\.%s-[0-9]+\.%s$' % (re.escape(major_minor), build, re.escape(ubuntu)), versions[name])


@pytest.mark.parametrize('release', sorted(SPEC['releases']))
def test_dependency_shape(release):
    versions = packages.package_versions(SPEC, release, 'jammy')
    graph = {}
    for name in list(SPEC['packages']) + list(SPEC['driver_packages']) + list(SPEC['graphics_packages']):
        deps = packages.package_depends(SPEC, name, versions)
        graph[name] = [dep.split(' ')[0] for dep in deps]
        for dep in deps:
            dep_name = dep.split(' ')[0]
            assert dep_name in versions or dep_name in EXTERNAL, '%s depends on unknown %s' % (name, dep_name)
            if SPEC['packages'].get(name, {}).get('meta'):
                assert dep == '%s (= %s)' % (dep_name, versions[dep_name]), 'meta packages pin their members'
    assert graph['amdgpu-dkms'] == ['amdgpu-dkms-firmware']
    assert packages.package_depends(SPEC, 'amdgpu-dkms', versions) == [
        'amdgpu-dkms-firmware (= %s)' % versions['amdgpu-dkms-firmware']]

    def closure(name, seen=None):
        seen = set() if seen is None else seen
        for dep in graph.get(name, []):
            if dep not in seen:
                seen.add(dep)
                closure(dep, seen)
        return seen

    everything = closure('rocm')
    for needed in ('rocm-core', 'rocminfo', 'rocm-smi-lib', 'amd-smi-lib', 'hip-runtime-amd', 'hipblaslt',
                   'rocm-hip-runtime', 'rocm-language-runtime', 'rocm-hip-libraries', 'rocm-ml-libraries', 'rocm-dev'):
        assert needed in everything
    assert 'amdgpu-dkms' not in everything, 'the driver is installed on its own, as from AMD'
    assert closure('rocm-hip-runtime') >= set(['rocminfo', 'hip-runtime-amd', 'rocm-language-runtime', 'rocm-core'])
    # rocm needs the graphics repository (amdgpu-core, from graphics/<release>/ubuntu only), as an install of AMD's
    # rocm 7.1.1 did; the runtime meta packages alone do not in the stub.
    assert set(SPEC['graphics_packages']) <= everything
    assert not set(SPEC['graphics_packages']) & closure('rocm-hip-runtime')


def test_staged_packages_have_the_real_layout(tmp_path):
    versions = packages.package_versions(SPEC, '7.1.1', 'jammy')
    for name in ('rocm-core', 'rocminfo', 'rocm-smi-lib', 'amd-smi-lib', 'amdgpu-dkms'):
        root = tmp_path / name
        root.mkdir()
        packages.stage_package(SPEC, name, '7.1.1', 'jammy', versions, str(root))
    assert (tmp_path / 'rocm-core/opt/rocm-7.1.1/.info/version').read_text() == '7.1.1-38\n'
    assert 'update-alternatives --install /opt/rocm rocm /opt/rocm-7.1.1' in (tmp_path / 'rocm-core/DEBIAN/postinst').read_text()
    assert os.readlink(str(tmp_path / 'rocm-smi-lib/opt/rocm-7.1.1/bin/rocm-smi')) == '../libexec/rocm_smi/rocm_smi.py'
    assert os.readlink(str(tmp_path / 'amd-smi-lib/opt/rocm-7.1.1/bin/amd-smi')) == '../libexec/amdsmi_cli/amdsmi_cli.py'
    assert (tmp_path / 'rocminfo/opt/rocm-7.1.1/bin/rocminfo').stat().st_mode & 0o111
    postinst = (tmp_path / 'amdgpu-dkms/DEBIAN/postinst').read_text()
    assert '/var/run/reboot-required' in postinst and 'enable amdgpu-lab-driver.service' in postinst
    assert (tmp_path / 'amdgpu-dkms/usr/lib/amdgpu-lab/driver-version').read_text() == '6.16.6\n'
    control = (tmp_path / 'amdgpu-dkms/DEBIAN/control').read_text()
    assert 'Architecture: all' in control and 'Version: 1:6.16.6.30200100-2255209.22.04' in control
    packages.stage_package(SPEC, 'amdgpu-core', '7.1.1', 'jammy', versions, str(tmp_path / 'amdgpu-core'))
    control = (tmp_path / 'amdgpu-core/DEBIAN/control').read_text()
    assert 'Architecture: all' in control and 'Version: 1:7.1.70101-2255212.22.04' in control
    assert (tmp_path / 'amdgpu-core/opt/amdgpu/share/doc/amdgpu-core/README.lab').is_file()
    rocm = packages.control_fields(SPEC, 'rocm', versions, 'amd64')
    assert 'amdgpu-core (= 1:7.1.70101-2255212.22.04)' in dict(rocm)['Depends']
    entry = (tmp_path / 'rocminfo/opt/rocm-7.1.1/bin/rocminfo').read_text()
    compile(entry, 'rocminfo', 'exec')
    assert "sys.path.insert(0, '/opt/rocm-7.1.1/libexec/rocminfo')" in entry and "gpusim.main('rocminfo'" in entry
    for module in (gpusim, labhost):
        with open(module.__file__, 'rb') as handle:
            name = os.path.basename(module.__file__)
            assert (tmp_path / 'rocminfo/opt/rocm-7.1.1/libexec/rocminfo' / name).read_bytes() == handle.read()


def test_the_stub_amd_smi_lib_ships_a_tree_pip_wheel_builds(tmp_path):
    """/opt/rocm/share/amd_smi of the stub amd-smi-lib is a Python project: the engine build's amdsmi stage runs
    "pip wheel ." in a copy of it, as vLLM's image builds the real one (its build requirements from the machine's pip
    configuration, as the lab's wheelhouse takes them)."""
    versions = packages.package_versions(SPEC, '7.1.1', 'jammy')
    root = tmp_path / 'amd-smi-lib'
    root.mkdir()
    packages.stage_package(SPEC, 'amd-smi-lib', '7.1.1', 'jammy', versions, str(root))
    tree = root / 'opt/rocm-7.1.1/share/amd_smi'
    assert sorted(path.name for path in tree.iterdir()) == ['amdsmi', 'pyproject.toml']
    dist = tmp_path / 'dist'
    subprocess.check_call([sys.executable, '-m', 'pip', 'wheel', '--quiet', '--disable-pip-version-check', '--no-deps',
                           '--wheel-dir', str(dist), '.'], cwd=str(tree))
    wheels = [path.name for path in dist.iterdir()]
    assert wheels == ['amdsmi-26.2.0-py3-none-any.whl'], 'amd-smi-lib 7.1.1\'s component version'
    with zipfile.ZipFile(str(dist / wheels[0])) as wheel:
        assert 'amdsmi/__init__.py' in wheel.namelist()
    # What vLLM asks of it: the stub's init fails (no driver), so vLLM takes another platform.
    code = ('import sys; sys.path.insert(0, %r); import amdsmi\n'
            'try:\n    amdsmi.amdsmi_init()\nexcept amdsmi.AmdSmiLibraryException as exc:\n    print("refused", exc)' % str(tree))
    assert subprocess.check_output([sys.executable, '-c', code], universal_newlines=True).startswith('refused llmfleet lab stub')


def test_every_package_kind_has_a_layout_whose_files_exist():
    layouts = packages.package_layouts()
    kinds = set(pkg['files'] for group in ('packages', 'driver_packages', 'graphics_packages', 'exporter_packages')
                for pkg in SPEC[group].values())
    assert kinds <= set(layouts['layouts'])
    for kind, layout in layouts['layouts'].items():
        for entry in layout.get('files', []):
            assert len(set(entry) & set(['copy', 'entry', 'lines'])) == 1, '%s: %s' % (kind, entry)
            if 'copy' in entry:
                assert os.path.isfile(os.path.join(ROOT, 'lab', entry['copy'])), '%s: %s' % (kind, entry['copy'])


def test_a_package_kind_without_a_layout_is_refused(tmp_path):
    odd = {'version': '1.0', 'depends': [], 'files': 'nonesuch', 'description': 'odd'}
    spec = dict(SPEC, packages=dict(SPEC['packages'], odd=odd))
    versions = packages.package_versions(spec, '7.1.1', 'jammy')
    with pytest.raises(common.LabError, match="package odd: no layout 'nonesuch'"):
        packages.stage_package(spec, 'odd', '7.1.1', 'jammy', versions, str(tmp_path))


def test_the_repository_is_rebuilt_when_its_builder_or_data_change():
    names = set(os.path.relpath(path, ROOT) for path in repository.source_files())
    assert set(['lab/labctl/packages.py', 'lab/labctl/repository.py', 'lab/packages/rocm.json',
                'lab/packages/layouts.json', 'lab/stubs/gpusim.py', 'lab/stubs/labhost.py']) <= names
    assert repository.sources_digest() == repository.sources_digest()


# --- image recipe and inventory ---------------------------------------------------------------

def test_image_tag_is_a_stable_hash_of_the_recipe():
    tag = image.image_tag()
    assert re.match(r'^localhost/llmfleet-lab:[0-9a-f]{12}$', tag)
    assert image.image_tag() == tag
    _recipe, files = image.image_recipe()
    assert common.sha256_files(list(reversed(files)))[:12] == tag.rsplit(':', 1)[1], 'independent of file order'
    assert common.sha256_files(files, extra=b'x')[:12] != tag.rsplit(':', 1)[1]


def test_recipe_boots_systemd_with_sshd():
    recipe, _files = image.image_recipe()
    for package in ('systemd', 'systemd-sysv', 'dbus', 'python3', 'sudo', 'iproute2', 'openssh-server', 'ca-certificates'):
        assert package in recipe['include']
    assert recipe['variant'] == 'minbase' and recipe['suite'] == 'bookworm'


def test_containers_conf_uses_runc_and_host_safe_ulimits():
    text = common.CONTAINERS_CONF_TEXT
    assert 'runtime = "runc"' in text
    assert '"nofile=20000:20000"' in text and '"nproc=4096:4096"' in text


def test_sandbox_inventory_matches_the_profiles():
    with open(os.path.join(ROOT, 'inventories', 'sandbox', 'hosts.yml')) as handle:
        inventory = yaml.safe_load(handle)
    groups = inventory['all']['children']
    assert len(groups['gpu_nodes']['hosts']) == 2 and len(groups['gateways']['hosts']) == 1
    ports = []
    for hostvars in groups['gpu_nodes']['hosts'].values():
        assert hostvars['rocm_expected_gpu_count'] == len(profile(hostvars['lab_gpu_profile'])['gpus'])
        ports.append(hostvars['ansible_port'])
    ports += [h['ansible_port'] for h in groups['gateways']['hosts'].values()]
    assert len(set(ports)) == len(ports)


def test_debian_mirror_is_read_from_deb822(tmp_path, monkeypatch):
    sources = tmp_path / 'debian.sources'
    sources.write_text('Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n\n'
                       'Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n')
    monkeypatch.setattr(image.glob, 'glob', lambda pattern: [str(sources)] if pattern.endswith('*.sources') else [])
    monkeypatch.setattr(image.os.path, 'isfile', lambda path: path == str(sources))
    assert image.debian_mirrors() == ('http://mirror.example/debian', 'http://mirror.example/debian-security')


# --- the command line -------------------------------------------------------------------------

def test_every_command_has_a_one_line_description():
    for name, func in cli.COMMANDS.items():
        doc = (func.__doc__ or '').strip()
        assert doc and '\n' not in doc and doc.endswith('.'), name
        assert func.__name__ == 'cmd_' + name.replace('-', '_')


@pytest.mark.parametrize('argv', [[os.path.join(ROOT, 'lab', 'bin', 'labctl')], [sys.executable, '-m', 'labctl']],
                         ids=['bin-labctl', 'python-m'])
def test_the_entry_points_list_every_command(argv):
    env = dict((k, v) for k, v in os.environ.items() if k != 'PYTHONPATH')
    proc = subprocess.run(argv + ['--help'], cwd=os.path.join(ROOT, 'lab'), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stderr
    listed = re.findall(r'^    (\S+) ', proc.stdout, re.M)
    assert listed == list(cli.COMMANDS)
    assert proc.stdout.startswith('usage: labctl ')
