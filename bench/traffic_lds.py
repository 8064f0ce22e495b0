# SPDX-License-Identifier: BSD-2-Clause
"""Speed of the traffic/channel simulator and speed and accuracy of the LDS per-flow
estimators at the LDS paper's §5.1 scale.

Figures (printed, and written to ``bench/out/traffic_lds.json``):

Times are CPU seconds of this process (``time.process_time``), single-threaded numpy.

* ``trace_real`` / ``trace_fast`` — :func:`host_sw.model.traffic.synthetic_trace` of ``N``
  packets (default 5 M) with real header windows, and in fast mode;
* ``hash_real`` — hashing those windows for the default LDA configuration;
* ``channel`` — :meth:`host_sw.model.channel.Scenario.run` (delays, 1 % loss, one interval,
  observations and truth) on the fast trace;
* ``lds_5_1`` — a stand-in for the §5.1 setup (the paper's trace is not public): 7.76 M
  packets in 146 000 flows (fast mode, 27 kpps as the paper's trace) with Pareto
  popularity of shape 0.95: mean 53 packets per flow, flows under 100 packets carry
  ~22 % of the packets (paper: 20 %), P[size > 50] ≈ 7 % (the paper's §3.1 fit implies
  4.4 %; one Pareto shape cannot match both) — per-packet Weibull delays
  (shape 0.6, mean 100 µs) plus a per-flow extra delay (0 or 400 µs, 30 % of flows —
  the paper's two inbound delay modes), no loss; LDS with R = 4 rows, k = 1, α = 0.1,
  p = 1 and 1 750, 17 500 and 175 000 cells per row (7 000, 70 000, 700 000 counters).
  Reports median and 95th percentile relative error of the per-flow delay by flow size,
  and the time of :func:`host_sw.estimators.lds.estimate_flows` over all flows;
* ``lds_5_2`` — the same traffic under 0.1 %, 0.5 % and 1 % uniform loss, LDS with k = 5
  and 5 × 17 500 cells per row: multi-bank per-row sampling (§4.2) against fixed rates,
  and multi-bank with ``min_cell_packets=16`` (beyond the paper: sparse cells may not
  define the minimum).

Usage::

    .venv/bin/python -m bench.traffic_lds [--packets 5000000] [--quick]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

from host_sw.model.channel import Scenario
from host_sw.contracts.config import LdaConfig, LdsConfig
from host_sw.estimators.lds import estimate_flows
from host_sw.model.traffic import synthetic_trace

from bench import OUT, ROOT

SIZE_BINS = [(1, 10), (10, 100), (100, 500), (500, 1000), (1000, None)]


def timed(fn):
    """Result and seconds of CPU time of this process (the machine is shared, so wall
    time mostly measures the other jobs; the numpy work here is single-threaded)."""
    t = time.process_time()
    out = fn()
    return out, time.process_time() - t


def speed(packets: int) -> dict:
    res = {}
    trace, dt = timed(lambda: synthetic_trace(packets=packets, flows=100_000, seed=1))
    res["trace_real"] = {"packets": packets, "seconds": dt, "mpps": packets / dt / 1e6}
    _, dt = timed(lambda: trace.hashes(LdaConfig()))
    res["hash_real"] = {"packets": packets, "seconds": dt, "mpps": packets / dt / 1e6}
    del trace
    fast, dt = timed(lambda: synthetic_trace(packets=packets, flows=100_000, seed=1,
                                             fast=True))
    res["trace_fast"] = {"packets": packets, "seconds": dt, "mpps": packets / dt / 1e6}
    sc = Scenario(packets=packets, flows=100_000, loss=0.01, fast=True, seed=1)
    _, dt = timed(lambda: sc.run(trace=fast))
    res["channel"] = {"packets": packets, "seconds": dt, "mpps": packets / dt / 1e6}
    return res


def lds_accuracy(packets: int, flows: int, cells_per_row) -> dict:
    sc = Scenario(packets=packets, flows=flows, fast=True, rate_pps=27_000, shape=0.95,
                  delay="weibull:shape=0.6,mean=100us",
                  flow_extra="bimodal:a=0,b=400us,p=0.7", seed=51)
    sim, dt_sim = timed(sc.run)
    iv = sim.intervals[0]
    pf = iv.truth.per_flow(sim.trace.flow_ids, sim.trace.num_flows)
    # relative error needs a non-zero true mean: a 1-packet flow can see a 0 ns delay
    active = (pf["packets"] > 0) & (pf["mean"] > 0)
    out = {"packets": packets, "flows_with_packets": int((pf["packets"] > 0).sum()),
           "flows_with_zero_mean_delay": int(((pf["packets"] > 0) & (pf["mean"] == 0)).sum()),
           "simulate_seconds": dt_sim, "configs": {}}
    for cells in cells_per_row:
        cfg = LdsConfig(rows=4, cells=cells, vlda_cells=1, row_thresholds=(0, 0, 0, 0))
        (s, r), dt_syn = timed(lambda: iv.synopses(cfg))
        table = sim.trace.flow_hashes(cfg)
        est, dt_est = timed(lambda: estimate_flows(s, r, table, alpha=0.1))
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = np.abs(est.delay_ns - pf["mean"]) / pf["mean"]
        bins = {}
        for lo, hi in SIZE_BINS:
            sel = active & (pf["packets"] >= lo) & ((pf["packets"] < hi) if hi else True)
            if sel.any():
                bins[f"{lo}-{hi - 1 if hi else 'inf'}"] = {
                    "flows": int(sel.sum()),
                    "median_rel_error": float(np.median(rel[sel])),
                    "p95_rel_error": float(np.percentile(rel[sel], 95))}
        out["configs"][f"4x{cells}"] = {
            "counters": 4 * cells, "synopses_seconds": dt_syn,
            "estimate_seconds": dt_est, "flows_estimated": int(len(est)),
            "no_estimate": int(np.isnan(est.delay_ns[active]).sum()), "by_flow_size": bins}
    return out


def lds_loss(packets: int, flows: int, cells_per_row: int, losses) -> dict:
    """§5.2 stand-in: uniform loss; 4 rows of k = 5 cells, α = 0.1; multi-bank sampling
    rates (1/128, 1/8, 1/2, 1 — the nearest powers of two to the paper's 0.01, 0.1,
    0.5, 1) against fixed rates 1/16 and 1 in every row."""
    from host_sw.contracts.config_base import threshold_for_rate
    base = dict(packets=packets, flows=flows, fast=True, rate_pps=27_000, shape=0.95,
                delay="weibull:shape=0.6,mean=100us", flow_extra="bimodal:a=0,b=400us,p=0.7",
                seed=51)
    trace = Scenario(**base).trace()
    multi = tuple(threshold_for_rate(p) for p in (0.01, 0.1, 0.5, 1.0))
    layouts = {"multi-bank 0.01/0.1/0.5/1": (multi, 1),
               "multi-bank, min_cell_packets=16": (multi, 16),
               "fixed 1/16": ((4, 4, 4, 4), 1), "fixed 1": ((0, 0, 0, 0), 1)}
    out = {"packets": packets, "cells_per_row": cells_per_row, "k": 5, "results": {}}
    for loss in losses:
        iv = Scenario(**base, loss=loss).run(trace=trace).intervals[0]
        pf = iv.truth.per_flow(trace.flow_ids, trace.num_flows)
        for name, (thresholds, min_cell) in layouts.items():
            cfg = LdsConfig(rows=4, cells=cells_per_row, vlda_cells=5,
                            row_thresholds=thresholds)
            s, r = iv.synopses(cfg)
            est = estimate_flows(s, r, trace.flow_hashes(cfg), alpha=0.1,
                                 min_cell_packets=min_cell)
            with np.errstate(invalid="ignore", divide="ignore"):
                rel = np.abs(est.delay_ns - pf["mean"]) / pf["mean"]
            row = {}
            for lo in (100, 1000):
                sel = (pf["packets"] >= lo) & (pf["mean"] > 0)
                ok = sel & ~np.isnan(est.delay_ns)
                row[f">={lo}"] = {"flows": int(sel.sum()),
                                  "no_estimate": int((sel & np.isnan(est.delay_ns)).sum()),
                                  "median_rel_error": float(np.median(rel[ok])),
                                  "p90_rel_error": float(np.percentile(rel[ok], 90))}
            out["results"][f"loss {loss:g} / {name} {thresholds}"] = row
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=5_000_000)
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    args = ap.parse_args()
    if args.quick:
        packets, lds_packets, lds_flows = 200_000, 300_000, 6000
    else:
        packets, lds_packets, lds_flows = args.packets, 7_760_000, 146_000
    result = {"command": "python -m bench.traffic_lds" + (" --quick" if args.quick else ""),
              "machine": {"python": platform.python_version(), "numpy": np.__version__,
                          "platform": platform.platform()},
              "speed": speed(packets),
              "lds_5_1": lds_accuracy(lds_packets, lds_flows, (1750, 17_500, 175_000)),
              "lds_5_2": lds_loss(lds_packets, lds_flows, 5 * 17_500, (0.001, 0.005, 0.01))}
    for name, v in result["speed"].items():
        print(f"{name:12s} {v['packets']:>9d} packets  {v['seconds']:6.2f} s CPU  "
              f"{v['mpps']:6.2f} Mpps")
    lds = result["lds_5_1"]
    print(f"LDS §5.1 stand-in: {lds['packets']} packets, {lds['flows_with_packets']} flows")
    for name, c in lds["configs"].items():
        print(f"  {name:9s} estimate {c['flows_estimated']} flows in "
              f"{c['estimate_seconds']:.2f} s; no estimate: {c['no_estimate']}")
        for b, v in c["by_flow_size"].items():
            print(f"    flows {b:>9s} ({v['flows']:6d}): median {100 * v['median_rel_error']:7.3f} %"
                  f"  p95 {100 * v['p95_rel_error']:7.3f} %")
    print("LDS §5.2 stand-in (uniform loss, k = 5, 4 × 87 500 cells):")
    for name, row in result["lds_5_2"]["results"].items():
        print(f"  {name}")
        for b, v in row.items():
            print(f"    flows {b:>6s} ({v['flows']:5d}): median {100 * v['median_rel_error']:7.3f} %"
                  f"  p90 {100 * v['p90_rel_error']:7.3f} %  no estimate {v['no_estimate']}")
    out = OUT / ("traffic_lds_quick.json" if args.quick else "traffic_lds.json")
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
