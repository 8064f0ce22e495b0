# SPDX-License-Identifier: BSD-2-Clause
"""Speed of the queueing channel (:mod:`host_sw.model.queueing`) and of the RLI receiver's
golden model (:func:`host_sw.model.golden_rli.receiver_synopsis`): packets per second on one
core, for the vectorised no-drop path (Lindley's closed form) and for the per-packet
Python loop that runs when the queue can drop (docs/BENCHMARKS.md).

Usage::

    .venv/bin/python -m bench.queue_speed [--packets 1000000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from host_sw.contracts.config import RliConfig
from host_sw.model.queueing import QueueSpec, run_queue
from host_sw.model.golden_rli import receiver_synopsis

from bench.machine import machine


def _timed(fn, repeats=3):
    best_wall, best_cpu, out = float("inf"), float("inf"), None
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        best_wall = min(best_wall, time.perf_counter() - w)
        best_cpu = min(best_cpu, time.process_time() - c)
    return best_wall, best_cpu, out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    n = args.packets
    rng = np.random.default_rng(1)
    send = np.cumsum(rng.exponential(200, n).astype(np.int64) + 1)
    sizes = rng.choice([60] * 7 + [590] * 4 + [1514], n)
    print(f"{n} packets, Poisson 5 Mpps, IMIX; best of 3; {machine()['cpu']}")
    print("| case | path | drops | Mpps wall | Mpps CPU |\n|---|---|---:|---:|---:|")
    for spec in ("red:utilisation=0.88", "droptail:utilisation=0.88",
                 "red:utilisation=1.05", "droptail:utilisation=1.05"):
        wall, cpu, res = _timed(lambda: run_queue(QueueSpec.parse(spec), send, sizes,
                                                  np.random.default_rng(0)))
        path = "Python loop" if res.looped else "vectorised"
        print(f"| `{spec}` | {path} | {res.dropped.mean():.2%} | {n / wall / 1e6:.2f} | "
              f"{n / cpu / 1e6:.2f} |")
    config = RliConfig(cells=1 << 16)
    is_ref = np.zeros(n, bool)
    is_ref[::100] = True
    flow = rng.integers(0, 1 << 32, (2, n), dtype=np.uint64)
    arrival = send + rng.integers(0, 2000, n)
    arrival.sort()
    wall, cpu, _ = _timed(lambda: receiver_synopsis(config, flow, arrival, is_ref,
                                                    arrival - 500, ~is_ref))
    print(f"| RLI receiver golden model, 1 reference in 100 | vectorised | — | "
          f"{n / wall / 1e6:.2f} | {n / cpu / 1e6:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
