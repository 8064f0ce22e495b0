# SPDX-License-Identifier: BSD-2-Clause
"""Interval control: when an interval ends, in each INTERVAL_MODE, and with which number.

It decides *boundaries*; the interval ledger (:class:`hw.interval.interval_ledger.IntervalLedger`)
executes them between frames (swap, or overrun when the other copy is not clean). The
modes (INTERVAL_MODE.mode of :mod:`host_sw.contracts.regmap`: 0 manual, 1 time, 2 marker
send, 3 marker receive), with the numbers, timestamps and flags each gives:
``docs/DESIGN.md``, "Data flow of a counter", step 1.

Timing: ``boundary`` is registered in every mode: one cycle after ``swap``, the timer's
crossing or ``marker_sent`` (modes 0–2), and :data:`RECEIVE_LATENCY` cycles after the
marker's EOF transfer on ``watch`` (mode 3). The core shows its tap the watched stream
late enough that a request reaches the ledger's pending register before the tap sees the
next frame's SOF, so that frame already belongs to the new interval
(``MeasurementCore.TAP_WATCH_DELAY``).
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.frames.frame_format import IntervalFlags
from host_sw.contracts.siphash import KEY_BYTES

from hw.inband.control_frame_tx import marker_request_layout
from hw.frames.frame import FrameMonitor, check_data_width
from hw.inband.marker_watch import MarkerWatch

__all__ = ["MODE_MANUAL", "MODE_TIME", "MODE_MARKER_SEND", "MODE_MARKER_RECEIVE",
           "IntervalTimer", "IntervalControl"]

#: INTERVAL_MODE.mode values (host_sw.device.driver.INTERVAL_MODES).
MODE_MANUAL, MODE_TIME, MODE_MARKER_SEND, MODE_MARKER_RECEIVE = 0, 1, 2, 3

SEQ_BITS = 32
TS_BITS = 64
#: Cycles from a marker's EOF transfer on ``watch`` to ``boundary`` (mode 3): the EOF
#: registered twice (the header comparisons are registered in between), the tag check
#: (``MarkerWatch.VERIFY_LATENCY`` in all), the accepted marker registered with its
#: sequence comparison, then the registered request.
RECEIVE_LATENCY = MarkerWatch.VERIFY_LATENCY + 2


class IntervalTimer(wiring.Component):
    """The ``t0 + i·δ`` boundary schedule against the timebase.

    Members
    -------
    enable: In(1)
        Run the schedule; its rising edge (re)arms it.
    rearm: In(1)
        Pulse: restart at ``i = 0`` (INTERVAL_START/TICKS/MODE were written; taken two
        cycles later, like ``enable``'s rising edge: ``ticks`` and ``start`` are
        registered beside the schedule first; ``ticks != 0`` three cycles later).
    ticks, start: In(64)
        δ and t0. δ = 0 stops the timer. δ must be at least 4 (the comparison is
        pipelined: the schedule advances at most once per 2 clocks).
    now: In(64)
        The timebase.
    tick: Out(1)
        Pulse: the timebase reached boundary ``index`` at ``at = t0 + index·δ``
        (registered; 2–3 cycles after ``now`` reaches ``at``). Boundaries already more
        than one δ in the past when reached (t0 in the past, timebase set forward) are
        skipped without a pulse.
    index: Out(32)
    at: Out(64)
    """

    def __init__(self):
        super().__init__({
            "enable": In(1), "rearm": In(1), "ticks": In(TS_BITS), "start": In(TS_BITS),
            "now": In(TS_BITS),
            "tick": Out(1), "index": Out(SEQ_BITS), "at": Out(TS_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        # The schedule has no reset: a restart loads it before ``settle`` lets it act.
        next_at = Signal(TS_BITS, reset_less=True)          # t0 + i·δ
        after_next = Signal(TS_BITS, reset_less=True)       # t0 + (i+1)·δ
        next_index = Signal(SEQ_BITS, reset_less=True)
        reached, behind, settle = Signal(), Signal(), Signal()
        enabled_before = Signal()
        # Registered inputs of the decisions (Fmax: each enable is one LUT of registers).
        enabled, running, restart = Signal(), Signal(), Signal()

        # δ and t0 registered beside the schedule's adders, loaded every clock: the
        # registers they come from (the configuration's copies) sit where the bus
        # writes them, and the net from there into the 64-bit carry chain was the
        # two-clock LDA core's datapath critical path on two placements
        # (``docs/HARDWARE.md``). A restart waits one clock more (``restart_due``), so
        # that it loads the values of the clock of the rearm.
        ticks = Signal(TS_BITS, name="ticks_here", reset_less=True)
        start = Signal(TS_BITS, name="start_here", reset_less=True)
        restart_due = Signal()
        m.d.sync += [ticks.eq(self.ticks), start.eq(self.start)]
        # ``ticks != 0`` in two stages (16-bit pieces, then their OR with ``enable``):
        # in one, its LUT tree was the two-clock LDS core's datapath critical path on
        # one placement (four LUT levels, ``docs/HARDWARE.md``). ``running`` then follows
        # δ three clocks late; a restart's ``settle`` clock covers the last of them, and
        # δ only changes with a rearm.
        pieces = range(0, len(ticks), 16)
        ticks_nonzero = Signal(len(pieces))
        m.d.sync += ticks_nonzero.eq(Cat(*(ticks[k: k + 16].any() for k in pieces)))
        m.d.sync += [enabled_before.eq(self.enable),
                     enabled.eq(self.enable),
                     running.eq(self.enable & ticks_nonzero.any()),
                     restart_due.eq(self.rearm | (self.enable & ~enabled_before)),
                     restart.eq(restart_due),
                     reached.eq(self.now >= next_at),
                     behind.eq(self.now >= after_next),
                     self.tick.eq(0)]
        act = Signal()
        m.d.comb += act.eq(running & enabled & reached & ~settle)
        with m.If(restart):
            m.d.sync += [next_at.eq(start), after_next.eq(start + ticks),
                         next_index.eq(0), settle.eq(1)]
        with m.Elif(act):
            m.d.sync += [next_at.eq(after_next), after_next.eq(after_next + ticks),
                         next_index.eq(next_index + 1), settle.eq(1),
                         self.tick.eq(~behind), self.index.eq(next_index),
                         self.at.eq(next_at)]
        with m.Else():
            m.d.sync += settle.eq(0)
        return m


class IntervalControl(wiring.Component):
    """Boundary decisions for the four interval modes (``docs/DESIGN.md``, "Data flow of a
    counter", step 1).

    Parameters
    ----------
    data_width:
        Width of the watched frame stream (marker receive).

    Members
    -------
    mode: In(2)
        INTERVAL_MODE.mode.
    rearm: In(1)
        Pulse when INTERVAL_MODE, INTERVAL_TICKS or INTERVAL_START is written (restarts
        the ``t0 + i·δ`` schedule at ``i = 0``; a change of ``mode`` also does).
    interval_ticks, interval_start: In(64)
        δ and t0.
    now: In(64)
        The timebase.
    swap: In(1)
        CONTROL.swap pulse (modes 0 and 2; ignored in modes 1 and 3).
    config_id: In(32)
        CONFIG_ID (markers must carry it, mode 3).
    marker_src_mac: In(48)
        MARKER_SRC_MAC (mode 3).
    key, auth: In(128), In(1)
        AUTH_KEY and AUTH_MODE.enable (the markers' tags, both modes 2 and 3).
    ending_flags: In(8)
        The top's flags of the current interval (its OVERRUN bit), copied into a marker's
        flags byte when the marker is requested (mode 2).
    watch: In(FrameMonitor(data_width))
        The input transfers (mode 3; see the timing note in the module docstring).
    marker: Out(stream.Signature(marker_request_layout()))
        Marker requests (mode 2) for :class:`hw.inband.marker_source.MarkerFrameSource`.
    marker_sent: In(1)
        The requested marker's first beat transferred (the inserter's ``inserted_sof``).
    boundary: Out(1)
        End the current interval at the next frame boundary (a one-cycle pulse: the
        ledger's ``request``); the three below are valid in the same cycle.
    boundary_seq: Out(32)
        The sequence number of the interval that *begins* (INTERVAL_SEQ and the new
        interval's status take it, also on an overrun).
    boundary_flags: Out(8)
        :class:`~host_sw.contracts.frames.frame_format.IntervalFlags` to OR into the flags of
        the interval that *ends* (the ledger adds OVERRUN itself).
    boundary_timestamp: Out(64)
        FROZEN_TIMESTAMP of the interval that ends.
    seq: Out(32)
        The current interval's sequence number as this block counts it (it equals the
        top's INTERVAL_SEQ when the top adopts every ``boundary_seq``).
    markers_sent, markers_accepted, markers_rejected, sequence_gaps: Out(32)
        Status counters (wrapping): markers whose first beat went out (mode 2); markers
        accepted / ignored for any reason (mode 3); accepted markers with a sequence gap.
    markers_runt, markers_bad_tag, markers_replayed: Out(32)
        Status counters (wrapping, mode 3) of ignored markers by reason: shorter than
        60 bytes; tag not verified; an interval number not forward of the last one taken
        (a replayed or old marker: the sequence number never goes backwards).
    """

    def __init__(self, *, data_width: int):
        check_data_width(data_width)
        self.data_width = data_width
        super().__init__({
            "mode": In(2), "rearm": In(1),
            "interval_ticks": In(TS_BITS), "interval_start": In(TS_BITS), "now": In(TS_BITS),
            "swap": In(1), "config_id": In(32), "marker_src_mac": In(48),
            "key": In(8 * KEY_BYTES), "auth": In(1),
            "ending_flags": In(8),
            "watch": In(FrameMonitor(data_width)),
            "marker": Out(stream.Signature(marker_request_layout())),
            "marker_sent": In(1),
            "boundary": Out(1), "boundary_seq": Out(SEQ_BITS), "boundary_flags": Out(8),
            "boundary_timestamp": Out(TS_BITS),
            "seq": Out(SEQ_BITS),
            "markers_sent": Out(32), "markers_accepted": Out(32),
            "markers_rejected": Out(32), "sequence_gaps": Out(32),
            "markers_runt": Out(32), "markers_bad_tag": Out(32), "markers_replayed": Out(32),
        })

    def status_sources(self) -> dict:
        """The status counters, by register name (each is its register's namesake):
        :func:`hw.bus.core_registers.wire_status`."""
        return {name: getattr(self, name) for name in (
            "markers_sent", "markers_accepted", "markers_rejected", "sequence_gaps",
            "markers_runt", "markers_bad_tag", "markers_replayed")}

    def elaborate(self, platform):
        m = Module()
        m.submodules.timer = timer = IntervalTimer()
        m.submodules.marker_watch = mw = MarkerWatch(data_width=self.data_width)

        mode_before = Signal(2)
        m.d.sync += mode_before.eq(self.mode)
        timed = (self.mode == MODE_TIME) | (self.mode == MODE_MARKER_SEND)
        m.d.comb += [
            timer.enable.eq(timed),
            timer.rearm.eq(self.rearm | (self.mode != mode_before)),
            timer.ticks.eq(self.interval_ticks),
            timer.start.eq(self.interval_start),
            timer.now.eq(self.now),
            mw.watch.valid.eq(self.watch.valid),
            mw.watch.ready.eq(self.watch.ready),
            mw.watch.payload.eq(self.watch.payload),
            mw.config_id.eq(self.config_id),
            mw.marker_src_mac.eq(self.marker_src_mac),
            mw.key.eq(self.key),
            mw.auth.eq(self.auth),
        ]
        # The mode decoded into one-hot registers (the mode CSR's compare is then not
        # the first of four LUT levels into the request registers' enables). A mode
        # change takes effect one cycle later.
        mode_manual = Signal(init=1, name="mode_manual")
        mode_time, mode_send = Signal(name="mode_time"), Signal(name="mode_send")
        m.d.sync += [mode_manual.eq(self.mode == MODE_MANUAL),
                     mode_time.eq(self.mode == MODE_TIME),
                     mode_send.eq(self.mode == MODE_MARKER_SEND)]
        marker_went, marker_ts = self._marker_send(m, timer, mode_send)
        received = self._marker_receive(m, mw)
        # The candidates, chosen by the (registered, one-hot) mode alone.
        cand_seq = Signal(SEQ_BITS)
        cand_flags = Signal(8)
        cand_timestamp = Signal(TS_BITS)
        with m.If(mode_time):
            m.d.comb += [cand_seq.eq(timer.index), cand_flags.eq(int(IntervalFlags.TIME_MODE)),
                         cand_timestamp.eq(timer.at)]
        with m.Elif(received.receiving):
            m.d.comb += [cand_seq.eq(received.next_seq),
                         cand_flags.eq(Mux(received.gap, int(IntervalFlags.SEQUENCE_GAP), 0)),
                         cand_timestamp.eq(received.marker_time)]
        with m.Elif(mode_send):
            m.d.comb += [cand_seq.eq(self.seq + 1), cand_timestamp.eq(marker_ts)]
        with m.Else():
            m.d.comb += [cand_seq.eq(self.seq + 1), cand_timestamp.eq(self.now)]
        fired = ((mode_manual & self.swap) | (mode_time & timer.tick) | marker_went
                 | received.accepted)
        self._request(m, fired, cand_seq, cand_flags, cand_timestamp)
        return m

    def _request(self, m, fired, cand_seq, cand_flags, cand_timestamp):
        """The registered boundary request. Its fields are the current mode's candidates,
        which the request registers load every clock: only ``boundary`` and ``seq``
        depend on the decision that a request happens (as the enable of ~100 flip-flops
        that decision would be the core's critical path)."""
        reg_boundary = Signal()
        reg_seq = Signal(SEQ_BITS, reset_less=True)         # read with reg_boundary
        reg_flags = Signal(8, reset_less=True)
        reg_timestamp = Signal(TS_BITS, reset_less=True)
        m.d.sync += [reg_boundary.eq(fired), reg_seq.eq(cand_seq),
                     reg_flags.eq(cand_flags), reg_timestamp.eq(cand_timestamp)]
        with m.If(fired):
            m.d.sync += self.seq.eq(cand_seq)
        m.d.comb += [
            self.boundary.eq(reg_boundary),
            self.boundary_seq.eq(reg_seq),
            self.boundary_flags.eq(reg_flags),
            self.boundary_timestamp.eq(reg_timestamp),
        ]

    def _marker_send(self, m, timer, mode_send):
        """Mode 2: one marker at a time: requested (valid until the source takes it),
        then awaiting its first beat on the output. Returns ``marker_went`` (its first
        beat left: the boundary) and the marker's timestamp."""
        marker_valid = Signal()
        awaiting_sof = Signal()
        marker_ts = Signal(TS_BITS)
        m.d.comb += self.marker.valid.eq(marker_valid)
        # A timer boundary is stamped with its nominal tick t0 + i·δ, a CONTROL.swap with
        # the timebase.
        trigger_ts = Mux(timer.tick, timer.at, self.now)
        marker_went = mode_send & awaiting_sof & self.marker_sent
        with m.If(marker_went):
            m.d.sync += self.markers_sent.eq(self.markers_sent + 1)
        # The marker handshake's next state, computed once: the registers take it, and
        # so does `marker_free` (no marker requested or in flight), a register that
        # equals ~marker_valid & ~awaiting_sof. The marker's fields follow the current
        # values while it is 1, so they hold those of the trigger's cycle afterwards:
        # their enable is a register (~140 flops), not the trigger decision.
        sending = mode_send
        free_now = ~marker_valid & ~awaiting_sof
        valid_next = sending & (((self.swap | timer.tick) & free_now)
                                | (marker_valid & ~self.marker.ready))
        awaiting_next = sending & ((marker_valid & self.marker.ready)
                                   | (awaiting_sof & ~self.marker_sent))
        marker_free = Signal(init=1)
        m.d.sync += [marker_valid.eq(valid_next), awaiting_sof.eq(awaiting_next),
                     marker_free.eq(~valid_next & ~awaiting_next)]
        with m.If(marker_free):
            m.d.sync += [self.marker.payload.seq.eq(self.seq),
                         self.marker.payload.timestamp.eq(trigger_ts),
                         self.marker.payload.flags.eq(self.ending_flags),
                         marker_ts.eq(trigger_ts)]
        return marker_went, marker_ts

    def _marker_receive(self, m, mw):
        """Mode 3: accepted markers end the interval (a registered request, like the
        others; ``receiving`` is registered too).

        A marker whose ``seq`` is before this point's current interval (serial number
        arithmetic: more than 2³¹ behind counts as ahead) is a replay or an old marker:
        counted and ignored, so the interval number never goes backwards. Before the
        first accepted marker of a receive run (``synced``) any number is taken.
        The accepted marker is registered with its sequence comparisons, its next
        sequence number and its timestamp (the 32-bit comparisons then do not feed the
        counters' and the request's enables). The interval's sequence number changes
        only with a request, and requests in this mode come only from markers, many
        cycles apart, so comparing a cycle early is exact."""
        r = SimpleNamespace(receiving=Signal(name="receiving"),
                            accepted=Signal(name="accepted"), replayed=Signal(name="replayed"),
                            rejected=Signal(name="rejected"), gap=Signal(name="gap"),
                            next_seq=Signal(SEQ_BITS, reset_less=True, name="next_seq"),
                            marker_time=Signal(TS_BITS, reset_less=True,
                                               name="marker_time"))
        synced = Signal()
        behind = Signal()
        m.d.sync += r.receiving.eq(self.mode == MODE_MARKER_RECEIVE)
        m.d.comb += behind.eq(synced & (mw.seq - self.seq)[SEQ_BITS - 1])
        m.d.sync += [r.accepted.eq(r.receiving & mw.accepted & ~behind),
                     r.replayed.eq(r.receiving & mw.accepted & behind),
                     r.rejected.eq(r.receiving & (mw.rejected | mw.bad_tag)),
                     r.gap.eq(mw.seq != self.seq), r.next_seq.eq(mw.seq + 1),
                     r.marker_time.eq(mw.timestamp)]
        with m.If(~r.receiving):
            m.d.sync += synced.eq(0)
        with m.Elif(r.accepted):
            m.d.sync += synced.eq(1)
        with m.If(r.accepted):
            m.d.sync += [self.markers_accepted.eq(self.markers_accepted + 1)]
            with m.If(r.gap):
                m.d.sync += self.sequence_gaps.eq(self.sequence_gaps + 1)
        m.d.sync += self.markers_rejected.eq(self.markers_rejected + r.rejected + r.replayed)
        runt, bad_tag = Signal(name="runt"), Signal(name="bad_tag")
        m.d.sync += [runt.eq(r.receiving & mw.runt), bad_tag.eq(r.receiving & mw.bad_tag)]
        for counter, hit in ((self.markers_runt, runt), (self.markers_bad_tag, bad_tag),
                             (self.markers_replayed, r.replayed)):
            with m.If(hit):
                m.d.sync += counter.eq(counter + 1)
        return r
