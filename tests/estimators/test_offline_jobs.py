# SPDX-License-Identifier: BSD-2-Clause
"""The streamed capture analysis run as tasks (``ldactl estimate --jobs N``,
``--scheduler``): worker processes and a Dask cluster give byte for byte the records of
one process; RDA's caches are files mapped, not arrays growing with the capture."""

import contextlib
import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from host_sw.cli import main
from host_sw.contracts.config import LdaConfig, LdsConfig, OpaConfig, RdaConfig
from host_sw.estimators import offline_stream
from host_sw.estimators.offline import capture_cache, capture_records
from host_sw.estimators.offline_jobs import no_hugepage_advice, runner
from host_sw.estimators.offline_stream import stream_pair
from host_sw.model.channel import Scenario
from host_sw.model.pcap import capture_trace, read_pcap
from host_sw.model.pcap_stream import ByteRange, classic_ranges

SPAN = 6000 * 200


@pytest.fixture(scope="module")
def lossy(capture_pair, tmp_path_factory):
    sim = Scenario(packets=6000, flows=25, loss=0.02, delay="exponential:mean=2us",
                   multipath_fraction=0.05, multipath_extra="constant:value=20us",
                   seed=21).run()
    return sim, capture_pair(tmp_path_factory.mktemp("lossy"), sim)


@pytest.fixture
def tiny_partitions(monkeypatch):
    """Several partitions, spilled to files after a few records (the workers are
    forked, or threads of this process, after the patch)."""
    monkeypatch.setattr(offline_stream, "_PART_PACKETS", 100)
    monkeypatch.setattr(offline_stream, "SPILL_MEMORY_BYTES", 4096)


def _rows(records) -> list[str]:
    """Each record's JSON and, for LDS, every row of its per-flow report (in order)."""
    out = []
    for r in records:
        out.append(json.dumps(r.to_json(), sort_keys=True))
        report = (r.details or {}).get("flows")
        if report is not None:
            out.append(json.dumps([report.row(i) for i in range(len(report))],
                                  sort_keys=True, default=str))
    return out


CASES = [(LdaConfig(), "time", SPAN // 4 + 1), (RdaConfig(), "time", SPAN // 4 + 1),
         (LdsConfig(), "time", None), (LdaConfig(), "marker", SPAN // 4 + 1),
         (OpaConfig(), "time", SPAN // 4 + 1), (OpaConfig(), "marker", SPAN // 4 + 1)]


@pytest.fixture(scope="module")
def one_pass(lossy):
    """Each case's records read in one pass and one process (with the tiny partitions of
    :func:`tiny_partitions`), computed once for the tests that compare with them."""
    _, (s, r) = lossy
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(offline_stream, "_PART_PACKETS", 100)
        patch.setattr(offline_stream, "SPILL_MEMORY_BYTES", 4096)
        patch.setattr(offline_stream, "_range_count", lambda run: 1)
        return [capture_records(s, r, config, mode=mode, interval_ns=interval,
                                chunk_bytes=1 << 16) for config, mode, interval in CASES]


def test_jobs_give_the_records_of_one_process(lossy, tiny_partitions, one_pass):
    _, (s, r) = lossy
    for path in (s, r):       # each capture is read in two byte ranges, one a worker
        assert len(classic_ranges(path, 2, 1 << 16)) == 2
    with runner(jobs=2) as run:
        assert not run.inline and run.workers == 2
        for (config, mode, interval), one in zip(CASES, one_pass):
            kw = dict(mode=mode, interval_ns=interval, chunk_bytes=1 << 16)
            two = capture_records(s, r, config, run=run, **kw)
            assert len(one) >= (1 if interval is None else 4)
            assert _rows(two) == _rows(one)
            if config.kind == "lds":
                assert len(one[0].details["flows"]) == 25
            if config.kind == "opa":     # the recovery ran in the workers, per bucket
                for a, b in zip(one, two):
                    assert np.array_equal(a.details["opa"].delays, b.details["opa"].delays)
                    assert a.details["opa"].recovered.sum() > 0
    assert any(x.estimate.get("decoded") for x in capture_records(s, r, RdaConfig(),
                                                                  interval_ns=SPAN // 4 + 1))


def test_threads_give_the_records_of_one_process(lossy, tiny_partitions, one_pass):
    """``--jobs 2 --threads``: the tasks on two threads of this process (spills kept in
    memory up to the budget, then on files), byte for byte the records of one pass, and
    the progress callback hears of every byte read."""
    _, (s, r) = lossy
    with runner(jobs=2, threads=True) as run:
        assert run.inline and run.workers == 2
        for (config, mode, interval), one in zip(CASES, one_pass):
            kw = dict(mode=mode, interval_ns=interval, chunk_bytes=1 << 16)
            two = capture_records(s, r, config, run=run, **kw)
            assert _rows(two) == _rows(one)
            if config.kind == "opa":
                for a, b in zip(one, two):
                    assert np.array_equal(a.details["opa"].delays, b.details["opa"].delays)
        seen = []
        capture_records(s, r, LdaConfig(), run=run, progress=seen.append,
                        chunk_bytes=1 << 16)
    assert len(seen) > 2 and all(n >= 0 for n in seen)
    assert sum(seen) == s.stat().st_size + r.stat().st_size


def test_cli_threads_print_the_rows_of_one_job(lossy, tiny_partitions):
    _, (s, r) = lossy
    for kind in ("lda", "lds"):
        argv = ["estimate", str(s), str(r), "--synopsis", kind, "--json",
                "--interval-ns", str(SPAN // 4 + 1)]
        code1, one, _ = _cli(argv + ["--jobs", "1"])
        code2, two, _ = _cli(argv + ["--jobs", "2", "--threads"])
        assert code1 == code2 == 0
        assert len(one.splitlines()) >= 4 and two == one


def _cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_dask_cluster_gives_the_rows_of_one_process(lossy, tiny_partitions):
    """``--scheduler ADDRESS`` against a LocalCluster of 2 workers (threads of this
    process): the same output bytes as ``--jobs 1``, for LDA and RDA (decoding from the
    mapped caches; LDS's flow tables merged: the worker processes' test)."""
    distributed = pytest.importorskip("distributed")
    _, (s, r) = lossy
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        for kind, extra in (("lda", ["--interval-ns", str(SPAN // 4 + 1)]),
                            ("rda", ["--interval-ns", str(SPAN // 4 + 1)])):
            argv = ["estimate", str(s), str(r), "--synopsis", kind, "--json", *extra]
            code1, one, _ = _cli(argv + ["--jobs", "1"])
            code2, two, _ = _cli(argv + ["--scheduler", cluster.scheduler_address])
            assert code1 == code2 == 0
            assert len(one.splitlines()) >= 1 and two == one


def test_rda_caches_are_mapped_files_equal_to_the_in_memory_cache(lossy, tiny_partitions):
    _, (s, r) = lossy
    config = RdaConfig()
    pair = stream_pair(s, r, config)
    for side, path in (("sender", s), ("receiver", r)):
        cache = pair.caches[side]
        assert isinstance(cache.ids, np.memmap) and isinstance(cache.timestamps, np.memmap)
        want = capture_cache(capture_trace(read_pcap(path)), config)
        assert len(cache) == len(want) > 5000
        assert np.array_equal(cache.ids, want.ids)
        assert np.array_equal(cache.timestamps, want.timestamps)


def test_worker_processes_report_the_bytes_they_read(lossy):
    """With worker processes the progress callback still hears of every byte read
    (the tasks add to a shared counter the parent reports while it waits)."""
    _, (s, r) = lossy
    seen = []
    with runner(jobs=2) as run:
        capture_records(s, r, LdaConfig(), run=run, progress=seen.append,
                        chunk_bytes=1 << 16)
    assert all(n > 0 for n in seen)
    assert sum(seen) == s.stat().st_size + r.stat().st_size


@pytest.mark.parametrize("ranges", [3, 7])
def test_byte_ranges_give_the_records_of_one_pass(lossy, tiny_partitions, monkeypatch,
                                                  one_pass, ranges):
    """Each capture read in several byte ranges (in this process, spills in memory and
    on files): the records, LDS's per-flow rows (the flow tables of the ranges merged
    in the order one pass gives) and OPA's delays are those of one pass."""
    _, (s, r) = lossy
    kw = dict(chunk_bytes=1 << 16)
    want = dict(enumerate(one_pass))
    monkeypatch.setattr(offline_stream, "_range_count", lambda run: ranges)
    calls = []
    real = offline_stream._side_pass
    monkeypatch.setattr(offline_stream, "_side_pass",
                        lambda job: calls.append(job.byte_range) or real(job))
    for i, (config, mode, interval) in enumerate(CASES):
        got = capture_records(s, r, config, mode=mode, interval_ns=interval, **kw)
        assert _rows(got) == _rows(want[i])
        if config.kind == "opa":
            for a, b in zip(want[i], got):
                assert np.array_equal(a.details["opa"].delays, b.details["opa"].delays)
    assert all(c is not None for c in calls)
    assert len({c.start for c in calls}) >= 2 * ranges - 1


@pytest.mark.parametrize("shift", [4, 13, 20, -16])
def test_a_wrong_range_start_is_read_again_in_one_pass(lossy, tiny_partitions,
                                                       monkeypatch, one_pass, shift):
    """A split point's record guessed wrong does not chain with the range before it:
    that capture is read again in one task, and the records are those of one pass.
    Moved into a frame by 4 bytes the range reads false records to a wrong end, by 13
    false ones that fall back into the real chain (its end is right, its start is not
    the previous range's end), by 20 a record longer than any (an error, caught); 16
    bytes back, the previous frame's zero padding reads as an empty record (one record
    too many, were it not refused)."""
    _, (s, r) = lossy
    config, mode, interval = CASES[2]
    assert config == LdsConfig() and (mode, interval) == ("time", None)
    want = one_pass[2]
    real = offline_stream.classic_ranges

    def wrong(path, parts, chunk):
        got = real(path, parts, chunk)
        if str(path) == str(s):
            got[1] = ByteRange(got[1].start + shift, got[1].first_block, got[1].blocks)
        return got

    monkeypatch.setattr(offline_stream, "classic_ranges", wrong)
    monkeypatch.setattr(offline_stream, "_range_count", lambda run: 3)
    passes = []
    real_pass = offline_stream._side_pass
    monkeypatch.setattr(offline_stream, "_side_pass",
                        lambda job: passes.append(job) or real_pass(job))
    got = capture_records(s, r, config, chunk_bytes=1 << 16)
    assert _rows(got) == _rows(want)
    again = [j for j in passes if j.byte_range is None]
    assert [j.side for j in again] == ["sender"]     # the receiver's ranges chained


def test_hugepage_advice_is_stopped_unless_the_user_chose(monkeypatch):
    """``no_hugepage_advice`` turns numpy's ``madvise(MADV_HUGEPAGE)`` off (read back
    through numpy's switch, which returns the previous state), and leaves it alone when
    ``NUMPY_MADVISE_HUGEPAGE`` is set."""
    switch = np._core.multiarray._set_madvise_hugepage
    before = switch(True)
    try:
        monkeypatch.setenv("NUMPY_MADVISE_HUGEPAGE", "1")
        assert no_hugepage_advice() is False
        assert switch(True) is True                  # untouched
        monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE")
        assert no_hugepage_advice() is True
        assert switch(True) is False                 # it was off
    finally:
        switch(before)


_FAULTS = """
import resource, sys
import numpy as np
from host_sw.estimators.offline_jobs import no_hugepage_advice, reuse_freed_memory
no_hugepage_advice()
print(reuse_freed_memory() if sys.argv[1] == "reuse" else None)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
rng = np.random.default_rng(1)
for _ in range(30):                  # a chunk's arrays: 2-24 MiB, made, used, freed
    n = int(rng.integers(1 << 18, 3 << 20))
    a = np.ones(n, np.uint64)
    b = np.ones((n + 1) // 2, np.uint64)
    c = a[::2] + b
    del a, b, c
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str, **env) -> tuple[str, int]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    out = subprocess.run([sys.executable, "-c", _FAULTS, mode], capture_output=True,
                         text=True, check=True, env={**environ, **env}).stdout.split()
    return out[0], int(out[1])


def test_freed_chunk_arrays_are_reused_without_new_page_faults():
    """``reuse_freed_memory`` keeps freed arrays' memory in the heap (glibc's ``mallopt``):
    arrays made and freed chunk after chunk fault in far fewer pages than with glibc's
    defaults; a user's ``MALLOC_*`` setting is left alone."""
    _, plain = _faults("plain")
    done, reused = _faults("reuse")
    assert done == "True"
    assert reused < 0.6 * plain, (reused, plain)
    chosen, _ = _faults("reuse", MALLOC_TRIM_THRESHOLD_="131072")
    assert chosen == "False"
