# SPDX-License-Identifier: BSD-2-Clause
"""Streamed offline analysis (paths) gives the records of the in-memory analysis
(Capture objects), also when the reader's blocks are small, the pairing is split into
several partitions and spilled to disk; LDS records carry every seen flow's estimate,
marked where no check backs it."""

import dataclasses
import math

import numpy as np
import pytest

from host_sw.contracts.config import LdaConfig, LdsConfig, RdaConfig
from host_sw.estimators import offline_stream
from host_sw.estimators.offline import capture_records
from host_sw.model.channel import Scenario
from host_sw.model.pcap import read_pcap, write_pcap


@pytest.fixture(scope="module")
def lossy(capture_pair, tmp_path_factory):
    sim = Scenario(packets=6000, flows=25, loss=0.02, delay="exponential:mean=2us",
                   multipath_fraction=0.05, multipath_extra="constant:value=20us",
                   seed=21).run()
    return sim, capture_pair(tmp_path_factory.mktemp("lossy"), sim)


def _comparable(rec):
    d = rec.to_json()
    return {k: d.get(k) for k in ("interval", "time", "valid", "estimate", "notes", "true",
                              "sender", "receiver", "problem")}


@pytest.fixture
def tiny_partitions(monkeypatch):
    """Several partitions, spilled to files after a few records."""
    monkeypatch.setattr(offline_stream, "_PART_PACKETS", 100)
    monkeypatch.setattr(offline_stream, "SPILL_MEMORY_BYTES", 4096)


@pytest.mark.parametrize("config,mode", [(LdaConfig(), "time"), (RdaConfig(), "time"),
                                         (LdaConfig(), "marker")],
                         ids=["lda", "rda", "lda-marker"])
def test_streamed_equals_in_memory(lossy, tiny_partitions, config, mode):
    _, (s, r) = lossy
    span = 6000 * 200
    kw = dict(mode=mode, interval_ns=span // 4 + 1)
    streamed = capture_records(s, r, config, chunk_bytes=1 << 16, **kw)
    in_memory = capture_records(read_pcap(s), read_pcap(r), config, **kw)
    assert len(streamed) == len(in_memory) >= 4
    for a, b in zip(streamed, in_memory):
        ca, cb = _comparable(a), _comparable(b)
        ta, tb = ca.pop("true"), cb.pop("true")
        assert ca == cb
        assert ta.keys() == tb.keys() and ta["lost"] == tb["lost"]
        assert ta["sent"] == tb["sent"] and ta["received"] == tb["received"]
        for k in ("mean", "std"):
            assert math.isclose(ta[k], tb[k], rel_tol=1e-9)
    assert sum(x.true["lost"] for x in streamed) > 0


def test_repeated_windows_match_in_order(tmp_path, tiny_partitions):
    """A window sent three times matches its receptions first to first."""
    sim = Scenario(packets=300, flows=5, delay="constant:value=1000", seed=2).run()
    tr = sim.trace
    frames = tr.frames()
    frames = frames[:100] + [frames[0]] * 3 + frames[100:]
    ts = np.r_[tr.timestamps[:100], tr.timestamps[99] + [10, 20, 30], tr.timestamps[100:] + 40]
    write_pcap(tmp_path / "s.pcap", frames, ts)
    write_pcap(tmp_path / "r.pcap", frames, ts + 1000)
    (rec,) = capture_records(tmp_path / "s.pcap", tmp_path / "r.pcap", LdaConfig())
    assert rec.valid and rec.true["lost"] == 0 and rec.true["mean"] == 1000.0
    assert rec.true["std"] == 0.0


def test_lds_records_carry_every_seen_flow(lossy):
    sim, (s, r) = lossy
    config = LdsConfig()
    (rec,) = capture_records(s, r, config)
    report = rec.details["flows"]
    assert len(report) == sim.trace.num_flows
    truth = sim.intervals[0].truth.per_flow(sim.trace.flow_ids, sim.trace.num_flows)
    assert sorted(report.true_packets.tolist()) == sorted(truth["packets"].tolist())
    assert report.true_lost.sum() == rec.true["lost"]
    for i in range(len(report)):
        row = report.row(i)
        if row.get("unbacked"):
            assert row["delay_ns"] is None and math.isnan(report.delay_ns[i])
        else:
            assert row["delay_ns"] is not None and row["samples"] >= 5


def test_lds_flow_delays_on_a_loss_free_pair(capture_pair, tmp_path):
    sim = Scenario(packets=8000, flows=20, delay="exponential:mean=2us", seed=8).run()
    s, r = capture_pair(tmp_path, sim)
    (rec,) = capture_records(s, r, LdsConfig())
    report = rec.details["flows"]
    backed = [report.row(i) for i in range(len(report)) if not report.reason[i]]
    assert len(backed) >= 15
    errors = [abs(b["delay_ns"] - b["true"]["mean"]) / b["true"]["mean"] for b in backed]
    assert np.median(errors) < 0.05
    assert all(b["lost"] == 0 and b["packets"] >= b["true"]["packets"] for b in backed)


def test_min_samples_marks_small_flows(lossy):
    _, (s, r) = lossy
    (rec,) = capture_records(s, r, LdsConfig(), min_flow_samples=10**9)
    report = rec.details["flows"]
    assert all(report.reason) and np.isnan(report.delay_ns).all()
    assert any("too few samples" in x for x in report.reason)
    assert dataclasses.asdict(rec)["estimate"] is not None


def test_undecoded_rda_reports_the_counted_loss(lossy):
    """A set difference too large for the buckets: the decoded count of lost packets (0)
    is no loss figure; the counters' difference is, and the notes say why no mean."""
    sim, (s, r) = lossy
    (rec,) = capture_records(s, r, RdaConfig(buckets_per_bank=16))
    e = rec.estimate
    assert e["decoded"] is False and e["exact"] is False
    assert e["lost"] == e["sent"] - e["received"] == rec.true["lost"] > 0


def test_lds_without_a_mean_says_why(capture_pair, tmp_path):
    sim = Scenario(packets=20000, flows=30, loss=0.05, delay="exponential:mean=2us",
                   seed=4).run()
    s, r = capture_pair(tmp_path, sim)
    (rec,) = capture_records(s, r, LdsConfig(rows=2, cells=16, vlda_cells=2, row_thresholds=(0, 0)))
    assert rec.estimate["mean"] is None
    assert any(n.startswith("no mean: no sample both points agree on") for n in rec.notes)


@pytest.mark.parametrize("path", ["sorted", "compiled", "collision"])
@pytest.mark.parametrize("rows", [1, 2, 4])
def test_unique_rows_equals_numpy_unique_of_the_void_keys(rows, path, monkeypatch):
    """The flow table's grouping (a 64-bit fold, checked exact) gives numpy's unique of
    the rows' bytes: distinct keys in numpy's order, first occurrences, the inverse —
    by numpy's sort of the folds (few packets), by the compiled grouping (more than
    :data:`COMPILED_MIN_ROWS`, 20,000 distinct rows: its table grows), and where two
    distinct rows share a fold (numpy's unique then)."""
    rng = np.random.default_rng(rows)
    distinct, packets = (50, 3000) if path == "sorted" else (20000, 60000)
    base = rng.integers(0, 1 << 32, size=(distinct, rows), dtype=np.uint64).astype(np.uint32)
    base[:10, 0] = 7                      # rows equal in their first word only
    got = np.ascontiguousarray(base[rng.integers(0, distinct, packets)])
    got[:2] = base[3:5]
    keys = got.view(np.dtype((np.void, 4 * rows))).ravel()
    want = np.unique(keys, return_index=True, return_inverse=True)
    fold = None
    if path == "collision":
        fold = offline_stream._fold(got)
        fold[(got == base[3]).all(axis=1)] = fold[(got == base[4]).all(axis=1)][0]
    if path == "compiled" and offline_stream.compiled(offline_stream._group_loop) is None:
        pytest.skip("no compiled loops (neither the C library nor numba)")
    have = offline_stream._unique_rows(got, keys, fold)
    assert len(have[0]) == len(want[0]) > 40
    for a, b in zip(have, want):
        assert np.array_equal(a, b.ravel())


@pytest.mark.parametrize("rows", [1, 3])
def test_flow_table_fused_probe_assigns_as_numpy(rows, monkeypatch):
    """The flow table's compiled fold-probe-check pass gives each packet the flow
    index, and adds the new flows in the order, that numpy's fold and sorted search
    give: chunk after chunk, flows whose rows agree in all but one word (a fold the
    table holds for another flow is refused by the exact check), uncounted packets
    -1, row hashes with high bits set (only the low 32 bits count)."""
    if offline_stream.compiled(offline_stream._fold_probe_loop) is None:
        pytest.skip("no compiled loops (neither the C library nor numba)")
    rng = np.random.default_rng(rows)
    base = rng.integers(0, 1 << 32, size=(rows, 300), dtype=np.uint64)
    base[:, 150:] = base[:, :150]
    base[-1, 150:] ^= 1                   # one word apart from flows 0..149
    chunks = []
    for n in (500, 2000, 5000, 5000):
        pick = rng.integers(0, 300 if len(chunks) else 100, n)
        flow = base[:, pick] | (rng.integers(0, 4, (rows, n), dtype=np.uint64) << 32)
        counted = rng.random(n) < 0.9
        chunks.append((flow, pick, counted))

    def run():
        table = offline_stream.FlowTable(rows, 4)
        got = [table.assign(f, np.tile(p[:, None], 4).astype(np.uint8),
                            np.zeros(len(p), np.int64), c) for f, p, c in chunks]
        return got, table

    fused, t1 = run()
    real = offline_stream.compiled
    monkeypatch.setattr(offline_stream, "compiled",
                        lambda fn: None if fn is offline_stream._fold_probe_loop
                        else real(fn))
    plain, t2 = run()
    for a, b, (_, _, c) in zip(fused, plain, chunks):
        assert np.array_equal(a, b)
        assert (a[~c] == -1).all() and (a[c] >= 0).all()
    assert len(t1) == len(t2) == 300 and t1.index == t2.index
    assert np.array_equal(t1.table(), t2.table())
    # kept as a block of rows per chunk (a worker's table is pickled to its parent:
    # an array per flow was slow to pickle); pickled without the lookup, equal
    assert len(t1.blocks["hashes"]) <= len(chunks) and len(t1.blocks["windows"]) <= 4
    import pickle
    back = pickle.loads(pickle.dumps(t1))
    assert "_lookup" in t1.__dict__ and "_lookup" not in back.__dict__
    assert back.index == t1.index and np.array_equal(back.table(), t1.table())
    assert np.array_equal(back.windows, t1.windows) and back.windows.shape == (300, 4)
    assert np.array_equal(back.classes, t1.classes) and back.classes.shape == (300,)


def test_fused_probe_folds_and_refuses_a_fold_of_other_rows():
    """The compiled pass's folds are :func:`_fold`'s of the low 32 bits; a packet whose
    fold the table holds for a flow with other rows gets -1 (the exact check), one with
    that flow's rows gets it."""
    loop = offline_stream.compiled(offline_stream._fold_probe_loop)
    if loop is None:
        pytest.skip("no compiled loops (neither the C library nor numba)")
    known = np.array([[5, 6], [7, 8]], np.uint32)              # flows 0 and 1
    folds = offline_stream._fold(known)
    keys, ids = np.zeros(16, np.uint64), np.full(16, -1, np.int64)
    offline_stream.compiled(offline_stream._insert_loop)(folds, keys, ids)
    flow = np.array([[5, 7, 9, 5 | (3 << 32)], [6, 8, 9, 6]], np.uint64)
    fold, out = np.empty(4, np.uint64), np.empty(4, np.int64)
    loop(flow, np.arange(4), keys, ids, known, fold, out)
    rows = (flow & 0xFFFFFFFF).T.astype(np.uint32)
    assert np.array_equal(fold, offline_stream._fold(np.ascontiguousarray(rows)))
    assert out.tolist() == [0, 1, -1, 0]
    known_other = np.array([[5, 6], [7, 99]], np.uint32)       # flow 1's rows changed
    loop(flow, np.arange(4), keys, ids, known_other, fold, out)
    assert out.tolist() == [0, -1, -1, 0]


@pytest.mark.parametrize("mode,window", [("time", False), ("marker", False),
                                         ("time", True)],
                         ids=["time", "marker", "trimmed"])
def test_opa_streamed_equals_in_memory(lossy, tmp_path, tiny_partitions, mode, window):
    """OPA from capture files (its records spilled by ranges of intervals and read back
    a range at a time, the pairing in several partitions) gives the rows of the
    in-memory analysis: words, estimates, per-packet recovery and its check against
    the truth, the truth's percentiles; a receiver capture that stopped early is
    trimmed the same way."""
    from host_sw.contracts.config import OpaConfig
    _, (s, r) = lossy
    if window:      # the receiver's capture stops 2 ms before the sender's
        cap = read_pcap(r)
        keep = cap.timestamps_ns <= cap.timestamps_ns.max() - 200_000
        write_pcap(tmp_path / "r.pcap", [f for f, k in zip(cap.frames, keep) if k],
                   cap.timestamps_ns[keep])
        r = tmp_path / "r.pcap"
    kw = dict(mode=mode, interval_ns=6000 * 200 // 5 + 1)
    config = OpaConfig()
    streamed = capture_records(s, r, config, chunk_bytes=1 << 16, **kw)
    in_memory = capture_records(read_pcap(s), read_pcap(r), config, **kw)
    assert len(streamed) == len(in_memory) >= 5
    assert sum(x.valid for x in streamed) >= 4
    assert any(x.details["reordered_found"] for x in streamed) or mode == "marker"
    assert (window and "window" in streamed[0].details) or not window
    for a, b in zip(streamed, in_memory):
        ta, tb = a.to_json().pop("true"), b.to_json().pop("true")
        da, db = a.to_json(), b.to_json()
        da.pop("true"), db.pop("true")
        assert da == db
        assert {k: ta[k] for k in ("sent", "received", "lost")} == \
            {k: tb[k] for k in ("sent", "received", "lost")}
        assert math.isclose(ta["mean"], tb["mean"], rel_tol=1e-12)
        assert math.isclose(ta["std"], tb["std"], rel_tol=1e-9)
        oa, ob = a.details["opa"], b.details["opa"]
        assert np.array_equal(oa.delays, ob.delays)
        assert np.array_equal(oa.recovered, ob.recovered)
        assert a.details["delays_exact"] == b.details["delays_exact"]
        for k in ("true_p50", "true_p99", "true_max"):
            assert a.details[k] == b.details[k]
    assert sum(int(x.details["opa"].recovered.sum()) for x in streamed) > 1000


@pytest.mark.parametrize("most", [2, 4], ids=["pairs", "thrice"])
def test_match_counts_each_sides_repeats_as_a_sort_of_that_side(most):
    """The pairing reads each capture's repeated keys from its one sort of both sides:
    equal to a sort of each side alone (keys repeated up to ``most`` times), and the
    pairs are those of numpy's stable argsort (the ``t``-th receiver copy of a key
    matches the ``t``-th sender copy)."""
    rng = np.random.default_rng(most)
    pool = rng.integers(0, 1 << 64, size=3000, dtype=np.uint64)
    s = pool[rng.integers(0, 3000, size=2500)]
    r = pool[rng.integers(0, 3000, size=2400)]
    if most == 2:     # no key more than twice in all: each side's keys unique but 20
        s, r = np.unique(s), np.unique(r)
        s, r = np.r_[s, s[:20]], r[~np.isin(r, s[:20])]
    counts = {}
    si, ri = offline_stream._match(s, r, counts)
    assert counts == {"dup_sender": offline_stream._duplicates(s),
                      "dup_receiver": offline_stream._duplicates(r)}
    assert counts["dup_sender"] > 0
    order = np.argsort(np.r_[s, r], kind="stable")
    want = []
    for key in np.unique(np.r_[s, r]):
        at = order[np.r_[s, r][order] == key]
        snd, rcv = at[at < len(s)], at[at >= len(s)] - len(s)
        want += list(zip(snd[:len(rcv)].tolist(), rcv[:len(snd)].tolist()))
    assert sorted(zip(si.tolist(), ri.tolist())) == sorted(want)


@pytest.mark.parametrize("collide", [False, True], ids=["distinct", "shared-high-bits"])
def test_sort_keys_gives_the_stable_order_and_equal_neighbours(collide):
    """The packed sort's order is numpy's stable argsort and its ``same`` the equal
    sorted neighbours; keys differing only in their low bits (which the packing
    replaces) fall back to numpy's argsort (no ``same``)."""
    rng = np.random.default_rng(5)
    pool = rng.integers(0, 1 << 64, size=500, dtype=np.uint64)
    if collide:
        pool[:100] = (pool[0] & ~np.uint64(0xFFFF)) | np.arange(100, dtype=np.uint64)
    keys = pool[rng.integers(0, 500, size=2000)]
    order, stable, same = offline_stream._sort_keys(keys)
    k = keys[order]
    assert np.array_equal(k, np.sort(keys))
    if collide:
        assert not stable and same is None
    else:
        assert stable and np.array_equal(order, np.argsort(keys, kind="stable"))
        assert np.array_equal(same, k[1:] == k[:-1]) and same.sum() > 100


@pytest.mark.parametrize("parts", [1, 3, 4, 5, 40])
def test_spill_keeps_each_partitions_records_in_order(tmp_path, parts):
    """Records added in chunks come back per partition (key modulo the partitions) in
    the order they were added, from memory and from files (a pass per partition up to
    four partitions, a radix sort beyond)."""
    rng = np.random.default_rng(parts)
    dtype = np.dtype([("key", "<u8"), ("ts", "<i8"), ("iv", "<i8"), ("flow", "<i8")])
    spill = offline_stream._Spill(parts, {"sender": dtype}, folder=str(tmp_path),
                                  budget=20_000)
    keys = rng.integers(0, 1 << 64, size=5000, dtype=np.uint64)
    for a in range(0, 5000, 700):
        b = min(a + 700, 5000)
        spill.add("sender", {"key": keys[a:b], "ts": np.arange(a, b), "iv": 7,
                             "flow": np.arange(a, b) % 11})
    assert spill.written
    for p in range(parts):
        got = spill.load("sender", p)
        want = np.flatnonzero(keys % np.uint64(parts) == p)
        assert np.array_equal(got["ts"], want) and np.array_equal(got["key"], keys[want])
        assert (got["iv"] == 7).all() and np.array_equal(got["flow"], want % 11)


@pytest.mark.parametrize("parts", [2, 3, 9])
def test_compiled_spill_builds_the_records_of_numpy(tmp_path, parts, monkeypatch):
    """Chunks of 4096 records or more are put in partition order by compiled loops:
    the same records, partition by partition, as numpy's path (the receiver's records
    with a row of flow hashes, negative flows, a scalar field, an int32 column cast,
    the RDA cache's ID-range partition)."""
    if offline_stream.compiled(offline_stream._positions_loop) is None:
        pytest.skip("no compiled loops (neither the C library nor numba)")
    rng = np.random.default_rng(parts)
    dtype = np.dtype([("key", "<u8"), ("ts", "<i8"), ("iv", "<i8"), ("flow", "<i8"),
                      ("p", "<u8"), ("rows", "<u8", (3,))])
    chunks = []
    for n in (5000, 4096, 9000):
        flow = rng.integers(0, 1 << 64, (3, n), dtype=np.uint64)
        chunks.append({"key": rng.integers(0, 1 << 64, n, dtype=np.uint64),
                       "ts": rng.integers(-5, 1 << 40, n),
                       "iv": rng.integers(-3, 3, n).astype(np.int32), "flow": -1 if n == 4096
                       else rng.integers(-1, 50, n), "p": flow[0], "rows": flow.T})

    def spilled(folder, partition=None):
        spill = offline_stream._Spill(parts, {"receiver": dtype}, folder=str(folder),
                                      budget=200_000, partition=partition)
        for c in chunks:
            spill.add("receiver", c)
        return [spill.load("receiver", p) for p in range(parts)]

    for partition in (None, offline_stream._id_range_partition):
        if partition is not None:
            for c in chunks:
                c["id"] = c["key"]
        (tmp_path / "a").mkdir(exist_ok=True)
        (tmp_path / "b").mkdir(exist_ok=True)
        fast = spilled(tmp_path / "a", partition)
        with monkeypatch.context() as m:
            m.setattr(offline_stream, "COMPILED_MIN_ROWS", 1 << 40)
            slow = spilled(tmp_path / "b", partition)
        assert sum(len(x) for x in fast) == 18096
        for a, b in zip(fast, slow):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
        for f in (tmp_path / "a").iterdir():
            f.unlink()
        for f in (tmp_path / "b").iterdir():
            f.unlink()
