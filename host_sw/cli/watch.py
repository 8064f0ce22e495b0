# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl read`` and ``ldactl watch``: frozen intervals read from devices — one
device's snapshot, or a sender's and a receiver's paired into per-interval estimates.

In the host data flow (``docs/DESIGN.md``): driver snapshot ► (``watch``) record
(:func:`host_sw.cli.records.pair_snapshots`) ► the
:data:`~host_sw.cli.output.table.RECORD_TABLE`, JSON lines, or a records file for ``export`` and
``plot``.

``watch`` keeps going through transient faults: each point's side is a
:class:`~host_sw.cli.watch_reads.PointReader` (bounded retries, safe release); this module
reads both points before releasing either, gives every sequence number a row (valid, or
invalid with its reason) and stops only on a permanent failure (``docs/CLI.md``, watch).
An RLI receiver may be watched alone (no ``--sender``): its rows, RLI registers and
per-flow table come from :mod:`host_sw.cli.rli.watch`. Two OPA devices' rows take their
per-packet delays from the devices' record frames captured live (``--records``):
:mod:`host_sw.cli.opa.watch`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import time

from host_sw.cli.args import (RunFailure, UsageError, add_flow_options, check_output,
                              confidence, dump, guard, int_in, load_flow_keys, positive_int,
                              real, seconds)
from host_sw.cli.export import FlowWriter
from host_sw.cli.files import rescue, write_or_rescue
from host_sw.cli.link import add_link_options, open_device, open_devices
from host_sw.cli.opa.output import OPA_RECORD_TABLE
from host_sw.cli.records import pair_snapshots, snapshot_meta, unread_record
from host_sw.cli.rli.flows import flow_rows, sort_rows, write_flows
from host_sw.cli.opa.watch import OpaRecordWatch, add_opa_watch_options, without_records
from host_sw.cli.watch_reads import PointReader, ReadOutcome, RetryPolicy
from host_sw.cli.rli.watch import RLI_WATCH_TABLE, flow_lines, receiver_record, rli_record
from host_sw.cli.output.table import RECORD_TABLE, flow_table_lines
from host_sw.device.driver import counter_deltas

__all__ = ["add_read_parser", "add_watch_parser"]


def add_read_parser(sub) -> None:
    p = sub.add_parser("read", help="read one interval's snapshot",
                       description="Wait for a frozen interval, read it consistently and "
                                   "release it.",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_link_options(p)
    p.add_argument("--swap", action="store_true", help="end the current interval first")
    p.add_argument("--no-release", action="store_true")
    p.add_argument("--wait", type=seconds, default=10.0, help="seconds to wait for a frozen "
                                                              "interval")
    p.add_argument("--output", "-o", default=None, help="write the snapshot JSON here")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=guard(_cmd_read))


def add_watch_parser(sub) -> None:
    p = sub.add_parser("watch", help="per-interval estimates from a sender and a receiver",
                       description="Read both devices' intervals as they freeze and print "
                                   "loss and delay estimates with confidence intervals.",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--sender", default=None, metavar="URL",
                   help="the sender device (required, except for an RLI receiver: "
                        "RLI's delays are the receiver's alone)")
    p.add_argument("--receiver", required=True, metavar="URL")
    p.add_argument("--sender-core", default=None, metavar="N|NAME",
                   help="the sender's core behind a shared UART (as --core of info)")
    p.add_argument("--receiver-core", default=None, metavar="N|NAME",
                   help="the receiver's core; the two cores of one board share its port")
    add_link_options(p, device=False)
    p.add_argument("--intervals", type=positive_int, default=None,
                   help="stop after this many (default: run until interrupted)")
    p.add_argument("--swap", action="store_true",
                   help="end intervals from the host (manual mode) every --period seconds")
    p.add_argument("--period", type=seconds, default=1.0)
    p.add_argument("--wait", type=seconds, default=60.0, help="seconds to wait per interval")
    p.add_argument("--confidence", type=confidence, default=0.98)
    p.add_argument("--attempts", type=int_in(1, 10), default=3,
                   help="reads of one interval before it is recorded as invalid (a bus "
                        "or snapshot-check failure is retried, never past the next "
                        "boundary of a time-mode device)")
    p.add_argument("--retry-delay", type=real(minimum=0, maximum=1), default=0.05,
                   metavar="SECONDS", help="pause before a retry, doubled before each "
                                           "further one")
    p.add_argument("--max-failures", type=int_in(1, 1000), default=5, metavar="N",
                   help="stop (exit 1) when a device could not be read for N intervals "
                        "in a row")
    p.add_argument("--output", "-o", default=None, help="append JSON records here")
    p.add_argument("--progress", action="store_true", help="status counters on stderr")
    p.add_argument("--json", action="store_true")
    add_flow_options(p, capture=False)
    add_opa_watch_options(p)
    p.set_defaults(handler=guard(_cmd_watch))


def _cmd_read(args) -> int:
    check_output(args.output)
    dev = open_device(args, args.device)
    try:
        if args.swap:
            dev.swap()
        snap = dev.read_snapshot(release=not args.no_release, timeout=args.wait)
    finally:
        dev.close()
    doc = snap.to_json()
    if args.output:
        # The interval is released: a failed write keeps it in a rescue file.
        write_or_rescue(args.output, json.dumps(doc) + "\n", f"{snap.seq}",
                        what=f"snapshot of interval {snap.seq}"
                             f"{'' if args.no_release else ' (released)'} is")
    if args.json:
        dump(doc)
        return 0
    print(f"interval {snap.seq}: {'valid' if snap.valid else 'INVALID'}, flags "
          f"{int(snap.flags):#04x}, {snap.packets} packets, config ID {snap.config_id:#010x}, "
          f"boundary at tick {snap.timestamp}")
    for n in snap.notes:
        print(f"  note: {n}")
    syn = snap.synopsis
    # the timestamp sum, or the kind's first other field (RLI: delay_sum)
    names = [f.name for f in syn.config.layout.fields if f.name != "count"]
    second = "ts_sum" if "ts_sum" in names else names[0]
    print(f"{'bank/row':>8} {'packets':>12} {second + ' (mod)':>16} {'nonzero':>8}")
    for b in range(syn.config.shape[0]):
        print(f"{b:>8} {int(syn.count[b].astype(object).sum()):>12} "
              f"{int(syn[second][b].astype(object).sum()):>16} "
              f"{int((syn.count[b] > 0).sum()):>8}")
    for k, v in snap.status.items():
        print(f"  {k:<18} {v}")
    return 0


_M32 = 0xFFFFFFFF
#: The most "not seen" rows one skip of the sequence numbers prints; a larger skip (or one
#: backwards: the device was reset) is a note on the next row and the numbering restarts.
MAX_GAP_ROWS = 1000


class _Pairing:
    """The intervals of a sender and a receiver as records: every sequence number gets a
    row, read or not. Status counters become per-interval deltas (they wrap at 2**32) from
    the second interval on."""

    def __init__(self, confidence: float, readers: dict, flows=None,
                 min_samples: int = 1):
        self.confidence = confidence
        self.readers = readers
        #: ``(per-row flow hashes, names)`` to report per flow (LDS), or None.
        self.flows, self.min_samples = flows, min_samples
        self.previous = {"sender": None, "receiver": None}
        #: The sequence number the next row should have (None before the first).
        self.expected: int | None = None

    def _meta(self, side: str, outcome) -> dict:
        meta = {}
        snap = outcome.snapshot
        if snap is not None:
            meta = snapshot_meta(snap)
            if self.previous[side] is not None:
                meta["status_delta"] = counter_deltas(snap.status, self.previous[side])
            self.previous[side] = snap.status
        elif outcome.seq is not None:
            meta["seq"] = outcome.seq
        return {**meta, **outcome.meta()}

    def _seq(self, outcomes: dict) -> int | None:
        """The row's sequence number: the sender's when known (its numbering is the
        rows'), else the receiver's, else the expected one unless nothing froze."""
        for o in (outcomes["sender"], outcomes["receiver"]):
            if o.snapshot is not None:
                return o.snapshot.seq
            if o.seq is not None:
                return o.seq
        if all(o.release == "nothing frozen" for o in outcomes.values()):
            return None     # no interval froze: no number is used up
        return self.expected

    def _stale(self, side: str, seq: int) -> bool:
        """Whether ``side``'s copy ``seq`` already has its row: for the sender, a number
        before the expected one; for either, one not after the last it had a row for."""
        last = self.readers[side].last_seq
        if last is not None and (last - seq) & _M32 < MAX_GAP_ROWS:
            return True
        return (side == "sender" and self.expected is not None
                and 0 < (self.expected - seq) & _M32 <= MAX_GAP_ROWS)

    def _gap_rows(self, seq: int | None, config) -> tuple[list, list]:
        """Rows for the numbers skipped before ``seq``, and notes for the row of ``seq``."""
        if seq is None or self.expected is None or seq == self.expected:
            return [], []
        skipped = (seq - self.expected) & _M32
        if skipped > MAX_GAP_ROWS:
            return [], [f"the sequence number went from {self.expected - 1 & _M32} to "
                        f"{seq} (device reset?): numbering restarts"]
        rows = [unread_record((self.expected + k) & _M32, config,
                              notes=["not seen: no device froze this interval number, or "
                                     "it was released unread"])
                for k in range(skipped)]
        return rows, []

    def records(self, outcomes: dict, swap_errors: dict) -> list:
        """The rows of one read cycle: gap rows, then the interval's own."""
        for side, o in outcomes.items():
            if o.ok and self._stale(side, o.snapshot.seq):
                o.set_stale()
        s, r = outcomes["sender"], outcomes["receiver"]
        config = self.readers["sender"].device.config
        seq = self._seq(outcomes)
        rows, notes = self._gap_rows(seq, config)
        metas = {side: self._meta(side, o) for side, o in outcomes.items()}
        if s.ok and r.ok:
            rec = pair_snapshots(s.snapshot, r.snapshot, self.confidence,
                                 sender_meta=metas["sender"], receiver_meta=metas["receiver"],
                                 flows=self.flows, min_samples=self.min_samples)
            if notes:
                rec = dataclasses.replace(rec, valid=False, estimate=None,
                                          notes=(*rec.notes, *notes))
        else:
            for side, o in outcomes.items():
                if swap_errors.get(side):
                    notes.append(f"{side}: could not end the interval: {swap_errors[side]}")
                if not o.ok:
                    notes.append(f"{side}: {o.reason} (frozen copy: {o.release})")
            rec = unread_record(seq, config, notes=notes, sender_meta=metas["sender"],
                                receiver_meta=metas["receiver"])
        if seq is not None:
            self.expected = (seq + 1) & _M32
        for side, o in outcomes.items():
            reader = self.readers[side]
            if o.ok:
                reader.last_seq = o.snapshot.seq
            elif o.seq is not None:
                reader.last_seq = o.seq
            elif side == "sender" and seq is not None and o.stale_seq is None:
                reader.last_seq = seq      # an unseen copy: the row's number is its own
        return rows + [rec]


def _progress_line(rec, statuses: dict) -> str:
    ds = rec.sender.get("status_delta", statuses.get("sender", {}))
    dr = rec.receiver.get("status_delta", statuses.get("receiver", {}))
    return (f"# interval {rec.interval}: frames seen sender "
            f"+{ds.get('frames_seen')}, receiver +{dr.get('frames_seen')}; "
            f"errored +{ds.get('frames_errored')}/+{dr.get('frames_errored')}; "
            f"overruns +{ds.get('overruns')}/+{dr.get('overruns')}")


def _read_cycle(readers: dict, args) -> tuple[dict, dict]:
    """One interval of both points: (manual mode) end it, read both snapshots, and only
    then release both copies."""
    swap_errors = {}
    if args.swap:
        time.sleep(args.period)
        swap_errors = {side: reader.swap() for side, reader in readers.items()}
    outcomes = {}
    for side, reader in readers.items():
        if swap_errors.get(side):
            outcomes[side] = ReadOutcome(reason="not read: the interval was not ended")
        else:
            outcomes[side] = reader.read()
    for side, reader in readers.items():
        reader.release(outcomes[side])
    return outcomes, swap_errors


#: The table of a kind whose rows differ from the mean/std table (as ``estimate``'s).
_WATCH_TABLES = {"rli": RLI_WATCH_TABLE, "opa": OPA_RECORD_TABLE}


def _emit(rec, args, out, statuses=None, flows_out=None) -> None:
    """Print one record: its table row with its notes (and the per-flow table of an LDS
    or RLI interval given --flows), or its JSON line; append it to --output and its
    flows to --flows-out."""
    report = rec.details.get("flows")
    rli = rec.synopsis == "rli"
    if args.json:
        dump(rec.to_json())
    else:
        for line in _WATCH_TABLES.get(rec.synopsis, RECORD_TABLE).lines(rec):
            print(line, flush=True)
        if report is not None:
            for line in flow_table_lines(report, top=args.top, sort=args.sort):
                print(line, flush=True)
        for line in flow_lines(rec, args.top, args.sort) if rli else ():
            print(line, flush=True)
        if args.progress and statuses:
            print(_progress_line(rec, statuses), file=sys.stderr, flush=True)
    if out:
        text = json.dumps(rec.to_json())
        try:
            print(text, file=out, flush=True)
        except OSError as e:      # its intervals are released: keep the record
            rescue(args.output, text + "\n", f"{rec.interval}", e,
                   what=f"record of interval {rec.interval} is")
    if flows_out is not None and report is not None:
        flows_out.write(rec.interval, report)
    if flows_out is not None and "rli_flows" in rec.details:
        flows_out.rli.append((rec.interval, sort_rows(flow_rows(
            rec.details["rli_flows"], min_samples=rec.details["min_samples"]), args.sort)))


def _check_permanent(outcomes: dict, failed: dict, args) -> None:
    """End the run (:class:`RunFailure`, exit 1) on a failure that will not go away: a
    device that runs another configuration than the expected one, or one that could not
    be read for ``--max-failures`` intervals in a row."""
    for side, o in outcomes.items():
        url = args.sender if side == "sender" else args.receiver
        snap = o.snapshot or o.stale_snapshot
        if snap is not None and snap.config_id != snap.config.config_id:
            raise RunFailure(f"the {side} ({url}) runs another configuration: interval "
                             f"{snap.seq} has config ID {snap.config_id:#010x}, expected "
                             f"{snap.config.config_id:#010x} (reset or reprogrammed? "
                             f"program it with ldactl config)")
        failed[side] = 0 if o.ok else failed[side] + 1
        if failed[side] >= args.max_failures:
            raise RunFailure(f"the {side} ({url}) could not be read for {failed[side]} "
                             f"interval(s) in a row: {o.reason}")


class _RliFlowsOut:
    """``--flows-out`` of an RLI watch: every interval's flows, written at the end (and
    on interruption) by :func:`~host_sw.cli.rli.flows.write_flows`."""

    def __init__(self, path):
        self.path, self.rli = path, []

    def close(self):
        write_flows(self.path, self.rli, column="interval")


def _open_points(args):
    """``{side: Device}``: both points, or an RLI receiver alone (no ``--sender``)."""
    if args.sender is not None:
        sender, receiver = open_devices(args, [args.sender, args.receiver],
                                        [args.sender_core, args.receiver_core])
        return {"sender": sender, "receiver": receiver}
    (receiver,) = open_devices(args, [args.receiver], [args.receiver_core])
    if receiver.config.kind != "rli":
        receiver.close()
        raise UsageError(f"required for a {receiver.config.kind} receiver (only an RLI "
                         f"receiver is watched alone)", "--sender")
    return {"receiver": receiver}


def _records(pairing, outcomes, swap_errors, args, flows, opa=None) -> list:
    """The rows of one read cycle (an RLI receiver's checked by :func:`rli_record`, an
    OPA interval's delays from its record frames by ``opa``)."""
    r = outcomes["receiver"]
    config = r.snapshot.config if r.ok else pairing.readers["receiver"].device.config
    if "sender" not in outcomes:
        reader = pairing.readers["receiver"]
        if r.ok and pairing._stale("receiver", r.snapshot.seq):
            r.set_stale()          # a copy that could not be released: it has its row
        if r.ok or r.seq is not None:
            reader.last_seq = r.snapshot.seq if r.ok else r.seq
        rec = receiver_record(r, config)
        return [rli_record(rec, r, flows=flows, min_samples=args.min_samples)]
    *gaps, rec = pairing.records(outcomes, swap_errors)
    if config.kind == "rli":
        rec = rli_record(rec, r, outcomes["sender"], flows=flows,
                         min_samples=args.min_samples)
    rec = opa.row(rec, outcomes) if opa is not None else without_records(rec)
    return [*gaps, rec]


def _cmd_watch(args) -> int:
    check_output(args.output)
    check_output(args.flows_out)
    for option, path in (("--delays-out", args.delays_out), ("--histogram", args.histogram)):
        check_output(path)
        if path and not args.records:
            raise UsageError("needs --records (the delays come from the record frames)",
                             option)
    devices = _open_points(args)
    out = flows_out = opa = None
    try:
        config = devices["receiver"].config
        rli = config.kind == "rli"
        flows = (load_flow_keys(args.flows, config) if args.flows is not None else None)
        out = open(args.output, "a") if args.output else None
        if args.flows_out:
            flows_out = _RliFlowsOut(args.flows_out) if rli else FlowWriter(args.flows_out)
        if args.records:
            opa = OpaRecordWatch(config, args)
        policy = RetryPolicy(attempts=args.attempts, delay=args.retry_delay, wait=args.wait)
        readers = {side: PointReader(dev, policy) for side, dev in devices.items()}
        if not args.json:
            print(_WATCH_TABLES.get(config.kind, RECORD_TABLE).header(), flush=True)
        pairing = _Pairing(args.confidence, readers, None if rli else flows,
                           args.min_samples)
        failed = {side: 0 for side in devices}
        n = 0
        while args.intervals is None or n < args.intervals:
            outcomes, swap_errors = _read_cycle(readers, args)
            *gaps, rec = _records(pairing, outcomes, swap_errors, args, flows, opa)
            for gap in gaps:
                _emit(gap, args, out)
            _emit(rec, args, out, {side: o.snapshot.status for side, o in outcomes.items()
                                   if o.ok}, flows_out)
            if opa is not None:
                opa.written(rec)
            _check_permanent(outcomes, failed, args)
            n += 1
    finally:
        if out:
            with contextlib.suppress(OSError):   # a failed write is reported (rescued)
                out.close()
        if flows_out is not None:
            flows_out.close()
        if opa is not None:
            opa.close()
        for dev in devices.values():
            dev.close()
    return 0
