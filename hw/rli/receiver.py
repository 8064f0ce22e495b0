# SPDX-License-Identifier: BSD-2-Clause
"""RLI's receiver: interpolation unit, squarer and double-buffered per-flow counter bank,
with the interval boundary (flush, then swap) and the per-interval overflow flag.

Where it sits (docs/DESIGN.md; the RLI kind's measurement side, docs/SPEC.md "RLI"):
per received frame its flow cell, digest and arrival tick (data frames) or its carried
send tick (reference frames) ► :class:`hw.rli.interpolator.RliInterpolator` (one division
per reference pair, one multiplication per packet) ► **squarer** (``d · d`` in DSP
pieces, :func:`hw.arith.multiply.product_mod`) ► :class:`hw.counters.counter_bank.CounterBank` (the same
read-modify-write pipeline with forwarding as LDA/RDA/LDS, adding ``(1, d, d², g)`` to
``count``, ``delay_sum``, ``delay_sq_sum``, ``digest_sum``). The counters equal the
golden model's :func:`host_sw.model.golden_rli.receiver_synopsis` word for word
(``tests/hw/rli/test_hw_rli_receiver.py``).

Interval boundary: a ``swap`` pulse makes a boundary pending. It is taken as the
interpolator's ``flush`` (the packets buffered since the last reference get that
reference's delay; with no reference in the interval they are counted as unreferenced) in
the first cycle the interpolator is idle and no reference arrives; packets arriving from
then on belong to the next interval. When the flush has drained and the squarer is
empty, the bank swaps copies (requests before the swap carry the old copy, after it the
new one). A swap the bank refuses (its other copy is not released yet) is an overrun: the
interval goes on in the same copy, ``overruns`` counts it and the interval is flagged.

Per interval (``frozen_*``, latched at the swap): data packets dropped by a full buffer
(``overflowed``), references refused while the unit was busy (``refused``), references
taken and unreferenced packets; ``frozen_flagged`` when any packet was left out
(overflow, refused reference, overrun): such an interval's counters are not the complete
interval and are never silently mixed into the next one.
"""

from amaranth.hdl import Cat, Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect

from host_sw.contracts.config import RliConfig

from hw.counters.counter_bank import CounterBank
from hw.counters.bank_layout import frozen_read_signature
from hw.arith.multiply import PRODUCT_LATENCY, product_mod
from hw.rli.interpolator import RliInterpolator
from hw.arith.stages import delayed
from hw.backends import platform_kind

__all__ = ["RliReceiver"]

#: Per-interval statistics, in the order of the ``frozen_*`` members.
_STATS = ("references", "overflowed", "unreferenced", "refused")


class RliReceiver(wiring.Component):
    """The RLI receiver (module docstring for the contract).

    Parameters
    ----------
    config : RliConfig
    memory : "auto" | "generic" | "ecp5"
        The counter bank's RAMs (:class:`hw.counters.counter_bank.CounterBank`), and how
        the interpolator's product and the squarer are formed (``"ecp5"``: MULT18X18D
        blocks with their own registers, :func:`hw.arith.multiply.product_mod`).

    Members
    -------
    packet_valid, packet_is_ref, packet_arrival, packet_send, packet_cell, packet_digest : In
        One received frame per clock at most (:class:`hw.rli.interpolator.RliInterpolator`).
    swap : In(1)
        Pulse: end the interval (pending until taken).
    release : In(1), frozen : In(frozen_read_signature(config))
        The bank's release pulse and frozen read port.
    active_copy, frozen_ready, swap_pending : Out(1)
    frozen_copy, other_clean, clearing, sweeping : Out(1); frozen_check, frozen_updates : Out(32)
        The bank's (:class:`hw.counters.counter_bank.CounterBank`).
    swapped : Out(1)
        The bank swapped copies this cycle (the boundary has reached the bank).
    counted, counted_copy : Out(1)
        A data packet's update request enters the bank, for that copy.
    busy : Out(1)
        The interpolator is dividing or draining, or a boundary is in progress: a
        reference presented now is refused (counted, the interval flagged).
    overruns : Out(32)
    frozen_references, frozen_overflowed, frozen_unreferenced, frozen_refused : Out(32)
    frozen_flagged : Out(1)
    """

    #: Clock edges from an interpolator update to its request at the bank.
    SQUARE_LATENCY = 1 + PRODUCT_LATENCY

    def __init__(self, *, config, memory="auto"):
        if not isinstance(config, RliConfig):
            raise ValueError(f"config must be an RliConfig, not {type(config).__name__}")
        self.config = config
        self._memory = memory
        self._interp = RliInterpolator(config=config, memory=memory)
        self._bank = CounterBank(config=config, drain_cycles=1, memory=memory)
        members = {name: In(port.shape()) for name, port in (
            ("packet_valid", self._interp.packet_valid),
            ("packet_is_ref", self._interp.packet_is_ref),
            ("packet_arrival", self._interp.packet_arrival),
            ("packet_send", self._interp.packet_send),
            ("packet_cell", self._interp.packet_cell),
            ("packet_digest", self._interp.packet_digest))}
        members.update({
            "swap": In(1), "release": In(1), "frozen": In(frozen_read_signature(config)),
            "active_copy": Out(1), "frozen_ready": Out(1), "swap_pending": Out(1),
            "frozen_copy": Out(1), "other_clean": Out(1), "clearing": Out(1),
            "sweeping": Out(1), "frozen_check": Out(32), "frozen_updates": Out(32),
            "swapped": Out(1), "counted": Out(1), "counted_copy": Out(1),
            "busy": Out(1),
            "overruns": Out(32), "frozen_flagged": Out(1),
        })
        members.update({f"frozen_{name}": Out(32) for name in _STATS})
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.interpolator = interp = self._interp
        m.submodules.counters = bank = self._bank
        for name in ("valid", "is_ref", "arrival", "send", "cell", "digest"):
            m.d.comb += getattr(interp, f"packet_{name}").eq(getattr(self, f"packet_{name}"))
        connect(m, wiring.flipped(self.frozen), bank.frozen)
        m.d.comb += [bank.release.eq(self.release), self.active_copy.eq(bank.active_copy),
                     self.frozen_ready.eq(bank.frozen_ready)]
        for name in ("frozen_copy", "other_clean", "clearing", "sweeping", "frozen_check",
                     "frozen_updates"):
            m.d.comb += getattr(self, name).eq(getattr(bank, name))
        kind = platform_kind(platform) if self._memory == "auto" else self._memory
        empty = self._elaborate_squarer(m, interp, bank, kind)
        flush_taken, swap_now = self._elaborate_boundary(m, interp, bank, empty)
        self._elaborate_stats(m, interp, bank, flush_taken, swap_now)
        m.d.comb += [self.swapped.eq(swap_now & ~bank.swap_refused),
                     self.counted.eq(bank.update.valid),
                     self.counted_copy.eq(bank.update.copy)]
        return m

    def _elaborate_squarer(self, m, interp, bank, kind):
        """Update → (d, cell, digest) register → d·d (:func:`hw.arith.multiply.product_mod`
        of ``kind``) → bank request. Returns "nothing in flight between the interpolator
        and the bank"."""
        cfg = self.config
        v1 = Signal()
        d1 = Signal(signed(len(interp.update_delay)))
        cell1 = Signal.like(interp.update_cell)
        g1 = Signal.like(interp.update_digest)
        m.d.sync += [v1.eq(interp.update_valid), d1.eq(interp.update_delay),
                     cell1.eq(interp.update_cell), g1.eq(interp.update_digest)]
        sq = product_mod(m, d1, d1, cfg.sq_bits, name="square", kind=kind)
        valids = [v1]
        for k in range(PRODUCT_LATENCY):
            valids.append(Signal(name=f"square_v{k + 2}"))
            m.d.sync += valids[-1].eq(valids[-2])
        v2 = valids[-1]
        d2 = Signal(signed(cfg.delay_bits))
        m.d.comb += d2.eq(delayed(m, d1, PRODUCT_LATENCY, name="square_d", reset_less=True))
        cell2 = delayed(m, cell1, PRODUCT_LATENCY, name="square_cell", reset_less=True)
        g2 = delayed(m, g1, PRODUCT_LATENCY, name="square_digest", reset_less=True)
        req = bank.update
        m.d.comb += [req.valid.eq(v2), req.copy.eq(bank.active_copy),
                     req.lane_enable.eq(v2), req.lane_address[0].eq(cell2),
                     req.delay_sum_increment.eq(d2.as_unsigned()),
                     req.delay_sq_sum_increment.eq(sq),
                     req.digest_sum_increment.eq(g2)]
        return ~interp.update_valid & ~Cat(*valids).any()

    def _elaborate_boundary(self, m, interp, bank, empty):
        """Pending swap → flush (interpolator idle, no reference this cycle) → drained →
        bank swap. Returns the (flush taken, swap executed) strobes."""
        pending = Signal()
        flush_taken, swap_now = Signal(), Signal()
        ref_now = self.packet_valid & self.packet_is_ref
        with m.If(self.swap):
            m.d.sync += pending.eq(1)
        m.d.comb += self.swap_pending.eq(pending)
        with m.FSM() as fsm:
            with m.State("COUNT"):
                with m.If(pending & ~interp.busy & ~ref_now):
                    m.d.comb += [interp.flush.eq(1), flush_taken.eq(1)]
                    m.d.sync += pending.eq(self.swap)
                    m.next = "FLUSH"
            with m.State("FLUSH"):         # the interpolator goes busy this cycle
                m.next = "DRAIN"
            with m.State("DRAIN"):
                with m.If(~interp.busy & empty):
                    m.d.comb += [bank.swap.eq(1), swap_now.eq(1)]
                    m.next = "COUNT"
        m.d.comb += self.busy.eq(interp.busy | pending | ~fsm.ongoing("COUNT"))
        return flush_taken, swap_now

    def _elaborate_stats(self, m, interp, bank, flush_taken, swap_now):
        """Per-interval counts from the interpolator's running counters.

        Each running counter rises by at most 1 a clock, so the rise seen in clock ``t``
        (its bit 0 against last clock's) is a packet or reference of clock ``t − 1``.
        Overflow and refused references from the flush's clock on belong to the next
        interval: at the flush the closing interval takes what was counted before it,
        the rise seen in that clock included. References and unreferenced packets are
        settled at the swap.

        The counts run a clock behind the receiver: the boundary's strobes and the rises
        are registered first, so the decision to flush or swap (the interpolator's and
        the boundary's state machines) reaches four registers, not the enables and
        selects of the counts' 384 flip-flops across the die (RLI's datapath critical
        path on two placements, ``docs/HARDWARE.md``). ``frozen_*`` are therefore final
        two clocks after the swap, long before the bank's copy is frozen."""
        flushed, accepted, overrun = Signal(), Signal(), Signal()
        m.d.sync += [flushed.eq(flush_taken), accepted.eq(swap_now & ~bank.swap_refused),
                     overrun.eq(swap_now & bank.swap_refused)]
        current = {n: Signal(32, name=f"interval_{n}") for n in _STATS}
        held = {n: Signal(32, name=f"boundary_{n}") for n in _STATS}
        flagged_overrun = Signal()
        for name in _STATS:
            running = getattr(interp, name)
            last, rose = Signal(name=f"last_{name}"), Signal(name=f"rose_{name}")
            m.d.sync += [last.eq(running[0]), rose.eq(running[0] ^ last)]
            frozen = getattr(self, f"frozen_{name}")
            if name in ("overflowed", "refused"):
                with m.If(flushed):
                    m.d.sync += [held[name].eq(current[name] + rose), current[name].eq(0)]
                with m.Elif(overrun):   # the interval goes on: merged back
                    m.d.sync += current[name].eq(current[name] + held[name] + rose)
                with m.Else():
                    m.d.sync += current[name].eq(current[name] + rose)
                with m.If(accepted):
                    m.d.sync += frozen.eq(held[name])
            else:
                with m.If(accepted):
                    m.d.sync += [frozen.eq(current[name] + rose), current[name].eq(0)]
                with m.Else():
                    m.d.sync += current[name].eq(current[name] + rose)
        with m.If(overrun):
            m.d.sync += [self.overruns.eq(self.overruns + 1), flagged_overrun.eq(1)]
        with m.Elif(accepted):
            m.d.sync += [flagged_overrun.eq(0),
                         self.frozen_flagged.eq(flagged_overrun | (held["overflowed"] != 0)
                                                | (held["refused"] != 0))]
        return current
