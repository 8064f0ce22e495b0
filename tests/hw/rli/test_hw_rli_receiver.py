# SPDX-License-Identifier: BSD-2-Clause
"""hw.rli.receiver.RliReceiver on Amaranth's simulator: the frozen copy's counter words
equal the golden model's (:func:`host_sw.model.golden_rli.receiver_synopsis`) word for word,
interval by interval, with back-to-back updates of one cell (the bank's forwarding),
buffer overflow counted and the interval flagged."""

import numpy as np
import pytest

from host_sw.contracts.config import RliConfig
from host_sw.model.golden_rli import flow_cells, receiver_synopsis
from hw.rli.receiver import RliReceiver
from sim_tb.lib.amaranth_streams import simulate, wait_until

CONFIG = RliConfig(cells=8, digest_bits=8, ts_bits=24, delay_bits=24, sq_bits=40,
                   buffer_packets=8, slope_frac_bits=8)


def _interval(rng, n, start):
    """One interval's received frames: (flow hashes (2, n), arrival, is_ref, send)."""
    arrival = start + np.cumsum(rng.integers(0, 25, n))
    is_ref = rng.random(n) < 0.08
    is_ref[2] = True
    send = arrival - rng.integers(-200, 3000, n)
    hashes = rng.integers(0, 1 << 32, (2, n), dtype=np.uint64)
    hashes[:, rng.random(n) < 0.5] = hashes[:, :1]     # one heavy flow: same cell in a row
    return hashes, arrival, is_ref, send


async def _read_frozen(ctx, dut):
    await wait_until(ctx, lambda: ctx.get(dut.frozen_ready), 400, "the frozen copy")
    words = []
    for addr in range(CONFIG.cells):
        ctx.set(dut.frozen.addr, addr)
        ctx.set(dut.frozen.en, 1)
        await ctx.tick()
        ctx.set(dut.frozen.en, 0)
        await wait_until(ctx, lambda: ctx.get(dut.frozen.valid), 10, "the read")
        words.append(ctx.get(dut.frozen.data.as_value()))
    ctx.set(dut.release, 1)
    await ctx.tick()
    ctx.set(dut.release, 0)
    return words


def _run(intervals):
    dut = RliReceiver(config=CONFIG, memory="generic")
    result = []

    async def main(ctx):
        for hashes, arrival, is_ref, send in intervals:
            cells, digests = flow_cells(CONFIG, hashes)
            for i in range(len(arrival)):
                if is_ref[i]:
                    await wait_until(ctx, lambda: not ctx.get(dut.busy), 400, "idle")
                for name, value in (("valid", 1), ("is_ref", is_ref[i]),
                                    ("arrival", arrival[i] % (1 << CONFIG.ts_bits)),
                                    ("send", send[i] % (1 << CONFIG.ts_bits)),
                                    ("cell", cells[i]), ("digest", digests[i])):
                    ctx.set(getattr(dut, f"packet_{name}"), int(value))
                await ctx.tick()
                ctx.set(dut.packet_valid, 0)
            ctx.set(dut.swap, 1)
            await ctx.tick()
            ctx.set(dut.swap, 0)
            words = await _read_frozen(ctx, dut)
            stats = {k: ctx.get(getattr(dut, f"frozen_{k}"))
                     for k in ("references", "overflowed", "unreferenced", "refused")}
            result.append((words, stats, ctx.get(dut.frozen_flagged)))

    simulate(dut, main)
    return result


@pytest.mark.parametrize("seed", [3])
def test_frozen_words_equal_the_golden_model(seed):
    rng = np.random.default_rng(seed)
    intervals = [_interval(rng, 120, 1000), _interval(rng, 90, 50_000)]
    out = _run(intervals)
    flagged_seen = False
    for (hashes, arrival, is_ref, send), (words, stats, flagged) in zip(intervals, out):
        golden, gstats = receiver_synopsis(CONFIG, hashes, arrival, is_ref, send, ~is_ref)
        assert words == [int(w) for w in golden.words()]
        assert stats == {"references": gstats.references, "overflowed": gstats.overflowed,
                         "unreferenced": gstats.unreferenced, "refused": 0}
        assert flagged == gstats.flagged
        flagged_seen |= gstats.flagged
    assert flagged_seen                      # the overflow path was exercised
