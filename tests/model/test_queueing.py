# SPDX-License-Identifier: BSD-2-Clause
"""The FIFO queue channel (host_sw.model.queueing): Lindley and drop-tail against hand-computed
cases, RED's long-run drop fraction, the vectorised path against the loop, and the channel
hook."""

import numpy as np
import pytest

from host_sw.model.channel import Channel, Scenario
from host_sw.model.queueing import QueueSpec, _queue_loop, lindley, offered_bytes_per_s, run_queue

RNG = np.random.default_rng


def test_defaults_are_the_rli_evaluations_red():
    q = QueueSpec()
    assert (q.aqm, q.capacity, q.min_th, q.max_th, q.w_q, q.max_p) == (
        "red", 10_000, 4_000, 9_000, 0.002, 0.02)
    assert QueueSpec.parse("droptail:utilisation=0.88,capacity=500") == QueueSpec(
        aqm="droptail", utilisation=0.88, capacity=500)
    assert QueueSpec.parse("red:drain=1e8").drain_Bps == 1e8


@pytest.mark.parametrize("spec", ["fifo:utilisation=0.5", "red:utilisation=0",
                                  "red:utilisation=0.5,drain=1e8", "red:min_th=9,max_th=3",
                                  "red:speed=1"])
def test_bad_specs_are_rejected(spec):
    with pytest.raises(ValueError):
        QueueSpec.parse(spec)


def test_lindley_by_hand():
    # 100-byte frames at 1e9 B/s: 100 ns each; arrivals 0, 0, 0, 0, 150
    dep = lindley(np.array([0.0, 0, 0, 0, 150]), np.full(5, 100.0))
    assert dep.tolist() == [100, 200, 300, 400, 500]


def test_droptail_by_hand():
    spec = QueueSpec(aqm="droptail", utilisation=None, drain_Bps=1e9, capacity=2)
    res = run_queue(spec, np.array([0, 0, 0, 0, 150]), np.full(5, 100), RNG(0))
    assert res.dropped.tolist() == [False, False, True, True, False]
    assert res.sojourn_ns[~res.dropped].tolist() == [100, 200, 150]
    assert res.looped and res.max_queue == 2


def test_no_drop_fast_path_equals_the_loop():
    rng = RNG(3)
    send = np.cumsum(rng.integers(1, 400, 20_000))
    sizes = rng.choice([60, 590, 1514], 20_000)
    spec = QueueSpec(aqm="droptail", utilisation=0.88)
    fast = run_queue(spec, send, sizes, RNG(0))
    assert not fast.looped and not fast.dropped.any()
    dep, dropped, peak = _queue_loop(spec, (send - send[0]).astype(float),
                                     sizes * (1e9 / fast.drain_Bps), None)
    assert not dropped.any() and peak == fast.max_queue
    assert np.array_equal(np.rint(dep - (send - send[0])).astype(np.int64), fast.sojourn_ns)


def test_utilisation_sets_the_drain_rate():
    send = np.arange(1000) * 1000          # 1 Mpps
    sizes = np.full(1000, 500)             # 500 MB/s offered
    assert offered_bytes_per_s(send, sizes) == pytest.approx(5e8)
    assert run_queue(QueueSpec(utilisation=0.5), send, sizes, RNG(0)).drain_Bps == \
        pytest.approx(1e9)


@pytest.mark.parametrize("aqm", ["red", "droptail"])
def test_overload_drops_the_excess(aqm):
    """Offered load 2 % above the drain rate: in the long run the queue drops 1 − 1/1.02 of
    the packets; RED does it with its average between the thresholds (small thresholds so
    the test stays cheap)."""
    n, u = 60_000, 1.02
    spec = QueueSpec(aqm=aqm, utilisation=u, capacity=200, min_th=40, max_th=90, w_q=0.02)
    res = run_queue(spec, np.arange(n) * 1000, np.full(n, 1000), RNG(5))
    late = res.dropped[n // 2:]
    assert late.mean() == pytest.approx(1 - 1 / u, rel=0.15)
    if aqm == "red":
        assert 40 <= res.max_queue < 200          # RED kept the buffer from filling
    else:
        assert res.max_queue == 200


def test_red_below_min_th_drops_nothing():
    rng = RNG(1)
    send = np.cumsum(rng.exponential(300, 50_000).astype(np.int64) + 1)
    res = run_queue(QueueSpec(utilisation=0.88), send, rng.choice([60, 590, 1514], 50_000),
                    RNG(0))
    assert not res.dropped.any() and res.max_queue < 4000 and not res.looped


def test_channel_adds_the_sojourn_and_the_drops():
    sc = Scenario(packets=5000, flows=50, rate_pps=1e6, delay="constant:value=100",
                  queue="droptail:utilisation=1.5,capacity=20", seed=2, fast=True)
    trace = sc.trace()
    tx = sc.channel.transmit(trace.timestamps, seed=9, frame_lengths=trace.frame_lengths)
    ok = ~tx.dropped
    assert tx.dropped.mean() == pytest.approx(1 - 1 / 1.5, abs=0.05)
    assert (tx.arrival_ns[ok] - tx.send_ts[ok] >= 100).all()
    with pytest.raises(ValueError, match="frame length"):
        Channel(queue="red:utilisation=0.5").transmit(trace.timestamps)
    iv = sc.run(0).intervals[0]
    assert iv.truth.lost > 0.25 * len(trace)      # the queue drops in scenario runs too
