# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl plot`` for per-packet delays (OPA): the delay distribution (CDF) and the
delay over time with the largest delays (the tail events) marked.

CLI layer, beside :mod:`host_sw.cli.plot`. Two inputs: a per-packet delay file (``--delays``,
what ``simulate``/``estimate --delays`` write: CSV or JSON lines with ``receive_tick`` and
``delay_ns``) gives the exact CDF and every packet over time; a records file of OPA
intervals gives the CDF of the summed interval histograms (``histogram_s``) and the
per-interval percentiles, the intervals holding the largest maxima marked. The numeric
parts (:func:`delay_cdf`, :func:`tail_events`, :func:`histogram_cdf`) are separate from the
drawing so tests check their values.
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np

from host_sw.cli.args import RunFailure
from host_sw.cli.args import read_text

__all__ = ["delay_cdf", "tail_events", "histogram_cdf", "read_delays", "draw_delays",
           "draw_opa_records"]


def delay_cdf(delays_ns) -> tuple[np.ndarray, np.ndarray]:
    """The empirical CDF: sorted delays and the fraction of delays at most each."""
    x = np.sort(np.asarray(delays_ns, dtype=np.float64))
    return x, np.arange(1, len(x) + 1) / max(len(x), 1)


def tail_events(delays_ns, n: int) -> np.ndarray:
    """Indices of the ``n`` largest delays (ties: the earlier packet first), in input
    order."""
    d = np.asarray(delays_ns, dtype=np.float64)
    n = min(max(n, 0), len(d))
    order = np.argsort(-d, kind="stable")[:n]
    return np.sort(order)


def histogram_cdf(records) -> tuple[np.ndarray, np.ndarray]:
    """The CDF at the histogram bounds (ns) over every OPA interval of ``records``:
    summed cumulative bucket counts over summed samples."""
    hists = [(r.estimate["histogram_s"], r.estimate.get("samples") or 0) for r in records
             if r.estimate and r.estimate.get("histogram_s")]
    if not hists:
        return np.zeros(0), np.zeros(0)
    le = np.asarray(hists[0][0]["le"], dtype=np.float64) * 1e9
    counts = np.sum([np.asarray(h["count"], dtype=np.float64) for h, _ in hists], axis=0)
    total = sum(n for _, n in hists)
    return le, counts / max(total, 1)


def read_delays(path) -> tuple[np.ndarray, np.ndarray]:
    """``receive_tick`` and ``delay_ns`` of a per-packet delay file (CSV, or JSON lines
    for ``.jsonl``/``.json``); a malformed row is a :class:`RunFailure` naming it."""
    text = read_text(path, "delays")
    if str(path).endswith((".jsonl", ".json")):
        rows = ((k, json.loads(l)) for k, l in enumerate(text.splitlines(), 1) if l.strip())
    else:
        rows = enumerate(csv.DictReader(io.StringIO(text)), 2)
    ticks, delays = [], []
    try:
        for k, row in rows:
            try:
                ticks.append(int(row["receive_tick"]))
                delays.append(float(row["delay_ns"]))
            except (KeyError, TypeError, ValueError) as e:
                raise RunFailure(f"{path}:{k}: not a delay row ({e})") from None
    except json.JSONDecodeError as e:
        raise RunFailure(f"{path}: not JSON lines ({e})") from None
    if not delays:
        raise RunFailure(f"{path} has no delays")
    return np.asarray(ticks), np.asarray(delays)


def draw_delays(ticks, delays, fig_axes, top: int) -> str:
    """CDF above, delay over receive time below with the ``top`` largest marked; the
    summary line to print."""
    ax1, ax2 = fig_axes
    x, y = delay_cdf(delays)
    ax1.plot(x, y, drawstyle="steps-post")
    ax1.set_xscale("log" if x[0] > 0 else "symlog")
    ax1.set_xlabel("delay (ns)")
    ax1.set_ylabel("fraction of packets")
    ax2.plot(ticks, delays, ".", markersize=2, label="packet")
    tail = tail_events(delays, top)
    ax2.plot(ticks[tail], delays[tail], "rx", label=f"{len(tail)} largest")
    ax2.set_xlabel("receive time (ticks)")
    ax2.set_ylabel("delay (ns)")
    ax2.legend()
    big = tail[np.argmax(delays[tail])] if len(tail) else None
    where = (f"; largest {delays[big]:.1f} ns at receive tick {ticks[big]}"
             if big is not None else "")
    return f"{len(delays)} delays, the {len(tail)} largest marked{where}"


def draw_opa_records(good, fig_axes, top: int) -> str:
    """OPA intervals: the histogram CDF above, p50/p99/p99.9/max per interval below
    with the ``top`` largest maxima marked; the summary line to print."""
    ax1, ax2 = fig_axes
    le, frac = histogram_cdf(good)
    if len(le):
        ax1.plot(le, frac, "o-", drawstyle="steps-post")
        ax1.set_xscale("log")
    ax1.set_xlabel("delay (ns, histogram bounds)")
    ax1.set_ylabel("fraction of packets")
    x = np.array([r.interval if r.interval is not None else k for k, r in enumerate(good)])
    for key in ("p50", "p99", "p99.9", "max"):
        v = np.array([np.nan if r.estimate.get(key) is None else r.estimate[key]
                      for r in good], dtype=np.float64)
        ax2.plot(x, v, ".-", label=key)
        if key == "max":
            tail = tail_events(np.nan_to_num(v, nan=-np.inf), top)
            ax2.plot(x[tail], v[tail], "rx", markersize=9, label=f"{len(tail)} largest")
    ax2.set_yscale("log")
    ax2.set_xlabel("interval")
    ax2.set_ylabel("delay (ns)")
    ax2.legend()
    return f"{len(good)} OPA intervals, the {len(tail)} largest maxima marked"
