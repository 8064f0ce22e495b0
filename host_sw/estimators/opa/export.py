# SPDX-License-Identifier: BSD-2-Clause
"""OPA from two export captures: the sender's synopsis chunks (its OPA words) and
send-record frames, the receiver's receive-record frames → one record per interval,
the same estimate as from two packet captures (``ldactl estimate --synopsis opa``).

In the host data flow (docs/DESIGN.md, "offline analysis") this is the export branch
for OPA: capture frames ► :class:`~host_sw.contracts.frames.control_frame.SynopsisReassembler`
and :class:`~host_sw.contracts.opa.records.RecordReassembler` (tags, forward interval
numbers, completeness: a changed, missing or replayed frame is an error naming the
capture, the frame or the interval — never a number) ► per interval the sender's words
and both points' :class:`~host_sw.model.golden_opa.PacketRecords` ► the OPA pair estimator
(:func:`~host_sw.estimators.record.record_for_pair`, as for packet captures).

The sender's records carry groups, not packet hashes (docs/SPEC.md §8.7; fixed-width or
Rice-coded, the parser decodes either; lossy-coded records put a note with their bound
on the interval): the recovery
only regroups them (the timestamp layer, §8.4), so each gets the group's smallest hash
``G << (64 − log2 g)``. The receiver's carry the whole packet hashes and the arrival
ticks (fixed-width or Rice-coded, lossless: the same records either way, §8.7 "Coded
receiver records"). Under sampling (``record_groups`` < g) the interval is the
recorded groups: the other groups' words are left out at both points. An interval whose
stream lost records (``dropped``), whose two points sampled differently, or whose
sender records disagree with its words is reported invalid with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.frames.frame_format import (
    INVALID_FLAGS, ControlFrameError, MissingChunkError, mac_to_str,
)
from host_sw.contracts.frames.control_frame import SynopsisReassembler
from host_sw.contracts.frames.frame_format import MTU_PAYLOAD, TYPE_SYNOPSIS
from host_sw.contracts.hashing import ETHERTYPE_CONTROL
from host_sw.contracts.opa.records import (TYPE_OPA_RECORDS, IntervalRecords, Point,
                                           RecordReassembler, lossy_error_bound)
from host_sw.contracts.synopsis import Synopsis
from host_sw.estimators.opa.recovery import recover_pair
from host_sw.estimators.record import IntervalRecord, record_for_pair
from host_sw.model.golden_opa import PacketRecords, opa_synopsis

__all__ = ["ExportContents", "read_export", "opa_export_records", "interval_record",
           "records_disagree"]


@dataclass
class ExportContents:
    """What one export capture holds, by interval: reassembled synopses (OPA words) and
    record streams of one point, with the capture time (ns) that completed each."""
    synopses: dict = field(default_factory=dict)
    records: dict = field(default_factory=dict)
    when_ns: dict = field(default_factory=dict)
    point: Point | None = None
    #: The exporting device's MAC address (of every frame), None without frames.
    source: bytes | None = None


def read_export(frames, timestamps_ns, config: OpaConfig, name: str, *,
                mtu: int = MTU_PAYLOAD, key: bytes | None = None) -> ExportContents:
    """Every complete interval of one capture's control frames. ``ControlFrameError``
    (a ``ValueError``) names the capture, the frame and the interval of the first
    frame that is not acceptable, or the first interval left incomplete."""
    synopses = SynopsisReassembler(config, mtu=mtu, key=key)
    records = RecordReassembler(config, mtu=mtu, key=key)
    out, source = ExportContents(), None
    for n, (frame, t) in enumerate(zip(frames, np.asarray(timestamps_ns).tolist()), 1):
        if len(frame) < 16 or int.from_bytes(frame[12:14], "big") != ETHERTYPE_CONTROL:
            continue
        ftype = frame[15]
        if ftype not in (TYPE_SYNOPSIS, TYPE_OPA_RECORDS):
            continue        # markers and other kinds' frames
        try:
            if source is None:
                source = bytes(frame[6:12])
            if frame[6:12] != source:
                raise ControlFrameError(f"frames from {mac_to_str(frame[6:12])} and "
                                        f"{mac_to_str(source)}: give one device's export")
            if ftype == TYPE_SYNOPSIS:
                done = synopses.add(frame)
                if done is not None:
                    out.synopses[done.seq] = done
                continue
            done = records.add(frame)
        except ControlFrameError as e:
            raise type(e)(f"{name}: frame {n}: {e}") from None
        if done is not None:
            if out.point not in (None, done.point):
                raise ControlFrameError(f"{name}: records of both points in one capture")
            out.point = done.point
            out.records[done.seq] = done
            out.when_ns[done.seq] = t
    out.source = source
    for seq in synopses.pending:
        try:
            synopses.finish(seq)
        except ControlFrameError as e:
            raise type(e)(f"{name}: {e}") from None
    for source_seq in records.pending:
        raise MissingChunkError(f"{name}: the {source_seq[1].value}'s records of interval "
                                f"{source_seq[2]} are incomplete: "
                                f"{records.missing(source_seq)}")
    return out


def _sender_records(config: OpaConfig, rec: IntervalRecords) -> PacketRecords:
    gbits = config.groups.bit_length() - 1
    keys = np.asarray(rec.keys, dtype=np.uint64)
    packet = keys << np.uint64(64 - gbits) if gbits else np.zeros(len(keys), np.uint64)
    return PacketRecords(packet, np.asarray(rec.timestamps, dtype=np.int64))


def _recorded_words(synopsis: Synopsis, groups: int) -> Synopsis:
    """The sender's words of the recorded groups ``0 … groups − 1`` (the others zero)."""
    if groups == synopsis.config.groups:
        return synopsis
    fields = {}
    for name in synopsis.config.layout.names:
        a = np.array(synopsis[name], copy=True)
        a.reshape(-1)[groups:] = 0
        fields[name] = a
    return Synopsis(synopsis.config, fields)


def _problems(config, seq, words, s_rec, r_rec) -> list[str]:
    """Why interval ``seq`` gives no numbers (empty: it does)."""
    out = []
    for side, r in (("sender", s_rec), ("receiver", r_rec)):
        if r.dropped:
            out.append(f"interval {seq}: the {side}'s device dropped {r.dropped} records "
                       f"(its export could not keep up; record fewer groups)")
    if s_rec.record_groups != r_rec.record_groups:
        out.append(f"interval {seq}: the sender recorded {s_rec.record_groups} groups, the "
                   f"receiver {r_rec.record_groups}: both points must sample alike")
    if out:
        return out
    return records_disagree(config, seq, "sender", s_rec.keys.astype(np.int64), words,
                            s_rec.record_groups)


def records_disagree(config: OpaConfig, seq: int, side: str, groups: np.ndarray,
                     words: Synopsis, record_groups: int) -> list[str]:
    """Why a point's records of interval ``seq`` (``groups``: each record's group) do not
    match that point's OPA ``words`` (``w`` per recorded group), as a one-item list;
    empty when they match."""
    counts = np.bincount(groups, minlength=config.groups)[:record_groups]
    w = words.count.reshape(-1).astype(np.int64)[:record_groups]
    bad = np.flatnonzero(counts != w)
    if not len(bad):
        return []
    g = int(bad[0])
    return [f"interval {seq}: the {side}'s records of group {g} ({counts[g]}) do not "
            f"match its OPA words (w = {w[g]}) in {len(bad)} group(s)"]


def opa_export_records(sender: ExportContents, receiver: ExportContents, config: OpaConfig,
                       *, confidence: float = 0.98) -> list[IntervalRecord]:
    """One record per interval found in both exports (module docstring)."""
    if sender.point is Point.RECEIVER or receiver.point is Point.SENDER:
        raise ControlFrameError("the sender's export holds receive records or the "
                                "receiver's send records: give the sender's export first")
    if sender.source is not None and sender.source == receiver.source:
        raise ControlFrameError(f"both exports come from one device "
                                f"({mac_to_str(sender.source)}): the same point twice; give "
                                f"the sender's and the receiver's export")
    common = sorted(set(sender.synopses) & set(sender.records) & set(receiver.records))
    if not common:
        raise MissingChunkError(
            f"no interval with the sender's words and records and the receiver's records "
            f"(sender words {sorted(sender.synopses)}, sender records "
            f"{sorted(sender.records)}, receiver records {sorted(receiver.records)})")
    out = []
    for seq in common:
        syn, s_rec, r_rec = sender.synopses[seq], sender.records[seq], receiver.records[seq]
        when = receiver.when_ns.get(seq)
        out.append(interval_record(config, seq, syn.synopsis, int(syn.flags), s_rec, r_rec,
                                   confidence=confidence,
                                   when=None if when is None else when / 1e9))
    return out


def interval_record(config: OpaConfig, seq: int, words: Synopsis, flags: int,
                    s_rec: IntervalRecords, r_rec: IntervalRecords, *,
                    confidence: float = 0.98, when: float | None = None,
                    sender_meta: dict | None = None, receiver_meta: dict | None = None,
                    notes=()) -> IntervalRecord:
    """The record of interval ``seq`` from the sender's OPA ``words`` (with its interval
    ``flags``) and both points' complete record streams — one export interval, or one
    row of ``ldactl watch --records``. A valid record's ``details`` hold the recovery
    (``opa``) and the receiver's packet hashes (``opa_hashes``) for the per-packet
    output."""
    problems = _problems(config, seq, words, s_rec, r_rec)
    if flags & INVALID_FLAGS:
        problems.append(f"sender: interval flags {flags:#04x} (invalid)")
    notes = [*notes, *problems]
    if s_rec.record_groups < config.groups:
        notes.append(f"sampled: groups 0..{s_rec.record_groups - 1} of {config.groups} "
                     f"recorded ({s_rec.record_groups / config.groups:.2%})")
    if s_rec.shift > 0:
        notes.append(f"sender records lossy (shift {s_rec.shift}): every send tick, hence "
                     f"every delay, within ±{lossy_error_bound(s_rec.shift)} ticks")
    recorded = _recorded_words(words, s_rec.record_groups)
    s_packets = _sender_records(config, s_rec)
    r_packets = PacketRecords(np.asarray(r_rec.keys, np.uint64),
                              np.asarray(r_rec.timestamps, np.int64))
    rec = record_for_pair(
        recorded, opa_synopsis(config, r_packets.packet), confidence=confidence,
        interval=seq, when=when,
        sender_meta=sender_meta or {"seq": seq, "flags": flags, "packets": len(s_rec.keys)},
        receiver_meta=receiver_meta or {"seq": seq, "packets": len(r_rec.keys)},
        valid=not problems, notes=notes, sender_cache=s_packets, receiver_cache=r_packets)
    if rec.estimate is None:
        return rec
    # the recovery the estimate made (recover_pair keeps it for these very inputs)
    return replace(rec, details={"opa": recover_pair(recorded, s_packets, r_packets),
                                 "opa_hashes": r_packets.packet})
