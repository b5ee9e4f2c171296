# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The build of the lab's stand-in rccl-tests, run by its Makefile (which exports the make variables it reads).

A real build compiles the tests with $(ROCM_PATH)/bin/hipcc against RCCL (rccl/rccl.h, -lrccl) and, with MPI=1, MPI
(mpi.h, -lmpi) for the GPU targets of HIPCC_COMPILE_FLAGS_APPEND (--offload-arch=...). This one fails as that build
would when one of those inputs is missing, then writes each binary into $(BUILDDIR) as a self-contained Python zipapp
(stubs/gpusim.py, validsim.py and labhost.py inside, copied into this repository by lab/labctl) that prints what the real
test prints for the simulated GPUs of the host it runs on. It records what it saw in $(BUILDDIR)/_llmfleet_build.json
and appends start/end lines to the builds log, as fake_build.py does for the engine's stand-ins; BUILD_SECONDS in the
repository makes the build last that long, printing progress.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipapp

import fake_build

HERE = os.path.dirname(os.path.abspath(__file__))
COMPONENT = 'rccl-tests'
# What rccl-tests' Makefile builds into $(BUILDDIR).
BINARIES = ('all_reduce_perf', 'all_gather_perf', 'broadcast_perf', 'reduce_scatter_perf', 'reduce_perf',
            'alltoall_perf', 'scatter_perf', 'gather_perf', 'sendrecv_perf', 'alltoallv_perf')
# The ones lab/stubs/validsim.py prints; the others say so and exit 2.
SIMULATED = ('all_reduce_perf',)
# The lab's stub modules each binary bundles (lab/stubs/).
STUBS = ('gpusim.py', 'validsim.py', 'labhost.py')
INTERPRETER = '/usr/bin/python3'
ARCH = re.compile(r'^gfx[0-9a-f]+(:[a-z]+[+-])*$')
MAIN = '''# rccl-tests {tool} (llmfleet lab stand-in, commit {commit}, ROCM_PATH {rocm_path}): prints what the real
# test prints for the simulated GPUs of this host (/etc/llmfleet-lab/gpu-profile.json). No GPU code.
import sys

import gpusim

TOOL = {tool!r}
ROCM_PATH = {rocm_path!r}
SIMULATED = {simulated!r}

if TOOL not in SIMULATED:
    sys.stderr.write('%s: not simulated by the llmfleet lab (its rccl-tests simulates %s)\\n' % (TOOL, ', '.join(SIMULATED)))
    sys.exit(2)
sys.exit(gpusim.main(TOOL, sys.argv[1:], ROCM_PATH))
'''


def builds_log():
    return os.environ.get('LLMFLEET_LAB_BUILDS_LOG', fake_build.BUILDS_LOG)


def log(event, commit):
    with open(builds_log(), 'a') as handle:
        handle.write('%s %s %s %s pid=%d\n' % (time.strftime('%Y-%m-%dT%H:%M:%S'), COMPONENT, event, commit, os.getpid()))


def make_var(name, default=None):
    """A variable the Makefile exported; its "" (rccl-tests' default of NCCL_HOME, CUSTOM_RCCL_LIB) is unset."""
    value = os.environ.get(name, '')
    return default if value in ('', '""') else value


def offload_archs(flags):
    """The GPU targets of HIPCC_COMPILE_FLAGS_APPEND (--offload-arch=X, --offload-arch X, comma lists)."""
    archs, words = [], shlex.split(flags or '')
    for index, word in enumerate(words):
        value = None
        if word.startswith('--offload-arch='):
            value = word.split('=', 1)[1]
        elif word == '--offload-arch' and index + 1 < len(words):
            value = words[index + 1]
        for arch in (value.split(',') if value is not None else []):
            if not ARCH.match(arch):
                fake_build.fail('hipcc: error: unsupported --offload-arch %r in HIPCC_COMPILE_FLAGS_APPEND' % arch)
            if arch not in archs:
                archs.append(arch)
    return archs


def check_hipcc(hipcc):
    if not os.path.isfile(hipcc) or not os.access(hipcc, os.X_OK):
        fake_build.fail('%s: No such file or directory (the HIP compiler: package hipcc, part of rocm-hip-sdk; '
                        'set ROCM_PATH to the ROCm installation)' % hipcc)
    proc = subprocess.run([hipcc, '--version'], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, check=False)
    if proc.returncode != 0:
        fake_build.fail('%s --version failed (rc %d): %s' % (hipcc, proc.returncode, proc.stdout.strip()))
    return (proc.stdout.strip().splitlines() or [''])[0]


def unique(paths):
    return [path for index, path in enumerate(paths) if path not in paths[:index]]


def find_rccl(rocm_path, nccl_home, custom_lib):
    """rccl/rccl.h and librccl.so where the real Makefile's -I and -L (or CUSTOM_RCCL_LIB) point."""
    homes = [nccl_home, os.path.join(nccl_home, 'include')] if nccl_home else []
    headers = unique([os.path.join(top, 'rccl', 'rccl.h') for top in homes + [os.path.join(rocm_path, 'include')]])
    header = next((path for path in headers if os.path.isfile(path)), None)
    if header is None:
        fake_build.fail("src/common.h: fatal error: 'rccl/rccl.h' file not found (searched %s; package rccl-dev, "
                        "or NCCL_HOME)" % ', '.join(headers))
    if custom_lib:
        if not os.path.isfile(custom_lib):
            fake_build.fail('ld.lld: error: cannot open %s: No such file or directory (CUSTOM_RCCL_LIB)' % custom_lib)
        return header, custom_lib
    libdirs = unique(([nccl_home, os.path.join(nccl_home, 'lib')] if nccl_home else []) + [os.path.join(rocm_path, 'lib')])
    library = next((os.path.join(top, 'librccl.so') for top in libdirs if os.path.exists(os.path.join(top, 'librccl.so'))), None)
    if library is None:
        fake_build.fail('ld.lld: error: unable to find library -lrccl (searched %s for librccl.so; package rccl-dev, '
                        'or NCCL_HOME, CUSTOM_RCCL_LIB)' % ', '.join(libdirs))
    return header, library


def find_mpi(mpi_home):
    """mpi.h where the real Makefile's MPI=1 include paths point ($(MPI_HOME)/include, $(MPI_HOME)/include/mpi)."""
    headers = [os.path.join(mpi_home, 'include', 'mpi.h'), os.path.join(mpi_home, 'include', 'mpi', 'mpi.h')]
    header = next((path for path in headers if os.path.isfile(path)), None)
    if header is None:
        fake_build.fail("src/common.h: fatal error: 'mpi.h' file not found (MPI=1: searched %s; set MPI_HOME, on "
                        "Debian /usr/lib/x86_64-linux-gnu/openmpi from libopenmpi-dev)" % ', '.join(headers))
    return header


def commit_time():
    out = subprocess.check_output(['git', '-C', HERE, 'log', '-1', '--format=%ct'], universal_newlines=True)
    return int(out.strip())


def write_binary(builddir, tool, commit, rocm_path, when):
    """$(BUILDDIR)/<tool>: a zipapp of __main__.py and the stubs it runs (same bytes for the same commit)."""
    staging = tempfile.mkdtemp(prefix='.%s-' % tool, dir=builddir)
    try:
        for name in STUBS:
            shutil.copyfile(os.path.join(HERE, 'stubs', name), os.path.join(staging, name))
        with open(os.path.join(staging, '__main__.py'), 'w') as handle:
            handle.write(MAIN.format(tool=tool, commit=commit, rocm_path=rocm_path, simulated=SIMULATED))
        for name in os.listdir(staging):
            os.utime(os.path.join(staging, name), (when, when))
        partial = os.path.join(builddir, '.%s.partial' % tool)
        zipapp.create_archive(staging, partial, interpreter=INTERPRETER, compressed=True)
        os.chmod(partial, 0o755)
        os.replace(partial, os.path.join(builddir, tool))
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def main():
    rocm_path = make_var('ROCM_PATH', '/opt/rocm')
    hipcc = make_var('HIPCC', os.path.join(rocm_path, 'bin', 'hipcc'))
    mpi = make_var('MPI', '0') == '1'
    mpi_home = make_var('MPI_HOME')
    nccl_home = make_var('NCCL_HOME')
    custom_lib = make_var('CUSTOM_RCCL_LIB')
    builddir = os.path.abspath(make_var('BUILDDIR', os.path.join(HERE, 'build')))
    flags = os.environ.get('HIPCC_COMPILE_FLAGS_APPEND', '')

    hipcc_version = check_hipcc(hipcc)
    rccl_header, rccl_library = find_rccl(rocm_path, nccl_home, custom_lib)
    mpi_header = find_mpi(mpi_home or '') if mpi else None
    archs = offload_archs(flags)
    if not archs:
        print('note: no --offload-arch in HIPCC_COMPILE_FLAGS_APPEND: hipcc builds for the GPUs of this machine', flush=True)

    commit = fake_build.commit()
    log('start', commit)
    seconds_file = os.path.join(HERE, 'BUILD_SECONDS')
    seconds = int(open(seconds_file).read().strip()) if os.path.exists(seconds_file) else 0
    for second in range(seconds):
        print('[%d/%d] compiling the stand-in kernels of %s for %s' % (second + 1, seconds, COMPONENT, ','.join(archs)),
              flush=True)
        time.sleep(1)
    if not os.path.isdir(builddir):
        os.makedirs(builddir)
    when = commit_time()
    for tool in BINARIES:
        print('Compiling %s -> %s' % (tool, os.path.join(builddir, tool)), flush=True)
        write_binary(builddir, tool, commit, rocm_path, when)
    data = {'component': COMPONENT, 'commit': commit, 'python': '%d.%d' % sys.version_info[:2],
            'ROCM_PATH': rocm_path, 'HIPCC': hipcc, 'MPI': '1' if mpi else '0', 'MPI_HOME': mpi_home,
            'NCCL_HOME': nccl_home, 'CUSTOM_RCCL_LIB': custom_lib, 'BUILDDIR': builddir,
            'HIPCC_COMPILE_FLAGS_APPEND': flags, 'offload_archs': archs,
            'found': {'hipcc': hipcc_version, 'rccl.h': rccl_header, 'librccl.so': rccl_library, 'mpi.h': mpi_header},
            'binaries': list(BINARIES), 'simulated': list(SIMULATED)}
    with open(os.path.join(builddir, '_llmfleet_build.json'), 'w') as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.write('\n')
    log('end', commit)
    return 0


if __name__ == '__main__':
    sys.exit(main())
