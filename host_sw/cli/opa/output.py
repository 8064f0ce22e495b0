# SPDX-License-Identifier: BSD-2-Clause
"""What ``ldactl`` prints and writes for OPA intervals: the percentile table (p50, p90,
p99, p99.9, max, loss, reordering), the per-packet delays (CSV or JSON lines), a delay
histogram, and the Prometheus histogram of the delays in seconds.

CLI layer, beside :mod:`host_sw.cli.output.table` (whose :class:`~host_sw.cli.output.table.Table` it
uses): the OPA rows of ``ldactl simulate`` come from
:class:`~host_sw.estimators.record.IntervalRecord` objects whose ``details["opa"]`` is the
interval's :class:`~host_sw.estimators.opa.recovery.OpaRecovery`.
"""

from __future__ import annotations

import csv
import json

import numpy as np

from host_sw.cli.output.table import Column, Table, fmt
from host_sw.estimators.opa.recovery import HISTOGRAM_BUCKETS_S

__all__ = ["OPA_SIMULATE_TABLE", "OPA_RECORD_TABLE", "add_delay_outputs",
           "write_delays", "write_histogram", "prometheus_histogram", "delay_rows",
           "histogram_lines", "DelayWriter", "write_histogram_counts", "DELAY_COLUMNS"]


_KEYS = ("p50", "p90", "p99", "p99.9", "max")


def _est(key, spec=".1f"):
    return lambda rec: fmt(rec.estimate.get(key), spec)


def _pct(key):
    """A percentile's cell: its number where the packets without a delay cannot move
    it, else the range they leave open (``lo..hi``, ``≥lo``, ``≤hi``), or ``—``
    (withheld; the notes say why)."""
    def cell(rec):
        e = rec.estimate
        lo, hi = e.get(f"{key}_range") or (None, None)
        if e.get(key) is not None or (lo is None and hi is None):
            return fmt(e.get(key), ".1f")
        if lo is not None and hi is not None:
            return f"{lo:.1f}..{hi:.1f}"
        return f"≥{lo:.1f}" if lo is not None else f"≤{hi:.1f}"
    return cell


def _unrecovered(e) -> str:
    return ("" if e.get("unrecovered") is None else
            f", {e['unrecovered']} received packets without a delay")


def _true_percentiles(rec) -> list[str]:
    """The truth's percentiles and whether every recovered delay equals its true delay,
    when the record knows the truth (simulations, two packet captures)."""
    d = rec.details
    if "true_p50" not in d:
        return []
    true = " / ".join(fmt(d.get(f"true_{k}"), ".1f") for k in _KEYS)
    return [f"    true p50/p90/p99/p99.9/max ns: {true}; every recovered delay "
            f"{'exact' if d.get('delays_exact') else 'NOT exact'}"]


def _opa_truth_line(rec) -> list[str]:
    e = rec.estimate
    lines = _true_percentiles(rec)
    frac = e.get("recovered_fraction")
    lines.append(f"    recovered {e.get('samples')} delays ({fmt(frac and frac * 100, '.4f')}% "
                 f"of received), {e.get('unrecovered_groups')} group(s) unrecovered"
                 f"{_unrecovered(e)}, {e.get('foreign')} foreign; timestamp layer "
                 f"{fmt(e['timestamp_bytes'] / max(e['sent'], 1), '.3f')} B/packet"
                 if e.get("timestamp_bytes") is not None else
                 f"    no per-packet records: counts only")
    return lines + [f"    note: {note}" for note in rec.notes]


#: The delay columns of every OPA table: the percentiles, the maximum and the mean (ns).
_DELAY_COLUMNS = (
    Column("p50 ns", 9, _pct("p50")),
    Column("p90 ns", 9, _pct("p90")),
    Column("p99 ns", 9, _pct("p99")),
    Column("p99.9 ns", 9, _pct("p99.9")),
    Column("max ns", 10, _pct("max")),
    Column("mean ns", 9, _est("mean", ".2f")),
)


#: ``ldactl simulate --synopsis opa``: per run, the delay percentiles (ns) with loss and
#: reordering; the truth below.
OPA_SIMULATE_TABLE = Table(columns=(
    Column("run", 3, lambda rec: str(rec.run)),
    Column("sent", 9, lambda rec: str(rec.estimate["sent"])),
    Column("recv", 9, lambda rec: str(rec.estimate["received"])),
    Column("lost", 6, lambda rec: str(rec.true["lost"]) if rec.true else "—"),
    Column("est.lost", 8, _est("lost", "d")),
    Column("reord", 6, _est("reordered", "d")),
    *_DELAY_COLUMNS,
), after=_opa_truth_line)


def _record_lines(rec) -> list[str]:
    e = rec.estimate
    if e is None:
        return []
    lines = []
    t = rec.true
    if t and t.get("lost") is not None:
        lines.append(f"    true: lost {t['lost']}, mean {fmt(t.get('mean'), '.2f')} ns")
    lines += _true_percentiles(rec)
    if e.get("samples") is not None and e.get("recovered_fraction") is not None:
        lines.append(f"    recovered {e['samples']} delays "
                     f"({e['recovered_fraction'] * 100:.4f}% of received), "
                     f"{e.get('unrecovered_groups')} group(s) unrecovered{_unrecovered(e)}")
    return lines + [f"    note: {note}" for note in rec.notes]


#: ``ldactl estimate`` / ``watch`` of OPA intervals: one row per interval, percentiles.
OPA_RECORD_TABLE = Table(columns=(
    Column("interval", 8, lambda rec: "—" if rec.interval is None else str(rec.interval)),
    Column("sent", 9, lambda rec: str(rec.estimate["sent"])),
    Column("recv", 9, lambda rec: str(rec.estimate["received"])),
    Column("lost", 6, _est("lost", "d")),
    Column("reord", 6, lambda rec: fmt(rec.estimate.get("reordered"), "d")),
    *_DELAY_COLUMNS,
), after=_record_lines)


def add_delay_outputs(group, *, histogram_when: str = "") -> None:
    """The per-packet outputs of OPA, one definition for ``simulate``, ``estimate`` and
    ``watch``: ``--delays-out`` (``--delays`` is the same option) and ``--histogram``
    (``args.delays_out``, ``args.histogram``)."""
    group.add_argument("--delays-out", "--delays", dest="delays_out", default=None,
                       metavar="FILE",
                       help="OPA: write every recovered per-packet delay (CSV, or JSON "
                            "lines for a .jsonl/.json name)")
    group.add_argument("--histogram", default=None, metavar="FILE",
                       help="OPA: write the recovered delays' histogram (CSV, cumulative "
                            f"counts at bounds in seconds){histogram_when}")


#: The columns of the per-packet delay file, in order.
DELAY_COLUMNS = ("run", "interval", "packet", "hash", "receive_tick", "delay_ns")


def _delay_columns(rec, tick_ns: float):
    """The recovered packets of one record as columns (Python values), or None."""
    result = rec.details.get("opa")
    if result is None:
        return None
    idx = np.flatnonzero(result.recovered)
    hashes = rec.details.get("opa_hashes")
    return (idx.tolist(),
            None if hashes is None else np.asarray(hashes, np.uint64)[idx].tolist(),
            result.receive_ts[idx].astype(np.int64).tolist(),
            (result.delays[idx].astype(np.float64) * tick_ns).tolist())


def delay_rows(records, tick_ns: float):
    """Yield one dict per recovered packet (:data:`DELAY_COLUMNS`): ``run``,
    ``interval``, ``packet`` (arrival index at the receiver), ``hash`` (hex),
    ``receive_tick``, ``delay_ns``."""
    for rec in records:
        cols = _delay_columns(rec, tick_ns)
        if cols is None:
            continue
        packets, hashes, ticks, delays = cols
        for k, i in enumerate(packets):
            yield {"run": rec.run, "interval": rec.interval, "packet": i,
                   "hash": None if hashes is None else f"{hashes[k]:016x}",
                   "receive_tick": ticks[k], "delay_ns": delays[k]}


def _json(v) -> str:
    return "null" if v is None else json.dumps(v)


class DelayWriter:
    """Per-packet delays written as they come (``ldactl watch``: interval by interval):
    JSON lines when ``path`` ends in ``.jsonl`` or ``.json``, CSV otherwise; the rows of
    :func:`delay_rows`, byte for byte as ``json.dumps`` and ``csv.DictWriter`` write
    them. Why not those per row: a live watch writes every packet of every interval, and
    one formatted line per packet is several times faster than a dict through the
    writers (``bench/watch_opa_records.py``)."""

    def __init__(self, path: str, tick_ns: float):
        self.tick_ns, self.rows = tick_ns, 0
        self.f = open(path, "w", newline="")
        self.jsonl = path.endswith((".jsonl", ".json"))
        if not self.jsonl:
            csv.writer(self.f).writerow(DELAY_COLUMNS)

    def _lines(self, rec, cols) -> list[str]:
        packets, hashes, ticks, delays = cols
        hexes = (["" if not self.jsonl else "null"] * len(packets) if hashes is None else
                 [f'"{h:016x}"' if self.jsonl else f"{h:016x}" for h in hashes])
        if self.jsonl:
            head = f'{{"run": {_json(rec.run)}, "interval": {_json(rec.interval)}, "packet": '
            return [f'{head}{i}, "hash": {h}, "receive_tick": {t}, "delay_ns": {d!r}}}\n'
                    for i, h, t, d in zip(packets, hexes, ticks, delays)]
        head = ("" if rec.run is None else f"{rec.run}") + "," + (
            "" if rec.interval is None else f"{rec.interval}") + ","
        return [f"{head}{i},{h},{t},{d!r}\r\n"
                for i, h, t, d in zip(packets, hexes, ticks, delays)]

    def write(self, records) -> int:
        """Write the recovered delays of ``records``; the rows written."""
        n = 0
        for rec in records:
            cols = _delay_columns(rec, self.tick_ns)
            if cols is not None:
                self.f.write("".join(self._lines(rec, cols)))
                n += len(cols[0])
        self.f.flush()
        self.rows += n
        return n

    def close(self) -> None:
        self.f.close()


def write_delays(path: str, records, tick_ns: float) -> int:
    """Write the per-packet delays (:class:`DelayWriter`). Returns the rows written."""
    writer = DelayWriter(path, tick_ns)
    try:
        return writer.write(records)
    finally:
        writer.close()


def _all_delays_s(records, tick_ns: float) -> np.ndarray:
    parts = [r.details["opa"].recovered_delays * (tick_ns * 1e-9)
             for r in records if r.details.get("opa") is not None]
    return np.concatenate(parts) if parts else np.zeros(0)


def write_histogram(path: str, records, tick_ns: float) -> None:
    """The recovered delays' histogram as CSV: ``le_seconds`` (bucket upper bound,
    ``+Inf`` last), ``count`` (delays at most that, cumulative as Prometheus counts)."""
    d = np.sort(_all_delays_s(records, tick_ns))
    write_histogram_counts(path, np.searchsorted(d, HISTOGRAM_BUCKETS_S, side="right"),
                           len(d))


def write_histogram_counts(path: str, counts, total: int) -> None:
    """:func:`write_histogram`'s file from the cumulative ``counts`` at
    :data:`HISTOGRAM_BUCKETS_S` and the number of delays (``ldactl watch`` sums its
    intervals' ``histogram_s``)."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(("le_seconds", "count"))
        for le, count in zip(HISTOGRAM_BUCKETS_S, counts):
            writer.writerow((f"{le:g}", int(count)))
        writer.writerow(("+Inf", int(total)))


def prometheus_histogram(name: str, delays_s: np.ndarray, labels: str = "") -> list[str]:
    """Prometheus text lines of a histogram of delays in seconds (``name_bucket{le=…}``,
    ``name_sum``, ``name_count``); ``labels`` like ``core="0"`` (without braces)."""
    d = np.sort(np.asarray(delays_s, dtype=np.float64))
    sep = "," if labels else ""
    lines = [f"# TYPE {name} histogram"]
    for le in HISTOGRAM_BUCKETS_S:
        lines.append(f'{name}_bucket{{{labels}{sep}le="{le:g}"}} '
                     f"{int(np.searchsorted(d, le, side='right'))}")
    lines.append(f'{name}_bucket{{{labels}{sep}le="+Inf"}} {len(d)}')
    braces = f"{{{labels}}}" if labels else ""
    lines.append(f"{name}_sum{braces} {float(d.sum()):.9g}")
    lines.append(f"{name}_count{braces} {len(d)}")
    return lines


def histogram_lines(prefix: str, estimate: dict, labels: str) -> list[str]:
    """The ``{prefix}_delay_seconds`` histogram of an OPA interval's estimate
    (``histogram_s``; ``labels`` with braces, as ``ldactl export`` writes them), or no
    lines for an estimate without one."""
    hist = estimate.get("histogram_s")
    if not hist:
        return []
    name = f"{prefix}_delay_seconds"
    inner = labels[1:-1] + "," if labels else ""
    lines = [f"# HELP {name} Recovered per-packet one-way delays of the last valid "
             f"interval (OPA).", f"# TYPE {name} histogram"]
    for le, count in zip(hist["le"], hist["count"]):
        lines.append(f'{name}_bucket{{{inner}le="{le:g}"}} {count}')
    lines += [f'{name}_bucket{{{inner}le="+Inf"}} {estimate["samples"]}',
              f"{name}_sum{labels} {hist['sum']!r}", f"{name}_count{labels} {estimate['samples']}"]
    return lines
