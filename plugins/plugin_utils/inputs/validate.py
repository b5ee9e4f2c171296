# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Input checks of the validate role (``input_problems('validate')``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.llmfleet.rocm.plugins.plugin_utils.build_plan import build_arch_problems
from ansible_collections.llmfleet.rocm.plugins.module_utils._inputs import (
    RuleSet, as_int, as_number, is_absolute_path, is_one_line, show, supported_system_rule)
from ansible_collections.llmfleet.rocm.plugins.module_utils._validate_thresholds import HEALTH, THRESHOLDS

COMPUTE_PARTITIONS = ('SPX', 'DPX', 'TPX', 'QPX', 'CPX')
MEMORY_PARTITIONS = ('NPS1', 'NPS2', 'NPS4', 'NPS8')
THRESHOLD_NAMES = sorted(set(name for table in THRESHOLDS.values() for name in table))

PACKAGE_NAME = re.compile(r'^[a-z0-9][a-z0-9.+-]+$')

RULES = RuleSet('validate')
supported_system_rule(RULES)
# The rccl-tests build, with what only the builder knows (its ROCm release and system, the nodes' facts).
BUILD_RULES = RuleSet('validate')


@RULES.rule('validate-threshold-names')
def _threshold_names(values, ctx):
    overrides = values['validate_thresholds']
    if not isinstance(overrides, dict):
        return 'validate_thresholds is %s: give a mapping of threshold name to the keys to replace.' % show(overrides)
    messages = []
    for name, entry in sorted(overrides.items()):
        if name not in THRESHOLD_NAMES:
            messages.append('validate_thresholds names %s, which is no threshold of the table (known: %s).'
                            % (show(name), ', '.join(THRESHOLD_NAMES)))
        elif not isinstance(entry, dict):
            messages.append('validate_thresholds.%s is %s: give a mapping such as {value: 290.0, source: "where the figure'
                            ' comes from"}.' % (name, show(entry)))
        elif 'value' in entry and as_number(entry['value']) is None:
            messages.append('validate_thresholds.%s.value is %s: give a number.' % (name, show(entry['value'])))
    return messages


@RULES.rule('validate-health-names')
def _health_names(values, ctx):
    overrides = values['validate_health_thresholds']
    if not isinstance(overrides, dict):
        return 'validate_health_thresholds is %s: give a mapping of limit name to {value: N}.' % show(overrides)
    messages = []
    for name, entry in sorted(overrides.items()):
        if name not in HEALTH:
            messages.append('validate_health_thresholds names %s, which is no health limit (known: %s).'
                            % (show(name), ', '.join(sorted(HEALTH))))
        elif not isinstance(entry, dict) or ('value' in entry and (as_int(entry['value']) is None or as_int(entry['value']) < 0)):
            messages.append('validate_health_thresholds.%s is %s: give a mapping such as {value: 0}, the value a whole'
                            ' number from 0.' % (name, show(entry)))
    return messages


@RULES.rule('validate-partitions')
def _partitions(values, ctx):
    expected = values['validate_expected_partitions']
    if not isinstance(expected, dict) or set(expected) - set(['compute', 'memory']):
        return ('validate_expected_partitions is %s: give {compute: "", memory: ""} with a mode or "" (not checked).'
                % show(expected))
    messages = []
    for kind, modes in (('compute', COMPUTE_PARTITIONS), ('memory', MEMORY_PARTITIONS)):
        mode = expected.get(kind) or ''
        if mode and str(mode).upper() not in modes:
            messages.append('validate_expected_partitions.%s is %s: choose one of %s, or "" not to check it.'
                            % (kind, show(mode), ', '.join(modes)))
    return messages


@RULES.rule('validate-report-dir')
def _report_dir(values, ctx):
    if not is_absolute_path(values['validate_report_dir']) or values['validate_report_dir'].rstrip('/') == '':
        return 'validate_report_dir is %s: give an absolute directory on the node, not /.' % show(values['validate_report_dir'])
    return None


@RULES.rule('validate-timeout')
def _timeout(values, ctx):
    if (as_int(values['validate_timeout']) or 0) <= 0:
        return 'validate_timeout is %s: give the seconds a node\'s validation may take.' % show(values['validate_timeout'])
    return None


@RULES.rule('validate-drain-without-gateways')
def _drain(values, ctx):
    if (values['validate_drain'] or values['validate_on_failure'] == 'drain') and not ctx.get('gateways'):
        return ('validate_drain or validate_on_failure: drain needs the gateways group, and the inventory has no gateway:'
                ' set validate_drain: false and validate_on_failure: fail.')
    return None


@RULES.rule('validate-rccl-source')
def _rccl_source(values, ctx):
    messages = []
    for name in ('validate_rccl_tests_repo', 'validate_rccl_tests_ref'):
        value = values[name]
        if not isinstance(value, str) or not value.strip() or not is_one_line(value) or ' ' in value.strip():
            messages.append('%s is %s: give one git URL or ref, without blanks.' % (name, show(value)))
    return messages


@RULES.rule('validate-rccl-dirs')
def _rccl_dirs(values, ctx):
    messages = []
    for name in ('validate_rccl_tests_build_dir', 'validate_rccl_tests_dir', 'validate_rccl_tests_publish_dir',
                 'validate_rccl_tests_mpi_home'):
        if not is_absolute_path(values[name]) or values[name].rstrip('/') == '':
            messages.append('%s is %s: give an absolute directory, not /.' % (name, show(values[name])))
    return messages


@RULES.rule('validate-rccl-keep')
def _rccl_keep(values, ctx):
    if (as_int(values['validate_rccl_tests_keep']) or 0) < 1:
        return 'validate_rccl_tests_keep is %s: keep 1 or more artifacts.' % show(values['validate_rccl_tests_keep'])
    return None


@RULES.rule('validate-rccl-packages')
def _rccl_packages(values, ctx):
    messages = []
    for name in ('validate_packages', 'validate_rccl_tests_build_packages', 'validate_rccl_tests_rocm_packages'):
        bad = [item for item in values[name] if not isinstance(item, str) or not PACKAGE_NAME.match(item)]
        if bad:
            messages.append('%s holds %s: give Debian package names (lower case letters, digits, ".", "+", "-").'
                            % (name, ', '.join(show(item) for item in bad)))
    return messages


@RULES.rule('validate-rccl-arch')
def _rccl_arch(values, ctx):
    unknown = build_arch_problems(values['validate_rccl_tests_arch'])
    if unknown:
        return ('validate_rccl_tests_arch names %s, which are no AMD GPU targets: give targets such as gfx942 or'
                ' gfx90a, or [] for the nodes\' own.' % ', '.join(show(item) for item in unknown))
    return None


FABRIC_GROUP = re.compile(r'^[A-Za-z0-9_.-]+$')


@RULES.rule('validate-fabric-group')
def _fabric_group(values, ctx):
    group = values['validate_fabric_group']
    if not isinstance(group, str) or not FABRIC_GROUP.match(group) or group in ('.', '..'):
        return ('validate_fabric_group is %s: give a name of letters, digits, ".", "_" or "-" (the nodes with the same'
                ' name run the all-reduce together; it names the group\'s report directory).' % show(group))
    return None


@RULES.rule('validate-fabric-threshold')
def _fabric_threshold(values, ctx):
    threshold = values['validate_fabric_threshold']
    if threshold is None:
        return None
    value = as_number(threshold.get('value')) if isinstance(threshold, dict) else None
    source = threshold.get('source', '') if isinstance(threshold, dict) else None
    if value is None or value <= 0 or not isinstance(source, str) or not is_one_line(source) \
            or set(threshold) - set(['value', 'source']):
        return ('validate_fabric_threshold is %s: give null (the policy: validate_fabric_line_rate_fraction of the'
                ' members\' RDMA line rate) or {value: <GB/s above 0>, source: "where the figure comes from"}.'
                % show(threshold))
    return None


@RULES.rule('validate-fabric-fraction')
def _fabric_fraction(values, ctx):
    fraction = as_number(values['validate_fabric_line_rate_fraction'])
    if fraction is None or not 0 < fraction <= 1:
        return ('validate_fabric_line_rate_fraction is %s: give the share of the slowest member\'s RDMA line rate the'
                ' all-reduce must reach, above 0 and at most 1 (e.g. 0.7).' % show(values['validate_fabric_line_rate_fraction']))
    return None


@RULES.rule('validate-fabric-ssh-port')
def _fabric_ssh_port(values, ctx):
    port = as_int(values['validate_fabric_ssh_port'])
    if port is None or not 0 < port < 65536:
        return ('validate_fabric_ssh_port is %s: give the TCP port the members\' SSH servers listen on over the fabric'
                ' network (1-65535).' % show(values['validate_fabric_ssh_port']))
    return None


@RULES.rule('validate-fabric-needs-mpi')
def _fabric_mpi(values, ctx):
    if 'fabric' in values['validate_checks'] and not (values['validate_rccl_tests_build'] and values['validate_rccl_tests_mpi']):
        return ('validate_checks has fabric, which runs the rccl-tests artifact with mpirun across the nodes:'
                ' set validate_rccl_tests_build: true and validate_rccl_tests_mpi: true, or take fabric out of'
                ' validate_checks.')
    return None


@BUILD_RULES.rule('validate-build-rocm')
def _build_rocm(values, ctx):
    if not ctx['rocm']:
        return ('the builder %s has no ROCm release (no ROCm installed and no rocm_version): run the rocm role on it'
                ' first.' % ctx['builder'])
    return None


@BUILD_RULES.rule('validate-build-arch')
def _build_arch(values, ctx):
    if not ctx['arch']:
        return ('no GPU target to build rccl-tests for: the nodes to validate showed no GPU and'
                ' validate_rccl_tests_arch is empty; give validate_rccl_tests_arch, e.g. [gfx942].')
    return None


@BUILD_RULES.rule('validate-build-fleet-match')
def _build_fleet(values, ctx):
    messages = []
    for node, facts in sorted(ctx['fleet'].items()):
        rocm = (facts.get('rocm') or {}).get('rocm_version')
        system = '%s %s' % (facts.get('distribution', '?'), facts.get('distribution_major_version', '?'))
        if not facts.get('rocm'):
            messages.append('%s: its GPUs were not read, so rccl-tests cannot be built for it; run playbooks/validate.yml,'
                            ' which reads them first.' % node)
        elif rocm != ctx['rocm'] or system != ctx['system']:
            messages.append('%s runs ROCm %s on %s, the builder %s ROCm %s on %s: rccl-tests built there would not match'
                            ' its libraries; validate the nodes of each ROCm release and system separately'
                            ' (-e validate_nodes=...) with a builder of the same kind.'
                            % (node, rocm, system, ctx['builder'], ctx['rocm'], ctx['system']))
    return messages


def validate_build_problems(values, platform, builder, rocm, system, arch, fleet, gateways=None):
    """The role's inputs and the rccl-tests build's context -> messages: the builder's ROCm release and system
    (``builder``, ``rocm``, ``system``), the GPU targets (``arch``) and the nodes' facts (``fleet``: node -> facts)."""
    ctx = {'platform': platform, 'gateways': gateways or [], 'builder': builder, 'rocm': rocm, 'system': system,
           'arch': arch or [], 'fleet': fleet or {}}
    return RULES.messages(values, ctx) + BUILD_RULES.messages(values, ctx)


def validate_input_problems(values, platform, gateways=None):
    """The validate role's variables -> a list of messages (empty when fine). ``gateways``: the gateways group's hosts."""
    return RULES.messages(values, {'platform': platform, 'gateways': gateways or []})
