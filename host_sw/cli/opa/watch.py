# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl watch --records`` on two OPA devices: each interval's per-packet delays from
both points' record frames, captured live, beside the words read over the bus.

In the host data flow (``docs/DESIGN.md``, watch with records): the record frames
(``docs/SPEC.md`` §8.7) leave the devices in-band; a capture of them (``tcpdump -U -w -``
or the file it writes) ► :class:`~host_sw.cli.opa.record_source.RecordSources` ► per point
and interval one stream (:class:`~host_sw.contracts.opa.records.RecordReassembler`: tag,
chunks, completeness) ► at the row of an interval (both snapshots read), up to
``--records-wait`` seconds for both streams ►
:func:`~host_sw.estimators.opa.export.interval_record` (the sender's words from its
snapshot and both streams: the checks and the estimate of ``ldactl estimate`` on export
captures) ► the :data:`~host_sw.cli.opa.output.OPA_RECORD_TABLE` row, ``--delays-out``
and ``--histogram``.

Each point's records must come from one source MAC (the first one seen); a record frame
that fails its checks, a stream incomplete within the wait, records of a second source,
or frames of an interval that already has its row (replayed or late) make the interval
invalid with a note naming what — never a number no check backed. A frame whose interval
cannot be told is noted on the next row.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from host_sw.cli.args import RunFailure, UsageError, int_in, key_file, real
from host_sw.estimators.opa.recovery import HISTOGRAM_BUCKETS_S
from host_sw.cli.opa.output import DelayWriter, add_delay_outputs, write_histogram_counts
from host_sw.cli.opa.record_source import RecordSources, SourceEvent
from host_sw.contracts.frames.frame_format import MAX_MTU_PAYLOAD, ControlFrameError
from host_sw.contracts.frames.frame_format import MTU_PAYLOAD, mac_to_str
from host_sw.contracts.frames.frame_format import header_field, seq_after
from host_sw.contracts.opa.words import group_of
from host_sw.contracts.opa.records import (MIN_RECORD_MTU_PAYLOAD, IntervalRecords, Point,
                                           RecordFlags, RecordReassembler,
                                           parse_record_frame)
from host_sw.estimators.opa.export import interval_record, records_disagree

__all__ = ["add_opa_watch_options", "OpaRecordWatch", "without_records"]

#: Intervals ahead of the rows whose streams are kept per point (more: the oldest go).
MAX_PENDING = 64
#: Notes of one kind a row lists (a flood of bad frames: the first ones and a count).
MAX_NOTES = 8


def _capped(notes: list[str]) -> list[str]:
    if len(notes) <= MAX_NOTES:
        return notes
    return notes[:MAX_NOTES] + [f"... and {len(notes) - MAX_NOTES} more such notes"]


#: The note of an OPA row read without ``--records``.
NO_RECORDS_NOTE = ("for the delays give watch --records: a capture of both points' record "
                   "frames (tcpdump -U -w - 'ether proto 0x88b5' | ldactl watch ... "
                   "--records -)")


def without_records(rec):
    """An OPA row of a watch without ``--records``: its note says how to get delays."""
    if rec.synopsis != "opa" or rec.estimate is None:
        return rec
    return dataclasses.replace(rec, notes=(*rec.notes, NO_RECORDS_NOTE))


def add_opa_watch_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("OPA record frames (per-packet delays)")
    # nargs=1: each value a list, which ldactl's check of single values leaves alone
    g.add_argument("--records", action="append", nargs=1, default=None, metavar="PATH",
                   help="a pcap/pcapng capture of the devices' OPA record frames: a file "
                        "(followed as it grows, and into the files tcpdump -C rotates to: "
                        "FILE1, FILE2 …; for -G give tcpdump's -w pattern, e.g. "
                        "'tap-%%Y%%m%%d-%%H%%M%%S.pcap') or - for standard input, e.g. "
                        "tcpdump -U -w - 'ether proto 0x88b5'; repeatable (e.g. one "
                        "capture per point)")
    g.add_argument("--records-wait", type=real(minimum=0, maximum=600), default=3.0,
                   metavar="SECONDS", help="wait this long after an interval is read for "
                                           "both points' complete record streams")
    g.add_argument("--key-file", type=key_file, default=None, metavar="FILE",
                   help="the key of authenticated record frames (32 hex digits in a "
                        "file); without it only integrity-tagged frames are accepted")
    g.add_argument("--mtu", type=int_in(MIN_RECORD_MTU_PAYLOAD, MAX_MTU_PAYLOAD),
                   default=MTU_PAYLOAD, metavar="BYTES",
                   help="Ethernet payload MTU the record frames were built for (at least "
                        f"{MIN_RECORD_MTU_PAYLOAD}: one receiver record)")
    add_delay_outputs(g, histogram_when=" over the run, rewritten each interval")


@dataclasses.dataclass
class _Stream:
    """One point's record frames of one interval, as they arrive."""
    assembler: RecordReassembler
    records: IntervalRecords | None = None
    errors: list = dataclasses.field(default_factory=list)

    def add(self, frame, name: str) -> None:
        if self.records is not None or self.errors:
            if self.records is not None:
                self.errors.append(f"--records {name}: a frame of interval "
                                   f"{frame.seq} after its stream was complete (replayed?)")
            return
        try:
            done = self.assembler.add(frame)
        except ControlFrameError as e:
            self.errors.append(f"--records {name}: {e}")
            return
        self.records = done


class OpaRecordWatch:
    """The record frames of a watch run and the delay figures of its rows."""

    def __init__(self, config, args):
        if config.kind != "opa":
            raise UsageError(f"only for OPA devices, not {config.kind}", "--records")
        self.config, self.args = config, args
        self.streams = {p: {} for p in Point}
        self.macs: dict = {p: None for p in Point}
        self.done: dict = {p: None for p in Point}
        self.loose: list[str] = []          # notes for the next row
        self.replays: list[str] = []        # problems of the next row
        self.without = 0                    # rows in a row without both streams
        self.last_problem = ""
        self.hist = np.zeros(len(HISTOGRAM_BUCKETS_S), np.int64)
        self.hist_total = 0
        self.delays = None
        self.paths = [p for (p,) in args.records]
        self.sources = RecordSources(self.paths)
        try:
            if args.delays_out:
                self.delays = DelayWriter(args.delays_out, config.tick_ns)
        except OSError as e:
            self.sources.close()
            raise UsageError(f"cannot write {args.delays_out}: {e.strerror or e}",
                             "--delays-out") from None

    # -- frames -------------------------------------------------------------------------

    def _pending(self, point: Point, seq: int) -> bool:
        """Whether ``seq`` has no row yet at ``point``."""
        last = self.done[point]
        return last is None or seq_after(seq, last)

    def _stream(self, point: Point, seq: int) -> _Stream:
        streams = self.streams[point]
        if seq not in streams:
            if len(streams) >= MAX_PENDING:
                old = next(iter(streams))
                del streams[old]
                self.loose.append(f"the {point.value}'s records of interval {old} dropped: "
                                  f"more than {MAX_PENDING} intervals ahead of the rows")
            streams[seq] = _Stream(RecordReassembler(self.config, mtu=self.args.mtu,
                                                     key=self.args.key_file))
        return streams[seq]

    def _bad_frame(self, frame: bytes, name: str, error: Exception) -> None:
        """A frame that failed its checks: an error of the interval it names when that
        interval has no row yet, else a note for the next row."""
        text = f"--records {name}: {error}"
        if len(frame) >= 22:
            point = Point.RECEIVER if frame[16] & RecordFlags.RECEIVER else Point.SENDER
            seq = header_field(frame, "seq")
            if self._pending(point, seq):
                self._stream(point, seq).errors.append(text)
                return
        self.loose.append(f"a record frame of no interval with a row to come: {text}")

    def take(self, event: SourceEvent) -> None:
        """One event of a source."""
        if event.kind == "error":
            self.loose.append(f"--records {event.name}: {event.data} (the source stopped)")
            return
        if event.kind == "end":
            self.loose.append(f"--records {event.name}: end of the stream")
            return
        try:
            f = parse_record_frame(event.data, self.config, mtu=self.args.mtu,
                                   key=self.args.key_file)
        except ControlFrameError as e:
            self._bad_frame(event.data, event.name, e)
            return
        what = f"the {f.point.value}'s records of interval {f.seq}"
        if not self._pending(f.point, f.seq):
            self.replays.append(f"--records {event.name}: {what} arrived after the row of "
                                f"interval {self.done[f.point]} (replayed or late)")
            return
        locked = self.macs[f.point]
        if locked is None:
            self.macs[f.point] = locked = f.src_mac
        if f.src_mac != locked:
            self._stream(f.point, f.seq).errors.append(
                f"--records {event.name}: {what} also come from {mac_to_str(f.src_mac)}, a "
                f"second source (the {f.point.value}'s come from {mac_to_str(locked)})")
            return
        self._stream(f.point, f.seq).add(f, event.name)

    def _drain(self) -> None:
        while (event := self.sources.get(0)) is not None:
            self.take(event)

    def _wait(self, seqs: dict) -> None:
        """Take events until both streams of ``seqs`` are complete or failed, the
        sources have nothing more, or ``--records-wait`` is over."""
        deadline = time.monotonic() + self.args.records_wait
        while True:
            self._drain()
            ready = all(seq in self.streams[p] and (self.streams[p][seq].records is not None
                                                    or self.streams[p][seq].errors)
                        for p, seq in seqs.items())
            left = deadline - time.monotonic()
            if ready or left <= 0 or not self.sources.running:
                return
            event = self.sources.get(min(left, 0.1))
            if event is not None:
                self.take(event)

    # -- rows ---------------------------------------------------------------------------

    def _close(self, point: Point, seq: int | None) -> _Stream | None:
        """The stream of ``seq`` at ``point`` (None: no frame came), now that the
        interval has its row; streams of earlier intervals go too."""
        if seq is None:
            return None
        streams = self.streams[point]
        stream = streams.pop(seq, None)
        for old in [s for s in streams if not seq_after(s, seq)]:
            del streams[old]
            self.loose.append(f"the {point.value}'s records of interval {old} dropped: "
                              f"that interval was not read")
        self.done[point] = seq
        return stream

    def _stream_problem(self, point: Point, seq: int, stream: _Stream | None) -> str | None:
        if stream is None:
            ended = "" if self.sources.running else " (the record sources have ended)"
            return (f"no {point.value} record frames of interval {seq} within "
                    f"{self.args.records_wait:g} s{ended}")
        if stream.errors:
            return "; ".join(_capped(stream.errors))
        if stream.records is None:
            missing = "; ".join(stream.assembler.missing(k) for k in stream.assembler.pending)
            return (f"the {point.value}'s records of interval {seq} are incomplete after "
                    f"{self.args.records_wait:g} s: {missing or 'no frame'}")
        return None

    def row(self, rec, outcomes: dict):
        """``rec`` (the row of the words) with the interval's delays from its records, or
        invalid with the reasons; the notes gathered since the last row."""
        snaps = {Point(side): o.snapshot for side, o in outcomes.items() if o.ok}
        seqs = {p: s.seq for p, s in snaps.items()}
        if rec.estimate is not None:
            self._wait(seqs)
        else:
            self._drain()
        streams = {p: self._close(p, seqs.get(p)) for p in Point}
        loose, replays = _capped(self.loose), _capped(self.replays)
        self.loose, self.replays = [], []
        if rec.estimate is None:
            return dataclasses.replace(rec, notes=(*rec.notes, *replays, *loose))
        problems = [t for p in Point
                    if (t := self._stream_problem(p, seqs[p], streams[p])) is not None]
        complete = all(streams[p] is not None and streams[p].records is not None
                       for p in Point)
        self.without = 0 if complete else self.without + 1
        problems += replays
        s_snap, r_snap = snaps[Point.SENDER], snaps[Point.RECEIVER]
        notes = ([f"sender: {n}" for n in s_snap.notes] +
                 [f"receiver: {n}" for n in r_snap.notes])
        if not problems:
            problems = self._receiver_problems(r_snap, streams[Point.RECEIVER].records)
        if problems:
            self.last_problem = problems[0]
            return dataclasses.replace(rec, valid=False, estimate=None,
                                       notes=(*notes, *problems, *loose))
        out = interval_record(self.config, rec.interval, s_snap.synopsis, int(s_snap.flags),
                              streams[Point.SENDER].records,
                              streams[Point.RECEIVER].records,
                              confidence=self.args.confidence, when=rec.time,
                              sender_meta=rec.sender, receiver_meta=rec.receiver,
                              notes=(*notes, *loose))
        return out

    def _receiver_problems(self, snap, r_rec: IntervalRecords) -> list[str]:
        """The receiver's records must match its words (count per recorded group)."""
        return records_disagree(self.config, snap.seq, "receiver",
                                group_of(r_rec.keys, self.config.groups), snap.synopsis,
                                r_rec.record_groups)

    def written(self, rec) -> None:
        """After a row is out: its delays to ``--delays-out``, the run's histogram to
        ``--histogram``; the end of the run (exit 1) after ``--max-failures`` rows in a
        row without both record streams."""
        hist = (rec.estimate or {}).get("histogram_s")
        try:
            if self.delays is not None:
                self.delays.write([rec])
            if hist and self.args.histogram:
                self.hist += np.asarray(hist["count"], np.int64)
                self.hist_total += int(rec.estimate["samples"])
                write_histogram_counts(self.args.histogram, self.hist, self.hist_total)
        except OSError as e:
            raise RunFailure(f"cannot write the delays: {e.strerror or e}") from None
        if self.without >= self.args.max_failures:
            raise RunFailure(f"no complete record frames of both points for {self.without} "
                             f"interval(s) in a row (--records "
                             f"{' '.join(self.paths)}): {self.last_problem}")

    def close(self) -> None:
        self.sources.close()
        if self.delays is not None:
            self.delays.close()
