# SPDX-License-Identifier: BSD-2-Clause
"""RDA estimators: subtract two RDA synopses, decode (peel) the lost and reordered
packets, repair the synopses with the two caches, and compute an exact average delay and
a standard deviation (Huang et al., "Reconcilable Difference Aggregator", §IV–§V, §VIII).

Data flow (docs/DESIGN.md, "Data flow of a counter"; estimators layer): snapshot of an
interval (two :class:`~host_sw.contracts.synopsis.Synopsis` of an
:class:`~host_sw.contracts.config.RdaConfig`, plus each measurement point's cache
``{packet ID: timestamp}``) ► **this module** ► CLI/export.

Steps (each a public function; steps 1–3 are in :mod:`host_sw.estimators.rda.decode` and
importable from here):

1. :func:`subtract` — bucket by bucket, ``Δ = receiver count − sender count`` (signed,
   :func:`~host_sw.contracts.layouts.signed_difference`) and ``ID = receiver ID ⊕ sender ID``.
2. :func:`decode` — Algorithm 1. A bucket ``i`` of bank ``l`` is *pure* when
   ``h_l(ID) == i`` and ``|Δ| == 1``, with ``h_l`` the contract's bucket function
   (``range_reduce32(Hashers(config).rda_bucket[l].of_u64(ID), m)``). ``Δ = +1``: the
   receiver holds the extra packet, so it is *reordered* (present only at the receiver);
   ``Δ = −1``: *lost*. (Algorithm 1 as printed labels ``Δ = 1`` lost; §IV-C and the
   subtraction ``receiver − sender`` give the labels used here.)
3. :func:`repair` — remove each lost packet from the sender synopsis and each reordered
   packet from the receiver synopsis (XOR its ID, subtract its timestamp, count − 1 in
   its bucket of every bank), timestamps from the caches.
4. :func:`estimate_rda` — the mean over every *clean* bucket (IDs equal, counts equal,
   count > 0) of every bank. Each packet is counted once per bank, which leaves the mean
   exact: ``k·Σ delays / k·n``. When decoding succeeded and every found packet was
   repaired, the mean is EXACT (a :class:`~fractions.Fraction` of integers). The standard
   deviation uses the selective collapse of Algorithm 2 and Algorithm 3 (which returns
   the *variance* ``SqSum/Count − µ²``; the paper's eq. (3) misprints it as ``F² − µ²``),
   with each collapsed pair centred by its count difference times the exact mean
   (:func:`~host_sw.estimators._common.collapsed_variance`): the paper's form leaves
   ``µ² (Σ (n_p − n_q)² / Σ (n_p + n_q) − 1)`` in the variance, which on a path whose
   mean is several times its std puts the std 26–30 % (and more) off.

The decoding guards beyond the paper, how peeling runs in vectorised rounds and how to
pass the caches: :mod:`host_sw.estimators.rda.decode`.

Late binding (§VIII: the synopses sized after the interval from the caches) is
:mod:`host_sw.estimators.rda.late`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from host_sw.contracts.config import RdaConfig
from host_sw.contracts.layouts import signed_difference
from host_sw.contracts.synopsis import Synopsis
from host_sw.estimators._common import (check_confidence, check_pair, collapsed_variance,
                                        dataclass_to_dict, fraction_to_float,
                                        hoeffding_half_width, std_interval)
from host_sw.estimators.rda.decode import (PacketCache, RdaDecoding, decode,
                                           remove_packets, subtract)
from host_sw.model.golden_lda_rda_lds import Hashers

__all__ = ["RdaEstimate", "estimate_rda"]


# ---------------------------------------------------------------------------------------
# Latency aggregation (§V-C, Algorithms 2 and 3)
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class RdaEstimate:
    """Delay and loss estimate of one interval from a pair of RDA synopses.

    Attributes
    ----------
    config_id:
        The shared configuration ID.
    sent, received:
        Packets the sender and the receiver recorded (bank 0's counters).
    decoded:
        The decoder listed the whole set difference.
    repaired:
        Every decoded packet was found in its cache and removed.
    exact:
        ``decoded`` and ``repaired`` and every non-empty bucket is clean: the mean is the
        exact average delay of the packets both points recorded.
    lost_found, reordered_found:
        Numbers of lost and reordered packets decoded.
    lost_ids, reordered_ids:
        Their IDs (uint64, sorted).
    clean_buckets, unclean_buckets:
        Non-empty buckets (all banks) usable for the mean, and non-empty ones that are
        not (different IDs or counts after repair).
    counted:
        Sum of counts of the clean buckets (each packet once per bank it is clean in).
    delay_sum_ticks:
        Sum of timestamp differences over the clean buckets (exact, ticks).
    samples:
        Effective sample size for the confidence interval: the largest per-bank count of
        clean packets (a lower bound on the distinct packets behind the mean).
    mean_ticks:
        ``delay_sum_ticks / counted`` (exact Fraction) or None.
    mean_ns:
        Average delay in ns, or None.
    collapsed_pairs, collapsed_count:
        Buckets pairs collapsed by Algorithm 2, and the packets in them (its ``Count``).
    variance_ns2, std_ns, variance_clipped:
        Algorithm 3 with each collapsed pair centred by its count difference
        (:func:`~host_sw.estimators._common.collapsed_variance`: never negative, so
        ``variance_clipped`` stays False) and its square root.
    std_ci_low_ns, std_ci_high_ns:
        Interval for the standard deviation at ``confidence``
        (:func:`~host_sw.estimators._common.std_interval`), or None.
    confidence, ci_half_width_ns, ci_low_ns, ci_high_ns:
        Interval for the mean: zero width when ``exact``; otherwise from the LDA paper's
        bound (1) with the estimated std and ``samples``.
    cancelled_ids:
        False pure buckets the decoder peeled and cancelled again.
    notes:
        Why values are missing and any caveat.
    """
    config_id: int
    sent: int
    received: int
    decoded: bool
    repaired: bool
    exact: bool
    lost_found: int
    reordered_found: int
    lost_ids: np.ndarray = field(repr=False)
    reordered_ids: np.ndarray = field(repr=False)
    clean_buckets: int = 0
    unclean_buckets: int = 0
    counted: int = 0
    delay_sum_ticks: int = 0
    samples: int = 0
    mean_ticks: Fraction | None = None
    mean_ns: float | None = None
    collapsed_pairs: int = 0
    collapsed_count: int = 0
    variance_ns2: float | None = None
    std_ns: float | None = None
    variance_clipped: bool = False
    std_ci_low_ns: float | None = None
    std_ci_high_ns: float | None = None
    confidence: float = 0.98
    ci_half_width_ns: float | None = None
    ci_low_ns: float | None = None
    ci_high_ns: float | None = None
    cancelled_ids: int = 0
    notes: tuple[str, ...] = ()

    @property
    def mean_numerator_ticks(self) -> int:
        """Numerator of the mean before reduction (``delay_sum_ticks``)."""
        return self.delay_sum_ticks

    @property
    def mean_denominator(self) -> int:
        """Denominator of the mean before reduction (``counted``)."""
        return self.counted

    def to_dict(self) -> dict:
        return dataclass_to_dict(self)


def _exact_sum(values) -> int:
    """``Σ values`` as a Python int, exact: summed in int64 when no partial sum can
    overflow (``n · max |v| < 2**63``), in Python ints otherwise."""
    v = np.asarray(values)
    if v.size == 0:
        return 0
    if v.dtype != object:
        top = max(abs(int(v.max())), abs(int(v.min())))
        if top * v.size < 1 << 63:
            return int(v.sum(dtype=np.int64))
    return int(np.sum(v.astype(object)))


def _ts_signed(receiver: Synopsis, sender: Synopsis, bits: int) -> np.ndarray:
    """Signed timestamp-sum differences, int64 (the configuration keeps ``ts_bits ≤ 63``)."""
    return signed_difference(receiver.ts_sum, sender.ts_sum, bits)


def _repair_from_caches(sender, receiver, decoding: RdaDecoding, sender_cache,
                        receiver_cache, hashers, notes: list[str]):
    """Remove the decoded packets the caches can supply: ``(sender, receiver, repaired)``
    with ``repaired`` False when a cache is missing or lacks a decoded ID (noted)."""
    repaired = True
    fixed = []
    for side, syn, ids, cache in (("sender", sender, decoding.lost_ids, sender_cache),
                                  ("receiver", receiver, decoding.reordered_ids,
                                   receiver_cache)):
        kind = "lost" if side == "sender" else "reordered"
        if ids.size == 0:
            fixed.append(syn)
            continue
        if cache is None:
            repaired = False
            notes.append(f"{ids.size} {kind} packets not removed: no {side} cache given")
            fixed.append(syn)
            continue
        found, ts = PacketCache.of(cache).lookup(ids)
        if not found.all():
            repaired = False
            notes.append(f"{int((~found).sum())} decoded {kind} IDs are not in the {side} "
                         f"cache; left in place")
        fixed.append(remove_packets(syn, ids[found], ts[found], hashers) if found.any()
                     else syn)
    return fixed[0], fixed[1], repaired


def _decode_and_repair(sender: Synopsis, receiver: Synopsis, sender_cache, receiver_cache,
                       hashers: Hashers, notes: list[str]):
    """Algorithm 1 on the difference, then the repair of both synopses from the caches
    (either may be ``None``): ``(decoding, repaired sender, repaired receiver, repaired)``;
    an incomplete decoding is noted."""
    sender_cache = None if sender_cache is None else PacketCache.of(sender_cache)
    receiver_cache = None if receiver_cache is None else PacketCache.of(receiver_cache)
    decoding = decode(subtract(sender, receiver), hashers=hashers, sender_ids=sender_cache,
                      receiver_ids=receiver_cache)
    if not decoding.decoded:
        notes.append(f"decoding incomplete: {decoding.undecoded_buckets} buckets still "
                     f"hold undecoded packets; the mean uses the clean buckets only")
    rep_sender, rep_receiver, repaired = _repair_from_caches(
        sender, receiver, decoding, sender_cache, receiver_cache, hashers, notes)
    return decoding, rep_sender, rep_receiver, repaired


def _clean_buckets(sender: Synopsis, receiver: Synopsis, config: RdaConfig):
    """``(sender counts, clean, nonempty, ts differences)``: a bucket is clean when both
    points hold the same packets (equal IDs and counts) and at least one."""
    s_count = np.asarray(sender.count, dtype=np.uint64)
    r_count = np.asarray(receiver.count, dtype=np.uint64)
    count_equal = signed_difference(r_count, s_count, config.count_bits) == 0
    id_equal = (np.asarray(sender["id_xor"], dtype=np.uint64)
                == np.asarray(receiver["id_xor"], dtype=np.uint64))
    nonempty = (s_count != 0) | (r_count != 0)
    clean = count_equal & id_equal & (s_count != 0)
    return s_count, clean, nonempty, _ts_signed(receiver, sender, config.ts_bits)


def _mean(delay_sum: int, counted: int, tick: Fraction, nonempty: np.ndarray,
          unclean: np.ndarray, notes: list[str]):
    """``(mean in ticks (exact), mean in ns)`` over the clean buckets, ``None``s (and why,
    noted) without one."""
    if counted > 0:
        mean_ticks = Fraction(delay_sum, counted)
        return mean_ticks, fraction_to_float(mean_ticks * tick)
    notes.append("no mean: both synopses are empty" if not nonempty.any() else
                 f"no mean: no clean bucket ({int(unclean.sum())} buckets hold "
                 f"different packets at the two points)")
    return None, None


def _selective_collapse(clean: np.ndarray, ts_diff: np.ndarray, s_count: np.ndarray):
    """Algorithm 2, per bank: the clean buckets in pairs; ``(Δs_p − Δs_q, n_p − n_q,
    n_p + n_q, pairs)`` with the pairs of every bank concatenated (object arrays)."""
    diffs, dns, ns = [], [], []
    for l in range(clean.shape[0]):
        chosen = np.flatnonzero(clean[l])
        pairs = chosen.size // 2
        if pairs == 0:
            continue
        p, q = chosen[0:2 * pairs:2], chosen[1:2 * pairs:2]
        np_, nq = s_count[l][p].astype(object), s_count[l][q].astype(object)
        diffs.append(ts_diff[l][p].astype(object) - ts_diff[l][q].astype(object))
        dns.append(np_ - nq)
        ns.append(np_ + nq)
    if not diffs:
        empty = np.zeros(0, dtype=object)
        return empty, empty, empty, 0
    diff, dn, n = (np.concatenate(x) for x in (diffs, dns, ns))
    return diff, dn, n, int(diff.size)


def _confidence_interval(exact: bool, mean_ns, std_ns, std_high, samples: int,
                         confidence: float, notes: list[str]):
    """``(half width, low, high)`` of the mean: zero width when exact, bound (1) with the
    estimated standard deviation otherwise (the upper end of its interval when the
    estimate is 0: never zero width), ``None``s without one (noted)."""
    if exact:
        notes.append("exact mean: the set difference was decoded and repaired completely")
        return 0.0, mean_ns, mean_ns
    if std_ns is not None:
        if std_ns == 0 and std_high is not None:
            std_ns = std_high
            notes.append(f"the estimated standard deviation is 0: the confidence interval "
                         f"uses its upper bound, {std_high:.6g} ns")
        half = hoeffding_half_width(std_ns, samples, confidence)
        return half, mean_ns - half, mean_ns + half
    if mean_ns is not None:
        notes.append("no confidence interval: it needs the standard deviation")
    return None, None, None


def _variance(mean_ticks, pair_diff, pair_dn, pair_n, confidence: float, tick: Fraction,
              notes: list[str]):
    """Algorithm 3 centred by the pairs' count differences
    (:func:`~host_sw.estimators._common.collapsed_variance`): ``(variance in ns², std in
    ns, (std low, std high) in ns)``; ``None``s without a mean or collapsed pairs."""
    if mean_ticks is None:
        return None, None, (None, None)
    if not pair_n.size or int(np.sum(pair_n)) == 0:
        notes.append("no standard deviation: fewer than two clean buckets in every bank")
        return None, None, (None, None)
    cv = collapsed_variance(pair_diff, pair_dn, pair_n, mean_ticks)
    variance_ns2 = fraction_to_float(cv.variance_ticks2 * tick * tick)
    return variance_ns2, math.sqrt(variance_ns2), std_interval(
        variance_ns2, cv.se_ticks2 * float(tick) ** 2, confidence, float(tick), notes)


def estimate_rda(sender: Synopsis, receiver: Synopsis, *, sender_cache=None,
                 receiver_cache=None, confidence: float = 0.98,
                 hashers: Hashers | None = None) -> RdaEstimate:
    """Decode, repair and estimate average delay and its standard deviation.

    Parameters
    ----------
    sender, receiver:
        The two RDA synopses of one interval (same configuration).
    sender_cache, receiver_cache:
        The caches of both points: :class:`PacketCache` objects built once per capture
        (the fast form: see the module notes), or ``{id: timestamp}`` dicts or
        ``(ids, timestamps)`` arrays, converted on each call. Without them no bucket is
        repaired and the mean uses the buckets the difference did not touch.
    confidence:
        Level of the interval for the mean.
    hashers:
        Optional prebuilt :class:`~host_sw.model.golden_lda_rda_lds.Hashers` (building them costs
        about a millisecond: pass the same ones to every interval).

    Returns
    -------
    RdaEstimate

    Raises
    ------
    ConfigMismatch
        On different configurations.
    """
    config = check_pair(sender, receiver, RdaConfig, "estimate_rda")
    confidence = check_confidence(confidence)
    hashers = hashers or Hashers(config)
    k = config.shape[0]
    tick = Fraction(config.tick_ns)
    notes: list[str] = []

    decoding, rep_sender, rep_receiver, repaired = _decode_and_repair(
        sender, receiver, sender_cache, receiver_cache, hashers, notes)
    s_count, clean, nonempty, ts_diff = _clean_buckets(rep_sender, rep_receiver, config)
    unclean = nonempty & ~clean

    counted = _exact_sum(s_count[clean])
    delay_sum = _exact_sum(ts_diff[clean])
    samples = max((_exact_sum(s_count[l][clean[l]]) for l in range(k)), default=0)
    exact = decoding.decoded and repaired and not unclean.any() and counted > 0
    mean_ticks, mean_ns = _mean(delay_sum, counted, tick, nonempty, unclean, notes)
    pair_diff, pair_dn, pair_n, collapsed_pairs = _selective_collapse(clean, ts_diff,
                                                                      s_count)
    collapsed_count = int(np.sum(pair_n)) if pair_n.size else 0
    variance_ns2, std_ns, (std_low, std_high) = _variance(
        mean_ticks, pair_diff, pair_dn, pair_n, confidence, tick, notes)
    clipped = False
    half, low, high = _confidence_interval(exact, mean_ns, std_ns, std_high, samples,
                                           confidence, notes)
    return RdaEstimate(
        config_id=config.config_id,
        sent=_exact_sum(np.asarray(sender.count[0], dtype=np.uint64)),
        received=_exact_sum(np.asarray(receiver.count[0], dtype=np.uint64)),
        decoded=decoding.decoded, repaired=repaired, exact=bool(exact),
        lost_found=int(decoding.lost_ids.size),
        reordered_found=int(decoding.reordered_ids.size),
        lost_ids=decoding.lost_ids, reordered_ids=decoding.reordered_ids,
        clean_buckets=int(clean.sum()), unclean_buckets=int(unclean.sum()),
        counted=counted, delay_sum_ticks=delay_sum, samples=samples,
        mean_ticks=mean_ticks, mean_ns=mean_ns, collapsed_pairs=collapsed_pairs,
        collapsed_count=collapsed_count, variance_ns2=variance_ns2, std_ns=std_ns,
        variance_clipped=clipped, std_ci_low_ns=std_low, std_ci_high_ns=std_high,
        confidence=confidence, ci_half_width_ns=half,
        ci_low_ns=low, ci_high_ns=high, cancelled_ids=decoding.cancelled_ids,
        notes=tuple(notes))
