# SPDX-License-Identifier: BSD-2-Clause
"""What ``ldactl`` costs before it reads a byte: numpy's BLAS starts no thread pool."""

import os
import subprocess
import sys

import pytest

_THREADS = ("import os, host_sw.cli, numpy; "
            "print(len(os.listdir('/proc/self/task')), os.environ['OPENBLAS_NUM_THREADS'])")


def _run(env):
    out = subprocess.run([sys.executable, "-c", _THREADS], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return int(out[0]), out[1]


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")
def test_the_command_line_loads_numpy_with_one_thread():
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    assert _run(env) == (1, "1")


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="needs Linux /proc")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: one BLAS thread anyway")
def test_a_users_thread_count_wins():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    threads, value = _run(env)
    assert value == "2" and threads == 2
