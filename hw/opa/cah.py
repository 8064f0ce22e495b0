# SPDX-License-Identifier: BSD-2-Clause
"""OPA sender words in gateware: per group, the count ``w`` and the combined augmented
hash ``B_0..B_{k−1}`` (``docs/SPEC.md`` §8), updated at one packet per clock.

After the hasher (the 64-bit packet hash ``P``), in place of the other kinds' bucket
selector and counter bank (:class:`hw.opa.opa_path.OpaPath`); its words are
:func:`host_sw.model.golden_opa.opa_synopsis`'s word for word
(``tests/hw/opa/test_hw_opa_cah.py``), and everything it computes comes from
:mod:`host_sw.contracts.opa.words`. Two read-modify-write loops (the counts, the plain
sums) around one feed-forward pipeline; the sums are reduced modulo p on the read port
(:class:`hw.opa.readout.OpaReadout`). With ``double_buffered=True``, two copies with the
counter bank's life cycle (:class:`hw.counters.copy_control.CopyControl`,
:class:`hw.counters.freeze_check.FreezeCheck`, reused). The loops, the pipeline and why:
``docs/DESIGN.md``, "Adding a synopsis kind" (OPA).
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.hashing import RDA_SBOX
from host_sw.contracts.opa.words import OPA_FIELD_BITS, OPA_PRIME, position_hash_rows

from hw.backends import COUNTER_RAMS, counter_ram
from hw.backends.ecp5 import DP16KD_MAX_DEPTH, registered_mult18x18d
from hw.arith.carry import MuxAdd
from hw.counters.copy_control import CopyControl
from hw.counters.freeze_check import Crc32Words, FreezeCheck
from hw.opa.readout import OpaReadout, sum_bits
from hw.arith.stages import delayed, kept_copies

__all__ = ["OpaCah"]

_P = OPA_PRIME
#: Clock edges from a RAM read address to its registered read data.
RAM_LATENCY = 2


def _fold(x):
    """``(x & p) + (x >> 31)``: one Mersenne fold (``2**31 ≡ 1``), combinational."""
    return (x & _P) + (x >> OPA_FIELD_BITS)


def _check_args(*, config=None, double_buffered=False, memory="auto"):
    """OpaCah's parameters (its class docstring), checked before the object exists: a
    rejected block is no unused elaboratable."""
    if not isinstance(config, OpaConfig):
        raise TypeError(f"config must be an OpaConfig, not {config!r}")
    if not isinstance(double_buffered, bool):
        raise ValueError(f"double_buffered must be a bool, not {double_buffered!r}")
    if memory not in ("auto", *COUNTER_RAMS):
        raise ValueError(f"memory must be one of auto, {', '.join(COUNTER_RAMS)}, "
                         f"not {memory!r}")
    if memory == "ecp5" and config.groups > DP16KD_MAX_DEPTH:
        raise ValueError(f"memory='ecp5' supports up to {DP16KD_MAX_DEPTH} groups, "
                         f"not {config.groups}")


class OpaCah(wiring.Component):
    """The sender's per-group ``(w, B)`` words (module docstring; ``docs/DESIGN.md``).

    Parameters
    ----------
    config : OpaConfig
        Groups (depth), rows k, count width and seed.
    double_buffered : bool
        Two copies (a core's) or one.
    memory : "auto" | "generic" | "ecp5"
        The RAMs (:func:`hw.backends.counter_ram`): ``"auto"`` builds DP16KD blocks when
        elaborated for an ECP5 platform, else generic memories; with ``"ecp5"`` the
        loops' adders are CCU2C chains with the select merged (:class:`hw.arith.carry.MuxAdd`).

    Members
    -------
    valid : In(1)
        A packet this cycle (one per clock, no backpressure).
    packet_hash : In(64)
        Its packet hash ``P``.
    read_en, read_addr : In(1), In(group bits)
        Read a group's word while no packet flows (the read shares the update's RAM
        port); ``read_data`` (count in the low ``count_bits``, then ``b0``…, as
        :meth:`host_sw.contracts.layouts.WordLayout.pack`; the sums reduced mod p) with
        ``read_valid`` :attr:`READ_LATENCY` cycles later. Double buffered: the frozen copy's word, at any time.
    swap, release : In(1)
        Double buffered only: as :class:`hw.counters.counter_bank.CounterBank`'s (``swap`` honoured
        only while the other copy is CLEAN, else ``swap_refused``).
    frozen_ready, other_clean, clearing, active_copy, swap_refused, read_error : Out(1)
        Double buffered only: the other copy is FROZEN / CLEAN / CLEARING; the copy
        taking packets;
        ``swap`` was refused this cycle; the read (with ``read_valid``) found no FROZEN
        copy (its data is then 0).
    sweeping : Out(1)
        Double buffered only: the clearing sweep over both copies after reset runs
        (:class:`hw.counters.copy_control.CopyControl`): no packet may arrive.
    frozen_check, frozen_updates : Out(32)
        Double buffered only: the frozen copy's CRC-32 over its words
        (``docs/SPEC.md`` §4.4) and the packets written into it (wrapping), as the
        counter bank's: what the host checks a snapshot against.
    """

    #: Cycles from ``read_en`` to ``read_valid``: the RAMs' two edges, then the
    #: read-out's reduction (:class:`hw.opa.readout.OpaReadout`).
    READ_LATENCY = RAM_LATENCY + OpaReadout.LATENCY

    def __new__(cls, *args, src_loc_at=0, **kwargs):
        _check_args(**kwargs)
        return super().__new__(cls, *args, src_loc_at=src_loc_at + 1, **kwargs)

    def __init__(self, *, config, double_buffered=False, memory="auto"):
        _check_args(config=config, double_buffered=double_buffered, memory=memory)
        self._memory = memory
        self._config = config
        self._double = double_buffered
        self._group_bits = config.groups.bit_length() - 1
        members = {
            "valid": In(1), "packet_hash": In(64),
            "read_en": In(1), "read_addr": In(max(1, self._group_bits)),
            "read_data": Out(config.layout.width), "read_valid": Out(1),
        }
        if double_buffered:
            members.update({"swap": In(1), "release": In(1), "frozen_ready": Out(1),
                            "other_clean": Out(1), "active_copy": Out(1),
                            "swap_refused": Out(1), "read_error": Out(1), "clearing": Out(1),
                            "frozen_check": Out(32), "frozen_updates": Out(32),
                            "sweeping": Out(1)})
        super().__init__(members)

    @property
    def double_buffered(self) -> bool:
        return self._double

    @property
    def latency(self) -> int:
        """Clock edges from a packet to its ``B`` write: count loop (4), H0–H3, four per
        product, CAH loop (4), the registered write (1)."""
        return 4 + 4 + 4 * (self._config.rows - 1) + 4 + 1

    def elaborate(self, platform):
        m = Module()
        cfg, gb = self._config, self._group_bits
        kind = self._memory
        if kind == "auto":
            ecp5 = (getattr(platform, "family", None) == "ecp5"
                    and cfg.groups <= DP16KD_MAX_DEPTH)
            kind = "ecp5" if ecp5 else "generic"
        counts, cah = self._rams(m, kind)
        copies = self._copy_control(m) if self._double else None

        # Count loop: j = count + 1 of the packet's group.
        group = self.packet_hash[64 - gb:] if gb else Const(0, 1)
        first = {"valid": self.valid, "group": group, "hash": self.packet_hash,
                 "copy": copies.active if copies is not None else Const(0, 1)}
        stage, j = self._rmw(m, counts, first, "c", [(cfg.count_bits, 1)], copies, kind)
        # H0: j registered (off the count loop), at least the position hash's 32 bits.
        j = Cat(j, Const(0, max(0, 32 - len(j))))
        stage = self._register(m, {n: stage[n] for n in ("valid", "group", "hash", "copy")},
                               "h0", j=j)
        stage = self._terms(m, stage, kind)
        # CAH loop: S_r + t_r, plain sums (reduced on read-out, hw.opa.readout).
        self._rmw(m, cah, stage, "b",
                  [(sum_bits(cfg), f"t{r}") for r in range(cfg.rows)], copies, kind)
        self._read_out(m, counts, cah, copies)
        if copies is not None:
            self._updates(m, copies, first)
        return m

    def _rams(self, m, kind):
        """Each copy's count RAM and plain-sum RAM (``docs/DESIGN.md``, OPA's loops)."""
        cfg = self._config
        n_copies = 2 if self._double else 1
        counts = [counter_ram(width=cfg.count_bits, depth=cfg.groups, kind=kind)
                  for _ in range(n_copies)]
        cah = [counter_ram(width=cfg.rows * sum_bits(cfg), depth=cfg.groups, kind=kind)
               for _ in range(n_copies)]
        for c in range(n_copies):
            suffix = f"{c}" if self._double else ""
            m.submodules[f"counts{suffix}"] = counts[c]
            m.submodules[f"cah{suffix}"] = cah[c]
        return counts, cah

    def _terms(self, m, stage, kind):
        """The feed-forward pipeline from H0's ``j``: H1 ``P ^ pos(j)``, H2 the S-box and
        the first fold, H3 the second fold → ``t0 = h``; then per row
        ``t_r = t_{r−1}·j mod p`` in four stages (partial products, their sum, two folds).
        Returns the last stage (``t0 .. t_{k−1}``).

        In the ECP5 build (``kind="ecp5"``) each partial product is a MULT18X18D with its
        output register as the stage's register (:func:`registered_mult18x18d`, no input
        registers: the same latency): Yosys leaves the block's registers unused, and the
        route through the bare multiplier to a fabric register (7.9 ns, 64 % routing) was
        the OPA core's datapath critical path on a placement (``docs/HARDWARE.md``)."""
        rows = position_hash_rows(self._config.seed)
        stage = self._register(m, {n: stage[n] for n in ("valid", "group", "j", "copy")}, "h1",
                               x=stage["hash"] ^ _xor_rows(stage["j"], rows))
        sbox = Array(Const(v, 4) for v in RDA_SBOX)
        y = Cat(*(sbox[stage["x"][4 * i:4 * i + 4]] for i in range(16)))
        stage = self._register(m, {n: v for n, v in stage.items() if n != "x"}, "h2",
                               f1=_fold(y))
        f2 = _fold(stage["f1"])
        h = Mux(f2 >= _P, f2 - _P, f2)[:OPA_FIELD_BITS]
        stage = self._register(m, {n: v for n, v in stage.items() if n != "f1"}, "h3", t0=h)
        for r in range(1, self._config.rows):
            t, jj = stage[f"t{r - 1}"], stage["j"]
            # four 16×16 partial products, one DSP each, registered at the DSP output;
            # summed in the next stage (a 31×32 product in one cycle limited Fmax)
            pieces = {f"pp{a}{b}": (t[16 * a:16 * a + 16], jj[16 * b:16 * b + 16])
                      for a in range(2) for b in range(2)}
            if kind == "ecp5":
                stage = self._register(m, stage, f"m{r}p")
                for name, (x, y) in pieces.items():
                    stage[name] = Signal(32, name=f"m{r}p_{name}")
                    m.submodules[f"m{r}_mult_{name}"] = registered_mult18x18d(
                        x, y, stage[name], input_registers=False)
            else:
                stage = self._register(m, stage, f"m{r}p",
                                       **{n: x * y for n, (x, y) in pieces.items()})
            prod = sum(stage[f"pp{a}{b}"] << (16 * (a + b)) for a in range(2) for b in range(2))
            keep = {n: v for n, v in stage.items() if not n.startswith("pp")}
            stage = self._register(m, keep, f"m{r}a", prod=prod[:64])
            keep = {n: v for n, v in stage.items() if n != "prod"}
            stage = self._register(m, keep, f"m{r}f", f1=_fold(stage["prod"]))
            f2 = _fold(stage["f1"])
            keep = {n: v for n, v in stage.items() if n != "f1"}
            stage = self._register(m, keep, f"m{r}b",
                                   **{f"t{r}": Mux(f2 >= _P, f2 - _P, f2)[:OPA_FIELD_BITS]})
        return stage

    def _read_out(self, m, counts, cah, copies):
        """The read port and the freeze check's reads: the RAMs answer two edges after
        the address, :class:`hw.opa.readout.OpaReadout` reduces the sums in three more
        (:attr:`READ_LATENCY`). Double buffered: the frozen copy's word (the inactive
        one), zeroed with ``read_error`` when it was not FROZEN at the read; the check
        sweep's reads (while the copy is not yet FROZEN) go to ``FreezeCheck``."""
        m.submodules.readout = out = OpaReadout(config=self._config, copies=len(counts))
        for c, (count, sums) in enumerate(zip(counts, cah)):
            m.d.comb += out.stored[c].eq(Cat(count.r_data, sums.r_data))
        valid = delayed(m, self.read_en, self.READ_LATENCY, name="read_valid")
        m.d.comb += self.read_valid.eq(valid)
        if copies is None:
            m.d.comb += self.read_data.eq(out.data)
            return
        check = m.submodules.freeze_check
        copy = delayed(m, ~copies.active, RAM_LATENCY, name="read_copy")
        bad = delayed(m, ~copies.frozen, RAM_LATENCY, name="read_bad")
        chk = delayed(m, check.en, self.READ_LATENCY, name="read_check")
        m.d.comb += [out.copy.eq(copy), out.zero.eq(bad),
                     self.read_data.eq(out.data),
                     self.read_error.eq(valid & delayed(m, bad, OpaReadout.LATENCY,
                                                        name="read_bad_out")),
                     check.word.eq(out.value), check.word_valid.eq(chk)]

    @property
    def check_cycles(self) -> int:
        """Cycles the freeze check adds between the last write and FROZEN (one read per
        group, the read latency, the CRC's latency)."""
        return self._config.groups + self.READ_LATENCY + Crc32Words.LATENCY

    def _updates(self, m, copies, first):
        """``frozen_updates``: per copy, the packets tagged with it (each adds 1 to one
        count), zeroed while the copy clears."""
        updates = [Signal(32, name=f"copy{c}_updates") for c in range(2)]
        for c in range(2):
            with m.If(copies.clearing_copy[c]):
                m.d.sync += updates[c].eq(0)
            with m.Elif(first["valid"] & (first["copy"] == c)):
                m.d.sync += updates[c].eq(updates[c] + 1)
        m.d.comb += self.frozen_updates.eq(Mux(copies.active, updates[0], updates[1]))

    def _copy_control(self, m):
        """The two copies' life cycle (:class:`hw.counters.copy_control.CopyControl`): packets are
        tagged with the active copy at entry, so no late requests (``drain_cycles=0``);
        the old copy freezes once its last packet is written (``latency``)."""
        m.submodules.copies = copies = CopyControl(depth=self._config.groups,
                                                   drain_cycles=0, flush=self.latency,
                                                   check=True)
        m.submodules.freeze_check = check = FreezeCheck(words=self._config.groups,
                                                        width=self._config.layout.width)
        m.d.comb += [check.start.eq(copies.check_start), copies.check_done.eq(check.done),
                     self.frozen_check.eq(check.value)]
        m.d.comb += [copies.swap.eq(self.swap), copies.release.eq(self.release),
                     self.frozen_ready.eq(copies.frozen),
                     self.other_clean.eq(copies.other_clean),
                     self.clearing.eq(copies.clearing),
                     self.sweeping.eq(copies.sweeping),
                     self.active_copy.eq(copies.active),
                     self.swap_refused.eq(self.swap & ~copies.other_clean)]
        return copies

    def _ports(self, m, rams, first, s3, word, copies, name):
        """Each copy's RAM ports: the loop reads the copy of the packet entering, writes
        the copy of S3's (returns each copy's read data); otherwise the read port serves
        ``read_addr`` and, while the copy clears, the write port writes zeros. The write
        (enable, address, data) is registered: the RAM's data input is far from the
        loop's adder (in the whole core, 3.8 ns of routing and the clear select on the
        critical path), so the loop ends at a register beside it and a write lands one
        edge later (a third request ahead is forwarded, :meth:`_rmw`)."""
        def write(ram, suffix, enable, address, data):
            regs = [Signal.like(port, name=f"{name}_w_{what}{suffix}", reset_less=what != "en")
                    for what, port in (("en", ram.w_en), ("addr", ram.w_addr),
                                       ("data", ram.w_data))]
            m.d.sync += [reg.eq(value) for reg, value in zip(regs, (enable, address, data))]
            m.d.comb += [ram.w_en.eq(regs[0]), ram.w_addr.eq(regs[1]),
                         ram.w_data.eq(regs[2])]

        if copies is None:
            ram = rams[0]
            m.d.comb += ram.r_addr.eq(Mux(self.read_en, self.read_addr, first["group"]))
            write(ram, "", s3["valid"], s3["group"], word)
            return [ram.r_data]
        check = m.submodules.freeze_check
        bus_addr = Mux(check.en, check.addr, self.read_addr)
        for c, ram in enumerate(rams):
            mine, writing = first["copy"] == c, s3["valid"] & (s3["copy"] == c)
            clearing = copies.clearing_copy[c]
            m.d.comb += ram.r_addr.eq(Mux(first["valid"] & mine, first["group"], bus_addr))
            write(ram, f"{c}", writing | clearing,
                  Mux(clearing, copies.clear_addr, s3["group"]), Mux(clearing, 0, word))
        return [ram.r_data for ram in rams]

    def _rmw(self, m, rams, first: dict, name: str, fields, copies, kind):
        """A read-modify-write loop over ``rams`` keyed by (copy, ``first["group"]``), each
        word the fields ``fields`` (``(width, increment)``, LSB first; the increment a
        constant or the name of a carried value) summed with their increments. S0 presents the address; S1 compares keys with the requests ahead; S2
        has the RAM's registered read data and takes the newest of {ahead1, ahead2,
        ahead3 (the requests 2–4 ahead), RAM} as S3's base; S3 adds: ``(the request just
        ahead had the key ? ahead1 : base) + increment``, one carry chain per field with
        the select in it (:class:`hw.arith.carry.MuxAdd`), into ahead1 — the one-cycle loop —
        and the write registers (the write lands one edge after S3). The four requests
        ahead are exactly those whose writes the read cannot see, so they are forwarded
        explicitly, as the counter bank's. Returns the S3 stage and its new word."""
        s1 = self._register(m, first, f"{name}1")
        s2 = self._register(m, s1, f"{name}2")
        s3 = self._register(m, s2, f"{name}3")
        word = Signal(sum(w for w, _ in fields), name=f"{name}_word")
        r_data = self._ports(m, rams, first, s3, word, copies, name)
        keys = {"valid": s3["valid"], "group": s3["group"], "copy": s3["copy"]}
        aheads = [{n: Signal.like(v, name=f"{name}_a{i}_{n}") for n, v in
                   {**keys, "word": word}.items()} for i in (1, 2, 3)]

        def hit(stage, ahead):
            return (ahead["valid"] & (ahead["group"] == stage["group"])
                    & (ahead["copy"] == stage["copy"]))
        # S1 → S2: one-hot selects of the base (ahead1..3 at S2 hold the requests 2..4
        # ahead, here in S3, ahead1, ahead2), each copy's read data otherwise.
        hits = [hit(s1, keys), hit(s1, aheads[0]), hit(s1, aheads[1])]
        none = ~hits[0] & ~hits[1] & ~hits[2]
        select = Signal(3 + len(r_data), name=f"{name}_select")
        m.d.sync += select.eq(Cat(hits[0], hits[1] & ~hits[0], hits[2] & ~hits[1] & ~hits[0],
                                  *(none & (s1["copy"] == c) for c in range(len(r_data)))))
        base_next = 0
        for i, src in enumerate([a["word"] for a in aheads] + r_data):
            base_next = base_next | Mux(select[i], src, 0)
        base = Signal.like(word, name=f"{name}_base", reset_less=True)
        m.d.sync += base.eq(base_next)
        # S2 → S3: the request just ahead (in S3 now) has the key: ahead1 next cycle.
        # One select register per field (fan-out), as the counter bank's.
        forwards = kept_copies(m, hit(s2, keys), len(fields), name=f"{name}_fwd")
        low = 0
        for f, ((width, increment), forward) in enumerate(zip(fields, forwards)):
            m.submodules[f"{name}_add{f}"] = add = MuxAdd(
                width=width, kind="ecp5" if kind == "ecp5" else "generic")
            m.d.comb += [add.a.eq(aheads[0]["word"][low:low + width]),
                         add.b.eq(base[low:low + width]), add.select.eq(forward),
                         add.increment.eq(s3[increment] if isinstance(increment, str)
                                          else increment),
                         word[low:low + width].eq(add.total)]
            low += width
        m.d.sync += [aheads[0][n].eq(v) for n, v in {**keys, "word": word}.items()]
        for newer, older in zip(aheads, aheads[1:]):
            m.d.sync += [older[n].eq(newer[n]) for n in newer]
        return s3, word

    @staticmethod
    def _register(m, carried: dict, name: str, **new) -> dict:
        """One pipeline stage: registers of every carried value and of ``new`` ones."""
        out = {}
        for n, v in {**carried, **new}.items():
            reg = Signal(len(v), name=f"{name}_{n}")
            m.d.sync += reg.eq(v)
            out[n] = reg
        return out


def _xor_rows(bits, rows):
    """XOR of ``rows[i]`` for every set bit ``i`` of ``bits`` (an H3 XOR tree)."""
    acc = Const(0, 64)
    for i, row in enumerate(rows):
        acc = acc ^ Mux(bits[i], Const(row, 64), Const(0, 64))
    return acc
