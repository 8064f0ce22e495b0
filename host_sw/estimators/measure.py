# SPDX-License-Identifier: BSD-2-Clause
"""One interval's estimate from a sender's and a receiver's synopsis, as a flat dict.

In the host data flow (``docs/DESIGN.md``) this is "snapshot of an interval ► estimators ►
record": :func:`estimate_pair` runs the estimator of the synopsis kind (LDA, RDA without
packet caches, LDS aggregate) and returns the JSON-ready ``estimate`` of an interval
(``mean``, ``std``, ``ci``, ``std_ci`` (LDA, RDA), ``lost``, ``loss_rate``, ``samples``, ``sent``, ``received``;
times in ns) plus ``notes``. :func:`host_sw.estimators.record.record_for_pair` wraps it in
the :class:`~host_sw.estimators.record.IntervalRecord` that ``ldactl`` prints and exports.

The estimator of each kind is one row of :data:`PAIR_ESTIMATORS`, keyed by
``config.kind``: a new synopsis kind adds its row here.
"""

from __future__ import annotations

import math

import numpy as np

from host_sw.contracts.config import check_comparable
from host_sw.contracts.layouts import signed_difference
from host_sw.contracts.synopsis import Synopsis
from host_sw.estimators.lda import estimate_lda, time_boundary_allowance
from host_sw.estimators.opa.recovery import estimate_opa
from host_sw.estimators.rda.estimate import estimate_rda
from host_sw.estimators.rli.estimate import aggregate as rli_aggregate

__all__ = ["estimate_pair", "json_number", "PAIR_ESTIMATORS"]


def json_number(x):
    """A float for JSON: ``None`` for a missing value or NaN."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def _interval(e) -> list:
    return [json_number(e.ci_low_ns), json_number(e.ci_high_ns)]


def _std_interval(e) -> list:
    return [json_number(e.std_ci_low_ns), json_number(e.std_ci_high_ns)]


def _lda_pair(sender: Synopsis, receiver: Synopsis, *, confidence, interval_ns=None,
              **_caches) -> dict:
    """LDA: counts scaled to the whole stream by the first bank's sampling, ``2**z_0``;
    in time mode (``interval_ns``) the intervals widened by what the boundaries can hide
    (:func:`~host_sw.estimators.lda.time_boundary_allowance`)."""
    e = estimate_lda(sender, receiver, confidence=confidence)
    scale = 2 ** sender.config.thresholds[0]
    record = {"mean": json_number(e.mean_ns), "std": json_number(e.std_ns),
              "ci": _interval(e), "std_ci": _std_interval(e), "lost": e.lost * scale,
              "loss_rate": json_number(e.loss_rate), "samples": e.samples,
              "sent": e.sent * scale, "received": e.received * scale,
              "notes": list(e.notes)}
    allowance = (time_boundary_allowance(e, sender.config, interval_ns, confidence)
                 if interval_ns else None)
    if allowance is not None and allowance.spoiled_rows > 0:
        lo, hi = record["ci"]
        if lo is not None:
            record["ci"] = [lo - allowance.mean_low_ns, hi + allowance.mean_high_ns]
        slo, shi = record["std_ci"]
        if slo is not None and e.variance_ns2 is not None:
            z_lo = max(0.0, slo * slo - allowance.variance_ns2)
            record["std_ci"] = [math.sqrt(z_lo), shi]
        record["notes"].append(
            f"time mode: about {allowance.in_flight:.0f} packets are in flight at each "
            f"boundary (rate × mean delay); up to {allowance.spoiled_rows:.1f} rows may pair "
            f"one of the previous interval with one sent late or lost, so the interval is "
            f"widened by -{allowance.mean_low_ns:.4g}/+{allowance.mean_high_ns:.4g} ns and "
            f"the std can be too high by up to {math.sqrt(allowance.variance_ns2):.4g} ns "
            f"(in quadrature)")
    return record


def _rda_pair(sender: Synopsis, receiver: Synopsis, *, confidence, sender_cache,
              receiver_cache, hashers) -> dict:
    """RDA: with both packet caches the set difference is decoded and repaired."""
    e = estimate_rda(sender, receiver, confidence=confidence, sender_cache=sender_cache,
                     receiver_cache=receiver_cache, hashers=hashers)
    sent = int(np.asarray(sender.count[0], dtype=object).sum())
    received = int(np.asarray(receiver.count[0], dtype=object).sum())
    record = {"mean": json_number(e.mean_ns), "std": json_number(e.std_ns),
              "ci": _interval(e), "std_ci": _std_interval(e), "lost": sent - received, "samples": e.samples,
              "sent": sent, "received": received, "notes": list(e.notes)}
    if sender_cache is not None and receiver_cache is not None:
        record.update(reordered=e.reordered_found, decoded=e.decoded, exact=e.exact)
        if e.decoded:   # the whole set difference listed: its lost packets are the count
            record["lost"] = e.lost_found
    record["loss_rate"] = record["lost"] / sent if sent else None
    return record


def _lds_pair(sender: Synopsis, receiver: Synopsis, *, confidence, **_caches) -> dict:
    """LDS: the aggregate mean over the usable cells of the densest row."""
    config = sender.config
    z = np.asarray(config.row_thresholds)
    row = int(np.argmin(z))
    n_s = sender.count[row].astype(np.int64)
    n_r = receiver.count[row].astype(np.int64)
    usable = (n_s == n_r) & (sender["digest"][row] == receiver["digest"][row]) & (n_s > 0)
    dts = signed_difference(receiver.ts_sum[row], sender.ts_sum[row], config.ts_bits)
    samples = int(n_s[usable].sum())
    mean = (int(dts[usable].astype(object).sum()) / samples * config.tick_ns
            if samples else None)
    scale = 2 ** int(z[row])
    sent, received = int(n_s.sum()) * scale, int(n_r.sum()) * scale
    return {"mean": json_number(mean), "std": None, "ci": [None, None],
            "lost": sent - received,
            "loss_rate": (sent - received) / sent if sent else None,
            "samples": samples, "sent": sent, "received": received,
            "notes": ["LDS aggregate over the usable cells of its densest row; no "
                      "standard deviation or confidence interval"]}


def _rli_pair(sender: Synopsis, receiver: Synopsis, *, confidence, **_caches) -> dict:
    """RLI: mean and std of all interpolated delays of the receiver's cells; loss from
    the sender's counts (a packet the receiver's buffer overflowed counts as lost)."""
    mean, std, samples = rli_aggregate(receiver)
    sent = int(np.asarray(sender.count, dtype=object).sum())
    received = int(np.asarray(receiver.count, dtype=object).sum())
    return {"mean": json_number(mean), "std": json_number(std), "ci": [None, None],
            "lost": sent - received, "loss_rate": (sent - received) / sent if sent else None,
            "samples": samples, "sent": sent, "received": received,
            "notes": ["RLI: mean and std of the delays interpolated between reference "
                      "packets (not measured per packet); no confidence interval"]}


def _opa_pair(sender: Synopsis, receiver: Synopsis, *, confidence, sender_cache,
              receiver_cache, hashers) -> dict:
    """OPA: with both points' per-packet records (:class:`~host_sw.model.golden_opa.PacketRecords`)
    per-packet delays and their percentiles; without, the counts only."""
    return estimate_opa(sender, receiver, sender_cache, receiver_cache)


#: The pair estimator of each synopsis kind, keyed by ``config.kind``.
PAIR_ESTIMATORS = {"lda": _lda_pair, "rda": _rda_pair, "lds": _lds_pair, "opa": _opa_pair,
                   "rli": _rli_pair}


def estimate_pair(sender: Synopsis, receiver: Synopsis, *, confidence: float = 0.98,
                  sender_cache=None, receiver_cache=None, hashers=None,
                  interval_ns=None) -> dict:
    """The estimate of one interval (times in ns).

    ``sent``/``received``/``lost`` are scaled to the whole stream where the synopsis
    samples (LDA: by ``2**thresholds[0]``); ``loss_rate`` is lost/sent over the sampled
    packets. RDA with both points' packet caches
    (:class:`~host_sw.estimators.rda.decode.PacketCache`, built once per capture or
    stream, or ``(ids, timestamps)`` arrays) decodes and repairs: ``lost`` is then the
    number of lost packets decoded, and ``reordered``, ``decoded`` and ``exact`` are
    added (``exact``: the mean is the exact mean delay of the packets both points saw).
    ``interval_ns``: the interval's length when the points cut it by time (time mode);
    LDA then widens its intervals by what the boundaries can hide.
    """
    check_comparable(sender.config, receiver.config)
    estimator = PAIR_ESTIMATORS.get(sender.config.kind)
    if estimator is None:
        raise TypeError(type(sender.config).__name__)
    extra = {"interval_ns": interval_ns} if interval_ns and estimator is _lda_pair else {}
    return estimator(sender, receiver, confidence=confidence, sender_cache=sender_cache,
                     receiver_cache=receiver_cache, hashers=hashers, **extra)
