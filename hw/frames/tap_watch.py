# SPDX-License-Identifier: BSD-2-Clause
"""The header tap's delayed view of the core's stream: the tap-watch delay line.

Where it sits (``docs/DESIGN.md``, "Data flow of a packet", step 1): between the frame
merger's watch copy of the accepted beats (:class:`hw.frames.frame_merger.FrameMerger`) and the
header tap (:class:`hw.frames.header_tap.HeaderTap`) of :class:`hw.lda_pipeline.MeasurementCore`. The
interval control watches the undelayed copy; the tap sees it ``delay`` cycles later
(``MeasurementCore.TAP_WATCH_DELAY``), with the timebase delayed alike, so every boundary request
is pending before the tap sees the next frame's SOF. The core calls
:func:`wire_tap_watch` from its ``elaborate``; the registers go into the core's module.
"""

from amaranth.hdl import Cat, Module, Mux, Signal

from hw.arith.stages import memory_delayed

__all__ = ["wire_tap_watch"]


def wire_tap_watch(m: Module, merger, tap, timebase, *, delay: int, ts_bits: int):
    """The tap's view of the stream; returns the registered ``frame_idle``.

    The interval control watches the merger's copy of the accepted beats (one cycle
    after acceptance); its boundary requests are registered by the ledger (one cycle
    more); the tap watches the same copy ``delay`` (TAP_WATCH_DELAY) cycles later, so every
    request reaches the pending register before the tap sees the next frame's SOF, as
    hw.interval.interval_control requires. The timebase is delayed alike, so a frame's
    timestamp is the tick of its SOF's acceptance. No path from the stream's pins or
    from ``ready`` reaches the measurement side."""
    # The beats and the timestamps go through a memory (:func:`memory_delayed`); only
    # the valid and last bits are a register line, which reset clears (the memory's
    # contents are read only behind them). The timebase is registered once before the
    # memory, a clock more than the beats (the watch copy is a clock after acceptance).
    # As registers, the delayed beats and timestamps were some 5 300 flip-flops of the
    # 64-bit LDA core, spread between the merger and the tap.
    flags = [(merger.watch_valid, merger.watch.last)]
    for k in range(delay):
        valid = Signal(name=f"watch{k}_valid")
        last = Signal(name=f"watch{k}_last")
        m.d.sync += [valid.eq(flags[-1][0]), last.eq(flags[-1][1])]
        flags.append((valid, last))
    now_ahead = Signal(ts_bits, name="now_ahead", reset_less=True)
    m.d.sync += now_ahead.eq(timebase.now[:ts_bits])
    line = memory_delayed(m, Cat(merger.watch.as_value(), now_ahead), delay, name="watch")
    watch_valid = flags[-1][0]
    watch_payload = merger.watch.shape()(line[:len(merger.watch.as_value())])
    tap_next_valid, tap_next_last = flags[-2]     # the tap's beat of the next cycle
    m.d.comb += [
        tap.watch.valid.eq(watch_valid),
        tap.watch.ready.eq(1),
        tap.watch.payload.eq(watch_payload),
        tap.now.eq(line[len(merger.watch.as_value()):]),
    ]
    # HeaderTap.boundary_ok one cycle ahead, registered (the boundary decision then
    # takes registers only): the tap's next beat is in the watch delay line now, and
    # its frame-open state next cycle follows from this cycle's.
    tap_idle = Signal(init=1)           # == tap.boundary_ok
    next_open = Mux(watch_valid, ~flags[-1][1], tap.in_frame)
    m.d.sync += tap_idle.eq(~next_open & ~(tap_next_valid & tap_next_last))
    return tap_idle
