# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl watch`` on an RLI receiver: per interval the receiver's frozen cells and its
interpolation counts (RLI_FROZEN_REFERENCES, _OVERFLOWED, _UNREFERENCED, _REFUSED), the
aggregate of the interpolated delays and the per-flow table of the ``--flows`` keys.

In the host data flow (``docs/DESIGN.md``): driver snapshot and the RLI registers
(:class:`~host_sw.cli.watch_reads.PointReader`) ► **record** (:func:`rli_record`) ►
:data:`RLI_WATCH_TABLE` and the per-flow table (:mod:`host_sw.cli.rli.flows`), JSON
lines, ``--output``/``--flows-out``. RLI needs only the receiver device (the sender
inserts the references and keeps no delay state), so ``watch`` runs with ``--receiver``
alone (:func:`watch_receiver`); with ``--sender`` too, the sender's cells add per-flow
loss and the record is the pair's (:mod:`host_sw.cli.watch`), checked the same way.

An interval whose buffer overflowed or that refused a reference is flagged by the
receiver: some of its packets are not counted (or were interpolated between references
other than their own), so the record carries no estimate and no per-flow figure, only
why.
"""

from __future__ import annotations

import dataclasses

from host_sw.cli.records import snapshot_meta, unread_record
from host_sw.cli.rli.flows import flow_rows, sort_rows, with_rli_flows
from host_sw.cli.output.table import Column, Table, fmt
from host_sw.estimators.measure import json_number
from host_sw.estimators.record import IntervalRecord
from host_sw.estimators.rli.estimate import aggregate

__all__ = ["RLI_WATCH_TABLE", "rli_record", "receiver_record", "flow_lines"]


def _rli(rec: IntervalRecord, key: str) -> str:
    got = (rec.receiver.get("rli") or {}).get(key)
    return "—" if got is None else str(got)


def _est(key: str, spec: str | None = None):
    def cell(rec: IntervalRecord) -> str:
        v = rec.estimate.get(key)
        return fmt(v, spec) if spec else ("—" if v is None else str(v))
    return cell


def _notes(rec: IntervalRecord) -> list[str]:
    return [] if rec.estimate is None else [f"    note: {n}" for n in rec.notes]


#: ``watch`` on an RLI receiver: the aggregate and the receiver's interpolation counts.
RLI_WATCH_TABLE = Table(columns=(
    Column("interval", 8, lambda rec: "—" if rec.interval is None else str(rec.interval)),
    Column("sent", 9, _est("sent")),
    Column("recv", 9, _est("received")),
    Column("lost", 7, _est("lost")),
    Column("mean ns", 10, _est("mean", ".2f")),
    Column("std ns", 9, _est("std", ".2f")),
    Column("refs", 6, lambda rec: _rli(rec, "references")),
    Column("overflow", 8, lambda rec: _rli(rec, "overflowed")),
    Column("unref", 6, lambda rec: _rli(rec, "unreferenced")),
    Column("refused", 7, lambda rec: _rli(rec, "refused")),
), after=_notes)


def _flagged(rli: dict) -> list[str]:
    """Why the receiver flagged the interval (none: it did not)."""
    why = []
    if rli.get("overflowed"):
        why.append(f"{rli['overflowed']} data frames found the interpolation buffer full "
                   f"and are not counted")
    if rli.get("refused"):
        why.append(f"{rli['refused']} reference frames were refused while the "
                   f"interpolation unit was busy")
    return why


def receiver_record(outcome, config) -> IntervalRecord:
    """The record of one receiver read without a sender: the aggregate of the
    interpolated delays (no loss: the sender's count is not known)."""
    meta = outcome.meta()
    if not outcome.ok:
        notes = [f"receiver: {outcome.reason} (frozen copy: {outcome.release})"]
        return unread_record(outcome.seq, config, notes=notes,
                             receiver_meta={**meta, "seq": outcome.seq})
    snap = outcome.snapshot
    meta = {**snapshot_meta(snap), **meta}
    base = {"synopsis": config.kind, "config_id": config.config_id, "interval": snap.seq,
            "time": snap.read_time, "receiver": meta}
    notes = [f"receiver: {n}" for n in snap.notes]
    if not snap.valid:
        return IntervalRecord(**base, estimate=None, valid=False, notes=tuple(notes))
    mean, std, samples = aggregate(snap.synopsis)
    estimate = {"mean": json_number(mean), "std": json_number(std), "ci": [None, None],
                "lost": None, "loss_rate": None, "samples": samples, "sent": None,
                "received": samples}
    notes.append("RLI: mean and std of the delays the receiver interpolated between "
                 "reference frames; no sender read, so no loss")
    return IntervalRecord(**base, estimate=estimate, valid=True, notes=tuple(notes))


def rli_record(rec: IntervalRecord, receiver, sender=None, *, flows=None,
               min_samples: int = 1) -> IntervalRecord:
    """``rec`` (the receiver's, or the pair's) with the receiver's RLI counts in its
    receiver metadata; invalid, without estimate, when the receiver flagged the
    interval; else with the per-flow figures of ``flows`` (``(flow hashes (2, F),
    names)``) in ``details["rli_flows"]`` (loss per flow when the sender's snapshot
    is given)."""
    rli = receiver.rli
    if rli is None or not receiver.ok:
        return rec
    rec = dataclasses.replace(rec, receiver={**rec.receiver, "rli": dict(rli)})
    why = _flagged(rli)
    if why:
        flag = ("receiver flagged the interval: " + "; ".join(why)
                + ": no estimate and no per-flow figures for it")
        return dataclasses.replace(rec, valid=False, estimate=None, notes=(
            flag, *(n for n in rec.notes if not n.startswith("RLI: mean"))))
    notes = list(rec.notes)
    if rli.get("unreferenced"):
        notes.append(f"receiver: {rli['unreferenced']} data frames arrived with no "
                     f"reference in the interval and are not counted")
    rec = dataclasses.replace(rec, notes=tuple(notes))
    s = sender.snapshot.synopsis if sender is not None and sender.ok else None
    return with_rli_flows(rec, receiver.snapshot.synopsis, s, flows, min_samples)


def flow_lines(rec: IntervalRecord, top: int, sort: str) -> list[str]:
    """The per-flow table below an RLI interval's row (flows of ``--flows``): packets
    counted at the receiver, lost (with a sender), mean and std; no truth."""
    table = rec.details.get("rli_flows")
    if table is None:
        return []
    rows = sort_rows(flow_rows(table, min_samples=rec.details["min_samples"]), sort)
    shown = rows[:top or len(rows)]
    lines = [f"    flows: {len(shown)} of {len(rows)} by {sort}; "
             f"{sum(1 for r in rows if r['unbacked'])} without backed figures",
             f"    {'flow':<46} {'packets':>9} {'lost':>7} {'mean ns':>10} {'std ns':>10}"]
    for r in shown:
        line = (f"    {r['flow']:<46} {r['packets']:>9} "
                f"{'—' if r['lost'] is None else r['lost']:>7} "
                f"{fmt(r['mean'], '.2f'):>10} {fmt(r['std'], '.2f'):>10}")
        if r["unbacked"]:
            line += f"  not backed: {r['unbacked']}"
        lines.append(line)
    return lines
