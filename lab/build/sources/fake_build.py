# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build record of the lab's stand-in engine sources (copied into each stand-in repository by lab/labctl).

The stand-ins have the layout and the build entry points of the real PyTorch, Triton, torchvision, torchaudio and vLLM
sources, so that the engine_build role runs its production recipe on them unchanged. Instead of compiling, a build
records what it saw (the environment, the commit, the Python) into the package, and appends one line per build to a
log on the host.
BUILD_SECONDS in the repository makes a build last that long (printing progress), so that a test can kill it.
"""

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BUILDS_LOG = '/var/log/llmfleet-lab-builds.log'
SEEN = ('PYTORCH_ROCM_ARCH', 'MAX_JOBS', 'VLLM_TARGET_DEVICE', 'GPU_ARCHS', 'PREBUILD_KERNELS', 'USE_ROCM', 'ROCM_PATH',
        'CMAKE_PREFIX_PATH', 'VIRTUAL_ENV', 'PIP_CONSTRAINT', 'CC', 'CXX', 'TRITON_KERNELS_SRC_DIR')


def commit():
    return subprocess.check_output(['git', '-C', HERE, 'rev-parse', 'HEAD']).decode().strip()


def building():
    return 'bdist_wheel' in sys.argv


def fail(message):
    sys.stderr.write('stand-in build: %s\n' % message)
    sys.exit(1)


def _log(component, event):
    with open(BUILDS_LOG, 'a') as handle:
        handle.write('%s %s %s %s pid=%d\n' % (time.strftime('%Y-%m-%dT%H:%M:%S'), component, event, commit(), os.getpid()))


def record(component, package_dir, extra=None):
    """Write <package_dir>/_llmfleet_build.json and log the build (taking BUILD_SECONDS seconds)."""
    _log(component, 'start')
    seconds_file = os.path.join(HERE, 'BUILD_SECONDS')
    seconds = int(open(seconds_file).read().strip()) if os.path.exists(seconds_file) else 0
    for second in range(seconds):
        arch = os.environ.get('PYTORCH_ROCM_ARCH')
        print('[%d/%d] compiling the stand-in kernels of %s for %s' % (second + 1, seconds, component, arch), flush=True)
        time.sleep(1)
    data = {'component': component, 'commit': commit(), 'python': '%d.%d' % sys.version_info[:2],
            'env': dict((name, os.environ.get(name)) for name in SEEN), 'extra': extra or {}}
    with open(os.path.join(package_dir, '_llmfleet_build.json'), 'w') as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
    _log(component, 'end')
    return data
