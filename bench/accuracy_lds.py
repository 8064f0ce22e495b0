# SPDX-License-Identifier: BSD-2-Clause
"""LDS accuracy: the LDS paper's §5.1 / Fig. 10 (top) (Sanjuàs-Cuxart et al.) with our
golden model and per-flow estimator: median and 95th percentile of the per-flow relative
error of the average delay, binned by flow size, for sketches of 7 000, 70 000 and
700 000 counters (4 rows of 1 750, 17 500, 175 000 cells), k = 1, p = 1, no loss.

Data flow (``docs/DESIGN.md``): :class:`host_sw.model.channel.Scenario` (fast-mode heavy-tailed
trace, delays with a per-flow mode) ► :func:`host_sw.model.golden_lda_rda_lds.update` ►
:func:`host_sw.estimators.lds.estimate_flows` against
:meth:`host_sw.model.observation.GroundTruth.per_flow` ► CSV + PNG in ``bench/out/accuracy/``
and a summary table (``docs/ACCURACY.md``).

Setup: the paper's trace (7.76 M packets, ~146 000 flows, 27 kpps, inbound delays with
two modes, its Fig. 8) is not public. We use a synthetic trace of the same size: 7.76 M
packets at 27 kpps over 150 000 flows with Pareto (shape 0.95) popularity — about
150 000 flows get packets and flows under 100 packets carry 19 % of the packets (the
paper: "20 %"). Delays (``--delay-model``): ``flow-modes`` (default) — a per-packet
Weibull (shape 0.6, mean 100 µs) plus a per-flow extra delay of 0 (70 % of flows) or
400 µs (30 %), so packet delays are bimodal as in the paper's Fig. 8 and flows differ in
mean delay (what a per-flow estimator must resolve); ``packet-modes`` — each packet
100 µs or 500 µs (p = 0.7) independently, so flows hardly differ. 10 runs: the same
trace and delays, a new hash seed (``config.seed``) per run.
Relative error is ``|estimate − true| / true`` of each flow's mean delay; flows without
a usable cell (none here: no loss) would count as missing.

Usage::

    .venv/bin/python -m bench.accuracy_lds            # full run (~10 min on 2 cores)
    .venv/bin/python -m bench.accuracy_lds --delay-model packet-modes
    .venv/bin/python -m bench.accuracy_lds --quick    # smoke run (seconds)
    .venv/bin/python -m bench.accuracy_lds --loss 0.01 --vlda-cells 8 --cells 16384
                                                      # lossy (issue 12): per-row offsets
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from host_sw.model.channel import Scenario
from host_sw.contracts.config import LdsConfig
from host_sw.estimators.lds import estimate_flows
from host_sw.model.golden_lda_rda_lds import update

from bench.accuracy_common import DEFAULT_OUT, Progress, format_table, pyplot, write_csv
from bench.machine import machine

#: (low, high) packets per flow; high exclusive, None = no upper bound.
SIZE_BINS = ((1, 10), (10, 100), (100, 500), (500, 1000), (1000, 10_000), (10_000, None))
CELLS_PER_ROW = (1750, 17_500, 175_000)
ROWS = 4
BASE_SEED = 0x3DA5EED
TRACE_SEED = 50
DELAY = "weibull:shape=0.6,mean=100us"
FLOW_EXTRA = "bimodal:a=0,b=400us,p=0.7"
#: Delay models: (per-packet delay, per-flow extra delay). ``flow-modes`` (default): the
#: two modes belong to flows (a flow on the slow path stays there), so flows' mean delays
#: differ by up to 5× — a hard case for interference. ``packet-modes``: each packet is in
#: the fast (100 µs) or slow (500 µs) mode independently, so every flow has about the
#: same mean delay — an easy case. The paper's trace lies somewhere between.
DELAY_MODELS = {"flow-modes": (DELAY, FLOW_EXTRA),
                "packet-modes": ("bimodal:a=100us,b=500us,p=0.7", None)}

#: What the paper reports for 70 000 counters (§5.1 text): bin → median relative error.
PAPER_70K_MEDIAN = {"500-999": 0.012, "1000-9999": 0.004, ">=10000": 0.0006}


def bin_label(lo: int, hi: int | None) -> str:
    return f">={lo}" if hi is None else f"{lo}-{hi - 1}"


def flow_errors(iv, trace, config: LdsConfig) -> tuple[np.ndarray, np.ndarray]:
    """Per-flow (true packets, relative error of the mean delay) for the flows seen by
    both points, from golden-model synopses under ``config``. Flows without an
    estimate get NaN."""
    full = trace.hashes(config)
    trace.clear_cache()  # ≈ 8 + 8·rows bytes per packet and configuration
    sides = [update(config, full.select(obs.indices), obs.timestamps)
             for obs in (iv.sender, iv.receiver)]
    del full
    flow_table = trace.flow_hashes(config)
    trace.clear_cache()
    truth = iv.truth.per_flow(trace.flow_ids, trace.num_flows)
    active = truth["packets"] > 0
    est = estimate_flows(sides[0], sides[1], flow_table[:, active])
    true_mean = truth["mean"][active]
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.abs(est.delay_ns - true_mean) / np.abs(true_mean)
    return truth["packets"][active], rel


def binned(packets: np.ndarray, rel: np.ndarray) -> list[dict]:
    """Median and 95th percentile of ``rel`` per flow-size bin."""
    out = []
    for lo, hi in SIZE_BINS:
        sel = (packets >= lo) & (packets < (hi if hi is not None else np.iinfo(np.int64).max))
        vals = rel[sel]
        ok = vals[np.isfinite(vals)]
        out.append({"bin": bin_label(lo, hi), "flows": int(sel.sum()),
                    "missing": int(vals.size - ok.size),
                    "median": float(np.median(ok)) if ok.size else math.nan,
                    "p95": float(np.percentile(ok, 95)) if ok.size else math.nan})
    return out


def run_lds(*, packets: int = 7_760_000, flows: int = 150_000, rate_pps: float = 27_000,
            cells_per_row=CELLS_PER_ROW, runs: int = 10, delay: str = DELAY,
            flow_extra: str | None = FLOW_EXTRA, loss: float = 0.0, vlda_cells: int = 1,
            progress=None):
    """Per (run, counters, bin) records, and the pooled per-flow errors of every
    configuration (``{cells: (packets, rel)}`` concatenated over the runs). ``loss``
    (uniform) and ``vlda_cells`` (k) for the lossy setup of issue 12 (1 %, k = 8)."""
    progress = progress or (lambda msg: None)
    scenario = Scenario(packets=packets, flows=flows, shape=0.95, rate_pps=rate_pps,
                        fast=True, delay=delay, flow_extra=flow_extra, loss=loss,
                        seed=TRACE_SEED)
    sim = scenario.run(0)
    iv, trace = sim.intervals[0], sim.trace
    counts = np.bincount(trace.flow_ids, minlength=trace.num_flows)
    progress(f"trace: {len(trace)} packets, {int((counts > 0).sum())} flows with packets, "
             f"{counts[(counts > 0) & (counts < 100)].sum() / len(trace):.1%} of packets in "
             f"flows < 100 packets; true mean delay {iv.truth.mean / 1e3:.1f} µs")
    rows, pooled = [], {}
    for run in range(runs):
        for cells in cells_per_row:
            config = LdsConfig(rows=ROWS, cells=cells, vlda_cells=vlda_cells,
                               row_thresholds=(0,) * ROWS, seed=BASE_SEED + 7919 * run)
            fpk, rel = flow_errors(iv, trace, config)
            p, r = pooled.get(cells, (np.zeros(0, np.int64), np.zeros(0)))
            pooled[cells] = (np.concatenate([p, fpk]), np.concatenate([r, rel]))
            for b in binned(fpk, rel):
                rows.append({"run": run, "counters": ROWS * cells, "cells_per_row": cells,
                             **b})
        progress(f"run {run + 1}/{runs} done ({len(cells_per_row)} sketch sizes)")
    return rows, pooled


def summarise(rows: list[dict], pooled: dict) -> list[dict]:
    """Per (counters, bin): flows per run, pooled median and 95th percentile over all
    runs' flows, and the range of the per-run medians."""
    out = []
    for cells, (fpk, rel) in sorted(pooled.items()):
        ok = rel[np.isfinite(rel)]
        runs = len({r["run"] for r in rows}) or 1
        out.append({"counters": ROWS * cells, "bin": "all",
                    "flows_per_run": rel.size // runs, "median": float(np.median(ok)) if ok.size else math.nan,
                    "p95": float(np.percentile(ok, 95)) if ok.size else math.nan,
                    "run_median_min": math.nan, "run_median_max": math.nan,
                    "paper_median": "", "missing": int(rel.size - ok.size)})
        for b in binned(fpk, rel):
            per_bin = [r for r in rows if r["cells_per_row"] == cells and r["bin"] == b["bin"]]
            runs = len(per_bin)
            per_run = [r["median"] for r in per_bin if math.isfinite(r["median"])]
            out.append({"counters": ROWS * cells, "bin": b["bin"],
                        "flows_per_run": b["flows"] // max(runs, 1),
                        "median": b["median"], "p95": b["p95"],
                        "run_median_min": min(per_run) if per_run else math.nan,
                        "run_median_max": max(per_run) if per_run else math.nan,
                        "paper_median": (PAPER_70K_MEDIAN.get(b["bin"], "")
                                         if ROWS * cells == 70_000 else ""),
                        "missing": b["missing"]})
    return out


def plot(summary: list[dict], out: Path, model: str = "flow-modes") -> Path:
    """lds_fig10.png: median (solid) and 95th percentile (dashed) by flow-size bin."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.6))
    labels = [bin_label(lo, hi) for lo, hi in SIZE_BINS]
    x = np.arange(len(labels))
    for i, counters in enumerate(sorted({r["counters"] for r in summary})):
        s = {r["bin"]: r for r in summary if r["counters"] == counters}
        med = [s[b]["median"] if b in s else np.nan for b in labels]
        p95 = [s[b]["p95"] if b in s else np.nan for b in labels]
        ax.plot(x, med, "o-", color=f"C{i}", label=f"{counters} counters, median")
        ax.plot(x, p95, "s--", color=f"C{i}", alpha=0.7, label=f"{counters} counters, 95-pct")
    px = [labels.index(b) for b in PAPER_70K_MEDIAN]
    ax.plot(px, list(PAPER_70K_MEDIAN.values()), "k*", ms=11,
            label="paper, 70000 counters, median (§5.1 text)")
    ax.set_xticks(x, labels)
    ax.set_yscale("log")
    ax.set_xlabel("flow size (packets)")
    ax.set_ylabel("per-flow relative error of mean delay")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(f"LDS Fig. 10 (top) reproduction, delays {model}: 4 rows, k = 1, p = 1, "
                 f"no loss", fontsize=10)
    fig.tight_layout()
    path = out / f"lds_{model}_fig10.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


COLUMNS = [("counters", "counters"), ("bin", "flow size"), ("flows_per_run", "flows"),
           ("median", "median"), ("p95", "95-pct"), ("run_median_min", "run med min"),
           ("run_median_max", "run med max"), ("paper_median", "paper median"),
           ("missing", "no estimate")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 300 000 packets over 6 000 flows, counters / 25, 2 runs")
    ap.add_argument("--packets", type=int, default=7_760_000)
    ap.add_argument("--flows", type=int, default=150_000)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--delay-model", choices=sorted(DELAY_MODELS), default="flow-modes",
                    help="where the two delay modes live (see DELAY_MODELS)")
    ap.add_argument("--loss", type=float, default=0.0, help="uniform loss rate (0..1)")
    ap.add_argument("--vlda-cells", type=int, default=1, help="k, cells per virtual LDA")
    ap.add_argument("--cells", type=int, action="append",
                    help="cells per row (repeatable; default the paper's three sizes)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    delay, flow_extra = DELAY_MODELS[args.delay_model]
    model = args.delay_model
    if args.loss or args.vlda_cells != 1:
        model += f"_loss{args.loss:g}_k{args.vlda_cells}"
    cells = tuple(args.cells) if args.cells else CELLS_PER_ROW
    if args.quick:
        args.packets, args.flows, args.runs = 300_000, 6_000, 2
        cells = tuple(c // 25 for c in CELLS_PER_ROW)
    progress = Progress()
    rows, pooled = run_lds(packets=args.packets, flows=args.flows, cells_per_row=cells,
                           runs=args.runs, delay=delay, flow_extra=flow_extra,
                           loss=args.loss, vlda_cells=args.vlda_cells, progress=progress)
    summary = summarise(rows, pooled)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(args.out / f"lds_{model}_runs.csv", rows)
    write_csv(args.out / f"lds_{model}_summary.csv", summary)
    path = plot(summary, args.out, model)
    meta = {"packets": args.packets, "flows": args.flows, "runs": args.runs,
            "cells_per_row": list(cells), "delay_model": model, "delay": delay,
            "flow_extra": flow_extra, "loss": args.loss, "vlda_cells": args.vlda_cells,
            "machine": machine(), "seconds": round(time.perf_counter() - progress.start, 1),
            "cpu_seconds": round(time.process_time(), 1)}
    (args.out / f"lds_{model}_meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(format_table(summary, COLUMNS))
    print(f"\nwrote {args.out / f'lds_{model}_runs.csv'}, "
          f"{args.out / f'lds_{model}_summary.csv'}, {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
