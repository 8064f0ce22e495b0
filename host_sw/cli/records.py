# SPDX-License-Identifier: BSD-2-Clause
"""Interval records for the CLI: from a pair of device snapshots (``watch``, ``estimate``
from snapshot files), and read back from a file of JSON records (``export``, ``plot``).

In the host data flow (``docs/DESIGN.md``): driver snapshot ► **record**
(:class:`~host_sw.estimators.record.IntervalRecord`, its JSON form documented there) ►
table, JSON lines, CSV, Prometheus, plot.
"""

from __future__ import annotations

import json
from pathlib import Path

from host_sw.cli.args import RunFailure
from host_sw.device.driver import Snapshot
from host_sw.estimators.record import IntervalRecord, record_for_pair

__all__ = ["snapshot_meta", "pair_snapshots", "read_records"]


def snapshot_meta(snap: Snapshot) -> dict:
    """What a record keeps of one point's snapshot."""
    return {"seq": snap.seq, "packets": snap.packets, "flags": int(snap.flags),
            "valid": snap.valid, "timestamp": snap.timestamp}


def pair_snapshots(s: Snapshot, r: Snapshot, confidence: float, *, sender_meta=None,
                   receiver_meta=None) -> IntervalRecord:
    """The record of a sender's and a receiver's snapshot of one interval: invalid (no
    estimate) when either is, or when their sequence numbers differ. The metadata default
    to :func:`snapshot_meta`."""
    notes = [f"sender: {n}" for n in s.notes] + [f"receiver: {n}" for n in r.notes]
    valid = s.valid and r.valid
    if s.seq != r.seq:
        valid = False
        notes.append(f"sender interval {s.seq} and receiver interval {r.seq} differ")
    return record_for_pair(s.synopsis, r.synopsis, confidence=confidence, interval=s.seq,
                           when=max(s.read_time, r.read_time),
                           sender_meta=sender_meta or snapshot_meta(s),
                           receiver_meta=receiver_meta or snapshot_meta(r), valid=valid,
                           notes=notes)


def read_records(path) -> list[IntervalRecord]:
    """The records of a JSON-lines file (``watch --output``, the demo's
    ``records.jsonl``); a line that is not a record is a :class:`RunFailure`."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise RunFailure(f"cannot read {path}: {e}") from None
    out = []
    for k, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(IntervalRecord.from_json(json.loads(line)))
        except json.JSONDecodeError as e:
            raise RunFailure(f"{path}:{k}: not a JSON record: {e}") from None
        except ValueError as e:
            raise RunFailure(f"{path}:{k}: {e}") from None
    return out
