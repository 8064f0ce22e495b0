# SPDX-License-Identifier: BSD-2-Clause
"""Interval records for the CLI: from a pair of device snapshots (``watch``, ``estimate``
from snapshot files), and read back from a file of JSON records (``export``, ``plot``).

In the host data flow (``docs/DESIGN.md``): driver snapshot ► **record**
(:class:`~host_sw.estimators.record.IntervalRecord`, its JSON form documented there) ►
table, JSON lines, CSV, Prometheus, plot.
"""

from __future__ import annotations

import math
import time

import dataclasses

from host_sw.cli.args import RunFailure, parse_json, read_text
from host_sw.device.snapshot import Snapshot
from host_sw.estimators.flows import DEFAULT_MIN_FLOW_SAMPLES, flow_report
from host_sw.estimators.record import IntervalRecord, record_for_pair

__all__ = ["snapshot_meta", "pair_snapshots", "unread_record", "read_records",
           "with_flows"]


def with_flows(rec: IntervalRecord, sender, receiver, flows,
               min_samples: int = DEFAULT_MIN_FLOW_SAMPLES) -> IntervalRecord:
    """``rec`` with the per-flow LDS estimates of ``flows`` (``(row hashes, names)``,
    :func:`host_sw.cli.args.load_flow_keys`) from the two synopses in
    ``details["flows"]``; unchanged when there are no flows or no estimate."""
    if flows is None or rec.estimate is None:
        return rec
    table, names = flows
    report = flow_report(sender, receiver, table, names, min_samples=min_samples)
    return dataclasses.replace(rec, details={**rec.details, "flows": report})


def snapshot_meta(snap: Snapshot) -> dict:
    """What a record keeps of one point's snapshot."""
    return {"seq": snap.seq, "packets": snap.packets, "flags": int(snap.flags),
            "valid": snap.valid, "timestamp": snap.timestamp}


def pair_snapshots(s: Snapshot, r: Snapshot, confidence: float, *, sender_meta=None,
                   receiver_meta=None, flows=None,
                   min_samples: int = DEFAULT_MIN_FLOW_SAMPLES) -> IntervalRecord:
    """The record of a sender's and a receiver's snapshot of one interval: invalid (no
    estimate) when either is, or when their sequence numbers differ. The metadata default
    to :func:`snapshot_meta`; ``flows`` adds per-flow LDS estimates (:func:`with_flows`)."""
    notes = []
    for side, snap in (("sender", s), ("receiver", r)):
        problem = snap.integrity_problem          # recomputed: a file edited after the read
        notes += [f"{side}: {n}" for n in snap.notes + (
            [problem] if problem is not None and problem not in snap.notes else [])]
    valid = s.valid and r.valid
    if s.seq != r.seq:
        valid = False
        notes.append(f"sender interval {s.seq} and receiver interval {r.seq} differ")
    rec = record_for_pair(s.synopsis, r.synopsis, confidence=confidence, interval=s.seq,
                          when=max(s.read_time, r.read_time),
                          sender_meta=sender_meta or snapshot_meta(s),
                          receiver_meta=receiver_meta or snapshot_meta(r), valid=valid,
                          notes=notes)
    return with_flows(rec, s.synopsis, r.synopsis, flows, min_samples)


def unread_record(interval: int | None, config, *, notes, sender_meta=None,
                  receiver_meta=None, when: float | None = None) -> IntervalRecord:
    """The record of an interval that has no pair of snapshots (a point could not be
    read, or no point saw the interval): invalid, no estimate, ``notes`` say why."""
    return IntervalRecord(synopsis=config.kind, config_id=config.config_id, estimate=None,
                          interval=interval, time=when if when is not None else time.time(),
                          valid=False, sender=dict(sender_meta or {}),
                          receiver=dict(receiver_meta or {}), notes=tuple(notes))


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


#: The checks a record read back must pass (key: the problem when it fails); values may
#: also be null. What ``export`` and ``plot`` print of a record is one of these.
_RECORD_CHECKS = {
    "interval": (_is_int, "an integer"),
    "run": (_is_int, "an integer"),
    "time": (_is_number, "a finite number"),
    "valid": (lambda v: isinstance(v, bool), "true or false"),
    "synopsis": (lambda v: isinstance(v, str), "a string"),
    "config_id": (lambda v: _is_int(v) or (isinstance(v, str) and _is_hex(v)),
                  "a hexadecimal string"),
    "sender": (lambda v: isinstance(v, dict), "an object"),
    "receiver": (lambda v: isinstance(v, dict), "an object"),
    "notes": (lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v),
              "a list of strings"),
    "true": (lambda v: isinstance(v, dict) and all(
        v.get(k) is None or _is_number(v[k]) for k in ("mean", "std")), "an object"),
}

_ESTIMATE_NUMBERS = ("mean", "std", "lost", "loss_rate", "samples", "sent", "received")


def _is_hex(text: str) -> bool:
    try:
        int(text, 16)
    except ValueError:
        return False
    return True


def _record_problem(d) -> str | None:
    """Why the JSON value ``d`` is not a record :func:`read_records` accepts, or None."""
    if not isinstance(d, dict) or "estimate" not in d:
        return "not an ldactl record (no 'estimate' key)"
    for key, (ok, what) in _RECORD_CHECKS.items():
        if d.get(key) is not None and not ok(d[key]):
            return f"'{key}' must be {what}, not {d[key]!r:.60}"
    e = d["estimate"]
    if e is None:
        return None
    if not isinstance(e, dict):
        return f"'estimate' must be an object or null, not {e!r:.60}"
    for key in _ESTIMATE_NUMBERS:
        if e.get(key) is not None and not _is_number(e[key]):
            return f"'estimate.{key}' must be a finite number, not {e[key]!r:.60}"
    ci = e.get("ci")
    if ci is not None and not (isinstance(ci, list) and len(ci) == 2
                               and all(c is None or _is_number(c) for c in ci)):
        return f"'estimate.ci' must be [low, high], not {ci!r:.60}"
    return _impossible(e) or _opa_problem(e)


#: Estimate counts that are never negative (packets), and OPA's integer counts.
_COUNTS = ("lost", "samples", "sent", "received", "reordered", "unrecovered_groups",
           "foreign", "unrecovered")
#: OPA's percentiles (ns).
_PERCENTILES = ("p50", "p90", "p99", "p99.9", "max")


def _impossible(e: dict) -> str | None:
    """Why an estimate's values cannot be (a confidence interval upside down, a loss
    rate outside 0..1, negative counts, more received or lost than sent, a negative
    standard deviation), or None."""
    ci = e.get("ci")
    if ci is not None and None not in ci and ci[0] > ci[1]:
        return f"'estimate.ci' low {ci[0]!r} is above its high {ci[1]!r}"
    rate = e.get("loss_rate")
    if rate is not None and not 0 <= rate <= 1:
        return f"'estimate.loss_rate' must be 0..1, not {rate!r}"
    for key in _COUNTS:
        v = e.get(key)
        if v is not None and not (_is_number(v) and v >= 0 and v == int(v)):
            return f"'estimate.{key}' must be a count (an integer >= 0), not {v!r:.60}"
    sent = e.get("sent")
    for key in ("received", "lost"):
        v = e.get(key)
        if sent is not None and v is not None and v > sent:
            return f"'estimate.{key}' {v} is more than 'estimate.sent' {sent}"
    std = e.get("std")
    if std is not None and std < 0:
        return f"'estimate.std' must be >= 0, not {std!r}"
    return None


def _range_problem(e: dict, key: str) -> str | None:
    """Why an OPA percentile's range ``{key}_range`` (``[low, high]``, null for an open
    end) cannot be: malformed, upside down, or not holding the percentile; else None."""
    r = e.get(f"{key}_range")
    if r is None:
        return None
    if not (isinstance(r, list) and len(r) == 2
            and all(x is None or _is_number(x) for x in r)):
        return f"'estimate.{key}_range' must be [low, high] (null: open), not {r!r:.60}"
    lo, hi = r
    if lo is not None and hi is not None and lo > hi:
        return f"'estimate.{key}_range' low {lo!r} is above its high {hi!r}"
    v = e.get(key)
    if v is not None and ((lo is not None and v < lo) or (hi is not None and v > hi)):
        return f"'estimate.{key}' {v!r} is outside its range {r!r}"
    return None


def _opa_problem(e: dict) -> str | None:
    """Why an OPA estimate's own values are malformed (percentiles, the recovered
    fraction, the histogram ``histogram_s``), or None."""
    for key in _PERCENTILES:
        if e.get(key) is not None and not _is_number(e[key]):
            return f"'estimate.{key}' must be a finite number, not {e[key]!r:.60}"
        bad = _range_problem(e, key)
        if bad:
            return bad
    unknown, samples, received = e.get("unrecovered"), e.get("samples"), e.get("received")
    if None not in (unknown, samples, received) and unknown + samples != received:
        return (f"'estimate.unrecovered' {unknown} and 'estimate.samples' {samples} are "
                f"not the {received} received")
    frac = e.get("recovered_fraction")
    if frac is not None and not (_is_number(frac) and 0 <= frac <= 1):
        return f"'estimate.recovered_fraction' must be 0..1, not {frac!r:.60}"
    hist = e.get("histogram_s")
    if hist is None:
        return None
    bad = "'estimate.histogram_s' must be {le: [bounds], count: [cumulative counts], sum}"
    if not isinstance(hist, dict):
        return bad
    le, count, total = hist.get("le"), hist.get("count"), hist.get("sum")
    if not (isinstance(le, list) and isinstance(count, list) and len(le) == len(count)
            and all(_is_number(x) for x in le) and _is_number(total)
            and all(_is_int(c) and c >= 0 for c in count)):
        return bad
    if any(b <= a for a, b in zip(le, le[1:])) or any(b < a for a, b in zip(count, count[1:])):
        return f"{bad}: bounds increasing, counts not decreasing"
    samples = e.get("samples")
    if count and samples is not None and count[-1] > samples:
        return f"'estimate.histogram_s' counts {count[-1]} delays of {samples} samples"
    return None


def read_records(path) -> list[IntervalRecord]:
    """The records of a JSON-lines file (``watch --output``, the demo's
    ``records.jsonl``); a line that is not a record (malformed JSON, a missing key, a value
    of the wrong type) is a :class:`RunFailure` naming the line."""
    text = read_text(path, "records")
    out = []
    for k, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        d = parse_json(line, f"{path}:{k}")
        problem = _record_problem(d)
        if problem:
            raise RunFailure(f"{path}:{k}: {problem}")
        try:
            out.append(IntervalRecord.from_json(d))
        except ValueError as e:
            raise RunFailure(f"{path}:{k}: {e}") from None
    return out
