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


def _present(ctx, dut, interval, cells, digests, i):
    """Packet ``i`` of ``interval`` on the receiver's ``packet_*`` inputs."""
    hashes, arrival, is_ref, send = interval
    for name, value in (("valid", 1), ("is_ref", is_ref[i]),
                        ("arrival", arrival[i] % (1 << CONFIG.ts_bits)),
                        ("send", send[i] % (1 << CONFIG.ts_bits)),
                        ("cell", cells[i]), ("digest", digests[i])):
        ctx.set(getattr(dut, f"packet_{name}"), int(value))


async def _frozen_result(ctx, dut):
    """The frozen copy's words, the interval's counts and its flag (the copy released)."""
    words = await _read_frozen(ctx, dut)
    stats = {k: ctx.get(getattr(dut, f"frozen_{k}"))
             for k in ("references", "overflowed", "unreferenced", "refused")}
    return words, stats, ctx.get(dut.frozen_flagged)


def _run(intervals):
    dut = RliReceiver(config=CONFIG, memory="generic")
    result = []

    async def main(ctx):
        for interval in intervals:
            cells, digests = flow_cells(CONFIG, interval[0])
            for i in range(len(interval[1])):
                if interval[2][i]:
                    await wait_until(ctx, lambda: not ctx.get(dut.busy), 400, "idle")
                _present(ctx, dut, interval, cells, digests, i)
                await ctx.tick()
                ctx.set(dut.packet_valid, 0)
            ctx.set(dut.swap, 1)
            await ctx.tick()
            ctx.set(dut.swap, 0)
            result.append(await _frozen_result(ctx, dut))

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



def _spaced(rng, n, refs, start):
    """``n`` received frames 3 ticks apart, references at the indices ``refs``."""
    arrival = start + np.arange(n) * 3
    is_ref = np.zeros(n, dtype=bool)
    is_ref[refs] = True
    send = arrival - rng.integers(0, 500, n)
    hashes = rng.integers(0, 1 << 32, (2, n), dtype=np.uint64)
    return hashes, arrival, is_ref, send


def _references_then_data(rng, n_tail, start):
    """An interval with two references among its first packets, then ``n_tail`` data
    packets (more than the buffer holds: the last segment overflows)."""
    return _spaced(rng, 7 + n_tail, [2, 6], start)


def _data_then_references(rng, n_data, start):
    """An interval that opens with ``n_data`` data packets before its first reference
    (more than the buffer holds: the segment overflows), then a reference and a few
    packets more."""
    return _spaced(rng, n_data + 6, [n_data], start)


def _run_back_to_back(first, second):
    """``first``'s packets, the swap in its last packet's clock (the unit idle); from the
    very next clock ``second``'s packets, one per clock (the first of them in the cycle
    the boundary is taken as the flush); the first interval's copy read; the second swap;
    the second's copy read. Before a reference and after it the driver waits for the
    unit to be idle."""
    dut = RliReceiver(config=CONFIG, memory="generic")
    result = []

    async def send(ctx, interval, swap_at_last):
        hashes, arrival, is_ref, _ = interval
        cells, digests = flow_cells(CONFIG, hashes)
        for i in range(len(arrival)):
            if is_ref[i] or (i and is_ref[i - 1]):
                await wait_until(ctx, lambda: not ctx.get(dut.busy), 400, "idle")
            _present(ctx, dut, interval, cells, digests, i)
            ctx.set(dut.swap, swap_at_last and i == len(arrival) - 1)
            await ctx.tick()
            ctx.set(dut.packet_valid, 0)
            ctx.set(dut.swap, 0)

    async def main(ctx):
        await send(ctx, first, swap_at_last=True)
        await send(ctx, second, swap_at_last=False)
        result.append(await _frozen_result(ctx, dut))
        await wait_until(ctx, lambda: not ctx.get(dut.busy), 400, "idle")
        ctx.set(dut.swap, 1)
        await ctx.tick()
        ctx.set(dut.swap, 0)
        result.append(await _frozen_result(ctx, dut))

    simulate(dut, main)
    return result


@pytest.mark.parametrize("n_tail, n_data", [(CONFIG.buffer_packets, CONFIG.buffer_packets),
                                            (CONFIG.buffer_packets + 2, CONFIG.buffer_packets),
                                            (CONFIG.buffer_packets, CONFIG.buffer_packets + 3),
                                            (CONFIG.buffer_packets + 1,
                                             CONFIG.buffer_packets + 1)])
def test_the_boundary_splits_back_to_back_packets_as_the_golden_model(n_tail, n_data):
    """The last packet before the boundary (in the swap's clock) and the first after it
    (in the flush's clock) arrive back to back, each in a segment that can overflow:
    each interval's segments hold ``buffer_packets`` and its overflow is its own, as the
    golden model."""
    rng = np.random.default_rng(11)
    first = _references_then_data(rng, n_tail, 1000)
    second = _data_then_references(rng, n_data, 20_000)
    out = _run_back_to_back(first, second)
    for (hashes, arrival, is_ref, send), (words, stats, flagged) in zip((first, second), out):
        golden, gstats = receiver_synopsis(CONFIG, hashes, arrival, is_ref, send, ~is_ref)
        assert stats == {"references": gstats.references, "overflowed": gstats.overflowed,
                         "unreferenced": gstats.unreferenced, "refused": 0}
        assert words == [int(w) for w in golden.words()]
        assert flagged == gstats.flagged
    assert [o[1]["overflowed"] for o in out] == [n_tail - CONFIG.buffer_packets,
                                                 n_data - CONFIG.buffer_packets]
