# SPDX-License-Identifier: BSD-2-Clause
"""The byte-serial CRC-32 of the bridge against the contract's function (zlib's crc32),
a byte entering a clock after it is taken."""

import random

from amaranth.sim import Simulator

from host_sw.contracts import uartbone as ub
from hw.bus.crc import Crc32Byte


def run_crc(messages):
    """Feed each message (starting a new CRC at its first byte, with idle clocks between
    bytes); the (crc, residue_ok) seen after each message."""
    dut = Crc32Byte()
    seen = []

    async def bench(ctx):
        rng = random.Random(1)
        for msg in messages:
            for k, b in enumerate(msg):
                ctx.set(dut.data, b)
                ctx.set(dut.en, 1)
                ctx.set(dut.start, k == 0)
                await ctx.tick()
                ctx.set(dut.en, 0)
                if rng.random() < 0.3:
                    await ctx.tick().repeat(rng.randint(1, 3))
            if not ctx.get(dut.settled):   # the last byte enters in this clock
                await ctx.tick()
            assert ctx.get(dut.settled)
            seen.append((ctx.get(dut.crc), ctx.get(dut.residue_ok)))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return seen


def test_crc_matches_the_contract_and_checks_the_residue():
    rng = random.Random(7)
    messages = [b"123456789", b"\x00", b"\xff" * 5] + [
        bytes(rng.randrange(256) for _ in range(rng.randint(1, 40))) for _ in range(20)]
    got = run_crc(messages)
    assert got[0] == (0xCBF43926, 0)            # the catalogue check value of CRC-32
    assert [c for c, _ in got] == [ub.crc32(m) for m in messages]
    framed = [m + ub.crc_bytes(m) for m in messages]
    framed[3] = framed[3][:-1] + bytes([framed[3][-1] ^ 0x01])     # one bit wrong
    ok = [r for _, r in run_crc(framed)]
    assert ok == [1, 1, 1, 0] + [1] * (len(messages) - 4)
