# SPDX-License-Identifier: BSD-2-Clause
"""How the register map is declared: fields and registers as written in
:mod:`host_sw.contracts.regmap` (each field placed after the previous one unless given an
offset, resets that may be functions of the configuration), and the constructors of the
register shapes it uses many times (one 32-bit value, a status counter, a 64-bit tick
count, a MAC address, a CONFIG field). :meth:`RegisterDecl.place` turns a declaration into
the :class:`~host_sw.contracts.registers.Register` of a core at an address.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.registers import BUS_DATA_BITS, RegField, Register

__all__ = ["ConfigValue", "FieldDecl", "RegisterDecl", "value_register", "status_counter",
           "ticks_register", "mac_register", "config_field"]


def _words(bits: int) -> int:
    """Bus words that hold ``bits``."""
    return (bits + BUS_DATA_BITS - 1) // BUS_DATA_BITS


#: A reset value given by the configuration: ``reset(config, data_width)``.
ConfigValue = Callable[[SynopsisConfig, int], int]


@dataclass(frozen=True)
class FieldDecl:
    """A register field as declared: ``width`` bits placed right after the previous field
    of its register (the first at bit 0) unless ``at`` gives its bit offset.

    ``reset`` is an int, or a function of ``(config, data_width)`` for the fields that
    describe the configuration.
    """
    name: str
    width: int
    access: str
    description: str = ""
    reset: int | ConfigValue = 0
    at: int | None = None


@dataclass(frozen=True)
class RegisterDecl:
    """A register as declared: its fields in bit order; it takes as many bus words as its
    last field needs, and is ``rw`` when any field is ``rw`` or ``pulse``.

    ``constant`` and ``volatile`` are as on :class:`~host_sw.contracts.registers.Register`.
    """
    name: str
    description: str
    fields: tuple[FieldDecl, ...]
    constant: bool = False
    volatile: bool = False

    def place(self, address: int, config: SynopsisConfig, data_width: int) -> Register:
        """The register at word ``address`` for a core of ``config``."""
        fields, offset = [], 0
        for f in self.fields:
            offset = offset if f.at is None else f.at
            reset = f.reset(config, data_width) if callable(f.reset) else f.reset
            fields.append(RegField(f.name, offset, f.width, f.access, reset, f.description))
            offset += f.width
        end = max(f.offset + f.width for f in fields)
        return Register(name=self.name, address=address, width=_words(end) * BUS_DATA_BITS,
                        access="rw" if any(f.access != "ro" for f in fields) else "ro",
                        fields=tuple(fields), description=self.description,
                        constant=self.constant, volatile=self.volatile)


def value_register(name: str, access: str, description: str, **kw) -> RegisterDecl:
    """A register of one 32-bit field named ``value``."""
    return RegisterDecl(name, description, (FieldDecl("value", 32, access),), **kw)


def status_counter(name: str, what: str) -> RegisterDecl:
    """A read-only 32-bit wrapping counter."""
    return value_register(name, "ro", f"Status counter: {what} (32-bit, wrapping).")


def ticks_register(name: str, access: str, description: str, what: str, **kw) -> RegisterDecl:
    """A register of one 64-bit field ``ticks`` (timebase ticks)."""
    return RegisterDecl(name, description, (FieldDecl("ticks", 64, access, what),), **kw)


def mac_register(name: str, description: str) -> RegisterDecl:
    """A read/write 48-bit MAC address register."""
    return RegisterDecl(name, description, (FieldDecl(
        "mac", 48, "rw", "MAC address (byte 0 of the address in bits 47..40)"),))


def config_field(name: str, width: int, description: str, value: ConfigValue, at=None) -> FieldDecl:
    """A read-only field of the CONFIG register, its reset given by the configuration."""
    return FieldDecl(name, width, "ro", description, value, at)
