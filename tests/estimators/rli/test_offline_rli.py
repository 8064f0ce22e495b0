# SPDX-License-Identifier: BSD-2-Clause
"""RLI from two captures (``ldactl estimate --synopsis rli S.pcap R.pcap``): traffic
simulated on the queueing channel with its true per-packet delays, written as a sender's
and a receiver's capture. With the sender's reference frames (type 3) in the captures,
and without them (the configured rule designates sender packets), the receiver's cells
equal the golden model's word for word for the same references, and the per-flow means
sit within stated bounds of the truth; tampered references are not used and counted."""

import dataclasses

import numpy as np
import pytest

from host_sw.contracts.config import RliConfig
from host_sw.contracts.frames.reference_frame import build_reference
from host_sw.estimators.offline import capture_records
from host_sw.estimators.rli.offline import stream_rli_pair
from host_sw.estimators.rli.estimate import simulated_synopses
from host_sw.model.channel import Scenario
from host_sw.model.pcap import write_pcap
from host_sw.model.golden_rli import receiver_synopsis, reference_positions, sender_synopsis
from host_sw.model.golden_rli import with_references

CONFIG = RliConfig(cells=1024, ref_packets=50)
CHUNK = 1 << 16          # small chunks: the streamed path crosses many chunk boundaries
MAC_S, MAC_D = "02:00:00:00:00:01", "02:00:00:00:00:02"
#: Captures carry Unix-epoch ns (about 2**60): any float step would round them.
EPOCH = 1_764_000_000 * 10**9


def scenario(seed=3):
    return Scenario(packets=12_000, flows=40, queue="red:utilisation=0.88",
                    delay="constant:value=0", loss=0.0, rate_pps=2e6, seed=seed)


def _frames(trace, rows, is_ref, ref_seq, key=None, tamper=(), cut=()):
    """Frames of ``rows``: data frames from the trace, reference rows as reference
    frames (number ``ref_seq[row]``, send tick = the row's timestamp)."""
    out = []
    data = trace.frames(rows)
    for k, i in enumerate(rows.tolist()):
        if is_ref[i]:
            f = bytearray(build_reference(CONFIG, seq=int(ref_seq[i]),
                                          timestamp=int(trace.timestamps[i]),
                                          src_mac=MAC_S, dst_mac=MAC_D, key=key))
            if int(ref_seq[i]) in tamper:
                f[40] ^= 1           # a byte under the tag changed on the way
            if int(ref_seq[i]) in cut:
                f = f[:50]           # captured without its tag
            out.append(bytes(f))
        else:
            out.append(data[k])
    return out


@pytest.fixture(scope="module")
def with_frames(tmp_path_factory):
    """Captures holding the sender's reference frames, and the golden model's cells."""
    sc = scenario()
    trace, is_ref = with_references(sc.trace(), CONFIG)
    iv = sc.run(trace=trace).intervals[0]
    seq = np.cumsum(is_ref) - 1
    d = tmp_path_factory.mktemp("rli")
    r_rows = iv.receiver.indices
    assert (np.diff(iv.receiver.timestamps) >= 0).all()
    write_pcap(d / "s.pcap", _frames(trace, np.arange(len(trace)), is_ref, seq),
               trace.timestamps + EPOCH)
    write_pcap(d / "r.pcap", _frames(trace, r_rows, is_ref, seq),
               iv.receiver.timestamps + EPOCH)
    write_pcap(d / "r_bad.pcap", _frames(trace, r_rows, is_ref, seq, tamper={3, 7},
                                         cut={11}), iv.receiver.timestamps + EPOCH)
    return d, trace, is_ref, iv


def test_reference_frames_give_the_golden_counters(with_frames):
    d, trace, is_ref, iv = with_frames
    pair = stream_rli_pair(d / "s.pcap", d / "r.pcap", CONFIG, chunk_bytes=CHUNK)
    sender, receiver, stats = simulated_synopses(CONFIG, iv)
    got, got_stats = pair.receiver[0]
    assert got_stats == stats and stats.references == int(is_ref.sum()) > 200
    assert got.words() == receiver.words()
    assert pair.sender[0].words() == sender.words()
    assert pair.refs.source == "frames" and pair.refs.used == stats.references
    assert pair.refs.sender_rejected == pair.refs.receiver_rejected == 0


def test_per_flow_means_within_bounds_of_the_truth(with_frames):
    d, trace, is_ref, iv = with_frames
    (rec,) = capture_records(str(d / "s.pcap"), str(d / "r.pcap"), CONFIG,
                             chunk_bytes=CHUNK)
    assert rec.valid and rec.true["lost"] == 0
    t = rec.details["rli_flows"]
    big = (t["packets"] >= 100) & ~t["collided"]
    rel = np.abs(t["mean"][big] - t["true_mean"][big]) / t["true_mean"][big]
    # the RED queue at 88 %, one reference in 50 packets, 12 000 packets (mean delay
    # 3.5 µs): measured median 5.2 %, largest 10.9 % over 31 flows of >= 100 packets
    assert big.sum() >= 25
    assert np.median(rel) < 0.10 and rel.max() < 0.25
    # the truth is the captures' own: the aggregate equals the simulation's exact truth
    assert rec.true["mean"] == pytest.approx(iv.truth.mean, rel=1e-12)
    assert rec.estimate["mean"] == pytest.approx(rec.true["mean"], rel=0.10)   # 6.1 %


def test_tampered_and_cut_references_are_not_used_and_counted(with_frames):
    d, trace, is_ref, iv = with_frames
    pair = stream_rli_pair(d / "s.pcap", d / "r_bad.pcap", CONFIG, chunk_bytes=CHUNK)
    assert pair.refs.receiver_rejected == 3
    assert pair.refs.used == int(is_ref.sum()) - 3
    # the golden model with those three references taken out gives the same counters
    r_obs = iv.receiver
    seq = np.cumsum(is_ref) - 1
    ref_r = is_ref[r_obs.indices] & ~np.isin(seq[r_obs.indices], [3, 7, 11])
    h = r_obs.hashes(CONFIG)
    want, _ = receiver_synopsis(CONFIG, h.flow, r_obs.ticks(CONFIG), ref_r,
                                trace.timestamps[r_obs.indices], h.counted)
    assert pair.receiver[0][0].words() == want.words()
    # a keyed reference checked without its key (or with another) is not used either
    key = bytes(range(16))
    (rec,) = capture_records(str(d / "s.pcap"), str(d / "r_bad.pcap"), CONFIG,
                             chunk_bytes=CHUNK, key=key)
    assert rec.details["references"] == 0
    assert any("failed their tag" in n for n in rec.notes)


def test_a_receiver_capture_started_late_gives_the_golden_counters_of_the_window(
        with_frames, tmp_path):
    """Issue 23, item 3: the receiver's capture starts 40 % into the sender's. The pair
    is read again keeping the window both saw: the sender's packets sent from the
    receiver's first packet on, the receiver's packets of those; the reference frames of
    the whole captures still interpolate. The cells equal the golden model's of exactly
    those packets, and the row's loss is the window's (none lost: a loss-free path)."""
    d, trace, is_ref, iv = with_frames
    r_obs = iv.receiver
    seq = np.cumsum(is_ref) - 1
    start = int(trace.timestamps[0] + 0.4 * (trace.timestamps[-1] - trace.timestamps[0]))
    late = r_obs.timestamps >= start
    rows = r_obs.indices[late]
    write_pcap(tmp_path / "r_late.pcap", _frames(trace, rows, is_ref, seq),
               r_obs.timestamps[late] + EPOCH)
    pair = stream_rli_pair(d / "s.pcap", tmp_path / "r_late.pcap", CONFIG,
                           chunk_bytes=CHUNK)
    lo, hi, margin = pair.window
    assert lo == int(r_obs.timestamps[late][0]) + EPOCH and hi == int(trace.timestamps[-1]) + EPOCH
    assert margin == int((r_obs.timestamps - trace.timestamps[r_obs.indices]).max())
    sent_at = trace.timestamps + EPOCH
    in_window = (sent_at >= lo) & (sent_at <= hi)
    h = r_obs.hashes(CONFIG)
    keep = in_window[r_obs.indices] & late
    want, stats = receiver_synopsis(CONFIG, h.flow[:, late], r_obs.ticks(CONFIG)[late],
                                    is_ref[rows], trace.timestamps[rows],
                                    (h.counted & keep)[late])
    got, got_stats = pair.receiver[0]
    assert got.words() == want.words() and got_stats == stats
    s_h = trace.hashes(CONFIG)
    assert pair.sender[0].words() == sender_synopsis(
        CONFIG, s_h.flow, s_h.counted & in_window).words()
    assert pair.left_out["sender"] == int((~in_window).sum()) > 4000
    assert pair.left_out["receiver"] == int((h.counted & late & ~keep).sum()) > 0
    (rec,) = capture_records(str(d / "s.pcap"), str(tmp_path / "r_late.pcap"), CONFIG,
                             chunk_bytes=CHUNK)
    assert rec.valid and rec.details["window"]["first_ns"] == lo
    assert rec.estimate["lost"] == rec.true["lost"] == 0
    assert rec.true["sent"] == int((s_h.counted & in_window).sum())


@pytest.fixture(scope="module")
def without_frames(tmp_path_factory):
    sc = scenario(seed=5)
    trace = sc.trace()
    iv = sc.run(trace=trace).intervals[0]
    d = tmp_path_factory.mktemp("rli_rule")
    write_pcap(d / "s.pcap", trace.frames(), trace.timestamps + EPOCH)
    write_pcap(d / "r.pcap", trace.frames(iv.receiver.indices), iv.receiver.timestamps + EPOCH)
    return d, trace, iv


@pytest.mark.parametrize("rule", [dict(ref_packets=50),
                                  dict(ref_packets=0, ref_period_ticks=20_000),
                                  # shorter than many gaps: packets designated twice
                                  dict(ref_packets=0, ref_period_ticks=300),
                                  dict(ref_packets=0, adapt_link_Bps=1.25e9,
                                       adapt_window_ticks=200_000)])
def test_configured_rule_designates_sender_packets(without_frames, rule):
    d, trace, iv = without_frames
    config = dataclasses.replace(CONFIG, **rule)
    pair = stream_rli_pair(d / "s.pcap", d / "r.pcap", config, chunk_bytes=CHUNK)
    assert pair.refs.source == "rule"
    # the golden model: each designated packet is a reference placed just before itself
    after, _ = reference_positions(config, trace.timestamps, trace.frame_lengths,
                                   trace.counted)
    des = np.unique(after)
    r_obs = iv.receiver
    at = np.flatnonzero(np.isin(r_obs.indices, des))
    h = r_obs.hashes(config)
    flow = np.insert(h.flow, at, 0, axis=1)
    arrival = np.insert(r_obs.ticks(config), at, r_obs.ticks(config)[at])
    is_ref = np.insert(np.zeros(len(r_obs.indices), bool), at, True)
    send = np.insert(np.zeros(len(r_obs.indices), np.int64), at,
                     trace.timestamps[r_obs.indices[at]])
    counted = np.insert(h.counted, at, False)
    want, stats = receiver_synopsis(config, flow, arrival, is_ref, send, counted)
    got, got_stats = pair.receiver[0]
    assert got_stats == stats and stats.references == len(des) > 20
    assert got.words() == want.words()
    s_h = trace.hashes(config)
    assert pair.sender[0].words() == sender_synopsis(config, s_h.flow, s_h.counted).words()


def test_captures_with_no_common_packets(with_frames, without_frames):
    d, *_ = with_frames
    d2, *_ = without_frames
    (rec,) = capture_records(str(d / "s.pcap"), str(d2 / "r.pcap"), CONFIG,
                             chunk_bytes=CHUNK)
    assert not rec.valid and rec.estimate is None and rec.problem == "unrelated_captures"
    assert "rli_flows" not in rec.details
