# SPDX-License-Identifier: BSD-2-Clause
"""The one renderer of interval-estimate tables: :class:`Table` prints
:class:`~host_sw.estimators.record.IntervalRecord` objects as fixed-width text rows, from a
declaration of its columns.

In the host data flow (``docs/DESIGN.md``) this is the last stage, records ► text. Each
output declares its columns: :data:`SIMULATE_TABLE` (``ldactl simulate``: estimate beside
the exact truth, per run), :data:`RECORD_TABLE` (``ldactl watch`` and ``estimate``: one
row per interval, the truth appended when a capture knows it) and the demo's table
(``sim_tb/demo/demo.py``). An interval without an estimate prints its reasons instead of
numbers: a failure never prints a number.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from host_sw.estimators.record import IntervalRecord

__all__ = ["Column", "Table", "SIMULATE_TABLE", "RECORD_TABLE", "fmt", "ci_text",
           "separator", "flow_table_lines"]


def fmt(x, spec: str = ".2f") -> str:
    """A number in ``spec``, or an em dash when there is none."""
    return "—" if x is None else format(x, spec)


def ci_text(ci, digits: int = 2) -> str:
    """A confidence interval as ``[lo, hi]``, or an em dash."""
    lo, hi = ci
    return "—" if lo is None else f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def _rel_error(est, true) -> str:
    if est is None or true in (None, 0):
        return "—"
    return f"{abs(est - true) / abs(true) * 100:.3f}%"


@dataclass(frozen=True)
class Column:
    """A right-aligned column: its heading, width and the text of a record's cell."""
    header: str
    width: int
    cell: Callable[[IntervalRecord], str]


def separator(text: str = "|") -> Column:
    """A column holding ``text`` on every line (a visual separator)."""
    return Column(text, 0, lambda rec: text)


def _no_text(rec: IntervalRecord) -> str:
    return ""


def _no_lines(rec: IntervalRecord) -> list[str]:
    return []


@dataclass(frozen=True)
class Table:
    """Rows of records: the cells of :attr:`columns` joined by single spaces, then
    :attr:`suffix`; :attr:`after` adds lines below a row. A record without an estimate
    prints its first cell and ``invalid:`` with its notes (or :attr:`invalid_reason`)."""
    columns: tuple[Column, ...]
    invalid_reason: str = "invalid"
    suffix: Callable[[IntervalRecord], str] = _no_text
    after: Callable[[IntervalRecord], list[str]] = _no_lines

    def header(self) -> str:
        return " ".join(f"{c.header:>{c.width}}" for c in self.columns)

    def row(self, rec: IntervalRecord) -> str:
        if rec.estimate is None:
            first = self.columns[0]
            reason = "; ".join(rec.notes) or self.invalid_reason
            return f"{first.cell(rec):>{first.width}} invalid: {reason}"
        return " ".join(f"{c.cell(rec):>{c.width}}" for c in self.columns) + self.suffix(rec)

    def lines(self, rec: IntervalRecord) -> list[str]:
        """The row of ``rec`` and the lines below it."""
        return [self.row(rec), *self.after(rec)]

    def render(self, records) -> list[str]:
        """The header and every record's lines."""
        return [self.header(), *(line for rec in records for line in self.lines(rec))]


def _interval(rec: IntervalRecord) -> str:
    return "—" if rec.interval is None else str(rec.interval)


def _estimate(key: str, spec: str | None = None) -> Callable[[IntervalRecord], str]:
    if spec is None:
        return lambda rec: str(rec.estimate[key])
    return lambda rec: fmt(rec.estimate[key], spec)


def _true(key: str, spec: str | None = None) -> Callable[[IntervalRecord], str]:
    if spec is None:
        return lambda rec: str(rec.true[key])
    return lambda rec: fmt(rec.true[key], spec)


def _error(key: str) -> Callable[[IntervalRecord], str]:
    return lambda rec: _rel_error(rec.estimate[key], rec.true[key])


def _simulate_notes(rec: IntervalRecord) -> list[str]:
    lines = []
    if rec.details.get("flow_median_rel_error") is not None:
        lines.append(f"    per-flow delay: median relative error "
                     f"{rec.details['flow_median_rel_error'] * 100:.3f}% over "
                     f"{rec.details['flows_100plus']} flows of ≥ 100 packets")
    return lines + [f"    note: {note}" for note in rec.notes]


#: ``ldactl simulate``: per run, the exact truth beside the estimate and the error.
SIMULATE_TABLE = Table(columns=(
    Column("run", 3, lambda rec: str(rec.run)),
    Column("sent", 9, _true("sent")),
    Column("recv", 9, _true("received")),
    Column("lost", 7, _true("lost")),
    Column("est.lost", 8, _estimate("lost", ".0f")),
    Column("mean ns", 9, _true("mean", ".2f")),
    Column("est. mean", 9, _estimate("mean", ".2f")),
    Column("err", 8, _error("mean")),
    Column("ci (ns)", 19, lambda rec: ci_text(rec.estimate["ci"])),
    Column("std ns", 8, _true("std", ".2f")),
    Column("est. std", 8, _estimate("std", ".2f")),
    Column("err", 8, _error("std")),
    Column("samples", 8, _estimate("samples")),
), after=_simulate_notes)


def _loss(rec: IntervalRecord) -> str:
    rate = rec.estimate["loss_rate"]
    return "—" if rate is None else f"{rate * 100:.3f}%"


def _known_truth(rec: IntervalRecord) -> str:
    """The truth beside the estimate when the source knows it (captures): mean and std,
    each with the estimate's error when there is an estimate to compare."""
    t, e = rec.true, rec.estimate
    if not t or t.get("mean") is None:
        return ""
    parts = []
    for key in ("mean", "std"):
        if t.get(key) is None:
            continue
        err = "" if e.get(key) is None else f" (err {_rel_error(e[key], t[key])})"
        parts.append(f"{'' if key == 'mean' else 'std '}{t[key]:.2f} ns{err}")
    return "   true " + ", ".join(parts)


def _record_notes(rec: IntervalRecord) -> list[str]:
    """The notes of a row with numbers (a row without prints them in place of them)."""
    return [] if rec.estimate is None else [f"    note: {note}" for note in rec.notes]


#: ``ldactl watch`` and ``estimate``: one row per interval, the truth when known.
RECORD_TABLE = Table(columns=(
    Column("interval", 8, _interval),
    Column("sent", 9, _estimate("sent")),
    Column("recv", 9, _estimate("received")),
    Column("lost", 7, _estimate("lost")),
    Column("loss", 8, _loss),
    Column("mean ns", 10, _estimate("mean", ".2f")),
    Column("ci (ns)", 21, lambda rec: ci_text(rec.estimate["ci"])),
    Column("std ns", 9, _estimate("std", ".2f")),
    Column("samples", 8, _estimate("samples")),
), suffix=_known_truth, after=_record_notes)


def _flow_cell(v, spec=".0f") -> str:
    return "—" if v is None else format(v, spec)


def flow_table_lines(report, *, top: int = 10, sort: str = "packets",
                     indent: str = "    ") -> list[str]:
    """The per-flow table of one interval (an LDS
    :class:`~host_sw.estimators.flows.FlowReport`): the ``top`` flows by ``sort``
    (0: all). A flow whose delay no check backs shows a dash and the reason."""
    if report is None or not len(report):
        return [f"{indent}flows: none seen"]
    order = report.order(sort, top or None)
    unbacked = sum(1 for r in report.reason if r)
    shown = "all" if len(order) == len(report) else f"top {len(order)}"
    lines = [f"{indent}flows: {shown} of {len(report)} by {sort}; {unbacked} without a "
             f"backed delay",
             f"{indent}{'flow':<46} {'packets':>9} {'recv':>9} {'lost':>7} "
             f"{'delay ns':>10} {'samples':>8} {'true ns':>10}"]
    for i in order:
        row = report.row(int(i))
        true = row.get("true") or {}
        delay = (_flow_cell(row["delay_ns"], ".2f") if not row.get("unbacked")
                 else "—")
        line = (f"{indent}{row['flow']:<46} {_flow_cell(row['packets']):>9} "
                f"{_flow_cell(row['received']):>9} {_flow_cell(row['lost']):>7} "
                f"{delay:>10} {row['samples']:>8} "
                f"{_flow_cell(true.get('mean'), '.2f') if true else '':>10}")
        if row.get("unbacked"):
            line += f"  not backed: {row['unbacked']}"
        lines.append(line)
    return lines
