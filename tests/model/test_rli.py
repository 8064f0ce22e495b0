# SPDX-License-Identifier: BSD-2-Clause
"""The RLI golden model (host_sw.model.golden_rli) against a per-packet reference of docs/SPEC.md
"RLI": reference schedule, interpolation buffer, counters, trace with references."""

from pathlib import Path

import numpy as np
import pytest

from bench.rli_test_vectors import BEGIN, END, markdown

from host_sw.contracts.config import RliConfig
from host_sw.contracts.hashing import FrameClass
from host_sw.model.golden_rli import (RliReceiverStats, adaptive_spacing, flow_cells,
                               interpolated_delays, receiver_synopsis, reference_positions,
                               sender_synopsis, with_references)
from host_sw.model.traffic import synthetic_trace


def reference_delays(config, arrival, is_ref, ref_send, is_data):
    """Per-packet reference of the interpolation (SPEC "RLI"): Python ints, one packet at
    a time, an explicit buffer."""
    f, cap = config.slope_frac_bits, config.buffer_packets
    out, buf, prev, overflow = {}, [], None, 0
    for i, a in enumerate(int(x) for x in arrival):
        if is_ref[i]:
            d2 = a - int(ref_send[i])
            for j, aj in buf:
                if prev is None:
                    out[j] = d2
                else:
                    a1, d1 = prev
                    s = ((d2 - d1) << f) // (a - a1) if a > a1 else 0
                    out[j] = d1 + ((s * (aj - a1)) >> f)
            buf, prev = [], (a, d2)
        elif is_data[i]:
            if len(buf) < cap:
                buf.append((i, a))
            else:
                overflow += 1
    for j, _ in buf:                 # interval end: flat at the last reference
        out[j] = prev[1]
    return out, overflow


def test_interpolation_equals_the_per_packet_reference():
    rng = np.random.default_rng(4)
    n = 3000
    arrival = np.cumsum(rng.integers(0, 50, n))
    is_ref = rng.random(n) < 0.01
    is_ref[5] = True
    is_data = ~is_ref & (rng.random(n) < 0.95)
    send = arrival - rng.integers(-200, 5000, n)          # delays, some negative
    config = RliConfig(buffer_packets=64, slope_frac_bits=12)
    delay, kept, stats = interpolated_delays(config, arrival, is_ref, send, is_data)
    want, overflow = reference_delays(config, arrival, is_ref, send, is_data)
    assert dict(zip(kept.tolist(), delay.tolist())) == want
    assert stats.overflowed == overflow > 0 and stats.flagged
    assert stats.references == int(is_ref.sum())


def test_no_reference_counts_nothing():
    config = RliConfig()
    delay, kept, stats = interpolated_delays(config, np.arange(5), np.zeros(5, bool),
                                             np.zeros(5), np.ones(5, bool))
    assert len(kept) == 0 and stats.unreferenced == 5


def test_no_reference_overflows_beyond_the_buffer():
    """With no reference the buffer still holds at most ``buffer_packets``: the rest
    overflow (SPEC "Interpolation", the gateware's rule), the buffered are unreferenced."""
    config = RliConfig(buffer_packets=1)
    flow = np.ones((2, 2), dtype=np.uint64)
    syn, stats = receiver_synopsis(config, flow, np.array([10, 20]), np.zeros(2, bool),
                                   np.zeros(2), np.ones(2, bool))
    assert stats == RliReceiverStats(references=0, counted=0, overflowed=1, unreferenced=1)
    assert stats.flagged and not syn.count.any()
    config = RliConfig(buffer_packets=3)
    _, _, stats = interpolated_delays(config, np.arange(7), np.zeros(7, bool),
                                      np.zeros(7), np.ones(7, bool))
    assert (stats.overflowed, stats.unreferenced) == (4, 3)


def test_counters_by_hand():
    """Two references (delays 100 and 200 ticks, 100 ticks apart) and two packets of one
    flow between them at +25 and +50: delays 125 and 150."""
    config = RliConfig(cells=8, digest_bits=8)
    arrival = np.array([1000, 1025, 1050, 1100])
    is_ref = np.array([True, False, False, True])
    send = np.array([900, 0, 0, 900])
    flow = np.array([[0x9000_0000] * 4, [0x1F3] * 4], dtype=np.uint64)  # cell 4, digest 0xF3
    syn, stats = receiver_synopsis(config, flow, arrival, is_ref, send, ~is_ref)
    cell, digest = flow_cells(config, flow[:, :1])
    assert cell.tolist() == [4] and digest.tolist() == [0xF3]
    assert syn.count[0].tolist() == [0, 0, 0, 0, 2, 0, 0, 0]
    assert int(syn["delay_sum"][0, 4]) == 275
    assert int(syn["delay_sq_sum"][0, 4]) == 125 ** 2 + 150 ** 2
    assert int(syn["digest_sum"][0, 4]) == (2 * 0xF3) & 0xFF
    snd = sender_synopsis(config, flow, ~is_ref)
    assert snd.count[0, 4] == 2 and snd["delay_sum"].sum() == 0


def test_negative_delays_wrap_in_their_fields():
    config = RliConfig(cells=1, delay_bits=16)
    syn, _ = receiver_synopsis(config, np.zeros((2, 2), np.uint64), np.array([10, 11]),
                               np.array([True, False]), np.array([15, 0]),
                               np.array([False, True]))
    assert int(syn["delay_sum"][0, 0]) == (1 << 16) - 5
    assert int(syn["delay_sq_sum"][0, 0]) == 25


def test_reference_schedules():
    send = np.arange(0, 1000, 10)                          # 100 packets, 10 ticks apart
    counted = np.ones(100, bool)
    counted[::7] = False
    after, ticks = reference_positions(RliConfig(ref_packets=10), send, np.full(100, 100),
                                       counted)
    assert after.tolist() == np.flatnonzero(counted)[9::10].tolist()
    assert ticks.tolist() == (send[after] + 5).tolist()     # the middle of the gap after
    after, ticks = reference_positions(RliConfig(ref_packets=0, ref_period_ticks=250), send,
                                       np.full(100, 100), counted)
    assert ticks.tolist() == [250, 500, 750] and after.tolist() == [25, 50, 75]


def test_adaptive_rule():
    config = RliConfig(ref_packets=0, adapt_link_Bps=1e9, adapt_window_ticks=1000)
    assert adaptive_spacing(config, [0.0, 0.2, 0.5, 0.8, 1.0]).tolist() == [
        10, 10, round(10 * 30 ** 0.5), 300, 300]
    # window 0: no measurement (N = 10); 100-byte packets every 10 ns = 10 GB/s offered on
    # a 1 GB/s link (u = 10): windows 1.. use N = 300
    send = np.arange(0, 5000, 10)
    after, _ = reference_positions(config, send, np.full(500, 100), np.ones(500, bool))
    assert after[after < 100].tolist() == list(range(9, 100, 10))
    assert len(after[after >= 100]) == 0                   # 100 packets per window < 300


@pytest.mark.parametrize("fast", [False, True])
def test_with_references_inserts_control_frames(fast):
    trace = synthetic_trace(packets=2000, flows=30, seed=3, fast=fast)
    config = RliConfig(ref_packets=50)
    out, is_ref = with_references(trace, config)
    assert is_ref.sum() == 40 and len(out) == 2040
    assert (out.classes[is_ref] == FrameClass.CONTROL).all()
    assert np.array_equal(out.timestamps[~is_ref], trace.timestamps)
    assert np.array_equal(out.flow_ids[~is_ref], trace.flow_ids)
    assert (np.diff(out.timestamps) >= 0).all() and out.num_flows == 31
    assert not out.counted[is_ref].any()
    # each reference follows every 50th data packet, stamped with its send time
    data_pos = np.flatnonzero(~is_ref)
    assert np.array_equal(np.flatnonzero(is_ref) - 1, data_pos[49::50])
    if not fast:
        assert np.array_equal(out.hashes(config).flow[:, ~is_ref], trace.hashes(config).flow)


def test_spec_vectors_are_current():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "SPEC.md").read_text("utf-8")
    block = BEGIN + doc.partition(BEGIN)[2].partition(END)[0] + END
    assert block == markdown()
