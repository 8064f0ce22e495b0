# SPDX-License-Identifier: BSD-2-Clause
"""The ``ldactl`` command line: the top layer of the host package (``docs/DESIGN.md``).

OpenBLAS starts a thread pool of one thread per core when numpy loads it, about 50 ms of
CPU time on 2 cores, a fifth of every run's start; nothing in the host package calls BLAS
(its arithmetic is integer and elementwise), so the command line asks for one thread
before numpy is imported. A user's ``OPENBLAS_NUM_THREADS`` wins
(``tests/cli/test_cli_start.py``).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from host_sw.cli.main import main  # noqa: E402  (after the thread count: numpy loads BLAS)

__all__ = ["main"]
