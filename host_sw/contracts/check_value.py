# SPDX-License-Identifier: BSD-2-Clause
"""The check value of a frozen interval record, and the plausibility of its counts: the one
definition of the snapshot's end-to-end integrity (``docs/SPEC.md`` §4.4).

Where it sits (docs/DESIGN.md, "Data flow of a counter"): the counter bank computes the
CRC of each copy's words while the copy freezes (:class:`hw.counters.freeze_check.FreezeCheck`,
:func:`words_check`), and the core folds the interval's header into it — sequence number,
flags, packets, configuration ID, timestamp, the device's role and source MAC (and on an RLI
core its four frozen interpolation counts), all final once the copy has drained
(:class:`hw.counters.freeze_check.RecordCheck`, :func:`extend_check`); the counter bank also
counts the word updates it applied to the copy. Both are read beside FROZEN_SEQ
(FROZEN_CHECK, FROZEN_UPDATES). The driver (:mod:`host_sw.device.driver`) computes the same
over the header and the words it read and accepts a snapshot only when they match; the
fake device answers with the same registers, so every side uses these functions.

The check value is the CRC-32 of zlib/Ethernet (reflected polynomial ``0xEDB88320``, initial
value and final XOR ``0xFFFFFFFF``) over the interval record: the counter words in memory
order (§4.2), each word as ``ceil(width / 8)`` bytes, least significant byte first (so the
bits of a word enter the CRC from bit 0 upwards, and the padding bits above ``width`` are
zero), then the header (:func:`header_fields`: the 28 bytes of :data:`HEADER_FIELDS`, and on an
RLI core the 16 of :data:`RLI_HEADER_FIELDS` after them; each field little-endian). Python's
:func:`zlib.crc32` computes it; the gateware evaluates the words one per clock and the
header one byte per clock (their XOR matrices are derived from :func:`crc32_bits` below,
the bit-serial form).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from host_sw.contracts.config_base import SynopsisConfig

__all__ = ["CRC32_POLY", "CRC32_INIT", "CRC32_XOROUT", "UPDATES_BITS", "HEADER_FIELDS",
           "HEADER_BITS", "RLI_HEADER_FIELDS", "header_fields", "header_bits",
           "HEADER_REGISTERS", "RecordHeader", "word_bytes", "counter_bytes", "header_bytes",
           "check_bytes", "words_check", "extend_check", "check_value", "crc32_bits",
           "count_total", "plausibility_problem"]

#: The reflected CRC-32 polynomial (IEEE 802.3, zlib).
CRC32_POLY = 0xEDB88320
#: Register value before the first bit.
CRC32_INIT = 0xFFFFFFFF
#: XORed into the register after the last bit.
CRC32_XOROUT = 0xFFFFFFFF
#: Width of FROZEN_UPDATES (it wraps).
UPDATES_BITS = 32


#: The interval header the check value covers after the words: (field, bits), in byte
#: order, each field little-endian (``docs/SPEC.md`` §4.4). The registers: FROZEN_SEQ,
#: FROZEN_FLAGS (the whole byte), FROZEN_PACKETS, FROZEN_CONFIG_ID, FROZEN_TIMESTAMP,
#: FROZEN_ROLE (the whole byte: :class:`host_sw.contracts.frames.frame_format.Role`) and
#: FROZEN_SRC_MAC (LOCAL_MAC as the interval froze; the 48-bit value, the address's last
#: byte first).
HEADER_FIELDS = (("seq", 32), ("flags", 8), ("packets", 32), ("config_id", 32),
                 ("timestamp", 64), ("role", 8), ("src_mac", 48))
#: Bits of the header every core has (28 bytes).
HEADER_BITS = sum(bits for _, bits in HEADER_FIELDS)
#: The fields an RLI core's header has after :data:`HEADER_FIELDS`: RLI_FROZEN_REFERENCES,
#: RLI_FROZEN_OVERFLOWED, RLI_FROZEN_UNREFERENCED, RLI_FROZEN_REFUSED (16 bytes).
RLI_HEADER_FIELDS = (("rli_references", 32), ("rli_overflowed", 32),
                     ("rli_unreferenced", 32), ("rli_refused", 32))


#: The register each header field is read from (:mod:`host_sw.contracts.regmap`).
HEADER_REGISTERS = {"seq": "frozen_seq", "flags": "frozen_flags", "packets": "frozen_packets",
                    "config_id": "frozen_config_id", "timestamp": "frozen_timestamp",
                    "role": "frozen_role", "src_mac": "frozen_src_mac",
                    **{name: f"rli_frozen_{name[4:]}" for name, _ in RLI_HEADER_FIELDS}}


def header_fields(kind: str) -> tuple:
    """The header fields of a core of synopsis ``kind`` (a kind name or a configuration):
    :data:`HEADER_FIELDS`, then RLI's :data:`RLI_HEADER_FIELDS` on an RLI core."""
    kind = getattr(kind, "kind", kind)
    return HEADER_FIELDS + (RLI_HEADER_FIELDS if kind == "rli" else ())


def header_bits(kind: str) -> int:
    """Bits of the header of a core of ``kind`` (:func:`header_fields`)."""
    return sum(bits for _, bits in header_fields(kind))


@dataclass(frozen=True)
class RecordHeader:
    """The header of a frozen interval as the device stamped it (the FROZEN_* registers;
    ``flags`` is the device's byte, before the host adds a flag of its own). The ``rli_*``
    counts are an RLI core's (None on every other core: all four or none)."""
    seq: int
    flags: int
    packets: int
    config_id: int
    timestamp: int
    role: int
    src_mac: int
    rli_references: int | None = None
    rli_overflowed: int | None = None
    rli_unreferenced: int | None = None
    rli_refused: int | None = None

    def __post_init__(self):
        rli = [getattr(self, name) is not None for name, _ in RLI_HEADER_FIELDS]
        if any(rli) and not all(rli):
            raise ValueError("an RLI header has all four rli_* counts, another none")
        for name, bits in self.fields:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < (1 << bits):
                raise ValueError(f"header {name} must be an integer in 0..2^{bits}-1, "
                                 f"not {v!r}")

    @property
    def fields(self) -> tuple:
        """This header's (field, bits): :func:`header_fields` of its kind."""
        return header_fields("rli" if self.rli_references is not None else "")

    def as_int(self) -> int:
        """The header as one integer of its fields' bits, the first field in the low
        bits (its little-endian bytes are :func:`header_bytes`)."""
        value, at = 0, 0
        for name, bits in self.fields:
            value |= getattr(self, name) << at
            at += bits
        return value


def word_bytes(config: SynopsisConfig) -> int:
    """Bytes each counter word contributes to the check value: ``ceil(width / 8)``."""
    return (config.layout.width + 7) // 8


def counter_bytes(config: SynopsisConfig, words: Iterable[int]) -> bytes:
    """The counter words' part of the record: each word little-endian, memory order."""
    n = word_bytes(config)
    mask = (1 << config.layout.width) - 1
    return b"".join((int(w) & mask).to_bytes(n, "little") for w in words)


def header_bytes(header: RecordHeader) -> bytes:
    """The header's part of the record: its fields in order (28 bytes; 44 on RLI)."""
    return header.as_int().to_bytes(sum(b for _, b in header.fields) // 8, "little")


def check_bytes(config: SynopsisConfig, words: Iterable[int], header: RecordHeader) -> bytes:
    """The byte string the check value covers: the counter words, then the header (which
    must have ``config``'s kind's fields)."""
    if header.fields != header_fields(config):
        raise ValueError(f"a {config.kind} core's header has the fields "
                         f"{[n for n, _ in header_fields(config)]}, not "
                         f"{[n for n, _ in header.fields]}")
    return counter_bytes(config, words) + header_bytes(header)


def words_check(config: SynopsisConfig, words: Iterable[int]) -> int:
    """The CRC-32 of the counter words alone: what the counter bank computes while the
    copy freezes (its ``frozen_check``), before the core folds the header in."""
    return zlib.crc32(counter_bytes(config, words)) & 0xFFFFFFFF


def extend_check(words_crc: int, header: RecordHeader) -> int:
    """The check value from the words' CRC and the header: the CRC continued over the
    header's bytes (what :class:`hw.counters.freeze_check.RecordCheck` computes)."""
    return zlib.crc32(header_bytes(header), words_crc) & 0xFFFFFFFF


def check_value(config: SynopsisConfig, words: Iterable[int], header: RecordHeader) -> int:
    """FROZEN_CHECK of an interval record: ``words`` (memory order, ``Synopsis.words()``)
    and its ``header``."""
    return zlib.crc32(check_bytes(config, words, header)) & 0xFFFFFFFF


def crc32_bits(state: int, bits: Iterable[int]) -> int:
    """The raw CRC register after shifting in ``bits`` (each 0/1), first bit first, no
    initial value or final XOR applied: the linear step the gateware unrolls.

    ``crc32_bits(CRC32_INIT, bits of the bytes LSB first) ^ CRC32_XOROUT`` equals
    ``zlib.crc32`` of those bytes.
    """
    for b in bits:
        feedback = (state ^ b) & 1
        state = (state >> 1) ^ (CRC32_POLY if feedback else 0)
    return state


def count_total(config: SynopsisConfig, counts: np.ndarray) -> int:
    """The sum of the ``count`` fields modulo ``2^min(count_bits, UPDATES_BITS)``."""
    bits = min(config.count_bits, UPDATES_BITS)
    return int(np.sum(np.asarray(counts, dtype=np.uint64) & np.uint64((1 << bits) - 1),
                      dtype=np.uint64)) % (1 << bits)


def plausibility_problem(config: SynopsisConfig, counts: np.ndarray,
                         updates: int) -> str | None:
    """Why the counts read cannot come from the device's copy, or None.

    Every word update the counter bank applies adds 1 to one word's ``count``, and the bank
    counts its updates per copy (FROZEN_UPDATES, 32-bit wrapping); so the sum of the counts
    equals it modulo ``2^min(count_bits, 32)`` whatever wrapped (a modular sum of modular
    values). A mismatch means lost or double updates, or counts that are not the copy's.
    """
    bits = min(config.count_bits, UPDATES_BITS)
    expected = int(updates) % (1 << bits)
    total = count_total(config, counts)
    if total != expected:
        return (f"the counts sum to {total} (mod 2^{bits}) but the device applied "
                f"{expected} updates to the copy (FROZEN_UPDATES)")
    return None
