# SPDX-License-Identifier: BSD-2-Clause
"""Where the tasks of a capture analysis run: in this process, in worker processes
(``ldactl estimate --jobs N``) or on a Dask cluster (``--scheduler ADDRESS`` or
``local``).

:func:`host_sw.estimators.offline_stream.stream_pair` splits its work into tasks — one
pass per capture, then one pairing per spilled partition — and merges their results in
a fixed order, so the records are the same whichever runner ran them. A runner's
``map(fn, jobs)`` returns ``[fn(job) for job in jobs]`` in order; ``inline`` says the
tasks run in this process (they may then keep their spill in memory and report
progress). Worker processes and Dask workers must reach the capture files and the spill
folder by the same paths (a shared file system beyond one machine).

Example
-------
>>> with runner(jobs=2) as run:                          # doctest: +SKIP
...     records = capture_records("s.pcap", "r.pcap", LdaConfig(), run=run)
"""

from __future__ import annotations

import contextlib
import os
from concurrent.futures import ProcessPoolExecutor

__all__ = ["inline_runner", "runner", "default_jobs"]


def default_jobs() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (not Linux)
        return os.cpu_count() or 1


class _Inline:
    inline = True

    def map(self, fn, jobs):
        return [fn(job) for job in jobs]


class _Processes:
    inline = False

    def __init__(self, pool):
        self.pool = pool

    def map(self, fn, jobs):
        return list(self.pool.map(fn, jobs))


class _Dask:
    inline = False

    def __init__(self, client):
        self.client = client

    def map(self, fn, jobs):
        futures = [self.client.submit(fn, job, pure=False) for job in jobs]
        return self.client.gather(futures)


def inline_runner():
    """Every task in this process, one after the other."""
    return _Inline()


@contextlib.contextmanager
def runner(jobs: int | None = None, scheduler: str | None = None):
    """A runner for ``jobs`` worker processes (``None``: :func:`default_jobs`; 1: this
    process), or for the Dask scheduler at ``scheduler`` (``"local"``: a
    ``LocalCluster`` of ``jobs`` single-threaded worker processes started here)."""
    jobs = default_jobs() if jobs is None else int(jobs)
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    if scheduler is not None:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise RuntimeError("--scheduler needs dask.distributed: pip install "
                               "'dask[distributed]'") from None
        if scheduler == "local":
            with LocalCluster(n_workers=jobs, threads_per_worker=1,
                              dashboard_address=None) as cluster, Client(cluster) as client:
                yield _Dask(client)
        else:
            with Client(scheduler) as client:
                yield _Dask(client)
        return
    if jobs == 1:
        yield _Inline()
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        yield _Processes(pool)
