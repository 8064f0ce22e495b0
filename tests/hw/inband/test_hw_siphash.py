# SPDX-License-Identifier: BSD-2-Clause
"""The gateware SipHash-2-4 (hw/inband/siphash.py) against the host's definition
(host_sw.contracts.siphash): the paper's vector and random messages and keys, with words
offered with and without gaps."""

import random

import pytest
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from host_sw.contracts.siphash import PAPER_VECTOR, key_to_int, siphash_tag
from hw.inband.marker_watch import MarkerWatch
from hw.inband.siphash import SipHash


def run_engine(messages, *, gaps: bool, seed=0):
    """Tags the gateware computes for ``messages`` (``(key, bytes)``, multiples of 4)."""
    dut = SipHash()
    rng = random.Random(seed)
    tags = []

    async def bench(ctx):
        for key, message in messages:
            ctx.set(dut.key, key_to_int(key))
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            words = [message[i:i + 4] for i in range(0, len(message), 4)]
            for n, w in enumerate(words):
                while gaps and rng.random() < 0.3:
                    await ctx.tick()
                ctx.set(dut.words.payload.data, int.from_bytes(w, "little"))
                ctx.set(dut.words.payload.last, n == len(words) - 1)
                ctx.set(dut.words.valid, 1)
                while not ctx.get(dut.words.ready):
                    await ctx.tick()
                await ctx.tick()
                ctx.set(dut.words.valid, 0)
            for _ in range(20):
                if ctx.get(dut.done):
                    break
                await ctx.tick()
            assert ctx.get(dut.done), "no tag"
            tags.append(ctx.get(dut.tag).to_bytes(8, "little"))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return tags


def test_paper_vector_padded_to_words():
    key, message, tag = PAPER_VECTOR
    # The paper's 15-byte message is not whole words; take its first 12 and 8 bytes.
    for n in (4, 8, 12):
        assert run_engine([(key, message[:n])], gaps=False) == [siphash_tag(message[:n], key)]
    assert siphash_tag(message, key) == tag


@pytest.mark.parametrize("gaps", [False, True])
def test_random_messages_equal_the_host(gaps):
    rng = random.Random(11)
    messages = [(rng.randbytes(16) if i % 3 else bytes(16), rng.randbytes(4 * n))
                for i, n in enumerate([1, 2, 3, 12, 13, 14, 17, 64, 65, 30])]
    assert run_engine(messages, gaps=gaps, seed=5) == [siphash_tag(m, k) for k, m in messages]


def done_clocks(words):
    """Clocks from ``start`` to ``done`` and from the last word taken to ``done``, words
    offered every clock from the one after ``start``."""
    dut = SipHash()
    result = {}

    async def bench(ctx):
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        clock = 1
        for n in range(words):
            ctx.set(dut.words.payload.data, n)
            ctx.set(dut.words.payload.last, n == words - 1)
            ctx.set(dut.words.valid, 1)
            while not ctx.get(dut.words.ready):
                await ctx.tick()
                clock += 1
            taken = clock
            await ctx.tick()
            clock += 1
        ctx.set(dut.words.valid, 0)
        while not ctx.get(dut.done):
            await ctx.tick()
            clock += 1
        result["start"], result["last"] = clock, clock - taken

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return result["start"], result["last"]


def test_timing_the_users_rely_on():
    # A marker's 12 header words: MarkerWatch.VERIFY_LATENCY (1 + 2 + 44) and
    # MarkerFrameSource.TAG_LATENCY (43) count on 43 clocks from start to done.
    assert done_clocks(12)[0] == 43
    assert MarkerWatch.VERIFY_LATENCY == 1 + 2 + 43 + 1
    # LATENCY bounds the clocks from the last word to done.
    assert max(done_clocks(n)[1] for n in (1, 2, 3, 12, 13)) == SipHash.LATENCY


@pytest.mark.parametrize("at", [0, 1, 2, 5, 9, 17, 30, 38, 41, 42])
def test_a_reset_during_a_message_ends_it_without_a_tag(at):
    """The domain's reset ``at`` clocks after a 12-word message's start: no ``done``
    until the next message is started, and that one's tag equals the host's (the
    sequencer's state has no reset of its own: ``start`` sets it)."""
    dut = SipHash()
    top = Module()
    top.domains.sync = cd = ClockDomain()
    top.submodules.dut = dut
    key, first, second = bytes(range(16)), bytes(range(48)), bytes(range(100, 148))
    seen = {}

    async def offer(ctx, message, *, reset_at=None):
        ctx.set(dut.key, key_to_int(key))
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        clock = 1
        for n in range(len(message) // 4):
            ctx.set(dut.words.payload.data, int.from_bytes(message[4 * n: 4 * n + 4], "little"))
            ctx.set(dut.words.payload.last, n == len(message) // 4 - 1)
            ctx.set(dut.words.valid, 1)
            while True:
                if clock == reset_at:
                    return
                ready = ctx.get(dut.words.ready)
                await ctx.tick()
                clock += 1
                if ready:
                    break
        ctx.set(dut.words.valid, 0)
        while clock != reset_at and not ctx.get(dut.done):
            await ctx.tick()
            clock += 1

    async def bench(ctx):
        await offer(ctx, first, reset_at=at)
        ctx.set(dut.words.valid, 0)
        ctx.set(cd.rst, 1)
        await ctx.tick()
        ctx.set(cd.rst, 0)
        dones = 0
        for _ in range(60):                 # the old message's sequencer runs out
            dones += ctx.get(dut.done)
            await ctx.tick()
        seen["stray"] = dones
        await offer(ctx, second)
        seen["tag"] = ctx.get(dut.tag).to_bytes(8, "little") if ctx.get(dut.done) else None

    sim = Simulator(top)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen == {"stray": 0, "tag": siphash_tag(second, key)}


@pytest.mark.parametrize("seed", range(6))
def test_a_start_during_a_message_drops_it(seed):
    """``start`` at a random clock of a message (while its words are taken, while it is
    finalised, or after its tag): every ``done`` until then is the first message's tag,
    and the one after it the second message's, whose words are offered with random gaps
    (``ready`` follows the sequencer through the restart). One key: a message started
    while the engine is busy keeps the key it sampled when last idle."""
    rng = random.Random(seed)
    dut = SipHash()
    first_key = second_key = rng.randbytes(16)
    results = []
    for trial in range(8):
        first, second = rng.randbytes(4 * rng.randrange(1, 14)), rng.randbytes(4 * 13)
        restart_at = rng.randrange(1, 4 * len(first) // 4 + 30)
        tags = []

        async def bench(ctx, first=first, second=second, restart_at=restart_at, tags=tags):
            for key, message, stop in ((first_key, first, restart_at), (second_key, second, None)):
                ctx.set(dut.key, key_to_int(key))
                ctx.set(dut.start, 1)
                await ctx.tick()
                ctx.set(dut.start, 0)
                words = [message[i:i + 4] for i in range(0, len(message), 4)]
                clock, n = 1, 0
                while stop is None or clock < stop:
                    # ``ready`` from the clock after ``restart``'s; low after the last word
                    if clock == 2 or n == len(words):
                        tags.append(("ready", clock == 2, ctx.get(dut.words.ready)))
                    if n < len(words) and rng.random() < 0.7:
                        ctx.set(dut.words.payload.data, int.from_bytes(words[n], "little"))
                        ctx.set(dut.words.payload.last, n == len(words) - 1)
                        ctx.set(dut.words.valid, 1)
                    else:
                        ctx.set(dut.words.valid, 0)
                    taken = ctx.get(dut.words.valid) and ctx.get(dut.words.ready)
                    await ctx.tick()
                    clock += 1
                    n += taken
                    if ctx.get(dut.done):
                        tags.append((key, ctx.get(dut.tag).to_bytes(8, "little")))
                        if stop is None:
                            break
                ctx.set(dut.words.valid, 0)

        sim = Simulator(dut)
        sim.add_clock(1e-8)
        sim.add_testbench(bench)
        sim.run()
        results.append((first, second, tags))
    for first, second, tags in results:
        readies = [t for t in tags if t[0] == "ready"]
        tags = [t for t in tags if t[0] != "ready"]
        assert all(ready == after_restart for _, after_restart, ready in readies)
        assert tags[-1] == (second_key, siphash_tag(second, second_key))
        assert all(t == (first_key, siphash_tag(first, first_key)) for t in tags[:-1])
        assert len(tags) <= 2
