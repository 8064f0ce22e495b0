# SPDX-License-Identifier: BSD-2-Clause
"""Tests of host_sw.estimators.baselines: FineComb with ideal repair, Poisson probes."""

import math
from fractions import Fraction

import numpy as np
import pytest

from host_sw.estimators.baselines import finecomb_buckets, finecomb_ideal, poisson_probes


def trace(rng, n, lost=0.0, reordered=0.0):
    ids = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    send = rng.integers(0, 2**38, size=n, dtype=np.int64)
    delay = rng.integers(0, 5000, size=n, dtype=np.int64)
    r = rng.random(n)
    at_sender = r >= reordered
    at_receiver = ~((r >= reordered) & (r < reordered + lost))
    return ids, send, send + delay, at_sender, at_receiver, delay


def test_finecomb_matches_a_bucket_by_bucket_reference():
    rng = np.random.default_rng(1)
    ids, send, receive, at_s, at_r, delay = trace(rng, 3000, lost=0.02, reordered=0.03)
    m = 256
    est = finecomb_ideal(ids, send, receive, at_s, at_r, buckets=m)
    bucket = finecomb_buckets(ids, m).tolist()
    bad = {b for b, s, r in zip(bucket, at_s, at_r) if s and not r}
    keep = [i for i in range(ids.size) if at_s[i] and at_r[i] and bucket[i] not in bad]
    assert est.discarded_buckets == len(bad)
    assert est.samples == len(keep)
    assert est.mean_ticks == Fraction(int(delay[keep].sum()), len(keep))
    reordered_buckets = {b for b, s, r in zip(bucket, at_s, at_r) if r and not s}
    assert est.repaired_buckets == len(reordered_buckets - bad)
    assert est.to_dict()["buckets"] == m


def test_finecomb_ideal_repair_makes_reordering_harmless():
    rng = np.random.default_rng(2)
    ids, send, receive, at_s, at_r, delay = trace(rng, 2000, reordered=0.05)
    est = finecomb_ideal(ids, send, receive, at_s, at_r, buckets=128)
    both = at_s & at_r
    assert est.discarded_buckets == 0 and est.repaired_buckets > 0
    assert est.mean_ticks == Fraction(int(delay[both].sum()), int(both.sum()))
    assert est.std_ns is not None


def test_finecomb_lost_packets_spoil_buckets_as_theorem_1_says():
    # RDA paper Theorem 1: m (1 - exp(-n_l / m)) buckets hold a lost packet.
    rng = np.random.default_rng(3)
    m, n_lost = 10_000, 5_000
    ids = rng.integers(0, 2**64, size=n_lost, dtype=np.uint64)
    zeros = np.zeros(n_lost, np.int64)
    est = finecomb_ideal(ids, zeros, zeros, np.ones(n_lost, bool), np.zeros(n_lost, bool),
                         buckets=m)
    assert est.discarded_buckets == pytest.approx(m * (1 - math.exp(-n_lost / m)), rel=0.03)
    assert est.mean_ns is None and "lost" in est.notes[0]


def test_finecomb_checks_its_inputs():
    with pytest.raises(ValueError, match="at_receiver"):
        finecomb_ideal(np.zeros(3, np.uint64), [0, 0, 0], [0, 0, 0], [True] * 3, [True] * 2,
                       buckets=4)
    with pytest.raises(ValueError, match="buckets"):
        finecomb_buckets(np.zeros(3, np.uint64), 0)


def test_poisson_probes_constant_delay_no_loss():
    send = np.arange(0, 1_000_000_000, 1000, dtype=np.float64)  # 1 s of traffic
    delays = np.full(send.size, 200.0)
    est = poisson_probes(send, delays, np.zeros(send.size, bool), rate_hz=1000, seed=4)
    assert abs(est.probes_sent - 1000) < 5 * math.sqrt(1000)
    assert est.probes_received == est.probes_sent == est.samples
    assert est.mean_ns == 200.0 and est.std_ns == 0.0
    assert np.all(np.diff(est.send_times_ns) > 0)
    assert est.send_times_ns[0] >= 0 and est.send_times_ns[-1] < send[-1]
    again = poisson_probes(send, delays, np.zeros(send.size, bool), rate_hz=1000, seed=4)
    assert np.array_equal(again.delays_ns, est.delays_ns)


def test_poisson_probes_see_the_traffic_delays_and_loss_episodes():
    rng = np.random.default_rng(5)
    n = 200_000
    send = np.arange(n, dtype=np.float64) * 5000  # 1 s
    delays = rng.weibull(0.6, size=n) * 150
    lost = np.zeros(n, bool)
    lost[n // 2:] = True  # the second half of the interval is one loss episode
    est = poisson_probes(send, delays, lost, rate_hz=10_000, seed=6)
    assert est.probes_received == pytest.approx(est.probes_sent / 2, rel=0.1)
    assert est.mean_ns == pytest.approx(delays[: n // 2].mean(), rel=0.1)
    assert est.std_ns == pytest.approx(delays[: n // 2].std(), rel=0.25)
    none = poisson_probes(send, delays, np.ones(n, bool), rate_hz=100, seed=1)
    assert none.probes_received == 0 and none.mean_ns is None and none.std_ns is None


def test_poisson_probes_check_their_inputs():
    with pytest.raises(ValueError, match="rate_hz"):
        poisson_probes([0.0, 1.0], [1.0, 1.0], [False, False], rate_hz=0)
    with pytest.raises(ValueError, match="no packets"):
        poisson_probes([], [], [], rate_hz=10)
    with pytest.raises(ValueError, match="ends"):
        poisson_probes([0.0, 1.0], [1.0, 1.0], [False, False], rate_hz=1, start_ns=5,
                       end_ns=1)
