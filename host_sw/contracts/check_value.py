# SPDX-License-Identifier: BSD-2-Clause
"""The check value of a frozen counter copy, and the plausibility of its counts: the one
definition of the snapshot's end-to-end integrity (``docs/SPEC.md`` §4.4).

Where it sits (docs/DESIGN.md, "Data flow of a counter"): the counter bank computes the
check value over each copy while the copy freezes (:class:`hw.counters.freeze_check.FreezeCheck`)
and counts the word updates it applied to it; both are read beside FROZEN_SEQ
(FROZEN_CHECK, FROZEN_UPDATES). The driver (:mod:`host_sw.device.driver`) computes the same
over the words it read and accepts a snapshot only when they match; the fake device
answers with the same registers, so every side uses these functions.

The check value is the CRC-32 of zlib/Ethernet (reflected polynomial ``0xEDB88320``, initial
value and final XOR ``0xFFFFFFFF``) over the counter words in memory order (§4.2), each
word as ``ceil(width / 8)`` bytes, least significant byte first: so the bits of a word
enter the CRC from bit 0 upwards, and the padding bits above ``width`` are zero. Python's
:func:`zlib.crc32` computes it; the gateware evaluates the same function one word per
clock (its XOR matrix is derived from :func:`crc32_bits` below, the bit-serial form).
"""

from __future__ import annotations

import zlib
from typing import Iterable

import numpy as np

from host_sw.contracts.config_base import SynopsisConfig

__all__ = ["CRC32_POLY", "CRC32_INIT", "CRC32_XOROUT", "UPDATES_BITS", "word_bytes",
           "check_bytes", "check_value", "crc32_bits", "count_total", "plausibility_problem"]

#: The reflected CRC-32 polynomial (IEEE 802.3, zlib).
CRC32_POLY = 0xEDB88320
#: Register value before the first bit.
CRC32_INIT = 0xFFFFFFFF
#: XORed into the register after the last bit.
CRC32_XOROUT = 0xFFFFFFFF
#: Width of FROZEN_UPDATES (it wraps).
UPDATES_BITS = 32


def word_bytes(config: SynopsisConfig) -> int:
    """Bytes each counter word contributes to the check value: ``ceil(width / 8)``."""
    return (config.layout.width + 7) // 8


def check_bytes(config: SynopsisConfig, words: Iterable[int]) -> bytes:
    """The byte string the check value covers: each word little-endian, memory order."""
    n = word_bytes(config)
    mask = (1 << config.layout.width) - 1
    return b"".join((int(w) & mask).to_bytes(n, "little") for w in words)


def check_value(config: SynopsisConfig, words: Iterable[int]) -> int:
    """FROZEN_CHECK for a copy holding ``words`` (memory order, ``Synopsis.words()``)."""
    return zlib.crc32(check_bytes(config, words)) & 0xFFFFFFFF


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
