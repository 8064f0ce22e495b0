# SPDX-License-Identifier: BSD-2-Clause
"""RLI's receiver interpolation: the buffer of packets since the last reference frame,
one division per reference pair and one multiplication per packet, out as per-packet
(cell, digest, delay) updates for a per-flow counter bank.

Where it sits (docs/DESIGN.md; gateware for the RLI kind, not yet in ``hw/kinds.py``):
header tap and hasher (the packet's flow cell and digest, its arrival timestamp; a
reference frame's carried send timestamp) ► **this interpolator** ► a counter bank adding
``(1, d, d², digest)`` per update (the bank's sum fields; to come). The rules are
docs/SPEC.md "RLI" and the golden model :func:`host_sw.model.golden_rli.interpolated_delays`;
``tests/hw/rli/test_hw_rli_interpolator.py`` compares every update with it.

Timing contract (no backpressure, like the counter bank's requests):

* at most one packet per clock on ``packet_*``; data packets are buffered in every state
  (a buffer of ``2 · buffer_packets`` entries, so a segment can fill while the previous one
  drains); a packet beyond ``buffer_packets`` in its segment is not buffered and counted
  in ``overflowed`` (the golden model's rule);
* a reference is taken only while ``busy`` is low: two clocks later it starts the division
  (``(d_j − d_i) << F`` by ``a_j − a_i``, :class:`hw.arith.divider.Divider`, one quotient bit per
  clock) and then drains its segment, one packet per clock. A reference that arrives while
  ``busy`` is high is counted in ``refused`` and ignored — the interval must then be
  flagged (its counters differ from the golden model's); references are frames of at least
  64 bytes, so with data widths of 8 bytes or less and ``buffer_packets`` below the
  reference spacing this does not happen on a real link;
* ``flush`` (interval end) drains what is buffered at the last reference's delay, or
  counts it as ``unreferenced`` when the interval had none; give it while ``busy`` is low
  (a pending flush is taken when the unit goes idle).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from host_sw.contracts.config import RliConfig
from host_sw.contracts.config_base import is_power_of_two

from hw.arith.divider import Divider
from hw.arith.multiply import PRODUCT_KINDS, PRODUCT_LATENCY, product_mod
from hw.arith.stages import delayed
from hw.backends import platform_kind

__all__ = ["RliInterpolator"]


class RliInterpolator(wiring.Component):
    """The interpolation unit of an RLI receiver (module docstring for the contract).

    Parameters
    ----------
    config : RliConfig
        ``ts_bits`` (timestamps), ``cells``, ``digest_bits``, ``buffer_packets`` (a power
        of two), ``slope_frac_bits`` F.
    memory : "auto" | "generic" | "ecp5"
        The primitives of the core's build: ``"ecp5"`` forms the product in MULT18X18D
        blocks with their own registers (:func:`hw.arith.multiply.product_mod`); ``"auto"``
        is ``"ecp5"`` on an ECP5 platform (:func:`hw.backends.platform_kind`).

    Members
    -------
    packet_valid, packet_is_ref : In(1)
    packet_arrival, packet_send : In(ts_bits)
        Arrival tick; a reference's carried send tick.
    packet_cell : In(cell bits), packet_digest : In(digest_bits)
    flush : In(1)
    update_valid : Out(1); update_cell, update_digest : Out; update_delay : Out(signed)
        One counted packet: its interpolated delay in ticks.
    busy : Out(1)
    references, overflowed, unreferenced, refused : Out(32)
    """

    def __init__(self, *, config, memory: str = "auto"):
        if not isinstance(config, RliConfig):
            raise ValueError(f"config must be an RliConfig, not {type(config).__name__}")
        if memory not in ("auto", *PRODUCT_KINDS):
            raise ValueError(f"memory must be one of auto, {', '.join(PRODUCT_KINDS)}, "
                             f"not {memory!r}")
        self.memory = memory
        if not is_power_of_two(config.buffer_packets):
            raise ValueError(f"the gateware needs buffer_packets a power of two, not "
                             f"{config.buffer_packets}")
        self.config = config
        self._ts = config.ts_bits
        self._dw = config.ts_bits + 1
        self._cell_bits = max(1, (config.cells - 1).bit_length())
        super().__init__({
            "packet_valid": In(1), "packet_is_ref": In(1),
            "packet_arrival": In(self._ts), "packet_send": In(self._ts),
            "packet_cell": In(self._cell_bits), "packet_digest": In(config.digest_bits),
            "flush": In(1),
            "update_valid": Out(1), "update_cell": Out(self._cell_bits),
            "update_digest": Out(config.digest_bits), "update_delay": Out(signed(self._dw)),
            "busy": Out(1),
            "references": Out(32), "overflowed": Out(32), "unreferenced": Out(32),
            "refused": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        depth = 2 * cfg.buffer_packets
        entry = data.StructLayout({"arrival": self._ts, "cell": self._cell_bits,
                                   "digest": cfg.digest_bits})
        m.submodules.buffer = buffer = Memory(shape=entry, depth=depth, init=[])
        m.submodules.divider = divider = Divider(
            dividend_bits=self._dw + 1 + cfg.slope_frac_bits, divisor_bits=self._ts)
        seg = _Segment(ts=self._ts, dw=self._dw, f=cfg.slope_frac_bits,
                       ptr=(depth - 1).bit_length())
        new_segment, reading = Signal(), Signal()
        self._elaborate_buffering(m, buffer.write_port(), seg, new_segment)
        kind = platform_kind(platform) if self.memory == "auto" else self.memory
        draining = self._elaborate_drain(m, buffer.read_port(domain="sync"), seg, reading,
                                         kind)
        self._elaborate_references(m, seg, divider, new_segment, reading, draining)
        return m

    def _elaborate_buffering(self, m, wp, seg, new_segment):
        """Data packets into the buffer in every state, at most ``buffer_packets`` per
        segment (the rest counted in ``overflowed``).

        A flush's clock may carry a data packet (the flush is taken in a clock no
        reference arrives): it is the next segment's first, so it is judged against
        the next segment's count, zero, not the closing one's.

        The write is registered (a packet's entry lands a clock after it arrives; the
        earliest read of it is two clocks after, in the drain that follows the next
        reference or flush): the block RAMs' write enable is a flip-flop, not the
        decision that also reaches the count and the state machine."""
        n = self.config.buffer_packets
        count = Signal(range(n + 1), name="seg_count")
        data_now, accept = Signal(), Signal()
        m.d.comb += [data_now.eq(self.packet_valid & ~self.packet_is_ref),
                     accept.eq(data_now & (new_segment | (count < n)))]
        m.d.sync += [wp.en.eq(accept), wp.addr.eq(seg.wr),
                     wp.data.arrival.eq(self.packet_arrival),
                     wp.data.cell.eq(self.packet_cell),
                     wp.data.digest.eq(self.packet_digest)]
        with m.If(accept):
            m.d.sync += seg.wr.eq(seg.wr + 1)
        with m.If(data_now & ~accept):
            m.d.sync += self.overflowed.eq(self.overflowed + 1)
        with m.If(new_segment):
            m.d.sync += count.eq(accept)
        with m.Elif(accept):
            m.d.sync += count.eq(count + 1)

    def _elaborate_drain(self, m, rp, seg, reading, kind):
        """Read ► register ► offset ► product (DSP pieces,
        :func:`hw.arith.multiply.product_mod` of ``kind``) ► update, one buffered packet per
        clock while ``reading``; returns "a packet in flight"."""
        f, dw = self.config.slope_frac_bits, self._dw
        # The read port is enabled every clock (``rd`` moves only while ``reading``, and
        # what it reads otherwise is never marked valid): no enable decoded from ``rd``
        # fans out to the buffer's block RAMs.
        m.d.comb += [rp.addr.eq(seg.rd), rp.en.eq(1)]
        pipe, v0, v1 = Signal(), Signal(), Signal()
        m.d.sync += [pipe.eq(reading), v0.eq(pipe), v1.eq(v0)]
        with m.If(reading):
            m.d.sync += seg.rd.eq(seg.rd + 1)
        # the block RAM's clock-to-output leaves no room for a carry chain behind it
        fetched = Signal.like(rp.data, reset_less=True)
        m.d.sync += fetched.eq(rp.data)
        offset = Signal(signed(dw + 1))
        cell1, digest1 = Signal(self._cell_bits), Signal(self.config.digest_bits)
        m.d.sync += [offset.eq(fetched.arrival - seg.a1), cell1.eq(fetched.cell),
                     digest1.eq(fetched.digest)]
        # only the product's bits below f + dw reach the dw-bit delay (mod 2^dw); the
        # slope holds through a drain, and product_mod's registers of its pieces are the
        # copies the placer can put beside the multipliers, away from the division's logic
        product = product_mod(m, seg.slope, offset, f + dw, name="product", kind=kind)
        valids = [v1]
        for k in range(PRODUCT_LATENCY):
            valids.append(Signal(name=f"drain_v{k + 2}"))
            m.d.sync += valids[-1].eq(valids[-2])
        v2 = valids[-1]
        cell2 = delayed(m, cell1, PRODUCT_LATENCY, name="drain_cell", reset_less=True)
        digest2 = delayed(m, digest1, PRODUCT_LATENCY, name="drain_digest", reset_less=True)
        interp = Signal(signed(dw))
        m.d.comb += interp.eq(seg.d1 + product[f:f + dw].as_signed())
        m.d.sync += [self.update_valid.eq(v2 & ~seg.suppress),
                     self.update_cell.eq(cell2), self.update_digest.eq(digest2),
                     self.update_delay.eq(Mux(seg.flat, seg.flat_d, interp))]
        with m.If(v2 & seg.suppress):
            m.d.sync += self.unreferenced.eq(self.unreferenced + 1)
        return Cat(pipe, v0, *valids).any()

    def _elaborate_references(self, m, seg, divider, new_segment, reading, draining):
        """IDLE ► (SPAN ► START ► DIVIDE ►) DRAIN ► IDLE per reference or flush (module
        docstring). A reference's arrival and delay are registered before the span and
        the delay differences are formed (SPAN), and those before the divider takes them
        (START), so each clock holds one carry chain."""
        f = self.config.slope_frac_bits
        flush_pending, neg = Signal(), Signal()
        # SPAN's registers: d2 − d1 and d1 − d2 − 1 (the dividend's high bits either way),
        # a2 − a1 and whether it is zero
        x_up, x_down = Signal(self._dw, name="x_up"), Signal(self._dw, name="x_down")
        span, span_zero = Signal(self._ts, name="span"), Signal(name="span_zero")
        # delay = (arrival − send) mod 2**ts_bits, read as a signed ts_bits number
        raw_delay, delay_in = Signal(self._ts), Signal(signed(self._dw))
        m.d.comb += [raw_delay.eq(self.packet_arrival - self.packet_send),
                     delay_in.eq(raw_delay.as_signed())]
        take_ref = self.packet_valid & self.packet_is_ref
        # ``more``: ``rd != end`` in this clock, a register of their next values. Decoded
        # from the pointers, the compare was the first two LUT levels of the drain's end
        # on its way to the enables of ``a1`` and ``d1`` (RLI's datapath critical path
        # on one placement, ``docs/HARDWARE.md``). ``end`` moves only with
        # ``new_segment``, ``rd`` only while ``reading``.
        more = Signal(name="drain_more")
        rd_next = Signal.like(seg.rd)
        m.d.comb += rd_next.eq(Mux(reading, seg.rd + 1, seg.rd))
        m.d.sync += more.eq(rd_next != Mux(new_segment, seg.wr, seg.end))
        with m.FSM() as fsm:
            with m.State("IDLE"):
                with m.If(take_ref):
                    m.d.comb += new_segment.eq(1)
                    m.d.sync += [seg.end.eq(seg.wr), seg.a2.eq(self.packet_arrival),
                                 seg.d2.eq(delay_in), seg.closing.eq(0), seg.suppress.eq(0),
                                 seg.flat.eq(~seg.prev_valid), seg.flat_d.eq(delay_in),
                                 self.references.eq(self.references + 1)]
                    with m.If(seg.prev_valid):
                        m.next = "SPAN"
                    with m.Else():          # the interval's first reference: flat
                        m.next = "DRAIN"
                with m.Elif(self.flush | flush_pending):
                    m.d.comb += new_segment.eq(1)
                    m.d.sync += [seg.end.eq(seg.wr), flush_pending.eq(0), seg.closing.eq(1),
                                 seg.flat.eq(1), seg.flat_d.eq(seg.d1),
                                 seg.suppress.eq(~seg.prev_valid)]
                    m.next = "DRAIN"
            with m.State("SPAN"):
                # floor division of x = |d2 − d1| << F: a negative slope is
                # ⌊−x / span⌋ = ~⌊(x − 1) / span⌋, with
                # x − 1 = (d1 − d2 − 1) << F | (2^F − 1).
                # Both dividends, the sign and the span registered here, chosen in START:
                # the sign's compare and the choice are not on one path into the
                # divider.
                m.d.sync += [neg.eq(seg.d2 < seg.d1), x_up.eq(seg.d2 - seg.d1),
                             x_down.eq(seg.d1 + ~seg.d2), span.eq(seg.a2 - seg.a1),
                             span_zero.eq(seg.a2 == seg.a1)]
                m.next = "START"
            with m.State("START"):
                m.d.comb += [divider.dividend.eq(Mux(neg, Cat(Const((1 << f) - 1, f), x_down),
                                                     x_up << f)),
                             divider.divisor.eq(span)]
                with m.If(span_zero):
                    m.d.sync += seg.slope.eq(0)
                    m.next = "DRAIN"
                with m.Else():
                    m.d.comb += divider.start.eq(1)
                    m.next = "DIVIDE"
            with m.State("DIVIDE"):
                with m.If(divider.done):
                    q = Signal.like(seg.slope)
                    m.d.comb += q.eq(divider.quotient)
                    m.d.sync += seg.slope.eq(Mux(neg, ~q, q))
                    m.next = "DRAIN"
            with m.State("DRAIN"):
                m.d.comb += reading.eq(more)
                with m.If(~reading & ~draining):
                    m.d.sync += seg.prev_valid.eq(~seg.closing)
                    with m.If(~seg.closing):
                        m.d.sync += [seg.a1.eq(seg.a2), seg.d1.eq(seg.d2)]
                    m.next = "IDLE"
        idle = fsm.ongoing("IDLE")
        m.d.comb += self.busy.eq(~idle)
        with m.If(take_ref & ~idle):
            m.d.sync += self.refused.eq(self.refused + 1)
        with m.If(self.flush & ~idle):
            m.d.sync += flush_pending.eq(1)


class _Segment:
    """The registers the buffering, the reference state machine and the drain share: the
    buffer pointers, the last two references (arrival ``a``, delay ``d``) and how the
    segment being drained is interpolated."""

    def __init__(self, *, ts, dw, f, ptr):
        self.wr = Signal(ptr, name="wr")
        self.rd = Signal(ptr, name="rd")
        self.end = Signal(ptr, name="seg_end")
        self.prev_valid = Signal(name="prev_valid")
        self.a1 = Signal(ts, name="a1")
        self.a2 = Signal(ts, name="a2")
        self.d1 = Signal(signed(dw), name="d1")
        self.d2 = Signal(signed(dw), name="d2")
        self.slope = Signal(signed(dw + f + 3), name="slope")
        self.flat = Signal(name="flat")
        self.flat_d = Signal(signed(dw), name="flat_d")
        self.suppress = Signal(name="suppress")
        self.closing = Signal(name="closing")
