# SPDX-License-Identifier: BSD-2-Clause
"""Incremental capture parsing: bytes of a pcap or pcapng stream as they arrive (a pipe
from ``tcpdump -U -w -``, or a file tcpdump is still writing) ► complete records
``(timestamp_ns, frame)``; a record cut by the end of the bytes so far waits for the
next ones.

Model layer, beside :mod:`host_sw.model.pcap_stream` (whole files in vectorised chunks),
whose record walkers (``walk_classic``, ``walk_pcapng``, the interface descriptions)
it shares: one definition of the formats' record chains, here fed a growing buffer
instead of file blocks. Used by ``ldactl watch --records``
(:mod:`host_sw.cli.opa.record_source`) for the OPA record frames the devices send in-band.
Timestamps are exact int64 ns, as in the other readers.
"""

from __future__ import annotations

import struct

import numpy as np

from host_sw.model.pcap import MAGIC_NS, MAGIC_US, PCAPNG_BOM, PCAPNG_SHB, CaptureError
from host_sw.model.pcap_stream import PcapngInterface, walk_classic, walk_pcapng

__all__ = ["CaptureParser"]

#: Bytes a capture's start must have before its format is known (classic header).
_CLASSIC_HEADER = 24
#: The link type of the frames read (the devices' record frames are Ethernet frames).
_ETHERNET = 1


class CaptureParser:
    """Records of one capture stream, from its bytes in pieces (:meth:`feed`).

    ``name`` names the stream in errors (:class:`~host_sw.model.pcap.CaptureError`:
    not a capture, a corrupt record, a truncated end at :meth:`finish`)."""

    def __init__(self, name: str):
        self.name = name
        self._buf = bytearray()
        self._format: str | None = None
        self._le = True
        self._frac_ns = 1
        self._ifaces: list[PcapngInterface] = []

    def _start(self) -> bool:
        """Recognise the format once enough bytes are there; False: not yet."""
        if len(self._buf) < 4:
            return False
        magic_le, magic_be = struct.unpack_from("<I", self._buf)[0], \
            struct.unpack_from(">I", self._buf)[0]
        if magic_le == PCAPNG_SHB:
            if len(self._buf) < 12:
                return False
            bom = self._buf[8:12]
            self._le = struct.unpack("<I", bom)[0] == PCAPNG_BOM
            if not self._le and struct.unpack(">I", bom)[0] != PCAPNG_BOM:
                raise CaptureError(f"{self.name}: corrupt pcapng section header")
            self._format = "pcapng"
            return True
        if magic_le in (MAGIC_US, MAGIC_NS) or magic_be in (MAGIC_US, MAGIC_NS):
            if len(self._buf) < _CLASSIC_HEADER:
                return False
            self._le = magic_le in (MAGIC_US, MAGIC_NS)
            magic = magic_le if self._le else magic_be
            self._frac_ns = 1 if magic == MAGIC_NS else 1000
            linktype = struct.unpack_from("<I" if self._le else ">I", self._buf, 20)[0]
            if linktype & 0x0FFFFFFF != _ETHERNET:
                raise CaptureError(f"{self.name}: link type {linktype & 0x0FFFFFFF}, not "
                                   f"Ethernet (1)")
            del self._buf[:_CLASSIC_HEADER]
            self._format = "pcap"
            return True
        raise CaptureError(f"{self.name} is not a pcap or pcapng stream "
                           f"(magic {magic_le:#010x})")

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        """Add bytes; the records they complete, in stream order."""
        self._buf += data
        if self._format is None and not self._start():
            return []
        data = bytes(self._buf)
        if self._format == "pcap":
            out, rest = self._classic(data)
        else:
            out, rest = self._pcapng(data)
        del self._buf[:rest]
        return out

    def _classic(self, data: bytes):
        starts, rest = walk_classic(data, self._le)
        fields = struct.Struct(("<" if self._le else ">") + "IIII")
        limit = 1_000_000_000 if self._frac_ns == 1 else 1_000_000
        out = []
        for s in starts.tolist():
            sec, frac, cap, _ = fields.unpack_from(data, s)
            if frac >= limit:
                raise CaptureError(f"{self.name}: corrupt timestamp fraction {frac}")
            out.append((sec * 1_000_000_000 + frac * self._frac_ns, data[s + 16:s + 16 + cap]))
        return out, rest

    def _pcapng(self, data: bytes):
        starts, kinds, rest = walk_pcapng(data, self._le, self.name, self._ifaces)
        for itf in self._ifaces:        # every interface's, not only the first one's
            if itf.linktype != _ETHERNET:
                raise CaptureError(f"{self.name}: an interface of link type "
                                   f"{itf.linktype}, not Ethernet (1)")
        e = "<" if self._le else ">"
        out = []
        for s, kind in zip(starts.tolist(), kinds.tolist()):
            if kind == 2:       # the obsolete Packet Block: 16-bit interface, drops
                iface = struct.unpack_from(e + "H", data, s + 8)[0]
            else:
                iface = struct.unpack_from(e + "I", data, s + 8)[0]
            high, low, cap = struct.unpack_from(e + "III", data, s + 12)
            if iface >= len(self._ifaces):
                raise CaptureError(f"{self.name}: a packet names an interface the stream "
                                   f"does not describe")
            if high >= 1 << 31:
                raise CaptureError(f"{self.name}: a pcapng timestamp of 2^63 ticks or more "
                                   f"(high word {high:#x})")
            ns = self._ifaces[iface].ns(np.array([(high << 32) | low], np.int64), self.name)
            out.append((int(ns[0]), data[s + 28:s + 28 + cap]))
        return out, rest

    def finish(self) -> None:
        """The stream ended: :class:`CaptureError` when it ends inside a record (or
        before its header)."""
        if self._format is None and self._buf:
            raise CaptureError(f"{self.name}: the stream ended inside its header "
                               f"({len(self._buf)} bytes)")
        if self._buf:
            raise CaptureError(f"{self.name}: the stream ended inside a record "
                               f"({len(self._buf)} bytes left)")
