# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl`` sub-commands that talk to devices or work on their output: ``info``,
``config``, ``read``, ``watch``, ``estimate``, ``export``, ``plan`` and ``plot``
(``simulate`` lives in :mod:`host_sw.cli`, which registers these).

In DESIGN.md's host data flow these are the last stage: transport ► driver ► snapshot ►
estimators ► **CLI, JSON/CSV/Prometheus export, plots**. Every number printed comes from a
snapshot that was read consistently and is valid; an invalid interval prints its reason
and no estimate, and a failure prints a message on stderr and exits 1 (``docs/CLI.md``).

Records (``watch --output``, ``estimate --json``; the input of ``export`` and ``plot``) are
JSON objects, one per line::

    {"interval": seq, "time": unix_s, "valid": bool, "config_id": "0x…", "synopsis": kind,
     "sender": {"seq", "packets", "flags"}, "receiver": {…},
     "estimate": {"mean", "std", "ci": [lo, hi], "lost", "loss_rate", "samples", "sent",
                  "received"} | null,
     "notes": [...], "true": {...} (when the source knows the truth)}
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
import time
from pathlib import Path

__all__ = ["add_device_commands", "RUNTIME_ERRORS", "record_for_pair", "prometheus_text",
           "csv_text", "plan_memory"]


def _runtime_errors():
    from host_sw.contracts.config import ConfigMismatch
    from host_sw.contracts.control_frame import ControlFrameError
    from host_sw.device.driver import DeviceError
    from host_sw.model.pcap import CaptureError
    from host_sw.device.transport import TransportError
    return (TransportError, DeviceError, ControlFrameError, CaptureError, ConfigMismatch,
            OSError)


RUNTIME_ERRORS = _runtime_errors()


class RunFailure(Exception):
    """A run-time failure with a message for the user (exit 1)."""


# ---------------------------------------------------------------------------------------
# Shared option helpers
# ---------------------------------------------------------------------------------------

def _load_config(path):
    from host_sw.contracts.config import config_from_dict
    try:
        d = json.loads(Path(path).read_text())
    except OSError as e:
        raise RunFailure(f"cannot read configuration {path}: {e}") from None
    except json.JSONDecodeError as e:
        raise RunFailure(f"{path} is not JSON: {e}") from None
    if isinstance(d, dict) and "config" in d and isinstance(d["config"], dict):
        d = d["config"]
    try:
        return config_from_dict(d)
    except (TypeError, ValueError) as e:
        raise RunFailure(f"{path}: not a configuration: {e}") from None


def _add_link_options(p, *, device=True):
    if device:
        p.add_argument("--device", "-d", required=True, metavar="URL",
                       help="device URL: /dev/ttyUSB0?baud=115200, loop://, "
                            "tcp://127.0.0.1:PORT, fake://NAME (docs/TRANSPORTS.md); "
                            "?core=N selects a core of a two-port board")
        p.add_argument("--core", default=None, metavar="N|NAME",
                       help="the core behind the board's shared UART: an index (word base "
                            "N × 0x100000) or, with --csr-csv, a csr_base name such as "
                            "port1_to_port0 (default: core 0, address 0)")
    p.add_argument("--csr-csv", default=None, metavar="FILE",
                   help="the board's csr.csv (build/<board>/csr.csv): core names and "
                        "bases from its csr_base rows")
    p.add_argument("--config", metavar="FILE", default=None,
                   help="expected configuration (JSON: a config dict or a snapshot); "
                        "default: discovered from the device")
    p.add_argument("--seed", type=lambda s: int(s, 0), default=None,
                   help="hash seed for discovery (not readable from the device)")
    p.add_argument("--tick-ns", type=float, default=None,
                   help="timebase tick in ns for discovery (default 1.0)")
    p.add_argument("--timeout", type=float, default=None, help="bus reply timeout, s")
    p.add_argument("--retries", type=int, default=None, help="bus retries")
    p.add_argument("--no-id-check", action="store_true",
                   help="do not stop when the device ID differs from the configuration")


def _open_devices(args, urls, cores):
    """A :class:`~host_sw.device.driver.Device` per URL (and core); URLs naming the same link
    (two cores of one board) share it (:func:`host_sw.device.transport.open_transports`)."""
    from host_sw.device.driver import Device
    from host_sw.device.transport import open_transports
    config = _load_config(args.config) if args.config else None
    overrides = {"timeout": args.timeout, "retries": args.retries}
    try:
        transports = open_transports(urls, cores=cores, csr_csv=args.csr_csv, **overrides)
    except ValueError as e:
        shown = " and ".join(repr(u) for u in urls)
        raise RunFailure(f"bad device URL or core ({shown}): {e}") from None
    devices = []
    try:
        for transport in transports:
            devices.append(Device(transport, config=config, seed=args.seed,
                                  tick_ns=args.tick_ns, check_id=not args.no_id_check))
    except BaseException:
        for transport in transports:
            transport.close()
        raise
    return devices


def _open_device(args, url):
    return _open_devices(args, [url], [args.core])[0]


def _dump(obj, out=None):
    print(json.dumps(obj), file=out or sys.stdout, flush=True)


def _fmt(x, spec=".2f"):
    return "—" if x is None else format(x, spec)


# ---------------------------------------------------------------------------------------
# info / config / read
# ---------------------------------------------------------------------------------------

def _cmd_info(args) -> int:
    dev = _open_device(args, args.device)
    try:
        info = dev.info()
    finally:
        dev.close()
    if args.json:
        _dump(info)
        return 0
    print(f"device      {args.device}" + (f", core {args.core}" if args.core else ""))
    print(f"ID          {info['id']}  (register map {info['version']})")
    s = info["static"]
    print(f"synopsis    {info['kind'].upper()} {s['dim0']} × {s['dim1']}, "
          f"{s['count_bits']}-bit counts, {s['ts_bits']}-bit timestamp sums, "
          f"{s['chunks']} bus words per counter; data path {info['data_width']} bits")
    print(f"config ID   device {info['config_id_device']}, expected "
          f"{info['config_id_expected']}")
    print(f"interval    seq {info['interval_seq']}, mode {info['interval_mode']}")
    print(f"status      {info['status']}")
    print(f"timebase    {info['timebase']}")
    for k, v in info["counters"].items():
        print(f"  {k:<18} {v}")
    return 0


def _cmd_config(args) -> int:
    from host_sw.device.driver import INTERVAL_MODES
    dev = _open_device(args, args.device)
    try:
        config = dev.config
        if args.thresholds is not None:
            values = tuple(int(x) for x in args.thresholds.split(","))
            name = "thresholds" if config.kind == "lda" else "row_thresholds"
            if config.kind == "rda":
                raise RunFailure("RDA has no thresholds")
            try:
                config = config.replace(**{name: values})
            except ValueError as e:
                raise RunFailure(str(e)) from None
        if args.program or args.thresholds is not None:
            dev.program(config)
        if args.mode is not None:
            if args.mode not in INTERVAL_MODES:
                raise RunFailure(f"--mode must be one of {sorted(INTERVAL_MODES)}")
            try:
                dev.set_intervals(mode=args.mode, ticks=args.interval_ticks,
                                  start=args.interval_start, export_inband=args.export_inband,
                                  export_host=args.export_host,
                                  auto_release=args.auto_release, local_mac=args.local_mac,
                                  export_dst_mac=args.export_dst_mac,
                                  marker_src_mac=args.marker_src_mac)
            except ValueError as e:
                raise RunFailure(str(e)) from None
        out = {"config": dev.config.to_dict(), "config_id": f"{dev.config.config_id:#010x}",
               "device_config_id": f"{dev.read('config_id'):#010x}",
               "interval_mode": dev.read_fields("interval_mode"),
               "interval_ticks": dev.read("interval_ticks")}
    finally:
        dev.close()
    if args.save:
        Path(args.save).write_text(json.dumps(out["config"], indent=2) + "\n")
    if args.json:
        _dump(out)
    else:
        for k, v in out["config"].items():
            print(f"{k:<18} {v:#x}" if k.startswith("mask") or k == "seed"
                  else f"{k:<18} {v}")
        print(f"{'config_id':<18} {out['config_id']} (device: {out['device_config_id']})")
        print(f"{'interval_mode':<18} {out['interval_mode']}, ticks {out['interval_ticks']}")
    return 0


def _cmd_read(args) -> int:
    dev = _open_device(args, args.device)
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
        _dump(doc)
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


# ---------------------------------------------------------------------------------------
# Records: one interval's estimate from a pair of synopses
# ---------------------------------------------------------------------------------------

def record_for_pair(sender, receiver, *, confidence=0.98, interval=None, when=None,
                    sender_meta=None, receiver_meta=None, valid=True, notes=()):
    """One record (module docstring). ``sender``/``receiver`` are synopses; an invalid
    pair gets ``estimate: null``."""
    from host_sw.contracts.config import ConfigMismatch, check_comparable
    from host_sw.estimators.measure import estimate_pair
    notes = list(notes)
    rec = {"interval": interval, "time": when if when is not None else time.time(),
           "valid": bool(valid), "synopsis": sender.config.kind,
           "config_id": f"{sender.config.config_id:#010x}",
           "sender": sender_meta or {}, "receiver": receiver_meta or {}, "estimate": None,
           "notes": notes}
    try:
        check_comparable(sender.config, receiver.config)
    except ConfigMismatch as e:
        rec["valid"] = False
        notes.append(str(e))
        return rec
    if rec["valid"]:
        est = estimate_pair(sender, receiver, confidence=confidence)
        notes += est.pop("notes")
        rec["estimate"] = est
    return rec


def _meta(snap):
    return {"seq": snap.seq, "packets": snap.packets, "flags": int(snap.flags),
            "valid": snap.valid, "timestamp": snap.timestamp}


def _pair_snapshots(s, r, confidence):
    notes = [f"sender: {n}" for n in s.notes] + [f"receiver: {n}" for n in r.notes]
    valid = s.valid and r.valid
    if s.seq != r.seq:
        valid = False
        notes.append(f"sender interval {s.seq} and receiver interval {r.seq} differ")
    return record_for_pair(s.synopsis, r.synopsis, confidence=confidence, interval=s.seq,
                           when=max(s.read_time, r.read_time), sender_meta=_meta(s),
                           receiver_meta=_meta(r), valid=valid, notes=notes)


_TABLE_HEADER = (f"{'interval':>8} {'sent':>9} {'recv':>9} {'lost':>7} {'loss':>8} "
                 f"{'mean ns':>10} {'ci (ns)':>21} {'std ns':>9} {'samples':>8}")


def _table_row(rec) -> str:
    e = rec["estimate"]
    if e is None:
        reason = "; ".join(rec["notes"]) or "invalid"
        return f"{_fmt(rec['interval'], 'd') if rec['interval'] is not None else '—':>8} " \
               f"invalid: {reason}"
    lo, hi = e["ci"]
    ci = "—" if lo is None else f"[{lo:.2f}, {hi:.2f}]"
    loss = "—" if e["loss_rate"] is None else f"{e['loss_rate'] * 100:.3f}%"
    line = (f"{rec['interval'] if rec['interval'] is not None else '—':>8} {e['sent']:>9} "
            f"{e['received']:>9} {e['lost']:>7} {loss:>8} {_fmt(e['mean']):>10} {ci:>21} "
            f"{_fmt(e['std']):>9} {e['samples']:>8}")
    t = rec.get("true")
    if t and t.get("mean") is not None and e["mean"] is not None:
        line += (f"   true {t['mean']:.2f} ns "
                 f"(err {abs(e['mean'] - t['mean']) / abs(t['mean']) * 100:.3f}%)")
    return line


# ---------------------------------------------------------------------------------------
# watch
# ---------------------------------------------------------------------------------------

def _cmd_watch(args) -> int:
    from host_sw.device.driver import counter_deltas
    sender, receiver = _open_devices(args, [args.sender, args.receiver],
                                     [args.sender_core, args.receiver_core])
    out = open(args.output, "a") if args.output else None
    try:
        if not args.json:
            print(_TABLE_HEADER, flush=True)
        n = 0
        previous = {"sender": None, "receiver": None}
        while args.intervals is None or n < args.intervals:
            if args.swap:
                time.sleep(args.period)
                sender.swap()
                receiver.swap()
            s = sender.read_snapshot(timeout=args.wait)
            r = receiver.read_snapshot(timeout=args.wait)
            rec = _pair_snapshots(s, r, args.confidence)
            for side, snap in (("sender", s), ("receiver", r)):
                # Status counters wrap at 2**32: per-interval deltas modulo 2**32.
                if previous[side] is not None:
                    rec[side]["status_delta"] = counter_deltas(snap.status, previous[side])
                previous[side] = snap.status
            if args.json:
                _dump(rec)
            else:
                print(_table_row(rec), flush=True)
                if args.progress:
                    ds = rec["sender"].get("status_delta", s.status)
                    dr = rec["receiver"].get("status_delta", r.status)
                    print(f"# interval {rec['interval']}: frames seen sender "
                          f"+{ds.get('frames_seen')}, receiver +{dr.get('frames_seen')}; "
                          f"errored +{ds.get('frames_errored')}/+{dr.get('frames_errored')}; "
                          f"overruns +{ds.get('overruns')}/+{dr.get('overruns')}",
                          file=sys.stderr, flush=True)
            if out:
                _dump(rec, out)
            n += 1
    finally:
        if out:
            out.close()
        sender.close()
        receiver.close()
    return 0


# ---------------------------------------------------------------------------------------
# estimate
# ---------------------------------------------------------------------------------------

def _is_control_capture(cap) -> bool:
    from host_sw.contracts.hashing import ETHERTYPE_CONTROL
    return any(len(f) >= 14 and int.from_bytes(f[12:14], "big") == ETHERTYPE_CONTROL
               for f in cap.frames)


def _synopses_from_frames(cap, config):
    """Every complete interval in a capture of exported control frames."""
    from host_sw.contracts.control_frame import (MarkerFrame, NotControlFrameError, SynopsisReassembler,
                                parse_control_frame)
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


def _cmd_estimate(args) -> int:
    from host_sw.device.driver import Snapshot
    from host_sw.model.pcap import pair_captures, read_pcap
    a, b = Path(args.sender), Path(args.receiver)
    kind = args.input
    if kind == "auto":
        kind = "snapshot" if a.suffix == ".json" else "pcap"
    records = []
    if kind == "snapshot":
        snaps = []
        for p in (a, b):
            try:
                snaps.append(Snapshot.from_json(json.loads(p.read_text())))
            except json.JSONDecodeError as e:
                raise RunFailure(f"{p} is not JSON: {e}") from None
            except ValueError as e:
                raise RunFailure(f"{p}: {e}") from None
        records.append(_pair_snapshots(snaps[0], snaps[1], args.confidence))
    else:
        caps = [read_pcap(a), read_pcap(b)]
        control = [_is_control_capture(c) for c in caps]
        if kind == "frames" or (kind == "pcap" and all(control)):
            if not args.config:
                raise RunFailure("exported frames need the configuration (--config FILE)")
            config = _load_config(args.config)
            s_iv, r_iv = (_synopses_from_frames(c, config) for c in caps)
            common = sorted(set(s_iv) & set(r_iv))
            if not common:
                raise RunFailure(f"no interval in both captures (sender {sorted(s_iv)}, "
                                 f"receiver {sorted(r_iv)})")
            for seq in common:
                s, r = s_iv[seq], r_iv[seq]
                notes = [f"{side}: interval flags {int(x.flags):#04x} (invalid)"
                         for side, x in (("sender", s), ("receiver", r)) if not x.valid]
                records.append(record_for_pair(
                    s.synopsis, r.synopsis, confidence=args.confidence, interval=seq,
                    sender_meta={"seq": seq, "flags": int(s.flags)},
                    receiver_meta={"seq": seq, "flags": int(r.flags)},
                    valid=s.valid and r.valid, notes=notes))
        else:
            if any(control):
                raise RunFailure("one capture holds exported control frames and the other "
                                 "does not; give two of the same kind")
            config = _load_config(args.config) if args.config else _default_config(args)
            try:
                intervals = pair_captures(caps[0], caps[1], mode=args.mode,
                                          interval_ns=args.interval_ns,
                                          window_bytes=config.window_bytes)
            except ValueError as e:
                raise RunFailure(str(e)) from None
            for iv in intervals:
                s, r = iv.synopses(config)
                rec = record_for_pair(s, r, confidence=args.confidence, interval=iv.interval,
                                      sender_meta={"packets": len(iv.sender.timestamps)},
                                      receiver_meta={"packets": len(iv.receiver.timestamps)})
                t = iv.truth
                rec["true"] = {"mean": _num(t.mean), "std": _num(t.std), "sent": int(t.sent),
                               "received": int(t.received), "lost": int(t.lost)}
                records.append(rec)
    if args.json:
        for rec in records:
            _dump(rec)
    else:
        print(_TABLE_HEADER)
        for rec in records:
            print(_table_row(rec))
    return 0


def _num(x):
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def _default_config(args):
    from host_sw.contracts.config import LdaConfig, LdsConfig, RdaConfig
    return {"lda": LdaConfig, "rda": RdaConfig, "lds": LdsConfig}[args.synopsis]()


# ---------------------------------------------------------------------------------------
# export
# ---------------------------------------------------------------------------------------

_CSV_COLUMNS = ("interval", "time", "valid", "synopsis", "config_id", "mean", "std",
                "ci_low", "ci_high", "lost", "loss_rate", "samples", "sent", "received",
                "true_mean", "notes")


def _read_records(path) -> list[dict]:
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise RunFailure(f"cannot read {path}: {e}") from None
    out = []
    for k, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise RunFailure(f"{path}:{k}: not a JSON record: {e}") from None
        if not isinstance(rec, dict) or "estimate" not in rec:
            raise RunFailure(f"{path}:{k}: not an ldactl record (no 'estimate' key)")
        out.append(rec)
    return out


def csv_text(records) -> str:
    """Records as CSV (one row per interval; empty cells for missing values)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(_CSV_COLUMNS)
    for rec in records:
        e = rec.get("estimate") or {}
        ci = e.get("ci") or [None, None]
        row = {"interval": rec.get("interval"), "time": rec.get("time"),
               "valid": rec.get("valid"), "synopsis": rec.get("synopsis"),
               "config_id": rec.get("config_id"), "mean": e.get("mean"),
               "std": e.get("std"), "ci_low": ci[0], "ci_high": ci[1], "lost": e.get("lost"),
               "loss_rate": e.get("loss_rate"), "samples": e.get("samples"),
               "sent": e.get("sent"), "received": e.get("received"),
               "true_mean": (rec.get("true") or {}).get("mean"),
               "notes": " | ".join(rec.get("notes") or [])}
        w.writerow(["" if row[c] is None else row[c] for c in _CSV_COLUMNS])
    return buf.getvalue()


_PROM_METRICS = (
    ("delay_mean_nanoseconds", "Estimated average one-way delay of the last valid interval",
     lambda e: e.get("mean")),
    ("delay_stddev_nanoseconds", "Estimated standard deviation of the delay",
     lambda e: e.get("std")),
    ("delay_ci_low_nanoseconds", "Lower end of the confidence interval of the mean",
     lambda e: (e.get("ci") or [None, None])[0]),
    ("delay_ci_high_nanoseconds", "Upper end of the confidence interval of the mean",
     lambda e: (e.get("ci") or [None, None])[1]),
    ("loss_ratio", "Lost / sent packets of the last valid interval",
     lambda e: e.get("loss_rate")),
    ("packets_lost", "Packets lost in the last valid interval", lambda e: e.get("lost")),
    ("effective_samples", "Effective sample size of the delay estimate",
     lambda e: e.get("samples")),
)


def prometheus_text(records, prefix: str = "ldactl") -> str:
    """Prometheus text exposition (0.0.4) of the last valid interval's estimate, the
    last interval number and the counts of valid and invalid intervals."""
    lines = []
    valid = [r for r in records if r.get("valid") and r.get("estimate")]
    last = valid[-1] if valid else None
    labels = ""
    if last:
        labels = f'{{synopsis="{last.get("synopsis")}",config_id="{last.get("config_id")}"}}'
        for name, help_text, get in _PROM_METRICS:
            v = get(last["estimate"])
            if v is None:
                continue
            lines += [f"# HELP {prefix}_{name} {help_text}.", f"# TYPE {prefix}_{name} gauge",
                      f"{prefix}_{name}{labels} {float(v)!r}"]
        lines += [f"# HELP {prefix}_interval Sequence number of the last valid interval.",
                  f"# TYPE {prefix}_interval gauge",
                  f"{prefix}_interval{labels} {last.get('interval')}"]
    n_valid = len(valid)
    lines += [f"# HELP {prefix}_intervals_total Intervals read, by validity.",
              f"# TYPE {prefix}_intervals_total counter",
              f'{prefix}_intervals_total{{valid="true"}} {n_valid}',
              f'{prefix}_intervals_total{{valid="false"}} {len(records) - n_valid}']
    return "\n".join(lines) + "\n"


def _serve_metrics(path, port: int, once: bool) -> None:
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404, "only /metrics is served")
                return
            try:
                body = prometheus_text(_read_records(path)).encode()
                code = 200
            except RunFailure as e:
                body, code = f"# error: {e}\n".encode(), 500
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = HTTPServer(("127.0.0.1", port), Handler)
    print(f"serving http://127.0.0.1:{server.server_address[1]}/metrics from {path}",
          file=sys.stderr, flush=True)
    try:
        if once:
            server.handle_request()
        else:
            server.serve_forever()
    finally:
        server.server_close()


def _cmd_export(args) -> int:
    if args.serve is not None:
        _read_records(args.input)   # fail early on a bad file
        _serve_metrics(args.input, args.serve, args.serve_once)
        return 0
    records = _read_records(args.input)
    if args.format == "jsonl":
        text = "".join(json.dumps(r) + "\n" for r in records)
    elif args.format == "csv":
        text = csv_text(records)
    else:
        text = prometheus_text(records)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


# ---------------------------------------------------------------------------------------
# plan
# ---------------------------------------------------------------------------------------

def _bank_rates(thresholds) -> list[float]:
    """Sampling probability of each bank (2^-z_j - 2^-z_{j+1}; the last 2^-z_n)."""
    z = list(thresholds)
    return [2.0 ** -z[j] - (2.0 ** -z[j + 1] if j + 1 < len(z) else 0.0)
            for j in range(len(z))]


def expected_effective_samples(rows: int, thresholds, packets: float, loss: float) -> float:
    """E[S] of an LDA with ``rows`` rows per bank: a bank sampling ``p`` of the packets
    keeps a row usable when none of its ``p·L/rows`` expected losses fall in it, so it
    contributes ``p·R·exp(-p·L/rows)`` (LDA §III-B/§IV; losses Poisson per row)."""
    lost = loss * packets
    received = packets - lost
    return sum(p * received * math.exp(-p * lost / rows) for p in _bank_rates(thresholds))


def plan_memory(*, counters: int, packets: float, loss_min: float, loss_max: float,
                max_banks: int = 8, cv: float = 1.0, confidence: float = 0.98,
                points: int = 9) -> list[dict]:
    """Candidate LDA layouts for ``counters`` counters, best first.

    For 1..``max_banks`` banks: rows = the largest power of two with banks × rows ≤
    counters; thresholds from :func:`~host_sw.estimators.lda.tuned_thresholds` for loss
    counts spread geometrically over ``[loss_min, loss_max] × packets`` (LDA §IV-B, one
    bank per loss scale, α = 0.5). At ``points`` loss rates over the range each candidate's
    expected effective sample size S is compared with the best a single bank of all the
    counters could reach at that loss rate if it were known (§IV-A's ideal); candidates are
    ranked by the worst such efficiency (LDA §IV-B's aim: near-ideal over the whole range),
    then by the worst S. The error figure is the relative Hoeffding half-width
    ``cv · sqrt(2 ln(2/δ) / S)`` at the worst S (``cv`` = σ/μ of the delay).
    """
    import numpy as np

    from host_sw.estimators.lda import expected_samples, tuned_thresholds
    if counters < 2:
        raise ValueError(f"the budget must hold at least 2 counters, not {counters}")
    if not 0 <= loss_min <= loss_max < 1:
        raise ValueError(f"need 0 ≤ loss_min ≤ loss_max < 1, not {loss_min}, {loss_max}")
    grid = (np.geomspace(max(loss_min, 1e-9), loss_max, points) if loss_max > 0
            else np.zeros(1))
    # The oracle at each loss rate: all counters in one bank at the best threshold.
    full_rows = 1 << int(math.floor(math.log2(counters)))
    best = [max(expected_effective_samples(full_rows, (z,), packets, p) for z in range(33))
            for p in grid]
    out = []
    for banks in range(1, max_banks + 1):
        rows = 1 << int(math.floor(math.log2(counters / banks))) if counters >= 2 * banks else 0
        if rows < 2:
            break
        losses = (np.geomspace(max(loss_min, 1e-9), max(loss_max, 1e-9), banks) * packets
                  if banks > 1 else [max(loss_min, loss_max) * packets])
        try:
            thresholds = tuned_thresholds(rows, losses)
        except ValueError:
            continue
        samples = [expected_effective_samples(rows, thresholds, packets, p) for p in grid]
        ratios = [s / b if b > 0 else 1.0 for s, b in zip(samples, best)]
        k = int(np.argmin(ratios))
        worst = min(samples)
        rel = cv * math.sqrt(2 * math.log(2 / (1 - confidence)) / worst) if worst > 0 \
            else math.inf
        bound = (expected_samples(rows, packets * (1 - loss_max), loss_max * packets)
                 if banks == 1 else None)
        out.append({"banks": banks, "rows": rows, "counters": banks * rows,
                    "thresholds": list(thresholds), "worst_loss": float(grid[k]),
                    "efficiency_worst": ratios[k], "expected_samples_worst": worst,
                    "expected_samples": {f"{p:.6g}": s for p, s in zip(grid, samples)},
                    "relative_error_worst": rel, "paper_bound_samples": bound})
    out.sort(key=lambda c: (-c["efficiency_worst"], -c["expected_samples_worst"]))
    return out


def _cmd_plan(args) -> int:
    from host_sw.contracts.config import LdaConfig
    word_bytes = -(-LdaConfig(count_bits=args.count_bits, ts_bits=args.ts_bits)
                   .layout.width // 8)
    counters = args.counters if args.counters is not None else args.bytes // word_bytes
    try:
        plans = plan_memory(counters=counters, packets=args.packets, loss_min=args.loss_min,
                            loss_max=args.loss_max, max_banks=args.max_banks, cv=args.cv,
                            confidence=args.confidence)
    except ValueError as e:
        from host_sw.cli.main import UsageError
        raise UsageError(str(e)) from None
    if not plans:
        raise RunFailure(f"no LDA layout fits {counters} counters")
    if args.json:
        _dump({"counters": counters, "word_bytes": word_bytes, "recommended": plans[0],
               "candidates": plans})
        return 0
    best = plans[0]
    print(f"# budget {counters} counters ({word_bytes}-byte words), {args.packets:g} packets "
          f"per interval, loss {args.loss_min:g}..{args.loss_max:g}, delay cv {args.cv:g}")
    print(f"{'banks':>5} {'rows':>7} {'thresholds':<24} {'efficiency':>10} {'at loss':>9} "
          f"{'worst E[S]':>11} {'rel. error':>10}")
    for p in plans:
        mark = "  <- recommended" if p is best else ""
        print(f"{p['banks']:>5} {p['rows']:>7} {','.join(map(str, p['thresholds'])):<24} "
              f"{p['efficiency_worst'] * 100:>9.1f}% {p['worst_loss']:>9.3g} "
              f"{p['expected_samples_worst']:>11.0f} "
              f"{p['relative_error_worst'] * 100:>9.3f}%{mark}")
    print(f"ldactl config --thresholds {','.join(map(str, best['thresholds']))} "
          f"(build: --banks {best['banks']} --rows {best['rows']})")
    return 0


# ---------------------------------------------------------------------------------------
# plot
# ---------------------------------------------------------------------------------------

def _cmd_plot(args) -> int:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    records = _read_records(args.input)
    good = [r for r in records if r.get("estimate") and r["estimate"].get("mean") is not None]
    if not good:
        raise RunFailure(f"{args.input} has no interval with an estimate")
    x = [r["interval"] if r["interval"] is not None else k for k, r in enumerate(good)]
    mean = [r["estimate"]["mean"] for r in good]
    lo = [r["estimate"]["ci"][0] for r in good]
    hi = [r["estimate"]["ci"][1] for r in good]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    yerr = [[m - l if l is not None else 0 for m, l in zip(mean, lo)],
            [h - m if h is not None else 0 for m, h in zip(mean, hi)]]
    ax1.errorbar(x, mean, yerr=yerr, fmt="o-", capsize=3, label="estimate (CI)")
    truth = [(xi, r["true"]["mean"]) for xi, r in zip(x, good)
             if r.get("true") and r["true"].get("mean") is not None]
    if truth:
        ax1.plot(*zip(*truth), "k--", label="true mean")
    ax1.set_ylabel("mean delay (ns)")
    ax1.legend()
    ax1.set_title(args.title or f"{good[0].get('synopsis', '').upper()} estimates")
    loss = [(xi, r["estimate"]["loss_rate"] * 100) for xi, r in zip(x, good)
            if r["estimate"].get("loss_rate") is not None]
    if loss:
        ax2.plot(*zip(*loss), "s-", color="tab:red")
    ax2.set_ylabel("loss (%)")
    ax2.set_xlabel("interval")
    fig.tight_layout()
    fig.savefig(args.output, dpi=100)
    plt.close(fig)
    print(f"wrote {args.output} ({len(good)} intervals)")
    return 0


# ---------------------------------------------------------------------------------------
# Parser
# ---------------------------------------------------------------------------------------

def _probability(text):
    from host_sw.cli.main import _probability as p
    return p(text)


def add_device_commands(sub) -> None:
    """Register the sub-commands on ``ldactl``'s sub-parser object."""
    from host_sw.cli.main import _positive_int
    fmt = argparse.ArgumentDefaultsHelpFormatter

    p = sub.add_parser("info", help="show a device's ID, configuration and status",
                       description="Connect, check the ID and show the device.",
                       formatter_class=fmt)
    _add_link_options(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_guard(_cmd_info))

    p = sub.add_parser("config", help="show or program a device's configuration",
                       description="Show the configuration; with --program, --thresholds or "
                                   "--mode, program the device first.", formatter_class=fmt)
    _add_link_options(p)
    p.add_argument("--program", action="store_true",
                   help="write the configuration's thresholds, masks and CONFIG_ID")
    p.add_argument("--thresholds", default=None, metavar="Z0,Z1,...",
                   help="new per-bank (LDA) / per-row (LDS) thresholds, then program")
    p.add_argument("--mode", default=None,
                   help="interval mode: manual, time, marker-send, marker-receive")
    p.add_argument("--interval-ticks", type=int, default=0, help="interval length, ticks")
    p.add_argument("--interval-start", type=int, default=0, help="time mode t0, ticks")
    p.add_argument("--export-inband", action="store_true")
    p.add_argument("--export-host", action="store_true")
    p.add_argument("--auto-release", action="store_true")
    p.add_argument("--local-mac", default=None)
    p.add_argument("--export-dst-mac", default=None)
    p.add_argument("--marker-src-mac", default=None)
    p.add_argument("--save", default=None, metavar="FILE", help="write the config as JSON")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_guard(_cmd_config))

    p = sub.add_parser("read", help="read one interval's snapshot",
                       description="Wait for a frozen interval, read it consistently and "
                                   "release it.", formatter_class=fmt)
    _add_link_options(p)
    p.add_argument("--swap", action="store_true", help="end the current interval first")
    p.add_argument("--no-release", action="store_true")
    p.add_argument("--wait", type=float, default=10.0, help="seconds to wait for a frozen "
                                                            "interval")
    p.add_argument("--output", "-o", default=None, help="write the snapshot JSON here")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_guard(_cmd_read))

    p = sub.add_parser("watch", help="per-interval estimates from a sender and a receiver",
                       description="Read both devices' intervals as they freeze and print "
                                   "loss and delay estimates with confidence intervals.",
                       formatter_class=fmt)
    p.add_argument("--sender", required=True, metavar="URL")
    p.add_argument("--receiver", required=True, metavar="URL")
    p.add_argument("--sender-core", default=None, metavar="N|NAME",
                   help="the sender's core behind a shared UART (as --core of info)")
    p.add_argument("--receiver-core", default=None, metavar="N|NAME",
                   help="the receiver's core; the two cores of one board share its port")
    _add_link_options(p, device=False)
    p.add_argument("--intervals", type=_positive_int, default=None,
                   help="stop after this many (default: run until interrupted)")
    p.add_argument("--swap", action="store_true",
                   help="end intervals from the host (manual mode) every --period seconds")
    p.add_argument("--period", type=float, default=1.0)
    p.add_argument("--wait", type=float, default=60.0, help="seconds to wait per interval")
    p.add_argument("--confidence", type=float, default=0.98)
    p.add_argument("--output", "-o", default=None, help="append JSON records here")
    p.add_argument("--progress", action="store_true", help="status counters on stderr")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_guard(_cmd_watch))

    p = sub.add_parser("estimate", help="estimates from two snapshots or two captures",
                       description="Estimate from two snapshot JSON files (ldactl read -o), "
                                   "two captures of exported control frames (needs "
                                   "--config), or two pcap captures of the same traffic at "
                                   "the two points (LDA/RDA/LDS offline).",
                       formatter_class=fmt)
    p.add_argument("sender")
    p.add_argument("receiver")
    p.add_argument("--input", choices=("auto", "snapshot", "frames", "pcap"), default="auto")
    p.add_argument("--config", default=None, metavar="FILE")
    p.add_argument("--synopsis", choices=("lda", "rda", "lds"), default="lda",
                   help="default configuration for captures without --config")
    p.add_argument("--mode", choices=("time", "marker"), default="time",
                   help="interval assignment for captures")
    p.add_argument("--interval-ns", type=_positive_int, default=None,
                   help="interval length for captures (default: one interval)")
    p.add_argument("--confidence", type=float, default=0.98)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_guard(_cmd_estimate))

    p = sub.add_parser("export", help="records as JSON lines, CSV or Prometheus text",
                       description="Convert JSON records (watch --output) to JSON lines, "
                                   "CSV or the Prometheus text exposition; --serve PORT "
                                   "serves /metrics on 127.0.0.1 (re-reading the file).",
                       formatter_class=fmt)
    p.add_argument("--input", "-i", required=True)
    p.add_argument("--format", "-f", choices=("jsonl", "csv", "prometheus"), default="jsonl")
    p.add_argument("--output", "-o", default=None)
    p.add_argument("--serve", type=int, default=None, metavar="PORT")
    p.add_argument("--serve-once", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(handler=_guard(_cmd_export))

    p = sub.add_parser("plan", help="recommend LDA banks, rows and thresholds",
                       description="Given a memory budget and a range of expected loss, "
                                   "recommend banks, rows and thresholds (LDA §IV) and "
                                   "show the expected effective sample size and error.",
                       formatter_class=fmt)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--counters", type=_positive_int, default=None)
    g.add_argument("--bytes", type=_positive_int, default=None)
    p.add_argument("--packets", type=float, default=5e6, help="packets per interval")
    p.add_argument("--loss-min", type=_probability, default=1e-4)
    p.add_argument("--loss-max", type=_probability, default=0.2)
    p.add_argument("--max-banks", type=_positive_int, default=8)
    p.add_argument("--cv", type=float, default=1.0,
                   help="expected std/mean of the delay (for the error figure)")
    p.add_argument("--confidence", type=float, default=0.98)
    p.add_argument("--count-bits", type=int, default=32)
    p.add_argument("--ts-bits", type=int, default=40)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_guard(_cmd_plan))

    p = sub.add_parser("plot", help="PNG of estimates against intervals",
                       description="Plot the mean delay with its confidence interval (and "
                                   "the truth when known) and the loss per interval.",
                       formatter_class=fmt)
    p.add_argument("--input", "-i", required=True)
    p.add_argument("--output", "-o", default="estimates.png")
    p.add_argument("--title", default=None)
    p.set_defaults(handler=_guard(_cmd_plot))


def _guard(handler):
    """Run a handler; run-time failures print one line on stderr and return 1."""
    def run(args):
        try:
            return handler(args)
        except RunFailure as e:
            print(f"ldactl {args.command}: error: {e}", file=sys.stderr)
            return 1
        except RUNTIME_ERRORS as e:
            print(f"ldactl {args.command}: error: {e}", file=sys.stderr)
            return 1
    run.__wrapped__ = handler
    return run
