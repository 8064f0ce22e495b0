# SPDX-License-Identifier: BSD-2-Clause
"""Throughput of the golden model on one core: H3 hashing of header windows and the
counter update of each synopsis kind (``docs/DESIGN.md``: the golden model must run millions of
packets per second; target ≥ 5 Mpps per synopsis update).

Measures, for ``N`` packets (default 5 million), the median of ``--runs`` timed runs after
one untimed warm-up run (which builds the cached H3 tables):

* ``h3_window64`` — one 64-bit H3 over 64-byte windows with the IPv4 packet mask
  (:class:`host_sw.contracts.hashing.H3` ``__call__``), in million windows per second;
* ``h3_window64_bytewise`` — the same hash, one pass of each byte's table over all rows
  (the algorithm before row blocking), for comparison;
* ``hash_windows_lda`` — :func:`host_sw.model.golden_lda_rda_lds.hash_windows` for the default LDA
  configuration (same work plus the class bookkeeping); ``hash_windows_lds`` — the same
  for LDS with R=4 (adds the four 32-bit flow hashes, two rows per table);
* ``update_lda`` / ``update_rda`` / ``update_lds`` — :func:`host_sw.model.golden_lda_rda_lds.update` from
  :class:`~host_sw.model.golden_lda_rda_lds.PacketHashes` and timestamps to a new
  :class:`~host_sw.contracts.synopsis.Synopsis`, LDA 2×1024, RDA k=2 × m=1024, LDS R=4 × C=1024 with
  k=4 and per-row thresholds (0, 1, 2, 3); RDA's time includes hashing the IDs into
  bucket indices.

Writes ``bench/out/golden_throughput.json`` and the section between the
``golden_throughput`` markers of ``docs/BENCHMARKS.md``.

Usage::

    .venv/bin/python -m bench.golden_throughput [--packets 5000000] [--runs 3]
"""

from __future__ import annotations

import os

# Single thread (these are integer numpy ops, which do not use BLAS threads anyway).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from host_sw.contracts.config import LdaConfig, LdsConfig, RdaConfig  # noqa: E402
from host_sw.contracts.hashing import H3, ByteMask, HashPurpose  # noqa: E402
from host_sw.model.golden_lda_rda_lds import Hashers, PacketHashes, hash_windows, update  # noqa: E402

from bench import ROOT  # noqa: E402
from bench.machine import machine  # noqa: E402

TARGET_MPPS = 5.0
BEGIN = "<!-- golden_throughput:begin -->"
END = "<!-- golden_throughput:end -->"


def timed(fn, runs: int) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU (process) seconds of each run, after a warm-up run."""
    fn()  # warm-up: builds cached tables
    wall, cpu = [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return wall, cpu


def benchmarks(n: int, rng: np.random.Generator):
    """Yield ``(name, description, function)``; each call processes ``n`` packets."""
    lda, rda = LdaConfig(), RdaConfig()
    lds = LdsConfig(rows=4, cells=1024, vlda_cells=4, row_thresholds=(0, 1, 2, 3))
    windows = rng.integers(0, 256, size=(n, lda.window_bytes), dtype=np.uint8)
    h3 = H3(seed=lda.seed, purpose=HashPurpose.PACKET, in_bytes=lda.window_bytes,
            out_bits=64,
            byte_mask=ByteMask.from_int(lda.mask_packet_ipv4, lda.window_bytes).as_array())
    yield "h3_window64", "H3 64-bit, 64-byte window, IPv4 packet mask", lambda: h3(windows)

    def bytewise():  # the previous algorithm: each byte table over all rows, unblocked
        out = np.zeros(n, dtype=np.uint64)
        for b in np.flatnonzero(h3.byte_mask):
            out ^= h3.tables[b][windows[:, b]]
        return out
    yield ("h3_window64_bytewise", "same, one pass per byte over all rows (before)", bytewise)
    lda_hashers = Hashers(lda)
    yield ("hash_windows_lda", "hash_windows, default LDA config (all IPv4)",
           lambda: hash_windows(lda, windows, hashers=lda_hashers))
    lds_for_hashing = LdsConfig(rows=4, cells=1024, vlda_cells=4, row_thresholds=(0, 1, 2, 3))
    lds_hashers = Hashers(lds_for_hashing)
    yield ("hash_windows_lds", "hash_windows, LDS R=4 (packet hash + 4 flow hashes)",
           lambda: hash_windows(lds_for_hashing, windows, hashers=lds_hashers))
    del windows
    packet = rng.integers(0, 1 << 64, size=n, dtype=np.uint64)
    timestamps = np.cumsum(rng.integers(0, 100, size=n, dtype=np.uint64))
    yield ("update_lda", "update LDA 2×1024, thresholds (0, 6)",
           lambda: update(lda, PacketHashes(packet), timestamps))
    rda_hashers = Hashers(rda)
    yield ("update_rda", "update RDA k=2 × m=1024 (incl. bucket hashes of the IDs)",
           lambda: update(rda, PacketHashes(packet), timestamps, hashers=rda_hashers))
    flow = rng.integers(0, 1 << 32, size=(lds.rows, n), dtype=np.uint64)
    yield ("update_lds", "update LDS R=4 × C=1024, k=4, row thresholds (0, 1, 2, 3)",
           lambda: update(lds, PacketHashes(packet, flow), timestamps))


def markdown(report: dict) -> str:
    m = report["machine"]
    lines = [
        BEGIN,
        "## Golden model throughput (one core)",
        "",
        f"Command: `{report['command']}` — N = {report['packets']:,} packets, median of "
        f"{report['runs']} runs after a warm-up run, single thread.",
        f"Machine: {m['nproc']} CPUs (`nproc`), {m['cpu']}; Python {m['python']}, "
        f"numpy {m['numpy']}. (BLAS thread settings do not matter: these are integer ops.)",
        "",
        "| what | Mpps, wall clock (median) | wall-clock runs | Mpps, CPU time (median) "
        "| target |",
        "|---|---:|---|---:|---:|",
    ]
    for name, r in report["results"].items():
        target = f"≥ {TARGET_MPPS:g}" if name.startswith("update_") else "—"
        runs = ", ".join(f"{x:.1f}" for x in r["runs_mpps"])
        lines.append(f"| `{name}`: {r['what']} | {r['median_mpps']:.1f} | {runs} "
                     f"| {r['median_cpu_mpps']:.1f} | {target} |")
    load = report["load_average_1min"]
    lines += ["",
              "The machine is shared with other jobs (1-minute load average "
              f"{load['before']:.1f} before, {load['after']:.1f} after the run on "
              f"{m['nproc']} CPUs): wall-clock figures drop under load; CPU-time figures "
              "(this process's CPU seconds) are steadier. Mpps = million packets "
              "(windows, for the hashing rows) per second.",
              END]
    return "\n".join(lines) + "\n"


def write_markdown(path: Path, section: str) -> None:
    text = path.read_text() if path.exists() else "# Benchmarks\n\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        text = head + section + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--packets", type=int, default=5_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(20261126)
    load_before = os.getloadavg()
    results = {}
    for name, what, fn in benchmarks(args.packets, rng):
        seconds, cpu_seconds = timed(fn, args.runs)
        mpps = [args.packets / s / 1e6 for s in seconds]
        cpu_mpps = [args.packets / s / 1e6 for s in cpu_seconds]
        results[name] = {"what": what, "median_mpps": statistics.median(mpps),
                         "runs_mpps": mpps, "runs_seconds": seconds,
                         "median_cpu_mpps": statistics.median(cpu_mpps),
                         "runs_cpu_seconds": cpu_seconds}
        print(f"{name:20s} {statistics.median(mpps):7.2f} Mpps wall, "
              f"{statistics.median(cpu_mpps):7.2f} Mpps CPU  "
              f"(wall runs: {', '.join(f'{x:.2f}' for x in mpps)})  {what}", flush=True)
    command = "python -m bench.golden_throughput" + (
        "" if argv is None and len(sys.argv) == 1 else " " + " ".join(sys.argv[1:]))
    report = {"command": command.strip(), "packets": args.packets, "runs": args.runs,
              "machine": machine(), "target_mpps": TARGET_MPPS,
              "load_average_1min": {"before": load_before[0], "after": os.getloadavg()[0]},
              "results": results}
    if not args.no_write:
        out = ROOT / "bench" / "out" / "golden_throughput.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
        write_markdown(ROOT / "docs" / "BENCHMARKS.md", markdown(report))
        print(f"wrote {out.relative_to(ROOT)} and docs/BENCHMARKS.md")
    return report


if __name__ == "__main__":
    main()
