# SPDX-License-Identifier: BSD-2-Clause
"""Memory planning for LDA: which banks, rows and thresholds to build for a counter
budget and a range of expected loss (LDA §IV), and the effective sample size and error
to expect.

In the host data flow (``docs/DESIGN.md``) this sits with the estimators it reasons
about (:mod:`host_sw.estimators.lda`'s tuning); ``ldactl plan`` prints its candidates and
the ``ldactl config --thresholds`` line of the best.
"""

from __future__ import annotations

import math

import numpy as np

from host_sw.contracts.config import LdaConfig
from host_sw.estimators.lda import expected_samples, tuned_threshold, tuned_thresholds
from host_sw.estimators.rda.late import late_binding_buckets

__all__ = ["bank_rates", "expected_effective_samples", "plan_memory", "counter_word_bytes",
           "size_for_loss"]


def counter_word_bytes(*, count_bits: int, ts_bits: int) -> int:
    """Bytes of one LDA counter word (count and timestamp sum) in block RAM."""
    return -(-LdaConfig(count_bits=count_bits, ts_bits=ts_bits).layout.width // 8)


def bank_rates(thresholds) -> list[float]:
    """Sampling probability of each bank (2^-z_j - 2^-z_{j+1}; the last 2^-z_n)."""
    z = list(thresholds)
    return [2.0 ** -z[j] - (2.0 ** -z[j + 1] if j + 1 < len(z) else 0.0)
            for j in range(len(z))]


def expected_effective_samples(rows: int, thresholds, packets: float, loss: float) -> float:
    """E[S] of an LDA with ``rows`` rows per bank: a bank sampling ``p`` of the packets
    keeps a row usable when none of its ``p·L/rows`` expected losses fall in it, so it
    contributes ``p·R·exp(-p·L/rows)`` (LDA §III-B/§IV; losses Poisson per row)."""
    lost = loss * packets
    received = packets - lost
    return sum(p * received * math.exp(-p * lost / rows) for p in bank_rates(thresholds))


def _candidate(banks: int, rows: int, grid, best, *, packets, loss_min, loss_max, cv,
               confidence) -> dict | None:
    """One layout of ``banks`` × ``rows`` scored over the loss ``grid`` against the
    oracle's ``best`` E[S] at each loss; ``None`` when no thresholds fit."""
    losses = (np.geomspace(max(loss_min, 1e-9), max(loss_max, 1e-9), banks) * packets
              if banks > 1 else [max(loss_min, loss_max) * packets])
    try:
        thresholds = tuned_thresholds(rows, losses)
    except ValueError:
        return None
    samples = [expected_effective_samples(rows, thresholds, packets, p) for p in grid]
    ratios = [s / b if b > 0 else 1.0 for s, b in zip(samples, best)]
    k = int(np.argmin(ratios))
    worst = min(samples)
    rel = cv * math.sqrt(2 * math.log(2 / (1 - confidence)) / worst) if worst > 0 \
        else math.inf
    bound = (expected_samples(rows, packets * (1 - loss_max), loss_max * packets)
             if banks == 1 else None)
    return {"banks": banks, "rows": rows, "counters": banks * rows,
            "thresholds": list(thresholds), "worst_loss": float(grid[k]),
            "efficiency_worst": ratios[k], "expected_samples_worst": worst,
            "expected_samples": {f"{p:.6g}": s for p, s in zip(grid, samples)},
            "relative_error_worst": rel, "paper_bound_samples": bound}


def plan_memory(*, counters: int, packets: float, loss_min: float, loss_max: float,
                max_banks: int = 8, cv: float = 1.0, confidence: float = 0.98,
                points: int = 9) -> list[dict]:
    """Candidate LDA layouts for ``counters`` counters, best first.

    For 1..``max_banks`` banks: rows = the largest power of two with banks × rows ≤
    counters; thresholds from :func:`~host_sw.estimators.lda.tuned_thresholds` for loss
    counts spread geometrically over ``[loss_min, loss_max] × packets`` (LDA §IV-B, one
    bank per loss scale, α = 0.5). At ``points`` loss rates over the range each candidate's
    expected effective sample size S is compared with the best a single bank of all the
    counters could reach at that loss rate if it were known (§IV-A's ideal); candidates are
    ranked by the worst such efficiency (LDA §IV-B's aim: near-ideal over the whole range),
    then by the worst S. The error figure is the relative Hoeffding half-width
    ``cv · sqrt(2 ln(2/δ) / S)`` at the worst S (``cv`` = σ/μ of the delay).
    """
    if counters < 2:
        raise ValueError(f"the budget must hold at least 2 counters, not {counters}")
    if not 0 <= loss_min <= loss_max < 1:
        raise ValueError(f"need 0 ≤ loss_min ≤ loss_max < 1, not {loss_min}, {loss_max}")
    grid = (np.geomspace(max(loss_min, 1e-9), loss_max, points) if loss_max > 0
            else np.zeros(1))
    # The oracle at each loss rate: all counters in one bank at the best threshold.
    full_rows = 1 << int(math.floor(math.log2(counters)))
    best = [max(expected_effective_samples(full_rows, (z,), packets, p) for z in range(33))
            for p in grid]
    out = []
    for banks in range(1, max_banks + 1):
        rows = 1 << int(math.floor(math.log2(counters / banks))) if counters >= 2 * banks else 0
        if rows < 2:
            break
        candidate = _candidate(banks, rows, grid, best, packets=packets, loss_min=loss_min,
                               loss_max=loss_max, cv=cv, confidence=confidence)
        if candidate is not None:
            out.append(candidate)
    out.sort(key=lambda c: (-c["efficiency_worst"], -c["expected_samples_worst"]))
    return out


def size_for_loss(*, packets: float, loss: float, error: float = 0.01, cv: float = 1.0,
                  confidence: float = 0.98, reordered: float = 0.0,
                  max_rows: int = 1 << 24) -> dict:
    """The size an observed loss needs: the fewest rows (a power of two) of one LDA bank
    tuned to ``loss × packets`` losses whose expected effective sample size gives the
    mean a relative half-width ``cv · sqrt(2 ln(2/δ) / E[S]) ≤ error`` (bound (1)), and
    the RDA buckets per bank that decode the set difference (lost plus ``reordered``
    packets, ``2d``, Theorem 2).

    ``rows`` is None when no size reaches ``error`` (the interval's packets are too few
    even without loss, or more than ``max_rows`` rows would be needed).
    """
    if not 0 <= loss < 1:
        raise ValueError(f"the observed loss must be in [0, 1), not {loss}")
    if error <= 0 or packets <= 0:
        raise ValueError(f"error and packets must be positive, not {error}, {packets}")
    lost = loss * packets
    factor = cv * cv * 2 * math.log(2 / (1 - confidence))
    needed = factor / (error * error)           # E[S] the error needs
    out = {"loss": loss, "lost": lost, "error": error, "samples_needed": needed,
           "rows": None, "threshold": None, "expected_samples": None,
           "relative_error": None,
           "rda_buckets": late_binding_buckets(lost + reordered)}
    rows = 2
    while rows <= max_rows:
        z = tuned_threshold(rows, lost)
        samples = expected_effective_samples(rows, (z,), packets, loss)
        if samples >= needed:
            out.update(rows=rows, threshold=z, expected_samples=samples,
                       relative_error=cv * math.sqrt(2 * math.log(2 / (1 - confidence))
                                                     / samples))
            break
        rows *= 2
    return out
