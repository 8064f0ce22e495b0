# SPDX-License-Identifier: BSD-2-Clause
"""Speed of OPA recovery on one core (issue 13: ≥ 1 million packets per second at 1e-4
loss): the receiver's whole host work for one interval — grouping and checking every
group, Algorithm 1 on the groups that differ, decoding the timestamp block and
Algorithm 2 — in packets per second, against the number of groups; and the sender's
golden model (words and timestamp block) for comparison.

Workload: :func:`bench.opa_common.make_workload` (10^6 packets, 1e-4 uniform loss, no
reordering by default). Each figure is the median of ``--runs`` timed runs after an
untimed warm-up; every run checks that each recovered delay equals the truth. The
recovery is timed by the wall clock and by the process's CPU time (the figure that
stays meaningful on a machine shared with other jobs).

Writes ``bench/out/opa_recovery.json`` and ``bench/out/opa_recovery.png``.

Usage::

    .venv/bin/python -m bench.opa_recovery [--packets 1000000] [--loss 1e-4] [--runs 3]
                                           [--rows 4] [--groups 256,1024,4096,16384]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from host_sw.contracts.config import OpaConfig  # noqa: E402
from host_sw.estimators.opa.recovery import recover_interval  # noqa: E402
from host_sw.model.golden_opa import opa_sender  # noqa: E402

from bench import OUT  # noqa: E402
from bench.opa_common import make_workload  # noqa: E402

TARGET_PPS = 1e6


def measure(config: OpaConfig, work, runs: int) -> dict:
    """Median sender and receiver times (s) and the recovery's counts."""
    syn, block = opa_sender(config, work.sent)
    recover_interval(syn, block, work.received)          # warm-up
    send_t, recv_t, recv_cpu = [], [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        syn, block = opa_sender(config, work.sent)
        t1, c1 = time.perf_counter(), time.process_time()
        result = recover_interval(syn, block, work.received)
        t2, c2 = time.perf_counter(), time.process_time()
        send_t.append(t1 - t0)
        recv_t.append(t2 - t1)
        recv_cpu.append(c2 - c1)
        assert np.array_equal(result.delays[result.recovered],
                              work.true_delay[result.recovered]), "a recovered delay is wrong"
    n = len(work.sent)
    return {"groups": config.groups, "rows": config.rows,
            "sender_s": statistics.median(send_t), "recover_s": statistics.median(recv_t),
            "recover_pps": n / statistics.median(recv_t),
            "recover_cpu_s": statistics.median(recv_cpu),
            "recover_cpu_pps": n / statistics.median(recv_cpu),
            "sender_pps": n / statistics.median(send_t),
            "searched_groups": result.searched_groups,
            "unrecovered_groups": result.unrecovered_groups,
            "reasons": dict(result.reasons),
            "recovered_fraction": float(result.recovered.mean()),
            "candidates": result.candidates, "timestamp_bytes_per_packet": len(block) / n}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--loss", type=float, default=1e-4)
    ap.add_argument("--reorder", type=float, default=0.0)
    ap.add_argument("--groups", default="256,1024,4096,16384")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rows", type=int, default=4, help="k, the CAH rows (5: three losses "
                    "per group within the false-match budget)")
    args = ap.parse_args(argv)
    work = make_workload(packets=args.packets, loss=args.loss, reorder=args.reorder)
    rows = []
    print(f"# OPA recovery, {args.packets} packets, loss {args.loss}, reorder {args.reorder}, "
          f"k = {args.rows}, "
          f"{platform.processor() or platform.machine()}, one core")
    print("groups  recover Mpps (wall)  (CPU time)  sender Mpps  searched  unrecovered  "
          "recovered  ts B/pkt")
    for g in (int(x) for x in args.groups.split(",")):
        r = measure(OpaConfig(groups=g, rows=args.rows), work, args.runs)
        rows.append(r)
        print(f"{g:6d}  {r['recover_pps'] / 1e6:19.2f}  {r['recover_cpu_pps'] / 1e6:10.2f}  "
              f"{r['sender_pps'] / 1e6:11.2f}  "
              f"{r['searched_groups']:8d}  {r['unrecovered_groups']:11d}  "
              f"{r['recovered_fraction']:9.6f}  {r['timestamp_bytes_per_packet']:8.3f}")
    OUT.mkdir(parents=True, exist_ok=True)
    meta = {"packets": args.packets, "loss": args.loss, "reorder": args.reorder,
            "rows": args.rows,
            "runs": args.runs, "machine": platform.platform(), "python": platform.python_version(),
            "target_pps": TARGET_PPS}
    (OUT / "opa_recovery.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    _plot(rows, args)
    return 0


def _plot(rows, args) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5, 3.2))
    g = [r["groups"] for r in rows]
    ax.plot(g, [r["recover_pps"] / 1e6 for r in rows], "o-", label="receiver: recovery")
    ax.plot(g, [r["sender_pps"] / 1e6 for r in rows], "s--", label="sender: golden model")
    ax.axhline(TARGET_PPS / 1e6, color="grey", lw=0.8, ls=":", label="goal")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("groups g")
    ax.set_ylabel("million packets / s (one core)")
    ax.set_title(f"OPA, {args.packets:g} packets, loss {args.loss:g}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT / "opa_recovery.png", dpi=120)


if __name__ == "__main__":
    raise SystemExit(main())
