# SPDX-License-Identifier: BSD-2-Clause
"""Smoke tests of the accuracy benchmarks (``bench/accuracy_*.py``): each script's core
function at tiny sizes, with checks that hold exactly (no loss → exact LDA mean, RDA
exact below its decoding threshold, LDS exact without collisions) or loosely (errors
finite and small where the sample is large)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from host_sw.estimators.simulate import set_difference_intervals
from host_sw.model.channel import Scenario

from bench import accuracy_common, accuracy_lda, accuracy_lds, accuracy_rda


def test_lda_no_loss_is_exact_and_lossy_is_close():
    rows = accuracy_lda.run_lda(packets=20_000, losses=(0.0, 0.01), runs=2,
                                delays=("weibull",), figures=(4,))
    assert {r["config"] for r in rows} == {"1-bank pow2", "1-bank exact-p"}
    exact = [r for r in rows if r["loss"] == 0.0]
    assert len(exact) == 4
    for r in exact:
        assert r["true_lost"] == 0
        assert r["samples"] == 20_000          # p = 1: every packet sampled, every row usable
        assert r["rel_err_mean"] < 1e-9
        assert 0 <= r["rel_err_std"] < 0.5      # the sign-collapse std is an estimate
        assert r["ci_covers"] == 1
    lossy = [r for r in rows if r["loss"] == 0.01]
    for r in lossy:
        assert r["true_lost"] == 200
        assert 0 < r["samples"] < 20_000
        assert 0 < r["rel_err_mean"] < 0.2
    # pow2 tuning: L = 200, p = 512/201 > 1 → z = 0; exact p is also 1 here
    assert {r["p"] for r in lossy} == {1.0}
    summary = accuracy_lda.summarise(rows)
    assert len(summary) == 4
    assert all(s["runs"] == 2 for s in summary)


def test_lda_multibank_and_probes_give_estimates():
    rows = accuracy_lda.run_lda(packets=20_000, losses=(0.05,), runs=1, delays=("weibull",),
                                figures=(5, 6), probe_rates=(10_000.0,))
    configs = {(r["figure"], r["config"]) for r in rows}
    assert configs == {(4, "1-bank pow2"), (5, "2-bank"), (5, "3-bank"), (5, "4-bank"),
                       (6, "2-bank"), (6, "probes 10000 Hz")}
    for r in rows:
        assert r["samples"] > 0
        assert math.isfinite(r["rel_err_mean"]) and r["rel_err_mean"] < 1.0
    counters = {r["config"]: r["counters"] for r in rows if r["figure"] == 5}
    assert counters == {"2-bank": 1024, "3-bank": 768, "4-bank": 1024}


def test_exact_p_filter_rate():
    packet = np.random.default_rng(1).integers(0, 2**64, size=200_000, dtype=np.uint64)
    keep = accuracy_lda.exact_p_filter(packet, 0.3)
    assert abs(keep.mean() - 0.3) < 0.005
    assert accuracy_lda.exact_p_filter(packet, 1.0).all()


def test_difference_intervals_split():
    sc = Scenario(packets=5_000, fast=True, seed=3)
    ivs = dict(set_difference_intervals(sc, (0, 7, 300), run=0))
    for d, iv in ivs.items():
        assert iv.truth.lost == d - d // 2
        assert iv.truth.reordered == d // 2
        assert iv.truth.sent == 5_000
        assert iv.truth.received == 5_000 - (d - d // 2) + d // 2


def test_rda_exact_below_threshold():
    rows = accuracy_rda.run_rda(packets=20_000, differences=(0, 200), runs=1,
                                lda_rows=256, fc_buckets=1000)
    by = {(r["set_difference"], r["method"]): r for r in rows}
    for d in (0, 200):
        rda = by[(d, "RDA")]
        assert rda["exact"] == 1 and rda["decoded"] == 1
        assert rda["rel_err_mean"] == 0.0
        assert rda["decoded_fraction"] == 1.0
    for method in ("LDA", "FineComb"):
        assert by[(0, method)]["rel_err_mean"] < 1e-9
    assert by[(200, "FineComb")]["samples"] < by[(0, "FineComb")]["samples"]
    summary = accuracy_rda.summarise(rows)
    assert {(s["set_difference"], s["method"]) for s in summary} == set(by)


def test_lds_exact_without_collisions_and_worse_when_tight():
    rows, pooled = accuracy_lds.run_lds(packets=30_000, flows=300, cells_per_row=(4096, 8),
                                        runs=1)
    fpk, rel = pooled[4096]
    assert fpk.sum() == 30_000
    # A flow alone in one of its cells is exact; a cell shared with a small flow (count
    # within (1 + α)·n_min, α = 0.1) is also kept, so a few flows are slightly off.
    assert np.isfinite(rel).all()
    assert np.mean(rel < 1e-9) > 0.95
    assert np.max(rel) < 0.1
    fpk, rel = pooled[8]
    assert np.nanmedian(rel) > 1e-3            # 8 cells per row: heavy interference
    summary = accuracy_lds.summarise(rows, pooled)
    assert {s["counters"] for s in summary} == {4 * 4096, 32}
    assert sum(s["flows_per_run"] for s in summary if s["counters"] == 32
               and s["bin"] != "all") == \
        int((fpk > 0).sum())


def test_binned_and_helpers():
    packets = np.array([1, 5, 50, 150, 700, 5000, 20000])
    rel = np.array([0.5, 0.1, 0.2, 0.3, 0.4, 0.01, np.nan])
    b = {x["bin"]: x for x in accuracy_lds.binned(packets, rel)}
    assert b["1-9"]["flows"] == 2 and b["1-9"]["median"] == pytest.approx(0.3)
    assert b[">=10000"]["missing"] == 1 and math.isnan(b[">=10000"]["median"])
    assert accuracy_common.relative_error(99.0, 100.0) == pytest.approx(0.01)
    assert math.isnan(accuracy_common.relative_error(None, 1.0))
    table = accuracy_common.format_table([{"a": 1.23456, "b": "x"}], [("a", "A"), ("b", "B")])
    assert "1.235" in table and "B" in table
