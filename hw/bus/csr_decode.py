# SPDX-License-Identifier: BSD-2-Clause
"""The CSR bank's address decoder and registered read multiplexer.

Two of the layers of :class:`hw.bus.csr.CsrBank` (docs/DESIGN.md, "Data flow of a counter":
host → bus bridge → **CSR bank** → registers / counter window), in the shape of
amaranth-soc's ``csr.Decoder`` and ``csr.Multiplexer``:

* :class:`CsrDecoder` turns the latched request address into one-hot selects, one bit per
  register word (a *slot*: the ``k``-th word of every register, in address order, as
  :func:`register_slots` lists them), plus the counter-window hit and offset;
* :class:`CsrReadMux` turns the registers' values and those selects into the read data, in
  three registered levels (two in its compact form), and holds the read shadow of the
  wide registers.

Both are timed by the bank's request sequencer (strobes in, no state machine of their
own). Every select and every clock enable is a register, and each level of the read path
is one small LUT tree: the bank runs at the core's clock (see docs/HARDWARE.md for the
timing figures).
"""

import operator
from functools import reduce

from amaranth.hdl import Cat, Const, Module, Signal, Value, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.registers import BUS_DATA_BITS
from host_sw.contracts.regmap import RegisterMap

__all__ = ["GROUP_WORDS", "register_slots", "slot_groups", "wide_registers",
           "read_sources_layout", "CsrDecoder", "CsrReadMux"]

_W = BUS_DATA_BITS
#: Register words (slots) per first-level group of the read multiplexer.
GROUP_WORDS = 8


def register_slots(regmap: RegisterMap) -> list:
    """``(register, word)`` for every register word of the map, in address order: slot
    ``k`` is bit ``k`` of the decoder's one-hot selects."""
    return [(reg, kword) for reg in regmap for kword in range(reg.words)]


def slot_groups(regmap: RegisterMap) -> list:
    """The slots in groups of :data:`GROUP_WORDS` (the read multiplexer's second level)."""
    slots = register_slots(regmap)
    return [slots[k:k + GROUP_WORDS] for k in range(0, len(slots), GROUP_WORDS)]


def wide_registers(regmap: RegisterMap) -> list:
    """The registers of more than one bus word (read atomically through the read shadow)."""
    return [reg for reg in regmap if reg.words > 1]


def read_sources_layout(regmap: RegisterMap) -> data.StructLayout:
    """One member per non-constant register: the value a read of it returns."""
    return data.StructLayout({reg.name: unsigned(reg.width)
                              for reg in regmap if not reg.constant})


def _check_regmap(regmap):
    if not isinstance(regmap, RegisterMap):
        raise ValueError(f"regmap must be a host_sw.contracts.regmap.RegisterMap, "
                         f"not {regmap!r}")


class CsrDecoder(wiring.Component):
    """Address decode of one bus request, in two registered steps.

    ``predecode`` (one cycle, the address stable) registers a one-hot of the low four and of
    the high address bits, the counter-window hit and offset; ``decode`` (the next cycle)
    registers each slot's hit, a 3-input AND of those. So no comparator of the full address
    feeds a select.

    Parameters
    ----------
    regmap : RegisterMap

    Members
    -------
    addr : In(32)
        The request's word address, held from ``predecode`` on.
    write : In(1)
        The request is a write.
    predecode, decode : In(1)
        Strobes of the two decode steps.
    select : Out(slots)
        One-hot slot of the address (0 for the window and unmapped addresses), from the
        cycle after ``decode`` until the next ``decode``.
    write_select : Out(slots)
        ``select`` of a write, for the one cycle after ``decode`` only.
    capture : Out(1)
        The request reads a wide register's first word: 1 in the cycle after ``decode``.
    capture_select : Out(max(1, wide registers))
        One-hot of that wide register (:func:`wide_registers` order), held like ``select``.
    window : Out(1)
        The address is in the counter window (from the cycle after ``predecode``).
    window_offset : Out(span bits)
        The address minus the window's address (meaningful with ``window``).
    """

    def __init__(self, *, regmap: RegisterMap):
        _check_regmap(regmap)
        self.regmap = regmap
        self._slots = register_slots(regmap)
        self._wide = wide_registers(regmap)
        span_bits = max(0, (regmap.window.span - 1).bit_length())
        super().__init__({
            "addr": In(32), "write": In(1), "predecode": In(1), "decode": In(1),
            "select": Out(len(self._slots)), "write_select": Out(len(self._slots)),
            "capture": Out(1), "capture_select": Out(max(1, len(self._wide))),
            "window": Out(1), "window_offset": Out(max(1, span_bits)),
        })

    def elaborate(self, platform):
        m = Module()
        win = self.regmap.window
        slots, wide, addr = self._slots, self._wide, self.addr
        last_address = max(reg.address + reg.words - 1 for reg in self.regmap)
        slot_bits = max(1, last_address.bit_length())
        lo_bits = min(slot_bits, 4)
        hi_bits = slot_bits - lo_bits
        lo_onehot = Signal(1 << lo_bits)
        hi_onehot = Signal(1 << hi_bits)
        upper_zero = Signal()
        wide_first = Signal()       # the address is a wide register's first word

        with m.If(self.predecode):
            m.d.sync += [
                lo_onehot.eq(1 << addr[:lo_bits]),
                hi_onehot.eq(1 << addr[lo_bits:slot_bits] if hi_bits else 1),
                upper_zero.eq(addr[slot_bits:] == 0),
                wide_first.eq(reduce(operator.or_, [
                    addr[:slot_bits] == reg.address for reg in wide], 0)),
                self.window.eq((addr >= win.address) & (addr < win.address + win.words)),
                self.window_offset.eq(addr - win.address),
            ]

        def hit(address):
            return (upper_zero & lo_onehot[address & ((1 << lo_bits) - 1)]
                    & hi_onehot[address >> lo_bits])

        m.d.sync += [self.write_select.eq(0), self.capture.eq(0)]
        with m.If(self.decode):
            hits = Cat(hit(reg.address + kword) for reg, kword in slots)
            m.d.sync += [self.select.eq(hits),
                         self.write_select.eq(hits & self.write.replicate(len(slots)))]
            if wide:
                m.d.sync += [
                    self.capture.eq(wide_first & upper_zero & ~self.write),
                    self.capture_select.eq(Cat(hit(reg.address) for reg in wide))]
        return m


class CsrReadMux(wiring.Component):
    """The read data of the registers, in three registered levels with no enables.

    Level 1, per readable register: its value ANDed with its select, registered (a
    register placed beside the source, so the sources spread over the die reach the
    bank through one short net each; constants need no register). Level 2, per group of
    :data:`GROUP_WORDS` slots: the OR of the group's words. Level 3 (``r_data``): the
    selected group's word, or ``window_word`` when ``window_answer``. With the selects
    stable from the cycle after the decode, ``r_data`` holds a register's word three
    cycles later.

    A read of a wide register's first word (``capture``) samples the whole register with
    its level-1 part into the read shadow, which its other words read (atomic burst read).

    ``compact``: level 1 without its registers, for a bank whose clock has time for the
    sources' routes and the group's OR in one cycle (the boards' 62.5 MHz): one flip-flop
    per readable register bit fewer and fewer LUTs, the AND packed into the OR (the
    Versa's RLI core: some 1 900 flip-flops and 1 100 LUT cells fewer,
    ``docs/HARDWARE.md``). The shadow then samples the wide registers in ``capture``'s
    clock itself, and every word of a wide register, its first too, reads the shadow: the
    same values in the same clocks as the registered form (the tests run both).

    Parameters
    ----------
    regmap : RegisterMap
    compact : bool
        Level 1 without registers (default ``False``).

    Members
    -------
    sources : In(read_sources_layout(regmap))
        What a read of each non-constant register returns.
    select : In(slots)
        :attr:`CsrDecoder.select`.
    capture : In(1)
    capture_select : In(max(1, wide registers))
        :attr:`CsrDecoder.capture` / :attr:`CsrDecoder.capture_select`.
    window_answer : In(1)
        Answer ``window_word`` instead (from the counter window).
    window_word : In(32)
    r_data : Out(32)
        The read data (level 3).
    """

    def __init__(self, *, regmap: RegisterMap, compact: bool = False):
        _check_regmap(regmap)
        if not isinstance(compact, bool):
            raise ValueError(f"compact must be a bool, not {compact!r}")
        self.regmap = regmap
        self.compact = compact
        self._slots = register_slots(regmap)
        self._wide = wide_registers(regmap)
        super().__init__({
            "sources": In(read_sources_layout(regmap)),
            "select": In(len(self._slots)),
            "capture": In(1), "capture_select": In(max(1, len(self._wide))),
            "window_answer": In(1), "window_word": In(_W),
            "r_data": Out(_W),
        })

    def _part(self, m, reg, select):
        """Level 1: a register's value ANDed with ``select`` (registered unless constant
        or compact)."""
        if reg.constant:
            return Const(reg.reset, reg.width) & select.replicate(reg.width)
        if self.compact:
            return Value.cast(self.sources[reg.name]) & select.replicate(reg.width)
        part = Signal(reg.width, name=f"{reg.name}_read_part", reset_less=True)
        m.d.sync += part.eq(Value.cast(self.sources[reg.name]) & select.replicate(reg.width))
        return part

    def elaborate(self, platform):
        m = Module()
        wide, select = self._wide, self.select
        groups = slot_groups(self.regmap)
        read_shadow = Signal(max((reg.width for reg in wide), default=_W))
        wide_parts = {reg.name: self._part(m, reg, self.capture_select[j])
                      for j, reg in enumerate(wide)}
        # The shadow loads one cycle after the parts sample the sources: its clock enable
        # is one register. Compact, the parts are the sources: it loads with ``capture``.
        capture_gather = self.capture
        if not self.compact:
            capture_gather = Signal()
            m.d.sync += capture_gather.eq(self.capture)
        if wide:
            with m.If(capture_gather):
                m.d.sync += read_shadow.eq(reduce(operator.or_, wide_parts.values()))

        group_words = []
        for g, group in enumerate(groups):
            terms = []
            for j, (reg, kword) in enumerate(group):
                k = g * GROUP_WORDS + j
                lo = (reg.words - 1 - kword) * _W
                if reg.words == 1:
                    terms.append(self._part(m, reg, select[k]))
                elif kword == 0 and not self.compact:
                    # Sampled with the shadow (`capture_select` picks it for this address).
                    terms.append(wide_parts[reg.name][lo:lo + _W])
                else:
                    terms.append(read_shadow[lo:lo + _W] & select[k].replicate(_W))
            word = Signal(_W, name=f"group_word_{g}", reset_less=True)
            m.d.sync += word.eq(reduce(operator.or_, terms))
            group_words.append(word)

        # The group select, registered from the slot select (stable by the third level).
        group_select = Signal(len(groups))
        m.d.sync += group_select.eq(Cat(select[g * GROUP_WORDS:(g + 1) * GROUP_WORDS].any()
                                        for g in range(len(groups))))
        with m.If(self.window_answer):
            m.d.sync += self.r_data.eq(self.window_word)
        with m.Else():
            m.d.sync += self.r_data.eq(reduce(operator.or_, [
                word & group_select[g].replicate(_W) for g, word in enumerate(group_words)]))
        return m
