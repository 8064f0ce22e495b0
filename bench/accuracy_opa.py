# SPDX-License-Identifier: BSD-2-Clause
"""OPA accuracy and overhead against the OPA paper (Wang et al., §VII): 10^6 packets,
Weibull delays with large delays added with probability 1e-4, loss 1e-5 … 1e-3
(:func:`bench.opa_common.make_workload`).

* Fig. 4 — fraction of received packets whose delay is recovered, against the number of
  groups, at loss 1e-5 and 1e-4 (at most 2 errors per group, as the paper's Fig. 4);
* Figs. 5/7 — CDF of the per-packet relative delay error (Eq. 11) of OPA (lossless, and
  lossy timestamp layers) against RLI (the product's golden model,
  :func:`bench.opa_common.rli_estimates`: a reference after every 1 000th packet as in the
  paper's §VII-C, and 1 in 100) and the trivial estimate "every packet gets the mean";
  Fig. 7 the signed error on the packets that got a large delay;
* Fig. 6 — the large delays: how many the receiver got, how many OPA gives exactly and
  what RLI gives them;
* Fig. 8 — mean and std error, bytes per packet sent to the receiver and fraction of
  delays recovered, beside LDA (2 banks × 1024 rows, our golden model and estimator) and
  RLI (1 in 1 000; a reference is a 60-byte frame);
* the timestamp layer: bytes per packet against the quantisation shift and its error.

Writes ``opa_fig4.csv``, ``opa_sweep.csv``, ``opa_timestamps.csv``, ``opa_fig4.png``,
``opa_fig5_cdf.png``, ``opa_fig7_large.png``, ``opa_table.txt`` to ``bench/out/accuracy/``
(``--out``).

Usage::

    .venv/bin/python -m bench.accuracy_opa [--quick] [--runs 2]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from host_sw.contracts.config import LdaConfig, OpaConfig
from host_sw.estimators.lda import estimate_lda
from host_sw.estimators.opa.recovery import recover_interval
from host_sw.model.golden_lda_rda_lds import PacketHashes, update
from host_sw.model.golden_opa import opa_sender

from bench.accuracy_common import (
    DEFAULT_OUT, Progress, format_table, pyplot, relative_error, write_csv,
)
from bench.machine import machine
from bench.opa_common import make_workload, rli_estimates

#: Fig. 4's group counts and the bound of its search (the two-loss grid is C(w, 2) pairs: up to
#: w ≈ 6 300 packets per group, g ≥ 256 at 10^6 packets).
FIG4_GROUPS = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
FIG4_LIMIT = 20_000_000
SHIFTS = (0, 4, 8, 12, 16)
#: RLI's reference rates (one after every N packets): the paper's 1/1000, and 1/100.
RLI_EVERY = (1000, 100)
#: Bytes of one RLI reference frame on the link (a minimum frame, without FCS).
RLI_REF_BYTES = 60
#: A fixed part of the delay (propagation, forwarding) so relative errors are defined.
BASE_NS = 1000.0


def groups_for(packets: int, loss: float) -> int:
    """The simulate default: about 256 packets per group and ≥ 8 groups per loss."""
    want = max(packets / 256, 8 * packets * loss, 16)
    return 1 << min(20, math.ceil(math.log2(want)))


def fig4(packets, runs, progress) -> list[dict]:
    rows = []
    for loss in (1e-5, 1e-4):
        for run in range(runs):
            work = make_workload(packets=packets, loss=loss, base_ns=BASE_NS, seed=100 + run)
            for g in FIG4_GROUPS:
                syn, block = opa_sender(OpaConfig(groups=g), work.sent)
                r = recover_interval(syn, block, work.received, max_errors=2,
                                     grid_limit=FIG4_LIMIT, candidate_limit=FIG4_LIMIT)
                assert np.array_equal(r.recovered_delays, work.true_delay[r.recovered])
                rows.append({"loss": loss, "run": run, "groups": g,
                             "recovered_fraction": float(r.recovered.mean()),
                             "unrecovered_groups": r.unrecovered_groups,
                             "lost": work.lost})
                progress(f"fig4 loss {loss:g} run {run} g {g}: "
                         f"{rows[-1]['recovered_fraction']:.6f}")
    return rows


def _lda(work) -> dict:
    """LDA (2 × 1024, thresholds 0 and 6) on the same packets: mean and std, and the
    fraction of received packets in usable buckets (the paper's Fig. 8(d) for LDA)."""
    config = LdaConfig()
    s = update(config, PacketHashes(work.sent.packet), work.sent.timestamps)
    r = update(config, PacketHashes(work.received.packet), work.received.timestamps)
    e = estimate_lda(s, r)
    return {"lda_mean": e.mean_ns, "lda_std": e.std_ns,
            "lda_fraction": e.samples / len(work.received),
            "lda_bytes_per_packet": config.buckets * config.layout.width / 8 / len(work.sent)}


def sweep(packets, runs, progress) -> tuple[list[dict], dict, dict]:
    rows, cdf, cdf7 = [], {}, {}
    for loss in (1e-5, 1e-4, 1e-3):
        g = groups_for(packets, loss)
        config = OpaConfig(groups=g)
        for run in range(runs):
            work = make_workload(packets=packets, loss=loss, reorder=1e-5, base_ns=BASE_NS,
                                 seed=200 + run)
            syn, block = opa_sender(config, work.sent)
            r = recover_interval(syn, block, work.received)
            syn5 = opa_sender(OpaConfig(groups=g, rows=5), work.sent)[0]
            r5 = recover_interval(syn5, block, work.received)
            assert np.array_equal(r5.recovered_delays, work.true_delay[r5.recovered])
            true = work.true_delay.astype(np.float64)
            got = r.recovered
            assert np.array_equal(r.delays[got], work.true_delay[got])
            lossy = {}
            for shift in (8, 12):
                _, lblock = opa_sender(config, work.sent, shift=shift)
                lr = recover_interval(syn, lblock, work.received)
                lossy[shift] = (lr.delays[lr.recovered] - true[lr.recovered]) / true[lr.recovered]
            mean_all = float(true.mean())
            trivial = (mean_all - true) / true
            rli = {n: rli_estimates(work, n) for n in RLI_EVERY}
            rli_err = {n: (d[g] - true[g]) / true[g] for n, (d, g, _) in rli.items()}
            d1k, g1k, refs1k = rli[1000]
            row = {"loss": loss, "run": run, "groups": g, "received": len(true),
                   "recovered_fraction": float(got.mean()),
                   "unrecovered_groups": r.unrecovered_groups,
                   "unrecovered_reasons": " ".join(f"{k}:{v}" for k, v in
                                                   sorted(r.reasons.items())),
                   "k5_recovered_fraction": float(r5.recovered.mean()),
                   "k5_unrecovered_groups": r5.unrecovered_groups,
                   "lost_true": work.lost, "lost_found": r.lost,
                   "reordered_true": work.reordered, "reordered_found": r.reordered,
                   "true_mean": mean_all, "true_std": float(true.std()),
                   "mean_rel_error": relative_error(r.recovered_delays.mean(), mean_all),
                   "std_rel_error": relative_error(r.recovered_delays.std(), true.std()),
                   "large_received": int(work.large.sum()),
                   "large_exact": int((work.large & got).sum()),
                   "words_bytes_per_packet": g * config.layout.width / 8 / packets,
                   "ts_bytes_per_packet": len(block) / packets,
                   "lossy8_mean_abs_rel": float(np.abs(lossy[8]).mean()),
                   "lossy12_mean_abs_rel": float(np.abs(lossy[12]).mean()),
                   "trivial_mean_abs_rel": float(np.abs(trivial).mean()),
                   **{f"rli{n}_mean_abs_rel": float(np.abs(e).mean())
                      for n, e in rli_err.items()},
                   "rli1000_fraction": float(g1k.mean()),
                   "rli1000_mean_rel_error": relative_error(d1k[g1k].mean(), mean_all),
                   "rli1000_std_rel_error": relative_error(d1k[g1k].std(), true.std()),
                   "rli1000_large_mean_rel": float(np.mean(
                       (d1k - true)[work.large & g1k] / true[work.large & g1k])),
                   "rli1000_bytes_per_packet": refs1k * RLI_REF_BYTES / packets,
                   **_lda(work)}
            row["lda_mean_rel_error"] = relative_error(row.pop("lda_mean"), mean_all)
            row["lda_std_rel_error"] = relative_error(row.pop("lda_std"), true.std())
            rows.append(row)
            if loss == 1e-4 and run == 0:
                cdf = {"OPA, lossless": np.zeros(int(got.sum())),
                       "OPA, shift 8 (±128 ns)": lossy[8],
                       "OPA, shift 12 (±2 µs)": lossy[12],
                       **{f"RLI, 1 in {n}": e for n, e in rli_err.items()},
                       "mean for every packet": trivial}
                large = work.large
                opa_large = r.recovered & large
                cdf7 = {"OPA, lossless": np.zeros(int(opa_large.sum())),
                        **{f"RLI, 1 in {n}": (d - true)[large & gg] / true[large & gg]
                           for n, (d, gg, _) in rli.items()},
                        "mean for every packet": trivial[large]}
            progress(f"sweep loss {loss:g} run {run}: recovered {row['recovered_fraction']:.6f}")
    return rows, cdf, cdf7


def timestamps(packets, progress) -> list[dict]:
    work = make_workload(packets=packets, loss=1e-4, base_ns=BASE_NS, seed=300)
    rows = []
    for g in (1024, 4096):
        config = OpaConfig(groups=g)
        syn, _ = opa_sender(config, work.sent)
        true = work.true_delay.astype(np.float64)
        for shift in SHIFTS:
            _, block = opa_sender(config, work.sent, shift=shift)
            r = recover_interval(syn, block, work.received)
            err = r.delays[r.recovered] - true[r.recovered]
            rows.append({"groups": g, "shift": shift, "bytes_per_packet": len(block) / packets,
                         "bound_ns": r.error_bound, "max_abs_error_ns": float(np.abs(err).max()),
                         "mean_error_ns": float(err.mean()),
                         "mean_abs_rel_error": float(np.abs(err / true[r.recovered]).mean())})
            progress(f"timestamps g {g} shift {shift}: {rows[-1]['bytes_per_packet']:.3f} B")
    return rows


def plots(out, fig4_rows, cdf, cdf7) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for loss, marker in ((1e-5, "o-"), (1e-4, "s-")):
        sel = [r for r in fig4_rows if r["loss"] == loss]
        gs = sorted({r["groups"] for r in sel})
        ax.plot(gs, [np.mean([r["recovered_fraction"] for r in sel if r["groups"] == g])
                     for g in gs], marker, label=f"loss {loss:g}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("groups g (10^6 packets)")
    ax.set_ylabel("fraction of delays recovered")
    ax.set_title("OPA Fig. 4: ≤ 2 errors per group")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "opa_fig4.png", dpi=110)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for name, err in cdf.items():
        e = np.sort(np.abs(err))
        e = np.maximum(e, 1e-6)
        ax.plot(e, np.arange(1, len(e) + 1) / len(e), label=name)
    ax.set_xscale("log")
    ax.set_xlabel("|per-packet relative delay error| (floor 1e-6)")
    ax.set_ylabel("CDF")
    ax.set_title("OPA Fig. 5: loss 1e-4, 10^6 packets")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "opa_fig5_cdf.png", dpi=110)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for name, err in cdf7.items():
        e = np.sort(err)
        ax.step(e, np.arange(1, len(e) + 1) / max(len(e), 1), where="post", label=name)
    ax.set_xlabel("per-packet relative delay error (signed), large delays only")
    ax.set_ylabel("CDF")
    ax.set_xlim(-1.05, 0.2)
    ax.set_title("OPA Fig. 7: the large delays, loss 1e-4")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "opa_fig7_large.png", dpi=110)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="10^5 packets, one run")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    args = ap.parse_args(argv)
    if args.quick:
        args.packets, args.runs = 100_000, 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    progress = Progress()
    f4 = fig4(args.packets, args.runs, progress)
    sw, cdf, cdf7 = sweep(args.packets, args.runs, progress)
    ts = timestamps(args.packets, progress)
    write_csv(out / "opa_fig4.csv", f4)
    write_csv(out / "opa_sweep.csv", sw)
    write_csv(out / "opa_timestamps.csv", ts)
    plots(out, f4, cdf, cdf7)
    text = "\n\n".join([
        json.dumps({"packets": args.packets, "runs": args.runs, **machine()}),
        format_table(f4, [("loss", "loss"), ("run", "run"), ("groups", "g"),
                          ("recovered_fraction", "recovered"),
                          ("unrecovered_groups", "unrec. groups")]),
        format_table(sw, [(k, k) for k in sw[0]]) if sw else "",
        format_table(ts, [(k, k) for k in ts[0]])])
    (out / "opa_table.txt").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
