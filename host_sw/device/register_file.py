# SPDX-License-Identifier: BSD-2-Clause
"""The CSR bank's bus behaviour in memory, walked from the register map.

In ``docs/DESIGN.md``'s data flow this stands in for the "CSR register bank" box
(:class:`hw.bus.csr.CsrBank`) on the host side: nothing here names a register or an address;
every register, field, reset value and the counter window come from a
:class:`~host_sw.contracts.regmap.RegisterMap`, and the bus semantics are the map's (its
"Bus model"):

* reads of unmapped addresses return 0; writes to ``ro`` registers, the counter window and
  unmapped addresses are ignored;
* a wide register keeps its most significant word at its lowest address; reading its first
  word captures the whole value, which its other words read (atomic burst reads); writing a
  word other than the last fills the write shadow (one, shared, as in the bank), writing the
  last commits the whole value;
* ``pulse`` fields act on the committed write and read 0;
* counter window word ``i`` chunk ``c`` (least significant chunk first): chunk 0 reads the
  counter word and captures it, the other chunks read the capture.

What the core behind the bank does (freeze, status, counters) is its owner's:
:class:`host_sw.device.fake_device.FakeDevice` gives ``ro`` registers their values
(:meth:`RegisterFile.set`, or a live ``source``), the counter words (``window_word``) and
the actions of committed writes (``on_write``).
"""

from __future__ import annotations

from typing import Callable

from host_sw.contracts.registers import BUS_DATA_BITS, Register
from host_sw.contracts.regmap import RegisterMap

__all__ = ["RegisterFile"]

_M32 = (1 << BUS_DATA_BITS) - 1


def _pulse_mask(register: Register) -> int:
    return sum(f.mask for f in register.fields if f.access == "pulse")


def _read_zero_mask(register: Register) -> int:
    """Bits that read as 0: pulse and write-only (``wo``, AUTH_KEY) fields."""
    return sum(f.mask for f in register.fields if f.access in ("pulse", "wo"))


class RegisterFile:
    """A register map's registers and counter window, on a word-addressed bus.

    Parameters
    ----------
    regmap : RegisterMap
    window_word : callable, optional
        ``window_word(index) -> int``: counter word ``index`` of the frozen copy (0 when no
        copy is frozen). Default: every word reads 0.
    sources : dict, optional
        ``{register name: callable() -> int}``: ``ro`` registers whose value the core
        drives live (read when the bus or :meth:`value` reads them).
    on_write : dict, optional
        ``{register name: callable(value)}``: called with a committed write's whole value
        before it is stored (``pulse`` fields are stored cleared).

    Attributes
    ----------
    map : RegisterMap
    values : dict
        The stored value of every register (resets at first).
    """

    def __init__(self, regmap: RegisterMap, *,
                 window_word: Callable[[int], int] | None = None,
                 sources: dict[str, Callable[[], int]] | None = None,
                 on_write: dict[str, Callable[[int], None]] | None = None):
        self.map = regmap
        self.values: dict[str, int] = {r.name: r.reset for r in regmap}
        self.window_word = window_word or (lambda index: 0)
        self.sources = dict(sources or {})
        self.on_write = dict(on_write or {})
        self._read_capture: tuple[str, list[int]] | None = None     # wide registers
        self._window_capture: tuple[int, list[int]] | None = None   # counter word
        self._write_shadow: dict[int, int] = {}    # significance (0 = least) → word

    # -- values ----------------------------------------------------------------------------
    def value(self, name: str) -> int:
        """A register's current value (its source's, or the stored one)."""
        reg = self.map[name]
        if reg.name in self.sources:
            return int(self.sources[reg.name]()) & ((1 << reg.width) - 1)
        return self.values[reg.name] & ((1 << reg.width) - 1)

    def set(self, name: str, value: int) -> None:
        """Store a register's value (what the core drives into an ``ro`` register)."""
        self.values[self.map[name].name] = int(value)

    # -- the bus ---------------------------------------------------------------------------
    def read(self, address: int) -> int:
        """The 32-bit word a bus read of ``address`` returns."""
        target = self.map.at(address)
        if target is None:
            return 0
        if target is self.map.window:
            return self._read_window(address)
        k = target.word_index(address)
        if k == 0 or self._read_capture is None or self._read_capture[0] != target.name:
            words = target.to_words(self.value(target.name))
            if k == 0:
                self._read_capture = (target.name, words)
        else:
            words = self._read_capture[1]
        word = words[k]
        shift = BUS_DATA_BITS * (target.words - 1 - k)
        return word & ~(_read_zero_mask(target) >> shift) & _M32

    def _read_window(self, address: int) -> int:
        window = self.map.window
        index, chunk = window.locate(address)
        if chunk == 0 or self._window_capture is None or self._window_capture[0] != index:
            chunks = window.layout.to_chunks(int(self.window_word(index)))
            if chunk == 0:
                self._window_capture = (index, chunks)
        else:
            chunks = self._window_capture[1]
        return chunks[chunk]

    def write(self, address: int, word: int) -> None:
        """A bus write of the 32-bit ``word`` to ``address``."""
        target = self.map.at(address)
        if target is None or target is self.map.window or target.access != "rw":
            return
        k = target.word_index(address)
        significance = target.words - 1 - k
        if significance:
            self._write_shadow[significance] = word & _M32
            return
        value = word & _M32
        for s in range(1, target.words):
            value |= self._write_shadow.get(s, 0) << (BUS_DATA_BITS * s)
        if target.name in self.on_write:
            self.on_write[target.name](value)
        self.values[target.name] = value & ~_pulse_mask(target)
