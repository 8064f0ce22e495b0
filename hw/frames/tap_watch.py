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

from amaranth.hdl import Module, Mux, Signal

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
    # The delayed beats and timestamps are data, read only behind a valid bit that
    # reset clears: no reset of their own, which keeps some 6 500 flip-flops (64-bit data
    # path) off the reset net, whose fabric route to this line was a two-clock LDA core's
    # datapath critical path on ECP5.
    stages = [(merger.watch_valid, merger.watch)]
    for k in range(delay):
        valid = Signal(name=f"watch{k}_valid")
        beat = Signal.like(merger.watch, name=f"watch{k}", reset_less=True)
        m.d.sync += [valid.eq(stages[-1][0]), beat.eq(stages[-1][1])]
        stages.append((valid, beat))
    watch_valid, watch_payload = stages[-1]
    tap_next_valid, tap_next = stages[-2]         # the tap's beat of the next cycle
    now_line = [timebase.now[:ts_bits]]
    for k in range(delay + 1):
        now_line.append(Signal(ts_bits, name=f"now_delayed{k}", reset_less=True))
        m.d.sync += now_line[-1].eq(now_line[-2])
    m.d.comb += [
        tap.watch.valid.eq(watch_valid),
        tap.watch.ready.eq(1),
        tap.watch.payload.eq(watch_payload),
        tap.now.eq(now_line[-1]),
    ]
    # HeaderTap.boundary_ok one cycle ahead, registered (the boundary decision then
    # takes registers only): the tap's next beat is in the watch delay line now, and
    # its frame-open state next cycle follows from this cycle's.
    tap_idle = Signal(init=1)           # == tap.boundary_ok
    next_open = Mux(watch_valid, ~watch_payload.last, tap.in_frame)
    m.d.sync += tap_idle.eq(~next_open & ~(tap_next_valid & tap_next.last))
    return tap_idle
