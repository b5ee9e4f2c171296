# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight role's judgement: readings of a GPU node in, findings out.

Everything here is pure, and nothing here parses what a node printed: the facts modules did
(``preflight_facts`` for the kernel, its command line, NUMA balancing, Secure Boot, apt and the
free disk; ``rocm_facts``, ``pcie_facts``, ``numa_facts`` and ``rdma_facts`` for the hardware), and
the role passes their registered results and its own variables in one dict to
``preflight_findings``, which applies every rule.

Input keys (every one optional; what is missing is "not read", never a guess):

``platform`` (``llmfleet_platform`` from the base role: name, supported, supported_names, kernel,
kernel_managed, kernel_managed_reason), ``kernel_managed`` (the role's knob: true, false, or null
to follow the platform), ``min_kernel`` ("5.15"), ``node`` (the registered result of
``preflight_facts``), ``disk_path`` and ``min_free_gib``, ``rocm``, ``pcie``, ``numa``, ``rdma``
(the registered results of those facts modules, run with failed_when: false), ``multi_node``
(bool or None: decided from the RDMA devices), ``expected_gpu_count`` (int or None) and
``accepted`` (finding ids downgraded to info).

What the support table (``module_utils/_support_matrix.py``) is judged against: ``host`` (the node's inventory name,
for the messages), ``rocm_version`` (the release the rocm role installs: the inventory's ``rocm_version``; the
installed release the ROCm tools report when it is empty), ``engine`` (``{name, version, source, python_version}`` of
the engine role: engine_name, engine_version, engine_source, engine_python_version), ``pythons`` (``{engine_python:
path, toolchain_python: path}``; "" is the per-system table's Python, which the engine and toolchain roles install
themselves and which is judged from the table), ``python_results`` (the registered loop of the role's Python version
reading, one result per distinct path given, ``item`` the path), ``engine_build_enabled`` (false: toolchain_python is
not used, and the build's recipe is not judged), ``engine_build`` (``{vllm_ref, recipe, releases}``:
engine_build_vllm_ref, engine_build_recipe and the engine_build role's recipe table, whose ROCm is compared with
``rocm_version``), ``builder`` (this node runs the build: the builders group, else the first GPU node), ``toolchain``
(``{python_version, gcc_version}``: toolchain_python_version and toolchain_gcc_version, judged with the per-system
table of module_utils/_build_toolchain.py on the builder) and ``exporter`` (``{enabled, monitoring_hosts}``: the
exporters role installs AMD's Device Metrics Exporter on GPU nodes when it is enabled and the inventory has monitoring
hosts).

A finding is ``{id, level, message, fix}`` with level ``fail``, ``warn`` or ``info``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import RuleSet, supported_system_rule
from ansible_collections.llmfleet.rocm.plugins.module_utils._kernel import parse_kernel_version
from ansible_collections.llmfleet.rocm.plugins.module_utils._rocm_common import normalize_pci_address
from ansible_collections.llmfleet.rocm.plugins.module_utils import _build_recipe, _build_toolchain
from ansible_collections.llmfleet.rocm.plugins.module_utils import _support_matrix as matrix

LEVELS = ('fail', 'warn', 'info')

# Every rule, in report order, with the level it usually has (some rules lower it, see the code).
RULES = (
    ('os-unsupported', 'fail'),
    ('kernel-unreadable', 'warn'),
    ('kernel-too-old', 'fail'),
    ('kernel-packages-unchecked', 'info'),
    ('kernel-packages-unknown', 'warn'),
    ('kernel-packages-unavailable', 'fail'),
    ('secure-boot-enabled', 'warn'),
    ('secure-boot-unknown', 'info'),
    ('disk-path-unknown', 'warn'),
    ('disk-space-low', 'fail'),
    ('facts-unreadable', 'warn'),
    ('rocm-tools-error', 'warn'),
    ('pcie-lspci-missing', 'warn'),
    ('pcie-capabilities-unreadable', 'warn'),
    ('gpu-none', 'fail'),
    ('gpu-count-mismatch', 'fail'),
    ('gpu-not-visible-to-rocm', 'warn'),
    ('gpu-bar-small', 'warn'),
    ('rocm-gpu-os-unsupported', 'fail'),
    ('rocm-gpu-os-unknown', 'warn'),
    ('engine-python-unsupported', 'fail'),
    ('engine-python-unknown', 'warn'),
    ('engine-recipe-rocm-differs', 'warn'),
    ('build-toolchain-unavailable', 'fail'),
    ('exporter-os-unsupported', 'warn'),
    ('cmdline-unreadable', 'info'),
    ('iommu-disabled', 'warn'),
    ('iommu-passthrough-missing', 'warn'),
    ('iommu-inactive', 'warn'),
    ('pci-realloc-not-off', 'info'),
    ('pcie-link-width-downgraded', 'warn'),
    ('pcie-link-speed-downgraded', 'warn'),
    ('rdma-none', 'warn'),
    ('gpu-nic-not-on-switch', 'warn'),
    ('pcie-acs-enabled', 'warn'),
    ('numa-balancing-enabled', 'warn'),
    ('numa-nps-not-1', 'info'),
)
RULE_IDS = tuple(rule_id for rule_id, _level in RULES)
_ORDER = dict((rule_id, index) for index, rule_id in enumerate(RULE_IDS))

GIB = 1024 ** 3
# A memory region of 4 GiB or more cannot sit below 4 GiB: a GPU that has one was given it with
# Above 4G decoding on (and, for Radeon cards, Resizable BAR). Without, GPUs show 256 MiB.
LARGE_BAR_BYTES = 4 * GIB
# The MI300X tuning guide: with 256 or more logical CPUs keep the IOMMU on (x2APIC needs it).
MANY_CPUS = 256
# The one "Unsupported system" message of the collection (module_utils/_inputs.py), as a finding here:
# preflight reports an unsupported system instead of refusing to look at it.
_SYSTEM = RuleSet('preflight')
supported_system_rule(_SYSTEM)

_NO_SECURE_BOOT_READING = {'state': 'unknown', 'source': None, 'shim_validation': None, 'detail': ''}
_NO_PACKAGES_READING = {'checked': False, 'packages': None, 'error': None}


def _opt_bool(value):
    """A bool, or None for null; tolerates the strings older Ansible templating produces."""
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ('', 'none', 'null'):
        return None
    return text in ('true', 'yes', 'on', '1')


def _opt_number(value, kind=int):
    if value is None or isinstance(value, bool):
        return None
    if str(value).strip().lower() in ('', 'none', 'null'):
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise AnsibleFilterError('preflight: %r is not a number' % (value,))


def _whole(number):
    return int(number) if number is not None and number == int(number) else number


def _finding(rule_id, level, message, fix):
    return {'id': rule_id, 'level': level, 'message': message, 'fix': fix}


def _module_facts(result, key):
    """(facts, error message) from the registered result of a facts module run with failed_when: false."""
    if result is None or not isinstance(result, dict) or result.get('skipped'):
        return None, None
    facts = (result.get('ansible_facts') or {}).get(key)
    if isinstance(facts, dict):
        return facts, None
    return None, str(result.get('msg') or 'the module returned no %s facts' % key)


def _kind(inputs, platform):
    """(kernel managed?, why) from the role's knob, or the node's kind when it is null."""
    knob = _opt_bool(inputs.get('kernel_managed'))
    if knob is not None:
        return knob, 'preflight_kernel_managed: %s' % ('true' if knob else 'false')
    if platform.get('kernel_managed') is False:
        return False, platform.get('kernel_managed_reason') or 'llmfleet_platform.kernel_managed is false'
    return True, platform.get('kernel_managed_reason') or 'the node runs its own kernel'


# ---------------------------------------------------------------------------------------------
# Readings: everything the rules and the report use, gathered once
# ---------------------------------------------------------------------------------------------

def _readings(inputs):
    """The role's inputs as the readings the rules use (with every PCI device)."""
    platform = inputs.get('platform') if isinstance(inputs.get('platform'), dict) else {}
    node, node_error = _module_facts(inputs.get('node'), 'preflight')
    node = node or {}
    rocm, rocm_error = _module_facts(inputs.get('rocm'), 'rocm')
    pcie, pcie_error = _module_facts(inputs.get('pcie'), 'pcie')
    numa, numa_error = _module_facts(inputs.get('numa'), 'numa')
    rdma, rdma_error = _module_facts(inputs.get('rdma'), 'rdma')

    release = (node.get('kernel') or {}).get('release') or platform.get('kernel')
    min_kernel = str(inputs.get('min_kernel') or '5.15')
    managed, managed_reason = _kind(inputs, platform)
    kernel_packages = dict(node.get('kernel_packages') or _NO_PACKAGES_READING)
    if managed and node_error and platform.get('kernel_packages'):
        kernel_packages['error'] = 'preflight_facts did not answer (%s)' % node_error

    disk = dict(node.get('disk') or {'path': inputs.get('disk_path'), 'mount': None, 'free_bytes': None, 'free_gib': None})
    disk['min_free_gib'] = _whole(_opt_number(inputs.get('min_free_gib'), float))

    devices = dict((dev.get('address'), dev) for dev in (pcie or {}).get('devices') or [])
    rdma_devices = (rdma or {}).get('devices') or []
    rdma_addresses = sorted(set(addr for addr in (normalize_pci_address(dev.get('pci_address')) for dev in rdma_devices) if addr))
    multi_node = _opt_bool(inputs.get('multi_node'))
    lspci_ran = bool(pcie and pcie.get('source'))
    gpus = []
    for address in (pcie or {}).get('gpus') or []:
        device = devices.get(address) or {}
        gpus.append({'address': address, 'description': device.get('description'), 'numa_node': device.get('numa_node'),
                     'largest_bar_bytes': device.get('largest_bar_bytes'), 'link': device.get('pcie')})
    cpu_count = (numa or {}).get('cpu_count')
    cpu_nodes = len([node_ for node_ in (numa or {}).get('nodes') or [] if node_.get('cpus')])

    return {
        'os': {'name': platform.get('name'), 'supported': bool(platform.get('supported')), 'platform': platform},
        'kernel': {'release': release, 'version': parse_kernel_version(release), 'minimum': min_kernel,
                   'minimum_version': parse_kernel_version(min_kernel), 'managed': managed, 'managed_reason': managed_reason},
        'kernel_packages': kernel_packages,
        'secure_boot': dict(node.get('secure_boot') or _NO_SECURE_BOOT_READING),
        'disk': disk,
        'cmdline': node.get('cmdline'),
        'numa_balancing': node.get('numa_balancing'),
        'cpu_count': cpu_count,
        'numa_nodes_with_cpus': cpu_nodes if numa else None,
        'sockets': node.get('sockets'),
        'lspci': lspci_ran,
        'pcie_capabilities_readable': (pcie or {}).get('capabilities_readable') if lspci_ran else None,
        'pcie_devices': devices,
        'gpus': gpus,
        'gpu_count_pci': len(gpus) if lspci_ran else None,
        'gpu_count_rocm': (rocm or {}).get('gpu_count') or 0,
        'rocm_sources': (rocm or {}).get('sources') or [],
        'rocm_version': (rocm or {}).get('rocm_version'),
        'gpu_nic_affinity': (pcie or {}).get('gpu_nic_affinity') or [],
        'rdma_devices': [{'name': dev.get('name'), 'pci_address': normalize_pci_address(dev.get('pci_address')),
                          'link_layer': dev.get('link_layer'), 'active_ports': dev.get('active_ports')} for dev in rdma_devices],
        'rdma_addresses': rdma_addresses,
        'multi_node': bool(rdma_devices) if multi_node is None else bool(multi_node),
        'multi_node_from': 'rdma devices' if multi_node is None else 'inventory',
        'errors': {'preflight_facts': node_error, 'rocm_facts': rocm_error, 'pcie_facts': pcie_error, 'numa_facts': numa_error,
                   'rdma_facts': rdma_error},
        'expected_gpu_count': _opt_number(inputs.get('expected_gpu_count')),
        'host': inputs.get('host') or 'this node',
        'rocm_target': _rocm_target(inputs.get('rocm_version'), (rocm or {}).get('rocm_version')),
        'gpu_models': _gpu_models((rocm or {}).get('gpus') or [], gpus),
        'engine': _engine(inputs.get('engine')),
        'pythons': _pythons(inputs),
        'exporter_planned': _exporter_planned(inputs.get('exporter')),
        'recipe_rocm': _recipe_rocm(inputs, (rocm or {}).get('rocm_version')),
        'toolchain': _toolchain(inputs, platform),
        'engine_python_plan': _engine_python_plan(inputs, platform),
    }


def _rocm_target(wanted, installed):
    """The ROCm release judged against AMD's matrix: the one the rocm role installs, else the installed one."""
    wanted = str(wanted or '').strip()
    installed = str(installed or '').strip()
    version, source = (wanted, 'rocm_version') if wanted else (installed, 'installed') if installed else (None, None)
    return {'version': version, 'from': source, 'series': matrix.rocm_series(version), 'installed': installed or None}


def _gpu_models(rocm_gpus, pci_gpus):
    """The node's kinds of GPU (name, LLVM target, how many, which Instinct models they can be): from the ROCm tools,
    else from the PCI bus (where a node without ROCm shows them). Integrated GPUs are left out."""
    kinds = []
    if rocm_gpus:
        seen = [(gpu.get('marketing_name'), gpu.get('gfx_target'), 'rocm') for gpu in rocm_gpus if not gpu.get('integrated')]
    else:
        seen = [(gpu.get('description'), None, 'lspci') for gpu in pci_gpus]
    for name, gfx_target, source in seen:
        for kind in kinds:
            if kind['name'] == name and kind['gfx_target'] == gfx_target:
                kind['count'] += 1
                break
        else:
            candidates, named = matrix.gpu_candidates(name, gfx_target)
            kinds.append({'name': name, 'gfx_target': gfx_target, 'source': source, 'count': 1,
                          'candidates': list(candidates), 'named': list(named)})
    return kinds


def _engine(engine):
    engine = engine if isinstance(engine, dict) else {}
    name = str(engine.get('name') or '').strip() or None
    version = str(engine.get('version') or '').strip() or None
    bounds = matrix.vllm_python_range(version) if name == 'vllm' else None
    return {'name': name, 'version': version, 'python_range': matrix.format_range(bounds) if bounds else None,
            'python_bounds': bounds, 'source': str(engine.get('source') or 'build')}


def _pythons(inputs):
    """Each distinct Python path the engine (and, on the node that builds, the toolchain) is given: its variables, path
    and version."""
    paths = inputs.get('pythons') if isinstance(inputs.get('pythons'), dict) else {}
    build = _opt_bool(inputs.get('engine_build_enabled'))
    builder = _opt_bool(inputs.get('builder'))
    results = (inputs.get('python_results') or {}).get('results') if isinstance(inputs.get('python_results'), dict) else None
    by_path = dict((str(result.get('item')), result) for result in results or [] if isinstance(result, dict))
    readings = []
    for variable in ('engine_python', 'toolchain_python'):
        path = str(paths.get(variable) or '').strip()
        # "" is the per-system table's Python (judged from the table); toolchain_python only where the build runs.
        if not path or (variable == 'toolchain_python' and (build is False or builder is False)):
            continue
        for reading in readings:
            if reading['path'] == path:
                reading['variables'].append(variable)
                break
        else:
            result = by_path.get(path)
            version, error = None, None
            if result is None or result.get('skipped'):
                error = None
            elif result.get('rc') == 0 and matrix.python_version(result.get('stdout')):
                version = matrix.python_version(result.get('stdout'))
            else:
                error = ' '.join(str(result.get(key) or '').strip() for key in ('msg', 'stderr', 'stdout')).strip() \
                    or 'exit status %s' % result.get('rc')
            readings.append({'variables': [variable], 'path': path, 'read': result is not None and not result.get('skipped'),
                             'version': '.'.join(str(part) for part in version) if version else None,
                             'version_tuple': version, 'error': error})
    return readings


def _recipe_rocm(inputs, installed):
    """(message, fix) when the build's recipe was made on another ROCm than the fleet's (the rocm_version the rocm role
    installs, else the installed one); None otherwise."""
    build = inputs.get('engine_build') if isinstance(inputs.get('engine_build'), dict) else None
    if not build or _opt_bool(inputs.get('engine_build_enabled')) is False:
        return None
    values = {'engine_build_vllm_ref': build.get('vllm_ref'), 'engine_build_recipe': build.get('recipe')}
    target = _rocm_target(inputs.get('rocm_version'), installed)
    return _build_recipe.rocm_relation(values, build.get('releases') or {}, target['version'],
                                       source='rocm_version' if target['from'] == 'rocm_version' else 'installed')


def _build_release(inputs):
    """The release whose recipe the build follows (engine_build_recipe, else engine_build_vllm_ref's), and the table."""
    build = inputs.get('engine_build') if isinstance(inputs.get('engine_build'), dict) else {}
    values = {'engine_build_vllm_ref': build.get('vllm_ref'), 'engine_build_recipe': build.get('recipe')}
    releases = build.get('releases') or {}
    found = _build_recipe.sources(values, releases)
    return (found['release'] if found['entry'] else None), releases


def _toolchain(inputs, platform):
    """On the node that builds: where its system takes the recipe's gcc and Python (the toolchain role's table); None
    elsewhere, or when nothing is built (engine_build_enabled false, engine_source wheels)."""
    engine = inputs.get('engine') if isinstance(inputs.get('engine'), dict) else {}
    if (not _opt_bool(inputs.get('builder')) or _opt_bool(inputs.get('engine_build_enabled')) is False
            or engine.get('source') == 'wheels' or not platform.get('supported')):
        return None
    toolchain = inputs.get('toolchain') if isinstance(inputs.get('toolchain'), dict) else {}
    paths = inputs.get('pythons') if isinstance(inputs.get('pythons'), dict) else {}
    release, releases = _build_release(inputs)
    return _build_toolchain.toolchain(platform.get('key'), python_version=toolchain.get('python_version') or '',
                                      gcc_version=toolchain.get('gcc_version') or '',
                                      python_path=paths.get('toolchain_python') or '',
                                      recipe=_build_toolchain.recipe_needs(release, releases))


def _engine_python_plan(inputs, platform):
    """The Python the engine role gives this node when engine_python is "" (the per-system table, for the engine's
    release); None when a path is given, or for another engine than vLLM."""
    engine = inputs.get('engine') if isinstance(inputs.get('engine'), dict) else {}
    paths = inputs.get('pythons') if isinstance(inputs.get('pythons'), dict) else {}
    if str(paths.get('engine_python') or '').strip() or engine.get('name', 'vllm') != 'vllm' or not platform.get('supported'):
        return None
    version = str(engine.get('version') or '').split('+', 1)[0].strip()
    _release, releases = _build_release(inputs)
    return _build_toolchain.toolchain(platform.get('key'), python_version=engine.get('python_version') or '',
                                      recipe=_build_toolchain.recipe_needs(version, releases), who='engine')


def _exporter_planned(exporter):
    exporter = exporter if isinstance(exporter, dict) else {}
    return bool(_opt_bool(exporter.get('enabled')) and exporter.get('monitoring_hosts'))


def preflight_readings(inputs):
    """What the report shows of a node: the readings, without the full PCI device list."""
    if not isinstance(inputs, dict):
        raise AnsibleFilterError('preflight_readings expects a dict of inputs, got %s' % type(inputs).__name__)
    readings = _readings(inputs)
    del readings['pcie_devices']
    del readings['os']['platform']
    del readings['engine']['python_bounds']
    del readings['recipe_rocm']
    for key in ('toolchain', 'engine_python_plan'):
        plan = readings.pop(key)
        readings[key] = ({'python': (plan['python'] or {}).get('version'), 'python_path': (plan['python'] or {}).get('path'),
                          'gcc': (plan['gcc'] or {}).get('version'), 'sources': [item['name'] for item in plan['apt_sources']]}
                         if plan else None)
    for python in readings['pythons']:
        del python['version_tuple']
    return readings


# ---------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------

def _size(num):
    for unit, scale in (('TiB', 1024 ** 4), ('GiB', GIB), ('MiB', 1024 ** 2), ('KiB', 1024)):
        if num >= scale:
            value = num / float(scale)
            return ('%d %s' % (value, unit)) if value == int(value) else ('%.1f %s' % (value, unit))
    return '%d B' % num


def _gts(value):
    return ('%g GT/s' % value) if value is not None else '? GT/s'


def _rules_os_kernel(r):
    found = []
    os_reading, kernel = r['os'], r['kernel']
    if not os_reading['supported']:
        platform = os_reading['platform']
        found.append(_finding(
            'os-unsupported', 'fail', ' '.join(_SYSTEM.messages({}, {'platform': platform})),
            'Reinstall the node with %s (the systems AMD builds ROCm for).'
            % ' or '.join(platform.get('supported_names') or ['a supported system'])))
    if kernel['version'] is None:
        found.append(_finding(
            'kernel-unreadable', 'warn', 'The running kernel release %r does not start with a version number.' % (kernel['release'],),
            'Check "uname -r" on the node; the kernel checks were skipped.'))
    elif kernel['minimum_version'] is not None and kernel['version'] < kernel['minimum_version']:
        found.append(_finding(
            'kernel-too-old', 'fail',
            'The running kernel %s is older than %s (preflight_min_kernel); the systems ROCm 7 supports run 5.15 (Ubuntu 22.04) or newer.'
            % (kernel['release'], kernel['minimum']),
            'Install the distribution\'s current kernel (Ubuntu 22.04: linux-generic or linux-generic-hwe-22.04) and reboot into it.'))
    packages = r['kernel_packages']
    if not kernel['managed']:
        found.append(_finding(
            'kernel-packages-unchecked', 'info',
            'The kernel is not this host\'s own (%s): the availability of its headers was not checked.' % kernel['managed_reason'],
            'Nothing to do where the kernel belongs to a container host; on a real server set preflight_kernel_managed: true '
            '(or llmfleet_node_kernel_managed: true for every role).'))
    elif packages['error']:
        found.append(_finding(
            'kernel-packages-unknown', 'warn',
            'Could not tell whether the packages DKMS needs for kernel %s are available: %s.' % (kernel['release'], packages['error']),
            'Run "apt-get update" and "apt-cache policy linux-headers-%s" on the node and look at what apt says.' % kernel['release']))
    elif packages['checked']:
        missing = [name for name, info in sorted(packages['packages'].items()) if not info['installed'] and not info['candidate']]
        if missing:
            found.append(_finding(
                'kernel-packages-unavailable', 'fail',
                '%s: neither installed nor available from apt, and amdgpu-dkms cannot build for kernel %s without them.'
                % (', '.join(missing), kernel['release']),
                'Run "apt-get update" first. If they are still missing, the running kernel has left the archive: install the '
                'current kernel with its headers (apt-get install linux-image-<flavour> linux-headers-<flavour>) and reboot.'))
    return found


def _rules_secure_boot(r):
    reading = r['secure_boot']
    if reading['state'] == 'enabled':
        if reading['shim_validation'] is False:
            return [_finding(
                'secure-boot-enabled', 'info',
                'Secure Boot is on but shim does not validate (%s): unsigned kernel modules load.' % reading['detail'],
                'Nothing blocks amdgpu-dkms; turn validation back on (mokutil --enable-validation) only with a MOK enrolled.')]
        return [_finding(
            'secure-boot-enabled', 'warn',
            'Secure Boot is on (%s): the kernel loads amdgpu only if DKMS signs it with a Machine Owner Key the firmware trusts.'
            % reading['detail'],
            'Before the driver install, enroll the key DKMS signs with (Ubuntu: "update-secureboot-policy --enroll-key", key '
            '/var/lib/shim-signed/mok/MOK.der; Debian: "dkms generate_mok" then "mokutil --import /var/lib/dkms/mok.pub"), reboot and '
            'confirm the enrollment in the MOK manager on the console; or turn Secure Boot off in the BIOS.')]
    if reading['state'] == 'unknown':
        return [_finding(
            'secure-boot-unknown', 'info',
            'The Secure Boot state is unknown%s.' % ((': ' + reading['detail']) if reading['detail'] else ''),
            'Check "mokutil --sb-state" on the node (package mokutil); with Secure Boot on, enroll the DKMS key before the driver install.')]
    return []


def _rules_disk(r):
    disk = r['disk']
    minimum = disk['min_free_gib']
    if not minimum:
        return []
    if disk['free_bytes'] is None:
        return [_finding(
            'disk-path-unknown', 'warn',
            'No mounted file system with a known free space holds %s, so free disk was not checked.' % disk['path'],
            'Check "df -h %s" on the node, or set preflight_disk_path to the directory the builds use.' % disk['path'])]
    if disk['free_bytes'] < float(minimum) * GIB:
        return [_finding(
            'disk-space-low', 'fail',
            '%s (on %s) has %.1f GiB free; the ROCm packages and the source builds need at least %g GiB (preflight_min_free_gib).'
            % (disk['path'], disk['mount'], disk['free_bytes'] / float(GIB), minimum),
            'Free space on %s or grow the file system; or point preflight_disk_path at a larger one the builds will use.' % disk['mount'])]
    return []


def _rules_gpus(r):
    found = []
    errors = r['errors']
    broken = ['%s: %s' % (name, errors[name]) for name in ('preflight_facts', 'pcie_facts', 'numa_facts', 'rdma_facts') if errors[name]]
    if broken:
        found.append(_finding(
            'facts-unreadable', 'warn', 'Some facts could not be read, and the checks that need them were skipped: %s' % '; '.join(broken),
            'Follow the advice in the message; then run the preflight again.'))
    if errors['rocm_facts']:
        found.append(_finding(
            'rocm-tools-error', 'warn', 'A ROCm tool on the node reports an error: %s' % errors['rocm_facts'],
            'Expected on a node whose ROCm user space is installed but whose driver is not loaded yet; the driver stage fixes it. '
            'Otherwise follow the advice in the message.'))
    if not r['lspci'] and not errors['pcie_facts']:
        found.append(_finding(
            'pcie-lspci-missing', 'warn',
            'lspci is not installed: the GPUs on the PCI bus, their links, BAR sizes, ACS and the GPU/NIC placement were not checked.',
            'Install pciutils on the node (apt-get install pciutils) and run the preflight again.'))
    elif r['pcie_capabilities_readable'] is False:
        found.append(_finding(
            'pcie-capabilities-unreadable', 'warn',
            'lspci could not read PCI capabilities (not root): link speeds and widths and ACS were not checked.',
            'Run the preflight with privilege escalation available (become); pcie_facts runs with become: true.'))
    pci_count, rocm_count = r['gpu_count_pci'], r['gpu_count_rocm']
    if not pci_count and not rocm_count:
        if r['lspci']:
            message = 'lspci lists no AMD GPU (vendor 1002, display or processing-accelerator class) and no ROCm tool sees one.'
        elif errors['pcie_facts']:
            message = 'No ROCm tool sees a GPU and the PCI bus could not be read (see facts-unreadable).'
        else:
            message = 'No ROCm tool sees a GPU and lspci is not installed to look at the PCI bus.'
        found.append(_finding(
            'gpu-none', 'fail', message,
            'Check "lspci -d 1002:" on the node: GPUs missing there are not seated, powered or enabled in the BIOS. '
            'A host without GPUs does not belong in gpu_nodes.'))
    expected = r['expected_gpu_count']
    # GPUs on the PCI bus; the ROCm tools' count only where lspci shows none (no lspci, a simulation).
    seen = pci_count or rocm_count
    if expected is not None and seen and seen != int(expected):
        found.append(_finding(
            'gpu-count-mismatch', 'fail',
            'The node shows %d GPU(s) (%s), preflight_expected_gpu_count is %d.'
            % (seen, 'lspci' if pci_count else 'ROCm tools', int(expected)),
            'Find the missing GPUs with "lspci -d 1002:" and "dmesg | grep -i -e amdgpu -e pcie"; reseat or replace them, or correct '
            'preflight_expected_gpu_count.'))
    if pci_count and r['rocm_sources'] and rocm_count < pci_count:
        found.append(_finding(
            'gpu-not-visible-to-rocm', 'warn',
            'lspci lists %d AMD GPU(s) but %s see(s) only %d.' % (pci_count, ', '.join(r['rocm_sources']), rocm_count),
            'Check "dmesg | grep amdgpu" for GPUs the driver failed to initialise, and that the driver is loaded (the driver stage).'))
    small = ['%s (%s)' % (gpu['address'], _size(gpu['largest_bar_bytes'])) for gpu in r['gpus']
             if gpu['largest_bar_bytes'] is not None and gpu['largest_bar_bytes'] < LARGE_BAR_BYTES]
    if small:
        found.append(_finding(
            'gpu-bar-small', 'warn',
            'GPU(s) with no memory region of 4 GiB or more: %s. Above 4G decoding (and Resizable BAR) look off in the BIOS.'
            % ', '.join(small),
            'In the BIOS turn on Above 4G Decoding and Re-Size BAR Support (and keep pci=realloc=off on the kernel command line), '
            'then check that the GPU\'s largest region in "lspci -vvv -d 1002:" covers its memory.'))
    return found


def _system_names(keys):
    return ' or '.join(matrix.SYSTEM_NAMES.get(key, key) for key in keys)


def _gpu_label(kind):
    label = kind['name'] or kind['gfx_target'] or 'an unnamed GPU'
    if kind['gfx_target'] and kind['gfx_target'] not in label:
        label += ' (%s)' % kind['gfx_target']
    return '%d x %s' % (kind['count'], label)


def _node_line(r):
    """"<host> (<OS>, ROCm <version> from <where>" for the messages of the support table."""
    target = r['rocm_target']
    rocm = ('ROCm %s (%s)' % (target['version'], 'rocm_version' if target['from'] == 'rocm_version' else 'installed')
            if target['version'] else 'no ROCm release known')
    return '%s (%s, %s' % (r['host'], r['os']['name'], rocm)


def _rules_support(r):
    """The node against the support table: GPU / OS / ROCm (AMD's matrix), the engine's Python, the exporter's OS."""
    found = []
    platform = r['os']['platform']
    system = matrix.system_key(platform.get('key'))
    target = r['rocm_target']
    series = target['series']
    source = matrix.SOURCES.get('rocm_%s' % series) or {}
    known_system = r['os']['supported'] and system is not None
    outside, unknown, fixes = [], [], []
    if known_system and series:
        for kind in r['gpu_models']:
            verdict = matrix.judge_gpu(series, system, kind['candidates'])
            if verdict == 'supported':
                continue
            if verdict == 'unsupported':
                outside.append(_gpu_label(kind))
                for model in kind['candidates']:
                    systems, releases = matrix.supported_elsewhere(model, series, system)
                    ways = []
                    if systems:
                        ways.append('run them on %s (AMD supports %s there with ROCm %s)' % (_system_names(systems), model, series))
                    if releases:
                        ways.append('set rocm_version to a %s release (AMD supports %s on %s there)'
                                    % (' or '.join(releases), model, r['os']['name']))
                    fixes.append('%s: %s' % (model, ', or '.join(ways) if ways else 'use a system and ROCm release AMD lists for it'))
            elif series not in matrix.ROCM_MATRIX:
                unknown.append('%s: ROCm %s is not in the table (it holds %s)'
                               % (_gpu_label(kind), series, ', '.join(sorted(matrix.ROCM_MATRIX))))
            elif kind['named'] and not kind['candidates']:
                unknown.append('%s: %s is not an Instinct GPU of the table' % (_gpu_label(kind), '/'.join(kind['named'])))
            elif not kind['candidates']:
                unknown.append('%s: not an AMD Instinct GPU the table knows (Radeon cards are best effort)' % _gpu_label(kind))
            else:
                inside = [model for model in kind['candidates'] if model in matrix.ROCM_MATRIX[series][system]]
                unknown.append('%s: could be %s, and of these AMD supports only %s here'
                               % (_gpu_label(kind), ' or '.join(kind['candidates']), ', '.join(inside)))
    if outside:
        found.append(_finding(
            'rocm-gpu-os-unsupported', 'fail',
            '%s): %s on %s with ROCm %s is outside AMD\'s compatibility matrix: for ROCm %s on %s AMD supports %s only (%s).'
            % (_node_line(r), ', '.join(outside), r['os']['name'], series, series, r['os']['name'],
               ', '.join(matrix.ROCM_MATRIX[series][system]), source.get('url')),
            '%s. AMD\'s matrix: %s' % ('; '.join(fixes), source.get('url'))))
    if unknown:
        found.append(_finding(
            'rocm-gpu-os-unknown', 'warn',
            '%s): the collection\'s copy of AMD\'s compatibility matrix cannot judge the GPUs on %s with ROCm %s: %s.'
            % (_node_line(r), r['os']['name'], series, '; '.join(unknown)),
            'Look the GPU up for %s and ROCm %s in AMD\'s compatibility matrix (%s); where AMD supports it, accept the finding '
            '(preflight_accepted_findings: [rocm-gpu-os-unknown]), else change the system or rocm_version.'
            % (r['os']['name'], series, source.get('url') or matrix.LATEST_MATRIX_URL)))
    found.extend(_rules_python(r))
    if r['toolchain'] and r['toolchain']['problems']:
        found.append(_finding(
            'build-toolchain-unavailable', 'fail',
            '%s): this node builds the engine, and its system cannot give what the build needs: %s'
            % (_node_line(r), ' '.join(r['toolchain']['problems'])),
            'Set what the message names (toolchain_gcc_version, toolchain_python_version or toolchain_python: the toolchain'
            ' role\'s README has the table of what each system gives), or build on another node (the builders group).'))
    if r['recipe_rocm']:
        message, fix = r['recipe_rocm']
        found.append(_finding('engine-recipe-rocm-differs', 'warn', message, fix))
    if r['exporter_planned'] and known_system and system not in matrix.EXPORTER_SYSTEMS:
        gpus = ', '.join(_gpu_label(kind) for kind in r['gpu_models']) or 'no GPU seen yet'
        found.append(_finding(
            'exporter-os-unsupported', 'warn',
            '%s, %s): AMD packages its Device Metrics Exporter (amdgpu-exporter) for %s only (%s); the exporters role would '
            'install its %s build on %s, which AMD does not test.'
            % (_node_line(r), gpus, ' and '.join(matrix.SYSTEM_NAMES[key] for key in matrix.EXPORTER_SYSTEMS), matrix.SOURCES['exporter']['url'],
               platform.get('rocm_suite') or 'Ubuntu', r['os']['name']),
            'Accept it where the exporter is seen to work on these nodes (preflight_accepted_findings: [exporter-os-unsupported]); '
            'or turn it off for them (exporters_amdgpu_exporter_enabled: false; node_exporter still runs), or run them on %s.'
            % _system_names(matrix.EXPORTER_SYSTEMS)))
    return found


def _python_names(python):
    return '%s (%s)' % (' and '.join(python['variables']), python['path'])


def _rules_python(r):
    engine = r['engine']
    if engine['name'] != 'vllm' or not engine['version']:
        return []
    plan = r['engine_python_plan']
    if plan and plan['problems']:
        return [_finding(
            'engine-python-unsupported', 'fail',
            '%s): the engine role would give vLLM %s\'s venv no Python: %s'
            % (_node_line(r), engine['version'], ' '.join(plan['problems'])),
            'Set engine_python to the path of a Python inside vLLM %s\'s requires-python %s that you provide, or'
            ' engine_python_version to a version the system has (the engine role\'s README has the table).'
            % (engine['version'], engine['python_range']))]
    read = [python for python in r['pythons'] if python['read']]
    if not read:
        return []
    bounds = engine['python_bounds']
    if bounds is None:
        return [_finding(
            'engine-python-unknown', 'warn',
            '%s): vLLM %s is not in the collection\'s table of vLLM releases (%s), so the Python it needs is not known; '
            '%s not checked.' % (_node_line(r), engine['version'], ', '.join(sorted(matrix.VLLM_PYTHON)),
                                 ', '.join(_python_names(python) for python in read)),
            'Compare the Python of %s with requires-python in vLLM %s\'s pyproject.toml, then accept the finding '
            '(preflight_accepted_findings: [engine-python-unknown]).' % (', '.join(_python_names(python) for python in read), engine['version']))]
    found = []
    bad = [python for python in read if python['version_tuple'] and not bounds[0] <= python['version_tuple'][:2] < bounds[1]]
    if bad:
        fitting = sorted(release for release, (low, high) in matrix.VLLM_PYTHON.items()
                         if all(low <= python['version_tuple'][:2] < high for python in bad))
        found.append(_finding(
            'engine-python-unsupported', 'fail',
            '%s): %s; vLLM %s requires Python %s (its pyproject.toml requires-python), and its ROCm images use 3.12.'
            % (_node_line(r), '; '.join('%s is Python %s' % (_python_names(python), python['version']) for python in bad),
               engine['version'], engine['python_range']),
            'Install a Python in that range on the node (Ubuntu 22.04: python3.12 from the deadsnakes PPA, or a relocatable '
            'Python build through the fleet\'s mirror) and point %s at it%s.'
            % (' and '.join(sorted(set(variable for python in bad for variable in python['variables']))),
               ('; or pin an engine_version whose range includes it (%s)' % ', '.join(fitting)) if fitting else '')))
    broken = [python for python in read if python['error']]
    if broken:
        found.append(_finding(
            'engine-python-unknown', 'warn',
            '%s): could not read the version of %s, so vLLM %s\'s Python range %s was not checked.'
            % (_node_line(r), '; '.join('%s: %s' % (_python_names(python), python['error']) for python in broken), engine['version'],
               engine['python_range']),
            'Install that Python on the node before the engine stage, or point the variable at the Python that will run vLLM.'))
    return found


def _rules_cmdline(r):
    cmdline = r['cmdline']
    if cmdline is None:
        return [_finding('cmdline-unreadable', 'info', '/proc/cmdline could not be read: the IOMMU mode was not checked.',
                         'Check "cat /proc/cmdline" on the node.')]
    found = []
    many = r['cpu_count'] is not None and r['cpu_count'] >= MANY_CPUS
    if cmdline['iommu_disabled_by']:
        extra = (' This node has %d logical CPUs: with %d or more the MI300X tuning guide says to keep the IOMMU on.'
                 % (r['cpu_count'], MANY_CPUS)) if many else ''
        found.append(_finding(
            'iommu-disabled', 'warn',
            'The kernel command line turns the IOMMU off (%s); AMD\'s Instinct guides keep it on in pass-through mode.%s'
            % (', '.join(cmdline['iommu_disabled_by']), extra),
            'Remove %s from the kernel command line and use iommu=pt (the tuning role adds it: tuning_kernel_args).'
            % ' '.join(cmdline['iommu_disabled_by'])))
    elif not cmdline['iommu_passthrough']:
        found.append(_finding(
            'iommu-passthrough-missing', 'warn',
            'The kernel command line has no iommu=pt: DMA of the GPUs and NICs goes through IOMMU translation.',
            'Let the tuning role add iommu=pt (tuning_kernel_args: true) and reboot.'))
    if not cmdline['iommu_disabled_by'] and r['lspci'] and r['pcie_devices'] \
            and all(dev.get('iommu_group') is None for dev in r['pcie_devices'].values()):
        found.append(_finding(
            'iommu-inactive', 'warn',
            'lspci shows no PCI device in an IOMMU group: the IOMMU is not active although the command line does not turn it off.',
            'Turn IOMMU (AMD-Vi / VT-d) on in the BIOS; on Intel hosts also add intel_iommu=on.'))
    if not cmdline['pci_realloc_off']:
        found.append(_finding(
            'pci-realloc-not-off', 'info',
            'The kernel command line has no pci=realloc=off, which the MI300X tuning guide sets.',
            'Let the tuning role add it (tuning_kernel_args: true) and reboot.'))
    return found


def _rules_links(r):
    if not r['lspci']:
        return []
    found = []
    width, speed = [], []
    devices = r['pcie_devices']
    watched = [gpu['address'] for gpu in r['gpus']] + [addr for addr in r['rdma_addresses'] if addr in devices]
    for address in watched:
        link = (devices.get(address) or {}).get('pcie')
        if not link:
            continue
        if link.get('width_downgraded'):
            width.append('%s x%s of x%s' % (address, link.get('link_width'), link.get('link_cap_width')))
        elif link.get('speed_downgraded'):
            speed.append('%s %s of %s' % (address, _gts(link.get('link_speed_gts')), _gts(link.get('link_cap_speed_gts'))))
    if width:
        found.append(_finding(
            'pcie-link-width-downgraded', 'warn',
            'PCIe link(s) of GPUs or RDMA NICs trained narrower than the device can: %s.' % ', '.join(width),
            'Reseat the device or its riser/cable, check the slot\'s bifurcation setting in the BIOS, and compare with '
            '"lspci -vvv -s <address> | grep -e LnkCap -e LnkSta" after a cold boot.'))
    if speed:
        found.append(_finding(
            'pcie-link-speed-downgraded', 'warn',
            'PCIe link(s) of GPUs or RDMA NICs trained slower than the device can: %s. An idle GPU may lower its link speed to save '
            'power; under load it must be back at full speed.' % ', '.join(speed),
            'Check LnkSta while the GPUs work (for example during rocm-bandwidth-test); if still slow, check the slot\'s PCIe generation '
            'setting in the BIOS, risers and retimers.'))
    return found


def _rules_topology(r):
    found = []
    multi = r['multi_node']
    rdma = set(r['rdma_addresses'])
    if multi and r['multi_node_from'] == 'inventory' and not r['rdma_devices'] and not r['errors']['rdma_facts']:
        found.append(_finding(
            'rdma-none', 'warn', 'preflight_multi_node is true but the node has no RDMA device: RCCL across nodes falls back to TCP sockets.',
            'Check the RDMA NICs and their drivers ("ls /sys/class/infiniband"), or set preflight_multi_node: false.'))
    if r['lspci'] and rdma:
        lonely = []
        for entry in r['gpu_nic_affinity']:
            if entry.get('root_port') is None:
                continue
            partners = entry.get('same_switch') if entry.get('switch') else entry.get('same_root_port')
            if not rdma.intersection(partners or []):
                lonely.append(entry['gpu'])
        if lonely:
            found.append(_finding(
                'gpu-nic-not-on-switch', 'warn' if multi else 'info',
                'GPU(s) with no RDMA NIC under the same PCIe switch: %s. Their GPUDirect RDMA traffic crosses the CPU\'s root complex.'
                % ', '.join(lonely),
                'Place one RDMA NIC under each GPU\'s switch (see the platform\'s topology guide); "lspci -PP -d 1002:" and '
                '"lspci -PP -d 15b3:" show the paths.'))
    if r['lspci'] and r['pcie_capabilities_readable'] is not False:
        devices = r['pcie_devices']
        targets = [gpu['address'] for gpu in r['gpus']] + [addr for addr in sorted(rdma) if addr in devices]
        paths = [devices[addr].get('path') for addr in targets if addr in devices]
        if targets and all(path is not None for path in paths):
            bridges = sorted(set(bridge for path in paths for bridge in path))
        else:
            bridges = sorted(devices)
        acs = [addr for addr in bridges if ((devices.get(addr) or {}).get('acs') or {}).get('source_validation')]
        if targets and acs:
            found.append(_finding(
                'pcie-acs-enabled', 'warn' if multi else 'info',
                'ACS source validation (ACSCtl SrcValid+) is on for bridge(s) %s%s: peer-to-peer traffic between GPUs and NICs is '
                'redirected through the root complex, which slows RCCL across nodes.'
                % (', '.join(acs), ' above the GPUs/NICs' if all(path is not None for path in paths) else ''),
                'Clear ACS on those bridges at every boot ("setpci -s <bridge> ECAP_ACS+0x6.w=0000", as AMD\'s multi-node guide does), '
                'or turn ACS off in the BIOS.'))
    return found


def _rules_numa(r):
    found = []
    if r['numa_balancing']:
        found.append(_finding(
            'numa-balancing-enabled', 'warn',
            'Automatic NUMA balancing is on (kernel.numa_balancing = %d): it migrates the memory of GPU workers and stalls them.'
            % r['numa_balancing'],
            'Let the tuning role turn it off (tuning_numa_balancing: true).'))
    sockets, nodes = r['sockets'], r['numa_nodes_with_cpus']
    if sockets and nodes and nodes > int(sockets):
        found.append(_finding(
            'numa-nps-not-1', 'info',
            '%d NUMA nodes with CPUs on %d socket(s): the memory is split per socket (NPS2/NPS4); the MI300X tuning guide uses NPS1.'
            % (nodes, int(sockets)),
            'Set NPS1 in the BIOS unless the workload was tuned for this layout.'))
    return found


def preflight_findings(inputs):
    """Every finding for one node, most severe first: a list of {id, level, message, fix}."""
    if not isinstance(inputs, dict):
        raise AnsibleFilterError('preflight_findings expects a dict of inputs, got %s' % type(inputs).__name__)
    readings = _readings(inputs)
    found = []
    for rules in (_rules_os_kernel, _rules_secure_boot, _rules_disk, _rules_gpus, _rules_support, _rules_cmdline, _rules_links,
                  _rules_topology, _rules_numa):
        found.extend(rules(readings))
    accepted = set(inputs.get('accepted') or [])
    for finding in found:
        if finding['id'] in accepted and finding['level'] != 'info':
            finding['message'] += ' (Accepted by preflight_accepted_findings; its level was %s.)' % finding['level']
            finding['level'] = 'info'
    found.sort(key=lambda finding: (LEVELS.index(finding['level']), _ORDER[finding['id']]))
    return found


def preflight_finding_lines(findings):
    """One readable line per finding: ``[level] id: message Fix: fix``."""
    return ['[%s] %s: %s Fix: %s' % (item['level'], item['id'], item['message'], item['fix']) for item in findings or []]
