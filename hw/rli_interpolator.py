# SPDX-License-Identifier: BSD-2-Clause
"""RLI's receiver interpolation: the buffer of packets since the last reference frame,
one division per reference pair and one multiplication per packet, out as per-packet
(cell, digest, delay) updates for a per-flow counter bank.

Where it sits (docs/DESIGN.md; gateware for the RLI kind, not yet in ``hw/kinds.py``):
header tap and hasher (the packet's flow cell and digest, its arrival timestamp; a
reference frame's carried send timestamp) ► **this interpolator** ► a counter bank adding
``(1, d, d², digest)`` per update (the bank's sum fields; to come). The rules are
docs/SPEC.md "RLI" and the golden model :func:`host_sw.model.rli.interpolated_delays`;
``tests/hw/test_hw_rli_interpolator.py`` compares every update with it.

Timing contract (no backpressure, like the counter bank's requests):

* at most one packet per clock on ``packet_*``; data packets are buffered in every state
  (a buffer of ``2 · buffer_packets`` entries, so a segment can fill while the previous one
  drains); a packet beyond ``buffer_packets`` in its segment is not buffered and counted
  in ``overflowed`` (the golden model's rule);
* a reference is taken only while ``busy`` is low: it starts the division
  (``(d_j − d_i) << F`` by ``a_j − a_i``, restoring, one quotient bit per clock) and then
  drains its segment, one packet per clock. A reference that arrives while ``busy`` is
  high is counted in ``refused`` and ignored — the interval must then be flagged (its
  counters differ from the golden model's); references are frames of at least 64 bytes,
  so with data widths of 8 bytes or less and ``buffer_packets`` below the reference
  spacing this does not happen on a real link;
* ``flush`` (interval end) drains what is buffered at the last reference's delay, or
  counts it as ``unreferenced`` when the interval had none; give it while ``busy`` is low
  (a pending flush is taken when the unit goes idle).
"""

from amaranth.hdl import Cat, Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from host_sw.contracts.config import RliConfig, is_power_of_two

from hw.multiply import PRODUCT_LATENCY, product_mod
from hw.stages import delayed

__all__ = ["RliInterpolator"]


class RliInterpolator(wiring.Component):
    """The interpolation unit of an RLI receiver (module docstring for the contract).

    Parameters
    ----------
    config : RliConfig
        ``ts_bits`` (timestamps), ``cells``, ``digest_bits``, ``buffer_packets`` (a power
        of two), ``slope_frac_bits`` F.

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

    def __init__(self, *, config):
        if not isinstance(config, RliConfig):
            raise ValueError(f"config must be an RliConfig, not {type(config).__name__}")
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
        cfg, ts, dw, f = self.config, self._ts, self._dw, self.config.slope_frac_bits
        depth = 2 * cfg.buffer_packets
        ptr = unsigned((depth - 1).bit_length())
        entry = data.StructLayout({"arrival": ts, "cell": self._cell_bits,
                                   "digest": cfg.digest_bits})
        m.submodules.buffer = buffer = Memory(shape=entry, depth=depth, init=[])
        wp, rp = buffer.write_port(), buffer.read_port(domain="sync")

        wr, rd, seg_end = Signal(ptr), Signal(ptr), Signal(ptr)
        seg_count = Signal(range(cfg.buffer_packets + 1))
        prev_valid = Signal()
        a1, a2 = Signal(ts), Signal(ts)
        d1, d2 = Signal(signed(dw)), Signal(signed(dw))
        slope = Signal(signed(dw + f + 3))
        flat, flat_d = Signal(), Signal(signed(dw))
        suppress, closing = Signal(), Signal()
        flush_pending = Signal()

        # -- buffering of data packets (every state) ----------------------------------
        is_data = self.packet_valid & ~self.packet_is_ref
        m.d.comb += [wp.addr.eq(wr), wp.data.arrival.eq(self.packet_arrival),
                     wp.data.cell.eq(self.packet_cell), wp.data.digest.eq(self.packet_digest)]
        new_segment = Signal()
        with m.If(is_data):
            with m.If(seg_count < cfg.buffer_packets):
                m.d.comb += wp.en.eq(1)
                m.d.sync += [wr.eq(wr + 1), seg_count.eq(seg_count + 1)]
            with m.Else():
                m.d.sync += self.overflowed.eq(self.overflowed + 1)
        with m.If(new_segment):
            m.d.sync += seg_count.eq(0)   # a reference or flush: no data packet this clock

        # -- divider: |num| / den, one quotient bit per clock --------------------------
        nw = dw + 1 + f
        num, quo = Signal(nw), Signal(nw)
        rem, den = Signal(ts + 1), Signal(ts)
        neg, steps = Signal(), Signal(range(nw + 1))
        shifted = Signal(ts + 2)
        m.d.comb += shifted.eq(Cat(num[-1], rem))

        # -- drain pipeline: read ► offset ► product (DSP pieces, hw.multiply) ► out ----
        pipe, v1 = Signal(), Signal()
        m.d.sync += [pipe.eq(0), v1.eq(pipe)]
        offset = Signal(signed(dw + 1))
        cell1 = Signal(self._cell_bits)
        digest1 = Signal(cfg.digest_bits)
        m.d.sync += [offset.eq(rp.data.arrival - a1), cell1.eq(rp.data.cell),
                     digest1.eq(rp.data.digest)]
        # only the product's bits below f + dw reach the dw-bit delay (mod 2^dw)
        product = product_mod(m, slope, offset, f + dw, name="product")
        valids = [v1]
        for k in range(PRODUCT_LATENCY):
            valids.append(Signal(name=f"drain_v{k + 2}"))
            m.d.sync += valids[-1].eq(valids[-2])
        v2 = valids[-1]
        cell2 = delayed(m, cell1, PRODUCT_LATENCY, name="drain_cell", reset_less=True)
        digest2 = delayed(m, digest1, PRODUCT_LATENCY, name="drain_digest", reset_less=True)
        draining = Cat(pipe, *valids)
        interp = Signal(signed(dw))
        m.d.comb += interp.eq(d1 + product[f:f + dw].as_signed())
        m.d.sync += [self.update_valid.eq(v2 & ~suppress),
                     self.update_cell.eq(cell2), self.update_digest.eq(digest2),
                     self.update_delay.eq(Mux(flat, flat_d, interp))]
        with m.If(v2 & suppress):
            m.d.sync += self.unreferenced.eq(self.unreferenced + 1)

        # delay = (arrival − send) mod 2**ts_bits, read as a signed ts_bits number
        raw_delay = Signal(ts)
        delay_in = Signal(signed(dw))
        m.d.comb += [raw_delay.eq(self.packet_arrival - self.packet_send),
                     delay_in.eq(raw_delay.as_signed())]
        take_ref = self.packet_valid & self.packet_is_ref
        with m.FSM() as fsm:
            with m.State("IDLE"):
                with m.If(take_ref):
                    m.d.comb += new_segment.eq(1)
                    m.d.sync += [seg_end.eq(wr), a2.eq(self.packet_arrival), d2.eq(delay_in),
                                 self.references.eq(self.references + 1), closing.eq(0),
                                 suppress.eq(0)]
                    diff = Signal(signed(dw + 1))
                    span = Signal(ts)
                    m.d.comb += [diff.eq(delay_in - d1), span.eq(self.packet_arrival - a1)]
                    with m.If(~prev_valid):
                        m.d.sync += [flat.eq(1), flat_d.eq(delay_in)]
                        m.next = "DRAIN"
                    with m.Elif(span == 0):
                        m.d.sync += [flat.eq(0), slope.eq(0)]
                        m.next = "DRAIN"
                    with m.Else():
                        m.d.sync += [flat.eq(0), neg.eq(diff < 0),
                                     num.eq(Mux(diff < 0, -diff, diff) << f), den.eq(span),
                                     rem.eq(0), quo.eq(0), steps.eq(nw)]
                        m.next = "DIVIDE"
                with m.Elif(self.flush | flush_pending):
                    m.d.comb += new_segment.eq(1)
                    m.d.sync += [seg_end.eq(wr), flush_pending.eq(0), closing.eq(1),
                                 flat.eq(1), flat_d.eq(d1), suppress.eq(~prev_valid)]
                    m.next = "DRAIN"
            with m.State("DIVIDE"):
                with m.If(steps != 0):
                    m.d.sync += [num.eq(num << 1), steps.eq(steps - 1)]
                    with m.If(shifted >= den):
                        m.d.sync += [rem.eq(shifted - den), quo.eq(Cat(1, quo))]
                    with m.Else():
                        m.d.sync += [rem.eq(shifted), quo.eq(Cat(0, quo))]
                with m.Else():
                    q = Signal(signed(nw + 2))
                    m.d.comb += q.eq(quo)
                    m.d.sync += slope.eq(Mux(neg, -q - (rem != 0), q))
                    m.next = "DRAIN"
            with m.State("DRAIN"):
                with m.If(rd != seg_end):
                    m.d.comb += [rp.addr.eq(rd), rp.en.eq(1)]
                    m.d.sync += [rd.eq(rd + 1), pipe.eq(1)]
                with m.Elif(~draining.any()):
                    m.d.sync += prev_valid.eq(~closing)
                    with m.If(~closing):
                        m.d.sync += [a1.eq(a2), d1.eq(d2)]
                    m.next = "IDLE"
        idle = fsm.ongoing("IDLE")
        m.d.comb += self.busy.eq(~idle)
        with m.If(take_ref & ~idle):
            m.d.sync += self.refused.eq(self.refused + 1)
        with m.If(self.flush & ~idle):
            m.d.sync += flush_pending.eq(1)
        return m
