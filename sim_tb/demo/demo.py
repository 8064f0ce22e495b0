# SPDX-License-Identifier: BSD-2-Clause
"""The demo: latency and loss between two simulated devices, read over their bridges.

Where it sits (``docs/DESIGN.md``): the whole data flow end to end — traffic → sender
core → channel → receiver core (one HDL simulation, :mod:`sim_tb.demo.two_device`), the host
reading both devices' frozen intervals over ``tcp://127.0.0.1:PORT`` with the same driver
as for boards (:class:`host_sw.device.driver.Device`) and pairing them into interval
records as ``ldactl watch`` does (:func:`host_sw.cli.records.pair_snapshots` →
:func:`host_sw.estimators.measure.estimate_pair`), and the harness's ground truth beside
every estimate. The demo sits on top of the product and the product never imports it.

``python -m sim_tb.demo`` (``./run_demo.sh`` runs it after set-up) prints one row per
interval: packets sent and received, loss, the estimated mean and
standard deviation of the delay with the confidence interval of the mean, the true values
and the relative errors; it saves ``records.jsonl`` (the ``ldactl watch`` records plus
``true``), ``snapshots.jsonl`` (both devices' snapshots) and ``demo.png`` under
``build/demo/``. Exit status: 0 when every interval was read (and, unless
``--no-check``, every true mean lies in its confidence interval), 1 on a failure,
2 when the simulator is missing.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from host_sw.cli.records import pair_snapshots, unread_record
from host_sw.contracts.frames.frame_format import (
    MTU_PAYLOAD, ControlFrameError, IntervalFlags,
)
from host_sw.contracts.frames.control_frame import (
    MarkerFrame, SynopsisReassembler, parse_control_frame,
)
from host_sw.cli.output.table import Column, Table, ci_text, fmt, separator
from host_sw.device.driver import Device
from host_sw.device.transport import open_transport
from host_sw.estimators.record import IntervalRecord
from host_sw.model.impairments import DelayDistribution, LossModel
from sim_tb.demo.two_device import (
    HOST_DONE_FILE, SimulatorMissing, TwoDeviceParams, read_truth, start_simulation,
)

__all__ = ["run_demo", "main", "add_arguments", "DEFAULT_OUT", "DEMO_TABLE", "HEADER"]

DEFAULT_OUT = Path(__file__).resolve().parents[2] / "build" / "demo"


def _rel(est, true):
    if est is None or true in (None, 0):
        return None
    return abs(est - true) / abs(true)


def _pct(x, digits=2):
    return "—" if x is None else f"{x * 100:.{digits}f}%"


def _estimate(key, text=str):
    return lambda rec: text(rec.estimate[key])


def _true(key, text):
    return lambda rec: text(rec.true[key])


#: The demo's table: estimate, truth and relative error side by side, per interval.
DEMO_TABLE = Table(columns=(
    Column("intvl", 5, lambda rec: str(rec.interval)),
    Column("sent", 6, _estimate("sent")),
    Column("recv", 6, _estimate("received")),
    Column("loss", 7, _estimate("loss_rate", _pct)),
    Column("true", 7, _true("loss_rate", _pct)),
    separator(),
    Column("mean ns", 8, _estimate("mean", fmt)),
    Column("98% CI (ns)", 19, lambda rec: ci_text(rec.estimate["ci"], digits=1)),
    Column("true", 8, _true("mean", fmt)),
    Column("err", 7, _true("mean_rel_err", _pct)),
    separator(),
    Column("std ns", 8, _estimate("std", fmt)),
    Column("true", 8, _true("std", fmt)),
    Column("err", 7, _true("std_rel_err", _pct)),
    separator(),
    Column("samples", 7, _estimate("samples")),
    Column("in-band", 7, lambda rec: rec.sender.get("inband", "—")),
    Column("ok", 0, lambda rec: "yes" if rec.true["in_ci"] else "NO"),
), invalid_reason="")

HEADER = DEMO_TABLE.header()


def _wait_truth(sim, seq: int, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        for rec in sim.truth():
            if rec.get("interval") == seq:
                return rec
        if sim.process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"no ground truth for interval {seq}; simulation log "
                               f"{sim.log}:\n{sim.log_tail()}")
        time.sleep(0.05)


def _with_truth(rec: IntervalRecord, truth: dict) -> IntervalRecord:
    """``rec`` with the harness's ground truth of its interval and the errors against it."""
    e = rec.estimate or {}
    lo, hi = e.get("ci") or (None, None)
    tm = truth["true_mean_ns"]
    return dataclasses.replace(rec, true={
        "mean": tm, "std": truth["true_std_ns"], "sent": truth["sent"],
        "received": truth["received"], "lost": truth["lost"],
        "loss_rate": truth["loss_rate"],
        "mean_rel_err": _rel(e.get("mean"), tm),
        "std_rel_err": _rel(e.get("std"), truth["true_std_ns"]),
        "in_ci": lo is not None and tm is not None and lo <= tm <= hi})


class InbandCapture:
    """The host's decoding of the receiver's output stream (``inband.jsonl``, written by
    the harness as the frames leave the receiver): markers seen, and the sender's
    synopses reassembled from its in-band export chunks
    (:class:`host_sw.contracts.frames.control_frame.SynopsisReassembler`)."""

    def __init__(self, path: Path, config, *, mtu: int = MTU_PAYLOAD):
        self.path, self.config, self.mtu = Path(path), config, mtu
        self.reassembler = SynopsisReassembler(config, mtu=mtu)
        self.synopses: dict = {}
        self.errors: dict = {}
        self.markers: list[int] = []
        self._file = None
        self._partial = ""

    def poll(self) -> None:
        if self._file is None:
            if not self.path.exists():
                return
            self._file = self.path.open()
        while True:
            line = self._file.readline()
            if not line:
                return
            if not line.endswith("\n"):
                self._partial += line
                continue
            line, self._partial = self._partial + line, ""
            self._add(bytes.fromhex(json.loads(line)["frame"]))

    def _add(self, frame: bytes) -> None:
        try:
            parsed = parse_control_frame(frame, expected=self.config, mtu=self.mtu)
            if isinstance(parsed, MarkerFrame):
                self.markers.append(parsed.seq)
                return
            done = self.reassembler.add(parsed)
        except ControlFrameError as e:
            self.errors[getattr(e, "seq", None)] = str(e)
            return
        if done is not None:
            self.synopses[done.seq] = done

    def wait(self, seq: int, timeout: float, alive):
        """The reassembled export of interval ``seq`` (``None`` after ``timeout`` s)."""
        deadline = time.monotonic() + timeout
        while True:
            self.poll()
            if seq in self.synopses:
                return self.synopses[seq]
            if time.monotonic() > deadline or not alive():
                return None
            time.sleep(0.02)

    def close(self):
        if self._file is not None:
            self._file.close()


def _inband_check(snap, capture: InbandCapture | None, sim, timeout: float) -> dict:
    """Compare the sender's bus readout with its in-band export, word for word."""
    if capture is None:
        return {}
    got = capture.wait(snap.seq, min(timeout, 30.0), lambda: sim.process.poll() is None)
    if got is None:
        return {"inband": "lost", "inband_note": "no complete in-band export of interval "
                f"{snap.seq} in the receiver's output"}
    same = list(got.synopsis.words()) == list(snap.synopsis.words())
    return {"inband": "= bus" if same else "DIFFERS",
            "inband_words": len(got.synopsis.words())}


def _read_sender(sender: Device, capture, sim, timeout: float):
    """The sender's next interval: bus readout, compared with its in-band export (then
    released: the export reads the same frozen copy)."""
    s = sender.read_snapshot(release=False, timeout=timeout)
    inband = _inband_check(s, capture, sim, timeout)
    sender.release()
    return s, inband


def _read_intervals(sim, sender: Device, receiver: Device, params: TwoDeviceParams,
                    out: Path, *, confidence: float, printer, timeout: float,
                    capture: InbandCapture | None):
    """Read ``params.intervals`` intervals from both devices (the sender's numbering;
    both devices at once, each on its own link), check the sender's in-band export
    against its bus readout, pair them into records with the truth, print each row and
    write ``snapshots.jsonl``; yield the records."""
    printer(HEADER)
    held: list = []
    pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="demo-read")
    with pool, (out / "snapshots.jsonl").open("w") as snaps:
        ahead = None
        for _ in range(params.intervals):
            if ahead is None:
                ahead = pool.submit(receiver.read_snapshot, timeout=timeout)
            s, inband = _read_sender(sender, capture, sim, timeout)
            while not held or ((held[-1].seq - s.seq) & 0xFFFFFFFF) >= 1 << 31:
                held.append(ahead.result() if ahead is not None
                            else receiver.read_snapshot(timeout=timeout))
                ahead = None
            r = _pop_receiver(held, s.seq)
            meta = {"seq": s.seq, "packets": s.packets, **inband}
            if r is None:
                rec = unread_record(s.seq, s.config, sender_meta=meta, notes=[
                    f"the receiver has no interval {s.seq}: a lost marker merged it into "
                    f"the receiver's previous interval (flagged SEQUENCE_GAP there)"])
            else:
                snaps.write(json.dumps({"sender": s.to_json(), "receiver": r.to_json()})
                            + "\n")
                rec = pair_snapshots(s, r, confidence, sender_meta=meta,
                                     receiver_meta={"seq": r.seq, "packets": r.packets})
                if r.flags & IntervalFlags.SEQUENCE_GAP:
                    rec = dataclasses.replace(rec, notes=(*rec.notes, (
                        f"receiver: its interval {r.seq} is flagged SEQUENCE_GAP by the "
                        f"device (the marker ending it was lost: it spans more than one "
                        f"of the sender's intervals)")))
            rec = _with_truth(rec, _wait_truth(sim, s.seq, timeout))
            printer(DEMO_TABLE.row(rec))
            yield rec


def _pop_receiver(held: list, seq: int):
    """The held receiver snapshot of interval ``seq`` (older ones dropped), or ``None``
    when the receiver's next one is later (a lost marker merged two intervals there)."""
    while held and ((held[0].seq - seq) & 0xFFFFFFFF) >= 1 << 31:
        held.pop(0)
    return held.pop(0) if held and held[0].seq == seq else None


def _wait_ports(sim, timeout: float, printer, t0: float) -> dict:
    """``sim.wait_ports`` with a progress line every few seconds (build, start-up)."""
    deadline = time.monotonic() + timeout
    last, shown, seen = "", 0.0, 0
    while True:
        try:
            return sim.wait_ports(min(5.0, max(0.1, deadline - time.monotonic())))
        except TimeoutError:
            if time.monotonic() > deadline:
                raise
        phases = sim.phases()
        for missed in phases[seen:-1]:      # said between two polls (a fallback, say)
            printer(f"#   {time.monotonic() - t0:4.0f} s: {missed}")
        seen = max(seen, len(phases))
        phase = sim.progress()
        if phase != last or time.monotonic() - shown > 15:
            printer(f"#   {time.monotonic() - t0:4.0f} s: {phase}")
            last, shown = phase, time.monotonic()


def _simulate_and_read(params: TwoDeviceParams, out: Path, *, confidence: float, printer,
                       timeout: float, t0: float) -> list[IntervalRecord]:
    """Start the simulation, read its intervals and wait for it to finish."""
    sim = start_simulation(params, out / "sim")
    devices = []
    capture = None
    try:
        printer(f"# starting the simulation ({sim.simulator}: build, reset, calibration) …")
        ports = _wait_ports(sim, timeout, printer, t0)
        printer(f"# sender {ports['sender']}, receiver {ports['receiver']} "
                f"({time.monotonic() - t0:.0f} s)")
        if ports.get("inband"):
            capture = InbandCapture(out / "sim" / ports["inband"], params.config())
            printer(f"# intervals: the sender's timer every {params.interval_ticks} clocks, "
                    f"markers in-band to the receiver; the sender's export decoded from "
                    f"the receiver's output ({ports['inband']})")
        for side in ("sender", "receiver"):
            devices.append(Device(open_transport(ports[side]), config=params.config(),
                                  tick_ns=params.tick_ns))
        records = list(_read_intervals(sim, *devices, params, out, confidence=confidence,
                                       printer=printer, timeout=timeout, capture=capture))
        (out / "sim" / HOST_DONE_FILE).write_text("done\n")
        rc = sim.wait(timeout)
        if rc != 0:
            raise RuntimeError(f"the simulation exited with status {rc}; log {sim.log}:\n"
                               + sim.log_tail())
    finally:
        for d in devices:
            d.close()
        if capture is not None:
            capture.close()
        sim.stop()
    return records


def run_demo(params: TwoDeviceParams, out: Path, *, confidence: float = 0.98,
             printer=print, timeout: float = 600.0) -> list[IntervalRecord]:
    """Run the simulation and read both devices for ``params.intervals`` intervals;
    return the records (with ``true``) and write the output files."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    config = params.config()
    printer(f"# LDA {config.banks} banks x {config.rows} rows, {params.data_width}-bit "
            f"cores, {params.window_bytes}-byte header window, clock {params.tick_ns:g} ns; "
            f"{params.intervals} intervals x {params.frames} frames; channel delay "
            f"{params.delay}, loss {params.loss}; seed {params.seed}")
    printer("# building the cores (hw.lda_pipeline → Verilog, cached) …")
    t0 = time.monotonic()
    records = _simulate_and_read(params, out, confidence=confidence, printer=printer,
                                 timeout=timeout, t0=t0)
    with (out / "records.jsonl").open("w") as f:
        for rec in records:
            f.write(json.dumps(rec.to_json()) + "\n")
    done = [r for r in read_truth(out / "sim" / "truth.jsonl") if r.get("done")]
    wall = time.monotonic() - t0
    inside = sum(1 for r in records if r.true["in_ci"])
    exports = [r.sender.get("inband") for r in records if r.sender.get("inband")]
    if exports:
        printer(f"# in-band: {exports.count('= bus')} of {len(records)} sender exports "
                f"decoded from the receiver's output equal the sender's bus readout word "
                f"for word")
    printer(f"# {inside} of {len(records)} true means inside the {confidence:.0%} confidence "
            f"interval; {wall:.0f} s wall"
            + (f", {done[0]['cycles']} clocks simulated" if done else ""))
    try:
        png = plot(records, out / "demo.png", params)
        printer(f"# plot: {png}")
    except ImportError:
        printer("# matplotlib is not installed: no plot")
    return records


def plot(records: list[IntervalRecord], path: Path, params: TwoDeviceParams) -> Path:
    """Estimates with confidence intervals against the truth, per interval (PNG)."""
    # matplotlib is optional and heavy: imported only to draw (ImportError: no plot).
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    good = [r for r in records if r.estimate and r.estimate["mean"] is not None]
    x = [r.interval for r in good]
    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    mean = [r.estimate["mean"] for r in good]
    err = [[m - r.estimate["ci"][0] for m, r in zip(mean, good)],
           [r.estimate["ci"][1] - m for m, r in zip(mean, good)]]
    ax1.errorbar(x, mean, yerr=err, fmt="o", capsize=4, label="LDA estimate (CI)")
    ax1.plot(x, [r.true["mean"] for r in good], "k_", markersize=20, mew=2,
             label="true mean")
    ax1.set_ylabel("mean delay (ns)")
    ax1.legend(loc="best")
    ax1.set_title(f"two simulated devices: delay {params.delay}, loss {params.loss}")
    ax2.plot(x, [r.estimate["std"] for r in good], "o", label="LDA estimate")
    ax2.plot(x, [r.true["std"] for r in good], "k_", markersize=20, mew=2, label="true")
    ax2.set_ylabel("delay std (ns)")
    ax2.legend(loc="best")
    ax3.plot(x, [100 * (r.estimate["loss_rate"] or 0) for r in good], "o",
             label="estimate")
    ax3.plot(x, [100 * r.true["loss_rate"] for r in good], "k_", markersize=20, mew=2,
             label="true")
    ax3.set_ylabel("loss (%)")
    ax3.set_xlabel("interval (sequence number)")
    ax3.set_xticks(x)
    ax3.legend(loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)


def add_arguments(ap: argparse.ArgumentParser) -> None:
    d = TwoDeviceParams()
    ap.add_argument("--intervals", type=int, default=d.intervals)
    ap.add_argument("--frames", type=int, default=d.frames, help="frames per interval")
    ap.add_argument("--delay", default=d.delay, help="channel delay distribution")
    ap.add_argument("--loss", default=d.loss, help="loss model")
    ap.add_argument("--gap-ns", type=float, default=d.gap_ns,
                    help="mean idle time between frames at the sender")
    ap.add_argument("--rows", type=int, default=d.rows)
    ap.add_argument("--window-bytes", type=int, default=d.window_bytes,
                    help="header window of both cores (bytes)")
    ap.add_argument("--mode", choices=("inband", "harness"), default=d.mode,
                    help="inband: the devices end the intervals (markers, in-band export); "
                         "harness: the harness pauses the traffic and swaps both")
    ap.add_argument("--drop-marker", type=int, action="append", default=[], metavar="K",
                    help="the channel loses the marker that ends the K-th interval read "
                         "(0 = the first; repeatable): shows the sequence-gap handling")
    ap.add_argument("--seed", type=int, default=d.seed)
    ap.add_argument("--confidence", type=float, default=0.98)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    ap.add_argument("--no-check", action="store_true",
                    help="exit 0 even when a true mean lies outside its interval")


def run_from_args(args) -> int:
    try:
        params = TwoDeviceParams(intervals=args.intervals, frames=args.frames,
                                 delay=args.delay, loss=args.loss, gap_ns=args.gap_ns,
                                 rows=args.rows, seed=args.seed,
                                 window_bytes=args.window_bytes, mode=args.mode,
                                 drop_markers=tuple(args.drop_marker))
        DelayDistribution.parse(params.delay)
        LossModel.parse(params.loss)
    except ValueError as e:
        print(f"demo: {e}", file=sys.stderr)
        return 1
    try:
        records = run_demo(params, args.out, confidence=args.confidence)
    except SimulatorMissing as e:
        print(f"demo: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - one clear message, no numbers
        print(f"demo failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    if len(records) != params.intervals:
        print(f"demo failed: {len(records)} of {params.intervals} intervals read",
              file=sys.stderr)
        return 1
    if any(r.sender.get("inband") in ("DIFFERS", "lost") for r in records):
        print("demo: an in-band export was lost or differs from the sender's bus readout",
              file=sys.stderr)
        return 1
    # with markers dropped on purpose, the intervals they merge are invalid (flagged)
    checked = [r for r in records if r.valid or not params.drop_markers]
    if not args.no_check and not all(r.true["in_ci"] for r in checked):
        print("demo: a true mean lies outside its confidence interval (or an interval is "
              "invalid)", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sim_tb.demo",
                                 description="Latency and loss between two simulated "
                                             "devices, read over their bridges.")
    add_arguments(ap)
    return run_from_args(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
