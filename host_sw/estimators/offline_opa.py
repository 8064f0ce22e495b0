# SPDX-License-Identifier: BSD-2-Clause
"""OPA from two streamed captures: each interval's words and per-packet records built
from the records the pairing spilled by interval, one range of intervals in memory at
a time.

In the host data flow (``docs/DESIGN.md``, "offline analysis") this is the OPA branch
of :func:`host_sw.estimators.offline.capture_records` for capture files:
:func:`~host_sw.estimators.offline_stream.stream_pair` (the pairing checks, the window
both captures saw, each interval's truth, and each point's counted packets after the
pairing in an :class:`~host_sw.estimators.offline_stream.OpaSpill`) ► per interval
:func:`interval_inputs` (both points' :class:`~host_sw.model.golden_opa.PacketRecords`,
the sender's words) ► :func:`interval_details` (the recovery and the truth beside it).

The same definitions as the in-memory hooks of :mod:`host_sw.estimators.opa.run`: the
sender's records in capture order, the receiver's in arrival order (timestamp, then
capture order); a recovered delay is checked against the delay of the same packet
(matched by its invariant bytes, :func:`~host_sw.estimators.offline_stream._match`'s
order for repeated ones) when both points saw it in the interval, the truth's
percentiles are those of the packets both points saw in the interval. Memory: one
bucket of intervals' records (40 bytes a packet and point) and the recovery's working
set, whatever the captures' size.
"""

from __future__ import annotations

import numpy as np

from host_sw.estimators.offline_stream import _match, _ticks
from host_sw.estimators.opa.recovery import PERCENTILES, recover_pair
from host_sw.model.golden_opa import PacketRecords, opa_synopsis

__all__ = ["interval_inputs", "interval_details"]

#: The delay of a received packet the sender did not send in its interval (as
#: :func:`host_sw.estimators.opa.run.opa_details`: never equal to a recovered one).
_NOT_SENT = -10 ** 18


def interval_inputs(config, s: np.ndarray, r: np.ndarray) -> dict:
    """One interval's OPA inputs from its spilled records (columns of
    :class:`~host_sw.estimators.offline_stream.OpaSpill`'s records; ``s`` in capture
    order, ``r`` in arrival order): both points' words and records, the truth's pairs."""
    s_rec = PacketRecords(np.ascontiguousarray(s["p"]),
                          np.asarray(_ticks(s["ts"], config.tick_ns), np.int64))
    r_rec = PacketRecords(np.ascontiguousarray(r["p"]),
                          np.asarray(_ticks(r["ts"], config.tick_ns), np.int64))
    # the truth's pairs: both sides in capture order for the match, then back
    r_file = np.argsort(r["seq"], kind="stable")
    si, ri_file = _match(s["key"], r["key"][r_file])
    ri = r_file[ri_file]
    return {"records": (s_rec, r_rec),
            "synopses": (opa_synopsis(config, s_rec.packet),
                         opa_synopsis(config, r_rec.packet)),
            "pairs": (si, ri), "delays_ns": r["ts"][ri] - s["ts"][si]}


def interval_details(config, sender, inputs: dict) -> dict:
    """The recovery (``opa``), ``delays_exact`` (every recovered delay is the truth),
    the truth's percentiles (``true_p50`` …, ns) of a valid interval
    (:func:`host_sw.estimators.opa.run.opa_details`' keys)."""
    s, r = inputs["records"]
    result = recover_pair(sender, s, r)
    si, ri = inputs["pairs"]
    send = np.full(len(r), _NOT_SENT, np.int64)
    send[ri] = s.timestamps[si]
    rec = np.flatnonzero(result.recovered)
    true = r.timestamps[rec] - send[rec]
    out = {"opa": result, "opa_hashes": r.packet,
           "delays_exact": bool(np.array_equal(result.delays[rec], true)),
           "reordered_found": result.reordered}
    delays = np.asarray(inputs["delays_ns"], dtype=np.float64)
    if len(delays):
        for q, v in zip(PERCENTILES, np.percentile(delays, PERCENTILES)):
            out[f"true_p{q:g}"] = float(v)
        out["true_max"] = float(delays.max())
    return out
