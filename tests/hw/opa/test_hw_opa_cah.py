# SPDX-License-Identifier: BSD-2-Clause
"""hw.opa.cah.OpaCah on Amaranth's simulator (single and double buffered): after a packet stream with runs of one
group back to back (A,A,A / A,B,A,B), every group's word equals the golden model's
(:func:`host_sw.model.golden_opa.opa_synopsis`) word for word; with a group's plain sums many
times p (up to the count's range), and the read-out's reduction alone
(hw.opa.readout.OpaReadout) on sums up to its width's bound."""

import numpy as np
import pytest
from amaranth.back import rtlil
from amaranth.sim import Simulator

from host_sw.contracts.check_value import plausibility_problem, words_check
from host_sw.contracts.config import OpaConfig
from host_sw.model.golden_opa import opa_synopsis
from hw.opa.cah import OpaCah
from hw.opa.readout import OpaReadout, fold_chunks, sum_bits


def _packets(config, rng, n):
    gb = config.groups.bit_length() - 1
    groups = np.concatenate([[0, 0, 0, 1, 0, 1, 0, 2, 2], rng.integers(0, config.groups, n)])
    low = rng.integers(0, 2 ** (64 - gb), len(groups), dtype=np.uint64)
    return (groups.astype(np.uint64) << np.uint64(64 - gb)) | low


def _full_group(config, rng):
    """A group's count filled to its range (``2**count_bits − 1`` packets, back to
    back), its plain sums ~255 times p, mixed with a few packets of another group."""
    gb = config.groups.bit_length() - 1
    n = (1 << config.count_bits) - 1
    groups = np.zeros(n + 6, dtype=np.uint64)
    groups[[3, 4, 100, 101, 102, 200]] = 1
    low = rng.integers(0, 2 ** (64 - gb), len(groups), dtype=np.uint64)
    return (groups << np.uint64(64 - gb)) | low


@pytest.mark.parametrize("config", [OpaConfig(groups=4, rows=4), OpaConfig(groups=8, rows=2),
                                    OpaConfig(groups=2, rows=4, count_bits=8)],
                         ids=["g4k4", "g8k2", "full-group-c8"])
def test_words_equal_golden(config):
    rng = np.random.default_rng(config.groups)
    packets = (_packets(config, rng, 60) if config.count_bits > 8
               else _full_group(config, rng))
    gaps = rng.random(len(packets)) < 0.2
    dut = OpaCah(config=config)
    words = {}

    async def bench(ctx):
        for p, gap in zip(packets, gaps):
            if gap:
                ctx.set(dut.valid, 0)
                await ctx.tick()
            ctx.set(dut.valid, 1)
            ctx.set(dut.packet_hash, int(p))
            await ctx.tick()
        ctx.set(dut.valid, 0)
        for _ in range(dut.latency + 2):
            await ctx.tick()
        for g in range(config.groups):
            ctx.set(dut.read_addr, g)
            ctx.set(dut.read_en, 1)
            await ctx.tick()
            ctx.set(dut.read_en, 0)
            for _ in range(dut.READ_LATENCY - 1):
                assert not ctx.get(dut.read_valid)
                await ctx.tick()
            assert ctx.get(dut.read_valid)
            words[g] = ctx.get(dut.read_data)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    expected = opa_synopsis(config, packets).words()
    assert [words[g] for g in range(config.groups)] == expected


@pytest.mark.parametrize("count_bits", [8, 32, 63])
@pytest.mark.parametrize("copies", [1, 2])
def test_readout_reduces_every_sum(count_bits, copies):
    """OpaReadout on stored sums up to ``2**sum_bits − 1`` (beyond what a count allows),
    multiples of p and their neighbours, the copy select and the zeroing: ``value`` is
    the word with each sum mod p, ``data`` the same or 0, two cycles later."""
    config = OpaConfig(groups=4, rows=3, count_bits=count_bits)
    width, p = sum_bits(config), (1 << 31) - 1
    rng = np.random.default_rng(count_bits)
    edges = [0, 1, p - 1, p, p + 1, 2 * p, (1 << width) - 1, ((1 << width) - 1) // p * p,
             ((1 << width) - 1) // p * p - 1, 1 << (width - 1)]
    sums = edges + [int(v) for v in rng.integers(0, 1 << 62, 30, dtype=np.uint64) >> (
        62 - min(width, 62))] + [int(rng.integers(0, 1 << 31)) << (width - 31)
                                   for _ in range(6)]
    reads = []
    for i in range(0, len(sums), config.rows):
        row_sums = (sums[i:i + config.rows] + [p] * config.rows)[:config.rows]
        count = int(rng.integers(0, 1 << count_bits, dtype=np.uint64))
        stored = count | sum(v << (count_bits + r * width) for r, v in enumerate(row_sums))
        want = count | sum((v % p) << (count_bits + 31 * r) for r, v in enumerate(row_sums))
        reads.append((stored, int(rng.integers(0, copies)), i % 3 == 1, want))
    dut = OpaReadout(config=config, copies=copies)
    got = []

    async def bench(ctx):
        flush = [(0, 0, 0, 0)] * OpaReadout.LATENCY
        for n, (stored, copy, zero, _) in enumerate(reads + flush):
            for c in range(copies):   # the other copy holds noise
                ctx.set(dut.stored[c], stored if c == copy else n * 0x9E3779B97F4A7C15)
            ctx.set(dut.copy, copy)
            ctx.set(dut.zero, zero)
            if n >= OpaReadout.LATENCY:
                got.append((ctx.get(dut.value), ctx.get(dut.data)))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert got == [(want, 0 if zero else want) for _, _, zero, want in reads]
    assert fold_chunks(63) == [(0, 31), (31, 63)]
    assert fold_chunks(94) == [(0, 31), (31, 62), (62, 94)]


def test_readout_copy_select_in_a_stage_of_its_own(tmp_path):
    """After ``synth_ecp5``: the copy select's registers (``b_y*``) load from the chunk
    sums (``a*_y*``) and the select through no carry chain, and the fold's carry chains
    start at them, so no path has the select in front of the fold (that path was the
    OPA words' critical path on ECP5)."""
    from tests.hw.ecp5_netlist import fan_in_registers, registers_of, synthesized

    module = synthesized(OpaReadout(config=OpaConfig(groups=4), copies=2), tmp_path)
    chosen = set().union(*(registers_of(module, f"b_y{r}") for r in range(4)))
    sums = set().union(*(registers_of(module, f"a{c}_y{r}") for c in range(2)
                         for r in range(4)))
    assert chosen and sums
    assert fan_in_registers(module, chosen) & sums
    assert not fan_in_registers(module, chosen, through="CCU2C")
    out = registers_of(module, "value")
    assert out and not fan_in_registers(module, out, through="CCU2C") & sums


def test_rejects_other_configs():
    from host_sw.contracts.config import LdaConfig
    with pytest.raises(TypeError, match="OpaConfig"):
        OpaCah(config=LdaConfig())


def test_memory_choice_is_checked_and_built():
    with pytest.raises(ValueError, match="memory must be one of auto, generic, ecp5"):
        OpaCah(config=OpaConfig(groups=8), memory="bram")
    with pytest.raises(ValueError, match="up to 16384 groups"):
        OpaCah(config=OpaConfig(groups=1 << 15), memory="ecp5")
    text = rtlil.convert(OpaCah(config=OpaConfig(groups=8, rows=3), memory="ecp5"),
                         name="opa")
    assert "cell \\DP16KD " in text
    # each row's four partial products: a MULT18X18D with its output register only
    assert text.count("cell \\MULT18X18D ") == 4 * 2
    assert text.count('parameter \\REG_INPUTA_CLK "NONE"') == 4 * 2
    assert text.count('parameter \\REG_OUTPUT_CLK "CLK0"') == 4 * 2
    generic = rtlil.convert(OpaCah(config=OpaConfig(groups=8, rows=3), memory="generic"),
                            name="opa")
    assert "MULT18X18D" not in generic


def test_double_buffered_intervals_equal_golden():
    """Two intervals through the double-buffered core, the second's packets right behind
    the swap (packets of both copies in the pipeline at once, same groups): each frozen
    copy equals the golden model's words of its interval; reads before FROZEN answer
    read_error, a swap while the other copy is FROZEN is refused; frozen_check and
    frozen_updates are what the host's integrity check expects."""
    config = OpaConfig(groups=4, rows=3)
    rng = np.random.default_rng(11)
    intervals = [_packets(config, rng, 40), _packets(config, rng, 30)]
    dut = OpaCah(config=config, double_buffered=True)
    got, checks = [], []

    async def read_all(ctx):
        words, errors = [], []
        for g in range(config.groups):
            ctx.set(dut.read_addr, g)
            ctx.set(dut.read_en, 1)
            await ctx.tick()
            ctx.set(dut.read_en, 0)
            await ctx.tick().repeat(dut.READ_LATENCY - 1)
            assert ctx.get(dut.read_valid)
            words.append(ctx.get(dut.read_data))
            errors.append(ctx.get(dut.read_error))
        return words, errors

    async def feed(ctx, packets):
        for p in packets:
            ctx.set(dut.valid, 1)
            ctx.set(dut.packet_hash, int(p))
            await ctx.tick()
        ctx.set(dut.valid, 0)

    async def swap(ctx):
        ctx.set(dut.swap, 1)
        refused = ctx.get(dut.swap_refused)
        await ctx.tick()
        ctx.set(dut.swap, 0)
        return refused

    async def bench(ctx):
        while ctx.get(dut.sweeping):        # the clearing sweep after reset
            await ctx.tick()
        await feed(ctx, intervals[0])
        ctx.set(dut.valid, 1)
        ctx.set(dut.packet_hash, int(intervals[1][0]))
        assert not await swap(ctx)          # the swap cycle's packet goes to copy 0
        # a read while copy 0 drains, beside the packets: answered with read_error
        ctx.set(dut.read_en, 1)
        ctx.set(dut.read_addr, 1)
        await feed(ctx, intervals[1][1:2])
        ctx.set(dut.read_en, 0)
        await feed(ctx, intervals[1][2:dut.READ_LATENCY + 1])
        errors = [ctx.get(dut.read_valid), ctx.get(dut.read_error), ctx.get(dut.read_data)]
        await feed(ctx, intervals[1][dut.READ_LATENCY + 1:])
        for _ in range(dut.latency + dut.check_cycles + 4):
            await ctx.tick()
        assert ctx.get(dut.frozen_ready)
        got.append(await read_all(ctx))
        checks.append((ctx.get(dut.frozen_check), ctx.get(dut.frozen_updates)))
        assert await swap(ctx)              # refused: the other copy is FROZEN
        ctx.set(dut.release, 1)
        await ctx.tick()
        ctx.set(dut.release, 0)
        for _ in range(config.groups + 2):
            await ctx.tick()
        assert ctx.get(dut.other_clean)
        assert not await swap(ctx)
        for _ in range(dut.latency + dut.check_cycles + 4):
            await ctx.tick()
        got.append(await read_all(ctx))
        checks.append((ctx.get(dut.frozen_check), ctx.get(dut.frozen_updates)))
        got.append(errors)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    first = np.concatenate([intervals[0], intervals[1][:1]])
    for (words, errors), (check, updates), packets in zip(
            got, checks, (first, intervals[1][1:])):
        assert (words, errors) == (opa_synopsis(config, packets).words(), [0] * config.groups)
        # the CAH's CRC of the words (the core folds the header in: hw.counters.freeze_check)
        assert (check, updates) == (words_check(config, words), len(packets))
        counts = config.layout.unpack(list(words))["count"]
        assert plausibility_problem(config, counts, updates) is None
    assert got[2] == [1, 1, 0]   # read during the drain: valid, error, no data
