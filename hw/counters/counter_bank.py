# SPDX-License-Identifier: BSD-2-Clause
"""Counter bank: the read-modify-write update engine over double-buffered block RAM.

This is the "update pipeline" and "counters in block RAM, two copies" step of
docs/DESIGN.md ("Data flow of a packet", and of a counter from its update to its bus
read). The bucket selector (:mod:`hw.counters.bucket_select`) hands it one
:func:`update_request_signature` request per packet; the bank adds 1 to the count, the
packet's timestamp to the timestamp sum and XORs the ID/digest into the words the request
addresses (one word per enabled lane), in the copy the request is tagged with. The interval
control swaps the copies; the frozen copy is read over the bus (:func:`frozen_read_signature`)
and then released, which clears it for the next interval.

Word layout, lanes and depth come from the synopsis configuration (``host_sw.contracts.config``):
:func:`word_layout` builds the ``amaranth.lib.data`` layout of one counter word from
``config.layout`` (never re-typed), :func:`lane_geometry` gives lanes × depth (LDA: 1 lane of
``banks*rows`` words, address ``bank*rows + row``; RDA: ``banks`` lanes of
``buckets_per_bank``; LDS: ``rows`` lanes of ``cells``; the kind table
:data:`hw.kinds.KINDS` holds them). The flat bus index is lane-major,
``lane*depth + address``, the order of :meth:`host_sw.contracts.synopsis.Synopsis.words`.
The RAMs come from :mod:`hw.backends` (portable, or ECP5 block-RAM primitives).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw.backends import COUNTER_RAMS, counter_ram, platform_kind, write_slices
from hw.backends.ecp5 import DP16KD_MAX_DEPTH
from hw.arith.carry import MuxAdd
from hw.arith.stages import kept_copies
from hw.counters.bank_layout import (bits_for, check_config, field_names, other_sums, xor_field_of,
                                   frozen_read_signature, lane_geometry,
                                   update_request_signature, word_layout)
from hw.counters.copy_control import CopyControl, CopyState
from hw.counters.freeze_check import Crc32Words, FreezeCheck

__all__ = ["CounterBank"]


#: How the counter bank builds its RAMs (``memory=``).
MEMORY_KINDS = ("auto", *COUNTER_RAMS)
#: The update pipeline's stages (class :class:`CounterBank`): S0..S4, then the last two
#: written words W1, W2.
_STAGES = ("s0", "s1", "s2", "s3", "s4", "w1", "w2")


def _check_parameters(*, config=None, drain_cycles=4096, memory="auto"):
    """Validate :class:`CounterBank`'s parameters (raises ``TypeError``/``ValueError``)."""
    check_config(config)
    if not isinstance(drain_cycles, int) or drain_cycles < 0:
        raise ValueError(f"drain_cycles must be a non-negative integer, "
                         f"not {drain_cycles!r}")
    if memory not in MEMORY_KINDS:
        raise ValueError(f"memory must be one of {', '.join(MEMORY_KINDS)}, "
                         f"not {memory!r}")
    depth = lane_geometry(config)[1]
    if memory == "ecp5" and depth > DP16KD_MAX_DEPTH:
        raise ValueError(f"memory='ecp5' supports up to {DP16KD_MAX_DEPTH} words "
                         f"per lane, not {depth}")


class CounterBank(wiring.Component):
    """Double-buffered counter memory with a pipelined read-modify-write update engine.

    Parameters
    ----------
    config : LdaConfig | RdaConfig | LdsConfig
        Static configuration: word layout (``config.layout``), lanes and depth
        (:func:`lane_geometry`).
    drain_cycles : int
        After a swap, requests still tagged with the old copy are applied to it in the cycle
        of the swap pulse and the ``drain_cycles`` following cycles (frames that started
        before the swap end later; the top should cover its longest frame plus its
        hash/select latency). Later ones are dropped (``dropped``).
    memory : "auto" | "generic" | "ecp5"
        How the RAMs are built (same cycle behaviour either way): ``"generic"``
        ``amaranth.lib.memory.Memory`` with a fabric register on the read data (simulation,
        exported Verilog for any tool); ``"ecp5"`` DP16KD primitives with their output
        register (:class:`hw.backends.ecp5.Ecp5CounterRam`: the unregistered block RAM
        output is too slow for the core's clock on ECP5; up to 16384 words per lane), and
        the read-modify-write adders as CCU2C carry chains with the forwarding select
        merged in
        (:class:`hw.arith.carry.MuxAdd`); ``"auto"`` picks ``"ecp5"`` when elaborated for an
        ECP5 platform, else ``"generic"``.

    Members
    -------
    update : In(update_request_signature(config))
        One packet's update per clock, no backpressure.
    frozen : In(frozen_read_signature(config))
        Bus read port of the frozen copy.
    swap : In(1)
        Pulse: the other copy becomes ACTIVE, the active one DRAINING. Honoured only when
        ``other_clean``; otherwise nothing changes and ``swap_refused`` is high in the same
        cycle (an overrun, for the top to count). A request presented in the same cycle is
        accepted whichever copy it is tagged with (the old copy drains it).
    release : In(1)
        Pulse: a FROZEN copy starts CLEARING. Ignored in any other state.
    active_copy, frozen_copy : Out(1)
        The copy taking updates, and the other one (the one the bus reads).
    copy_state : Out(ArrayLayout(CopyState, 2))
        State of each copy.
    frozen_ready, other_clean, draining, clearing : Out(1)
        The other copy is FROZEN / CLEAN / DRAINING / CLEARING.
    busy : Out(1)
        The other copy is DRAINING or CLEARING.
    sweeping : Out(1)
        The clearing sweep after reset runs (see "Copy states"): take no requests.
    swap_refused : Out(1)
        Combinational: ``swap`` while the other copy is not CLEAN.
    dropped : Out(1)
        Combinational: a valid request tagged with a copy that takes no updates (a CLEAN
        copy, or the old copy after its drain window) was discarded.
    frozen_check : Out(32)
        The frozen copy's check value (:mod:`host_sw.contracts.check_value`), computed
        while it froze (see "Copy states"); valid while ``frozen_ready``.
    frozen_updates : Out(32)
        Word updates written into the frozen copy (each adds 1 to one word's count),
        wrapping: the plausibility total of the host.

    Update pipeline (per lane; all lanes in parallel, each with its own memories)
    ------------------------------------------------------------------------------
    A request presented in cycle ``c`` goes through::

        S0 (c+1)  request register; read address to the copy's read port; keys compared
                  with S1..S4 (the selects for the forwarding muxes, registered ahead)
        S1 (c+2)  the RAM's synchronous read delivers mem[addr] into its output register
                  (no logic after the RAM output)
        S2 (c+3)  base = newest of {S4, W1, W2} with the same key, else the read data
        S3 (c+4)  word = (S4's word if the request just ahead had the same key, else
                  base) + increments (XOR for XOR fields)
        S4 (c+5)  write port writes the word (committed at the edge ending c+5)
        W1, W2    the last two written words, kept for forwarding

    so a word is written at the 6th clock edge after its request
    (:attr:`UPDATE_LATENCY`) and one request per clock is sustained. The read in S0
    misses the writes of the four requests ahead (c-1 … c-4); forwarding covers each of
    them explicitly: c-1 from S4 into S3, c-2/c-3/c-4 from S4/W1/W2 into S2 (newest wins),
    so ``transparent_for`` is not used at all and the value the read port returns on an
    address collision never matters. A key is (copy, address); requests for the other
    copy never forward. The only single-cycle feedback is S4 → adder → 2:1 mux → S4
    (S3 adds the increments to both candidates and selects afterwards).

    Frozen read port
    ----------------
    ``en`` in cycle ``t`` → ``data``/``valid``/``error`` in cycle ``t + READ_LATENCY``
    (5): the flat index is split into lane/address and registered, the frozen copy's
    RAMs read (two edges, as in S0/S1), each RAM's word registered masked by whether it
    is the one asked for, the masked words ORed and registered.
    ``error`` (and zero data) when the other copy was not FROZEN at ``t`` or the index is
    out of range. One read per clock is sustained.

    Copy states
    -----------
    Block RAM keeps its contents over a reset, so every reset starts a clearing sweep
    over both copies (``sweeping``: ``depth`` cycles, every lane and both copies in
    parallel, as a release's): both copies are CLEARING, no request may arrive (the core
    holds its input; one would be overwritten) and a swap is refused; then copy 0 is
    ACTIVE and copy 1 CLEAN, both all zero. A swap at cycle
    ``s`` makes the old copy DRAINING; it becomes FROZEN in cycle
    ``s + drain_cycles + UPDATE_LATENCY + 2 + check_cycles``: after the last accepted
    request's write, the bank reads the whole copy in memory order through its frozen read
    path (:class:`hw.counters.freeze_check.FreezeCheck`, ``lanes * depth`` reads, one per clock)
    and CRCs it into ``frozen_check``; only then is it FROZEN (:attr:`check_cycles`).
    Bus reads during that sweep answer ``error``, as for any copy not FROZEN.
    ``release`` while FROZEN starts CLEARING (``depth`` cycles, every lane in parallel),
    then the copy is CLEAN. Do not release while frozen reads are in flight.
    """

    #: Clock edges from a request to its word's write (see the class docstring).
    UPDATE_LATENCY = 6
    #: Clock edges from a RAM read address to its registered read data.
    RAM_READ_LATENCY = 2
    #: Cycles from ``frozen.en`` to ``frozen.valid``.
    READ_LATENCY = 5

    def __new__(cls, *args, src_loc_at=0, **kwargs):
        # The arguments are checked before the object exists, so that a rejected bank is
        # not reported as an elaboratable created but never used.
        _check_parameters(**kwargs)
        return super().__new__(cls, *args, src_loc_at=src_loc_at + 1, **kwargs)

    def __init__(self, *, config, drain_cycles=4096, memory="auto"):
        _check_parameters(config=config, drain_cycles=drain_cycles, memory=memory)
        self._config = config
        self._drain_cycles = drain_cycles
        self._lanes, self._depth = lane_geometry(config)
        self._memory = memory
        self._layout = word_layout(config)
        super().__init__({
            "update": In(update_request_signature(config)),
            "frozen": In(frozen_read_signature(config)),
            "swap": In(1),
            "release": In(1),
            "active_copy": Out(1),
            "frozen_copy": Out(1),
            "copy_state": Out(data.ArrayLayout(CopyState, 2)),
            "frozen_ready": Out(1),
            "other_clean": Out(1),
            "draining": Out(1),
            "clearing": Out(1),
            "busy": Out(1),
            "sweeping": Out(1, init=1),
            "swap_refused": Out(1),
            "dropped": Out(1),
            "frozen_check": Out(32),
            "frozen_updates": Out(32),
        })

    @property
    def config(self):
        return self._config

    @property
    def lanes(self):
        return self._lanes

    @property
    def depth(self):
        return self._depth

    @property
    def check_cycles(self):
        """Cycles the freeze check adds between the drain's end and FROZEN: one read per
        word, the read latency, the sweep word's register and the CRC's latency
        (:attr:`hw.counters.freeze_check.Crc32Words.LATENCY`); the start's register makes up for
        the cycle FROZEN took without the check."""
        return self._lanes * self._depth + self.READ_LATENCY + 1 + Crc32Words.LATENCY

    @property
    def drain_cycles(self):
        return self._drain_cycles

    @property
    def memory(self):
        return self._memory

    def _memory_kind(self, platform):
        if self._memory != "auto":
            return self._memory
        kind = platform_kind(platform)
        return kind if kind != "ecp5" or self._depth <= DP16KD_MAX_DEPTH else "generic"

    def elaborate(self, platform):
        m = Module()
        lanes, depth = self._lanes, self._depth
        kind = self._memory_kind(platform)
        # Memories: per copy, per lane, in slices of the word (write_slices); one read
        # and one write port each. r_data[k][lane]: the lane's whole word.
        slices = write_slices(self._layout.size, depth, kind)
        ram = [[[counter_ram(width=width, depth=depth, kind=kind) for _, width in slices]
                for lane in range(lanes)] for k in range(2)]
        r_data = [[Signal(self._layout.size, name=f"copy{k}_lane{lane}_r_data")
                   for lane in range(lanes)] for k in range(2)]
        for k in range(2):
            for lane in range(lanes):
                for i, piece in enumerate(ram[k][lane]):
                    name = f"copy{k}_lane{lane}" + (f"_slice{i}" if len(slices) > 1 else "")
                    m.submodules[name] = piece
                m.d.comb += r_data[k][lane].eq(Cat(piece.r_data for piece in ram[k][lane]))

        m.submodules.copies = copies = CopyControl(
            depth=depth, drain_cycles=self._drain_cycles, flush=self.UPDATE_LATENCY,
            check=True)
        active = copies.active
        m.d.comb += [
            copies.swap.eq(self.swap), copies.release.eq(self.release),
            self.active_copy.eq(active),
            self.frozen_copy.eq(~active),
            self.frozen_ready.eq(copies.frozen),
            self.other_clean.eq(copies.other_clean),
            self.draining.eq(copies.draining),
            self.clearing.eq(copies.clearing),
            self.busy.eq(copies.draining | copies.clearing),
            self.sweeping.eq(copies.sweeping),
            self.swap_refused.eq(self.swap & ~copies.other_clean),
        ]
        for k in range(2):
            m.d.comb += self.copy_state[k].eq(Mux((active == k) & ~copies.sweeping,
                                                  CopyState.ACTIVE, copies.other))

        # Acceptance: in the swap cycle both copies take requests (the old one drains them).
        req = self.update
        swap_exec = self.swap & copies.other_clean
        accept = req.valid & ((req.copy == active) | swap_exec | copies.drain_open)
        m.d.comb += self.dropped.eq(req.valid & ~accept)

        # The frozen read's local (per-lane) address, split from its flat index; every
        # lane's read ports register it
        bus_local = Signal(bits_for(depth))
        shared = self._elaborate_shared_stages(m)
        writes = [[] for k in range(2)]          # per copy: each lane's write in S4
        for lane in range(lanes):
            ports = self._elaborate_lane(m, lane, accept, shared,
                                         [r_data[k][lane] for k in range(2)], kind)
            for k in range(2):
                writes[k].append(ports["s4_here"][k])
            for k in range(2):
                self._elaborate_reads(m, f"l{lane}_copy{k}", ram[k][lane], ports,
                                      bus_local, k)
                self._elaborate_writes(m, f"l{lane}_copy{k}", ram[k][lane], slices,
                                       ports, copies, k)
        self._elaborate_frozen_read(m, r_data, bus_local, copies)
        self._elaborate_updates(m, writes, copies)
        return m

    def _elaborate_reads(self, m, name, pieces, ports, bus_local, k):
        """The read address of one copy of one lane, whose RAM is ``pieces``: S0's while
        the update pipeline carries a request for the copy in S0 (ACTIVE/DRAINING), else
        the frozen read's. Each slice has its own copy of S0's valid bit for the copy, of
        S0's address and of the frozen read's address, each loaded every clock as the
        pipeline's own registers are (so they always hold the same values), and its own
        multiplexer, so that both sit by the slice's block RAMs: one multiplexer of the
        pipeline's registers, routed to every block of a lane, was the two-clock RDA and
        RLI cores' datapath critical path on ECP5 (5.3 and 6.2 ns of one net to a DP16KD
        41 and 51 columns away, ``docs/HARDWARE.md``). No reset: an address is read only
        behind a valid bit (S0's, the frozen read's)."""
        n = len(pieces)
        sels = kept_copies(m, ports["s0_here_next"][k], n, name=f"{name}_r_sel")
        s0_addrs = kept_copies(m, ports["s0_addr_next"], n, name=f"{name}_r_s0_addr")
        bus_addrs = kept_copies(m, bus_local, n, name=f"{name}_r_bus_addr")
        for piece, sel, s0_addr, b_addr in zip(pieces, sels, s0_addrs, bus_addrs):
            m.d.comb += piece.r_addr.eq(Mux(sel, s0_addr, b_addr))

    def _elaborate_writes(self, m, name, pieces, slices, ports, copies, k):
        """The write port of one copy of one lane, whose RAM is ``pieces`` (the word's
        ``slices``): the update pipeline's S4 word, or zero at the clear address while the
        copy clears, one clock behind the copy control (the clear of word ``a`` is
        written in the clock after ``clear_addr`` is ``a``; no update of the copy is in
        the pipeline then: a copy clears only while it takes no requests). Each slice's
        enable, address and clear select are registers of its own, loaded from registers
        (S3's request, the copy control's clear state) through one multiplexer, so that
        they sit by the slice's block RAMs: a multiplexer of the shared clear address and
        S4's address, routed to every block of a lane, was the two-clock RLI and RDA
        cores' datapath critical path on ECP5 (9.1 ns of one net to a DP16KD's address
        pin, ``docs/HARDWARE.md``). The registers need no reset: during a reset they load
        the copy control's reset state, the sweep's first clear."""
        clearing = copies.clearing_copy[k]
        n = len(pieces)
        enables = kept_copies(m, ports["s4_here_next"][k] | clearing, n, name=f"{name}_w_en")
        addrs = kept_copies(m, Mux(clearing, copies.clear_addr, ports["s3_addr"]), n,
                            name=f"{name}_w_addr")
        clears = kept_copies(m, clearing, n, name=f"{name}_w_clear")
        for piece, (lsb, width), en, addr, clear in zip(pieces, slices, enables, addrs,
                                                        clears):
            m.d.comb += [piece.w_en.eq(en), piece.w_addr.eq(addr),
                         piece.w_data.eq(Mux(clear, 0, ports["s4_word"][lsb:lsb + width]))]

    def _elaborate_updates(self, m, writes, copies):
        """FROZEN_UPDATES: per copy, the words written by the update pipeline (one count
        increment each), zeroed while the copy clears."""
        updates = [Signal(32, name=f"copy{k}_updates") for k in range(2)]
        for k in range(2):
            with m.If(copies.clearing_copy[k]):
                m.d.sync += updates[k].eq(0)
            with m.Else():
                m.d.sync += updates[k].eq(updates[k] + sum(writes[k]))
        m.d.comb += self.frozen_updates.eq(Mux(copies.active, updates[0], updates[1]))

    def _elaborate_shared_stages(self, m):
        """The parts of S0..W2 common to all lanes (the copy; the increments up to S3).
        They are data behind the lanes' valid bits and have no reset: it would only load
        the reset net (the two-clock RDA core's datapath critical path on ECP5 was the
        reset's route to a pipeline word)."""
        req = self.update
        xor_field = xor_field_of(self._config)
        has_ts = "ts_sum" in field_names(self._config)
        others = other_sums(self._config)
        shared = {}
        for s in _STAGES:
            shared[s] = {"copy": Signal(1, name=f"{s}_copy", reset_less=True)}
            if s in ("s0", "s1", "s2", "s3"):
                if has_ts:
                    shared[s]["ts"] = Signal(len(req.timestamp), name=f"{s}_ts",
                                               reset_less=True)
                if xor_field is not None:
                    shared[s]["xor"] = Signal(xor_field.width, name=f"{s}_xor",
                                               reset_less=True)
                for fld in others:
                    shared[s][fld.name] = Signal(fld.width, name=f"{s}_{fld.name}_inc",
                                                 reset_less=True)
        m.d.sync += shared["s0"]["copy"].eq(req.copy)
        if has_ts:
            m.d.sync += shared["s0"]["ts"].eq(req.timestamp)
        for fld in others:
            m.d.sync += shared["s0"][fld.name].eq(getattr(req, f"{fld.name}_increment"))
        if xor_field is not None:
            m.d.sync += shared["s0"]["xor"].eq(req.xor_value)
        for prev, nxt in zip(_STAGES, _STAGES[1:]):
            for key, sig in shared[nxt].items():
                m.d.sync += sig.eq(shared[prev][key])
        return shared

    def _elaborate_lane(self, m, lane, accept, shared, r_data, kind):
        """One lane's RMW pipeline (class docstring): key compares in S0, forwarding
        selects in S1, the base word in S2, the update in S3, the write in S4. Returns the
        lane's RAM port controls."""
        req = self.update
        addr_bits = bits_for(self._depth)
        st = {s: {"valid": Signal(name=f"{s}_l{lane}_valid"),
                  "addr": Signal(addr_bits, name=f"{s}_l{lane}_addr", reset_less=True),
                  "copy": shared[s]["copy"]} for s in _STAGES}
        m.d.sync += [st["s0"]["valid"].eq(accept & req.lane_enable[lane]),
                     st["s0"]["addr"].eq(req.lane_address[lane])]
        # per-copy valids of S0 and S4, registered (S0's in the read ports' copies):
        # they steer the RAM port muxes
        s0_here_next = [accept & req.lane_enable[lane] & (req.copy == k) for k in range(2)]
        s4_here = [Signal(name=f"l{lane}_s4_copy{k}") for k in range(2)]
        s4_here_next = [st["s3"]["valid"] & (st["s3"]["copy"] == k) for k in range(2)]
        m.d.sync += [s4_here[k].eq(s4_here_next[k]) for k in range(2)]
        for prev, nxt in zip(_STAGES, _STAGES[1:]):
            m.d.sync += [st[nxt]["valid"].eq(st[prev]["valid"]),
                         st[nxt]["addr"].eq(st[prev]["addr"])]

        def same_key(a, b):
            return (st[b]["valid"] & (st[a]["addr"] == st[b]["addr"])
                    & (st[a]["copy"] == st[b]["copy"]))

        # S0: compare keys with the requests ahead. At cycle c+1 S1..S4 hold c-1..c-4;
        # the results travel with the request to where they select (S2, S3).
        match_prev = [Signal(name=f"l{lane}_match_prev_{s}") for s in ("s1", "s2")]
        match_ahead = Signal(3, name=f"l{lane}_match_ahead")
        m.d.sync += [
            match_prev[0].eq(same_key("s0", "s1")),           # c-1, used in S3
            match_prev[1].eq(match_prev[0]),
            match_ahead.eq(Cat(same_key("s0", "s2"),     # c-2: in S4 at S2
                               same_key("s0", "s3"),     # c-3: in W1 at S2
                               same_key("s0", "s4"))),   # c-4: in W2 at S2
        ]
        # S1: the RAM reads; its registered output is S2's read data. Turn the matches
        # into one-hot selects for S2 (S4, W1, W2, rdata0, rdata1), one copy per field of
        # the word: one select net to all 104 bits of an LDS word was that core's
        # datapath critical path on ECP5 in every seed (7.5-10.3 ns of routing,
        # ``docs/HARDWARE.md``).
        f = match_ahead
        none = ~f.any()
        fields = self._config.layout.fields
        s2_selects = kept_copies(m, Cat(
            f[0], f[1] & ~f[0], f[2] & ~f[1] & ~f[0],
            none & (st["s1"]["copy"] == 0), none & (st["s1"]["copy"] == 1)),
            len(fields), name=f"l{lane}_s2_select")

        # S2: base word (AND-OR one-hot mux), registered into S3. The words have no
        # reset: the selects that read them include the stages' valid bits.
        word_bits = self._layout.size
        words = {s: Signal(word_bits, name=f"l{lane}_{s}_word", reset_less=True)
                 for s in ("s4", "w1", "w2")}
        m.d.sync += [words["w1"].eq(words["s4"]), words["w2"].eq(words["w1"])]
        candidates = [data.View(self._layout, c)
                      for c in (words["s4"], words["w1"], words["w2"], r_data[0], r_data[1])]
        s3_base = Signal(self._layout, name=f"l{lane}_s3_base", reset_less=True)
        for fld, select in zip(fields, s2_selects):
            base_next = 0
            for i, cand in enumerate(candidates):
                base_next = base_next | Mux(select[i], cand[fld.name], 0)
            m.d.sync += s3_base[fld.name].eq(base_next)
        self._elaborate_update(m, lane, words["s4"], s3_base.as_value(), match_prev[1],
                               shared["s3"], kind)
        return {"s0_here_next": s0_here_next, "s0_addr_next": req.lane_address[lane],
                "s4_here": s4_here,
                "s4_here_next": s4_here_next, "s3_addr": st["s3"]["addr"],
                "s4_word": words["s4"]}

    def _elaborate_update(self, m, lane, s4_word, s3_base, match, s3, kind):
        """S3: select S4's word (the request just ahead had the same key: forwarding) or
        the base, and add the increments, in one carry chain per summed field
        (:class:`hw.arith.carry.MuxAdd`; on ECP5 the select sits in the chain's LUTs), so the
        feedback loop S4 → chain → S4 has no LUT level outside the chain. Each field has its
        own copy of the select register (:func:`~hw.arith.stages.kept_copies`: fan-out)."""
        layout = self._layout
        current = data.View(layout, s4_word)
        base = data.View(layout, s3_base)
        updated = Signal(layout, name=f"l{lane}_s3_updated")
        fields = self._config.layout.fields
        selects = kept_copies(m, match, len(fields), name=f"l{lane}_s3_fwd")  # c-1, in S3
        for fld, select in zip(fields, selects):
            if fld.combine == "xor":
                m.d.comb += updated[fld.name].eq(
                    Mux(select, current[fld.name], base[fld.name]) ^ s3["xor"])
                continue
            if fld.name == "count":
                increment = Const(1, fld.width)
            elif fld.name == "ts_sum":
                increment = s3["ts"]
            elif fld.name in s3:
                increment = s3[fld.name]
            else:  # pragma: no cover - layouts are defined in host_sw/contracts/config.py
                raise ValueError(f"no increment defined for field {fld.name!r}")
            adder = MuxAdd(width=fld.width, kind="ecp5" if kind == "ecp5" else "generic")
            m.submodules[f"l{lane}_s3_add_{fld.name}"] = adder
            m.d.comb += [adder.a.eq(current[fld.name]), adder.b.eq(base[fld.name]),
                         adder.select.eq(select), adder.increment.eq(increment),
                         updated[fld.name].eq(adder.total)]
        m.d.sync += s4_word.eq(updated.as_value())

    def _elaborate_frozen_read(self, m, r_data, local, copies):
        """The frozen read port (class docstring): split the flat index into a lane and
        ``local``, its address in the lane (registered by every slice's read port,
        :meth:`_elaborate_reads`), read the frozen copy's RAMs (two edges), mask each
        RAM's word and register it, OR the words and register the answer."""
        lanes, depth = self._lanes, self._depth
        port = self.frozen
        m.submodules.freeze_check = check = FreezeCheck(words=lanes * depth,
                                                        width=self._layout.size)
        # check_start registered: it fans out to the CRC's synchronous resets
        check_start = Signal()
        m.d.sync += check_start.eq(copies.check_start)
        m.d.comb += [check.start.eq(check_start), copies.check_done.eq(check.done),
                     self.frozen_check.eq(check.value)]
        # The check sweep borrows the read path while the copy is not yet FROZEN (bus
        # reads then answer error anyway).
        flat = Signal.like(port.addr)
        m.d.comb += flat.eq(Mux(check.en, check.addr, port.addr))
        lane_of = Signal(range(max(lanes, 2)))
        m.d.comb += [lane_of.eq(0), local.eq(flat)]
        for lane in range(1, lanes):
            with m.If(flat >= lane * depth):
                m.d.comb += [lane_of.eq(lane), local.eq(flat - lane * depth)]
        in_range = flat < lanes * depth

        # The RAM that answers, one-hot over (copy, lane) from b1 on. In b3 each RAM's
        # output is registered already masked by its select bit (so the register can sit
        # by its RAM), and the last stage ORs the masked words. Selected and ORed in one
        # stage, each select bit's route to one word's bits and the OR's routes from the
        # RAMs spread over the die were the two-clock LDS core's datapath critical path
        # on ECP5 (11.0 and 8.7 ns, 93 % routing; ``docs/HARDWARE.md``).
        # The valid bits (a bus read, a check read) are reset; what travels with them is
        # not (the reset's route to b4's error bit was an LDA core's datapath critical
        # path on ECP5).
        flags = data.StructLayout({"valid": 1, "check": 1})
        stage = data.StructLayout({"error": 1, "ram": 2 * lanes})
        v1, v2, v3, v4 = (Signal(flags, name=f"b{i}_valid") for i in range(1, 5))
        b1, b2, b3, b4 = (Signal(stage, name=f"b{i}", reset_less=True) for i in range(1, 5))
        ram_of = Signal(2 * lanes)
        for k in range(2):
            for lane in range(lanes):
                m.d.comb += ram_of[k * lanes + lane].eq(
                    (lane_of == lane) & ((~copies.active) == k))
        m.d.sync += [v1.valid.eq(port.en), b1.error.eq(~copies.frozen | ~in_range),
                     v1.check.eq(check.en), b1.ram.eq(ram_of)]
        m.d.sync += [v2.eq(v1), v3.eq(v2), v4.eq(v3), b2.eq(b1), b3.eq(b2), b4.eq(b3)]
        selected = Signal(self._layout.size)
        answer = 0
        for k in range(2):
            for lane in range(lanes):
                masked = Signal(self._layout.size, name=f"masked_{k}_{lane}",
                                reset_less=True)
                m.d.sync += masked.eq(Mux(b3.ram[k * lanes + lane], r_data[k][lane], 0))
                answer = answer | masked
        m.d.comb += selected.eq(answer)
        # The answer's words have no reset (read only with their valid bits): the reset
        # net to the port's data register was the datapath critical path of LDA, RDA and
        # LDS cores on one seed each (``docs/HARDWARE.md``).
        answer_word = Signal(self._layout.size, name="frozen_answer", reset_less=True)
        check_word = Signal(self._layout.size, name="check_word", reset_less=True)
        m.d.sync += [port.valid.eq(v4.valid), port.error.eq(v4.valid & b4.error),
                     answer_word.eq(Mux(v4.valid & ~b4.error, selected, 0)),
                     check.word_valid.eq(v4.check), check_word.eq(selected)]
        m.d.comb += [port.data.eq(answer_word), check.word.eq(check_word)]
