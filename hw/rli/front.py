# SPDX-License-Identifier: BSD-2-Clause
"""RLI's receiver front: from the header tap's records to the RLI receiver's inputs.

Where it sits (docs/DESIGN.md, "Data flow of a packet"; docs/SPEC.md "RLI"): header tap
(:mod:`hw.frames.header_tap`) ► **this front**: the H3 hasher (:class:`hw.hash_h3.PacketHasher`,
the kind's two flow hashes, ``hw.kinds.KINDS["rli"]``), cell ``(f_0 · C) >> 32``
(:func:`hw.arith.stages.range_reduce`) and digest ``f_1 mod 2^digest_bits``, and beside it the
reference frames and their send ticks (:class:`hw.rli.reference_watch.ReferenceWatch`),
aligned ► :class:`hw.rli.receiver.RliReceiver`. Latency from a tap record to the
receiver's input: the hasher's plus 2 (the range reduction); the record order's interval
boundary (``record.swap``) comes out with the same latency as ``packet_swap``, so it
reaches the receiver between the same frames.
"""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect

from host_sw.contracts.config import RliConfig

from hw.hash_h3 import HASH_FAN_IN, PacketHasher
from hw.frames.header_tap import TapRecord
from hw.rli.reference_watch import ReferenceWatch
from hw.arith.stages import delayed, range_reduce

__all__ = ["RliFront"]


class RliFront(wiring.Component):
    """Tap records → ``packet_*`` of :class:`hw.rli.receiver.RliReceiver` (module
    docstring).

    Members
    -------
    record : In(TapRecord(window_bytes, ts_bits))
    mask_packet_ipv4, mask_packet_ipv6, mask_flow_ipv4, mask_flow_ipv6 : In(window_bytes)
        The hasher's run-time byte masks (the MASKS register).
    packet_valid, packet_is_ref : Out(1); packet_arrival, packet_send : Out(ts_bits)
    packet_cell : Out(cell bits); packet_digest : Out(digest_bits)
    packet_swap : Out(1)
        The record order's interval boundary, in order with the packets.
    tag_ok : In(1); references_seen, references_bad_tag : Out(32)
        :class:`hw.rli.reference_watch.ReferenceWatch`'s.
    """

    def __init__(self, *, config, hash_fan_in: int = HASH_FAN_IN):
        if not isinstance(config, RliConfig):
            raise ValueError(f"config must be an RliConfig, not {type(config).__name__}")
        self.config = config
        self._hasher = PacketHasher(config=config, fan_in=hash_fan_in)
        self.latency = self._hasher.latency + 2
        w, ts = config.window_bytes, config.ts_bits
        members = {"record": In(TapRecord(w, ts)), "tag_ok": In(1, init=1)}
        members.update({f"mask_{n}": In(w) for n in ("packet_ipv4", "packet_ipv6",
                                                     "flow_ipv4", "flow_ipv6")})
        members.update({
            "packet_valid": Out(1), "packet_is_ref": Out(1),
            "packet_arrival": Out(ts), "packet_send": Out(ts),
            "packet_cell": Out(max(1, (config.cells - 1).bit_length())),
            "packet_digest": Out(config.digest_bits), "packet_swap": Out(1),
            "references_seen": Out(32), "references_bad_tag": Out(32),
        })
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        cfg = self.config
        m.submodules.hasher = hasher = self._hasher
        m.submodules.watch = watch = ReferenceWatch(window_bytes=cfg.window_bytes,
                                                    ts_bits=cfg.ts_bits)
        connect(m, wiring.flipped(self.record), hasher.record)
        m.d.comb += [watch.record.valid.eq(self.record.valid),
                     watch.record.payload.eq(self.record.payload),
                     watch.tag_ok.eq(self.tag_ok),
                     self.references_seen.eq(watch.references_seen),
                     self.references_bad_tag.eq(watch.references_bad_tag)]
        for n in ("packet_ipv4", "packet_ipv6", "flow_ipv4", "flow_ipv6"):
            m.d.comb += getattr(hasher, f"mask_{n}").eq(getattr(self, f"mask_{n}"))
        rec = hasher.hashed.payload
        cell = range_reduce(m, rec.flow_hash[0], cfg.cells, name="rli_cell")
        # The strobes have a reset; the data they qualify does not (it would only load the
        # reset net).
        digest = delayed(m, rec.flow_hash[1][:cfg.digest_bits], 2, name="rli_digest",
                         reset_less=True)
        data = delayed(m, hasher.hashed.valid & rec.counted, 2, name="rli_data")
        arrival = delayed(m, rec.timestamp, 2, name="rli_arrival", reset_less=True)
        swap = delayed(m, hasher.hashed.swap, 2, name="rli_swap")
        ahead = self.latency - 1               # the watch's own register
        ref = delayed(m, watch.valid & watch.is_ref, ahead, name="rli_ref")
        send = delayed(m, watch.send, ahead, name="rli_send", reset_less=True)
        m.d.comb += [self.packet_valid.eq(data | ref), self.packet_is_ref.eq(ref),
                     self.packet_arrival.eq(arrival), self.packet_send.eq(send),
                     self.packet_cell.eq(cell), self.packet_digest.eq(digest),
                     self.packet_swap.eq(swap)]
        return m
