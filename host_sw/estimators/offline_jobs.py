# SPDX-License-Identifier: BSD-2-Clause
"""Where the tasks of a capture analysis run: in this process, in worker processes
(``ldactl estimate --jobs N``), in worker threads of this process (``--jobs N
--threads``) or on a Dask cluster (``--scheduler ADDRESS`` or ``local``).

:func:`host_sw.estimators.offline_stream.stream_pair` splits its work into tasks — one
pass per capture, then one pairing per spilled partition — and merges their results in
a fixed order, so the records are the same whichever runner ran them. A runner's
``map(fn, jobs)`` returns ``[fn(job) for job in jobs]`` in order; ``inline`` says the
tasks run in this process (they may then keep their spill in memory);
``workers`` is how many tasks may run at once (each capture is read in that many byte
ranges); ``task_progress(progress)`` gives the callback to hand to the tasks (worker processes
add to a shared byte counter that ``map`` reports to ``progress``; threads call it
under a lock; a Dask cluster's workers report nothing).

Why threads: a task spends most of its time in code that releases the GIL (the
compiled loops, numpy's sorts, gathers and file reads), and threads share this
process's imports, compiled code, warmed heap and in-memory spill; worker processes
each fault in a heap of their own (costly on a virtual machine: about 2 µs of CPU time
per KiB touched here), write their whole spill to files and pickle their results —
0.1–2.0 s of CPU time more than one process on a 2 M-packet pair, threads −0.2 to
+1.0 s (``docs/BENCHMARKS.md``). The Python code between the compiled calls holds the GIL,
so threads do not scale as far as processes would on many cores. Worker processes and
Dask workers must reach the capture files and the spill folder by the same paths (a
shared file system beyond one machine).

Example
-------
>>> with runner(jobs=2) as run:                          # doctest: +SKIP
...     records = capture_records("s.pcap", "r.pcap", LdaConfig(), run=run)
"""

from __future__ import annotations

import contextlib
import os
import threading

__all__ = ["inline_runner", "runner", "default_jobs", "WorkerProgress",
           "no_hugepage_advice", "reuse_freed_memory"]

#: glibc's ``mallopt`` parameters (``malloc.h``).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: The largest mmap threshold glibc takes on 64-bit systems (``DEFAULT_MMAP_THRESHOLD_MAX``).
_MMAP_THRESHOLD_MAX = 32 << 20
#: Freed memory at the heap's top kept up to this before it goes back to the kernel.
_TRIM_THRESHOLD = 1 << 30


def no_hugepage_advice() -> bool:
    """Stop numpy advising the kernel to back its large arrays with huge pages
    (``madvise(MADV_HUGEPAGE)``), unless the user chose with ``NUMPY_MADVISE_HUGEPAGE``;
    whether it was stopped here. Worker processes forked afterwards inherit it.

    Why: a capture analysis allocates its chunk buffers and spill records afresh,
    touches them once or twice and frees them. Where huge pages cannot be had (a
    virtual machine like this project's, ``AnonHugePages: 0``) each first touch of an
    advised page costs the kernel a failed huge-page allocation first: about 3 ms of CPU
    time per MiB against 0.6 ms unadvised here, about 0.3 s of a 2 M-packet LDA run
    (``docs/BENCHMARKS.md``). Streamed once, the arrays gain little from huge pages
    where they can be had."""
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return False
    import numpy as np
    setter = getattr(getattr(np, "_core", None), "multiarray", None)
    setter = getattr(setter, "_set_madvise_hugepage", None)
    if setter is None:          # pragma: no cover (a numpy without the switch)
        return False
    setter(False)
    return True


def reuse_freed_memory() -> bool:
    """Have glibc's ``malloc`` serve arrays of up to 32 MiB from its heap and keep freed
    memory there for the next ones, unless the user chose (``MALLOC_MMAP_THRESHOLD_`` or
    ``MALLOC_TRIM_THRESHOLD_`` set) or the C library is not glibc; whether it was set here.
    Worker processes forked afterwards inherit it (Dask's workers do not).

    Why: a capture analysis allocates each chunk's arrays afresh and frees them. glibc
    maps large ones afresh (its mmap threshold starts at 128 KiB and only follows the
    largest block freed) and hands the heap's free top back past its trim threshold, so
    the kernel faulted in every chunk's arrays anew: LDA on the 20 M-packet pair of
    ``bench.offline_stream`` took about 640,000 minor page faults and 1.8 s of system time,
    against about 130,000 and 1.0 s with these settings, at the same peak memory
    (``docs/BENCHMARKS.md``). A process that analyses captures and exits gains nothing
    from returning memory to the kernel between chunks."""
    if any(k in os.environ for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")):
        return False
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):        # pragma: no cover (not glibc)
        libc = ""
    if not libc.startswith("glibc"):
        return False                     # pragma: no cover (musl, macOS, ...)
    import ctypes
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):    # pragma: no cover
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return (mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX) == 1
            and mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD) == 1)


def default_jobs() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (not Linux)
        return os.cpu_count() or 1


class _Inline:
    inline = True
    workers = 1

    def map(self, fn, jobs):
        return [fn(job) for job in jobs]

    def task_progress(self, progress):
        """The progress callback to hand to the tasks: ``progress`` itself here."""
        return progress


#: The worker process's share of the pool's byte counter (:func:`_init_worker`).
_COUNTER = None


def _init_worker(counter) -> None:
    global _COUNTER
    _COUNTER = counter


class WorkerProgress:
    """A task's progress callback in a worker process: adds the bytes read to the
    pool's shared counter, which the parent hands to its own callback while it waits."""

    def __call__(self, n: int) -> None:
        if _COUNTER is not None:
            with _COUNTER.get_lock():
                _COUNTER.value += int(n)


class _Processes:
    inline = False

    def __init__(self, pool, counter, workers: int):
        self.pool, self.counter, self.workers = pool, counter, workers
        self.progress, self.seen = None, 0

    def task_progress(self, progress):
        """:class:`WorkerProgress` for the tasks; ``progress`` is told the bytes they
        read while :meth:`map` waits for them."""
        self.progress = progress
        return None if progress is None else WorkerProgress()

    def map(self, fn, jobs):
        from concurrent.futures import wait
        futures = [self.pool.submit(fn, job) for job in jobs]
        pending = futures
        while pending:
            _, pending = wait(pending, timeout=0.25)
            if self.progress is not None and self.counter.value > self.seen:
                value = self.counter.value
                self.progress(value - self.seen)
                self.seen = value
        return [f.result() for f in futures]


class _Dask:
    inline = False

    def __init__(self, client):
        self.client = client
        self.workers = max(1, sum(client.nthreads().values()))

    def task_progress(self, progress):
        """No progress from a cluster's workers."""
        return None

    def map(self, fn, jobs):
        futures = [self.client.submit(fn, job, pure=False) for job in jobs]
        return self.client.gather(futures)


class _Threads:
    """Tasks on a pool of threads of this process; their spill may stay in memory."""
    inline = True

    def __init__(self, pool, workers: int):
        self.pool, self.workers = pool, workers
        self.lock = threading.Lock()

    def task_progress(self, progress):
        """``progress`` called under a lock (the tasks run at once)."""
        if progress is None:
            return None

        def locked(n):
            with self.lock:
                progress(n)
        return locked

    def map(self, fn, jobs):
        return list(self.pool.map(fn, jobs))


def inline_runner():
    """Every task in this process, one after the other."""
    return _Inline()


@contextlib.contextmanager
def runner(jobs: int | None = None, scheduler: str | None = None, threads: bool = False,
           warm=None):
    """A runner for ``jobs`` worker processes (``None``: :func:`default_jobs`; 1: this
    process), or ``jobs`` threads of this process when ``threads``, or for the Dask
    scheduler at ``scheduler`` (``"local"``: a ``LocalCluster`` of ``jobs``
    single-threaded worker processes started here). ``warm``: called once before threads
    start or workers fork (the analysis passes
    :func:`host_sw.estimators.offline_stream.warm_loops`, so its compiled loops are
    loaded once and shared; this module does not import the analysis, which imports it)."""
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
    if threads:
        from concurrent.futures import ThreadPoolExecutor
        if warm is not None:
            warm()            # loaded once, before the threads need it
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="ldactl") as pool:
            yield _Threads(pool, jobs)
        return
    # imported here: a run of one job does without them
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    if warm is not None:
        warm()                # loaded once here, shared by the forked workers
    counter = multiprocessing.Value("q", 0)
    with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker,
                             initargs=(counter,)) as pool:
        yield _Processes(pool, counter, jobs)
