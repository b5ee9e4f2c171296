# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""labctl molecule --lanes: the scenarios shared among lanes, molecule's step lines picked out, and lanes that
run side by side with their exit codes and logs (small shell commands stand in for molecule)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess
import sys
import time

import pytest

from labctl import cli, lanes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_every_scenario_has_a_weight_and_lands_in_exactly_one_lane():
    names = lanes.scenarios(os.path.join(ROOT, 'molecule'))
    assert 'workers' in names and 'shared' not in names
    assert sorted(set(lanes.WEIGHTS) - {lanes.SANDBOX}) == names
    shares = lanes.split(names, 2)
    assert len(shares) == 2
    assert sorted(name for share in shares for name in share) == names


def test_shares_are_balanced_longest_first():
    shares = lanes.split(['a', 'b', 'c', 'd', 'e'], 2, {'a': 10, 'b': 7, 'c': 5, 'd': 4, 'e': 1})
    assert shares == [['a', 'd'], ['b', 'c', 'e']]
    loads = [sum({'a': 10, 'b': 7, 'c': 5, 'd': 4, 'e': 1}[n] for n in share) for share in shares]
    assert max(loads) - min(loads) <= 1


def test_an_unknown_scenario_counts_as_the_longest():
    assert lanes.split(['new', 'a', 'b'], 2, {'a': 10, 'b': 3}) == [['a', 'b'], ['new']]


def test_one_lane_keeps_every_scenario_and_more_lanes_than_scenarios_leave_none_empty():
    assert lanes.split(['a', 'b'], 1, {'a': 1, 'b': 2}) == [['b', 'a']]
    assert lanes.split(['a', 'b'], 4, {'a': 1, 'b': 2}) == [['b'], ['a']]


def test_zero_lanes_is_refused():
    with pytest.raises(ValueError, match='lanes must be 1 or more'):
        lanes.split(['a'], 0)


@pytest.mark.parametrize('line,expected', [
    ('\x1b[36mINFO    \x1b[0m \x1b[32mgateway\x1b[0m \u279c \x1b[33mconverge\x1b[0m: \x1b[36mExecuting\x1b[0m\n',
     'gateway converge: Executing'),
    ('INFO     rocm \u279c idempotence: Executed: Successful\n', 'rocm idempotence: Executed: Successful'),
    ('INFO     rocm \u279c verify: Executed: Failed\n', 'rocm verify: Executed: Failed'),
    ('  \u2502 TASK [llmfleet.rocm.rocm : Install the ROCm release]\n', None),
    ('INFO     workers \u279c verify: Executing Testinfra tests found in /x/tests/...\n', None),
    # The closing report repeats the steps without INFO; its summary line is kept.
    ('lab \u279c destroy: Executed: Successful\n', None),
    ('INFO     Molecule executed 2 scenarios (2 successful)\n', 'Molecule executed 2 scenarios (2 successful)'),
])
def test_step_lines(line, expected):
    assert lanes.step_line(line) == expected


def test_lanes_run_side_by_side_and_report_each_exit_code(tmp_path):
    said = []
    script = ("import sys, time; print('INFO     %s \\u279c converge: Executing', flush=True); time.sleep(1); "
              "print('detail of %s'); sys.exit(3 if 'bad' in sys.argv[1:] else 0)")
    start = time.time()
    codes = lanes.run(lambda share: [sys.executable, '-c', script % (share[0], share[0])] + share,
                      [['good'], ['bad', 'x']], dict(os.environ), str(tmp_path), str(tmp_path / 'logs'), said.append)
    assert time.time() - start < 1.9, 'the two one-second lanes ran one after the other'
    assert codes == [0, 3]
    assert open(str(tmp_path / 'logs' / 'molecule-lane-1.log')).read() == 'INFO     good \u279c converge: Executing\ndetail of good\n'
    assert any(text.startswith('[lane 2 ') and text.endswith('] bad converge: Executing') for text in said), said
    assert any('lane 2 failed (rc=3)' in text for text in said) and 'detail of bad' in said[-1]
    assert not any('lane 1 failed' in text for text in said)


def test_a_lane_that_makes_its_stdin_non_blocking_leaves_the_other_lanes_blocking(tmp_path):
    """A program in one lane sets O_NONBLOCK on its stdin; ansible-playbook in another lane refuses to start on such a
    stdin."""
    script = ("import fcntl, os, sys, time; flags = fcntl.fcntl(0, fcntl.F_GETFL)\n"
              "if sys.argv[1] == 'ssh': fcntl.fcntl(0, fcntl.F_SETFL, flags | os.O_NONBLOCK); time.sleep(1.5)\n"
              "else: time.sleep(0.5); sys.exit(4 if fcntl.fcntl(0, fcntl.F_GETFL) & os.O_NONBLOCK else 0)")
    codes = lanes.run(lambda share: [sys.executable, '-c', script] + share, [['ssh'], ['ansible-playbook']],
                      dict(os.environ), str(tmp_path), str(tmp_path / 'logs'), lambda text: None)
    assert codes == [0, 0]


def test_the_command_line_refuses_lanes_for_anything_but_test_all():
    args = cli.build_parser().parse_args(['molecule', '--lanes', '2', 'converge', '-s', 'lab'])
    assert args.lanes == 2 and args.molecule_args == ['converge', '-s', 'lab']
    with pytest.raises(cli.LabError, match='--lanes runs "test --all" only'):
        cli.check_molecule_args(args)
    with pytest.raises(cli.LabError, match='--lanes takes 1 or more, not 0'):
        cli.check_molecule_args(cli.build_parser().parse_args(['molecule', '--lanes', '0', 'test', '--all']))
    cli.check_molecule_args(cli.build_parser().parse_args(['molecule', '--lanes', '2', 'test', '--all']))
    with pytest.raises(cli.LabError, match='--with-sandbox runs the sandbox in a lane of its own'):
        cli.check_molecule_args(cli.build_parser().parse_args(['molecule', '--with-sandbox', 'test', '--all']))
    cli.check_molecule_args(cli.build_parser().parse_args(['molecule', '--lanes', '2', '--with-sandbox', 'test', '--all']))


def test_the_sandbox_is_a_share_and_runs_first_in_its_lane_then_its_hosts_stop():
    assert 'sandbox' in lanes.WEIGHTS
    shares = lanes.split(lanes.scenarios(os.path.join(ROOT, 'molecule')) + [lanes.SANDBOX], 2)
    assert sum(share.count(lanes.SANDBOX) for share in shares) == 1
    argv = lanes.lane_argv(['workers', lanes.SANDBOX, 'lab'], ['molecule', 'test'], ['/x/sandbox.sh'], ['/x/labctl', 'stop'])
    assert argv[:2] == ['bash', '-c']
    assert argv[2].index('/x/sandbox.sh') < argv[2].index('/x/labctl stop') < argv[2].index('molecule test -s workers -s lab')
    assert lanes.lane_argv(['lab'], ['molecule', 'test'], ['/x/sandbox.sh'], ['/x/labctl', 'stop']) == ['molecule', 'test', '-s', 'lab']


@pytest.mark.parametrize('sandbox_rc,scenarios_rc,expected', [(0, 0, 0), (4, 0, 4), (0, 2, 2), (4, 2, 4)])
def test_a_sandbox_lane_stops_the_hosts_whatever_happened_and_fails_if_either_failed(tmp_path, sandbox_rc, scenarios_rc, expected):
    trail = tmp_path / 'trail'

    def step(name, rc):
        return [sys.executable, '-c', 'import sys; open(%r, "a").write(%r); sys.exit(%d)' % (str(trail), name + ' ', rc)]
    argv = lanes.lane_argv([lanes.SANDBOX, 'lab'], step('scenarios', scenarios_rc),
                           step('sandbox', sandbox_rc), step('stop', 0))
    codes = lanes.run(lambda share: argv, [[lanes.SANDBOX, 'lab']], dict(os.environ), str(tmp_path), str(tmp_path / 'logs'), lambda text: None)
    assert codes == [expected]
    assert trail.read_text().split() == ['sandbox', 'stop', 'scenarios']


@pytest.mark.parametrize('line,expected', [
    ('==> run site.yml against inventories/sandbox\n', 'sandbox: ==> run site.yml against inventories/sandbox'),
    ('FAILED: check that the fleet is closed (rc=2)\n', 'sandbox: FAILED: check that the fleet is closed (rc=2)'),
])
def test_the_sandboxs_step_lines(line, expected):
    assert lanes.step_line(line) == expected


@pytest.mark.parametrize('without,step,left_out', [
    ('multinode', 'multinode', True), ('multinode', 'validation', False), ('', 'multinode', False),
    ('validation multinode', 'validation', True), ('multinodes', 'multinode', False),
    ('maintenance multinode', 'maintenance', True), ('maintenance multinode', 'validation', False)])
def test_the_sandbox_leaves_out_exactly_the_steps_named_in_sandbox_without(without, step, left_out):
    """tests/sandbox.sh's own `without` function, which make test's lane uses with SANDBOX_WITHOUT=maintenance multinode."""
    with open(os.path.join(ROOT, 'tests', 'sandbox.sh')) as handle:
        script = handle.read()
    function = script[script.index('without() {'):script.index('\n}\n', script.index('without() {')) + 3]
    proc = subprocess.run(['bash', '-c', function + 'without %s "the step"' % step], check=False, env=dict(os.environ, SANDBOX_WITHOUT=without),
                          stdout=subprocess.PIPE, universal_newlines=True)
    assert (proc.returncode == 0) is left_out
    assert ('left out' in proc.stdout) is left_out
    with open(os.path.join(ROOT, 'tests', 'run-all.sh')) as handle:
        assert 'export SANDBOX_WITHOUT="${SANDBOX_WITHOUT-maintenance multinode}"' in handle.read()
