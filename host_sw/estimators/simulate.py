# SPDX-License-Identifier: BSD-2-Clause
"""Simulated measurements: a scenario through the golden model and the estimators.

This is what ``ldactl simulate`` runs (and what the accuracy benchmarks build on), the
whole host data flow without a device (``docs/DESIGN.md``): a
:class:`~host_sw.model.channel.Scenario` gives both measurement points' packets and the exact
truth; :func:`host_sw.model.golden_lda_rda_lds.update` turns each point's packets into the counters the
gateware would hold; the estimators of :mod:`host_sw.estimators` compare them. Each run
yields an :class:`~host_sw.estimators.record.IntervalRecord` with the truth beside the
estimate; its :meth:`~host_sw.estimators.record.IntervalRecord.summary_json` is the CLI's
JSON contract::

    {"run", "synopsis", "config_id", "true": {"mean", "std", "sent", "received", "lost"},
     "estimate": {"mean", "std", "lost", "samples", "ci": [lo, hi]}}

(times in nanoseconds; values the estimator cannot give are ``null``). What a kind needs
beyond its pair estimator (RDA: both points' packet caches; LDS: per-flow errors) is one
row of ``_KIND_RUNS``, keyed by ``config.kind``; a kind that needs nothing more has none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from host_sw.contracts.config import LdaConfig
from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.hashing import FrameClass
from host_sw.estimators.lda import tuned_threshold, tuned_thresholds
from host_sw.estimators.lds import estimate_flows
from host_sw.estimators.opa.run import opa_details, opa_records, opa_synopses
from host_sw.estimators.record import IntervalRecord, record_for_pair, truth_json
from host_sw.estimators.rli.estimate import estimate_flows as rli_estimate_flows
from host_sw.estimators.rli.estimate import simulated_synopses as rli_synopses
from host_sw.model.channel import Scenario
from host_sw.model.golden_lda_rda_lds import Hashers
from host_sw.model.observation import (
    NO_INTERVAL, IntervalObservation, interval_observations,
)
from host_sw.model.golden_rli import with_references

__all__ = ["lda_config_for", "run_scenario", "set_difference_intervals", "rli_flow_table"]


def lda_config_for(*, packets: int, rows: int, banks: int, tune_for_loss: float | None,
                   **common) -> LdaConfig:
    """The LDA configuration ``ldactl simulate`` uses.

    ``tune_for_loss`` = p: one bank sampling at ``αm/(pN+1)`` (LDA §IV-A). Otherwise
    ``banks`` banks tuned to loss rates spread geometrically over 0.01 %…20 % (§IV-B), or a
    single bank that samples every packet when ``banks == 1``.
    """
    if tune_for_loss is not None:
        z = tuned_threshold(rows, tune_for_loss * packets)
        return LdaConfig(banks=1, rows=rows, thresholds=(z,), **common)
    if banks == 1:
        return LdaConfig(banks=1, rows=rows, thresholds=(0,), **common)
    rates = np.geomspace(1e-4, 0.2, banks)
    return LdaConfig(banks=banks, rows=rows,
                     thresholds=tuned_thresholds(rows, rates * packets), **common)


def set_difference_intervals(scenario: Scenario, differences, run: int, trace=None):
    """Yield ``(d, interval)`` for each set difference ``d``: intervals whose sender and
    receiver packet sets differ by exactly ``d`` packets, half lost (sender only), half
    reordered in from the previous interval (receiver only), as in the RDA paper's §VII-B
    (loss rate = reordering rate; the scenario's own loss is ignored).

    Interval 0 of a trace of ``scenario.packets + max(d)//2`` packets: its last
    ``scenario.packets`` packets are sent in interval 0; the ``d//2`` packets just before
    them are sent in interval −1 but received in interval 0 (reordered); ``d − d//2``
    packets of interval 0, chosen at random, are lost. One trace and one channel draw
    (``run``) are shared by all ``d``.
    """
    differences = list(differences)
    if min(differences) < 0:
        raise ValueError(f"set difference must be non-negative, not {min(differences)}")
    head = max(differences) // 2
    big = dataclasses.replace(scenario, packets=scenario.packets + head, loss=0.0)
    trace = big.trace() if trace is None else trace
    if len(trace) != big.packets:
        raise ValueError(f"the trace must hold {big.packets} packets, not {len(trace)}")
    tx = big.channel.transmit(trace.timestamps,
                              seed=np.random.SeedSequence([scenario.seed, run]))
    n = len(trace)
    idx = np.arange(n, dtype=np.int64)
    counted = trace.counted
    candidates = np.flatnonzero(counted[head:]) + head
    for d in differences:
        reordered, lost = d // 2, d - d // 2
        if lost > len(candidates):
            raise ValueError(f"set difference {d} needs more than {len(candidates)} packets")
        s_iv = np.where(idx < head, -1, 0).astype(np.int64)
        r_iv = s_iv.copy()
        r_iv[head - reordered:head] = 0
        rng = np.random.default_rng([scenario.seed, run, d, 0xD1FF])
        dropped = np.zeros(n, dtype=bool)
        dropped[rng.choice(candidates, size=lost, replace=False)] = True
        r_iv[dropped] = NO_INTERVAL
        intervals = interval_observations(
            sender_trace=trace, receiver_trace=trace, sender_index=idx, receiver_index=idx,
            sender_ts=tx.send_ts, receiver_ts=tx.receiver_ts, sender_interval=s_iv,
            receiver_interval=r_iv, counted=counted, dropped=dropped,
            clock_offset_ns=tx.clock_offset_ns)
        yield d, next(iv for iv in intervals if iv.interval == 0)


def _packet_caches(iv: IntervalObservation, config: SynopsisConfig, hashers: Hashers):
    """Both points' packet caches, ``(ids, timestamps)``, for an estimator that decodes."""
    s = (iv.sender.hashes(config, hashers).packet, iv.sender.timestamps)
    r = (iv.receiver.hashes(config, hashers).packet, iv.receiver.timestamps)
    return s, r


def _lds_flow_errors(config: SynopsisConfig, sender, receiver, iv: IntervalObservation,
                     hashers: Hashers) -> dict:
    """Per-flow figures of LDS §5.1: the median relative error of the per-flow delay over
    flows of ≥ 100 packets."""
    trace = iv.sender.trace
    flows = estimate_flows(sender, receiver, trace.flow_hashes(config, hashers))
    truth = iv.truth.per_flow(trace.flow_ids, trace.num_flows)
    big = truth["packets"] >= 100
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.abs(flows.delay_ns[big] - truth["mean"][big]) / np.abs(truth["mean"][big])
    rel = rel[np.isfinite(rel)]
    return {"flows_100plus": int(big.sum()),
            "flow_median_rel_error": float(np.median(rel)) if rel.size else None}


def rli_flow_table(config: SynopsisConfig, sender, receiver, iv: IntervalObservation,
                   hashers: Hashers) -> dict:
    """Per-flow RLI figures of one simulated interval: per flow of the trace (the reference
    flow excluded) the truth beside the estimate, as arrays (``flow``, ``packets``,
    ``sent``, ``received``, ``true_mean``, ``true_std``, ``mean``, ``std``, ``collided``, and
    the flows' header ``windows`` and frame ``classes`` that name them, ``None`` in fast
    mode)."""
    trace = iv.sender.trace
    flows = np.flatnonzero(trace.flow_classes != FrameClass.CONTROL) \
        if trace.flow_classes is not None else np.arange(trace.num_flows)
    est = rli_estimate_flows(receiver, trace.flow_hashes(config, hashers)[:, flows], sender)
    truth = iv.truth.per_flow(trace.flow_ids, trace.num_flows)
    f_both = trace.flow_ids[iv.truth.both_ids]
    sq = np.bincount(f_both, weights=iv.truth.delays.astype(np.float64) ** 2,
                     minlength=trace.num_flows)
    with np.errstate(invalid="ignore", divide="ignore"):
        true_std = np.sqrt(np.maximum(sq / truth["packets"] - truth["mean"] ** 2, 0))
    return {"flow": flows, "packets": truth["packets"][flows], "sent": est.sent,
            "received": est.packets, "true_mean": truth["mean"][flows],
            "true_std": true_std[flows], "mean": est.mean_ns, "std": est.std_ns,
            "collided": est.collided,
            "windows": None if trace.flow_windows is None else trace.flow_windows[flows],
            "classes": None if trace.flow_classes is None else trace.flow_classes[flows]}


def _rli_synopses(config: SynopsisConfig, iv: IntervalObservation, hashers: Hashers):
    """RLI's cells come from its own golden model (references around each packet)."""
    sender, receiver, stats = rli_synopses(config, iv, hashers)
    return sender, receiver, {"references": stats.references,
                              "buffer_overflowed": stats.overflowed,
                              "unreferenced": stats.unreferenced}


def _opa_synopses(config: SynopsisConfig, iv: IntervalObservation, hashers: Hashers):
    """OPA's words come from its own golden model (groups and combined hashes)."""
    sender, receiver = opa_synopses(config, iv, hashers)
    return sender, receiver, {}


def _rli_flow_errors(config: SynopsisConfig, sender, receiver, iv: IntervalObservation,
                     hashers: Hashers) -> dict:
    """The per-flow table and, as for LDS, the median relative error of the per-flow mean
    delay over flows of ≥ 100 packets (collided flows excluded, and counted)."""
    table = rli_flow_table(config, sender, receiver, iv, hashers)
    big = (table["packets"] >= 100) & ~table["collided"]
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.abs(table["mean"][big] - table["true_mean"][big]) / np.abs(
            table["true_mean"][big])
    rel = rel[np.isfinite(rel)]
    return {"flows_100plus": int(big.sum()),
            "flow_median_rel_error": float(np.median(rel)) if rel.size else None,
            "collided_flows": int((table["collided"] & (table["packets"] > 0)).sum()),
            "rli_flows": table}


@dataclass(frozen=True)
class _KindRun:
    """What a simulated run of one synopsis kind needs beyond its pair estimator."""
    #: The estimator decodes from both points' packet caches (RDA).
    packet_caches: bool = False
    #: Figures beside the estimate, ``(config, sender, receiver, iv, hashers) -> dict``.
    details: Callable | None = None
    #: The sender's stream as the kind sends it, ``(trace, config) -> trace`` (RLI: with
    #: its reference packets), before the channel.
    trace: Callable | None = None
    #: Both points' synopses when the golden ``update`` does not make them,
    #: ``(config, iv, hashers) -> (sender, receiver, details)``.
    synopses: Callable | None = None
    #: Both points' caches when not ``(ids, timestamps)``, ``(config, iv, hashers)``.
    caches: Callable | None = None


#: The kinds whose simulated runs need more than their pair estimator (others: nothing).
_KIND_RUNS = {"rda": _KindRun(packet_caches=True), "lds": _KindRun(details=_lds_flow_errors),
              "opa": _KindRun(details=opa_details, synopses=_opa_synopses,
                              caches=opa_records),
              "rli": _KindRun(details=_rli_flow_errors, synopses=_rli_synopses,
                              trace=lambda trace, config: with_references(trace, config)[0])}


def _interval_record(config: SynopsisConfig, iv: IntervalObservation, hashers: Hashers,
                     confidence: float, run: int,
                     interval_ns: int | None = None) -> IntervalRecord:
    """The record of one simulated interval: the estimate beside the exact truth."""
    kind = _KIND_RUNS.get(config.kind, _KindRun())
    extra = {}
    if kind.synopses:
        sender, receiver, extra = kind.synopses(config, iv, hashers)
    else:
        sender, receiver = iv.synopses(config, hashers=hashers)
    if kind.caches:
        caches = kind.caches(config, iv, hashers)
    else:
        caches = _packet_caches(iv, config, hashers) if kind.packet_caches else (None, None)
    record = record_for_pair(sender, receiver, confidence=confidence, interval=iv.interval,
                             sender_cache=caches[0], receiver_cache=caches[1],
                             hashers=hashers, interval_ns=interval_ns)
    details = kind.details(config, sender, receiver, iv, hashers) if kind.details else {}
    details.update(extra)
    details["reordered_true"] = int(iv.truth.reordered)
    return dataclasses.replace(record, run=run, true=truth_json(iv.truth), details=details)


def run_scenario(scenario: Scenario, config: SynopsisConfig, *, runs: int = 1,
                 set_difference: int | None = None, confidence: float = 0.98,
                 trace=None, progress=None):
    """Yield an :class:`~host_sw.estimators.record.IntervalRecord` for every run (and
    every interval of it).

    ``set_difference`` (RDA's §VII-B setup) replaces the scenario's loss by an exact number
    of lost plus reordered packets. ``trace`` replaces the scenario's synthetic trace (a
    capture, :func:`host_sw.model.pcap.capture_trace`).
    """
    if runs < 1:
        raise ValueError(f"runs must be at least 1, not {runs}")
    if scenario.window_bytes != config.window_bytes:
        raise ValueError(f"the scenario's window ({scenario.window_bytes} bytes) differs "
                         f"from the configuration's ({config.window_bytes})")
    hashers = Hashers(config)
    if set_difference is not None and trace is not None:
        raise ValueError("a set-difference run builds its own trace; it cannot take a capture")
    if trace is None and set_difference is None:
        trace = scenario.trace()
    add_own_frames = _KIND_RUNS.get(config.kind, _KindRun()).trace
    if add_own_frames is not None and trace is not None:
        trace = add_own_frames(trace, config)
    time_ns = scenario.interval_ns if scenario.mode == "time" else None
    for run in range(runs):
        if set_difference is not None:
            intervals = [iv for _, iv in set_difference_intervals(scenario, [set_difference], run)]
        else:
            intervals = scenario.run(run, trace=trace).intervals
        for iv in intervals:
            record = _interval_record(config, iv, hashers, confidence, run, time_ns)
            if progress:
                progress(record)
            yield record
