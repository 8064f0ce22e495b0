# SPDX-License-Identifier: BSD-2-Clause
"""host_sw.estimators.opa.export: the export captures' contents per interval, and the
intervals it refuses to give numbers for (the two points sampled differently, the
sender's records disagree with its words) with the reason; the receiver's own synopsis
chunks in its capture change nothing."""

import numpy as np
import pytest

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.frames.control_frame import build_marker, build_synopsis_frames
from host_sw.contracts.opa.records import build_record_frames
from host_sw.estimators.opa.recovery import recover_pair, summary
from host_sw.estimators.opa.export import opa_export_records, read_export
from host_sw.model.golden_opa import PacketRecords, opa_synopsis

CONFIG = OpaConfig(groups=64, rows=4)


@pytest.fixture(scope="module")
def records():
    rng = np.random.default_rng(4)
    p = rng.integers(0, 2 ** 64, 2000, dtype=np.uint64)
    send = np.cumsum(rng.integers(20, 200, 2000)).astype(np.int64)
    keep = np.flatnonzero(rng.random(2000) > 0.001)
    recv = send[keep] + rng.integers(1000, 1015, len(keep))    # no reordering
    order = np.argsort(recv, kind="stable")
    return PacketRecords(p, send), PacketRecords(p[keep][order], recv[order])


def _contents(s, r, *, s_groups=0, r_groups=0, s_cut=0, receiver_words=False,
              receiver_rice=False, **coding):
    words = opa_synopsis(CONFIG, s.packet)
    sf = [build_marker(CONFIG, seq=1, timestamp=0, src_mac=1, dst_mac=2)]
    sf += build_synopsis_frames(words, seq=1, src_mac=1, dst_mac=2)
    n = len(s.packet) - s_cut
    sf += build_record_frames(CONFIG, "sender", seq=1, packet=s.packet[:n],
                              timestamps=s.timestamps[:n], src_mac=1, dst_mac=2,
                              record_groups=s_groups, **coding)
    rf = build_record_frames(CONFIG, "receiver", seq=1, packet=r.packet,
                             timestamps=r.timestamps, src_mac=3, dst_mac=2,
                             record_groups=r_groups, rice=receiver_rice)
    if receiver_words:
        rf = build_synopsis_frames(opa_synopsis(CONFIG, r.packet), seq=1, src_mac=3,
                                   dst_mac=2) + rf
    return (read_export(sf, np.arange(len(sf)), CONFIG, "s"),
            read_export(rf, np.arange(len(rf)) + 10 ** 9, CONFIG, "r"))


def test_equals_the_golden_recovery(records):
    s, r = records
    (rec,) = opa_export_records(*_contents(s, r, receiver_words=True), CONFIG)
    golden = summary(recover_pair(opa_synopsis(CONFIG, s.packet), s, r), CONFIG.tick_ns)
    assert rec.valid and rec.interval == 1 and rec.time == pytest.approx(1.0)
    for key in ("p50", "p99", "max", "lost", "samples", "mean"):
        assert rec.estimate[key] == golden[key]


@pytest.mark.parametrize("shift", [0, 6])
def test_coded_sender_records(records, shift):
    """Rice-coded sender records: every recovered delay exact (lossless) or within the
    stated bound (lossy, with a note saying it)."""
    s, r = records
    (rec,) = opa_export_records(*_contents(s, r, rice=True, shift=shift), CONFIG)
    assert rec.valid and rec.estimate["lost"] == len(s.packet) - len(r.packet)
    res = rec.details["opa"]
    assert res.recovered.all()
    index = {int(p): i for i, p in enumerate(s.packet)}
    true = r.timestamps - s.timestamps[[index[int(p)] for p in r.packet]]
    err = res.delays - true
    if shift == 0:
        assert not err.any() and not any("lossy" in n for n in rec.notes)
    else:
        bound = 1 << (shift - 1)
        assert np.abs(err).max() <= bound and err.any()
        assert any(f"within ±{bound} ticks" in n for n in rec.notes)


def test_coded_receiver_records():
    """Rice-coded receiver records (the whole hash, arrival differences): the recovery
    of losses and reordered packets is the one of the truth's records, every delay
    exact; the receiver's frames are coded (flags bit 2) and under half the size."""
    rng = np.random.default_rng(9)
    n = 3000
    p = rng.integers(0, 2 ** 64, n, dtype=np.uint64)
    send = np.cumsum(rng.integers(20, 200, n)).astype(np.int64)
    keep = np.flatnonzero(rng.random(n) > 0.002)
    recv = send[keep] + 1000
    late = rng.choice(len(keep), 6, replace=False)
    recv[late] += 30000                   # ~270 packets late: a few in their group
    order = np.argsort(recv, kind="stable")
    s, r = PacketRecords(p, send), PacketRecords(p[keep][order], recv[order])
    coded = build_record_frames(CONFIG, "receiver", seq=1, packet=r.packet,
                                timestamps=r.timestamps, src_mac=3, dst_mac=2, rice=True)
    fixed = build_record_frames(CONFIG, "receiver", seq=1, packet=r.packet,
                                timestamps=r.timestamps, src_mac=3, dst_mac=2)
    assert all(f[16] & 0x06 == 0x06 for f in coded)
    assert sum(map(len, coded)) < 0.8 * sum(map(len, fixed))
    (rec,) = opa_export_records(*_contents(s, r, rice=True, receiver_rice=True), CONFIG)
    golden = recover_pair(opa_synopsis(CONFIG, s.packet), s, r)
    res = rec.details["opa"]
    assert rec.valid and res.reordered > 0 and res.lost == n - len(keep)
    assert np.array_equal(rec.details["opa_hashes"], r.packet)
    assert np.array_equal(res.recovered, golden.recovered) and res.recovered.all()
    index = {int(x): i for i, x in enumerate(p)}
    true = r.timestamps - send[[index[int(x)] for x in r.packet]]
    assert np.array_equal(res.delays, true)


def test_different_sampling_is_refused(records):
    (rec,) = opa_export_records(*_contents(*records, s_groups=16, r_groups=32), CONFIG)
    assert not rec.valid and rec.estimate is None
    assert "the sender recorded 16 groups, the receiver 32" in rec.notes[0]


def test_sender_records_must_match_its_words(records):
    (rec,) = opa_export_records(*_contents(*records, s_cut=1), CONFIG)
    assert not rec.valid and rec.estimate is None
    assert "do not match its OPA words" in rec.notes[0] and "interval 1" in rec.notes[0]
