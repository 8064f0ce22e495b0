# SPDX-License-Identifier: BSD-2-Clause
"""The interval ledger: executes interval boundaries and keeps each copy's interval status.

Where it sits (``docs/DESIGN.md``, "Data flow of a counter"): between the interval control
(:class:`hw.interval.interval_control.IntervalControl`, which decides *that* an interval ends) and
the counter bank (:class:`hw.counters.counter_bank.CounterBank`, whose two copies hold the
counters). The ledger decides *when* the boundary is taken (at the next frame boundary of
the tap, never while a swap is still travelling through the measurement pipeline),
whether it is a swap or an overrun, and keeps, per counter copy, the status the host
reads back and the exporter sends with the snapshot: sequence number, flags, timestamp,
packet count and CONFIG_ID, and the point's role and source MAC as the interval froze.
:class:`hw.lda_pipeline.MeasurementCore` wires it between the interval control, the tap,
the bucket selector, the counter bank, the CSR bank and the exporter; the module
docstring of :mod:`hw.lda_pipeline` describes the behaviour the host sees.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.frames.frame_format import IntervalFlags

__all__ = ["SEQ_BITS", "FLAG_BITS", "TIMESTAMP_BITS", "ROLE_BITS", "MAC_BITS",
           "boundary_request_layout", "interval_status_layout", "IntervalLedger"]

SEQ_BITS = 32
FLAG_BITS = 8
TIMESTAMP_BITS = 64
ROLE_BITS = 8
MAC_BITS = 48

#: A boundary request: the new interval's sequence number, the flags to OR into the
#: interval that ends, and the timestamp of the interval that ends.
boundary_request_layout = data.StructLayout({
    "seq": SEQ_BITS, "flags": FLAG_BITS, "timestamp": TIMESTAMP_BITS})

#: The status of one counter copy's interval.
interval_status_layout = data.StructLayout({
    "seq": SEQ_BITS, "flags": FLAG_BITS, "timestamp": TIMESTAMP_BITS,
    "packets": 32, "config_id": 32, "role": ROLE_BITS, "src_mac": MAC_BITS})


class IntervalLedger(wiring.Component):
    """Swap / overrun decision and the per-copy interval status.

    A boundary request makes a swap *pending*; requests before the boundary merge (the
    latest sequence number and timestamp, the flags of all). The pending swap is taken in
    a cycle with ``frame_idle`` and no swap in flight: if the counter bank's other copy is
    clean it is a **swap** (``swap`` pulses, ``copy`` flips in that same cycle, so a frame
    starting then already takes the new copy); otherwise an **overrun** (``overruns``
    counts, the current interval is flagged OVERRUN). Either way ``interval_seq`` takes the
    requested number, so two measurement points stay aligned by sequence number.

    Members
    -------
    request: In(1)
        Pulse: end the current interval (:attr:`IntervalControl.boundary`).
    request_data: In(boundary_request_layout)
        With ``request``: the new interval's sequence number, the flags of the ending
        interval, the ending interval's timestamp.
    frame_idle: In(1)
        1 when no frame is open at the tap (a register), so a boundary cannot split a
        frame's copy.
    other_clean: In(1)
        The counter bank's other copy is CLEAN (a swap is possible).
    swap_arrived: In(1)
        The swap pulse left the measurement pipeline at the counter bank (a further
        boundary may be taken).
    counted: In(1), counted_copy: In(1)
        A counted frame's update request reaches the counter bank, for copy
        ``counted_copy``.
    config_id: In(32), config_id_written: In(1)
        The CONFIG_ID register and its write strobe: written with a new value, the
        current interval is flagged CONFIG_CHANGED; a new interval records it.
    frozen_copy: In(1)
        The counter bank's frozen copy, whose status ``frozen`` shows.
    role: In(ROLE_BITS), src_mac: In(MAC_BITS)
        The point's role (:class:`host_sw.contracts.frames.frame_format.Role`) and
        LOCAL_MAC: an interval that ends by a swap records them (its FROZEN_ROLE and
        FROZEN_SRC_MAC).
    swap: Out(1)
        Pulse: the boundary is executed as a swap (to the tap, which sends it down the
        measurement pipeline in order with the records).
    copy: Out(1)
        The copy frames starting in this cycle are tagged with (the new one in a swap's
        cycle).
    interval_seq: Out(32)
        INTERVAL_SEQ: the sequence number of the current interval.
    overruns: Out(32)
        OVERRUNS: boundaries that found the other copy not clean.
    ending_flags: Out(8)
        The flags of the current interval so far (for the marker that ends it).
    frozen: Out(interval_status_layout)
        The status of the frozen copy's interval.

    Latency
    -------
    ``request`` is registered, then sets the pending register: the boundary is taken
    at the earliest 2 cycles after ``request`` (``swap`` high in that cycle), in the
    first cycle with ``frame_idle`` and no swap in flight. The status (``interval_seq``,
    ``overruns``, the copies' status) is updated 1 cycle after the boundary; ``frozen``
    and ``ending_flags`` select from those registers without a further register. The
    request and the decision are registered so that the decisions depend on registers
    only (short paths into the pending and status registers' enables).

    Why a component of its own: the bookkeeping of which interval a copy holds is one
    piece of state with one rule (the boundary), apart from the composition of the core.
    At reset copy 0 is the current interval, with sequence number 0.
    """

    request: In(1)
    request_data: In(boundary_request_layout)
    frame_idle: In(1)
    other_clean: In(1)
    swap_arrived: In(1)
    counted: In(1)
    counted_copy: In(1)
    config_id: In(32)
    config_id_written: In(1)
    frozen_copy: In(1)
    role: In(ROLE_BITS)
    src_mac: In(MAC_BITS)
    swap: Out(1)
    copy: Out(1)
    interval_seq: Out(SEQ_BITS)
    overruns: Out(32)
    ending_flags: Out(FLAG_BITS)
    frozen: Out(interval_status_layout)

    def status_sources(self) -> dict:
        """The status registers the ledger drives, by register name (``register.field``
        for one field): :func:`hw.bus.core_registers.wire_status`."""
        frozen = self.frozen
        return {
            "status.frozen_overrun": frozen.flags[IntervalFlags.OVERRUN.value.bit_length() - 1],
            "interval_seq": self.interval_seq, "overruns": self.overruns,
            "frozen_seq": frozen.seq, "frozen_packets": frozen.packets,
            "frozen_config_id": frozen.config_id, "frozen_flags": frozen.flags,
            "frozen_timestamp.ticks": frozen.timestamp,
            "frozen_role.role": frozen.role, "frozen_src_mac.mac": frozen.src_mac,
        }

    def elaborate(self, platform):
        m = Module()
        front_copy = Signal()           # the copy frames starting now are tagged with
        boundary, execute = Signal(), Signal()
        taken = self._decide(m, front_copy, boundary, execute)
        status = Signal(data.ArrayLayout(interval_status_layout, 2), name="interval_status")
        self._record(m, front_copy, boundary, execute, taken, status)
        m.d.comb += [self.ending_flags.eq(status[front_copy].flags),
                     self.frozen.eq(status[self.frozen_copy])]
        return m

    def _decide(self, m, front_copy, boundary, execute):
        """The pending request and the boundary decision: swap or overrun. Returns the
        request taken at the boundary (registered)."""
        swap_pending = Signal()
        swap_in_flight = Signal()       # a swap pulse is still in the record pipeline
        # The pending boundary's request, latched with it. The request registers below
        # have no reset: they are data behind ``ic_boundary``, ``swap_pending`` and
        # ``boundary`` (a reset would only load the reset net).
        pending_seq = Signal(SEQ_BITS, reset_less=True)
        pending_flags = Signal(FLAG_BITS, reset_less=True)
        pending_timestamp = Signal(TIMESTAMP_BITS, reset_less=True)
        m.d.comb += [
            boundary.eq(swap_pending & self.frame_idle & ~swap_in_flight),
            execute.eq(boundary & self.other_clean),
        ]
        # The requests, registered (Fmax: the interval control's sequence-number adder and
        # comparisons stay off the pending registers' enables).
        ic_boundary = Signal()
        ic_seq = Signal(SEQ_BITS, reset_less=True)
        ic_flags = Signal(FLAG_BITS, reset_less=True)
        ic_timestamp = Signal(TIMESTAMP_BITS, reset_less=True)
        m.d.sync += [ic_boundary.eq(self.request), ic_seq.eq(self.request_data.seq),
                     ic_flags.eq(self.request_data.flags),
                     ic_timestamp.eq(self.request_data.timestamp)]
        with m.If(ic_boundary):
            # Requests before the boundary merge: the latest sequence number and
            # timestamp, the flags of all.
            m.d.sync += [swap_pending.eq(1), pending_seq.eq(ic_seq),
                         pending_timestamp.eq(ic_timestamp),
                         pending_flags.eq(Mux(swap_pending & ~boundary,
                                              pending_flags | ic_flags,
                                              ic_flags))]
        with m.Elif(boundary):
            m.d.sync += swap_pending.eq(0)

        with m.If(self.swap_arrived):
            m.d.sync += swap_in_flight.eq(0)
        with m.If(execute):
            m.d.sync += swap_in_flight.eq(1)

        # The copy flips in the boundary's cycle (an SOF in that cycle takes the new one).
        new_copy = ~front_copy
        m.d.comb += [self.swap.eq(execute), self.copy.eq(Mux(execute, new_copy, front_copy))]
        with m.If(execute):
            m.d.sync += front_copy.eq(new_copy)

        # The taken request, for the bookkeeping one cycle later.
        taken = Signal(boundary_request_layout, name="taken", reset_less=True)
        with m.If(boundary):
            m.d.sync += [taken.seq.eq(pending_seq), taken.flags.eq(pending_flags),
                         taken.timestamp.eq(pending_timestamp)]
        return taken

    def _record(self, m, front_copy, boundary, execute, taken, status):
        """The interval bookkeeping, one cycle after the boundary (short paths).

        The boundary's outcome is registered per copy (``ended``, ``started``, ``overran``:
        one-hot over the two copies) in the boundary's cycle, so that each status
        register's input is one LUT behind one enable register. Fmax: decoded from the
        swap strobe and ``front_copy`` behind the registers, the decision was two LUT
        levels and two long nets fanned out to about 440 status bits (the LDA core's
        critical path on one placement, ``docs/HARDWARE.md``)."""
        boundary_done = Signal()
        ended = [Signal(name=f"ended_{k}") for k in range(2)]      # swapped out: frozen
        started = [Signal(name=f"started_{k}") for k in range(2)]  # swapped in: new interval
        overran = [Signal(name=f"overran_{k}") for k in range(2)]  # overrun while current
        m.d.sync += boundary_done.eq(boundary)
        for k in range(2):
            m.d.sync += [ended[k].eq(execute & (front_copy == k)),
                         started[k].eq(execute & (front_copy != k)),
                         overran[k].eq(boundary & ~execute & (front_copy == k))]
        # CONFIG_CHANGED: CONFIG_ID written with a new value during the interval.
        config_id_before = Signal(32)
        config_changed = Signal()
        m.d.sync += [config_id_before.eq(self.config_id),
                     config_changed.eq(self.config_id_written
                                       & (self.config_id != config_id_before))]
        changed_flag = Mux(config_changed, int(IntervalFlags.CONFIG_CHANGED), 0)
        with m.If(boundary_done):
            m.d.sync += self.interval_seq.eq(taken.seq)
        with m.If(overran[0] | overran[1]):
            m.d.sync += self.overruns.eq(self.overruns + 1)
        for k in range(2):
            copy = status[k]
            with m.If(ended[k]):
                m.d.sync += [
                    copy.flags.eq(copy.flags | taken.flags | changed_flag),
                    copy.timestamp.eq(taken.timestamp),
                    copy.role.eq(self.role),
                    copy.src_mac.eq(self.src_mac),
                ]
            with m.Elif(started[k]):
                m.d.sync += [copy.seq.eq(taken.seq), copy.flags.eq(0),
                             copy.config_id.eq(self.config_id)]
            with m.Elif(overran[k]):
                m.d.sync += copy.flags.eq(copy.flags | taken.flags | changed_flag
                                          | int(IntervalFlags.OVERRUN))
            with m.Elif(config_changed & ~boundary_done & (front_copy == k)):
                m.d.sync += copy.flags.eq(copy.flags | int(IntervalFlags.CONFIG_CHANGED))
            # Packets per interval, counted where the records meet the counter bank (the
            # new interval's count starts from zero: its copy has no record in flight).
            with m.If(started[k]):
                m.d.sync += copy.packets.eq(0)
            with m.Elif(self.counted & (self.counted_copy == k)):
                m.d.sync += copy.packets.eq(copy.packets + 1)
