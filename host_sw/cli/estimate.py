# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl estimate``: estimates offline, from two snapshot files (``ldactl read -o``),
two captures of exported control frames, or two packet captures of the same traffic at
the two measurement points.

In the host data flow (``docs/DESIGN.md``) the input replaces the device: snapshot files ►
records; exported frames ► reassembled synopses (:mod:`host_sw.contracts.frames.control_frame`) ►
records; packet captures ► streamed, checked pairing, golden synopses and records with the
truth (:func:`host_sw.estimators.offline.capture_records`; any size, a progress bar on
stderr). The records print as the :data:`~host_sw.cli.output.table.RECORD_TABLE` or JSON lines;
an LDS configuration adds a per-flow table below each interval and ``--flows-out``
writes every flow (:class:`~host_sw.cli.export.FlowWriter`); an RLI configuration takes
its references from the sender capture (reference frames, or ``--ref-*``: the rule
designates sender packets; :mod:`host_sw.estimators.rli.offline`) and prints RLI's
per-flow table (:mod:`host_sw.cli.rli.flows`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from host_sw.cli.args import (RunFailure, UsageError, add_flow_options, check_output,
                              confidence, dump, guard, int_at_least, int_in, key_file,
                              load_config, load_flow_keys, parse_json, read_text)
from host_sw.cli.export import FlowWriter
from host_sw.cli.files import check_input
from host_sw.cli.opa.output import (OPA_RECORD_TABLE, add_delay_outputs, write_delays,
                                    write_histogram)
from host_sw.cli.output.progress import ByteProgress
from host_sw.cli.records import pair_snapshots, with_flows
from host_sw.cli.rli.flows import (add_reference_options, flow_rows, reference_rule,
                                   render_flows, sort_rows, with_rli_flows, write_flows)
from host_sw.cli.output.table import RECORD_TABLE, flow_table_lines
from host_sw.contracts.config import CONFIG_CLASSES, config_class
from host_sw.contracts.frames.frame_format import (
    MAX_MTU_PAYLOAD, MIN_MTU_PAYLOAD, MTU_PAYLOAD, ControlFrameError, NotControlFrameError,
    mac_to_str, pair_identity_problem,
)
from host_sw.contracts.frames.control_frame import (
    MarkerFrame, SynopsisReassembler, parse_control_frame,
)
from host_sw.contracts.hashing import FrameClass
from host_sw.device.snapshot import Snapshot
from host_sw.estimators.offline import capture_records
from host_sw.estimators.offline_jobs import no_hugepage_advice, reuse_freed_memory, runner
from host_sw.estimators.offline_stream import warm_loops
from host_sw.estimators.rli.offline import reference_rows
from host_sw.estimators.opa.export import opa_export_records, read_export
from host_sw.estimators.record import record_for_pair
from host_sw.model.pcap import read_pcap
from host_sw.model.pcap_stream import iter_capture

__all__ = ["add_estimate_parser"]

#: The longest interval of a capture analysis (about 31 years: timestamps are int64 ns).
MAX_INTERVAL_NS = 10 ** 18

#: Bytes of a capture looked at to tell exported control frames from traffic.
_PEEK_BYTES = 1 << 20


def add_estimate_parser(sub) -> None:
    p = sub.add_parser("estimate", help="estimates from two snapshots or two captures",
                       description="Estimate from two snapshot JSON files (ldactl read -o), "
                                   "two captures of exported control frames (needs "
                                   "--config), or two pcap/pcapng captures of the same "
                                   "traffic at the two points (every kind; LDA, RDA, LDS "
                                   "and RLI read as streams: any size).",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("sender")
    p.add_argument("receiver")
    p.add_argument("--input", choices=("auto", "snapshot", "frames", "pcap"), default="auto")
    p.add_argument("--config", default=None, metavar="FILE")
    p.add_argument("--synopsis", choices=tuple(CONFIG_CLASSES), default="lda",
                   help="default configuration for captures without --config")
    p.add_argument("--mode", choices=("time", "marker"), default="time",
                   help="interval assignment for captures")
    p.add_argument("--interval-ns", type=int_at_least(1, "positive", MAX_INTERVAL_NS),
                   default=None,
                   help="interval length for captures (default: one interval)")
    p.add_argument("--mtu", type=int_in(MIN_MTU_PAYLOAD, MAX_MTU_PAYLOAD),
                   default=MTU_PAYLOAD, metavar="BYTES",
                   help="Ethernet payload MTU the exported frames were built for "
                        f"(up to {MAX_MTU_PAYLOAD}: jumbo exports)")
    p.add_argument("--confidence", type=confidence, default=0.98)
    p.add_argument("--progress", action="store_true",
                   help="a progress bar on stderr while captures are read (default: when "
                        "stderr is a terminal)")
    p.add_argument("--key-file", type=key_file, default=None, metavar="FILE",
                   help="the key of authenticated exports (32 hex digits in a file); "
                        "without it only integrity-tagged exports are accepted")
    p.add_argument("--json", action="store_true")
    g = p.add_argument_group("capture analysis in parallel (LDA, RDA, LDS)")
    g.add_argument("--jobs", type=int_at_least(1, "positive"), default=None, metavar="N",
                   help="worker processes (default: the machine's cores; 1: this process "
                        "only); the records are the same for every N")
    g.add_argument("--threads", action="store_true",
                   help="run the --jobs tasks in threads of this process instead of "
                        "worker processes (less CPU time per task; the same records)")
    g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the tasks on the Dask scheduler at ADDRESS (e.g. "
                        "tcp://host:8786), or 'local' for a local cluster of --jobs "
                        "workers; the workers must reach the captures and --spill-dir by "
                        "the same paths")
    g.add_argument("--spill-dir", default=None, metavar="DIR",
                   help="folder of the spilled partitions (default: $TMPDIR)")
    add_delay_outputs(p)
    add_flow_options(p, capture=True)
    g = p.add_argument_group("RLI references (captures without reference frames)")
    add_reference_options(g, capture=True)
    p.set_defaults(handler=guard(_cmd_estimate))


def _flows(args, config):
    return None if args.flows is None else load_flow_keys(args.flows, config)


def _from_snapshot_files(paths, args) -> list:
    snaps = []
    for p in paths:
        doc = parse_json(read_text(p, "snapshot"), p)
        try:
            snaps.append(Snapshot.from_json(doc))
        except (ValueError, TypeError, KeyError, OverflowError, MemoryError) as e:
            raise RunFailure(f"{p}: not a snapshot: {e}") from None
    s, r = snaps
    problem = pair_identity_problem(s.role, s.src_mac, r.role, r.src_mac, r.marker_src_mac)
    if problem is not None:
        raise RunFailure(f"{paths[0]} and {paths[1]}: {problem}")
    config = snaps[0].synopsis.config
    flows = _flows(args, config)
    if config.kind == "rli":       # RLI's per-flow figures, not LDS's
        rec = pair_snapshots(snaps[0], snaps[1], args.confidence)
        return [with_rli_flows(rec, snaps[1].synopsis, snaps[0].synopsis, flows,
                               args.min_samples)]
    return [pair_snapshots(snaps[0], snaps[1], args.confidence, flows=flows,
                           min_samples=args.min_samples)]


def _is_control_capture(path) -> bool:
    """Whether the first frames of a capture are exported control frames (RLI's
    reference frames, type 3, are the sender's traffic, not exports)."""
    for chunk in iter_capture(path, chunk_bytes=_PEEK_BYTES):
        control = chunk.classes == FrameClass.CONTROL
        control[reference_rows(chunk)] = False
        return bool(control.any())
    return False


def _synopses_from_frames(cap, config, key, name, mtu: int) -> tuple[dict, bytes | None]:
    """Every complete interval in a capture of exported control frames, by sequence, and
    the exporting device's MAC address.
    Every frame's tag is checked (under ``key`` when given) and interval numbers must go
    forward per source: a changed, unauthenticated, duplicated or replayed frame is an
    error naming the capture, the frame and the interval."""
    r = SynopsisReassembler(config, mtu=mtu, key=key)
    done, source = {}, None
    for n, f in enumerate(cap.frames, 1):
        try:
            parsed = parse_control_frame(f, expected=config, mtu=mtu, key=key)
            if isinstance(parsed, MarkerFrame):
                continue
            source = source or parsed.src_mac
            if parsed.src_mac != source:
                raise RunFailure(f"{name}: frame {n}: interval {parsed.seq} comes from "
                                 f"{mac_to_str(parsed.src_mac)}, the capture's exports from "
                                 f"{mac_to_str(source)}: give one device's exports")
            got = r.add(parsed)
        except NotControlFrameError:
            continue
        except ControlFrameError as e:
            raise RunFailure(f"{name}: frame {n}: {e}") from None
        if got is not None:
            done[got.seq] = got
    for seq in r.pending:
        try:
            r.finish(seq)    # raises MissingChunkError with the missing indices
        except ControlFrameError as e:
            raise RunFailure(f"{name}: {e}") from None
    return done, source


def _from_exported_frames(paths, args) -> list:
    if not args.config and args.synopsis not in _EXPORT_KINDS:
        raise RunFailure("exported frames need the configuration (--config FILE)")
    config = load_config(args.config) if args.config else config_class(args.synopsis)()
    if config.kind in _EXPORT_KINDS:
        return _EXPORT_KINDS[config.kind](paths, args, config)
    flows = _flows(args, config)
    (s_iv, s_mac), (r_iv, r_mac) = (
        _synopses_from_frames(read_pcap(p), config, args.key_file, p, args.mtu)
        for p in paths)
    if s_mac is not None and s_mac == r_mac:
        raise RunFailure(f"both captures hold the exports of one device "
                         f"({mac_to_str(s_mac)}): the same point twice; give the sender's "
                         f"and the receiver's exports")
    common = sorted(set(s_iv) & set(r_iv))
    for seq in common:       # the roles the exports carry (FROZEN_ROLE)
        problem = pair_identity_problem(s_iv[seq].role, s_mac, r_iv[seq].role, r_mac)
        if problem is not None:
            raise RunFailure(f"{paths[0]} and {paths[1]}: interval {seq}: {problem}")
    if not common:
        raise RunFailure(f"no interval in both captures (sender {sorted(s_iv)}, "
                         f"receiver {sorted(r_iv)})")
    records = []
    for seq in common:
        s, r = s_iv[seq], r_iv[seq]
        notes = [f"{side}: interval flags {int(x.flags):#04x} (invalid)"
                 for side, x in (("sender", s), ("receiver", r)) if not x.valid]
        rec = record_for_pair(
            s.synopsis, r.synopsis, confidence=args.confidence, interval=seq,
            sender_meta={"seq": seq, "flags": int(s.flags)},
            receiver_meta={"seq": seq, "flags": int(r.flags)},
            valid=s.valid and r.valid, notes=notes)
        if config.kind == "rli":
            records.append(with_rli_flows(rec, r.synopsis, s.synopsis, flows,
                                          args.min_samples))
        else:
            records.append(with_flows(rec, s.synopsis, r.synopsis, flows, args.min_samples))
    return records


def _capture_config(args):
    """The configuration of a packet-capture analysis: ``--config``, else the
    ``--synopsis`` kind's defaults (RLI: with the ``--ref-*`` rule)."""
    rule = reference_rule(args)
    if rule is not None and args.config:
        raise UsageError("the --ref-* options and --config exclude each other (the "
                         "configuration holds the reference rule)")
    if rule is not None and args.synopsis != "rli":
        raise UsageError(f"the --ref-* options apply to --synopsis rli only, not "
                         f"{args.synopsis}")
    config = load_config(args.config) if args.config else config_class(args.synopsis)(
        **(rule or {}))
    if config.kind == "rli" and args.mode != "time":
        raise UsageError("RLI intervals are cut by time at the receiver: --mode marker "
                         "does not apply", "--mode")
    return config


def _from_packet_captures(paths, args) -> list:
    config = _capture_config(args)
    no_hugepage_advice()
    reuse_freed_memory()
    flows = _flows(args, config)
    progress = None
    if args.progress or sys.stderr.isatty():
        progress = ByteProgress(sum(os.path.getsize(p) for p in paths),
                                label="reading captures")
    try:
        with runner(args.jobs, args.scheduler, threads=args.threads,
                    warm=warm_loops) as run:
            if args.scheduler is not None and progress is not None:
                progress.close()      # a cluster's workers report no bytes read
                progress = None
            return capture_records(paths[0], paths[1], config, mode=args.mode,
                                   interval_ns=args.interval_ns, confidence=args.confidence,
                                   progress=progress, min_flow_samples=args.min_samples,
                                   flows=flows, key=args.key_file, run=run,
                                   spill_dir=args.spill_dir)
    except ValueError as e:
        raise RunFailure(str(e)) from None
    except (OSError, RuntimeError) as e:
        if args.scheduler is None:
            raise
        raise RunFailure(f"the Dask scheduler {args.scheduler}: {e}") from None
    finally:
        if progress is not None:
            progress.close()


def _same_bytes(a: Path, b: Path) -> bool:
    """Whether two files hold the same bytes, compared a block at a time."""
    if a.stat().st_size != b.stat().st_size:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 20), fb.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True


def _check_two_inputs(a: Path, b: Path) -> None:
    """The sender's and the receiver's inputs must be two different measurements: the
    same file (or two identical files) twice would be compared with itself."""
    try:
        same = a.samefile(b) or _same_bytes(a, b)
    except OSError:
        return    # reported, naming the file, when it is read
    if same:
        raise RunFailure(f"{a} and {b} are the same input: give the sender's and the "
                         f"receiver's files")


def _records(args) -> list:
    a, b = Path(args.sender), Path(args.receiver)
    for side, p in (("sender", a), ("receiver", b)):
        check_input(p, f"the {side}'s input")
    _check_two_inputs(a, b)
    kind = args.input
    if kind == "auto":
        kind = "snapshot" if a.suffix == ".json" else "pcap"
    if kind == "snapshot":
        return _from_snapshot_files((a, b), args)
    control = [_is_control_capture(p) for p in (a, b)]
    if kind == "frames" or (kind == "pcap" and all(control)):
        return _from_exported_frames((a, b), args)
    if any(control):
        raise RunFailure("one capture holds exported control frames and the other "
                         "does not; give two of the same kind")
    return _from_packet_captures((a, b), args)


def _write_delay_outputs(args, records) -> None:
    """``--delays-out`` and ``--histogram``: OPA's per-packet delays of the intervals
    whose records were recovered (other kinds have no per-packet delays)."""
    if not (args.delays_out or args.histogram):
        return
    kind = records[0].synopsis if records else None
    if kind != "opa":
        raise UsageError(f"--delays-out and --histogram need OPA records, not {kind}")
    config = load_config(args.config) if args.config else config_class(kind)()
    tick_ns = config.tick_ns
    try:
        if args.delays_out:
            write_delays(args.delays_out, records, tick_ns)
        if args.histogram:
            write_histogram(args.histogram, records, tick_ns)
    except OSError as e:
        raise RunFailure(f"cannot write {e.filename}: {e.strerror}") from None


def _cmd_estimate(args) -> int:
    for path in (args.flows_out, args.delays_out, args.histogram):
        check_output(path)
    for what, path in (("configuration", args.config), ("flow keys", args.flows)):
        if path is not None:      # before the captures are read
            check_input(path, what)
    if reference_rule(args) is not None and args.input in ("snapshot", "frames"):
        raise UsageError("the --ref-* options apply to packet captures only")
    records = _records(args)
    _write_delay_outputs(args, records)
    printer = _KIND_PRINTERS.get(records[0].synopsis) if records else None
    if printer is not None:
        return printer(records, args)
    writer = FlowWriter(args.flows_out) if args.flows_out else None
    kind = records[0].synopsis if records else None
    table = _RECORD_TABLES.get(kind, RECORD_TABLE)
    try:
        if not args.json:
            print(table.header())
        for rec in records:
            report = rec.details.get("flows")
            if writer is not None:
                writer.write(rec.interval, report)
            if args.json:
                dump(rec.to_json())
                continue
            for line in table.lines(rec):
                print(line)
            if "flows" in rec.details:
                for line in flow_table_lines(report, top=args.top, sort=args.sort):
                    print(line)
    finally:
        if writer is not None:
            writer.close()
    return 0


#: The table of a kind whose figures differ from the mean/std table (OPA: percentiles).
_RECORD_TABLES = {"opa": OPA_RECORD_TABLE}


def _print_rli(records, args) -> int:
    """RLI's records: the row of each interval (its notes: where the references came
    from and what became of them), then its per-flow table; ``--flows-out`` every
    flow of every interval."""
    runs = []
    if not args.json:
        print(RECORD_TABLE.header())
    for rec in records:
        if args.json:
            dump(rec.to_json())
        else:
            for line in RECORD_TABLE.lines(rec):
                print(line)
        table = rec.details.get("rli_flows")
        if table is None:
            continue
        rows = sort_rows(flow_rows(table, min_samples=args.min_samples), args.sort)
        runs.append((rec.interval, rows))
        if not args.json:
            unbacked = sum(1 for r in rows if r["unbacked"])
            refs = ("" if "references" not in rec.details else
                    f"; {rec.details['references']} references, "
                    f"{rec.details['buffer_overflowed']} packets lost to a full "
                    f"interpolation buffer")
            print(f"    flows: {len(rows)} by {args.sort}; {unbacked} without backed "
                  f"figures{refs}")
            for line in render_flows(rows, args.top or len(rows), indent="    "):
                print(line)
    if args.flows_out:
        try:
            write_flows(args.flows_out, runs, column="interval")
        except OSError as e:
            raise RunFailure(f"cannot write {args.flows_out}: {e.strerror or e}") from None
    return 0


#: Kinds whose records print with a per-flow table of their own (RLI).
_KIND_PRINTERS = {"rli": _print_rli}


def _opa_exports(paths, args, config) -> list:
    """OPA from export captures: the sender's words and send records, the receiver's
    receive records (:mod:`host_sw.estimators.opa.export`)."""
    try:
        s, r = (read_export(cap.frames, cap.timestamps_ns, config, str(p), mtu=args.mtu,
                            key=args.key_file) for p, cap in ((p, read_pcap(p)) for p in paths))
        return opa_export_records(s, r, config, confidence=args.confidence)
    except ValueError as e:
        raise RunFailure(str(e)) from None


#: Kinds whose export captures hold more than synopsis chunks (OPA: per-packet records);
#: such a kind's default configuration (``--synopsis``) serves without ``--config``.
_EXPORT_KINDS = {"opa": _opa_exports}
