# SPDX-License-Identifier: BSD-2-Clause
"""RDA accuracy: the RDA paper's Figs. 7–8 (Huang et al., §VII-B "Varying Set
Difference") with our golden model and estimators: relative error of the mean and of the
standard deviation of RDA, LDA and FineComb (ideal repair) as the set difference grows.

Data flow (``docs/DESIGN.md``): :class:`host_sw.model.channel.Scenario` (fast-mode trace, Weibull
delays) ► an interval whose sender and receiver sets differ by ``d`` packets (half lost,
half reordered in from the previous interval, as
:func:`host_sw.estimators.simulate.set_difference_intervals`) ► :func:`host_sw.model.golden_lda_rda_lds.update` ►
:func:`~host_sw.estimators.rda.estimate.estimate_rda` (with both caches),
:func:`~host_sw.estimators.lda.estimate_lda`,
:func:`~host_sw.estimators.baselines.finecomb_ideal` ► CSV + PNG in
``bench/out/accuracy/`` and a summary table (``docs/ACCURACY.md``).

Setup: the paper replays real traces (DC: 2.04 M packets, Univ: 1.69 M) that we do not
have; we use a synthetic fast-mode trace of 2 000 000 packets (5 Mpps Poisson, Weibull
shape 0.6, mean 0.2 µs delays — the LDA paper's model that the RDA paper adopts). RDA:
k = 2 banks, 5 000 buckets in total (2 × 2 500; the paper's Theorem-2 remark
``5000 / (2k) ≈ 1250`` counts all buckets). FineComb: 5 000 buckets, ideal repair (the
paper's choice). LDA: the LDA paper's recommended two-bank LDA (tuned for 0.5 % and
10 % loss, α = 0.5), 2 × 2 048 = 4 096 counters (rows are a power of two; the nearest to
5 000 from below). Set difference 0 … 10 000, 10 runs per point: each run draws new
delays and new lost packets and uses a new hash seed for all three synopses.

The set-difference intervals come from
:func:`~host_sw.estimators.simulate.set_difference_intervals`: one trace of ``N + max(d)/2``
packets and one channel draw per run, shared by every ``d``.

Usage::

    .venv/bin/python -m bench.accuracy_rda            # full run (~10 min on 2 cores)
    .venv/bin/python -m bench.accuracy_rda --quick    # smoke run (seconds)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time
from pathlib import Path

import numpy as np

from host_sw.model.channel import Scenario
from host_sw.contracts.config import LdaConfig, RdaConfig
from host_sw.estimators.baselines import finecomb_ideal
from host_sw.estimators.lda import estimate_lda, tuned_thresholds
from host_sw.estimators.rda.estimate import estimate_rda
from host_sw.model.golden_lda_rda_lds import Hashers, update
from host_sw.estimators.simulate import set_difference_intervals

from bench.accuracy_common import (
    DEFAULT_OUT, Progress, format_table, packet_hashes, pyplot, relative_error, select,
    write_csv,
)
from bench.machine import machine

DIFFERENCES = (0, 500, 1000, 2000, 2500, 3000, 4000, 6000, 10_000)
BASE_SEED = 0x2DA5EED
TRACE_SEED = 7
DELAY = "weibull:shape=0.6,mean=0.2us"


def configs(run: int, *, packets: int, rda_buckets: int = 5000, lda_rows: int = 2048,
            fc_buckets: int = 5000):
    """(RDA, LDA, FineComb bucket count) of run ``run``."""
    seed = BASE_SEED + 7919 * run
    rda = RdaConfig(banks=2, buckets_per_bank=rda_buckets // 2, seed=seed)
    lda = LdaConfig(banks=2, rows=lda_rows, seed=seed,
                    thresholds=tuned_thresholds(lda_rows, [0.005 * packets, 0.1 * packets]))
    return rda, lda, fc_buckets


def estimate_all(iv, packet, rda: RdaConfig, lda: LdaConfig, fc_buckets: int,
                 hashers: Hashers) -> dict[str, dict]:
    """RDA (decoded and repaired with both caches), LDA and FineComb estimates of one
    interval; ``packet`` is the packet hash of every trace packet under the run's seed
    (the RDA packet ID and the LDA hash)."""
    s_ids, r_ids = packet[iv.sender.indices], packet[iv.receiver.indices]
    s_ts, r_ts = iv.sender.timestamps, iv.receiver.timestamps
    out = {}
    s = update(rda, select(packet, iv.sender.indices), s_ts, hashers=hashers)
    r = update(rda, select(packet, iv.receiver.indices), r_ts, hashers=hashers)
    e = estimate_rda(s, r, sender_cache=(s_ids, s_ts), receiver_cache=(r_ids, r_ts),
                     hashers=hashers)
    out["RDA"] = {"mean": e.mean_ns, "std": e.std_ns, "samples": e.samples,
                  "decoded": int(e.decoded), "exact": int(e.exact),
                  "found": e.lost_found + e.reordered_found}
    s = update(lda, select(packet, iv.sender.indices), s_ts)
    r = update(lda, select(packet, iv.receiver.indices), r_ts)
    e = estimate_lda(s, r)
    out["LDA"] = {"mean": e.mean_ns, "std": e.std_ns, "samples": e.samples}
    n = len(packet)
    at_s = np.zeros(n, dtype=bool)
    at_r = np.zeros(n, dtype=bool)
    ts_s = np.zeros(n, dtype=np.int64)
    ts_r = np.zeros(n, dtype=np.int64)
    at_s[iv.sender.indices] = True
    at_r[iv.receiver.indices] = True
    ts_s[iv.sender.indices] = s_ts
    ts_r[iv.receiver.indices] = r_ts
    touched = at_s | at_r
    f = finecomb_ideal(packet[touched], ts_s[touched], ts_r[touched], at_s[touched],
                       at_r[touched], buckets=fc_buckets)
    out["FineComb"] = {"mean": f.mean_ns, "std": f.std_ns, "samples": f.samples}
    return out


def run_rda(*, packets: int = 2_000_000, differences=DIFFERENCES, runs: int = 10,
            rda_buckets: int = 5000, lda_rows: int = 2048, fc_buckets: int = 5000,
            progress=None) -> list[dict]:
    """Every (run, set difference, method) as a record."""
    progress = progress or (lambda msg: None)
    scenario = Scenario(packets=packets, fast=True, delay=DELAY, seed=TRACE_SEED)
    head = max(differences) // 2
    trace = dataclasses.replace(scenario, packets=packets + head).trace()
    progress(f"trace of {len(trace)} packets")
    rows = []
    for run in range(runs):
        rda, lda, fc = configs(run, packets=packets, rda_buckets=rda_buckets,
                               lda_rows=lda_rows, fc_buckets=fc_buckets)
        hashers = Hashers(rda)
        packet = packet_hashes(trace, rda)
        for d, iv in set_difference_intervals(scenario, differences, run, trace=trace):
            truth = iv.truth
            for method, est in estimate_all(iv, packet, rda, lda, fc, hashers).items():
                rows.append({
                    "run": run, "set_difference": d, "lost": truth.lost,
                    "reordered": truth.reordered, "method": method,
                    "true_mean_ns": truth.mean, "true_std_ns": truth.std,
                    "est_mean_ns": math.nan if est["mean"] is None else est["mean"],
                    "est_std_ns": math.nan if est["std"] is None else est["std"],
                    "rel_err_mean": relative_error(est["mean"], truth.mean),
                    "rel_err_std": relative_error(est["std"], truth.std),
                    "samples": est["samples"], "decoded": est.get("decoded", ""),
                    "exact": est.get("exact", ""),
                    "decoded_fraction": (est["found"] / d if d and "found" in est
                                         else (1.0 if "found" in est else "")),
                })
        progress(f"run {run + 1}/{runs} done ({len(differences)} set differences)")
    return rows


def summarise(rows: list[dict]) -> list[dict]:
    """Per (set difference, method): mean, min, max relative error of the mean and
    std over the runs, and for RDA how many runs decoded completely (exact mean)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["set_difference"], r["method"]), []).append(r)
    out = []
    for (d, method), rs in sorted(groups.items()):
        em = np.array([r["rel_err_mean"] for r in rs], dtype=float)
        es = np.array([r["rel_err_std"] for r in rs], dtype=float)
        ok = np.isfinite(em)
        row = {"set_difference": d, "method": method, "runs": len(rs),
               "rel_err_mean_avg": float(em[ok].mean()) if ok.any() else math.nan,
               "rel_err_mean_max": float(em[ok].max()) if ok.any() else math.nan,
               "rel_err_std_avg": (float(np.nanmean(es)) if np.isfinite(es).any()
                                   else math.nan),
               "samples_avg": float(np.mean([r["samples"] for r in rs])),
               "runs_without_mean": int((~ok).sum())}
        if method == "RDA":
            row["exact_runs"] = int(sum(r["exact"] for r in rs))
            row["decoded_fraction_avg"] = float(np.mean([r["decoded_fraction"] for r in rs]))
        else:
            row["exact_runs"] = ""
            row["decoded_fraction_avg"] = ""
        out.append(row)
    return out


FLOOR = 1e-17


def plot(rows: list[dict], summary: list[dict], out: Path) -> Path:
    """rda_fig7_8.png: relative error of the mean and of the std vs set difference (log
    y; an exact estimate, relative error 0, is drawn at 1e-17)."""
    plt = pyplot()
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.4))
    for method, color in (("RDA", "C2"), ("FineComb", "C1"), ("LDA", "C0")):
        s = [r for r in summary if r["method"] == method]
        x = [r["set_difference"] for r in s]
        for a, key in ((ax[0], "rel_err_mean_avg"), (ax[1], "rel_err_std_avg")):
            y = [max(r[key], FLOOR) if math.isfinite(r[key]) else np.nan for r in s]
            a.plot(x, y, "o-", color=color, label=method)
        per_run = [r for r in rows if r["method"] == method]
        for a, key in ((ax[0], "rel_err_mean"), (ax[1], "rel_err_std")):
            a.scatter([r["set_difference"] for r in per_run],
                      [max(r[key], FLOOR) if math.isfinite(r[key]) else np.nan
                       for r in per_run], s=6, color=color, alpha=0.35)
    for a, t in ((ax[0], "relative error of the mean"), (ax[1], "relative error of the std")):
        a.set_yscale("log")
        a.set_xlabel("set difference (half lost, half reordered)")
        a.set_ylabel("relative error (line: average of runs; dots: runs)")
        a.set_title(t)
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=8)
    ax[0].axhline(FLOOR, color="k", lw=0.5, ls=":")
    ax[0].text(0, FLOOR * 3, "exact (0) drawn here", fontsize=7)
    fig.suptitle("RDA Figs. 7–8 reproduction: k = 2, 5000 buckets; synthetic 2M-packet trace")
    fig.tight_layout()
    path = out / "rda_fig7_8.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


COLUMNS = [("set_difference", "d"), ("method", "method"), ("samples_avg", "samples"),
           ("rel_err_mean_avg", "relerr mean"), ("rel_err_mean_max", "max"),
           ("rel_err_std_avg", "relerr std"), ("exact_runs", "exact runs"),
           ("decoded_fraction_avg", "decoded"), ("runs_without_mean", "no mean")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 100 000 packets, 2 runs, 4 set differences")
    ap.add_argument("--packets", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    differences = DIFFERENCES
    if args.quick:
        args.packets, args.runs, differences = 100_000, 2, (0, 1000, 2500, 6000)
    progress = Progress()
    rows = run_rda(packets=args.packets, differences=differences, runs=args.runs,
                   progress=progress)
    summary = summarise(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(args.out / "rda_runs.csv", rows)
    write_csv(args.out / "rda_summary.csv", summary)
    path = plot(rows, summary, args.out)
    meta = {"packets": args.packets, "runs": args.runs, "differences": list(differences),
            "machine": machine(), "seconds": round(time.perf_counter() - progress.start, 1),
            "cpu_seconds": round(time.process_time(), 1)}
    (args.out / "rda_meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(format_table(summary, COLUMNS))
    print(f"\nwrote {args.out / 'rda_runs.csv'}, {args.out / 'rda_summary.csv'}, {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
