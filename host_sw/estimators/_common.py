# SPDX-License-Identifier: BSD-2-Clause
"""Helpers shared by the estimators (private): argument checks, exact ratios, the
Hoeffding half-width of the LDA paper's bound (1), and a salted 64-bit mixer.

Data flow (docs/DESIGN.md, "Layers and the import rule"): used by the **estimators**
only; it imports the contracts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from fractions import Fraction
from statistics import NormalDist

import numpy as np

from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.config import check_comparable
from host_sw.contracts.hashing import GOLDEN_GAMMA, MASK64, mix64_array

__all__ = ["check_pair", "check_kind", "check_confidence", "hoeffding_half_width",
           "fraction_to_float", "salted_mix64", "jsonable", "dataclass_to_dict",
           "CollapsedVariance", "collapsed_variance", "normal_quantile", "std_interval"]


def check_kind(config: SynopsisConfig, config_type: type, message: str) -> None:
    """Raise ``ValueError(message)`` unless ``config`` is of ``config_type``'s kind."""
    if config.kind != config_type.kind:
        raise ValueError(message)


def check_pair(sender, receiver, config_type: type, what: str) -> SynopsisConfig:
    """Check that both synopses share one configuration of ``config_type``; return it.

    Raises :class:`~host_sw.contracts.config_base.ConfigMismatch` when the configurations differ and a
    ``ValueError`` when they are of the wrong kind.
    """
    check_comparable(sender.config, receiver.config)
    config = sender.config
    check_kind(config, config_type, f"{what} needs {config_type.kind.upper()} synopses, "
               f"not {config.kind.upper()} ({type(config).__name__})")
    for side, syn in (("sender", sender), ("receiver", receiver)):
        for name in config.layout.names:
            arr = syn.fields.get(name)
            if arr is None:
                raise ValueError(f"the {side} synopsis has no {name!r} field")
            if np.shape(arr) != config.shape:
                raise ValueError(f"the {side} synopsis field {name!r} has shape "
                                 f"{np.shape(arr)}, the configuration says {config.shape}")
    return config


def check_confidence(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be strictly between 0 and 1, not {confidence}")
    return float(confidence)


def hoeffding_half_width(std: float, samples: int, confidence: float) -> float:
    """Half-width of the confidence interval of the mean from the LDA paper's bound (1).

    ``Pr[|D - mu| >= eps*mu] <= 2 exp(-eps^2 S mu^2 / (2 sigma^2))``; setting the right
    side to ``delta = 1 - confidence`` gives ``eps*mu = sigma * sqrt(2 ln(2/delta) / S)``.
    ``std`` is the *estimated* standard deviation (a plug-in for the unknown sigma).
    """
    delta = 1.0 - confidence
    return std * math.sqrt(2.0 * math.log(2.0 / delta) / samples)


def normal_quantile(confidence: float) -> float:
    """The two-sided standard normal quantile of ``confidence`` (2.326 for 0.98)."""
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


@dataclass(frozen=True)
class CollapsedVariance:
    """The variance of the delays from collapsed bucket pairs (:func:`collapsed_variance`).

    Attributes
    ----------
    variance_ticks2:
        ``sum_j (d_j - mu dn_j)^2 / sum_j n_j`` (exact, ticks², may be 0; never negative).
    se_ticks2:
        Its standard error estimated from the spread of the pairs' terms (ticks²).
    pairs:
        Pairs holding at least one packet.
    """
    variance_ticks2: Fraction
    se_ticks2: float
    pairs: int


def collapsed_variance(pair_diff, pair_dn, pair_n, mean_ticks: Fraction) -> CollapsedVariance:
    """The variance of the delays from collapsed pairs of buckets, centred by their counts.

    A pair ``j`` collapses two buckets with opposite signs: ``d_j`` is the difference of
    their delay sums (receiver − sender, ticks), ``dn_j`` the difference and ``n_j`` the sum
    of their packet counts. With independent delays of mean ``mu`` and variance
    ``sigma^2``, ``E[d_j^2] = n_j sigma^2 + mu^2 dn_j^2``: the papers' ``F - mu^2`` (LDA
    eq. 5 with (3); RDA Algorithm 3) leaves ``mu^2 (sum dn_j^2 / sum n_j - 1)`` in the
    estimate, zero only on average over the bucket occupancy, and it grows with
    ``(mu/sigma)^2`` (a 10 µs path with 2 µs jitter: ±130 % on the variance with 1 536
    pairs; a bucket hash that spreads sequential IDs more evenly than at random biases it
    low). Centring each pair by its own count difference, ``d_j - mu dn_j``, removes that
    term exactly: ``E[(d_j - mu dn_j)^2] = n_j sigma^2``.

    The standard error is the ratio estimator's, ``sqrt(sum (t_j - V n_j)^2 · J/(J-1)) /
    sum n_j`` with ``t_j = (d_j - mu dn_j)^2`` over the ``J`` pairs that hold packets.
    """
    diff = np.asarray(pair_diff, dtype=object).ravel()
    dn = np.asarray(pair_dn, dtype=object).ravel()
    n = np.asarray(pair_n, dtype=object).ravel()
    total = int(np.sum(n)) if n.size else 0
    if total == 0:
        return CollapsedVariance(Fraction(0), 0.0, 0)
    a, b = mean_ticks.numerator, mean_ticks.denominator
    scaled = diff * b - dn * a                       # b (d_j - mu dn_j), exact
    terms = scaled * scaled
    variance = Fraction(int(np.sum(terms)), b * b * total)
    held = n != 0
    pairs = int(np.count_nonzero(held))
    t = terms[held].astype(float) / float(b * b)
    nf = n[held].astype(float)
    v = float(variance)
    se = (math.sqrt(float(np.sum((t - v * nf) ** 2)) * pairs / (pairs - 1)) / total
          if pairs > 1 else math.inf)
    return CollapsedVariance(variance, se, pairs)


def std_interval(variance_ns2: float, se_ns2: float, confidence: float, tick_ns: float,
                 notes: list[str]) -> tuple[float | None, float | None]:
    """``(low, high)`` of the standard deviation at ``confidence``: the normal interval of
    the log variance, ``V · exp(±z·se/V)``, square-rooted. On the log scale because with
    heavy-tailed delays (Weibull 0.6, kurtosis ≈ 40) a sample that misses the tail
    underestimates both the variance and its error: every miss of the linear interval
    ``V ± z·se`` in ``python -m bench.calibration --only lda-loss-0.2`` was below the
    truth. Never zero width: the upper end is at least half a tick (the timestamps'
    resolution, noted when it applies). ``(None, None)`` (noted) when the error is
    unknown (one pair)."""
    if not math.isfinite(se_ns2):
        notes.append("no interval for the standard deviation: one collapsed pair")
        return None, None
    z = normal_quantile(confidence)
    if variance_ns2 > 0:
        spread = math.exp(z * se_ns2 / variance_ns2)
        low, high = math.sqrt(variance_ns2 / spread), math.sqrt(variance_ns2 * spread)
    else:
        low = high = 0.0
    if high < tick_ns / 2:
        notes.append("the standard deviation's interval is widened to half a tick (the "
                     "timestamps' resolution): the collapsed pairs show no spread")
        high = tick_ns / 2
    return low, high


def fraction_to_float(value: Fraction) -> float:
    return value.numerator / value.denominator


def jsonable(value):
    """Convert estimate fields to JSON-friendly values: a :class:`~fractions.Fraction`
    becomes ``"num/den"``, dataclasses with ``to_dict`` their dict, numpy scalars and
    arrays Python ints/floats/lists, tuples lists."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, Fraction):
        return f"{value.numerator}/{value.denominator}"
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, (tuple, list)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


def dataclass_to_dict(obj) -> dict:
    """``{field: jsonable(value)}`` for a dataclass instance."""
    return {f.name: jsonable(getattr(obj, f.name)) for f in fields(obj)}


def salted_mix64(values, salt: int) -> np.ndarray:
    """:func:`~host_sw.contracts.hashing.mix64_array` of ``values + (salt + 1) *
    GOLDEN_GAMMA`` (wrapping): a fast 64-bit mixer for sketches that need a hash
    independent of the bucket hashes (MinHash, FineComb buckets)."""
    with np.errstate(over="ignore"):
        z = np.asarray(values, dtype=np.uint64) + np.uint64((GOLDEN_GAMMA * (salt + 1)) & MASK64)
    return mix64_array(z)
