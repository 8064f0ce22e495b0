# SPDX-License-Identifier: BSD-2-Clause
"""LDS per-flow estimators (Fig. 6, §4.1–4.3): exact delays without loss or collisions,
only clean cells under loss (against a per-packet reference), sampling-rate inversion
in a worked example, count-min sizes and losses, flow weights and counter wrap-around."""

import socket

import dpkt
import numpy as np
import pytest

from host_sw.model.channel import Scenario
from host_sw.contracts.config_base import ConfigMismatch
from host_sw.contracts.config import LdaConfig, LdsConfig
from host_sw.estimators.lds import estimate_flows, flow_cells, flow_key_window
from host_sw.model.golden_lda_rda_lds import flow_row_hashes
from host_sw.model.golden_lda_rda_lds import bucket_indices
from host_sw.contracts.synopsis import Synopsis
from host_sw.contracts.hash_fields import range_reduce32


def _flows_with_packets(pf):
    return np.flatnonzero(pf["packets"] > 0)


def _collision_free_rows(cfg, table, active):
    """bool (R, F): row r of flow f shares none of its k cells with another active flow."""
    cells = flow_cells(cfg, table)                       # (R, F, k)
    free = np.zeros(table.shape, dtype=bool)
    for r in range(cfg.rows):
        owners = np.zeros(cfg.cells, dtype=np.int64)
        for f in active:
            owners[np.unique(cells[r, f])] += 1
        for f in active:
            free[r, f] = (owners[cells[r, f]] == 1).all()
    return free


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("k, alpha", [(1, 0.1), (4, 1e9)])
def test_exact_per_flow_delays_without_loss_or_collisions(fast, k, alpha):
    # With k > 1 the flow's packets spread over k cells per row and α keeps only the
    # cells near the smallest, i.e. a subset of its packets; an unbounded α keeps all.
    sim = Scenario(packets=20_000, flows=40, delay="weibull:shape=0.6,mean=200",
                   fast=fast, seed=21).run()
    iv = sim.intervals[0]
    cfg = LdsConfig(rows=4, cells=1 << 18, vlda_cells=k)
    s, r = iv.synopses(cfg)
    table = sim.trace.flow_hashes(cfg)
    pf = iv.truth.per_flow(sim.trace.flow_ids, sim.trace.num_flows)
    active = _flows_with_packets(pf)
    assert _collision_free_rows(cfg, table, active)[:, active].all()  # precondition
    est = estimate_flows(s, r, table, alpha=alpha)
    assert np.array_equal(est.delay_ns[active], pf["mean"][active])   # bit-exact
    assert np.isnan(np.delete(est.delay_ns, active)).all()
    assert np.array_equal(est.size[active], pf["packets"][active].astype(float))
    assert (est.loss == 0).all()
    assert (est.packets_used[active] == 4 * pf["packets"][active]).all()  # every row used


def test_alpha_zero_is_exact_for_every_flow_with_a_collision_free_row():
    sim = Scenario(packets=40_000, flows=3000, delay="exponential:mean=1us", seed=2).run()
    iv = sim.intervals[0]
    cfg = LdsConfig(rows=4, cells=2048)
    s, r = iv.synopses(cfg)
    table = sim.trace.flow_hashes(cfg)
    pf = iv.truth.per_flow(sim.trace.flow_ids, sim.trace.num_flows)
    active = _flows_with_packets(pf)
    free = _collision_free_rows(cfg, table, active).any(axis=0)
    clean, dirty = active[free[active]], active[~free[active]]
    assert len(clean) > 300 and len(dirty) > 50
    est = estimate_flows(s, r, table, alpha=0.0)
    assert np.array_equal(est.delay_ns[clean], pf["mean"][clean])
    assert np.array_equal(est.size[clean], pf["packets"][clean].astype(float))
    # count-min never underestimates without sampling
    assert (est.size[active] >= pf["packets"][active]).all()
    assert not np.array_equal(est.delay_ns[dirty], pf["mean"][dirty])


def _reference(cfg, iv, table, alpha):
    """Fig. 6 computed from the per-packet truth: a cell is usable iff the same packets
    reached it at both points (marker mode: no packet of the cell was lost)."""
    sh, rh = iv.sender.hashes(cfg), iv.receiver.hashes(cfg)
    s_row, s_col, s_who = bucket_indices(cfg, sh)
    r_row, r_col, r_who = bucket_indices(cfg, rh)
    send = dict(zip(iv.sender.packet_ids.tolist(), iv.sender.timestamps.tolist()))
    recv = dict(zip(iv.receiver.packet_ids.tolist(), iv.receiver.timestamps.tolist()))
    cell_s, cell_r = {}, {}
    for rr, cc, w in zip(s_row, s_col, iv.sender.packet_ids[s_who]):
        cell_s.setdefault((int(rr), int(cc)), set()).add(int(w))
    for rr, cc, w in zip(r_row, r_col, iv.receiver.packet_ids[r_who]):
        cell_r.setdefault((int(rr), int(cc)), set()).add(int(w))
    cells = flow_cells(cfg, table)
    delays, used = [], []
    for f in range(table.shape[1]):
        cand = []
        for rr in range(cfg.rows):
            for cc in cells[rr, f]:
                a = cell_s.get((rr, int(cc)), set())
                if a and a == cell_r.get((rr, int(cc)), set()):
                    cand.append((len(a) * 2 ** cfg.row_thresholds[rr],
                                 sum(recv[p] - send[p] for p in a), len(a)))
        if not cand:
            delays.append(np.nan)
            used.append(0)
            continue
        n_min = min(c[0] for c in cand)
        kept = [c for c in cand if c[0] <= (1 + alpha) * n_min]
        delays.append(sum(c[1] for c in kept) / sum(c[2] for c in kept))
        used.append(len(kept))
    return np.array(delays), np.array(used)


@pytest.mark.parametrize("loss", ["uniform:rate=0.03", "episodes:rate=0.03,length=30"])
def test_under_loss_the_estimate_uses_only_clean_cells(loss):
    sim = Scenario(packets=12_000, flows=150, loss=loss, delay="exponential:mean=1us",
                   seed=13).run()
    iv = sim.intervals[0]
    cfg = LdsConfig(rows=4, cells=512, vlda_cells=3, row_thresholds=(0, 1, 2, 4))
    s, r = iv.synopses(cfg)
    table = sim.trace.flow_hashes(cfg)
    est = estimate_flows(s, r, table, alpha=0.1)
    ref, used = _reference(cfg, iv, table, 0.1)
    assert np.array_equal(np.isnan(est.delay_ns), np.isnan(ref))
    ok = ~np.isnan(ref)
    assert ok.sum() > 100
    np.testing.assert_allclose(est.delay_ns[ok], ref[ok], rtol=1e-12)
    assert np.array_equal(est.cells_used, used)
    # usable cells are never more than the flow's R·k cells; lossy flows lose some
    assert (est.usable_cells <= 12).all() and (est.usable_cells < 12).sum() > 10
    # count-min loss over the full-rate row: at least the flow's true loss (marker mode)
    pf = iv.truth.per_flow(sim.trace.flow_ids, sim.trace.num_flows)
    assert (est.loss >= pf["lost"]).all()
    assert (est.loss == pf["lost"]).mean() > 0.3


def _hand_config():
    return LdsConfig(rows=2, cells=8, vlda_cells=1, row_thresholds=(0, 3))


def _hand_synopses(cells):
    """Sender/receiver synopses from {(row, col): (n_s, n_r, ts_s, ts_r, dig_s, dig_r)}."""
    cfg = _hand_config()
    s, r = Synopsis.empty(cfg), Synopsis.empty(cfg)
    for (row, col), (ns, nr, ts_s, ts_r, ds, dr) in cells.items():
        s.count[row, col], r.count[row, col] = ns, nr
        s.ts_sum[row, col], r.ts_sum[row, col] = ts_s, ts_r
        s["digest"][row, col], r["digest"][row, col] = ds, dr
    return cfg, s, r


def _hash_for(col, cells=8):
    h = np.uint64(col << 29)  # range_reduce32(col << 29, 8) == col
    assert range_reduce32(h, cells) == col
    return h


def test_worked_example_counts_are_inverted_by_the_row_sampling_rate():
    # flow in cell 2 of row 0 (rate 1) and cell 5 of row 1 (rate 1/8)
    flow = np.array([_hash_for(2), _hash_for(5)], dtype=np.uint64)
    # row 0: 20 packets, mean delay 100; row 1: 3 sampled packets, mean delay 50
    cfg, s, r = _hand_synopses({(0, 2): (20, 20, 1000, 1000 + 20 * 100, 7, 7),
                                (1, 5): (3, 3, 500, 500 + 3 * 50, 9, 9)})
    est = estimate_flows(s, r, flow)
    # inverted counts 20 and 24: n_min = 20, 24 > 1.1·20 → only row 0 is used
    assert est.delay_ns.tolist() == [100.0] and est.cells_used.tolist() == [1]
    # without inversion the 3-packet cell would have won; with 2 sampled packets
    # (inverted 16) it does win, and 20 > 1.1·16 drops row 0
    cfg, s, r = _hand_synopses({(0, 2): (20, 20, 1000, 1000 + 20 * 100, 7, 7),
                                (1, 5): (2, 2, 500, 500 + 2 * 50, 9, 9)})
    assert estimate_flows(s, r, flow).delay_ns.tolist() == [50.0]
    # a wide α keeps both: (2000 + 100) / 22
    assert estimate_flows(s, r, flow, alpha=0.3).delay_ns[0] == pytest.approx(2100 / 22)
    # beyond the paper: cells with fewer than 3 packets may not define n_min, so the
    # 20-packet cell does (n_min = 20) and the sampled cell (16 ≤ 22) joins it
    est = estimate_flows(s, r, flow, min_cell_packets=3)
    assert est.delay_ns[0] == pytest.approx(2100 / 22) and est.cells_used[0] == 2
    # ... but when no cell has enough packets the plain minimum still applies
    assert estimate_flows(s, r, flow, min_cell_packets=50).delay_ns.tolist() == [50.0]
    # matching counts but different digests (reordering) disqualify a cell
    cfg, s, r = _hand_synopses({(0, 2): (20, 20, 1000, 1000 + 20 * 100, 7, 7),
                                (1, 5): (2, 2, 500, 500 + 2 * 50, 9, 8)})
    est = estimate_flows(s, r, flow)
    assert est.delay_ns.tolist() == [100.0] and est.usable_cells.tolist() == [1]
    # a count mismatch (loss) too; no usable cell at all gives NaN
    cfg, s, r = _hand_synopses({(0, 2): (20, 19, 1000, 900, 7, 3),
                                (1, 5): (2, 2, 500, 600, 9, 8)})
    est = estimate_flows(s, r, flow)
    assert np.isnan(est.delay_ns[0]) and est.cells_used[0] == 0
    assert est.size.tolist() == [20.0] and est.loss.tolist() == [1.0]
    # empty cells (n = 0 at both points) are not samples
    cfg, s, r = _hand_synopses({(0, 2): (0, 0, 0, 0, 0, 0), (1, 5): (2, 2, 500, 600, 9, 9)})
    assert estimate_flows(s, r, flow).delay_ns.tolist() == [50.0]


def test_negative_and_wrapped_differences():
    flow = np.array([_hash_for(1), _hash_for(1)], dtype=np.uint64)
    top = (1 << 40) - 10
    # receiver sums wrapped past 2**40; sender clock ahead (negative delay)
    cfg, s, r = _hand_synopses({(0, 1): (4, 4, top, (top + 4 * 30) % (1 << 40), 1, 1),
                                (1, 1): (4, 4, 4000, 4000 - 4 * 25, 2, 2)})
    assert estimate_flows(s, r, flow, alpha=0.0).delay_ns[0] == 30.0  # 4·8 > 4: row 0
    est = estimate_flows(s, r, flow, alpha=10.0)                        # both rows
    assert est.delay_ns[0] == (4 * 30 - 4 * 25) / 8


def test_timestamp_sums_wrapping_in_a_simulation():
    sim = Scenario(packets=5000, flows=5, delay="constant:value=321", seed=1).run()
    trace = sim.trace
    trace.timestamps += (1 << 40) - int(trace.timestamps[2500])  # wrap mid-trace
    sim = Scenario(packets=5000, flows=5, delay="constant:value=321", seed=1).run(trace=trace)
    iv = sim.intervals[0]
    cfg = LdsConfig(rows=2, cells=4096, row_thresholds=(0, 0))
    s, r = iv.synopses(cfg)
    est = estimate_flows(s, r, trace.flow_hashes(cfg))
    pf = iv.truth.per_flow(trace.flow_ids, trace.num_flows)
    active = _flows_with_packets(pf)
    assert (est.delay_ns[active] == 321.0).all()


def test_flow_weights_raise_a_flows_share_and_sizes_divide_them_out():
    sim = Scenario(packets=30_000, flows=2000, delay="exponential:mean=1us", seed=6).run()
    iv = sim.intervals[0]
    cfg = LdsConfig(rows=2, cells=256, row_thresholds=(0, 0))
    table = sim.trace.flow_hashes(cfg)
    pf = iv.truth.per_flow(sim.trace.flow_ids, sim.trace.num_flows)
    weights = np.ones(sim.trace.num_flows, dtype=np.int64)
    gold = _flows_with_packets(pf)[:20]
    weights[gold] = 2500
    plain = estimate_flows(*iv.synopses(cfg), table)
    s, r = iv.synopses(cfg, flow_weights=weights)
    heavy = estimate_flows(s, r, table, weights=weights)
    err_plain = np.abs(plain.delay_ns[gold] - pf["mean"][gold]) / pf["mean"][gold]
    err_heavy = np.abs(heavy.delay_ns[gold] - pf["mean"][gold]) / pf["mean"][gold]
    assert np.median(err_heavy) < np.median(err_plain) / 5
    # count-min sizes of heavy flows come back in packets (≥ true, close to it)
    assert (heavy.size[gold] >= pf["packets"][gold]).all()
    assert np.median(heavy.size[gold] / pf["packets"][gold]) < 1.05


def test_flow_hashes_and_cells_follow_the_golden_model():
    sim = Scenario(packets=3000, flows=30, ipv6_fraction=0.5, seed=3).run()
    trace, iv = sim.trace, sim.intervals[0]
    cfg = LdsConfig(rows=3, cells=1000, vlda_cells=5, row_thresholds=(0, 0, 2))
    table = flow_row_hashes(cfg, trace.flow_windows, trace.flow_classes)
    assert np.array_equal(table, trace.flow_hashes(cfg))
    h = iv.sender.hashes(cfg)
    assert np.array_equal(table[:, trace.flow_ids[iv.sender.indices]], h.flow)
    rows, cols, who = bucket_indices(cfg, h)
    cells = flow_cells(cfg, table)
    flows = trace.flow_ids[iv.sender.indices[who]]
    assert all(c in cells[r, f] for r, c, f in zip(rows, cols, flows))
    # one flow as an (R,) vector
    one = estimate_flows(*iv.synopses(cfg), table[:, 0])
    assert len(one) == 1


def test_bad_inputs():
    cfg = LdsConfig()
    s = Synopsis.empty(cfg)
    with pytest.raises(ValueError, match="flow hashes must be"):
        estimate_flows(s, s, np.zeros((3, 5), np.uint64))
    with pytest.raises(ValueError, match="min_cell_packets must be a positive integer"):
        estimate_flows(s, s, np.zeros(4, np.uint64), min_cell_packets=0)
    with pytest.raises(ValueError, match="alpha must be non-negative"):
        estimate_flows(s, s, np.zeros(4, np.uint64), alpha=-1)
    with pytest.raises(ValueError, match="LDS synopses"):
        estimate_flows(Synopsis.empty(LdaConfig()), Synopsis.empty(LdaConfig()),
                       np.zeros(4, np.uint64))
    with pytest.raises(ConfigMismatch):
        estimate_flows(s, Synopsis.empty(cfg.replace(seed=5)), np.zeros(4, np.uint64))
    with pytest.raises(ValueError, match="flow windows"):
        flow_row_hashes(cfg, np.zeros((2, 32), np.uint8))
    with pytest.raises(ValueError, match="one weight per flow"):
        estimate_flows(s, s, np.zeros((4, 2), np.uint64), weights=[1, 2, 3])


def test_flow_key_window_gives_the_flow_hash_of_the_flows_packets():
    sim = Scenario(packets=400, flows=6, ipv6_fraction=0.5, seed=8).run()
    trace = sim.trace
    cfg = LdsConfig()
    table = trace.flow_hashes(cfg)
    for f in range(trace.num_flows):
        frame = trace.frames(np.flatnonzero(trace.flow_ids == f)[:1])[0]
        ip = dpkt.ethernet.Ethernet(frame).data
        if isinstance(ip, dpkt.ip.IP):
            src, dst, p = socket.inet_ntop(socket.AF_INET, ip.src), \
                socket.inet_ntop(socket.AF_INET, ip.dst), ip.p
            l4 = frame[34:38]
        else:
            src, dst, p = socket.inet_ntop(socket.AF_INET6, ip.src), \
                socket.inet_ntop(socket.AF_INET6, ip.dst), ip.nxt
            l4 = frame[54:58]
        window, cls = flow_key_window(src=src, dst=dst, proto=p,
                                      sport=int.from_bytes(l4[:2], "big"),
                                      dport=int.from_bytes(l4[2:], "big"))
        assert cls == trace.flow_classes[f]
        assert np.array_equal(flow_row_hashes(cfg, window[None], [cls])[:, 0], table[:, f])
    with pytest.raises(ValueError, match="different IP versions"):
        flow_key_window(src="10.0.0.1", dst="::1", proto="udp")
    with pytest.raises(ValueError, match="unknown protocol"):
        flow_key_window(src="10.0.0.1", dst="10.0.0.2", proto="quic")
