# SPDX-License-Identifier: BSD-2-Clause
"""One core of several on a shared link: the address offset, and the link they share.

In ``docs/DESIGN.md``'s data flow this sits between the device driver and the byte link
when a board's UART reaches two measurement cores through
:class:`boards.bus_router.UARTBoneRouter`: the driver addresses each core's registers from
0, :class:`OffsetTransport` adds the core's word base
(:func:`host_sw.device.csr_bases.core_word_base`), and :class:`SharedLink` lets several
of them use one open link, closing it with the last
(:func:`host_sw.device.transport.open_transports`).
"""

from __future__ import annotations

from host_sw.device.csr_bases import WORD_SPACE, word_from_byte
from host_sw.device.transport_base import Transport

__all__ = ["OffsetTransport", "SharedLink"]


class OffsetTransport(Transport):
    """One core behind a shared bus: every word address is offset by the core's base.

    A two-port board's UART reaches two measurement cores through
    :class:`boards.bus_router.UARTBoneRouter` (core ``k`` at word base ``k × 0x100000``);
    the driver addresses registers from 0 in either, and this adds the core's base. Several
    of these may share one ``inner`` link (:func:`open_transports`).

    Parameters
    ----------
    inner : Transport
        The link (closed by :meth:`close`).
    word_base : int
        Word address of the core's address 0 (``csr_base`` / 4).
    byte_base : int
        The same as a byte address, as ``csr.csv`` lists it (a multiple of 4); give one of
        ``word_base`` and ``byte_base``.
    span : int, optional
        Words in the core's window: an access at or beyond it (it would reach the next
        core) is a ValueError. None: up to the end of the 32-bit word space.
    name : str
        Shown in error messages.
    """

    def __init__(self, inner: Transport, *, word_base: int | None = None,
                 byte_base: int | None = None, span: int | None = None,
                 name: str | None = None):
        if not isinstance(inner, Transport):
            raise ValueError(f"inner must be a Transport, not {type(inner).__name__}")
        if (word_base is None) == (byte_base is None):
            raise ValueError("give exactly one of word_base and byte_base")
        for what, v in (("word_base", word_base), ("byte_base", byte_base),
                        ("span", span)):
            if v is not None and not (isinstance(v, int) and not isinstance(v, bool)):
                raise ValueError(f"{what} must be an integer, not {v!r}")
        if byte_base is not None:
            word_base = word_from_byte(byte_base, "byte_base")
        if word_base < 0:
            raise ValueError(f"word_base must be non-negative, not {word_base}")
        if word_base >= WORD_SPACE:
            raise ValueError(f"word_base {word_base:#x} is beyond the 32-bit word address "
                             f"space")
        if span is not None and not 1 <= span <= WORD_SPACE - word_base:
            raise ValueError(f"span must be 1..{WORD_SPACE - word_base} words, not {span}")
        self.inner = inner
        self.word_base = word_base
        self.span = span if span is not None else WORD_SPACE - word_base
        self.name = name or f"{getattr(inner, 'name', 'device')} @ word {word_base:#x}"
        self._closed = False

    @property
    def byte_base(self) -> int:
        """The base as a byte address (``csr.csv``'s ``csr_base``)."""
        return self.word_base * 4

    def _absolute(self, address: int, n: int, incrementing: bool) -> int:
        if not (isinstance(address, int) and address >= 0):
            raise ValueError(f"word address must be a non-negative integer, not {address!r}")
        last = address + (n - 1 if incrementing else 0)
        if last >= self.span:
            raise ValueError(f"{self.name}: word {last:#x} is beyond this core's window of "
                             f"{self.span:#x} words (it would reach another core)")
        return self.word_base + address

    def read_words(self, address: int, n: int = 1, *, incrementing: bool = True) -> list[int]:
        return self.inner.read_words(self._absolute(address, max(n, 1), incrementing), n,
                                     incrementing=incrementing)

    def write_words(self, address: int, words, *, incrementing: bool = True) -> None:
        words = list(words)
        self.inner.write_words(self._absolute(address, max(len(words), 1), incrementing),
                               words, incrementing=incrementing)

    def set_resync_probe(self, address: int, words) -> None:
        words = list(words)
        self.inner.set_resync_probe(self._absolute(address, len(words), True), words)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.inner.close()


class SharedLink(Transport):
    """One open link used by several :class:`OffsetTransport`\\ s; closed with the last."""

    def __init__(self, inner: Transport, users: int):
        self.inner = inner
        self.users = users

    def read_words(self, address, n=1, *, incrementing=True):
        return self.inner.read_words(address, n, incrementing=incrementing)

    def write_words(self, address, words, *, incrementing=True):
        self.inner.write_words(address, words, incrementing=incrementing)

    def set_resync_probe(self, address: int, words) -> None:
        """Any core's constants prove the shared link in step: the latest one is used."""
        self.inner.set_resync_probe(address, words)

    def close(self) -> None:
        self.users -= 1
        if self.users == 0:
            self.inner.close()
