# SPDX-License-Identifier: BSD-2-Clause
"""The interval-estimate record: one interval's estimate with where it came from.

In the host data flow (``docs/DESIGN.md``) a record is the result of "snapshots (or a
simulated interval) ► estimators": ``ldactl simulate``, ``watch`` and ``estimate`` and the
demo (``sim_tb/demo/demo.py``) all produce :class:`IntervalRecord` objects, the CLI prints them
with one table renderer (:mod:`host_sw.cli.output.table`), and ``watch --output``, ``estimate
--json``, the demo's ``records.jsonl`` and the input of ``export`` and ``plot`` are their
one JSON form, one object per line (:meth:`IntervalRecord.to_json`)::

    {"interval": seq, "time": unix_s, "valid": bool, "synopsis": kind, "config_id": "0x…",
     "sender": {"seq", "packets", "flags", …}, "receiver": {…},
     "estimate": {"mean", "std", "ci": [lo, hi], "lost", "loss_rate", "samples", "sent",
                  "received"} | null,
     "notes": [...], "true": {...} (when the source knows the truth),
     "problem": "…" (when the two sources cannot be paired)}

(``estimate`` is :func:`host_sw.estimators.measure.estimate_pair`'s dict without its
notes.) ``ldactl simulate --json`` prints the compact form of its published contract,
:meth:`IntervalRecord.summary_json` — the same record's ``run``, ``synopsis``,
``config_id``, ``true`` and five of the estimate's keys (an OPA run adds its
percentiles).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from host_sw.contracts.config_base import ConfigMismatch
from host_sw.contracts.config import check_comparable
from host_sw.contracts.synopsis import Synopsis
from host_sw.estimators.measure import estimate_pair, json_number
from host_sw.estimators.opa.recovery import SUMMARY_KEYS as OPA_SUMMARY_KEYS

__all__ = ["IntervalRecord", "record_for_pair", "truth_json", "SUMMARY_ESTIMATE_KEYS",
           "SUMMARY_KIND_KEYS"]

#: The estimate keys of ``ldactl simulate --json`` (its published contract).
SUMMARY_ESTIMATE_KEYS = ("mean", "std", "lost", "samples", "ci")
#: The estimate keys a kind adds to that line, by kind (OPA: its percentiles).
SUMMARY_KIND_KEYS = {"opa": OPA_SUMMARY_KEYS}

_JSON_KEYS = ("interval", "time", "valid", "synopsis", "config_id", "sender", "receiver",
              "estimate", "notes", "true", "run", "problem")


@dataclass(frozen=True, kw_only=True)
class IntervalRecord:
    """One interval's estimate (``None`` when the interval is invalid: ``notes`` say why),
    its provenance and, when the source knows it, the truth."""
    synopsis: str
    config_id: int | None
    estimate: dict | None
    interval: int | None = None
    #: Unix time of the reading (the later of the two points'); for captures, the
    #: interval's last capture timestamp.
    time: float | None = None
    valid: bool = True
    #: What each point reported of the interval (sequence number, packets, flags, …).
    sender: dict = field(default_factory=dict)
    receiver: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    true: dict | None = None
    #: The run of a simulation (``ldactl simulate --runs``).
    run: int | None = None
    #: Why the two sources are no pair (offline: ``same_capture``, ``unrelated_captures``,
    #: ``swapped``, ``clock_offset``; :class:`host_sw.estimators.offline.PairProblem`);
    #: ``None`` when they are. A record with a problem is invalid.
    problem: str | None = None
    #: Estimator figures beside the estimate (LDS per-flow errors, …); not in the JSON.
    details: dict = field(default_factory=dict, compare=False)
    #: Keys of a record read back that this type does not know, written back unchanged.
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        """The record's JSON object (module docstring); ``true``, ``run`` and
        ``problem`` only when known."""
        d = {"interval": self.interval, "time": self.time, "valid": self.valid,
             "synopsis": self.synopsis,
             "config_id": None if self.config_id is None else f"{self.config_id:#010x}",
             "sender": self.sender, "receiver": self.receiver, "estimate": self.estimate,
             "notes": list(self.notes)}
        if self.true is not None:
            d["true"] = self.true
        if self.run is not None:
            d["run"] = self.run
        if self.problem is not None:
            d["problem"] = self.problem
        d.update(self.extra)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "IntervalRecord":
        """A record from its JSON object (:meth:`to_json`'s inverse)."""
        if not isinstance(d, dict) or "estimate" not in d:
            raise ValueError("not an ldactl record (no 'estimate' key)")
        config_id = d.get("config_id")
        return cls(synopsis=d.get("synopsis"),
                   config_id=int(config_id, 16) if isinstance(config_id, str) else config_id,
                   estimate=d["estimate"], interval=d.get("interval"), time=d.get("time"),
                   valid=d.get("valid"), sender=d.get("sender") or {},
                   receiver=d.get("receiver") or {}, notes=tuple(d.get("notes") or ()),
                   true=d.get("true"), run=d.get("run"), problem=d.get("problem"),
                   extra={k: v for k, v in d.items() if k not in _JSON_KEYS})

    def summary_json(self) -> dict:
        """``ldactl simulate --json``'s line: ``run``, ``synopsis``, ``config_id``,
        ``true`` and the estimate's :data:`SUMMARY_ESTIMATE_KEYS`, then the kind's
        :data:`SUMMARY_KIND_KEYS`."""
        e = self.estimate or {}
        keys = SUMMARY_ESTIMATE_KEYS + SUMMARY_KIND_KEYS.get(self.synopsis, ())
        return {"run": self.run, "synopsis": self.synopsis,
                "config_id": f"{self.config_id:#010x}", "true": self.true,
                "estimate": {k: e.get(k) for k in keys}}


def truth_json(truth) -> dict:
    """The ``true`` object of a record from a simulated or captured interval's
    :class:`~host_sw.model.observation.GroundTruth`."""
    return {"mean": json_number(truth.mean), "std": json_number(truth.std),
            "sent": int(truth.sent), "received": int(truth.received),
            "lost": int(truth.lost)}


#: ``problem`` of a pair whose estimate cannot be (more received than sent, a negative
#: mean delay): the roles are swapped, or the two are not one stream at two points.
SWAPPED = "swapped"
#: ``problem`` of two synopses equal in every counter: one point given twice.
SAME_POINT = "same_point"


def impossible_pair(sender: Synopsis, receiver: Synopsis,
                    estimate: dict) -> tuple[str, str] | None:
    """``(problem, reason)`` when an estimate of two synopses cannot be a sender's and a
    receiver's of one stream: the receiver counted more packets than the sender (a
    negative loss), a negative mean delay, or two synopses equal in every counter (the
    same point twice: every delay 0, nothing lost); else None."""
    sent, received = estimate.get("sent"), estimate.get("received")
    lost = estimate.get("lost")
    if (sent is not None and received is not None and received > sent) or \
            (lost is not None and lost < 0):
        return SWAPPED, (
            f"the receiver counted more packets than the sender ({received} > {sent}, a "
            f"loss of {lost}): sender and receiver swapped, or not one stream at two "
            f"points; no estimate")
    mean = estimate.get("mean")
    if mean is not None and mean < 0:
        return SWAPPED, (
            f"negative mean delay ({mean:.1f} ns): sender and receiver swapped, or their "
            f"clocks disagree by more than the delays; no estimate")
    if sender.config == receiver.config and sent and _same_counters(sender, receiver):
        return SAME_POINT, (
            "the sender's and the receiver's synopses are equal in every counter (every "
            "delay 0, nothing lost): the same point twice; give the two points' own")
    return None


def _same_counters(a: Synopsis, b: Synopsis) -> bool:
    names = [f.name for f in a.config.layout.fields]
    return all(np.array_equal(a[n], b[n]) for n in names)


def record_for_pair(sender: Synopsis, receiver: Synopsis, *, confidence: float = 0.98,
                    interval=None, when=None, sender_meta=None, receiver_meta=None,
                    valid: bool = True, notes=(), sender_cache=None, receiver_cache=None,
                    hashers=None, problem: str | None = None,
                    interval_ns=None) -> IntervalRecord:
    """The record of one interval from its two synopses. An invalid pair (``valid``
    false, a ``problem``, or configurations that differ) gets no estimate; ``notes``
    say why. ``when`` defaults to now (a live reading). The caches, ``hashers`` and
    ``interval_ns`` (time mode: the interval's length) go to
    :func:`~host_sw.estimators.measure.estimate_pair`."""
    notes = list(notes)
    valid = valid and problem is None
    base = {"interval": interval, "time": when if when is not None else time.time(),
            "problem": problem,
            "synopsis": sender.config.kind, "config_id": sender.config.config_id,
            "sender": dict(sender_meta or {}), "receiver": dict(receiver_meta or {})}
    try:
        check_comparable(sender.config, receiver.config)
    except ConfigMismatch as e:
        return IntervalRecord(**base, valid=False, estimate=None, notes=(*notes, str(e)))
    estimate = None
    if valid:
        estimate = estimate_pair(sender, receiver, confidence=confidence,
                                 sender_cache=sender_cache, receiver_cache=receiver_cache,
                                 hashers=hashers, interval_ns=interval_ns)
        notes += estimate.pop("notes")
        impossible = impossible_pair(sender, receiver, estimate)
        if impossible is not None:
            base["problem"], reason = impossible
            if interval_ns and base["problem"] == SWAPPED:
                reason += (" (in time mode also: more packets in flight into this interval "
                           "than out of it, on a path whose delay is a large part of it)")
            return IntervalRecord(**base, valid=False, estimate=None,
                                  notes=(reason, *notes))
        if estimate.get("mean") is None and not any(n.startswith("no mean") for n in notes):
            notes.append("no mean: no sample both points agree on (every cell or bucket "
                         "differs between the points in count or content: lost packets "
                         "or collisions)" if not estimate.get("samples") else
                         "no mean: the estimator gave none")
    return IntervalRecord(**base, valid=bool(valid), estimate=estimate, notes=tuple(notes))
