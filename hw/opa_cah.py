# SPDX-License-Identifier: BSD-2-Clause
"""OPA sender words in gateware: per group, the count ``w`` and the combined augmented
hash ``B_0..B_{k−1}`` (``docs/SPEC.md`` §8), updated at one packet per clock.

Where it sits: after the hasher (it takes the 64-bit packet hash ``P``), in place of the
bucket selector and counter bank of the other kinds; its words are the golden model's
:func:`host_sw.model.opa.opa_synopsis` word for word (``tests/hw/test_hw_opa_cah.py``).
Everything it computes comes from :mod:`host_sw.contracts.opa` (group bits, position-hash
rows, S-box, p).

Two short read-modify-write loops around one feed-forward pipeline:

* **count loop** (stage C): the group's count is read, ``j = count + 1`` written back; the
  request just ahead is forwarded explicitly (the RAM read does not see the write of the
  same edge), so back-to-back packets of one group count 1, 2, 3…;
* **feed-forward** (stages H1–H3, then two per product): ``h = S(P ^ pos(j)) mod p``
  (XOR tree of the position-hash rows, the S-box nibble layer, two Mersenne folds), then
  ``t_r = t_{r−1}·j mod p`` — ``k − 1`` products of 31 × 32 bits (four ECP5 18×18
  multipliers each), each product registered and reduced in the next stage;
* **CAH loop** (stage B): the group's ``B`` is read, ``B_r + t_r mod p`` written back, the
  request just ahead forwarded.

This is a single copy without the interval machinery (double buffering, drain, release)
of :class:`hw.counter_bank.CounterBank`, and no CSR or export yet: the building block that
the OPA core will wrap.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.hashing import RDA_SBOX
from host_sw.contracts.opa import OPA_FIELD_BITS, OPA_PRIME, position_hash_rows

__all__ = ["OpaCah"]

_P = OPA_PRIME


def _fold(x):
    """``(x & p) + (x >> 31)``: one Mersenne fold (``2**31 ≡ 1``), combinational."""
    return (x & _P) + (x >> OPA_FIELD_BITS)


def _reduce(m, x, width, name):
    """``x mod p`` for ``x`` below ``2**63`` (two folds, one conditional subtraction)."""
    f1 = Signal(width - OPA_FIELD_BITS + 2, name=f"{name}_f1")
    f2 = Signal(OPA_FIELD_BITS + 3, name=f"{name}_f2")
    m.d.comb += [f1.eq(_fold(x)), f2.eq(_fold(f1))]
    return Mux(f2 >= _P, f2 - _P, f2)[:OPA_FIELD_BITS]


def _check_config(config):
    if not isinstance(config, OpaConfig):
        raise TypeError(f"config must be an OpaConfig, not {config!r}")


class OpaCah(wiring.Component):
    """The sender's per-group ``(w, B)`` words (module docstring).

    Parameters
    ----------
    config : OpaConfig
        Groups (depth), rows k, count width and seed.

    Members
    -------
    valid : In(1)
        A packet this cycle (one per clock, no backpressure).
    packet_hash : In(64)
        Its packet hash ``P``.
    read_en, read_addr : In(1), In(group bits)
        Read a group's word; ``read_data`` (count in the low ``count_bits``, then
        ``b0``…, as :meth:`host_sw.contracts.layouts.WordLayout.pack`) and
        ``read_valid`` follow one cycle later.
    """

    def __new__(cls, *args, src_loc_at=0, **kwargs):
        # checked before the object exists: a rejected core is no unused elaboratable
        _check_config(kwargs.get("config"))
        return super().__new__(cls, *args, src_loc_at=src_loc_at + 1, **kwargs)

    def __init__(self, *, config):
        _check_config(config)
        self._config = config
        self._group_bits = config.groups.bit_length() - 1
        super().__init__({
            "valid": In(1), "packet_hash": In(64),
            "read_en": In(1), "read_addr": In(max(1, self._group_bits)),
            "read_data": Out(config.layout.width), "read_valid": Out(1),
        })

    @property
    def latency(self) -> int:
        """Clock edges from a packet to its ``B`` write: C, H1–H3, two per product, B."""
        return 1 + 3 + 2 * (self._config.rows - 1) + 2

    def elaborate(self, platform):
        m = Module()
        cfg, gb = self._config, self._group_bits
        depth, abits, k = cfg.groups, max(1, gb), cfg.rows
        cbits = cfg.count_bits
        m.submodules.counts = counts = Memory(shape=cbits, depth=depth, init=[])
        m.submodules.cah = cah = Memory(shape=k * OPA_FIELD_BITS, depth=depth, init=[])
        c_rd, c_wr, c_out = counts.read_port(), counts.write_port(), counts.read_port()
        b_rd, b_wr, b_out = cah.read_port(), cah.write_port(), cah.read_port()

        # Stage A → C: the count loop.
        group = self.packet_hash[64 - gb:] if gb else Const(0, 1)
        c_valid, c_group, c_hash = Signal(), Signal(abits), Signal(64)
        m.d.comb += c_rd.addr.eq(group)
        m.d.sync += [c_valid.eq(self.valid), c_group.eq(group), c_hash.eq(self.packet_hash)]
        ahead_valid, ahead_group, ahead_count = Signal(), Signal(abits), Signal(cbits)
        base = Mux(ahead_valid & (ahead_group == c_group), ahead_count, c_rd.data)
        j = Signal(cbits)
        m.d.comb += [j.eq(base + 1), c_wr.addr.eq(c_group), c_wr.data.eq(j),
                     c_wr.en.eq(c_valid)]
        m.d.sync += [ahead_valid.eq(c_valid), ahead_group.eq(c_group), ahead_count.eq(j)]

        # H1: P ^ pos(j); H2: S-box and first fold; H3: second fold → h.
        rows = position_hash_rows(cfg.seed)
        pos = Signal(64)
        m.d.comb += pos.eq(_xor_rows(j, rows))
        stage = {"valid": c_valid, "group": c_group, "j": j}
        stage = self._register(m, stage, "h1", x=c_hash ^ pos)
        sbox = Array(Const(v, 4) for v in RDA_SBOX)
        y = Cat(*(sbox[stage["x"][4 * i:4 * i + 4]] for i in range(16)))
        f1 = _fold(y)
        stage = self._register(m, {n: v for n, v in stage.items() if n != "x"}, "h2", f1=f1)
        f2 = _fold(stage["f1"])
        h = Mux(f2 >= _P, f2 - _P, f2)[:OPA_FIELD_BITS]
        stage = self._register(m, {n: v for n, v in stage.items() if n != "f1"}, "h3", t0=h)
        # Products t_r = t_{r-1}·j mod p: registered product, then reduced.
        for r in range(1, k):
            prod = stage[f"t{r - 1}"] * stage["j"]
            stage = self._register(m, stage, f"m{r}a", prod=prod)
            keep = {n: v for n, v in stage.items() if n != "prod"}
            stage = self._register(m, keep, f"m{r}b",
                                   **{f"t{r}": _reduce(m, stage["prod"], len(stage["prod"]),
                                                       f"m{r}")})

        # Stage B: the CAH loop.
        m.d.comb += b_rd.addr.eq(stage["group"])
        b = self._register(m, stage, "b")
        ahead = {"valid": Signal(), "group": Signal(abits), "word": Signal(k * OPA_FIELD_BITS)}
        old = Mux(ahead["valid"] & (ahead["group"] == b["group"]), ahead["word"], b_rd.data)
        new = []
        for r in range(k):
            s = old[r * OPA_FIELD_BITS:(r + 1) * OPA_FIELD_BITS] + b[f"t{r}"]
            new.append(Mux(s >= _P, s - _P, s)[:OPA_FIELD_BITS])
        word = Signal(k * OPA_FIELD_BITS)
        m.d.comb += [word.eq(Cat(*new)), b_wr.addr.eq(b["group"]), b_wr.data.eq(word),
                     b_wr.en.eq(b["valid"])]
        m.d.sync += [ahead["valid"].eq(b["valid"]), ahead["group"].eq(b["group"]),
                     ahead["word"].eq(word)]

        # Read-out port.
        m.d.comb += [c_out.addr.eq(self.read_addr), b_out.addr.eq(self.read_addr),
                     self.read_data.eq(Cat(c_out.data, b_out.data))]
        m.d.sync += self.read_valid.eq(self.read_en)
        return m

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
