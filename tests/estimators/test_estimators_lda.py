# SPDX-License-Identifier: BSD-2-Clause
"""Tests of host_sw.estimators.lda: the papers' worked examples, exactness properties,
wrap-around, configuration checks and the bank-tuning formulas."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host_sw.contracts.config_base import ConfigMismatch
from host_sw.contracts.config import LdaConfig, RdaConfig
from host_sw.estimators.lda import (estimate_lda, expected_samples, sampling_rate_for_loss,
                                    tuned_threshold, tuned_thresholds)
from host_sw.model.golden_lda_rda_lds import PacketHashes, update
from host_sw.contracts.synopsis import Synopsis
from host_sw.contracts.hash_fields import field_hash, lda_bank, lda_row


def synopsis(config, counts, ts_sums):
    """An LDA synopsis straight from per-row (count, timestamp sum) lists (one bank)."""
    return Synopsis(config, {
        "count": np.array(counts, dtype=np.uint64).reshape(config.shape),
        "ts_sum": np.array(ts_sums, dtype=np.uint64).reshape(config.shape)})


def by_rows(config, packets):
    """Sum ``(row, timestamp)`` pairs into a one-bank synopsis."""
    counts = [0] * config.rows
    sums = [0] * config.rows
    for row, ts in packets:
        counts[row] += 1
        sums[row] += ts
    return synopsis(config, counts, sums)


# ---------------------------------------------------------------------------------------
# Worked examples from the papers
# ---------------------------------------------------------------------------------------

def test_lda_paper_fig2_one_loss_gives_11_25_from_8_samples():
    config = LdaConfig(banks=1, rows=4, thresholds=(0,))
    sender = synopsis(config, [5, 10, 2, 1], [120, 234, 15, 6])
    receiver = synopsis(config, [5, 9, 2, 1], [180, 348, 37, 14])
    est = estimate_lda(sender, receiver)
    assert est.mean_ticks == Fraction(90, 8)
    assert est.mean_ns == 11.25
    assert est.samples == 8
    assert est.usable_rows == 3
    assert (est.sent, est.received, est.lost) == (18, 17, 1)
    assert est.banks[0].lost == 1 and est.banks[0].samples == 8
    # Collapsed pairs: (0,1) has the loss; (2,3) gives (8 - 22)^2 / 3.
    assert est.collapsed_pairs == 1 and est.collapsed_samples == 3
    assert est.second_moment_ticks2 == Fraction(196, 3)
    # The papers' F - D^2 = 65.33 - 126.56 < 0 would be clipped to 0. Centred by the
    # pair's count difference (S[3] - S[2] = -1): (-14 + 45/4)^2 / 3 = 121/48.
    assert not est.variance_clipped and est.variance_ns2 == 121 / 48
    assert est.std_ns == pytest.approx(math.sqrt(121 / 48))
    # One collapsed pair: no interval for the std, the mean's from the estimate.
    assert est.std_ci_low_ns is None and est.std_ci_high_ns is None
    assert est.ci_half_width_ns == pytest.approx(
        math.sqrt(121 / 48) * math.sqrt(2 * math.log(2 / 0.02) / 8))
    d = est.to_dict()
    assert d["mean_ticks"] == "45/4" and d["banks"][0]["samples"] == 8


def test_rda_paper_fig2_lda_is_fooled_by_a_lost_and_a_reordered_packet_161_vs_104():
    # RDA paper §III-C: P1..P6 sent, P5 lost, P9 (of the next interval) recorded by the
    # receiver in P5's bucket. Buckets: {P1,P2}, {P3}, {P4}, {P5 | P9}, {P6}.
    config = LdaConfig(banks=1, rows=8, thresholds=(0,))
    sent = {"P1": (0, 100), "P2": (0, 170), "P3": (1, 150), "P4": (2, 250),
            "P5": (3, 310), "P6": (4, 330)}
    received = {"P1": (0, 180), "P2": (0, 240), "P3": (1, 260), "P4": (2, 390),
                "P9": (3, 760), "P6": (4, 450)}
    sender = by_rows(config, sent.values())
    receiver = by_rows(config, received.values())
    assert sender.ts_sum[0, :5].tolist() == [270, 150, 250, 310, 330]
    assert receiver.ts_sum[0, :5].tolist() == [420, 260, 390, 760, 450]
    est = estimate_lda(sender, receiver)
    # (150 + 110 + 140 + 450 + 120) / 6 = 161.67, which the paper prints as 161.
    assert est.mean_ticks == Fraction(970, 6) and math.floor(est.mean_ticks) == 161
    assert est.samples == 6 and est.lost == 0
    common = sent.keys() & received.keys()
    truth = Fraction(sum(received[p][1] - sent[p][1] for p in common), len(common))
    assert truth == 104
    assert est.mean_ticks != truth


def test_std_from_collapsed_rows_by_hand():
    config = LdaConfig(banks=1, rows=4, thresholds=(0,))
    # One packet per row, delays 0, 40, 0, 20 (rows 0..3), no loss.
    send = [1000, 2000, 3000, 4000]
    delays = [0, 40, 0, 20]
    sender = synopsis(config, [1, 1, 1, 1], send)
    receiver = synopsis(config, [1, 1, 1, 1], [s + d for s, d in zip(send, delays)])
    est = estimate_lda(sender, receiver)
    assert est.mean_ticks == 15
    # F = ((40 - 0)^2 + (20 - 0)^2) / 4 = 500. Equal counts in each pair (dS~ = 0):
    # E[(w_a - w_b)^2] = 2 sigma^2, so the variance is F itself, 500 (the papers'
    # F - D^2 subtracts D^2 for an occupancy whose sum dS~^2 / S~ is 1 on average).
    assert est.second_moment_ticks2 == 500
    assert est.variance_ns2 == 500.0
    assert est.std_ns == pytest.approx(math.sqrt(500))
    assert not est.variance_clipped and est.collapsed_pairs == 2
    # The std's interval from the two pairs' terms 1600 and 400 (n = 2 each):
    # se = sqrt(((1600 - 1000)^2 + (400 - 1000)^2) * 2) / 4 = 300, on the log scale.
    spread = math.exp(2.3263478740408408 * 300 / 500)
    assert est.std_ci_low_ns == pytest.approx(math.sqrt(500 / spread))
    assert est.std_ci_high_ns == pytest.approx(math.sqrt(500 * spread))


def test_tick_ns_scales_results_to_ns():
    config = LdaConfig(banks=1, rows=4, thresholds=(0,), tick_ns=6.4)
    sender = synopsis(config, [1, 1, 1, 1], [0, 0, 0, 0])
    receiver = synopsis(config, [1, 1, 1, 1], [0, 40, 0, 20])
    est = estimate_lda(sender, receiver)
    assert est.mean_ticks == 15
    assert est.mean_ns == pytest.approx(15 * 6.4)
    assert est.std_ns == pytest.approx(math.sqrt(500) * 6.4)
    half = math.sqrt(500) * 6.4 * math.sqrt(2 * math.log(2 / 0.02) / 4)
    assert est.ci_half_width_ns == pytest.approx(half)


# ---------------------------------------------------------------------------------------
# Properties with the golden model
# ---------------------------------------------------------------------------------------

def run_lda(config, packet, send_ts, delay, received):
    hashes = PacketHashes(packet=packet)
    sender = update(config, hashes, send_ts)
    receiver = update(config, hashes.select(received), send_ts[received] + delay[received])
    return sender, receiver


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 3000),
       rows=st.sampled_from([2, 8, 64, 256]), banks=st.integers(1, 3))
def test_no_loss_mean_is_exact(seed, n, rows, banks):
    rng = np.random.default_rng(seed)
    config = LdaConfig(banks=banks, rows=rows, thresholds=tuple(range(0, 3 * banks, 3)))
    packet = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    send = rng.integers(0, 2**39, size=n, dtype=np.int64)
    delay = rng.integers(0, 2**20, size=n, dtype=np.int64)
    sender, receiver = run_lda(config, packet, send, delay, np.ones(n, bool))
    est = estimate_lda(sender, receiver)
    # Threshold 0 for bank 0: every packet is sampled by exactly one bank.
    assert est.samples == n and est.lost == 0 and est.usable_rows == config.buckets
    assert est.mean_ticks == Fraction(int(delay.sum()), n)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 3000),
       loss=st.floats(0.0, 0.5), rows=st.sampled_from([4, 32, 128]))
def test_with_loss_mean_is_exact_over_the_usable_rows(seed, n, loss, rows):
    rng = np.random.default_rng(seed)
    config = LdaConfig(banks=2, rows=rows, thresholds=(0, 2))
    packet = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    send = rng.integers(0, 2**39, size=n, dtype=np.int64)
    delay = rng.integers(0, 10**6, size=n, dtype=np.int64)
    received = rng.random(n) >= loss
    sender, receiver = run_lda(config, packet, send, delay, received)
    est = estimate_lda(sender, receiver)
    # Ground truth through the contract's field split.
    field = field_hash(packet, config.seed)
    cell = lda_bank(field, config.thresholds) * rows + lda_row(field, rows)
    bad_cells = set(cell[~received].tolist())
    good = np.array([c not in bad_cells for c in cell.tolist()], dtype=bool)
    assert est.lost == int((~received).sum())
    assert est.samples == int(good.sum())
    assert est.usable_rows == config.buckets - len(bad_cells)
    if good.any():
        assert est.mean_ticks == Fraction(int(delay[good].sum()), int(good.sum()))
    else:
        assert est.mean_ns is None and est.notes


def test_std_estimate_is_close_on_a_large_trace():
    rng = np.random.default_rng(7)
    n = 200_000
    config = LdaConfig(banks=1, rows=1024, thresholds=(0,))
    packet = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    send = np.arange(n, dtype=np.int64) * 1000
    delay = np.round(rng.weibull(0.6, size=n) * 150).astype(np.int64)
    sender, receiver = run_lda(config, packet, send, delay, np.ones(n, bool))
    est = estimate_lda(sender, receiver)
    assert est.mean_ticks == Fraction(int(delay.sum()), n)
    assert est.std_ns == pytest.approx(delay.std(), rel=0.25)
    half = est.std_ns * math.sqrt(2 * math.log(2 / 0.02) / n)
    assert est.ci_half_width_ns == pytest.approx(half)
    assert est.ci_low_ns < float(est.mean_ticks) < est.ci_high_ns


def test_timestamps_across_the_wrap_give_exact_differences():
    rng = np.random.default_rng(3)
    config = LdaConfig(banks=1, rows=16, thresholds=(0,), ts_bits=40)
    n = 5000
    packet = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    send = (2**40 - 10_000) + rng.integers(0, 9_000, size=n, dtype=np.int64)
    delay = rng.integers(0, 50_000, size=n, dtype=np.int64)
    receive = (send + delay) % 2**40  # the receiver's 40-bit clock wrapped
    assert (receive < send).any()
    hashes = PacketHashes(packet=packet)
    sender = update(config, hashes, send)
    receiver = update(config, hashes, receive)
    est = estimate_lda(sender, receiver)
    assert est.mean_ticks == Fraction(int(delay.sum()), n)


def test_counters_wrapping_count_bits_still_compare():
    config = LdaConfig(banks=1, rows=2, thresholds=(0,), count_bits=8)
    # 300 packets in row 0 at both points: the 8-bit counters read 44, still equal.
    sender = synopsis(config, [300 % 256, 1], [0, 0])
    receiver = synopsis(config, [300 % 256, 0], [300 * 5, 0])
    est = estimate_lda(sender, receiver)
    assert est.usable_rows == 1 and est.lost == 1


# ---------------------------------------------------------------------------------------
# Errors and empty inputs
# ---------------------------------------------------------------------------------------

def test_config_mismatch_raises_with_the_differing_parameter():
    a = LdaConfig(banks=1, rows=4, thresholds=(0,))
    b = a.replace(seed=a.seed + 1)
    with pytest.raises(ConfigMismatch, match="seed"):
        estimate_lda(Synopsis.empty(a), Synopsis.empty(b))
    with pytest.raises(ConfigMismatch, match="rows"):
        estimate_lda(Synopsis.empty(a), Synopsis.empty(a.replace(rows=8)))


def test_wrong_kind_and_bad_confidence_are_refused():
    r = RdaConfig(banks=2, buckets_per_bank=8)
    with pytest.raises(ValueError, match="LDA"):
        estimate_lda(Synopsis.empty(r), Synopsis.empty(r))
    a = LdaConfig(banks=1, rows=4, thresholds=(0,))
    with pytest.raises(ValueError, match="confidence"):
        estimate_lda(Synopsis.empty(a), Synopsis.empty(a), confidence=1.0)


def test_empty_and_all_lost_give_no_mean_and_a_reason():
    config = LdaConfig(banks=1, rows=4, thresholds=(0,))
    est = estimate_lda(Synopsis.empty(config), Synopsis.empty(config))
    assert est.mean_ns is None and est.std_ns is None and est.ci_low_ns is None
    assert "empty" in est.notes[0]
    sender = synopsis(config, [1, 2, 3, 4], [10, 20, 30, 40])
    receiver = synopsis(config, [0, 1, 2, 3], [15, 25, 35, 45])
    est = estimate_lda(sender, receiver)
    assert est.mean_ns is None and est.samples == 0 and est.lost == 4
    assert "no usable row" in est.notes[0]


# ---------------------------------------------------------------------------------------
# Bank tuning (eq. 2)
# ---------------------------------------------------------------------------------------

def test_sampling_rate_threshold_and_expected_samples():
    assert sampling_rate_for_loss(1024, 1023) == 0.5
    assert sampling_rate_for_loss(1024, 0) == 1.0
    assert sampling_rate_for_loss(1024, 8191) == 1 / 16
    assert tuned_threshold(1024, 8191) == 4
    assert tuned_threshold(1024, 10) == 0
    # 2 x 512 rows tuned to 0.5% and 10% loss of 5M packets (§IV-B): p = 1/98, 1/1953.
    assert tuned_thresholds(512, [0.1 * 5e6, 0.005 * 5e6]) == (7, 11)
    assert tuned_thresholds(1024, [0, 0]) == (0, 1)
    assert expected_samples(1024, 1_000_000, 1023) == 0.25 * 1_000_000
    assert expected_samples(1024, 1000, 0) == 1000  # capped at R
    with pytest.raises(ValueError, match="alpha"):
        sampling_rate_for_loss(1024, 10, alpha=1.5)
    with pytest.raises(ValueError, match="expected_lost"):
        sampling_rate_for_loss(1024, -1)


def test_constant_delays_give_no_zero_width_interval():
    # Every delay 10 ticks: the collapsed pairs show no spread (variance 0). The std's
    # interval is [0, half a tick] and the mean's uses that upper end: never zero width.
    config = LdaConfig(banks=1, rows=4, thresholds=(0,))
    sender = synopsis(config, [1, 1, 1, 1], [100, 200, 300, 400])
    receiver = synopsis(config, [1, 1, 1, 1], [110, 210, 310, 410])
    est = estimate_lda(sender, receiver)
    assert est.mean_ns == 10.0 and est.variance_ns2 == 0.0 and est.std_ns == 0.0
    assert (est.std_ci_low_ns, est.std_ci_high_ns) == (0.0, 0.5)
    assert est.ci_half_width_ns == pytest.approx(0.5 * math.sqrt(2 * math.log(100) / 4))
    assert est.ci_low_ns < 10.0 < est.ci_high_ns
    assert any("uses its upper bound" in n for n in est.notes)
