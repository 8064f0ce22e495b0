# SPDX-License-Identifier: BSD-2-Clause
"""The OPA timestamp layer (the paper's second layer, §V-A): the sender's send
timestamps of one interval, per group in sending order, coded for the trip to the
receiver (``docs/SPEC.md`` §8.4).

Data flow: the sender's per-packet records (packet hash, timestamp) → grouped as the
CAH groups them (:func:`host_sw.contracts.opa.words.group_of`) → :func:`encode_timestamps` →
bytes beside the interval's OPA words → :func:`decode_timestamps` at the receiver, which
pairs them with its own records after Algorithm 1 (:mod:`host_sw.estimators.opa.recovery`).

Coding: each group's timestamps, quantised by ``shift`` bits (0 = lossless, the
default), become differences — the group's first against the interval's base, the
others against the previous packet of the group — coded Golomb–Rice with one parameter
for first values and one for gaps. Quotients (unary) and remainders (fixed width) are
kept in separate sections so that both directions are whole-array numpy operations
(the unary terminators are the zero bits); quotients of 31 or more escape to a full
64-bit value. Written here rather than taken from a package because the layout is part
of the contract and must be vectorised; no published Rice coder on PyPI decodes a
bit stream in bulk with numpy.

Lossy mode (``shift`` = s > 0): the receiver reads ``(q << s) + 2**(s−1)``, so every send
timestamp, hence every recovered delay, is within ``2**(s−1)`` ticks of the truth.
"""

from __future__ import annotations

import struct

import numpy as np

__all__ = ["TS_BLOCK_VERSION", "RICE_ESCAPE", "encode_timestamps", "decode_timestamps",
           "rice_parameter", "timestamp_error_bound"]

TS_BLOCK_VERSION = 1
#: Unary quotients at or above this escape to a 64-bit value.
RICE_ESCAPE = 31
_HEADER = struct.Struct("<BBBBIIQ")   # version, shift, k_first, k_gap, n, escapes, base


def rice_parameter(values: np.ndarray) -> int:
    """The Rice parameter for values of this mean: ``floor(log2(mean·ln 2))`` clipped to
    0..62 (within a fraction of a bit of the optimum for geometric values)."""
    if len(values) == 0:
        return 0
    mean = float(np.mean(values, dtype=np.float64))
    if mean * np.log(2) < 2:
        return 0
    return int(min(62, np.floor(np.log2(mean * np.log(2)))))


def timestamp_error_bound(shift: int) -> int:
    """Largest error, in ticks, of a decoded timestamp at quantisation ``shift``."""
    return 0 if shift == 0 else 1 << (shift - 1)


def _differences(ts: np.ndarray, counts: np.ndarray, shift: int):
    """(values, is_first, base) of the coding (module docstring)."""
    q = ts >> np.int64(shift)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))[counts > 0]
    first = np.zeros(len(q), dtype=bool)
    first[starts] = True
    base = int(q[starts].min()) if len(starts) else 0
    values = np.empty(len(q), dtype=np.int64)
    values[1:] = q[1:] - q[:-1]
    values[first] = q[first] - base
    if (values < 0).any():
        raise ValueError("timestamps must not decrease within a group")
    return values, first, base


def _pack_bits(bits: np.ndarray) -> bytes:
    return np.packbits(bits.astype(np.uint8), bitorder="little").tobytes()


def _fixed_width_bits(values: np.ndarray, width: int) -> np.ndarray:
    """The low ``width`` bits of each value, LSB first, concatenated (bool)."""
    if width == 0 or len(values) == 0:
        return np.zeros(0, dtype=np.uint8)
    as_bytes = np.ascontiguousarray(values, dtype="<u8").view(np.uint8).reshape(-1, 8)
    return np.unpackbits(as_bytes, axis=1, bitorder="little")[:, :width].reshape(-1)


def _read_fixed_width(block: bytes, offset: int, count: int, width: int):
    """``(values, next offset)`` of a byte-padded section of ``count`` ``width``-bit
    values (the inverse of :func:`_fixed_width_bits`)."""
    size = (count * width + 7) // 8
    if len(block) < offset + size:
        raise ValueError("timestamp block cut short (remainders)")
    if width == 0 or count == 0:
        return np.zeros(count, dtype=np.int64), offset + size
    bits = np.unpackbits(np.frombuffer(block, np.uint8, size, offset), bitorder="little")
    padded = np.zeros((count, 64), dtype=np.uint8)
    padded[:, :width] = bits[:count * width].reshape(count, width)
    values = np.packbits(padded, axis=1, bitorder="little").view("<u8").reshape(-1)
    return values.astype(np.int64), offset + size


def encode_timestamps(timestamps: np.ndarray, counts: np.ndarray, *, shift: int = 0) -> bytes:
    """The timestamp block of one interval.

    ``timestamps``: int64 ticks, grouped — group 0's packets in sending order, then group
    1's, … (``counts[i]`` packets in group i, the OPA words' counts). ``shift``: lossy
    quantisation (0 = lossless).
    """
    ts = np.asarray(timestamps, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    if int(counts.sum()) != len(ts):
        raise ValueError(f"counts add up to {int(counts.sum())}, not {len(ts)} timestamps")
    if not 0 <= shift <= 32:
        raise ValueError(f"shift must be 0..32, not {shift}")
    values, first, base = _differences(ts, counts, shift)
    k_first, k_gap = rice_parameter(values[first]), rice_parameter(values[~first])
    widths = np.where(first, k_first, k_gap)
    quotients = values >> widths
    escaped = quotients >= RICE_ESCAPE
    unary_len = np.minimum(quotients, RICE_ESCAPE) + 1
    unary = np.ones(int(unary_len.sum()), dtype=bool)
    unary[np.cumsum(unary_len) - 1] = False
    header = _HEADER.pack(TS_BLOCK_VERSION, shift, k_first, k_gap, len(ts),
                          int(escaped.sum()), base)
    return (header + _pack_bits(_fixed_width_bits(values[first], k_first))
            + _pack_bits(_fixed_width_bits(values[~first], k_gap)) + _pack_bits(unary)
            + values[escaped].astype("<u8").tobytes())


def decode_timestamps(block: bytes, counts: np.ndarray) -> tuple[np.ndarray, int]:
    """``(timestamps, error_bound)`` of a block: int64 ticks in the order encoded, and the
    largest error of any of them in ticks (0 for a lossless block). ``ValueError`` when
    the block does not match ``counts`` or is cut short."""
    counts = np.asarray(counts, dtype=np.int64)
    if len(block) < _HEADER.size:
        raise ValueError("timestamp block shorter than its header")
    version, shift, k_first, k_gap, n, escapes, base = _HEADER.unpack_from(block)
    if version != TS_BLOCK_VERSION:
        raise ValueError(f"timestamp block version {version}, expected {TS_BLOCK_VERSION}")
    if n != int(counts.sum()):
        raise ValueError(f"timestamp block holds {n} timestamps, the counts say "
                         f"{int(counts.sum())}")
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))[counts > 0]
    first = np.zeros(n, dtype=bool)
    first[starts] = True
    widths = np.where(first, k_first, k_gap).astype(np.int64)
    remainders = np.empty(n, dtype=np.int64)
    remainders[first], offset = _read_fixed_width(block, _HEADER.size, int(first.sum()),
                                                  k_first)
    remainders[~first], offset = _read_fixed_width(block, offset, int((~first).sum()), k_gap)
    unary = np.unpackbits(np.frombuffer(block, np.uint8, offset=offset), bitorder="little")
    ends = np.flatnonzero(unary == 0)
    if len(ends) < n:
        raise ValueError("timestamp block cut short (quotients)")
    ends = ends[:n]
    quotients = np.diff(np.concatenate(([-1], ends))) - 1
    offset += (int(ends[-1]) + 8) // 8 if n else 0
    escaped = quotients >= RICE_ESCAPE
    if int(escaped.sum()) != escapes or len(block) < offset + 8 * escapes:
        raise ValueError("timestamp block cut short (escapes)")
    values = (quotients << widths) | remainders
    values[escaped] = np.frombuffer(block, "<u8", escapes, offset).astype(np.int64)
    q = values.copy()
    q[first] += base
    group_id = np.cumsum(first) - 1
    # Within a group q is the running sum of its values: a global cumsum minus the
    # cumsum before each group's first packet.
    total = np.cumsum(q)
    before = (total - q)[first]
    q = total - before[group_id]
    ts = q << np.int64(shift)
    if shift:
        ts += 1 << (shift - 1)
    return ts, timestamp_error_bound(shift)
