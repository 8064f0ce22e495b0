# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl read`` and ``ldactl watch``: frozen intervals read from devices — one
device's snapshot, or a sender's and a receiver's paired into per-interval estimates.

In the host data flow (``docs/DESIGN.md``): driver snapshot ► (``watch``) record
(:func:`host_sw.cli.records.pair_snapshots`) ► the
:data:`~host_sw.cli.table.RECORD_TABLE`, JSON lines, or a records file for ``export`` and
``plot``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from host_sw.cli.args import check_output, confidence, dump, guard, positive_int, seconds
from host_sw.cli.link import add_link_options, open_device, open_devices
from host_sw.cli.records import pair_snapshots, snapshot_meta
from host_sw.cli.table import RECORD_TABLE
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
    p.add_argument("--sender", required=True, metavar="URL")
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
    p.add_argument("--output", "-o", default=None, help="append JSON records here")
    p.add_argument("--progress", action="store_true", help="status counters on stderr")
    p.add_argument("--json", action="store_true")
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
        Path(args.output).write_text(json.dumps(doc) + "\n")
    if args.json:
        dump(doc)
        return 0
    print(f"interval {snap.seq}: {'valid' if snap.valid else 'INVALID'}, flags "
          f"{int(snap.flags):#04x}, {snap.packets} packets, config ID {snap.config_id:#010x}, "
          f"boundary at tick {snap.timestamp}")
    for n in snap.notes:
        print(f"  note: {n}")
    syn = snap.synopsis
    print(f"{'bank/row':>8} {'packets':>12} {'ts_sum (mod)':>16} {'nonzero':>8}")
    for b in range(syn.config.shape[0]):
        print(f"{b:>8} {int(syn.count[b].astype(object).sum()):>12} "
              f"{int(syn.ts_sum[b].astype(object).sum()):>16} "
              f"{int((syn.count[b] > 0).sum()):>8}")
    for k, v in snap.status.items():
        print(f"  {k:<18} {v}")
    return 0


class _Pairing:
    """The intervals of a sender and a receiver as records, with each point's status
    counters as per-interval deltas (they wrap at 2**32) from the second interval on."""

    def __init__(self, confidence: float):
        self.confidence = confidence
        self.previous = {"sender": None, "receiver": None}

    def record(self, s, r):
        metas = {}
        for side, snap in (("sender", s), ("receiver", r)):
            metas[side] = snapshot_meta(snap)
            if self.previous[side] is not None:
                metas[side]["status_delta"] = counter_deltas(snap.status,
                                                             self.previous[side])
            self.previous[side] = snap.status
        return pair_snapshots(s, r, self.confidence, sender_meta=metas["sender"],
                              receiver_meta=metas["receiver"])


def _progress_line(rec, s, r) -> str:
    ds = rec.sender.get("status_delta", s.status)
    dr = rec.receiver.get("status_delta", r.status)
    return (f"# interval {rec.interval}: frames seen sender "
            f"+{ds.get('frames_seen')}, receiver +{dr.get('frames_seen')}; "
            f"errored +{ds.get('frames_errored')}/+{dr.get('frames_errored')}; "
            f"overruns +{ds.get('overruns')}/+{dr.get('overruns')}")


def _cmd_watch(args) -> int:
    sender, receiver = open_devices(args, [args.sender, args.receiver],
                                    [args.sender_core, args.receiver_core])
    out = open(args.output, "a") if args.output else None
    try:
        if not args.json:
            print(RECORD_TABLE.header(), flush=True)
        pairing = _Pairing(args.confidence)
        n = 0
        while args.intervals is None or n < args.intervals:
            if args.swap:
                time.sleep(args.period)
                sender.swap()
                receiver.swap()
            s = sender.read_snapshot(timeout=args.wait)
            r = receiver.read_snapshot(timeout=args.wait)
            rec = pairing.record(s, r)
            if args.json:
                dump(rec.to_json())
            else:
                print(RECORD_TABLE.row(rec), flush=True)
                if args.progress:
                    print(_progress_line(rec, s, r), file=sys.stderr, flush=True)
            if out:
                dump(rec.to_json(), out)
            n += 1
    finally:
        if out:
            out.close()
        sender.close()
        receiver.close()
    return 0
