# SPDX-License-Identifier: BSD-2-Clause
"""The counter window of the CSR bank: bus reads of the frozen counter copy.

In docs/DESIGN.md's "Data flow of a counter" this is the step between the counter bank's
frozen-copy read port (:func:`hw.counters.bank_layout.frozen_read_signature`) and the bus: the
host reads counter word ``i`` chunk ``c`` at ``window.address + i * chunks + c``
(:class:`host_sw.contracts.registers.CounterWindow`). :class:`CounterWindowReader` splits the
window offset into word index and chunk, reads the word through the read port for chunk
0 (keeping it in a shadow) and answers the other chunks from that shadow.

The offset is split by a shift when the chunk count is a power of two, otherwise by a
restoring division by the constant chunk count, one quotient bit per two clocks, which
keeps multipliers off the bus path.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.registers import BUS_DATA_BITS, CounterWindow as WindowMap

__all__ = ["counter_read_signature", "window_addr_bits", "CounterWindowReader"]

_W = BUS_DATA_BITS


def counter_read_signature(*, addr_bits: int, word_bits: int) -> wiring.Signature:
    """The counter bank's frozen-copy read port, from the reader's (CSR bank's) side.

    Members
    -------
    addr : Out(addr_bits)
        Flat word index (lane-major = ``Synopsis.words()`` order).
    en : Out(1)
        One-cycle read request.
    data : In(word_bits)
    valid : In(1)
        One-cycle pulse with ``data``, a fixed latency after ``en``.
    error : In(1)
        With ``valid``: the addressed copy was not frozen (``data`` is 0).
    """
    if addr_bits < 1 or word_bits < 1:
        raise ValueError(f"addr_bits and word_bits must be positive, not {addr_bits}, "
                         f"{word_bits}")
    return wiring.Signature({
        "addr": Out(addr_bits), "en": Out(1),
        "data": In(word_bits), "valid": In(1), "error": In(1),
    })


def window_addr_bits(window: WindowMap) -> int:
    """The narrowest counter address (``counters.addr``) that reaches every counter word
    of ``window``."""
    return max(1, (window.buckets - 1).bit_length())


class CounterWindowReader(wiring.Component):
    """Reads of the counter window: offset → (word, chunk) → read port or shadow.

    A read starts with ``start`` (one cycle, ``offset`` stable). For chunk 0 the window
    reads the word through ``counters`` and keeps it; for the other chunks it answers from
    that capture. If the port does not answer within ``timeout`` cycles the answer is 0,
    and so are the upper chunks until the next successful chunk-0 read. ``answer`` is 1 for
    the one cycle in which ``word`` holds the answer; the next ``start`` may come from the
    following cycle on.

    Latency from ``start`` to ``answer``: 2 cycles for chunks 1.., 4 plus the port's
    latency for chunk 0; when the chunk count is not a power of two the division adds
    ``2 * q + 1`` cycles (``q`` the word index bits).

    Parameters
    ----------
    window : host_sw.contracts.registers.CounterWindow
    addr_bits : int
        Width of ``counters.addr`` (at least enough for ``window.buckets`` words).
    timeout : int
        Cycles to wait for the read port.

    Members
    -------
    start : In(1)
    offset : In(span bits)
        Bus address minus ``window.address``.
    counters : Out(counter_read_signature(addr_bits=..., word_bits=layout width))
    answer : Out(1)
    word : Out(32)
    """

    def __init__(self, *, window: WindowMap, addr_bits: int, timeout: int):
        if not isinstance(window, WindowMap):
            raise ValueError(f"window must be a host_sw.contracts.registers.CounterWindow, "
                             f"not {window!r}")
        needed = window_addr_bits(window)
        if addr_bits < needed:
            raise ValueError(f"counter_addr_bits must be at least {needed} for "
                             f"{window.buckets} counter words, not {addr_bits}")
        if timeout < 1:
            raise ValueError(f"window_timeout must be positive, not {timeout}")
        self.window = window
        self.timeout = timeout
        span_bits = max(0, (window.span - 1).bit_length())
        super().__init__({
            "start": In(1), "offset": In(max(1, span_bits)),
            "counters": Out(counter_read_signature(addr_bits=addr_bits,
                                                   word_bits=window.layout.width)),
            "answer": Out(1), "word": Out(_W),
        })

    @property
    def divides(self) -> bool:
        """Whether the offset is split by a division (chunk count not a power of two)."""
        chunks = self.window.chunks
        return chunks & (chunks - 1) != 0

    def elaborate(self, platform):
        m = Module()
        chunks = self.window.chunks
        port = self.counters
        # Word index and chunk of the current read, and whether the chunk is 0.
        index = Signal(len(port.addr))
        chunk = Signal(range(chunks) if chunks > 1 else 1)
        chunk_zero = Signal()
        m.d.comb += port.addr.eq(index)
        m.d.sync += port.en.eq(0)

        # The port's answer, registered; the shadow loads on it alone (only this window's
        # reads are answered to it), so its clock enable is one register.
        shadow = Signal(chunks * _W)
        shadow_valid = Signal()             # 0 after a timeout
        answer_valid = Signal()
        answer_data = Signal.like(port.data)
        m.d.sync += [answer_valid.eq(port.valid), answer_data.eq(port.data)]
        with m.If(answer_valid):
            m.d.sync += shadow.eq(answer_data)
        timer = Signal(range(self.timeout + 1))
        div = self._division_registers() if self.divides else None

        with m.FSM(name="counter_window"):
            with m.State("IDLE"):
                with m.If(self.start):
                    if self.divides:
                        self._start_division(m, div)
                        m.next = "DIVIDE"
                    else:
                        shift = chunks.bit_length() - 1
                        m.d.sync += [index.eq(self.offset >> shift),
                                     chunk.eq(self.offset & (chunks - 1)),
                                     chunk_zero.eq((self.offset & (chunks - 1)) == 0)]
                        m.next = "WINDOW"
            if self.divides:
                with m.State("DIVIDE"):
                    with m.If(self._divide_step(m, div, index, chunk, chunk_zero)):
                        m.next = "WINDOW"

            with m.State("WINDOW"):
                with m.If(chunk_zero):
                    m.d.sync += [port.en.eq(1), timer.eq(0)]
                    m.next = "WAIT"
                with m.Else():
                    with m.Switch(chunk):
                        for c in range(1, chunks):
                            with m.Case(c):
                                m.d.sync += self.word.eq(shadow[c * _W:(c + 1) * _W]
                                                         & shadow_valid.replicate(_W))
                    m.d.sync += self.answer.eq(1)
                    m.next = "ANSWER"

            with m.State("WAIT"):
                m.d.sync += timer.eq(timer + 1)
                with m.If(answer_valid):
                    m.d.sync += [shadow_valid.eq(1), self.word.eq(answer_data[:_W]),
                                 self.answer.eq(1)]
                    m.next = "ANSWER"
                with m.Elif(timer == self.timeout):
                    m.d.sync += [shadow_valid.eq(0), self.word.eq(0), self.answer.eq(1)]
                    m.next = "ANSWER"

            with m.State("ANSWER"):
                m.d.sync += self.answer.eq(0)
                m.next = "IDLE"
        return m

    def _division_registers(self):
        """The divider's registers (fresh for each elaboration)."""
        q_bits = window_addr_bits(self.window)
        return dict(
            q_bits=q_bits,
            remainder=Signal(len(self.offset), name="div_remainder"),
            quotient=Signal(q_bits, name="div_quotient"),
            divisor=Signal(q_bits + self.window.chunks.bit_length(), name="div_divisor"),
            steps=Signal(q_bits + 1, name="div_steps"),   # one-hot: bit 0 set = done
            fits=Signal(name="div_fits"),                 # remainder >= divisor
            phase=Signal(name="div_phase"))               # 0: compare, 1: subtract

    def _start_division(self, m, d):
        m.d.sync += [d["remainder"].eq(self.offset), d["quotient"].eq(0),
                     d["divisor"].eq(self.window.chunks << (d["q_bits"] - 1)),
                     d["steps"].eq(1 << d["q_bits"]), d["phase"].eq(0)]

    def _divide_step(self, m, d, index, chunk, chunk_zero):
        """One clock of the division (two per quotient bit: compare into a register, then
        subtract and shift). Returns the condition under which it ends this cycle."""
        remainder, divisor = d["remainder"], d["divisor"]
        m.d.sync += [d["phase"].eq(~d["phase"]), d["fits"].eq(remainder >= divisor)]
        with m.If(d["steps"][0]):
            m.d.sync += [index.eq(d["quotient"]), chunk.eq(remainder),
                         chunk_zero.eq(remainder == 0)]
        with m.Elif(d["phase"]):
            m.d.sync += [divisor.eq(divisor >> 1), d["steps"].eq(d["steps"] >> 1),
                         d["quotient"].eq(Cat(d["fits"], d["quotient"]))]
            with m.If(d["fits"]):
                m.d.sync += remainder.eq(remainder - divisor)
        return d["steps"][0]
