# SPDX-License-Identifier: BSD-2-Clause
"""LDA estimators: average delay, its standard deviation, loss, and a confidence
interval from a sender's and a receiver's LDA synopsis (Kompella et al., "Every
microsecond counts", §III-B–E), plus the bank-tuning formulas of §III-D.

Data flow (docs/DESIGN.md, "Data flow of a counter"; estimators layer): snapshot of an
interval (two :class:`~host_sw.contracts.synopsis.Synopsis`) ► **this module** ►
CLI/export; the host also uses :func:`tuned_threshold` to retune bank thresholds from the
measured loss.

Definitions (the paper's, with 0-based rows):

* A row ``(j, i)`` (bank ``j``, row ``i``) is *usable* when the sender's and the
  receiver's packet counters agree. With every difference read by
  :func:`~host_sw.contracts.layouts.signed_difference`, the estimate is
  ``D = sum_usable (T_B - T_A) / S`` with ``S = sum_usable S_A`` the *effective sample
  size*; all sums are Python integers, one division at the end (:class:`fractions.Fraction`).
* Standard deviation (§III-E): rows ``2i`` and ``2i+1`` collapse (row bit 0 is the sign of
  :func:`~host_sw.contracts.hash_fields.lda_sign`): ``T~ = T[2i+1] - T[2i]``, ``S~ = S[2i+1] + S[2i]``;
  ``F = sum_usable (T~_B - T~_A)^2 / S~`` (eq. 5) estimates the mean squared delay, and
  ``variance = F - D^2``. That form leaves ``D^2 (sum dS~^2 / S~ - 1)`` in the variance
  (``dS~ = S[2i+1] - S[2i]``), zero only on average: on a 5 µs path with std/mean 0.07
  it clipped the std to 0 or put it 156–660 % high. Each pair is therefore centred by
  its own count difference, ``variance = sum (T~_B - T~_A - D dS~)^2 / S~``
  (:func:`~host_sw.estimators._common.collapsed_variance`), never negative; its
  standard error gives the std an interval (``std_ci_low_ns``, ``std_ci_high_ns``). A collapsed
  pair is usable when *both* its rows are usable; under the paper's FIFO assumption (loss
  only) that is the same as ``S~_A = S~_B``, and it stays correct when reordering could
  make two count errors cancel.
* Confidence interval of the mean from bound (1): ``Pr[|D - mu| >= eps mu] <=
  2 exp(-eps^2 S mu^2 / 2 sigma^2)``; with ``delta = 1 - confidence`` the half-width is
  ``sigma * sqrt(2 ln(2/delta) / S)``. The unknown ``sigma`` is replaced by the estimated
  standard deviation (a plug-in; when that is 0, by the upper end of its interval, so
  the interval never has zero width). In time mode the boundaries can hide more:
  :func:`time_boundary_allowance`. Coverage of both intervals:
  ``python -m bench.calibration`` (``docs/ACCURACY.md``, "Calibration").

Timestamps are integer ticks; results are reported in ns (``config.tick_ns``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from host_sw.contracts.config import LdaConfig
from host_sw.contracts.config_base import threshold_for_rate
from host_sw.contracts.layouts import signed_difference
from host_sw.contracts.synopsis import Synopsis
from host_sw.estimators._common import (check_confidence, check_pair, collapsed_variance,
                                        dataclass_to_dict, fraction_to_float,
                                        hoeffding_half_width, normal_quantile,
                                        std_interval)

__all__ = ["LdaBankSummary", "LdaEstimate", "estimate_lda", "BoundaryAllowance",
           "time_boundary_allowance", "sampling_rate_for_loss",
           "tuned_threshold", "tuned_thresholds", "expected_samples"]


@dataclass(frozen=True)
class LdaBankSummary:
    """Counters of one LDA bank.

    Attributes
    ----------
    bank:
        Bank index ``j``.
    sent, received, lost:
        Packets the bank recorded at the sender, at the receiver, and their difference.
    usable_rows:
        Rows whose counters agree (empty rows included).
    samples:
        Packets in usable rows (this bank's share of the effective sample size).
    """
    bank: int
    sent: int
    received: int
    lost: int
    usable_rows: int
    samples: int

    def to_dict(self) -> dict:
        return dataclass_to_dict(self)


@dataclass(frozen=True)
class LdaEstimate:
    """Delay and loss estimate of one interval from a pair of LDA synopses.

    Attributes
    ----------
    config_id:
        The shared configuration ID.
    sent, received, lost:
        Packets recorded by all banks at the sender, at the receiver, and
        ``sent - received`` (from the counters; the sampled packets only).
    banks:
        Per-bank :class:`LdaBankSummary`.
    usable_rows:
        Usable rows over all banks.
    samples:
        Effective sample size ``S`` (packets in usable rows).
    delay_sum_ticks:
        ``sum_usable (T_B - T_A)``, exact (ticks).
    mean_ticks:
        ``delay_sum_ticks / samples`` as an exact :class:`~fractions.Fraction`, or None.
    mean_ns:
        The average delay in ns, or None when no usable row holds a packet.
    collapsed_pairs, collapsed_samples:
        Usable collapsed row pairs and the packets in them (``S~``).
    second_moment_ticks2:
        ``F`` of eq. (5), exact, in ticks², or None.
    variance_ns2, std_ns:
        The variance from the collapsed pairs centred by their count differences
        (:func:`~host_sw.estimators._common.collapsed_variance`; ``F - D^2`` on average,
        never negative) in ns² and its square root in ns, or None.
    variance_clipped:
        Kept for the records' form: the centred variance is never negative (False).
    std_ci_low_ns, std_ci_high_ns:
        Interval for the standard deviation at ``confidence``
        (:func:`~host_sw.estimators._common.std_interval`), or None.
    confidence:
        Confidence level of the interval.
    ci_half_width_ns, ci_low_ns, ci_high_ns:
        Interval for the mean from bound (1) with the estimated std, or None.
    notes:
        Why a value is missing, and any caveat (clipping, zero-width interval).
    """
    config_id: int
    sent: int
    received: int
    lost: int
    banks: tuple[LdaBankSummary, ...]
    usable_rows: int
    samples: int
    delay_sum_ticks: int
    mean_ticks: Fraction | None
    mean_ns: float | None
    collapsed_pairs: int
    collapsed_samples: int
    second_moment_ticks2: Fraction | None
    variance_ns2: float | None
    std_ns: float | None
    variance_clipped: bool
    std_ci_low_ns: float | None
    std_ci_high_ns: float | None
    confidence: float
    ci_half_width_ns: float | None
    ci_low_ns: float | None
    ci_high_ns: float | None
    notes: tuple[str, ...]

    @property
    def loss_rate(self) -> float | None:
        """``lost / sent`` over the sampled packets, or None when nothing was sent."""
        return self.lost / self.sent if self.sent else None

    def to_dict(self) -> dict:
        d = dataclass_to_dict(self)
        d["loss_rate"] = self.loss_rate
        return d


def _int_sum(values) -> int:
    """Exact sum of an integer array as a Python int (no int64 overflow)."""
    return int(np.sum(np.asarray(values).astype(object))) if np.size(values) else 0


def _collapsed_pairs(usable: np.ndarray, sent_rows: np.ndarray, ts_diff: np.ndarray):
    """The usable collapsed row pairs (2i, 2i+1): their sender counts ``S~``, the
    differences of their counts ``S[2i+1] - S[2i]`` and their ``T~_B - T~_A = d[2i+1] -
    d[2i]`` (Python ints)."""
    pair_usable = usable[:, 0::2] & usable[:, 1::2]
    odd, even = sent_rows[:, 1::2].astype(object), sent_rows[:, 0::2].astype(object)
    pair_counts = (odd + even)[pair_usable]
    pair_dn = (odd - even)[pair_usable]
    pair_diff = (ts_diff[:, 1::2].astype(object) - ts_diff[:, 0::2].astype(object))[pair_usable]
    return pair_counts, pair_dn, pair_diff


def _variance(mean_ticks, pair_diff: np.ndarray, pair_dn: np.ndarray,
              pair_counts: np.ndarray, confidence: float, tick: Fraction,
              notes: list[str]):
    """§III-E centred by the pairs' count differences
    (:func:`~host_sw.estimators._common.collapsed_variance`): ``(F in ticks², variance in
    ns², std in ns, (std low, std high) in ns)``; ``None``s without a mean or collapsed
    samples (noted)."""
    if mean_ticks is None:
        return None, None, None, (None, None)
    collapsed_samples = _int_sum(pair_counts)
    if collapsed_samples == 0:
        notes.append("no standard deviation: no usable collapsed row pair holds a packet")
        return None, None, None, (None, None)
    square_sum = int(np.sum(pair_diff * pair_diff)) if pair_diff.size else 0
    second_moment = Fraction(square_sum, collapsed_samples)
    cv = collapsed_variance(pair_diff, pair_dn, pair_counts, mean_ticks)
    variance_ns2 = fraction_to_float(cv.variance_ticks2 * tick * tick)
    return second_moment, variance_ns2, math.sqrt(variance_ns2), std_interval(
        variance_ns2, cv.se_ticks2 * float(tick) ** 2, confidence, float(tick), notes)


def estimate_lda(sender: Synopsis, receiver: Synopsis, *,
                 confidence: float = 0.98) -> LdaEstimate:
    """Estimate average delay, its standard deviation and loss from two LDA synopses.

    Parameters
    ----------
    sender, receiver:
        The two measurement points' synopses of one interval (same configuration).
    confidence:
        Level of the interval for the mean (default 0.98, as the paper's Fig. 4).

    Returns
    -------
    LdaEstimate

    Raises
    ------
    ConfigMismatch
        When the synopses have different configurations.
    ValueError
        When they are not LDA synopses, or ``confidence`` is not in (0, 1).
    """
    config = check_pair(sender, receiver, LdaConfig, "estimate_lda")
    confidence = check_confidence(confidence)
    count_bits, ts_bits = config.count_bits, config.ts_bits
    tick = Fraction(config.tick_ns)
    notes: list[str] = []

    sent_rows = np.asarray(sender.count, dtype=np.uint64)
    received_rows = np.asarray(receiver.count, dtype=np.uint64)
    # receiver - sender counts: 0 on usable rows, -(lost) where packets were lost.
    count_diff = signed_difference(received_rows, sent_rows, count_bits)
    ts_diff = signed_difference(receiver.ts_sum, sender.ts_sum, ts_bits)
    usable = count_diff == 0

    banks = [LdaBankSummary(
        bank=j, sent=_int_sum(sent_rows[j]), received=_int_sum(received_rows[j]),
        lost=-_int_sum(count_diff[j]), usable_rows=int(usable[j].sum()),
        samples=_int_sum(sent_rows[j][usable[j]])) for j in range(config.banks)]
    sent = sum(b.sent for b in banks)
    received = sum(b.received for b in banks)
    lost = sum(b.lost for b in banks)
    usable_rows = int(usable.sum())
    samples = sum(b.samples for b in banks)
    delay_sum = _int_sum(ts_diff[usable])

    mean_ticks = mean_ns = None
    if samples > 0:
        mean_ticks = Fraction(delay_sum, samples)
        mean_ns = fraction_to_float(mean_ticks * tick)
    elif sent == 0 and received == 0:
        notes.append("no mean: both synopses are empty (no packet sampled)")
    else:
        notes.append(f"no mean: no usable row holds a packet ({usable_rows} usable rows "
                     f"of {config.buckets}, all empty; {lost} packets lost)")

    pair_counts, pair_dn, pair_diff = _collapsed_pairs(usable, sent_rows, ts_diff)
    collapsed_pairs = int(np.count_nonzero(pair_counts))
    collapsed_samples = _int_sum(pair_counts)
    second_moment, variance_ns2, std_ns, (std_low, std_high) = _variance(
        mean_ticks, pair_diff, pair_dn, pair_counts, confidence, tick, notes)
    clipped = False

    half = low = high = None
    if std_ns is not None:
        spread = std_ns
        if std_ns == 0:
            spread = std_high if std_high is not None else float(tick) / 2
            notes.append(f"the estimated standard deviation is 0: the confidence interval "
                         f"uses its upper bound, {spread:.6g} ns")
        half = hoeffding_half_width(spread, samples, confidence)
        low, high = mean_ns - half, mean_ns + half
    elif mean_ticks is not None:
        notes.append("no confidence interval: it needs the standard deviation")

    return LdaEstimate(
        config_id=config.config_id, sent=sent, received=received, lost=lost,
        banks=tuple(banks), usable_rows=usable_rows, samples=samples,
        delay_sum_ticks=delay_sum, mean_ticks=mean_ticks, mean_ns=mean_ns,
        collapsed_pairs=collapsed_pairs, collapsed_samples=collapsed_samples,
        second_moment_ticks2=second_moment, variance_ns2=variance_ns2, std_ns=std_ns,
        variance_clipped=clipped, std_ci_low_ns=std_low, std_ci_high_ns=std_high,
        confidence=confidence, ci_half_width_ns=half,
        ci_low_ns=low, ci_high_ns=high, notes=tuple(notes))


# ---------------------------------------------------------------------------------------
# Time-mode boundaries
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BoundaryAllowance:
    """What the boundaries of a time-mode interval can hide from an LDA estimate
    (:func:`time_boundary_allowance`).

    Attributes
    ----------
    in_flight:
        Packets in flight at each boundary, ``rate × mean delay`` (Little's law), with
        the mean delay at the upper end of the interval before widening.
    spoiled_rows:
        Upper bound (at the confidence level) on the rows that hold a packet of the
        previous interval in place of one sent at the end of this one, and count as usable.
    mean_low_ns, mean_high_ns:
        How far below and above the mean's interval those rows can put the truth.
    variance_ns2:
        How much of the variance estimate those rows can account for.
    """
    in_flight: float
    spoiled_rows: float
    mean_low_ns: float
    mean_high_ns: float
    variance_ns2: float


def time_boundary_allowance(est: LdaEstimate, config: LdaConfig, interval_ns: float,
                            confidence: float = 0.98) -> BoundaryAllowance | None:
    """The allowance for packets in flight at the boundaries of a time-mode interval.

    In time mode both points cut at the same instants, so the ``B = rate × mean delay``
    packets in flight at the start are counted by the receiver only and the ``B`` in flight
    at the end by the sender only (Little's law). A row of bank ``j`` (rate ``p_j``) that
    holds one such early packet and one late or lost packet has equal counts and is used:
    its delay sum carries ``r_early − s_late`` ∈ [−(T + D), D] instead of a delay. With
    ``x = p_j B`` early and ``y = x + lost_j`` missing packets over ``m`` rows, about
    ``x (y/m) e^{−(x+y)/m}`` rows are spoiled (Poisson); their upper bound ``C`` (mean plus
    ``z √C``) moves the mean by at most ``C (T + D)/S`` down and ``C D/S`` up, and adds at
    most ``C (T + D)²/S~`` to the variance. ``D`` is the upper end of the mean's interval
    before widening (the spoiled rows pull the estimate down, so ``B`` is estimated low
    by the bias itself; the Poisson margin covers it: ``python -m bench.calibration
    --only lda-time-long-path``). None without a mean.
    """
    if est.mean_ns is None or est.samples == 0 or interval_ns <= 0:
        return None
    z = normal_quantile(confidence)
    rows = config.rows
    sent = est.banks[0].sent * 2 ** config.thresholds[0]
    rate = sent / interval_ns
    delay = max(est.mean_ns + (est.ci_half_width_ns or 0.0), 0.0)
    in_flight = rate * delay
    spoiled = 0.0
    for bank, summary in zip(range(config.banks), est.banks):
        x = in_flight * 2.0 ** -config.thresholds[bank]
        y = x + max(summary.lost, 0)
        spoiled += x * (y / rows) * math.exp(-(x + y) / rows)
    bound = spoiled + z * math.sqrt(spoiled) if spoiled > 0 else 0.0
    span = interval_ns + delay
    return BoundaryAllowance(
        in_flight=in_flight, spoiled_rows=bound, mean_low_ns=bound * delay / est.samples,
        mean_high_ns=bound * span / est.samples,
        variance_ns2=bound * span * span / max(est.collapsed_samples, 1))


# ---------------------------------------------------------------------------------------
# Bank tuning (§III-B 3, §III-D, §IV-B)
# ---------------------------------------------------------------------------------------

def _check_rows(rows: int) -> None:
    if rows < 1:
        raise ValueError(f"rows must be positive, not {rows}")


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be strictly between 0 and 1, not {alpha}")


def sampling_rate_for_loss(rows: int, expected_lost: float, alpha: float = 0.5) -> float:
    """Sampling probability of a bank of ``rows`` rows tuned to ``expected_lost`` losses
    per interval: ``p = min(1, alpha * m / (L + 1))`` (§III-D, with ``alpha = 0.5`` as in
    the paper's evaluation)."""
    _check_rows(rows)
    _check_alpha(alpha)
    if expected_lost < 0:
        raise ValueError(f"expected_lost must be non-negative, not {expected_lost}")
    return min(1.0, alpha * rows / (expected_lost + 1))


def tuned_threshold(rows: int, expected_lost: float, alpha: float = 0.5) -> int:
    """The leading-zero threshold whose rate ``2**-z`` is nearest (in log scale) to
    :func:`sampling_rate_for_loss` (:func:`~host_sw.contracts.config_base.threshold_for_rate`)."""
    return threshold_for_rate(sampling_rate_for_loss(rows, expected_lost, alpha))


def tuned_thresholds(rows: int, expected_losses, alpha: float = 0.5) -> tuple[int, ...]:
    """Thresholds for a multi-bank LDA, one bank per target loss count (§IV-B).

    Banks are ordered by increasing threshold (bank 0 tuned to the lowest loss); equal
    thresholds are pushed apart by one so they increase strictly, as
    :class:`~host_sw.contracts.config.LdaConfig` requires.
    """
    losses = sorted(float(x) for x in expected_losses)
    if not losses:
        raise ValueError("need at least one expected loss count")
    out: list[int] = []
    for lost in losses:
        z = tuned_threshold(rows, lost, alpha)
        if out and z <= out[-1]:
            z = out[-1] + 1
        if z > 32:
            raise ValueError(f"cannot give {len(losses)} banks strictly increasing "
                             f"thresholds ≤ 32 for losses {losses}")
        out.append(z)
    return tuple(out)


def expected_samples(rows: int, received: float, lost: float, alpha: float = 0.5) -> float:
    """The paper's lower bound (2) on the expected effective sample size of one bank with
    ``p = alpha m / (L + 1)``: ``E[S] >= alpha (1 - alpha) m / (L + 1) * R``.

    The paper states it for ``L >= m`` (where ``p <= alpha``); for fewer losses ``p``
    saturates at 1 and the bound can exceed ``R``, so the result is capped at ``R``.
    """
    _check_rows(rows)
    _check_alpha(alpha)
    if received < 0 or lost < 0:
        raise ValueError(f"received and lost must be non-negative, not {received}, {lost}")
    return min(float(received), alpha * (1 - alpha) * rows / (lost + 1) * received)
