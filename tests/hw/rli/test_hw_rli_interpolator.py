# SPDX-License-Identifier: BSD-2-Clause
"""hw.rli.interpolator.RliInterpolator on Amaranth's simulator: every update (cell, digest,
interpolated delay) equal to the golden model's, buffer overflow and unreferenced packets
counted as the golden model counts them, a reference while busy refused."""

import gc
import warnings

import numpy as np
import pytest
from amaranth.hdl import UnusedElaboratable

from host_sw.contracts.config import RliConfig
from host_sw.model.golden_rli import interpolated_delays
from hw.rli.interpolator import RliInterpolator
from sim_tb.lib.amaranth_streams import simulate

CONFIG = RliConfig(cells=16, digest_bits=8, ts_bits=24, buffer_packets=8, slope_frac_bits=8)


def _stream(rng, n, p_ref, *, first_ref=True):
    arrival = 1000 + np.cumsum(rng.integers(0, 30, n))
    is_ref = rng.random(n) < p_ref
    is_ref[0] = first_ref
    send = arrival - rng.integers(-300, 3000, n)
    cell = rng.integers(0, CONFIG.cells, n)
    digest = rng.integers(0, 256, n)
    return arrival, is_ref, send, cell, digest


def _run(arrival, is_ref, send, cell, digest, *, flush=True, respect_busy=True):
    dut = RliInterpolator(config=CONFIG)
    out = []

    async def collect(ctx):
        while True:
            _, _, valid, c, g, d = await ctx.tick().sample(
                dut.update_valid, dut.update_cell, dut.update_digest, dut.update_delay)
            if valid:
                out.append((int(c), int(g), int(d)))

    async def main(ctx):
        for i in range(len(arrival)):
            if is_ref[i] and respect_busy:
                while ctx.get(dut.busy):
                    await ctx.tick()
            ctx.set(dut.packet_valid, 1)
            ctx.set(dut.packet_is_ref, int(is_ref[i]))
            ctx.set(dut.packet_arrival, int(arrival[i]))
            ctx.set(dut.packet_send, int(send[i]) % (1 << CONFIG.ts_bits))
            ctx.set(dut.packet_cell, int(cell[i]))
            ctx.set(dut.packet_digest, int(digest[i]))
            await ctx.tick()
            ctx.set(dut.packet_valid, 0)
        if flush:
            while ctx.get(dut.busy):
                await ctx.tick()
            ctx.set(dut.flush, 1)
            await ctx.tick()
            ctx.set(dut.flush, 0)
        for _ in range(200):
            await ctx.tick()
            if not ctx.get(dut.busy):
                break
        await ctx.tick().repeat(3)
        main.stats = {k: ctx.get(getattr(dut, k)) for k in
                      ("references", "overflowed", "unreferenced", "refused")}

    simulate(dut, main, collect)
    return out, main.stats


@pytest.mark.parametrize("seed", [1, 2])
def test_updates_equal_the_golden_model(seed):
    rng = np.random.default_rng(seed)
    arrival, is_ref, send, cell, digest = _stream(rng, 300, 0.06, first_ref=seed == 2)
    out, stats = _run(arrival, is_ref, send, cell, digest)
    delay, kept, golden = interpolated_delays(CONFIG, arrival, is_ref, send, ~is_ref)
    assert out == [(int(cell[k]), int(digest[k]), int(d)) for k, d in zip(kept, delay)]
    assert stats == {"references": golden.references, "overflowed": golden.overflowed,
                     "unreferenced": 0, "refused": 0}
    assert golden.overflowed > 0           # the buffer limit was exercised


def test_no_reference_counts_every_packet_unreferenced():
    rng = np.random.default_rng(5)
    arrival, is_ref, send, cell, digest = _stream(rng, 6, 0.0, first_ref=False)
    out, stats = _run(arrival, is_ref, send, cell, digest)
    assert out == [] and stats["unreferenced"] == 6 and stats["references"] == 0


def test_no_reference_overflows_beyond_the_buffer_as_the_golden_model():
    rng = np.random.default_rng(7)
    arrival, is_ref, send, cell, digest = _stream(rng, 11, 0.0, first_ref=False)
    out, stats = _run(arrival, is_ref, send, cell, digest)
    _, _, golden = interpolated_delays(CONFIG, arrival, is_ref, send, ~is_ref)
    assert out == []
    assert stats == {"references": 0, "overflowed": golden.overflowed,
                     "unreferenced": golden.unreferenced, "refused": 0}
    assert (golden.overflowed, golden.unreferenced) == (3, 8)   # buffer_packets = 8


def test_a_reference_while_busy_is_refused():
    rng = np.random.default_rng(6)
    arrival, is_ref, send, cell, digest = _stream(rng, 40, 0.0)
    is_ref[[5, 20, 21]] = True
    _, stats = _run(arrival, is_ref, send, cell, digest, flush=False, respect_busy=False)
    assert stats["refused"] >= 1 and stats["references"] + stats["refused"] == 4


def test_rejects_other_configurations():
    with warnings.catch_warnings():  # the rejected objects are never elaborated
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="RliConfig"):
            RliInterpolator(config=object())
        with pytest.raises(ValueError, match="power of two"):
            RliInterpolator(config=RliConfig(buffer_packets=6))
        gc.collect()
