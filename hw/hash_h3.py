# SPDX-License-Identifier: BSD-2-Clause
"""The pipelined H3 hasher: packet hash, RDA bucket hashes, LDS flow hashes.

Between the header tap (:mod:`hw.frames.header_tap`) and the bucket selection
(:mod:`hw.counters.bucket_select`); which hashes a kind needs besides the packet hash comes
from :data:`hw.kinds.KINDS`. The matrices come from :func:`host_sw.contracts.hashing.h3_rows`
at elaboration, so the hardware hash equals :class:`host_sw.contracts.hashing.H3` bit for
bit; the byte masks are run-time inputs in the encoding of
:meth:`host_sw.contracts.hashing.ByteMask.as_int` (bit ``i`` keeps byte ``i``). Every stage
is registered and every output leaves at :attr:`PacketHasher.latency`. Why it hashes the
finished window, and its stages: ``docs/DESIGN.md``, "Data flow of a packet", step 2.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.hashing import RDA_SBOX, FrameClass, HashPurpose, h3_rows
from hw.frames.header_tap import FRAME_CLASS_BITS, TapRecord
from hw.kinds import kind_gateware
from hw.arith.stages import delayed

__all__ = ["COMPACT_HASH_FAN_IN", "H3Pipeline", "HASH_FAN_IN", "hashed_record_layout",
           "HashedRecord", "PacketHasher"]

#: The trees' fan-in for the fast datapath clock: one LUT4 per group a stage
#: (:class:`H3Pipeline`).
HASH_FAN_IN = 4
#: The trees' fan-in for a board's slow core clock on a device it would not fit
#: otherwise: two register stages for a 64-byte window instead of five, some 3 000 fewer
#: flip-flops in the Versa's RLI core (``docs/HARDWARE.md``, "Limits of the board designs").
COMPACT_HASH_FAN_IN = 32


class H3Pipeline(wiring.Component):
    """One H3 function as a pipelined XOR tree with constant rows.

    Parameters
    ----------
    rows:
        The matrix, one ``out_bits``-wide integer per input bit (from ``h3_rows``).
    out_bits:
        Output width.
    fan_in:
        Stage ``s`` XORs, per output bit, the set terms of each aligned slice of
        ``fan_in ** (s + 1)`` input bits, that is at most ``fan_in`` results of the stage
        before. 4 (one LUT4 per group) measured best: with 8 (two LUT4 levels) ABC shares
        first-level XORs between output bits, the net between the levels becomes the
        critical path and the tree takes twice the LUTs (figures in docs/HARDWARE.md,
        ``bench/hasher_synth.py``).
    reset_less:
        Stage registers without reset (the hasher's trees: their reset net's fabric
        route was its critical path). The XORs then go through a named combinational
        signal, so the exported Verilog's clocked block only copies it, as with a reset
        (an expression inside the clocked block is evaluated by Icarus at every edge).

    Members
    -------
    data: In(len(rows))
        The (already masked) input; bit ``i`` is bit ``i % 8`` of byte ``i // 8``.
    hash: Out(out_bits)
        ``H3(data)``, :attr:`latency` cycles after ``data``.
    """

    def __init__(self, *, rows, out_bits: int, fan_in: int = 4, reset_less: bool = False):
        rows = tuple(int(r) for r in rows)
        if not rows:
            raise ValueError("an H3 matrix needs at least one row")
        if not isinstance(out_bits, int) or not 1 <= out_bits <= 64:
            raise ValueError(f"out_bits must be 1..64, not {out_bits!r}")
        if any(r >> out_bits for r in rows):
            raise ValueError(f"H3 rows must fit {out_bits} bits")
        if not isinstance(fan_in, int) or fan_in < 2:
            raise ValueError(f"fan_in must be at least 2, not {fan_in!r}")
        self.rows = rows
        self.out_bits = out_bits
        self.fan_in = fan_in
        self.reset_less = bool(reset_less)
        # Stage ``s`` XORs, per output bit, the terms of one aligned slice of
        # ``fan_in ** (s + 1)`` input bits; the tree is done when one slice covers the
        # whole input.
        stages, span = 1, fan_in
        while span < len(rows):
            stages, span = stages + 1, span * fan_in
        #: Register stages from ``data`` to ``hash`` (at least 1).
        self.latency = stages
        super().__init__({"data": In(len(rows)), "hash": Out(out_bits)})

    def elaborate(self, platform):
        m = Module()
        # A term is (slice position, bit index into its output bit's vector): the input
        # at stage 0, then that output bit's own stage register (one register per output
        # bit and stage keeps every expression small for the simulators). A group is the
        # terms of one aligned slice, XORed as ``Cat(its bits).xor()``.
        vectors = [self.data] * self.out_bits
        per_bit = [[(i, i) for i, r in enumerate(self.rows) if (r >> o) & 1]
                   for o in range(self.out_bits)]
        for stage in range(self.latency):
            for o, terms in enumerate(per_bit):
                groups = {}
                for position, index in terms:
                    groups.setdefault(position // self.fan_in, []).append(index)
                next_terms, results = [], []
                for key, group in sorted(groups.items()):
                    next_terms.append((key, len(results)))
                    if len(group) == 1:
                        results.append(vectors[o][group[0]])
                    else:
                        # The group's bits gathered, then XORed: in the exported Verilog a
                        # narrow ^{...}; a masked full-width vector would cost an event-driven
                        # simulator (Icarus) ~20x more per evaluation for the same netlist.
                        results.append(Cat(*(vectors[o][i] for i in group)).xor())
                if not results:                      # an all-zero column of the matrix
                    next_terms.append((0, 0))
                    results.append(Const(0, 1))
                # With a reset (unlike the hasher's other data registers): Amaranth's
                # Verilog puts a reset-less register's whole expression inside its clocked
                # block, which Icarus evaluates at every clock edge — for these trees a
                # 6x slower simulation of the core (bench/sim_speed.py).
                stage_reg = Signal(len(results), name=f"xor_stage{stage}_bit{o}",
                                   reset_less=self.reset_less)
                if self.reset_less:
                    # The XORs in a named combinational signal, so the clocked block
                    # only copies it (as with a reset) and Icarus evaluates the XORs
                    # only when their inputs change.
                    xors = Signal(len(results), name=f"xor_next{stage}_bit{o}")
                    m.d.comb += xors.eq(Cat(*results))
                    m.d.sync += stage_reg.eq(xors)
                else:
                    m.d.sync += stage_reg.eq(Cat(*results))
                vectors[o], per_bit[o] = stage_reg, next_terms
        assert all(len(t) == 1 for t in per_bit)
        m.d.comb += self.hash.eq(Cat(vectors[o][0] for o in range(self.out_bits)))
        return m


def hashed_record_layout(config: SynopsisConfig) -> data.StructLayout:
    """The hasher's output record: ``packet_hash`` (64), ``frame_class``, ``counted``
    (IPv4/IPv6), ``timestamp``, ``copy``; RDA adds ``bucket_hash`` (32 bits per bank),
    LDA and LDS add ``field_hash`` (64), LDS adds ``flow_hash`` and ``offset_hash`` (32
    bits per row each)."""
    fields = {
        "packet_hash": unsigned(64),
        "frame_class": unsigned(FRAME_CLASS_BITS),
        "counted": unsigned(1),
        "timestamp": unsigned(config.ts_bits),
        "copy": unsigned(1),
    }
    hashes = kind_gateware(config).hashes(config)
    if HashPurpose.RDA_BUCKET in hashes:
        fields["bucket_hash"] = data.ArrayLayout(unsigned(32), hashes[HashPurpose.RDA_BUCKET])
    if HashPurpose.LDS_FLOW in hashes:
        fields["flow_hash"] = data.ArrayLayout(unsigned(32), hashes[HashPurpose.LDS_FLOW])
    if HashPurpose.FIELD in hashes:
        fields["field_hash"] = unsigned(64)
    if HashPurpose.LDS_OFFSET in hashes:
        fields["offset_hash"] = data.ArrayLayout(unsigned(32), hashes[HashPurpose.LDS_OFFSET])
    return data.StructLayout(fields)


def HashedRecord(config: SynopsisConfig) -> wiring.Signature:
    """Hasher output port (source view): ``valid``, ``swap`` (in order with the records,
    as in :func:`~hw.frames.header_tap.TapRecord`) and ``payload``."""
    return wiring.Signature({
        "valid": Out(1),
        "swap": Out(1),
        "payload": Out(hashed_record_layout(config)),
    })


def _mask_bits(byte_mask):
    """Expand a byte mask (bit i = byte i) to a bit mask."""
    return Cat(byte_mask[i].replicate(8) for i in range(len(byte_mask)))


class PacketHasher(wiring.Component):
    """The H3 stage of a synopsis configuration.

    Parameters
    ----------
    config:
        An :class:`~host_sw.contracts.config.LdaConfig`, :class:`~host_sw.contracts.config.RdaConfig` or
        :class:`~host_sw.contracts.config.LdsConfig` (window size, seed, kind and dimensions).
    fan_in:
        Every tree's :class:`H3Pipeline` ``fan_in``. :data:`HASH_FAN_IN` for a fast clock; a
        larger one (:data:`COMPACT_HASH_FAN_IN`) has fewer register stages, hence fewer
        flip-flops, for a slow clock on a small device (the same hashes, fewer cycles).

    Members
    -------
    record: In(TapRecord(window_bytes, ts_bits))
        Tap records; one per clock at most.
    mask_packet_ipv4, mask_packet_ipv6: In(window_bytes)
        Packet-hash byte masks (CSRs).
    mask_flow_ipv4, mask_flow_ipv6: In(window_bytes)
        Flow-hash byte masks (LDS only).
    hashed: Out(HashedRecord(config))
        The record with its hashes, exactly :attr:`latency` cycles after ``record``.
    """

    def __init__(self, *, config: SynopsisConfig, fan_in: int = HASH_FAN_IN):
        kind = kind_gateware(config)
        hashes = kind.hashes(config)
        self.config = config
        self.fan_in = fan_in
        w = config.window_bytes
        in_bits = w * 8
        # Every tree reset-less (data qualified by the record's valid bit): with a reset,
        # the synchronous reset's fabric route to the window tree's ~5 000 registers was
        # the hasher's critical path (docs/CHANGES.md, "Blocks").
        self._packet_tree = H3Pipeline(
            rows=h3_rows(config.seed, HashPurpose.PACKET, 0, in_bits, 64), out_bits=64,
            fan_in=fan_in, reset_less=True)
        self._bucket_trees = [
            H3Pipeline(rows=h3_rows(config.seed, HashPurpose.RDA_BUCKET, l, 64, 32),
                       out_bits=32, fan_in=fan_in, reset_less=True)
            for l in range(hashes.get(HashPurpose.RDA_BUCKET, 0))]
        self._flow_trees = [
            H3Pipeline(rows=h3_rows(config.seed, HashPurpose.LDS_FLOW, r, in_bits, 32),
                       out_bits=32, fan_in=fan_in, reset_less=True)
            for r in range(hashes.get(HashPurpose.LDS_FLOW, 0))]
        field_bits = kind.field_bits(config)
        self._field_trees = [
            H3Pipeline(rows=[row & field_bits for row in
                             h3_rows(config.seed, HashPurpose.FIELD, 0, 64, 64)], out_bits=64,
                       fan_in=fan_in, reset_less=True)
            for _ in range(hashes.get(HashPurpose.FIELD, 0))]
        self._offset_trees = [
            H3Pipeline(rows=h3_rows(config.seed, HashPurpose.LDS_OFFSET, r, 64, 32),
                       out_bits=32, fan_in=fan_in, reset_less=True)
            for r in range(hashes.get(HashPurpose.LDS_OFFSET, 0))]
        packet_latency = 3 + self._packet_tree.latency   # input, select, mask + tree
        sbox_trees = self._bucket_trees + self._field_trees + self._offset_trees
        if sbox_trees:
            # + 1: the registered S-box stage in front of the trees of S(P)
            packet_latency_total = packet_latency + 1 + max(t.latency for t in sbox_trees)
        else:
            packet_latency_total = packet_latency
        flow_latency = 3 + max((t.latency for t in self._flow_trees), default=0)
        self._packet_latency = packet_latency
        #: Cycles from ``record`` to ``hashed``.
        self.latency = max(packet_latency_total, flow_latency)
        members = {
            "record": In(TapRecord(w, config.ts_bits)),
            "mask_packet_ipv4": In(w),
            "mask_packet_ipv6": In(w),
            "hashed": Out(HashedRecord(config)),
        }
        if self._flow_trees:
            members["mask_flow_ipv4"] = In(w)
            members["mask_flow_ipv6"] = In(w)
        super().__init__(members)

    def _elaborate_input(self, m):
        """Stage 0: the record registered as it is (the tap's window and class are only
        valid in the record's cycle). Stage 1: the window again, with the class's byte
        masks (zero without a record); stage 2 (the caller) masks the window.

        Every register loads every clock, so no record valid bit is the enable of the
        window's hundreds of flip-flops, and the masks are selected by a registered class
        in a stage of their own, apart from the masking (timing history in
        docs/HARDWARE.md). The zero mask keeps the XOR trees still between records (they
        switch twice per frame, not on every beat of the tap's window: less toggling in
        the FPGA, and an event-driven simulator such as Icarus evaluates the trees only
        then). Only the valid bit (and swap, in order with it) is reset: every other
        register here is data qualified by it (see :func:`hw.arith.stages.delayed`)."""
        config = self.config
        rec = Signal(self.record.payload.shape(), reset_less=True)
        rec_valid = Signal()
        rec_swap = Signal()
        m.d.sync += [rec_valid.eq(self.record.valid), rec_swap.eq(self.record.swap),
                     rec.eq(self.record.payload)]

        window = Signal(config.window_bytes * 8, reset_less=True)
        counted = Signal(reset_less=True)
        packet_mask = Signal(config.window_bytes, reset_less=True)
        flow_mask = Signal(config.window_bytes, reset_less=True)
        is_ipv6 = rec.frame_class == FrameClass.IPV6
        m.d.sync += [
            window.eq(rec.window),
            counted.eq((rec.frame_class == FrameClass.IPV4) | is_ipv6),
            packet_mask.eq(Mux(rec_valid, Mux(is_ipv6, self.mask_packet_ipv6,
                                              self.mask_packet_ipv4), 0)),
        ]
        if self._flow_trees:
            m.d.sync += flow_mask.eq(Mux(rec_valid, Mux(is_ipv6, self.mask_flow_ipv6,
                                                        self.mask_flow_ipv4), 0))
        return rec, rec_valid, rec_swap, window, counted, packet_mask, flow_mask

    def _elaborate_sbox_hashes(self, m, packet_hash):
        """``S(P)`` registered, then the trees of the bucket, field and offset hashes,
        each delayed to the common latency."""
        if not (self._bucket_trees or self._field_trees or self._offset_trees):
            return
        # S(P): every nibble of the packet hash through the S-box (registered).
        sbox = Array(Const(v, 4) for v in RDA_SBOX)
        substituted = Signal(64, reset_less=True)
        m.d.sync += substituted.eq(Cat(*(sbox[packet_hash[4 * i:4 * i + 4]]
                                         for i in range(16))))
        payload = self.hashed.payload
        outputs = ([(f"bucket_tree_{l}", t, payload.bucket_hash[l])
                    for l, t in enumerate(self._bucket_trees)]
                   + [("field_tree", t, payload.field_hash) for t in self._field_trees]
                   + [(f"offset_tree_{r}", t, payload.offset_hash[r])
                      for r, t in enumerate(self._offset_trees)])
        for name, tree, out in outputs:
            m.submodules[name] = tree
            m.d.comb += tree.data.eq(substituted)
            m.d.comb += out.eq(
                delayed(m, tree.hash, self.latency - self._packet_latency - 1 - tree.latency,
                        name=name.replace("tree", "hash"), reset_less=True))

    def elaborate(self, platform):
        m = Module()
        config = self.config
        rec, rec_valid, rec_swap, window, counted, packet_mask, flow_mask = \
            self._elaborate_input(m)

        packet_input = Signal(config.window_bytes * 8, reset_less=True)
        m.d.sync += packet_input.eq(window & _mask_bits(packet_mask))
        m.submodules.packet_tree = self._packet_tree
        m.d.comb += self._packet_tree.data.eq(packet_input)
        packet_hash = self._packet_tree.hash          # at self._packet_latency

        if self._flow_trees:
            flow_input = Signal(config.window_bytes * 8, reset_less=True)
            m.d.sync += flow_input.eq(window & _mask_bits(flow_mask))
            for r, tree in enumerate(self._flow_trees):
                m.submodules[f"flow_tree_{r}"] = tree
                m.d.comb += tree.data.eq(flow_input)
                m.d.comb += self.hashed.payload.flow_hash[r].eq(
                    delayed(m, tree.hash, self.latency - 3 - tree.latency,
                            name=f"flow_hash_{r}", reset_less=True))

        self._elaborate_sbox_hashes(m, packet_hash)

        m.d.comb += self.hashed.payload.packet_hash.eq(
            delayed(m, packet_hash, self.latency - self._packet_latency, name="packet_hash",
                    reset_less=True))

        # Side band, delayed to the common latency. The window is only valid in the
        # record's cycle; the rest is registered here. The control bits are reset, the
        # data not.
        control = Signal(data.StructLayout({"valid": 1, "swap": 1}))
        side = Signal(data.StructLayout({
            "frame_class": FRAME_CLASS_BITS, "timestamp": config.ts_bits, "copy": 1}))
        m.d.comb += [
            control.valid.eq(rec_valid), control.swap.eq(rec_swap),
            side.frame_class.eq(rec.frame_class),
            side.timestamp.eq(rec.timestamp), side.copy.eq(rec.copy),
        ]
        control_out = delayed(m, control, self.latency - 1, name="control")
        side_out = delayed(m, side, self.latency - 1, name="side", reset_less=True)
        m.d.comb += [
            self.hashed.valid.eq(control_out.valid), self.hashed.swap.eq(control_out.swap),
            self.hashed.payload.frame_class.eq(side_out.frame_class),
            self.hashed.payload.counted.eq(delayed(m, counted, self.latency - 2,
                                                   name="counted", reset_less=True)),
            self.hashed.payload.timestamp.eq(side_out.timestamp),
            self.hashed.payload.copy.eq(side_out.copy),
        ]
        return m
