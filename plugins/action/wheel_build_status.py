# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Follow an engine build from the controller: poll the builder, print its progress, return how it ended."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

MODULE = 'llmfleet.rocm.wheel_build_status'
MODULE_ARGS = ('build_dir', 'key', 'tail_lines')


def _duration(seconds):
    seconds = int(seconds or 0)
    if seconds < 60:
        return '%d s' % seconds
    if seconds < 3600:
        return '%d min %02d s' % divmod(seconds, 60)
    return '%d h %02d min' % (seconds // 3600, (seconds % 3600) // 60)


def progress_text(host, state):
    """One progress message: the stage, the build's age, and the log's last lines."""
    stages = state.get('stages') or []
    if state['state'] == 'waiting':
        head = 'waiting: the builder runs another build (pid %s)' % state.get('pid')
    else:
        head = 'stage %s/%d %s' % (state.get('stage_index', 0), len(stages), state.get('stage') or 'setup')
    done = ', '.join('%s %s' % (item['name'], item['state']) for item in stages if item.get('state') != 'pending')
    lines = ['[%s] build %s: %s, %s%s' % (host, state['key'], head, _duration(state.get('elapsed')),
                                          ' (%s)' % done if done else '')]
    if state.get('log'):
        lines.append('    log %s:' % state['log'])
        lines.extend('      | %s' % line[:200] for line in state.get('tail') or [])
    return '\n'.join(lines)


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(MODULE_ARGS + ('follow', 'job', 'interval', 'timeout'))

    def _status(self, args, task_vars):
        return self._execute_module(module_name=MODULE, module_args=dict((k, args[k]) for k in MODULE_ARGS if k in args),
                                    task_vars=task_vars)

    def _job(self, job, mode, task_vars):
        async_dir = self._remote_expand_user(self.get_shell_option('async_dir', default='~/.ansible_async'))
        return self._execute_module(module_name='ansible.legacy.async_status', task_vars=task_vars,
                                    module_args={'jid': job, 'mode': mode, '_async_dir': async_dir})

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        follow = args.get('follow', False)
        job = args.get('job')
        interval = max(1, int(args.get('interval', 30)))
        timeout = int(args.get('timeout', 86400))
        host = task_vars.get('inventory_hostname', '?')
        if not follow or self._task.check_mode:
            result.update(self._status(args, task_vars))
            return result

        deadline = time.time() + timeout
        last_text, last_shown = None, 0.0
        while True:
            if job:
                ended = self._job(job, 'status', task_vars)
                if ended.get('finished'):
                    self._job(job, 'cleanup', task_vars)
                    for field in ('ansible_job_id', 'results_file', 'started', 'finished', 'invocation'):
                        ended.pop(field, None)
                    result.update(ended)
                    return result
            state = self._status(args, task_vars)
            if state.get('failed'):
                result.update(state)
                return result
            if state['state'] == 'killed':
                result.update(state)
                result.update(failed=True, msg=(
                    'The build of %s stopped in stage %s: its process (pid %s) is gone while the build was running '
                    '(killed, or the builder restarted). Finished stages are kept; running the build again resumes it. '
                    'Last lines of %s:\n%s' % (state['key'], state['stage'], state['pid'], state['log'],
                                               '\n'.join(state['tail']))))
                return result
            if not job and state['state'] in ('done', 'failed', 'none'):
                result.update(state)
                result['failed'] = state['state'] != 'done'
                if result['failed']:
                    result['msg'] = 'The build of %s %s: %s' % (state['key'], state['state'], state.get('message', ''))
                return result
            text = progress_text(host, state)
            if text != last_text or time.time() - last_shown >= interval:
                display.display(text)
                last_text, last_shown = text, time.time()
            if time.time() > deadline:
                result.update(state)
                result.update(failed=True, msg='Stopped following the build of %s after %d s; it goes on on the builder '
                                               '(run the build again to follow it).' % (state['key'], timeout))
                return result
            time.sleep(interval)
