# SPDX-License-Identifier: BSD-2-Clause
"""OPA in a simulated interval (``ldactl simulate --synopsis opa``): both points' OPA
words and per-packet records from a :class:`~host_sw.model.observation.IntervalObservation`,
and the figures beside the estimate (the truth's percentiles, whether every recovered
delay is exact).

Estimators layer: the hooks of the ``"opa"`` row of ``_KIND_RUNS``
(:mod:`host_sw.estimators.simulate`). OPA's words depend on each packet's position, so
they come from :func:`host_sw.model.golden_opa.opa_synopsis` instead of the golden update.
"""

from __future__ import annotations

import threading

import numpy as np

from host_sw.estimators.opa.recovery import PERCENTILES, recover_pair
from host_sw.model.golden_opa import PacketRecords, opa_synopsis

__all__ = ["opa_records", "opa_synopses", "opa_details"]

#: The last interval's records, per thread (the analysis's tasks may run on threads at
#: once; one shared memo would hand a task another interval's records).
_MEMO = threading.local()


def _point_records(config, observation, hashers) -> tuple[PacketRecords, np.ndarray]:
    """A point's records of its counted packets (tap order, ticks) and their ids."""
    hashes = observation.hashes(config, hashers)
    ticks = np.asarray(observation.ticks(config), dtype=np.int64)
    counted = (np.ones(len(ticks), bool) if hashes.counted is None
               else np.asarray(hashes.counted, bool))
    return (PacketRecords(np.asarray(hashes.packet, np.uint64)[counted], ticks[counted]),
            np.asarray(observation.packet_ids)[counted])


def opa_records(config, iv, hashers):
    """(sender, receiver) :class:`PacketRecords` of the interval (memoised per interval,
    so that the synopses and the caches share them)."""
    return _memo(config, iv, hashers)["records"]


def _memo(config, iv, hashers) -> dict:
    """The calling thread's memo of the interval ``iv`` (records and packet ids; ``iv``
    kept alive, so its identity is not reused)."""
    key = (id(iv), config.config_id)
    memo = getattr(_MEMO, "memo", None)
    if memo is None or memo["key"] != key:
        s, s_ids = _point_records(config, iv.sender, hashers)
        r, r_ids = _point_records(config, iv.receiver, hashers)
        memo = {"key": key, "records": (s, r), "ids": (s_ids, r_ids), "iv": iv}
        _MEMO.memo = memo
    return memo


def opa_synopses(config, iv, hashers):
    """Both points' OPA words (each point's core computes them in its own order)."""
    s, r = opa_records(config, iv, hashers)
    return opa_synopsis(config, s.packet), opa_synopsis(config, r.packet)


def opa_details(config, sender, receiver, iv, hashers) -> dict:
    """The recovery (``opa``, for per-packet output), the truth's percentiles
    (``true_p50`` …, ns) and ``delays_exact``: every recovered delay equals the truth."""
    memo = _memo(config, iv, hashers)
    s, r = memo["records"]
    result = recover_pair(sender, s, r)
    s_ids, r_ids = memo["ids"]
    send_of = dict(zip(s_ids.tolist(), s.timestamps.tolist()))
    rec = np.flatnonzero(result.recovered)
    true = np.array([r.timestamps[i] - send_of.get(int(r_ids[i]), -10 ** 18) for i in rec],
                    dtype=np.int64)
    out = {"opa": result, "opa_hashes": r.packet,
           "delays_exact": bool(np.array_equal(result.delays[rec], true)),
           "reordered_found": result.reordered}
    delays = np.asarray(iv.truth.delays, dtype=np.float64)
    if len(delays):
        for q, v in zip(PERCENTILES, np.percentile(delays, PERCENTILES)):
            out[f"true_p{q:g}"] = float(v)
        out["true_max"] = float(delays.max())
    return out
