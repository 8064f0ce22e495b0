# SPDX-License-Identifier: BSD-2-Clause
"""The read-out of the OPA sender words: the RAMs' plain sums reduced modulo p.

Where it sits: inside :class:`hw.opa.cah.OpaCah`, between the words' RAMs and everything
that reads them — the read port (the frozen copy's words for the CSR bank's counter
window and the exporter, :class:`hw.opa.opa_path.OpaPath`) and the freeze check
(:class:`hw.counters.freeze_check.FreezeCheck`). ``OpaCah`` keeps each ``B_r`` as a plain sum
``Σ j^r·h`` of terms below p (no reduction inside its one-cycle read-modify-write loop,
which is then one carry chain); this block turns a stored word
``count | S_0 | … | S_{k−1}`` into the contract's word ``count | B_0 | … | B_{k−1}`` with
``B_r = S_r mod p`` (``docs/SPEC.md`` §8.3), so everything after it — the bus, the
export, FROZEN_CHECK, the host and the golden model — sees the contract's words only.

A sum holds at most ``2**count_bits − 1`` terms (the count's range), each below
``p = 2**31 − 1``: :func:`sum_bits` = ``count_bits + 31`` bits are exact.

Why hand-written: the reduction of a wide value modulo a Mersenne prime is a fold
(``2**31 ≡ 1``: the 31-bit chunks add up) that no published Amaranth library provides,
and its cut into three registered stages (chunks added per copy straight from the RAM
output; the copy select; a last fold and one conditional subtraction) is what keeps the
read-out off the critical paths: with the copy select in front of the fold's carry
chains, the two were the OPA words' critical path on ECP5 (6.4 ns, ``docs/HARDWARE.md``).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.opa.words import OPA_FIELD_BITS, OPA_PRIME

from hw.arith.stages import kept_copies

__all__ = ["OpaReadout", "sum_bits", "fold_chunks"]

# The fold needs the Mersenne prime: 2**31 ≡ 1 (mod p).
assert OPA_PRIME == (1 << OPA_FIELD_BITS) - 1


def sum_bits(config: OpaConfig) -> int:
    """Bits of one stored plain sum ``S_r``: ``count_bits + 31`` (module docstring)."""
    return config.count_bits + OPA_FIELD_BITS


def fold_chunks(width: int) -> list[tuple[int, int]]:
    """The ``(start, stop)`` bit ranges a ``width``-bit value is cut into for the first
    fold: 31-bit chunks from bit 0, the last one up to 33 bits (their sum is congruent to
    the value modulo p; for the widths of a count of up to 63 bits, at most three chunks,
    it is below ``2**33``)."""
    if width < 1:
        raise ValueError(f"width must be positive, not {width}")
    cuts, start = [], 0
    while width - start > OPA_FIELD_BITS + 2:
        cuts.append((start, start + OPA_FIELD_BITS))
        start += OPA_FIELD_BITS
    cuts.append((start, width))
    return cuts


class OpaReadout(wiring.Component):
    """A stored word's plain sums to the contract's reduced word, in :attr:`LATENCY`
    registered stages (one read per clock).

    Parameters
    ----------
    config : OpaConfig
        Rows k and ``count_bits`` (the stored word: ``count`` then k sums of
        :func:`sum_bits` bits; the output: ``config.layout``).
    copies : 1 | 2
        The stored words offered each cycle (one per copy's RAM); ``copy`` picks one.

    Members
    -------
    stored : In(ArrayLayout(stored width, copies))
        Each copy's stored word (the RAMs' read data).
    copy : In(1)
        Which copy's word is read this cycle (ignored with one copy).
    zero : In(1)
        This read's ``data`` is 0 (a read that found no FROZEN copy).
    value : Out(config.layout.width)
        The reduced word, :attr:`LATENCY` cycles after ``stored`` (for the freeze check).
    data : Out(config.layout.width)
        The same, or 0 when ``zero`` was set (for the read port).
    """

    #: Cycles from ``stored`` to ``value``/``data``.
    LATENCY = 3

    def __init__(self, *, config, copies: int = 1):
        if not isinstance(config, OpaConfig):
            raise TypeError(f"config must be an OpaConfig, not {config!r}")
        if copies not in (1, 2):
            raise ValueError(f"copies must be 1 or 2, not {copies!r}")
        self._config, self._copies = config, copies
        self.stored_width = config.count_bits + config.rows * sum_bits(config)
        super().__init__({
            "stored": In(data.ArrayLayout(self.stored_width, copies)),
            "copy": In(1), "zero": In(1),
            "value": Out(config.layout.width), "data": Out(config.layout.width),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self._config
        cb, width = cfg.count_bits, sum_bits(cfg)
        # Stage A: per copy, each sum's chunks added (straight from the RAM output).
        firsts = []
        for c in range(self._copies):
            word = self.stored[c]
            folded = []
            for r in range(cfg.rows):
                s = word[cb + r * width:cb + (r + 1) * width]
                y = sum(s[a:b] for a, b in fold_chunks(width))
                reg = Signal(len(y), name=f"a{c}_y{r}", reset_less=True)
                m.d.sync += reg.eq(y)
                folded.append(reg)
            firsts.append(folded)
        count = Signal(cb, reset_less=True)
        zero = Signal()
        # the copy select, one register per row (fan-out: each drives 33 multiplexers)
        copies = kept_copies(m, self.copy if self._copies == 2 else Const(0, 1), cfg.rows,
                             name="copy_row")
        m.d.sync += [zero.eq(self.zero),
                     count.eq(self.stored[0][:cb] if self._copies == 1 else
                              Mux(self.copy, self.stored[1][:cb], self.stored[0][:cb]))]
        # Stage B: the copy's folded sums, registered (the select alone in this stage).
        chosen = []
        for r in range(cfg.rows):
            y = (firsts[0][r] if self._copies == 1
                 else Mux(copies[r], firsts[1][r], firsts[0][r]))
            reg = Signal(len(y), name=f"b_y{r}", reset_less=True)
            m.d.sync += reg.eq(y)
            chosen.append(reg)
        count_b = Signal(cb, reset_less=True)
        zero_b = Signal()
        m.d.sync += [count_b.eq(count), zero_b.eq(zero)]
        # Stage C: the folded sum y (below 2**33) = lo + 2**31·hi ≡ lo + hi =: f, below
        # p + 4, so f mod p is f or f − p = the low bits of f + 1 when f + 1 reaches
        # 2**31: both sums side by side (two carry chains from the same inputs, one
        # deep), then a multiplexer.
        reduced = []
        for y in chosen:
            lo, hi = y[:OPA_FIELD_BITS], y[OPA_FIELD_BITS:]
            f, f1 = lo + hi, lo + (hi + 1)
            reduced.append(Mux(f1[OPA_FIELD_BITS], f1[:OPA_FIELD_BITS], f[:OPA_FIELD_BITS]))
        word = Cat(count_b, *reduced)
        m.d.sync += [self.value.eq(word), self.data.eq(Mux(zero_b, 0, word))]
        return m
