# SPDX-License-Identifier: BSD-2-Clause
"""A wide product modulo ``2^width`` in three register stages, for the RLI receiver.

Where it sits (docs/DESIGN.md; docs/SPEC.md "RLI"): the interpolation unit's
``slope × offset`` (:mod:`hw.rli.interpolator`) and the receiver's ``d · d``
(:mod:`hw.rli.receiver`). Written as one ``*`` those are 40–60-bit products whose
MULT18X18D cascade and partial-product adder chain make one 12.8 ns path on ECP5
(docs/HARDWARE.md). Here both operands are cut into 18-bit unsigned pieces, each piece
registered (a register the placer can put beside its multipliers), each piece product
(one MULT18X18D) registered, then added in two registered levels. Only the pieces below
``width`` are formed, since the result is taken modulo ``2^width``; two's complement
operands give the two's complement product modulo ``2^width``.

The operands' own registers fed the multipliers directly before: their route into an
unregistered MULT18X18D and the product's route out (6.5 ns, 57 % routing) were the
two-clock RLI core's datapath critical path on one placement. Yosys does not put
registers into the ECP5 multiplier block, so in the generic build (``kind="generic"``)
the pieces' and the piece products' registers are in the fabric. In the ECP5 build
(``kind="ecp5"``, the RLI core's ``memory="ecp5"``) each piece product is one explicit
MULT18X18D (:func:`hw.backends.ecp5.registered_mult18x18d`) whose own input registers
are the first stage and whose output register is the second: with fabric registers the
route into and out of the bare multiplier stayed the critical path (6.1–6.6 ns, 3.3–3.8 ns
of routing, on two of three placements, docs/HARDWARE.md). Same latency, same result.
"""

from amaranth.hdl import Module, Signal

from hw.backends.ecp5 import MULT18X18D_BITS, registered_mult18x18d

__all__ = ["PRODUCT_KINDS", "PRODUCT_LATENCY", "product_mod"]

#: Register stages from the operands to :func:`product_mod`'s result.
PRODUCT_LATENCY = 4

#: How :func:`product_mod` builds its piece products (``kind=``).
PRODUCT_KINDS = ("generic", "ecp5")

_PIECE = MULT18X18D_BITS


def product_mod(m: Module, a, b, width: int, *, name: str = "product",
                kind: str = "generic"):
    """``(a · b) mod 2^width`` (a, b signed or unsigned Amaranth values), registered
    :data:`PRODUCT_LATENCY` cycles after ``a`` and ``b``; an unsigned ``width``-bit
    signal. ``kind``: ``"generic"``, the pieces and piece products in fabric registers
    and ``*``; ``"ecp5"``, each piece product one MULT18X18D with its input and output
    registers (submodules ``<name>_mult<i>_<j>``); the same value, cycle for cycle."""
    if kind not in PRODUCT_KINDS:
        raise ValueError(f"kind must be one of {', '.join(PRODUCT_KINDS)}, not {kind!r}")
    ua, ub = Signal(width, name=f"{name}_a"), Signal(width, name=f"{name}_b")
    m.d.comb += [ua.eq(a), ub.eq(b)]         # sign- or zero-extended, then mod 2^width
    pieces = -(-width // _PIECE)
    a_pieces, b_pieces = [], []
    for operand, named, registers in ((ua, "a", a_pieces), (ub, "b", b_pieces)):
        for i in range(pieces):
            piece = operand[_PIECE * i:_PIECE * (i + 1)]
            if kind == "ecp5":               # registered in the multipliers
                registers.append(piece)
                continue
            r = Signal(len(piece), name=f"{name}_{named}{i}", reset_less=True)
            m.d.sync += r.eq(piece)
            registers.append(r)
    partials = []
    for i in range(pieces):
        for j in range(pieces):
            shift = _PIECE * (i + j)
            if shift >= width:
                continue
            if kind == "ecp5":
                p = Signal(min(width - shift, 2 * _PIECE), name=f"{name}_p{i}_{j}")
                m.submodules[f"{name}_mult{i}_{j}"] = registered_mult18x18d(
                    a_pieces[i], b_pieces[j], p)
            else:
                p = Signal(width - shift, name=f"{name}_p{i}_{j}", reset_less=True)
                m.d.sync += p.eq(a_pieces[i] * b_pieces[j])
            partials.append((shift, p))
    groups = [partials[k:k + 3] for k in range(0, len(partials), 3)]
    sums = []
    for g, group in enumerate(groups):
        s = Signal(width, name=f"{name}_s{g}", reset_less=True)
        m.d.sync += s.eq(sum(p << shift for shift, p in group))
        sums.append(s)
    out = Signal(width, name=name, reset_less=True)
    m.d.sync += out.eq(sum(sums))
    return out
