# SPDX-License-Identifier: BSD-2-Clause
"""RLI estimators (host_sw.estimators.rli.estimate): exact when the delay is linear between
references, collisions reported, errors within stated bounds on the queueing channel."""

import numpy as np
import pytest

from host_sw.contracts.config import RliConfig
from host_sw.estimators.rli.estimate import aggregate, estimate_flows, flow_key_text
from host_sw.estimators.simulate import run_scenario
from host_sw.model.channel import Scenario
from host_sw.model.golden_rli import receiver_synopsis, sender_synopsis
from host_sw.model.traffic import synthetic_trace


def _stream(n=4000, flows=20, every=25, seed=0):
    """Packets of ``flows`` flows whose delay is 5000 + 3·(arrival − 1000) ticks (linear in
    time), with a reference every ``every`` packets carrying its exact delay."""
    rng = np.random.default_rng(seed)
    arrival = 1000 + np.cumsum(rng.integers(1, 40, n))
    delay = 5000 + 3 * (arrival - 1000)
    is_ref = np.zeros(n, bool)
    is_ref[::every] = True
    is_ref[-1] = True
    flow = rng.integers(0, flows, n)
    hashes = np.vstack([rng.integers(0, 1 << 32, flows, dtype=np.uint64),
                        rng.integers(0, 1 << 32, flows, dtype=np.uint64)])
    return arrival, delay, is_ref, flow, hashes


def test_exact_when_delays_are_linear_between_references():
    arrival, delay, is_ref, flow, hashes = _stream()
    config = RliConfig(cells=1 << 16, tick_ns=2.0)
    syn, stats = receiver_synopsis(config, hashes[:, flow], arrival, is_ref, arrival - delay,
                                   ~is_ref)
    assert stats.counted == int((~is_ref).sum()) and not stats.flagged
    est = estimate_flows(syn, hashes)
    assert not est.collided.any()
    for f in range(hashes.shape[1]):
        d = delay[~is_ref & (flow == f)]
        assert est.packets[f] == len(d)
        assert est.mean_ns[f] == pytest.approx(d.mean() * 2.0, rel=1e-12)
        assert est.std_ns[f] == pytest.approx(d.std() * 2.0, rel=1e-6)
    mean, std, n = aggregate(syn)
    d = delay[~is_ref]
    assert (mean, n) == (pytest.approx(d.mean() * 2.0, rel=1e-12), len(d))


def test_a_shared_cell_is_reported_as_a_collision():
    arrival, delay, is_ref, flow, hashes = _stream(flows=3)
    hashes[0, 1] = hashes[0, 0]                     # flows 0 and 1 share a cell
    config = RliConfig(cells=64)
    syn, _ = receiver_synopsis(config, hashes[:, flow], arrival, is_ref, arrival - delay,
                               ~is_ref)
    snd = sender_synopsis(config, hashes[:, flow], ~is_ref)
    est = estimate_flows(syn, hashes, sender=snd)
    assert est.collided.tolist() == [True, True, False]
    assert np.isnan(est.mean_ns[:2]).all() and np.isfinite(est.mean_ns[2])
    assert est.lost.tolist() == [0, 0, 0]


def test_flow_keys_are_named():
    trace = synthetic_trace(packets=50, flows=3, seed=1, ipv6_fraction=0.5)
    names = {flow_key_text(trace.flow_windows[f], trace.flow_classes[f], f)
             for f in range(3)}
    assert all(n.split()[0] in ("tcp", "udp") and " > " in n for n in names)
    assert flow_key_text(None, 0, 7) == "flow#7"


@pytest.mark.parametrize("utilisation, bound, mean_bound", [(0.88, 0.08, 0.1),
                                                              (0.22, 0.6, 0.6)])
def test_per_flow_error_on_the_queue_is_within_bounds(utilisation, bound, mean_bound):
    """Median per-flow relative error of the mean over flows of ≥ 100 packets, 1 reference
    per 100 packets, 60 k packets through RED (measured 0.034 and 0.44 with this seed;
    bounds from docs/ACCURACY.md's full runs). At low utilisation the references'
    60-byte transmission is shorter than the IMIX packets' (358 bytes on average), a large
    part of a delay of a few transmission times: RLI underestimates."""
    sc = Scenario(packets=60_000, flows=300, delay="constant:value=0", fast=True,
                  queue=f"red:utilisation={utilisation}", seed=2)
    rec = next(run_scenario(sc, RliConfig(cells=1 << 16, ref_packets=100)))
    assert rec.details["flows_100plus"] >= 50
    assert rec.details["flow_median_rel_error"] < bound
    assert rec.details["references"] == 600 and rec.details["buffer_overflowed"] == 0
    assert rec.estimate["mean"] == pytest.approx(rec.true["mean"], rel=mean_bound)
    if utilisation < 0.5:
        assert rec.estimate["mean"] < rec.true["mean"]
    assert rec.estimate["lost"] == rec.true["lost"] == 0
