# SPDX-License-Identifier: BSD-2-Clause
"""Helpers shared by the accuracy benchmarks (``bench/accuracy_*.py``): output folder,
CSV writing, a plain-text summary table, the machine description (:mod:`bench.machine`),
relative errors and per-seed packet hashes.

Data flow (``docs/DESIGN.md``): simulated scenarios (:mod:`host_sw.model.channel`) ► golden model
► estimators ► **accuracy benchmarks** ► CSV/PNG in ``bench/out/accuracy/`` and the
tables of ``docs/ACCURACY.md``.
"""

from __future__ import annotations

import csv
import math
import sys
import time
from pathlib import Path

import numpy as np

from host_sw.contracts.config_base import SynopsisConfig
from host_sw.model.golden_lda_rda_lds import PacketHashes

from bench import OUT
from bench.machine import machine  # noqa: F401 (the accuracy benchmarks' machine)

DEFAULT_OUT = OUT / "accuracy"


def relative_error(estimate, true) -> float:
    """``|estimate − true| / |true|``; NaN when either is missing."""
    if estimate is None or true is None or not math.isfinite(true) or true == 0:
        return math.nan
    return abs(float(estimate) - float(true)) / abs(float(true))


def write_csv(path: Path, rows: list[dict]) -> Path:
    """Write ``rows`` (dicts with the same keys) as CSV; floats with 6 significant digits
    (``%.6g``); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not rows:
        path.write_text("")
        return path
    keys = list(rows[0])
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(keys)
        for r in rows:
            w.writerow([f"{v:.6g}" if isinstance(v, float) else v for v in
                        (r.get(k) for k in keys)])
    return path


def format_table(rows: list[dict], columns: list[tuple[str, str]]) -> str:
    """A plain-text table of ``rows``: ``columns`` are ``(key, header)``; floats
    printed with 4 significant digits."""
    def cell(v):
        if isinstance(v, float):
            return "nan" if math.isnan(v) else f"{v:.4g}"
        return str(v)
    body = [[cell(r.get(k)) for k, _ in columns] for r in rows]
    heads = [h for _, h in columns]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h)
              for i, h in enumerate(heads)]
    line = "  ".join(h.rjust(w) for h, w in zip(heads, widths))
    out = [line, "-" * len(line)]
    out += ["  ".join(c.rjust(w) for c, w in zip(b, widths)) for b in body]
    return "\n".join(out)


def packet_hashes(trace, config: SynopsisConfig) -> np.ndarray:
    """The 64-bit packet hash of every packet of ``trace`` under ``config`` (uint64).

    :meth:`host_sw.model.traffic.Trace.hashes` caches the full-trace hashes per configuration;
    the benchmarks hash one trace under tens of configurations (one per seed), so the
    cache is cleared again to keep memory flat.
    """
    hashes = trace.hashes(config)
    trace.clear_cache()
    return hashes.packet


def select(packet: np.ndarray, indices: np.ndarray) -> PacketHashes:
    """:class:`~host_sw.model.golden_lda_rda_lds.PacketHashes` of the packets ``indices`` of a trace whose
    packet hashes are ``packet`` (every frame of a synthetic trace is counted)."""
    return PacketHashes(packet[indices])


class Progress:
    """Prints ``[elapsed] message`` lines to stderr (the runs take minutes)."""

    def __init__(self, quiet: bool = False):
        self.start = time.perf_counter()
        self.quiet = quiet

    def __call__(self, message: str) -> None:
        if not self.quiet:
            print(f"[{time.perf_counter() - self.start:7.1f} s] {message}", file=sys.stderr,
                  flush=True)


def pyplot():
    """matplotlib's pyplot on the Agg backend (no display)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt
