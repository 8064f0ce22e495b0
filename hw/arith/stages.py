# SPDX-License-Identifier: BSD-2-Clause
"""Small register-pipeline building blocks of the packet path.

Used by the hasher (:mod:`hw.hash_h3`) and the per-kind bucket selection
(:mod:`hw.counters.kind_select`), the steps H3 hasher → bucket selection of docs/DESIGN.md's "Data
flow of a packet": a delay line, a two-stage leading-zero count and a two-stage range
reduction. Each adds its registers to the caller's module and returns the last one.
:func:`memory_delayed` is the delay line of long delays of wide values (the tap's view of
the stream, ``hw.frames.tap_watch``), in a block of memory instead of registers.
"""

from amaranth.hdl import ClockDomain, ClockSignal, Const, Module, Mux, ResetSignal, Signal
from amaranth.lib.memory import Memory
from amaranth.utils import ceil_log2

from host_sw.contracts.config_base import is_power_of_two

__all__ = ["delayed", "kept_copies", "kept_reset_domain", "memory_delayed",
           "leading_zeros_pipelined", "range_reduce"]


def delayed(m: Module, value, cycles: int, *, name: str = "delayed",
            reset_less: bool = False):
    """``value`` delayed by ``cycles`` registers (``cycles == 0`` returns it unchanged).

    ``reset_less`` for data qualified by a separately reset valid bit: the synchronous
    reset then reaches only the valid bits, not a net to every data register routed
    through the fabric (nextpnr puts only clocks on the global network)."""
    for i in range(cycles):
        reg = Signal(value.shape(), name=f"{name}_d{i + 1}", reset_less=reset_less)
        m.d.sync += reg.eq(value)
        value = reg
    return value


def kept_copies(m: Module, value, copies: int, *, name: str, reset_less: bool = True,
                domain: str = "sync"):
    """``copies`` registers that each hold ``value`` one clock later, and that synthesis
    keeps apart: a select or enable of many loads, shared between copies so that each
    copy's net stays short.

    Why the odd next value: Yosys's ``opt_merge`` (in ``synth_ecp5``) merges flip-flops
    whose next values are the same net into one, whatever the names or a ``keep`` on the
    wires (checked: four copies of one select came out as one ``TRELLIS_FF``). Each copy's
    next value here is written ``(value & q) | (value & ~q)`` with ``q`` the copy itself:
    different inputs for ``opt_merge``, and ABC, which runs later, reduces the logic to
    ``value`` again. ``tests/hw/arith/test_hw_stages.py`` synthesises copies and counts
    the flip-flops. Hand-written: no published Amaranth library replicates registers."""
    out = []
    for k in range(copies):
        q = Signal(value.shape(), name=f"{name}{k}", reset_less=reset_less)
        m.d[domain] += q.eq((value & q) | (value & ~q))
        out.append(q)
    return out


def kept_reset_domain(m: Module, domain: str, *, name: str) -> str:
    """Add to ``m`` the local clock domain ``name``: ``domain``'s clock, and a reset of its
    own, a register that is set while ``domain`` is reset and clears a clock after its
    release (so the domain resets with ``domain`` and one clock longer). Returns ``name``,
    the ``w_domain`` of a clock-crossing FIFO.

    Why: an :class:`amaranth.lib.fifo.AsyncFIFO` synchronises its write domain's reset
    into its read domain (an ``AsyncFFSynchronizer``) and empties its read side with it.
    Yosys merges the synchronisers of every FIFO written from one domain (one input, one
    clock) into one flip-flop, whose net then runs to the read pointers and ``r_rdy`` of
    every FIFO across the die: in the two-clock LDA core, 114 LUTs of seven FIFOs, 4.3 ns
    of routing on that net, the datapath's critical path on one placement
    (``docs/HARDWARE.md``). A FIFO written in a domain of its own has a synchroniser of its
    own, beside it. The domain resets asynchronously, and its register is kept apart
    from the other domains' the way :func:`kept_copies` keeps copies apart (each loads
    ``domain``'s reset through itself). A FIFO in reset shows ``w_rdy`` but keeps nothing:
    a writer that may write in the clock after ``domain``'s reset takes ``w_rdy`` with
    ``~ResetSignal(name)``.
    ``tests/hw/arith/test_hw_stages.py`` synthesises two FIFOs and counts their
    synchronisers."""
    busy = ResetSignal(domain)
    rst = Signal(init=1, name=f"{name}_rst")
    m.d[domain] += rst.eq((busy & rst) | (busy & ~rst))
    # Asynchronous: the FIFO's write pointer resets the moment the register is set, as
    # early as ``domain``'s own registers (a synchronous reset from a register would reset
    # it a clock later, and with a reset of two clocks the read side copied the old
    # pointer: the FIFO then read as full of stale entries).
    m.domains += ClockDomain(name, local=True, async_reset=True)
    m.d.comb += [ClockSignal(name).eq(ClockSignal(domain)), ResetSignal(name).eq(rst)]
    return name


#: The shortest delay :func:`memory_delayed` makes: a write, a read and the register after.
MEMORY_DELAY_MIN = 3


def memory_delayed(m: Module, value, cycles: int, *, name: str):
    """``value`` delayed by ``cycles`` clocks through a memory (a ring written every clock,
    read ``cycles - 2`` writes behind, its output registered): ``len(value)`` bits and a
    few pointer bits of flip-flops instead of ``cycles * len(value)``.

    Why: the tap's view of the stream, 48 clocks behind the merger, took some 5 300 of the
    64-bit LDA core's flip-flops as a register line (beats and timestamps), spread over
    the fabric between the merger and the tap (``docs/HARDWARE.md``). In memory (block RAM
    or LUT RAM, as Yosys maps it) they are a few cells beside the tap.

    The memory has no reset: what it returns in the first ``cycles`` clocks after a reset
    is what was written before. Use it for data read only behind a valid bit delayed with
    :func:`delayed` (which reset clears)."""
    if cycles < MEMORY_DELAY_MIN:
        raise ValueError(f"memory_delayed needs at least {MEMORY_DELAY_MIN} cycles, "
                         f"not {cycles!r}")
    # The write at cycle c is read at c + cycles - 2 (ring position c + cycles - 2 -
    # (cycles - 2)), registered by the read port and once more: out at c + cycles. A
    # position is written again ``depth`` clocks later, after its read.
    depth = 1 << (cycles - 1).bit_length()
    width = len(value)
    m.submodules[f"{name}_ring"] = ring = Memory(shape=width, depth=depth, init=[])
    write, read = ring.write_port(), ring.read_port()
    write_at = Signal(range(depth), name=f"{name}_write_at")
    read_at = Signal(range(depth), name=f"{name}_read_at", init=(2 - cycles) % depth)
    out = Signal(width, name=f"{name}_out", reset_less=True)
    m.d.sync += [write_at.eq(write_at + 1), read_at.eq(read_at + 1), out.eq(read.data)]
    m.d.comb += [write.addr.eq(write_at), write.data.eq(value), write.en.eq(1),
                 read.addr.eq(read_at)]
    return out


def leading_zeros_pipelined(m: Module, word, *, name: str = "lz"):
    """Leading zeros (0..32) of a 32-bit ``word`` in two register stages: per byte, then
    the combination. Returns the register holding the count (valid 2 cycles later).

    The registers have no reset (data, qualified by the caller's valid): with one, Yosys
    folds the reset into the priority logic it maps onto the flip-flops' set/reset input,
    and the reset net's route plus four LUT levels becomes a critical path."""
    assert len(word) == 32
    byte_lz = []
    byte_nonzero = []
    for b in range(4):
        byte = word[8 * b:8 * b + 8]
        lz = Signal(range(9), name=f"{name}_byte{b}", reset_less=True)
        nz = Signal(name=f"{name}_nonzero{b}", reset_less=True)
        value = Const(8, range(9))
        for bit in range(8):                # the highest set bit wins
            value = Mux(byte[bit], 7 - bit, value)
        m.d.sync += [lz.eq(value), nz.eq(byte.any())]
        byte_lz.append(lz)
        byte_nonzero.append(nz)
    count = Signal(range(33), name=name, reset_less=True)
    value = Const(32, range(33))
    for b in range(4):                      # the most significant non-zero byte wins
        value = Mux(byte_nonzero[b], (3 - b) * 8 + byte_lz[b], value)
    m.d.sync += count.eq(value)
    return count


def range_reduce(m: Module, hash32, size: int, *, name: str = "reduced"):
    """``(hash32 * size) >> 32`` (:func:`host_sw.contracts.hash_fields.range_reduce32`) in two
    register stages. Returns the register (valid 2 cycles after ``hash32``).

    A power-of-two ``size`` takes the top bits of the hash. Otherwise the product is split
    into two 16-bit halves of the hash (two small multipliers, registered), whose sum
    forms the second stage.
    """
    width = max(1, ceil_log2(size))
    out = Signal(width, name=name, reset_less=True)
    if size == 1:
        m.d.sync += out.eq(0)
        return out
    if is_power_of_two(size):
        top = delayed(m, hash32[32 - ceil_log2(size):32], 1, name=f"{name}_top",
                      reset_less=True)
        m.d.sync += out.eq(top)
        return out
    size_bits = size.bit_length()
    product_high = Signal(16 + size_bits, name=f"{name}_high", reset_less=True)
    product_low = Signal(16 + size_bits, name=f"{name}_low", reset_less=True)
    m.d.sync += [product_high.eq(hash32[16:32] * size), product_low.eq(hash32[:16] * size)]
    total = (product_high << 16) + product_low
    m.d.sync += out.eq(total[32:32 + width])
    return out
