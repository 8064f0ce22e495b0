# SPDX-License-Identifier: BSD-2-Clause
"""RLI accuracy: the RLI paper's Fig. 5 (CDF of the per-flow relative error of the mean
delay at high, moderate and low utilisation) on our queueing channel, LDS and OPA on the
same traffic beside it, and the LDS paper's counter-case (per-flow delays uncorrelated across
flows: RLI with 1 kHz references against LDS, its Figs. 9–10).

Data flow (``docs/DESIGN.md``): :class:`host_sw.model.channel.Scenario` (fast-mode trace,
with RLI's reference packets inserted by :func:`host_sw.model.golden_rli.with_references`) ►
the channel (a RED queue, :mod:`host_sw.model.queueing`, for Fig. 5; per-flow delays for
the counter-case) ► the RLI golden model and :func:`host_sw.estimators.rli.estimate.estimate_flows`,
and the LDS golden model and :func:`host_sw.estimators.lds.estimate_flows`, on the same
received packets, and OPA (:func:`host_sw.model.golden_opa.opa_sender`,
:func:`host_sw.estimators.opa.recovery.recover_interval`: per-flow means of its recovered
per-packet delays) ► against :meth:`host_sw.model.observation.GroundTruth.per_flow` ► CSV, PNG,
table in ``bench/out/accuracy/`` (``docs/ACCURACY.md``, section RLI).

Fig. 5 setup: the paper simulates CAIDA OC-192 arrivals (5-tuple flows) through a RED
queue (10 000 packets, min_th 4 000, max_th 9 000, w_q 0.002, max_p 1/50) whose drain
rate sets the utilisation, with references injected by its adaptive algorithm. Ours: a
synthetic Poisson trace (5 Mpps, IMIX frames, Pareto-popular flows) through the same RED
queue at utilisations 0.88, 0.55, 0.22; references adaptive to the utilisation of a link
of the queue's drain rate (docs/SPEC.md "RLI": 1 in 10 below 20 %, 1 in 300 above 80 %)
and, for comparison, fixed 1 in 100. RLI's cells: 2**20 (per-flow state; the paper keeps
exact flow records). LDS: 4 rows × 17 500 cells (the LDS paper's 70 000 counters).
OPA: about 256 packets per group (8 192 groups for 2·10^6 packets), k = 4, the lossless
timestamp layer; its bytes per packet are the words plus the timestamp block.

Counter-case: the LDS paper's setting — delays that belong to flows, not to time: per
packet Weibull (shape 0.6, mean 100 µs) plus a per-flow extra of 0 (70 % of flows) or
400 µs (30 %), 27 kpps; RLI with one reference per ms (1 kHz), the references a flow of
their own on the same path.

Usage::

    .venv/bin/python -m bench.accuracy_rli           # full run (a few minutes)
    .venv/bin/python -m bench.accuracy_rli --quick   # smoke run (seconds)
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from host_sw.contracts.config import LdsConfig, OpaConfig, RliConfig
from host_sw.estimators.opa.recovery import recover_interval
from host_sw.estimators.lds import estimate_flows as lds_estimate_flows
from host_sw.estimators.rli.estimate import estimate_flows as rli_estimate_flows
from host_sw.estimators.rli.estimate import simulated_synopses
from host_sw.model.channel import Scenario
from host_sw.model.golden_opa import PacketRecords, opa_sender
from host_sw.model.queueing import QueueSpec
from host_sw.model.golden_rli import with_references

from bench.accuracy_common import DEFAULT_OUT, Progress, format_table, pyplot, write_csv
from bench.machine import machine

UTILISATIONS = (0.88, 0.55, 0.22)
QUANTILES = (0.25, 0.5, 0.75, 0.9)
SIZE_BINS = ((1, 10), (10, 100), (100, 1000), (1000, None))
RLI_CELLS = 1 << 20
LDS = dict(rows=4, cells=17_500, row_thresholds=(0, 0, 0, 0))


def _truth(iv, trace):
    """Per-flow packets and true mean delay (ns) of the interval's packets seen by both."""
    t = iv.truth.per_flow(trace.flow_ids, trace.num_flows)
    return t["packets"], t["mean"]


def _rel(est, true):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.abs(est - true) / np.abs(true)


def _lds_errors(iv, trace, seed):
    config = LdsConfig(seed=seed, **LDS)
    s, r = iv.synopses(config)
    est = lds_estimate_flows(s, r, trace.flow_hashes(config))
    return est.delay_ns


def _rli_errors(iv, trace, config):
    s, r, stats = simulated_synopses(config, iv)
    est = rli_estimate_flows(r, trace.flow_hashes(config), sender=s)
    return est.mean_ns, est.collided, stats


def _opa_point(config, obs):
    """A point's per-packet records (its counted packets, in its order) and their ids."""
    h = obs.hashes(config)
    counted = (np.ones(len(obs), bool) if h.counted is None else np.asarray(h.counted, bool))
    ticks = np.asarray(obs.ticks(config), dtype=np.int64)
    return (PacketRecords(np.asarray(h.packet, np.uint64)[counted], ticks[counted]),
            np.asarray(obs.packet_ids)[counted])


def _opa_errors(iv, trace, seed):
    """OPA's per-flow mean delay (ns; NaN for a flow none of whose packets is recovered)
    and its figures: groups, bytes per packet (words + timestamp block), recovered
    fraction; every recovered delay is checked against the truth."""
    sent = int(iv.truth.sent)
    config = OpaConfig(groups=1 << max(4, math.ceil(math.log2(max(sent, 1) / 256))),
                       seed=seed)
    s, _ = _opa_point(config, iv.sender)
    r, r_ids = _opa_point(config, iv.receiver)
    syn, block = opa_sender(config, s)
    res = recover_interval(syn, block, r)
    both = np.argsort(iv.truth.both_ids)
    at = both[np.searchsorted(iv.truth.both_ids, r_ids, sorter=both)]
    truth = np.asarray(iv.truth.delays, np.int64)[at]
    assert np.array_equal(res.recovered_delays * config.tick_ns, truth[res.recovered])
    flows = trace.flow_ids[r_ids[res.recovered]]
    n = np.bincount(flows, minlength=trace.num_flows)
    total = np.bincount(flows, weights=res.recovered_delays * config.tick_ns,
                        minlength=trace.num_flows)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, total / np.maximum(n, 1), np.nan)
    stats = {"groups": config.groups,
             "bytes_per_packet": (config.groups * config.layout.width / 8 + len(block))
             / max(len(s), 1),
             "recovered": float(res.recovered.mean()) if len(r) else math.nan,
             "unrecovered_groups": res.unrecovered_groups}
    return mean, stats


def _summary(name, rel, packets, min_packets):
    sel = (packets >= min_packets) & np.isfinite(rel)
    q = np.quantile(rel[sel], QUANTILES) if sel.any() else [math.nan] * len(QUANTILES)
    row = {"estimator": name, "min_packets": min_packets, "flows": int(sel.sum())}
    row.update({f"p{int(p * 100)}": float(v) for p, v in zip(QUANTILES, q)})
    return row


def fig5(packets, flows, seed, progress, frame_bytes="imix"):
    """Per utilisation and estimator: quantiles of the per-flow relative error."""
    rows, cdfs, opa_rows = [], {}, []
    for u in UTILISATIONS:
        sc = Scenario(packets=packets, flows=flows, rate_pps=5e6, delay="constant:value=0",
                      frame_bytes=frame_bytes,
                      queue=f"red:utilisation={u}", fast=True, seed=seed)
        base = sc.trace()
        drain = QueueSpec(utilisation=u).drain_for(base.timestamps, base.frame_lengths)
        variants = {"RLI adaptive": RliConfig(cells=RLI_CELLS, ref_packets=0,
                                              adapt_link_Bps=drain),
                    "RLI 1 in 100": RliConfig(cells=RLI_CELLS, ref_packets=100)}
        for name, config in variants.items():
            trace, _ = with_references(base, config)
            iv = sc.run(0, trace=trace).intervals[0]
            n, true = _truth(iv, trace)
            est, collided, stats = _rli_errors(iv, trace, config)
            rel = np.where(collided, np.nan, _rel(est, true))
            for m in (1, 100):
                rows.append({"utilisation": u, **_summary(name, rel, n, m),
                             "references": stats.references, "dropped": iv.truth.lost,
                             "true_mean_ns": iv.truth.mean})
            cdfs[(u, name)] = np.sort(rel[(n >= 1) & np.isfinite(rel)])
            if name == "RLI adaptive":
                rel_lds = _rel(_lds_errors(iv, trace, seed + 1), true)
                for m in (1, 100):
                    rows.append({"utilisation": u, **_summary("LDS 70k", rel_lds, n, m),
                                 "references": 0, "dropped": iv.truth.lost,
                                 "true_mean_ns": iv.truth.mean})
                cdfs[(u, "LDS 70k")] = np.sort(rel_lds[(n >= 1) & np.isfinite(rel_lds)])
                opa_mean, opa = _opa_errors(iv, trace, seed + 2)
                rel_opa = _rel(opa_mean, true)
                for m in (1, 100):
                    rows.append({"utilisation": u, **_summary("OPA", rel_opa, n, m),
                                 "references": 0, "dropped": iv.truth.lost,
                                 "true_mean_ns": iv.truth.mean})
                opa_rows.append({"utilisation": u, "packets": int(iv.truth.sent),
                                 "dropped": iv.truth.lost, **opa})
                cdfs[(u, "OPA")] = np.sort(rel_opa[(n >= 1) & np.isfinite(rel_opa)])
                progress(f"u={u} OPA: g {opa['groups']}, {opa['bytes_per_packet']:.3f} B/pkt, "
                         f"recovered {opa['recovered']:.6f}")
            progress(f"u={u} {name}: median {np.median(cdfs[(u, name)]):.4f}, "
                     f"{stats.references} references")
    return rows, cdfs, opa_rows


def counter_case(packets, flows, seed, progress):
    """The LDS paper's setting: per-flow delays; RLI at 1 kHz vs LDS, by flow size."""
    sc = Scenario(packets=packets, flows=flows, rate_pps=27_000, shape=0.95,
                  delay="weibull:shape=0.6,mean=100us",
                  flow_extra="bimodal:a=0,b=400us,p=0.7", fast=True, seed=seed)
    config = RliConfig(cells=RLI_CELLS, ref_packets=0, ref_period_ticks=1_000_000)
    trace, _ = with_references(sc.trace(), config)
    iv = sc.run(0, trace=trace).intervals[0]
    n, true = _truth(iv, trace)
    est, collided, stats = _rli_errors(iv, trace, config)
    rels = {"RLI 1 kHz": np.where(collided, np.nan, _rel(est, true)),
            "LDS 70k": _rel(_lds_errors(iv, trace, seed + 1), true),
            "all-packet mean": _rel(np.full(len(true), iv.truth.mean), true)}
    rows = []
    for lo, hi in SIZE_BINS:
        sel = (n >= lo) & (n < (hi or np.inf))
        for name, rel in rels.items():
            r = rel[sel & np.isfinite(rel)]
            rows.append({"bin": f"{lo}-{hi - 1 if hi else ''}", "estimator": name,
                         "flows": int(r.size),
                         "median": float(np.median(r)) if r.size else math.nan,
                         "p95": float(np.quantile(r, 0.95)) if r.size else math.nan})
    progress(f"counter-case: {stats.references} references")
    return rows


def _plot(cdfs, path):
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6), sharey=True)
    for ax, u in zip(axes, UTILISATIONS):
        for (uu, name), rel in cdfs.items():
            if uu == u and rel.size:
                ax.plot(np.maximum(rel, 1e-4), np.arange(1, rel.size + 1) / rel.size,
                        label=name)
        ax.set_xscale("log")
        ax.set_xlim(1e-4, 10)
        ax.set_title(f"utilisation ≈ {u:.0%}")
        ax.set_xlabel("relative error of the per-flow mean")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("CDF of flows")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=2_000_000)
    parser.add_argument("--flows", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--frame-bytes", default="imix",
                        help="Fig. 5 frames: imix (default) or a fixed length")
    parser.add_argument("--prefix", default="rli", help="output file prefix")
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if args.quick:
        args.packets, args.flows = 60_000, 500
    progress = Progress()
    start, cpu = time.perf_counter(), time.process_time()
    rows, cdfs, opa_rows = fig5(args.packets, args.flows, args.seed, progress,
                                args.frame_bytes)
    counter = counter_case(args.packets // 2, args.flows, args.seed + 100, progress)
    write_csv(args.out / f"{args.prefix}_fig5.csv", rows)
    write_csv(args.out / f"{args.prefix}_counter_case.csv", counter)
    write_csv(args.out / f"{args.prefix}_fig5_opa.csv", opa_rows)
    _plot(cdfs, args.out / f"{args.prefix}_fig5.png")
    table = (format_table(rows, [("utilisation", "u"), ("estimator", "estimator"),
                                 ("min_packets", "≥pkts"), ("flows", "flows"),
                                 ("p25", "p25"), ("p50", "median"), ("p75", "p75"),
                                 ("p90", "p90"), ("references", "refs"),
                                 ("true_mean_ns", "mean ns")])
             + "\n\n" + format_table(counter, [("bin", "flow size"), ("estimator", "estimator"),
                                               ("flows", "flows"), ("median", "median"),
                                               ("p95", "p95")])
             + "\n\nOPA on the Fig. 5 traffic\n"
             + format_table(opa_rows, [("utilisation", "u"), ("packets", "packets"),
                                       ("dropped", "dropped"), ("groups", "groups"),
                                       ("bytes_per_packet", "B/packet"),
                                       ("recovered", "recovered"),
                                       ("unrecovered_groups", "unrec. groups")]))
    (args.out / f"{args.prefix}_table.txt").write_text(table + "\n")
    meta = {"packets": args.packets, "flows": args.flows, "seed": args.seed,
            "frame_bytes": args.frame_bytes,
            "wall_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu,
            "machine": machine()}
    (args.out / f"{args.prefix}_meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(table)
    print(f"wall {meta['wall_s']:.1f} s, cpu {meta['cpu_s']:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
