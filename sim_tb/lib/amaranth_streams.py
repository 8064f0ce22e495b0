# SPDX-License-Identifier: BSD-2-Clause
"""Frame-stream testbenches and runners for Amaranth's simulator, shared by the gateware
tests (``tests/test_hw_*.py``).

Where it sits (``docs/DESIGN.md``): the wire on either side of a block with frame streams
(the ``hw.frames.frame`` beat layout: ``data``, ``keep``, ``last``, ``error``). :class:`Source`
drives a stream by its rules (valid holds with its payload until the transfer) with random
idle cycles; :class:`Sink` takes one with random ``ready`` and checks the same rules on
every cycle; :func:`stream_put` offers one payload on any stream (a byte into a UART or
the bus bridge); :func:`simulate` runs a design until its main testbench returns, and
:func:`wait_until` ticks until a condition holds.
"""

from amaranth.sim import Simulator

from hw.counters.counter_bank import CounterBank
from hw.frames.frame import beats_to_frames, frame_to_beats

__all__ = ["BEAT_KEYS", "Source", "Sink", "FakeFrozenCopy", "stream_put", "simulate", "wait_until"]

#: The fields of a frame-stream beat.
BEAT_KEYS = ("data", "keep", "last", "error")


class Source:
    """Drives a frame stream by the rules: valid, once high, holds with its payload until
    the transfer; random idle cycles between beats."""

    def __init__(self, port, data_width, rng, p_valid=1.0):
        self.port, self.data_width, self.rng, self.p_valid = port, data_width, rng, p_valid
        self.queue = []            # (frame, error)
        self.sof_cycles = []       # cycle of each frame's first beat transfer
        self.eof_cycles = []       # and of its last
        self.cycle = 0

    async def run(self, ctx):
        port = self.port
        while True:
            if not self.queue:
                ctx.set(port.valid, 0)
                await ctx.tick()
                self.cycle += 1
                continue
            frame, error = self.queue.pop(0)
            for k, beat in enumerate(frame_to_beats(frame, self.data_width, error=error)):
                while self.rng.random() >= self.p_valid:
                    ctx.set(port.valid, 0)
                    await ctx.tick()
                    self.cycle += 1
                ctx.set(port.valid, 1)
                ctx.set(port.payload, beat)
                while True:
                    _, _, ready = await ctx.tick().sample(port.ready)
                    self.cycle += 1
                    if ready:
                        break
                if k == 0:
                    self.sof_cycles.append(self.cycle - 1)
                if beat["last"]:
                    self.eof_cycles.append(self.cycle - 1)
            ctx.set(port.valid, 0)


class Sink:
    """Takes a frame stream with random ready and checks the stream rules: a beat shown
    and not taken is shown again, unchanged, the next cycle."""

    def __init__(self, port, data_width, rng, p_ready=1.0):
        self.port, self.data_width, self.rng, self.p_ready = port, data_width, rng, p_ready
        self.beats = []            # (cycle, beat)
        self.cycle = 0

    async def run(self, ctx):
        shown = None
        while True:
            ready = self.rng.random() < self.p_ready
            ctx.set(self.port.ready, ready)
            _, _, valid, payload = await ctx.tick().sample(self.port.valid, self.port.payload)
            beat = {k: int(payload[k]) for k in BEAT_KEYS}
            if shown is not None:
                assert valid and beat == shown, \
                    f"cycle {self.cycle}: beat {shown} withdrawn or changed before transfer"
            if valid and ready:
                self.beats.append((self.cycle, beat))
                shown = None
            else:
                shown = beat if valid else None
            self.cycle += 1

    def frames(self):
        return [f for f, _ in beats_to_frames([b for _, b in self.beats], self.data_width)]

    def frame_cycles(self):
        """Per frame, the cycles of its beats."""
        out, cur = [], []
        for cycle, beat in self.beats:
            cur.append(cycle)
            if beat["last"]:
                out.append(cur)
                cur = []
        return out


async def stream_put(ctx, stream, payload):
    """Offer ``payload`` on ``stream`` and tick until it transfers; ``valid`` is left low.
    Back-to-back calls raise it again before the next clock edge, so their payloads
    transfer on consecutive cycles when ``ready`` is high."""
    ctx.set(stream.valid, 1)
    ctx.set(stream.payload, payload)
    while True:
        ready = ctx.get(stream.ready)
        await ctx.tick()
        if ready:
            break
    ctx.set(stream.valid, 0)


def simulate(dut, main, *background):
    """Run until ``main`` returns (the background testbenches loop forever)."""
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    for bench in background:
        sim.add_testbench(bench, background=True)
    sim.add_testbench(main)
    sim.run()


async def wait_until(ctx, condition, limit, what):
    """Tick until ``condition()`` holds; fail after ``limit`` clocks."""
    for _ in range(limit):
        if condition():
            return
        await ctx.tick()
    raise AssertionError(f"timed out waiting for {what}")


class FakeFrozenCopy:
    """The counter bank's frozen read port (the exporter's tests): ``data``/``valid``
    READ_LATENCY cycles after ``en`` (one read per clock), from a list of words; ``reads``
    counts the reads."""

    def __init__(self, port, words):
        self.port, self.words, self.reads = port, words, 0

    async def run(self, ctx):
        pipe = [None] * (CounterBank.READ_LATENCY - 1)
        async for _, _, en, addr in ctx.tick().sample(self.port.en, self.port.addr):
            pipe.append(addr if en else None)
            out = pipe.pop(0)
            ctx.set(self.port.valid, out is not None)
            ctx.set(self.port.data.as_value(), 0 if out is None else self.words[out])
            if en:
                self.reads += 1
