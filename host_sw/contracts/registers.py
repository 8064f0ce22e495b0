# SPDX-License-Identifier: BSD-2-Clause
"""The bus objects of a register map: a register, its bit fields, and the counter window.

These are the values :func:`host_sw.contracts.regmap.register_map` places (docs/DESIGN.md,
"Where each contract lives"): the gateware's CSR bank is generated from them, the host
driver encodes and decodes bus words with them, and the LiteX-style exports
(:mod:`host_sw.contracts.csr_export`) list them. No Amaranth import here.

Bus model
---------
The bus is word addressed with 32-bit data words (the UARTBone bridge sends word addresses;
``csr.csv``/``csr.json`` give byte addresses = word address × 4, as LiteX does).

* A register of ``n`` words occupies ``address .. address + n - 1``. Following LiteX's CSR
  convention (``csr_data_width`` = 32), the **most significant word is at the lowest
  address** (:meth:`Register.to_words` / :meth:`Register.from_words`).
* Reading a register's first word captures the whole value into a shadow; its other words
  read the shadow, so a burst read of the register in address order is atomic.
* Writing a register's words other than the last updates a write shadow; writing the last
  word (the least significant) commits the whole value at once. Write every word, in address
  order (LiteX's ``CSRRegister.write`` and :meth:`Register.to_words` do).
* ``pulse`` fields (CONTROL.swap/release) strobe for one clock when the committed value has
  the bit set, and read as 0.
* Reads of unmapped addresses return 0 (and are acknowledged); writes to ``ro`` registers
  or unmapped addresses are ignored (and acknowledged).

The counter window (:class:`CounterWindow`) is read only: counter word ``i`` (flat index
in :meth:`host_sw.contracts.synopsis.Synopsis.words` order, of the frozen copy) chunk ``c``
is at ``window.address + i * chunks + c``; chunks are **least significant first**
(:meth:`host_sw.contracts.layouts.WordLayout.to_chunks`). Reading chunk 0 reads the counter
memory and captures the whole word; chunks 1.. read the capture.
"""

from __future__ import annotations

from dataclasses import dataclass

from host_sw.contracts.layouts import WordLayout

__all__ = ["BUS_DATA_BITS", "REGISTER_ACCESS", "FIELD_ACCESS", "RegField", "Register",
           "CounterWindow"]

#: Bus data width in bits (one bus word).
BUS_DATA_BITS = 32
#: Access modes of a register and of a field.
REGISTER_ACCESS = ("ro", "rw")
FIELD_ACCESS = ("ro", "rw", "pulse", "wo")


@dataclass(frozen=True)
class RegField:
    """A bit field of a register.

    Attributes
    ----------
    name : str
    offset : int
        Bit offset within the register's value (LSB = 0).
    width : int
    access : str
        ``"ro"``, ``"rw"``, ``"pulse"`` (write 1 to strobe for one clock; reads 0) or
        ``"wo"`` (write-only: the written value is kept, reads return 0; AUTH_KEY).
    reset : int
        Value after reset (``rw`` fields) or the fixed value of a constant register.
    description : str
    """
    name: str
    offset: int
    width: int
    access: str
    reset: int = 0
    description: str = ""

    def __post_init__(self):
        if self.access not in FIELD_ACCESS:
            raise ValueError(f"field access must be one of {FIELD_ACCESS}, not {self.access!r}")
        if self.width < 1 or self.offset < 0:
            raise ValueError(f"field {self.name} needs width ≥ 1 and offset ≥ 0")
        if not 0 <= self.reset < (1 << self.width):
            raise ValueError(f"field {self.name} reset {self.reset} does not fit "
                             f"{self.width} bits")

    @property
    def mask(self) -> int:
        return ((1 << self.width) - 1) << self.offset


@dataclass(frozen=True)
class Register:
    """One register: ``words`` consecutive bus words from ``address``.

    Attributes
    ----------
    name : str
        Lower-case name (``timebase``); lookups are case-insensitive.
    address : int
        Word address of the first (most significant) word.
    width : int
        Value width in bits (a multiple of 32).
    access : str
        ``"ro"`` or ``"rw"`` (a register with ``rw`` or ``pulse`` fields).
    fields : tuple of RegField
    description : str
    constant : bool
        The value is fixed at elaboration (the field resets); the bank serves it itself.
    volatile : bool
        An ``rw`` register whose reads return a live value from the core (TIMEBASE: reads the
        current tick count, writes set it) rather than the last written value.
    """
    name: str
    address: int
    width: int
    access: str
    fields: tuple[RegField, ...]
    description: str = ""
    constant: bool = False
    volatile: bool = False

    def __post_init__(self):
        if self.access not in REGISTER_ACCESS:
            raise ValueError(f"register access must be one of {REGISTER_ACCESS}, "
                             f"not {self.access!r}")
        if self.width < 1 or self.width % BUS_DATA_BITS:
            raise ValueError(f"register {self.name} width must be a multiple of "
                             f"{BUS_DATA_BITS}, not {self.width}")
        for f in self.fields:
            if f.offset + f.width > self.width:
                raise ValueError(f"field {self.name}.{f.name} does not fit {self.width} bits")
        for a, b in zip(self.fields, self.fields[1:]):
            if a.offset + a.width > b.offset:
                raise ValueError(f"fields {self.name}.{a.name} and {b.name} overlap or are "
                                 f"not in bit order")
        if self.constant and self.access != "ro":
            raise ValueError(f"constant register {self.name} must be ro")
        if self.volatile and self.access != "rw":
            raise ValueError(f"volatile register {self.name} must be rw")

    @property
    def words(self) -> int:
        return self.width // BUS_DATA_BITS

    @property
    def byte_address(self) -> int:
        return self.address * (BUS_DATA_BITS // 8)

    @property
    def reset(self) -> int:
        """The register value after reset (every field's reset at its offset)."""
        return sum(f.reset << f.offset for f in self.fields)

    def field(self, name: str) -> RegField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"register {self.name} has no field {name!r}; "
                       f"fields: {[f.name for f in self.fields]}")

    def decode(self, value: int) -> dict[str, int]:
        """Field values of a register value."""
        return {f.name: (value >> f.offset) & ((1 << f.width) - 1) for f in self.fields}

    def encode(self, **values: int) -> int:
        """A register value from field values (missing fields take their reset)."""
        unknown = set(values) - {f.name for f in self.fields}
        if unknown:
            raise KeyError(f"register {self.name} has no fields {sorted(unknown)}")
        out = 0
        for f in self.fields:
            v = values.get(f.name, f.reset)
            if not 0 <= v < (1 << f.width):
                raise ValueError(f"{self.name}.{f.name} = {v} does not fit {f.width} bits")
            out |= v << f.offset
        return out

    def to_words(self, value: int) -> list[int]:
        """Bus words in address order (most significant first)."""
        if not 0 <= value < (1 << self.width):
            raise ValueError(f"{self.name} value {value:#x} does not fit {self.width} bits")
        return [(value >> (BUS_DATA_BITS * (self.words - 1 - k))) & 0xFFFFFFFF
                for k in range(self.words)]

    def from_words(self, words) -> int:
        """Inverse of :meth:`to_words`."""
        words = list(words)
        if len(words) != self.words:
            raise ValueError(f"{self.name} is {self.words} words, got {len(words)}")
        value = 0
        for w in words:
            value = (value << BUS_DATA_BITS) | (int(w) & 0xFFFFFFFF)
        return value

    def word_index(self, address: int) -> int:
        """Index (0 = first, most significant) of ``address`` within the register."""
        k = address - self.address
        if not 0 <= k < self.words:
            raise ValueError(f"address {address:#x} is not in register {self.name}")
        return k


@dataclass(frozen=True)
class CounterWindow:
    """The read-only window onto the frozen copy's counters.

    Attributes
    ----------
    name : str
    address : int
        Word address of word 0 chunk 0, aligned to :attr:`span`.
    buckets : int
        Counter words in one copy (``config.buckets``).
    layout : WordLayout
    span : int
        Power-of-two size of the address block the window decodes (≥ :attr:`words`).
    """
    name: str
    address: int
    buckets: int
    layout: WordLayout
    span: int
    description: str = ""

    @property
    def chunks(self) -> int:
        return self.layout.chunks

    @property
    def words(self) -> int:
        """Bus words of the window (``buckets × chunks``)."""
        return self.buckets * self.chunks

    @property
    def byte_address(self) -> int:
        return self.address * (BUS_DATA_BITS // 8)

    def address_of(self, index: int, chunk: int = 0) -> int:
        """Word address of counter word ``index``, chunk ``chunk``."""
        if not 0 <= index < self.buckets:
            raise ValueError(f"counter index must be 0..{self.buckets - 1}, not {index}")
        if not 0 <= chunk < self.chunks:
            raise ValueError(f"chunk must be 0..{self.chunks - 1}, not {chunk}")
        return self.address + index * self.chunks + chunk

    def locate(self, address: int) -> tuple[int, int]:
        """``(index, chunk)`` of a word address inside the window."""
        off = address - self.address
        if not 0 <= off < self.words:
            raise ValueError(f"address {address:#x} is not in the counter window")
        return divmod(off, self.chunks)

    def words_from_bus(self, bus_words) -> list[int]:
        """Counter words from a burst read of the window (or a prefix of whole words)."""
        bus_words = list(bus_words)
        if len(bus_words) % self.chunks:
            raise ValueError(f"{len(bus_words)} bus words are not whole {self.chunks}-chunk words")
        c = self.chunks
        return [self.layout.from_chunks(bus_words[k:k + c]) for k in range(0, len(bus_words), c)]

