# SPDX-License-Identifier: BSD-2-Clause
"""Simulated measurements: a scenario through the golden model and the estimators.

This is what ``ldactl simulate`` runs (and what the accuracy benchmarks build on): a
:class:`~host_sw.channel.Scenario` gives both measurement points' packets and the exact
truth; :func:`host_sw.golden.update` turns each point's packets into the counters the
gateware would hold; the estimators of :mod:`host_sw.estimators` compare them. Each run
yields a :class:`RunResult` whose :meth:`~RunResult.to_json` is the CLI's JSON contract::

    {"true": {"mean", "std", "sent", "received", "lost"},
     "estimate": {"mean", "std", "lost", "samples", "ci": [lo, hi]}}

(times in nanoseconds; values the estimator cannot give are ``null``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from .channel import IntervalObservation, Scenario, interval_observations
from .config import LdaConfig, LdsConfig, RdaConfig, SynopsisConfig
from .estimators.lda import estimate_lda, tuned_threshold, tuned_thresholds
from .estimators.lds import estimate_flows
from .estimators.rda import estimate_rda
from .golden import Hashers
from .layouts import signed_difference

__all__ = ["RunResult", "lda_config_for", "run_scenario", "set_difference_interval"]

_NO_INTERVAL = np.iinfo(np.int64).min


@dataclass
class RunResult:
    """One run of one interval: the truth, the estimate, and estimator details."""
    run: int
    synopsis: str
    config_id: int
    true: dict
    estimate: dict
    details: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"run": self.run, "synopsis": self.synopsis,
                "config_id": f"{self.config_id:#010x}",
                "true": self.true, "estimate": self.estimate}


def _num(x):
    """JSON-friendly float: None for missing/NaN."""
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


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


def set_difference_interval(scenario: Scenario, difference: int, run: int) -> IntervalObservation:
    """An interval whose sender and receiver packet sets differ by ``difference`` packets:
    half lost (sender only), half reordered in from the previous interval (receiver only),
    as in the RDA paper's §VII-B (loss rate = reordering rate).

    The trace holds ``packets + difference // 2`` packets; the first ``difference // 2``
    were sent in the previous interval and reach the receiver in this one.
    """
    if difference < 0:
        raise ValueError(f"set difference must be non-negative, not {difference}")
    reordered = difference // 2
    lost = difference - reordered
    if lost > scenario.packets:
        raise ValueError(f"set difference {difference} needs more than {scenario.packets} packets")
    big = dataclasses.replace(scenario, packets=scenario.packets + reordered, loss=0.0)
    trace = big.trace()
    rng = np.random.default_rng([scenario.seed, run, 0xD1FF])
    tx = big.channel.transmit(trace.timestamps, seed=np.random.SeedSequence([scenario.seed, run]))
    n = len(trace)
    s_iv = np.zeros(n, dtype=np.int64)
    s_iv[:reordered] = -1
    r_iv = np.zeros(n, dtype=np.int64)
    counted = trace.counted
    candidates = np.flatnonzero(counted[reordered:]) + reordered
    if lost > len(candidates):
        raise ValueError("not enough counted packets for the requested set difference")
    dropped = np.zeros(n, dtype=bool)
    dropped[rng.choice(candidates, size=lost, replace=False)] = True
    r_iv[dropped] = _NO_INTERVAL
    idx = np.arange(n, dtype=np.int64)
    intervals = interval_observations(
        sender_trace=trace, receiver_trace=trace, sender_index=idx, receiver_index=idx,
        sender_ts=tx.send_ts, receiver_ts=tx.receiver_ts, sender_interval=s_iv,
        receiver_interval=r_iv, counted=counted, dropped=dropped,
        clock_offset_ns=tx.clock_offset_ns)
    return next(iv for iv in intervals if iv.interval == 0)


def _truth(iv: IntervalObservation) -> dict:
    t = iv.truth
    return {"mean": _num(t.mean), "std": _num(t.std), "sent": int(t.sent),
            "received": int(t.received), "lost": int(t.lost)}


def _caches(iv: IntervalObservation, config: SynopsisConfig, hashers: Hashers):
    s = (iv.sender.hashes(config, hashers).packet, iv.sender.timestamps)
    r = (iv.receiver.hashes(config, hashers).packet, iv.receiver.timestamps)
    return s, r


def _estimate(config: SynopsisConfig, iv: IntervalObservation, hashers: Hashers,
              confidence: float) -> tuple[dict, dict]:
    sender, receiver = iv.synopses(config, hashers=hashers)
    if isinstance(config, LdaConfig):
        e = estimate_lda(sender, receiver, confidence=confidence)
        # The banks together sample a fraction 2**-z_0 of the stream (disjoint sets), so
        # the loss among the sampled packets scales to the stream by 2**z_0.
        est = {"mean": _num(e.mean_ns), "std": _num(e.std_ns),
               "lost": e.lost * 2 ** config.thresholds[0], "samples": e.samples,
               "ci": [_num(e.ci_low_ns), _num(e.ci_high_ns)]}
        return est, {"sent_sampled": e.sent, "received_sampled": e.received,
                     "lost_sampled": e.lost,
                     "usable_rows": e.usable_rows, "notes": list(e.notes)}
    if isinstance(config, RdaConfig):
        s_cache, r_cache = _caches(iv, config, hashers)
        e = estimate_rda(sender, receiver, sender_cache=s_cache, receiver_cache=r_cache,
                         confidence=confidence, hashers=hashers)
        est = {"mean": _num(e.mean_ns), "std": _num(e.std_ns), "lost": e.lost_found,
               "samples": e.samples, "ci": [_num(e.ci_low_ns), _num(e.ci_high_ns)]}
        return est, {"decoded": e.decoded, "exact": e.exact,
                     "reordered": e.reordered_found, "notes": list(e.notes)}
    if isinstance(config, LdsConfig):
        return _estimate_lds(config, sender, receiver, iv, hashers)
    raise TypeError(type(config).__name__)


def _estimate_lds(config: LdsConfig, sender, receiver, iv: IntervalObservation,
                  hashers: Hashers) -> tuple[dict, dict]:
    """LDS in a one-number table: the aggregate delay over the usable cells of the
    highest-rate row (each packet counted once), plus per-flow figures: the median
    relative error of the per-flow delay for flows of ≥ 100 packets (LDS §5.1)."""
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
    trace = iv.sender.trace
    flows = estimate_flows(sender, receiver, trace.flow_hashes(config, hashers))
    truth = iv.truth.per_flow(trace.flow_ids, trace.num_flows)
    big = truth["packets"] >= 100
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.abs(flows.delay_ns[big] - truth["mean"][big]) / np.abs(truth["mean"][big])
    rel = rel[np.isfinite(rel)]
    est = {"mean": _num(mean), "std": None,
           "lost": int((n_s.sum() - n_r.sum()) * scale), "samples": samples,
           "ci": [None, None]}
    return est, {"flows_100plus": int(big.sum()),
                 "flow_median_rel_error": _num(np.median(rel)) if rel.size else None,
                 "notes": ["LDS gives per-flow delays; std and a confidence interval of "
                           "the aggregate are not part of its estimator"]}


def run_scenario(scenario: Scenario, config: SynopsisConfig, *, runs: int = 1,
                 set_difference: int | None = None, confidence: float = 0.98,
                 trace=None, progress=None):
    """Yield a :class:`RunResult` for every run (and every interval of it).

    ``set_difference`` (RDA's §VII-B setup) replaces the scenario's loss by an exact number
    of lost plus reordered packets. ``trace`` replaces the scenario's synthetic trace (a
    capture, :func:`host_sw.pcap.capture_trace`).
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
    for run in range(runs):
        if set_difference is not None:
            intervals = [set_difference_interval(scenario, set_difference, run)]
        else:
            intervals = scenario.run(run, trace=trace).intervals
        for iv in intervals:
            est, details = _estimate(config, iv, hashers, confidence)
            details["interval"] = iv.interval
            details["reordered_true"] = int(iv.truth.reordered)
            result = RunResult(run, config.kind, config.config_id, _truth(iv), est, details)
            if progress:
                progress(result)
            yield result
