# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl estimate``: estimates offline, from two snapshot files (``ldactl read -o``),
two captures of exported control frames, or two packet captures of the same traffic at
the two measurement points.

In the host data flow (``docs/DESIGN.md``) the input replaces the device: snapshot files ►
records; exported frames ► reassembled synopses (:mod:`host_sw.contracts.control_frame`) ►
records; packet captures ► checked pairing, golden synopses and records with the truth
(:func:`host_sw.estimators.offline.capture_records`). The records print as the
:data:`~host_sw.cli.table.RECORD_TABLE` or JSON lines.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from host_sw.cli.args import (RunFailure, confidence, dump, guard, load_config, parse_json,
                              positive_int, read_text)
from host_sw.cli.opa_output import OPA_RECORD_TABLE
from host_sw.cli.records import pair_snapshots
from host_sw.cli.table import RECORD_TABLE
from host_sw.contracts.config import CONFIG_CLASSES, config_class
from host_sw.contracts.control_frame import (MarkerFrame, NotControlFrameError,
                                             SynopsisReassembler, parse_control_frame)
from host_sw.contracts.hashing import ETHERTYPE_CONTROL
from host_sw.device.driver import Snapshot
from host_sw.estimators.offline import capture_records
from host_sw.estimators.record import record_for_pair
from host_sw.model.pcap import read_pcap

__all__ = ["add_estimate_parser"]


def add_estimate_parser(sub) -> None:
    p = sub.add_parser("estimate", help="estimates from two snapshots or two captures",
                       description="Estimate from two snapshot JSON files (ldactl read -o), "
                                   "two captures of exported control frames (needs "
                                   "--config), or two pcap captures of the same traffic at "
                                   "the two points (LDA/RDA/LDS offline).",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("sender")
    p.add_argument("receiver")
    p.add_argument("--input", choices=("auto", "snapshot", "frames", "pcap"), default="auto")
    p.add_argument("--config", default=None, metavar="FILE")
    p.add_argument("--synopsis", choices=tuple(CONFIG_CLASSES), default="lda",
                   help="default configuration for captures without --config")
    p.add_argument("--mode", choices=("time", "marker"), default="time",
                   help="interval assignment for captures")
    p.add_argument("--interval-ns", type=positive_int, default=None,
                   help="interval length for captures (default: one interval)")
    p.add_argument("--confidence", type=confidence, default=0.98)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=guard(_cmd_estimate))


def _from_snapshot_files(paths, args) -> list:
    snaps = []
    for p in paths:
        doc = parse_json(read_text(p, "snapshot"), p)
        try:
            snaps.append(Snapshot.from_json(doc))
        except (ValueError, TypeError, KeyError, OverflowError, MemoryError) as e:
            raise RunFailure(f"{p}: not a snapshot: {e}") from None
    return [pair_snapshots(snaps[0], snaps[1], args.confidence)]


def _is_control_capture(cap) -> bool:
    return any(len(f) >= 14 and int.from_bytes(f[12:14], "big") == ETHERTYPE_CONTROL
               for f in cap.frames)


def _synopses_from_frames(cap, config) -> dict:
    """Every complete interval in a capture of exported control frames, by sequence."""
    r = SynopsisReassembler(config)
    done = {}
    for f in cap.frames:
        try:
            parsed = parse_control_frame(f, expected=config)
        except NotControlFrameError:
            continue
        if isinstance(parsed, MarkerFrame):
            continue
        got = r.add(parsed)
        if got is not None:
            done[got.seq] = got
    for seq in r.pending:
        r.finish(seq)    # raises MissingChunkError with the missing indices
    return done


def _from_exported_frames(caps, args) -> list:
    if not args.config:
        raise RunFailure("exported frames need the configuration (--config FILE)")
    config = load_config(args.config)
    s_iv, r_iv = (_synopses_from_frames(c, config) for c in caps)
    common = sorted(set(s_iv) & set(r_iv))
    if not common:
        raise RunFailure(f"no interval in both captures (sender {sorted(s_iv)}, "
                         f"receiver {sorted(r_iv)})")
    records = []
    for seq in common:
        s, r = s_iv[seq], r_iv[seq]
        notes = [f"{side}: interval flags {int(x.flags):#04x} (invalid)"
                 for side, x in (("sender", s), ("receiver", r)) if not x.valid]
        records.append(record_for_pair(
            s.synopsis, r.synopsis, confidence=args.confidence, interval=seq,
            sender_meta={"seq": seq, "flags": int(s.flags)},
            receiver_meta={"seq": seq, "flags": int(r.flags)},
            valid=s.valid and r.valid, notes=notes))
    return records


def _from_packet_captures(caps, args) -> list:
    config = load_config(args.config) if args.config else config_class(args.synopsis)()
    try:
        return capture_records(caps[0], caps[1], config, mode=args.mode,
                               interval_ns=args.interval_ns, confidence=args.confidence)
    except ValueError as e:
        raise RunFailure(str(e)) from None


def _check_two_inputs(a: Path, b: Path) -> None:
    """The sender's and the receiver's inputs must be two different measurements: the
    same file (or two identical files) twice would be compared with itself."""
    try:
        same = a.samefile(b) or a.read_bytes() == b.read_bytes()
    except OSError:
        return    # reported, naming the file, when it is read
    if same:
        raise RunFailure(f"{a} and {b} are the same input: give the sender's and the "
                         f"receiver's files")


def _records(args) -> list:
    a, b = Path(args.sender), Path(args.receiver)
    _check_two_inputs(a, b)
    kind = args.input
    if kind == "auto":
        kind = "snapshot" if a.suffix == ".json" else "pcap"
    if kind == "snapshot":
        return _from_snapshot_files((a, b), args)
    caps = [read_pcap(a), read_pcap(b)]
    control = [_is_control_capture(c) for c in caps]
    if kind == "frames" or (kind == "pcap" and all(control)):
        return _from_exported_frames(caps, args)
    if any(control):
        raise RunFailure("one capture holds exported control frames and the other "
                         "does not; give two of the same kind")
    return _from_packet_captures(caps, args)


def _cmd_estimate(args) -> int:
    records = _records(args)
    if args.json:
        for rec in records:
            dump(rec.to_json())
    else:
        kind = records[0].synopsis if records else None
        for line in _RECORD_TABLES.get(kind, RECORD_TABLE).render(records):
            print(line)
    return 0


#: The table of a kind whose figures differ from the mean/std table (OPA: percentiles).
_RECORD_TABLES = {"opa": OPA_RECORD_TABLE}
