# SPDX-License-Identifier: BSD-2-Clause
"""Offline analysis of two packet captures: the records of ``ldactl estimate s.pcap
r.pcap``, with the pairing checked before any number is given.

In the host data flow (``docs/DESIGN.md``, "offline analysis") this is the capture
branch of "snapshots ► estimators ► records": two captures ►
:func:`host_sw.model.pcap.pair_captures` (both points' observations per interval, with
the truth) ► :func:`check_pairing` ► golden synopses ► estimators ► one
:class:`~host_sw.estimators.record.IntervalRecord` per interval
(:func:`capture_records`).

Two captures hold more than two devices would: every packet with its timestamp at both
points. So

* an estimator that decodes (RDA) gets both points' packet caches, built once per
  capture (:func:`capture_cache`), and repairs the decoded packets: its mean is then the
  exact mean of the packets both points saw;
* a pair that cannot be a sender's and a receiver's capture of the same traffic is
  detected (:class:`PairProblem`): the records are invalid, with the reason in their
  notes and ``problem``, and carry neither an estimate nor a truth;
* a record's time is the interval's last capture timestamp, not the time of analysis.

Example
-------
>>> records = capture_records("s.pcap", "r.pcap", LdaConfig())   # doctest: +SKIP
>>> [r.valid for r in records], records[0].problem                # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass

import numpy as np

from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.synopsis import Synopsis
from host_sw.estimators.flows import DEFAULT_MIN_FLOW_SAMPLES, flow_labels, flow_report
from host_sw.estimators.rli.offline import (RliCapturePair, flow_table, interval_truth,
                                            stream_rli_pair)
from host_sw.estimators.offline_jobs import inline_runner
from host_sw.estimators.offline_opa import interval_details, interval_inputs
from host_sw.estimators.offline_stream import (_OPA_DTYPE, StreamedPair, common_window,
                                               mapped_cache, stream_pair)
from host_sw.estimators.opa.run import opa_details, opa_records, opa_synopses
from host_sw.estimators.rda.decode import PacketCache
from host_sw.estimators.record import IntervalRecord, record_for_pair, truth_json
from host_sw.model.observation import IntervalObservation, Observation
from host_sw.model.golden_lda_rda_lds import Hashers, hashers_for
from host_sw.model.pcap import Capture, CaptureError, pair_captures, read_pcap
from host_sw.model.pcap_stream import DEFAULT_CHUNK_BYTES, capture_linktype
from host_sw.model.golden_rli import RliReceiverStats
from host_sw.model.traffic import Trace

__all__ = ["PairProblem", "PairingCheck", "check_pairing", "capture_cache",
           "capture_records", "MIN_MATCHED_FRACTION", "MAX_NEGATIVE_FRACTION"]

#: Below this share of the smaller capture's packets found in the other capture, the two
#: captures are not of the same traffic. (A lossy path keeps it near 1: the receiver's
#: packets are a subset of the sender's.)
MIN_MATCHED_FRACTION = 0.5

#: Above this share of matched packets with a negative delay, the clocks disagree by more
#: than the delays (a few such packets are noted; a single clock step can cause them).
MAX_NEGATIVE_FRACTION = 0.001

#: Above this share of a capture's packets repeated (the same invariant bytes as an
#: earlier packet of the capture), the capture holds copies (every packet twice: two
#: interfaces, or a capture duplicated) and its counts are not the traffic's.
MAX_DUPLICATE_FRACTION = 0.01

#: Above this share of the receiver's packets (in the window both captures saw) not in
#: the sender capture, the receiver saw traffic the sender did not send: the roles are
#: swapped, or the captures are of different points.
MAX_FOREIGN_FRACTION = 0.001

#: The kinds whose estimator decodes the set difference from both points' packet caches.
_DECODING_KINDS = frozenset({"rda"})
#: Kinds whose synopses and per-interval caches come from hooks of their own,
#: ``(synopses, caches, details)``: the first two ``(config, iv, hashers)``, the third
#: ``(config, sender, receiver, iv, hashers)`` giving a valid interval's ``details`` (OPA:
#: per-packet records; the recovery and the truth's percentiles for the per-packet output).
_KIND_HOOKS = {"opa": (opa_synopses, opa_records, opa_details)}


class PairProblem(str, enum.Enum):
    """Why two captures are no sender-receiver pair (the record's ``problem``)."""
    SAME_CAPTURE = "same_capture"
    UNRELATED = "unrelated_captures"
    SWAPPED = "swapped"
    CLOCK_OFFSET = "clock_offset"
    DUPLICATED = "duplicated_packets"
    FOREIGN = "foreign_packets"
    NO_COMMON_WINDOW = "no_common_window"


@dataclass(frozen=True)
class PairingCheck:
    """What the pairing of two captures looks like, over all intervals.

    Attributes
    ----------
    problem:
        Why the pair is unusable, or ``None``.
    notes:
        The reason (first, when ``problem`` is set) and remarks that do not invalidate.
    sender_packets, receiver_packets:
        Counted packets of each capture.
    matched:
        Counted packets found in both captures.
    negative:
        Matched packets whose receiver timestamp is before the sender's.
    """
    problem: PairProblem | None
    notes: tuple[str, ...]
    sender_packets: int
    receiver_packets: int
    matched: int
    negative: int

    @property
    def valid(self) -> bool:
        return self.problem is None


def _counted(obs: Observation):
    """``(packet ids, timestamps)`` of the counted packets of an observation."""
    keep = obs.trace.counted[obs.indices]
    return obs.packet_ids[keep], obs.timestamps[keep]


def _matched_delays(intervals: list[IntervalObservation]):
    """``(sender packets, receiver packets, delays of the matched ones)`` over all
    intervals (a packet in different intervals at the two points still matches)."""
    sides = []
    for side in ("sender", "receiver"):
        parts = [_counted(getattr(iv, side)) for iv in intervals]
        ids = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
        ts = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
        sides.append((ids, ts))
    (s_ids, s_ts), (r_ids, r_ts) = sides
    _, si, ri = np.intersect1d(s_ids, r_ids, assume_unique=True, return_indices=True)
    return len(s_ids), len(r_ids), r_ts[ri] - s_ts[si]


def _duplicates(intervals: list[IntervalObservation]) -> dict:
    """Per side, the counted packets whose invariant bytes repeat an earlier packet's."""
    out = {}
    for side in ("sender", "receiver"):
        trace = getattr(intervals[0], side).trace
        counted = trace.counted
        windows = np.ascontiguousarray(trace.windows[counted])
        keys = windows.view(np.dtype((np.void, windows.shape[1]))).ravel()
        out[side] = int(len(keys) - len(np.unique(keys)))
    return out


def _same_capture(intervals: list[IntervalObservation]) -> bool:
    s, r = intervals[0].sender.trace, intervals[0].receiver.trace
    return (s is r or (len(s) == len(r) and np.array_equal(s.timestamps, r.timestamps)
                       and np.array_equal(s.windows, r.windows)))


def _problem(sent: int, received: int, matched: int, negative: int, same: bool,
             zero: int = 0, duplicates: dict | None = None):
    """``(problem, reason)`` of a pairing, in the order the checks are made (``zero``:
    matched packets with a delay of exactly 0; ``duplicates``: per side, packets that
    repeat an earlier one of the same capture)."""
    if same:
        return PairProblem.SAME_CAPTURE, (
            "the same capture twice: both captures hold the same packets at the same "
            "timestamps (every delay is 0); give the sender's and the receiver's capture")
    if matched and zero > matched / 2:
        return PairProblem.SAME_CAPTURE, (
            f"the same point twice: {zero} of {matched} matched packets have a delay of "
            f"exactly 0; give the sender's and the receiver's capture")
    for side, n in (("sender", sent), ("receiver", received)):
        d = (duplicates or {}).get(side, 0)
        if n and d > MAX_DUPLICATE_FRACTION * n:
            return PairProblem.DUPLICATED, (
                f"duplicated packets: {d} of the {side}'s {n} packets ({d / n:.1%}) repeat "
                f"an earlier one byte for byte (a capture holding every packet twice?); "
                f"its counts are not the traffic's")
    smaller = min(sent, received)
    if smaller and matched < MIN_MATCHED_FRACTION * smaller:
        return PairProblem.UNRELATED, (
            f"unrelated captures: only {matched} of the {smaller} packets of the smaller "
            f"capture are in both ({matched / smaller:.1%}; captures of the same traffic "
            f"share at least {MIN_MATCHED_FRACTION:.0%})")
    if matched and negative > matched / 2:
        return PairProblem.SWAPPED, (
            f"sender and receiver swapped: {negative} of {matched} matched packets "
            f"({negative / matched:.1%}) reach the receiver before the sender sees them; "
            f"give the sender's capture first (or the receiver's clock is behind by more "
            f"than the delays)")
    if matched and negative > MAX_NEGATIVE_FRACTION * matched:
        return PairProblem.CLOCK_OFFSET, (
            f"clock offset larger than the delays: {negative} of {matched} matched "
            f"packets ({negative / matched:.2%}, more than {MAX_NEGATIVE_FRACTION:.1%}) "
            f"have a negative delay; synchronise the two capture clocks")
    return None, None


def check_pairing(intervals: list[IntervalObservation]) -> PairingCheck:
    """Whether paired captures (:func:`~host_sw.model.pcap.pair_captures`) are a
    sender's and a receiver's capture of the same traffic, with synchronised clocks.

    The checks, in order: the same capture twice (identical packets and timestamps);
    unrelated captures (fewer than :data:`MIN_MATCHED_FRACTION` of the smaller capture's
    packets in both); swapped captures (most matched packets with a negative delay);
    a clock offset larger than the delays (more than :data:`MAX_NEGATIVE_FRACTION`
    negative). Fewer negative delays than that are noted only.
    """
    if not intervals:
        return PairingCheck(None, (), 0, 0, 0, 0)
    sent, received, delays = _matched_delays(intervals)
    matched, negative = len(delays), int((delays < 0).sum())
    problem, reason = _problem(sent, received, matched, negative, _same_capture(intervals),
                               int((delays == 0).sum()), _duplicates(intervals))
    notes = [] if reason is None else [reason]
    if problem is None and negative:
        notes.append(f"{negative} of {matched} matched packets have a negative delay: "
                     f"the capture clocks disagree by more than the shortest delays")
    return PairingCheck(problem, tuple(notes), sent, received, matched, negative)


def capture_cache(trace: Trace, config: SynopsisConfig,
                  hashers: Hashers | None = None) -> PacketCache:
    """A capture's packet cache for RDA: every counted packet's ID with its timestamp in
    the configuration's ticks, built once and shared by every interval.

    IDs that occur more than once in the capture are left out (the RDA paper discards
    duplicates): their timestamps are ambiguous, so a decoded duplicate stays unrepaired
    and the estimate says so.
    """
    hashes = trace.hashes(config, hashers=hashers)
    everything = np.arange(len(trace), dtype=np.int64)
    ticks = Observation(trace, everything, trace.timestamps, everything).ticks(config)
    ids, ticks = hashes.packet[hashes.counted], ticks[hashes.counted]
    _, first, counts = np.unique(ids, return_index=True, return_counts=True)
    keep = first[counts == 1]
    return PacketCache.of((ids[keep], ticks[keep]))


def _side_meta(obs: Observation) -> dict:
    """What a capture holds of an interval: packets and first and last timestamp (ns)."""
    meta = {"packets": len(obs.timestamps)}
    if len(obs.timestamps):
        meta.update(first_ns=int(obs.timestamps.min()), last_ns=int(obs.timestamps.max()))
    return meta


def _interval_time(iv: IntervalObservation) -> float | None:
    """The interval's time: its last timestamp in either capture, Unix seconds."""
    last = [int(o.timestamps.max()) for o in (iv.sender, iv.receiver) if len(o.timestamps)]
    return max(last) / 1e9 if last else None


def _stream_problem(pair: StreamedPair):
    """``(problem, reason)`` of a streamed pair beyond :func:`_problem`'s: no window
    both captures saw, repeated packets, receiver packets the sender capture does not
    hold, mostly zero delays (one point twice), a mean delay below the clock error
    (the most negative delay)."""
    if pair.window is not None and pair.window[0] > pair.window[1]:
        return PairProblem.NO_COMMON_WINDOW, (
            "no window both captures saw: the receiver's capture ends before the "
            "sender's packets of its time could reach it")
    if pair.window is not None and pair.left_out["receiver"]:
        lo, hi, margin = pair.window
        if lo + margin > hi:
            return PairProblem.NO_COMMON_WINDOW, (
                f"the receiver holds {pair.left_out['receiver']} packets the sender's "
                f"capture does not, and the largest delay ({margin} ns) is longer than the "
                f"window both captures saw ({hi - lo} ns): nothing tells them from its "
                f"edges (clocks apart by more than the captures, or not one stream)")
    if pair.received and pair.unmatched > MAX_FOREIGN_FRACTION * pair.received:
        u, n = pair.unmatched, pair.received
        return PairProblem.FOREIGN, (
            f"the receiver holds {u} of {n} packets ({u / n:.2%}) the sender's capture "
            f"does not, within the window both saw: sender and receiver swapped, or not "
            f"one stream at two points")
    if pair.negative and pair.matched and pair.delay_min is not None:
        mean = pair.delay_sum / pair.matched
        if mean < -pair.delay_min:
            return PairProblem.CLOCK_OFFSET, (
                f"the mean delay ({mean:.1f} ns) is below the clock error the pair shows "
                f"(a delay of {pair.delay_min} ns): synchronise the two capture clocks")
    return None, None


def _window_note(pair: StreamedPair) -> str | None:
    if pair.window is None or pair.window[0] > pair.window[1]:
        return None
    lo, hi, margin = pair.window
    return (f"window both captures saw: sender times {lo} to {hi} ns (edges trimmed by "
            f"the largest delay, {margin} ns); left out {pair.left_out['sender']} sender "
            f"and {pair.left_out['receiver']} receiver packets outside it")


def _window_details(pair) -> dict | None:
    """A record's ``details["window"]``: the window both captures saw and what was left
    out (None: the whole captures)."""
    if pair.window is None or pair.window[0] > pair.window[1]:
        return None
    lo, hi, margin = pair.window
    return {"first_ns": lo, "last_ns": hi, "margin_ns": margin,
            "left_out": dict(pair.left_out)}


def _streamed_check(pair: StreamedPair | RliCapturePair) -> PairingCheck:
    """:func:`check_pairing` of a streamed pair (the same checks, from its counts, and
    :func:`_stream_problem`'s); RLI's pair carries the same counts."""
    same = pair.sent > 0 and pair.matched == pair.sent == pair.received == pair.zero
    problem, reason = _problem(pair.sent, pair.received, pair.matched, pair.negative, same,
                               pair.zero, pair.duplicates)
    if problem is None:
        problem, reason = _stream_problem(pair)
    notes = [] if reason is None else [reason]
    window = _window_note(pair)
    if window is not None:
        notes.append(window)
    if problem is None and pair.negative:
        notes.append(f"{pair.negative} of {pair.matched} matched packets have a negative "
                     f"delay: the capture clocks disagree by more than the shortest delays")
    return PairingCheck(problem, tuple(notes), pair.sent, pair.received, pair.matched,
                        pair.negative)


def _streamed_records(pair: StreamedPair, config, confidence: float,
                      min_flow_samples: int, flows=None,
                      time_ns: int | None = None, run=None) -> list[IntervalRecord]:
    """The records of a streamed pair: groups of intervals are tasks of ``run`` (one
    group in this process; the decoding, the per-flow reports and OPA's recovery are
    each interval's own work), in interval order."""
    check = _streamed_check(pair)
    run = run or inline_runner()
    if pair.opa is not None:
        return _opa_records(pair, config, check, confidence, time_ns, run)
    intervals = pair.intervals
    groups = [intervals] if run.inline or len(intervals) < 2 else [
        g.tolist() for g in np.array_split(np.asarray(intervals), min(len(intervals), 16))]
    table = None
    if flows is None and pair.flows is not None and check.valid:
        table = (pair.flows.table(), flow_labels(pair.flows))   # made once for all
    jobs = [_RecordsJob(ivs, config, check, confidence, time_ns, _window_details(pair),
                        {side: {iv: pair.synopsis(side, iv) for iv in ivs}
                         for side in ("sender", "receiver")},
                        {side: {iv: pair.side_meta(side, iv) for iv in ivs}
                         for side in ("sender", "receiver")},
                        {iv: pair.truth.json(iv) for iv in ivs} if check.valid else {},
                        {iv: pair.flow_truth.get(iv) for iv in ivs}, table, flows,
                        min_flow_samples,
                        pair.cache_files if pair.caches["sender"] is not None else None)
            for ivs in groups]
    return [rec for part in run.map(_records_task, jobs) for rec in part]


@dataclass
class _RecordsJob:
    """The records of a group of a streamed pair's intervals (a task): what those
    intervals need of the pair (its synopses, metas, truth; the flow table; RDA's
    caches as their files, mapped by the task)."""
    intervals: list
    config: SynopsisConfig
    check: PairingCheck
    confidence: float
    time_ns: int | None
    window: dict | None
    synopses: dict                # side -> {interval: Synopsis}
    meta: dict                    # side -> {interval: meta}
    truth: dict                   # interval -> the truth's JSON
    flow_truth: dict              # interval -> per-flow truth arrays, or None
    table: tuple | None           # (per-row flow hashes, names) of the flows seen
    flows: tuple | None           # the flows asked for (without their truth)
    min_flow_samples: int
    cache_files: dict | None      # RDA: side -> offline_stream.mapped_cache's files

    def side_meta(self, side: str, iv: int) -> dict:
        return self.meta[side][iv]


def _records_task(job: _RecordsJob) -> list[IntervalRecord]:
    check = job.check
    hashers = hashers_for(job.config)
    caches = (None, None)
    if check.valid and job.cache_files is not None:
        caches = (mapped_cache(job.cache_files["sender"]),
                  mapped_cache(job.cache_files["receiver"]))
    records = []
    for iv in job.intervals:
        s, r = job.synopses["sender"][iv], job.synopses["receiver"][iv]
        rec = _interval_record(job, check, iv, s, r, caches, hashers, job.confidence,
                               job.time_ns)
        if check.valid:
            details = {}
            if job.window is not None:
                details["window"] = job.window
            if job.flows is not None:
                details["flows"] = flow_report(s, r, job.flows[0], job.flows[1],
                                               min_samples=job.min_flow_samples)
            elif job.table is not None:
                details["flows"] = flow_report(
                    s, r, job.table[0], job.table[1], truth=job.flow_truth.get(iv),
                    min_samples=job.min_flow_samples)
            rec = dataclasses.replace(rec, true=job.truth[iv], details=details)
        records.append(rec)
    return records


def _interval_record(pair, check, iv, s, r, caches, hashers, confidence, time_ns):
    """The record of interval ``iv`` of a streamed pair from its two synopses (without
    truth and details)."""
    s_meta, r_meta = pair.side_meta("sender", iv), pair.side_meta("receiver", iv)
    last = [m["last_ns"] for m in (s_meta, r_meta) if "last_ns" in m]
    return record_for_pair(s, r, confidence=confidence, interval=iv,
                           when=max(last) / 1e9 if last else None, sender_meta=s_meta,
                           receiver_meta=r_meta, valid=check.valid, notes=check.notes,
                           sender_cache=caches[0], receiver_cache=caches[1],
                           hashers=hashers, interval_ns=time_ns,
                           problem=None if check.valid else check.problem.value)


@dataclass
class _OpaJob:
    """The records of one bucket of a streamed OPA pair's intervals (a task): the
    pair's per-interval figures those intervals need, not the pair."""
    q: int
    intervals: list
    opa: object                   # the pair's OpaSpill
    config: SynopsisConfig
    check: PairingCheck
    confidence: float
    time_ns: int | None
    meta: dict                    # side -> {interval: meta} of these intervals
    truth: dict                   # interval -> the truth's JSON
    window: dict | None

    def side_meta(self, side: str, iv: int) -> dict:
        return self.meta[side][iv]


def _opa_records(pair, config, check, confidence, time_ns, run) -> list[IntervalRecord]:
    """The records of a streamed OPA pair: one task per bucket of intervals
    (:func:`_opa_bucket_records`; the recovery is most of the work), in interval order."""
    intervals = pair.intervals
    buckets = pair.opa.bucket_of(intervals).tolist() if intervals else []
    groups: dict = {}
    for iv, q in zip(intervals, buckets):
        groups.setdefault(q, []).append(iv)
    window = _window_details(pair)
    jobs = [_OpaJob(q, ivs, pair.opa, config, check, confidence, time_ns,
                    {side: {iv: pair.side_meta(side, iv) for iv in ivs}
                     for side in ("sender", "receiver")},
                    {iv: pair.truth.json(iv) for iv in ivs} if check.valid else {}, window)
            for q, ivs in sorted(groups.items())]
    return [rec for part in run.map(_opa_bucket_records, jobs) for rec in part]


def _opa_bucket_records(job: _OpaJob) -> list[IntervalRecord]:
    """Records of one bucket of OPA intervals: the words and records of each interval
    from the spilled records (:mod:`host_sw.estimators.offline_opa`), the recovery."""
    hashers = hashers_for(job.config)
    spilled = {iv: (s, r) for iv, s, r in job.opa.bucket(job.q)}
    empty = {name: np.zeros(0, _OPA_DTYPE[name]) for name in _OPA_DTYPE.names}
    out = []
    for iv in job.intervals:
        inputs = interval_inputs(job.config, *spilled.get(iv, (empty, empty)))
        s, r = inputs["synopses"]
        caches = inputs["records"] if job.check.valid else (None, None)
        rec = _interval_record(job, job.check, iv, s, r, caches, hashers, job.confidence,
                               job.time_ns)
        if job.check.valid:
            details = interval_details(job.config, s, inputs)
            if job.window is not None:
                details["window"] = job.window
            rec = dataclasses.replace(rec, true=job.truth[iv], details=details)
        out.append(rec)
    return out


def _require_ethernet(*paths):
    """Refuse a capture file whose link type is not Ethernet (1): the streamed readers
    parse Ethernet frames only."""
    for path in paths:
        linktype = capture_linktype(path)
        if linktype != 1:
            raise CaptureError(f"only Ethernet captures (link type 1) are supported, "
                               f"not link type {linktype} ({path})")


def capture_records(sender, receiver, config: SynopsisConfig, *, mode: str = "time",
                    interval_ns: int | None = None, start_ns: int | None = None,
                    confidence: float = 0.98, progress=None,
                    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                    min_flow_samples: int = DEFAULT_MIN_FLOW_SAMPLES,
                    flows=None, key: bytes | None = None,
                    run=None, spill_dir=None) -> list[IntervalRecord]:
    """The record of every interval of two captures (paths, streamed; or
    :class:`~host_sw.model.pcap.Capture` objects, in memory) under ``config``.

    Intervals as :func:`~host_sw.model.pcap.pair_captures` (``interval_ns=None``: one
    interval holding both captures). A pair that :func:`check_pairing` rejects gives
    records with ``valid`` false, ``problem`` set, the reason first in ``notes`` and
    neither estimate nor truth; its remarks are noted on valid records. Paths are read
    as streams (:func:`~host_sw.estimators.offline_stream.stream_pair`: memory bounded
    whatever their size; ``progress(n)`` is told the bytes read). An LDS configuration's
    records carry the per-flow estimates of every flow seen in the captures in
    ``details["flows"]`` (:func:`~host_sw.estimators.flows.flow_report`), or of the
    flows given as ``(per-row flow hashes, names)`` (without their truth). An RLI
    configuration's come from :mod:`host_sw.estimators.rli.offline` (references from the
    sender capture, checked under ``key``; per-flow figures in ``details["rli_flows"]``,
    the reference accounting in ``details["references"]``). Raises
    ``ValueError`` (:class:`~host_sw.model.pcap.CaptureError`) for unreadable captures.
    ``run`` runs the streamed analysis' tasks (:mod:`host_sw.estimators.offline_jobs`:
    worker processes or a Dask cluster; the same records as in this process), with its
    spilled partitions in ``spill_dir`` (default ``$TMPDIR``).
    """
    own = _CAPTURE_PATHS.get(config.kind)
    if own is not None:
        return own(sender, receiver, config, mode=mode, interval_ns=interval_ns,
                   start_ns=start_ns, confidence=confidence, progress=progress,
                   chunk_bytes=chunk_bytes, min_flow_samples=min_flow_samples,
                   flows=flows, key=key)
    if config.kind in _KIND_HOOKS and (isinstance(sender, Capture)
                                        or isinstance(receiver, Capture)):
        sender, receiver = (p if isinstance(p, Capture) else read_pcap(p)
                            for p in (sender, receiver))
    if isinstance(sender, Capture) or isinstance(receiver, Capture):
        return _records_in_memory(sender, receiver, config, mode=mode,
                                  interval_ns=interval_ns, start_ns=start_ns,
                                  confidence=confidence)
    _require_ethernet(sender, receiver)
    pair = stream_pair(sender, receiver, config, mode=mode, interval_ns=interval_ns,
                       start_ns=start_ns, chunk_bytes=chunk_bytes, progress=progress,
                       run=run, spill_dir=spill_dir)
    return _streamed_records(pair, config, confidence, min_flow_samples, flows,
                             interval_ns if mode == "time" else None, run)


@dataclass
class _PairCounts:
    """What two captures in memory show, in the fields of
    :class:`~host_sw.estimators.offline_stream.StreamedPair` that
    :func:`~host_sw.estimators.offline_stream.common_window` and :func:`_streamed_check`
    read (one definition of the window and of the checks for both paths)."""
    sent: int
    received: int
    matched: int
    negative: int
    zero: int
    unmatched: int
    duplicates: dict
    delay_min: int | None
    delay_max: int | None
    delay_sum: int
    sides: dict
    window: tuple | None = None
    left_out: dict = dataclasses.field(
        default_factory=lambda: {"sender": 0, "receiver": 0})

    def ends(self, side: str) -> tuple[int, int] | None:
        return self.sides[side]


def _pair_counts(intervals: list[IntervalObservation]) -> _PairCounts:
    """The pairing counts of paired captures (:func:`_matched_delays`' matching)."""
    sent, received, delays = _matched_delays(intervals)
    sides = {}
    for side in ("sender", "receiver"):
        ts = [_counted(getattr(iv, side))[1] for iv in intervals]
        ts = np.concatenate(ts) if ts else np.zeros(0, np.int64)
        sides[side] = (int(ts.min()), int(ts.max())) if len(ts) else None
    return _PairCounts(
        sent, received, len(delays), int((delays < 0).sum()), int((delays == 0).sum()),
        received - len(delays), _duplicates(intervals) if intervals else {},
        int(delays.min()) if len(delays) else None,
        int(delays.max()) if len(delays) else None, int(delays.sum()), sides)


def _trim(capture: Capture, keep: np.ndarray) -> Capture:
    idx = np.flatnonzero(keep)
    return Capture([capture.frames[i] for i in idx.tolist()], capture.timestamps_ns[idx],
                   capture.linktype, capture.original_lengths[idx])


def _window_pair(sender: Capture, receiver: Capture, intervals, **pairing):
    """``(intervals, check, counts)`` of captures in memory: when they saw different
    windows (:func:`~host_sw.estimators.offline_stream.common_window`), paired again
    keeping the window both saw as the streamed path keeps it (the sender's packets sent
    in it; the receiver's packets of those, and its packets the sender capture does not
    hold that arrived where no edge explains them); checked by :func:`_streamed_check`."""
    counts = _pair_counts(intervals)
    window = common_window(counts)
    if window is None or window[0] > window[1]:
        counts.window = window
        return intervals, _streamed_check(counts), counts
    lo, hi, margin = window
    s_ts = np.asarray(sender.timestamps_ns, np.int64)
    r_ts = np.asarray(receiver.timestamps_ns, np.int64)
    s_keep = (s_ts >= lo) & (s_ts <= hi)
    r_keep = (r_ts >= lo + margin) & (r_ts <= hi)
    ns = len(sender)
    for iv in intervals:          # the receiver's packets of kept sender packets
        obs = iv.receiver
        mine = obs.packet_ids < ns
        r_keep[obs.indices[mine]] |= s_keep[obs.packet_ids[mine]]
    r_counted = np.zeros(len(receiver), bool)
    for iv in intervals:
        obs = iv.receiver
        r_counted[obs.indices[obs.trace.counted[obs.indices]]] = True
    start = pairing.pop("start_ns")
    if start is None:
        start = int(s_ts.min()) if ns else int(r_ts.min())
    again = pair_captures(_trim(sender, s_keep), _trim(receiver, r_keep), start_ns=start,
                          **pairing)
    counts = _pair_counts(again)
    counts.window = window
    counts.left_out = {"sender": int(ns - s_keep.sum()),
                       "receiver": int((r_counted & ~r_keep).sum())}
    return again, _streamed_check(counts), counts


def _records_in_memory(sender, receiver, config: SynopsisConfig, *, mode, interval_ns,
                       start_ns, confidence) -> list[IntervalRecord]:
    """:func:`capture_records` of captures already in memory (per-packet kinds, OPA:
    trimmed to the window both captures saw, :func:`_window_pair`)."""
    pairing = dict(mode=mode, interval_ns=interval_ns, window_bytes=config.window_bytes)
    intervals = pair_captures(sender, receiver, start_ns=start_ns, **pairing)
    counts = None
    if config.kind in _KIND_HOOKS:
        intervals, check, counts = _window_pair(sender, receiver, intervals,
                                                start_ns=start_ns, **pairing)
    else:
        check = check_pairing(intervals)
    hashers = hashers_for(config)
    caches = (None, None)
    if intervals and check.valid and config.kind in _DECODING_KINDS:
        caches = tuple(capture_cache(getattr(intervals[0], side).trace, config, hashers)
                       for side in ("sender", "receiver"))
    records = []
    hooks = _KIND_HOOKS.get(config.kind)
    for iv in intervals:
        s, r = hooks[0](config, iv, hashers) if hooks else iv.synopses(config, hashers=hashers)
        if hooks and check.valid:
            caches = hooks[1](config, iv, hashers)
        rec = record_for_pair(s, r, confidence=confidence, interval=iv.interval,
                              when=_interval_time(iv), sender_meta=_side_meta(iv.sender),
                              receiver_meta=_side_meta(iv.receiver), valid=check.valid,
                              notes=check.notes, sender_cache=caches[0],
                              receiver_cache=caches[1], hashers=hashers,
                              interval_ns=interval_ns if mode == "time" else None,
                              problem=None if check.valid else check.problem.value)
        if check.valid:
            details = hooks[2](config, s, r, iv, hashers) if hooks else {}
            window = None if counts is None else _window_details(counts)
            if window is not None:
                details["window"] = window
            rec = dataclasses.replace(rec, true=truth_json(iv.truth), details=details)
        records.append(rec)
    return records


def _rli_capture_records(sender, receiver, config, *, mode, interval_ns, start_ns,
                         confidence, progress, chunk_bytes, min_flow_samples, flows,
                         key) -> list[IntervalRecord]:
    """:func:`capture_records` of an RLI configuration (two capture files)."""
    if mode != "time":
        raise ValueError("RLI intervals are cut by time at the receiver; --mode marker "
                         "does not apply")
    if isinstance(sender, Capture) or isinstance(receiver, Capture):
        raise CaptureError("RLI analyses capture files (paths), read as streams")
    _require_ethernet(sender, receiver)
    pair = stream_rli_pair(sender, receiver, config, key=key, interval_ns=interval_ns,
                           start_ns=start_ns, chunk_bytes=chunk_bytes, progress=progress)
    return [_rli_record(pair, iv, confidence, flows) for iv in pair.intervals]


def _rli_record(pair: RliCapturePair, iv: int, confidence: float, flows) -> IntervalRecord:
    check = _streamed_check(pair)
    problem = check.problem
    notes = [*check.notes, *pair.refs.notes()]
    empty = Synopsis.empty(pair.config)
    s = pair.sender.get(iv, empty)
    r, stats = pair.receiver.get(iv, (empty, RliReceiverStats(0, 0, 0, 0)))
    if stats.overflowed:
        notes.append(f"RLI receiver: {stats.overflowed} data packets found the "
                     f"interpolation buffer full ({pair.config.buffer_packets} packets) "
                     f"and are not counted (the device would flag the interval)")
    if stats.unreferenced:
        notes.append(f"RLI receiver: no reference in the interval: its "
                     f"{stats.unreferenced} buffered data packets are not counted")
    metas = {}
    for side in ("sender", "receiver"):
        m = pair.meta[side].get(iv)
        metas[side] = ({"packets": 0} if m is None else
                       {"packets": m[0], "first_ns": m[1], "last_ns": m[2]})
    last = [m["last_ns"] for m in metas.values() if "last_ns" in m]
    rec = record_for_pair(s, r, confidence=confidence, interval=iv,
                          when=max(last) / 1e9 if last else None,
                          sender_meta=metas["sender"], receiver_meta=metas["receiver"],
                          valid=problem is None, notes=notes,
                          problem=None if problem is None else problem.value)
    if problem is not None:
        return rec
    details = {"rli_flows": flow_table(pair, iv, flows),
               "references": stats.references, "buffer_overflowed": stats.overflowed,
               "unreferenced": stats.unreferenced,
               "reference_source": pair.refs.source}
    window = _window_details(pair)
    if window is not None:
        details["window"] = window
    return dataclasses.replace(rec, true=interval_truth(pair, iv), details=details)


#: Kinds whose capture analysis is a path of its own (RLI: references from the sender
#: capture, interpolation at the receiver), with :func:`capture_records`' arguments.
_CAPTURE_PATHS = {"rli": _rli_capture_records}
