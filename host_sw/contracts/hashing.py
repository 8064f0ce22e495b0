# SPDX-License-Identifier: BSD-2-Clause
"""The hash contract: header window, invariant-field byte masks, H3 matrices and the
non-linear S-box layer in front of the secondary hashes.

This module is the one definition that the gateware (``hw/hash_h3.py``), the golden model
(:mod:`host_sw.model.golden_lda_rda_lds`) and the host estimators import (docs/DESIGN.md, "Where each
contract lives"); it is in the contracts layer and imports neither Amaranth nor anything
above it. It is specified byte for byte in ``docs/SPEC.md`` §1–§3. How the hash outputs
are split into each kind's fields (LDA bank and row, LDS offset and digest, RDA bucket)
is :mod:`host_sw.contracts.hash_fields`.

Data flow (docs/DESIGN.md, "Data flow of a packet"): header tap → **H3 hasher** →
classifier/sampler → update pipeline. Every frame yields one 64-bit *packet hash* ``P``
computed over its masked header window; ``P`` is the RDA packet ID. The secondary
hashes — the field hash ``F``, the RDA bucket hashes and the LDS offset hashes — are
``H3'(S(P))`` (:class:`SboxH3`) with their own matrices, where ``S`` replaces every 4-bit
nibble through the PRESENT S-box (:data:`RDA_SBOX`). H3 is linear over GF(2); ``S``
makes them non-linear (:mod:`host_sw.contracts.hash_fields` says why each needs it). In
hardware ``S`` costs one LUT4 per output bit. The LDS flow hash of row ``r`` is
``H3_flow[r](window & flow_mask)`` (window → 32 bits).

H3 (Carter–Wegman; Ramakrishna et al. 1997): for input bits ``x_i``, ``H(x) = XOR of
Q[i] for every i with x_i = 1``. Input bit ``i`` is bit ``i % 8`` (LSB = 0) of byte
``i // 8`` of the input (the window, or the 8 little-endian bytes of an ID). The rows
``Q[i]`` come from SplitMix64, seeded per purpose, so any implementation can rebuild them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from host_sw import kernels

__all__ = [
    "RDA_SBOX", "sbox_nibbles64", "sbox_nibbles64_scalar", "sbox_table_xor", "SboxH3",
    "MASK64", "GOLDEN_GAMMA", "mix64", "mix64_array", "HashPurpose", "h3_rows", "H3",
    "ETHERTYPE_IPV4", "ETHERTYPE_IPV6", "ETHERTYPE_CONTROL", "MIN_FRAME_BYTES",
    "DEFAULT_WINDOW_BYTES", "FLOW_KEY_BYTES", "FrameClass", "ByteMask", "default_masks",
    "header_windows", "classify_frame",
    "table_xor", "PAIR_TABLE_MIN_ROWS", "TABLE_BLOCK_ROWS", "COMPILED_MIN_ROWS", "compiled",
]

MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15

ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
#: Control/export frames (``docs/SPEC.md`` §6: EtherType 0x88B5, IEEE local experimental 1).
ETHERTYPE_CONTROL = 0x88B5
#: Frames shorter than this (without FCS) are runts: not counted, counted in status.
MIN_FRAME_BYTES = 60
#: Bytes of the frame the hash sees. Bytes past the end of a shorter frame read as zero.
DEFAULT_WINDOW_BYTES = 64
#: Window bytes the default flow masks need: the IPv6 5-tuple ends with the destination
#: port at bytes 56–57 (the IPv4 one at 36–37).
FLOW_KEY_BYTES = 58
#: Batches of at least this many 64-bit IDs are hashed with 16-bit (byte pair) tables; the
#: result is identical, only faster (an implementation detail, not part of the contract).
PAIR_TABLE_MIN_ROWS = 8192
#: Rows per block in :func:`table_xor` (keeps a block of inputs and the running XOR in
#: cache while each table is applied; measured best for 64-byte windows).
TABLE_BLOCK_ROWS = 8192


#: SplitMix64's finaliser multipliers.
_MIX_M1, _MIX_M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def mix64(z: int) -> int:
    """SplitMix64's finaliser (Steele, Lea, Flood 2014), on Python ints modulo 2**64."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * _MIX_M1) & MASK64
    z = ((z ^ (z >> 27)) * _MIX_M2) & MASK64
    return z ^ (z >> 31)


def mix64_array(values) -> np.ndarray:
    """:func:`mix64` over a uint64 array (wrapping arithmetic); a bijection. Returns a new
    array. The synthetic traffic's fast mode and the estimators' sketches use it."""
    z = np.array(values, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z ^= z >> np.uint64(30)
        z *= np.uint64(_MIX_M1)
        z ^= z >> np.uint64(27)
        z *= np.uint64(_MIX_M2)
        z ^= z >> np.uint64(31)
    return z


class HashPurpose(enum.IntEnum):
    """Which H3 function a matrix belongs to; part of its seed derivation."""
    PACKET = 1      # window → 64-bit packet hash P
    RDA_BUCKET = 2  # 64-bit ID → 32 bits, one matrix per RDA bank
    LDS_FLOW = 3    # flow-masked window → 32 bits, one matrix per LDS row
    FIELD = 4       # S(P) → 64-bit field hash F (LDA and LDS fields; docstring)
    LDS_OFFSET = 5  # S(P) → 32 bits, one matrix per LDS row: the offset hash h'_r


@lru_cache(maxsize=256)
def _h3_rows_cached(seed: int, purpose: int, index: int, in_bits: int,
                    out_bits: int) -> tuple[int, ...]:
    state = mix64((seed & MASK64) ^ mix64((purpose << 16) | index))
    out_mask = (1 << out_bits) - 1
    rows = []
    for _ in range(in_bits):
        state = (state + GOLDEN_GAMMA) & MASK64
        rows.append(mix64(state) & out_mask)
    return tuple(rows)


def h3_rows(seed: int, purpose: HashPurpose, index: int, in_bits: int,
            out_bits: int) -> tuple[int, ...]:
    """The H3 matrix: one ``out_bits``-wide row per input bit.

    ``state0 = mix64(seed XOR mix64((purpose << 16) | index))``; row ``i`` is
    ``mix64(state0 + (i + 1) * GOLDEN_GAMMA) mod 2**out_bits`` (SplitMix64's stream).
    """
    if not 0 <= seed <= MASK64:
        raise ValueError(f"seed must be a 64-bit unsigned integer, not {seed}")
    if not 0 <= index < (1 << 16):
        raise ValueError(f"hash index must be in 0..65535, not {index}")
    if not 1 <= out_bits <= 64:
        raise ValueError(f"H3 output width must be 1..64 bits, not {out_bits}")
    if in_bits < 1:
        raise ValueError(f"H3 input width must be positive, not {in_bits}")
    return _h3_rows_cached(seed, int(purpose), index, in_bits, out_bits)


def _numpy_table_xor(columns, items, block_rows):
    n = columns.shape[0]
    out = np.zeros(n, dtype=np.uint64)
    for start in range(0, n, block_rows):
        block = columns[start:start + block_rows]
        acc = out[start:start + block_rows]
        for j, table in items:
            acc ^= table[block[:, j]]
    return out


def _table_xor_loop(columns, which, tables, out):
    """The loop :func:`table_xor` compiles (numba): every lookup of a row at once."""
    for i in range(columns.shape[0]):
        acc = np.uint64(0)
        for t in range(which.shape[0]):
            acc ^= tables[t, columns[i, which[t]]]
        out[i] = acc


_COMPILED = {}


def compiled(fn):
    """The compiled form of the loop ``fn``: its C loop (:mod:`host_sw.kernels`, built
    at install), else ``fn`` compiled by numba (cached on disk beside this package),
    else ``None`` (the callers' numpy paths give the same bits). ``LDA_LOOPS`` can pick
    one (:func:`host_sw.kernels.choice`). numba is imported on first use, so that only
    the runs that need it pay for its import (about 0.2 s) and for loading its cached
    code (about 0.17 s)."""
    if fn not in _COMPILED:
        what = kernels.implementation()
        if what == "c":
            _COMPILED[fn] = kernels.LOOPS[fn.__name__]
        elif what == "numba":
            import numba
            _COMPILED[fn] = numba.njit(cache=True, nogil=True)(fn)
        else:
            _COMPILED[fn] = None
    return _COMPILED[fn]

#: Rows from which :func:`table_xor` runs its compiled kernel (:func:`compiled`):
#: numpy's table gathers cost one pass over the rows per table, the kernel one pass in all.
COMPILED_MIN_ROWS = 4096


def table_xor(columns: np.ndarray, tables: dict[int, np.ndarray],
              block_rows: int = TABLE_BLOCK_ROWS) -> np.ndarray:
    """``XOR over j of tables[j][columns[:, j]]`` for every row: the vectorised H3 kernel.

    ``columns`` is ``(N, W)`` unsigned integers (bytes, or byte pairs as 16-bit values),
    ``tables`` maps a column to its lookup table (uint64; columns without a table are
    ignored). With the compiled loops (:func:`compiled`) and at least
    :data:`COMPILED_MIN_ROWS` rows, one compiled loop over the rows does every lookup of
    a row (numpy needs a gather and an XOR pass per table, about 6 ns a lookup against
    1); otherwise rows are processed in
    blocks of ``block_rows`` so that a block of input and its running XOR stay in cache
    while each table is applied. Both give the same bits.
    """
    items = list(tables.items())
    n = columns.shape[0]
    kernel = compiled(_table_xor_loop) if n >= COMPILED_MIN_ROWS and items else None
    if kernel is None:
        return _numpy_table_xor(columns, items, block_rows)
    which = np.array([j for j, _ in items], dtype=np.int64)
    stacked = np.stack([np.asarray(t, dtype=np.uint64) for _, t in items])
    out = np.empty(n, dtype=np.uint64)
    kernel(columns, which, stacked, out)
    return out


class H3:
    """An H3 function over ``in_bytes`` bytes, evaluated scalar or vectorised.

    The vectorised form uses one 256-entry table per input byte (the XOR of the rows of
    the byte's set bits), so hashing N inputs costs one gather per *unmasked* byte.

    Parameters
    ----------
    seed, purpose, index:
        Select the matrix (see :func:`h3_rows`).
    in_bytes:
        Input width in bytes.
    out_bits:
        Output width (≤ 64).
    byte_mask:
        Optional; input bytes whose mask is False are ignored (treated as zero).
    """

    def __init__(self, *, seed: int, purpose: HashPurpose, index: int = 0,
                 in_bytes: int, out_bits: int, byte_mask=None):
        self.in_bytes = in_bytes
        self.out_bits = out_bits
        self.rows = h3_rows(seed, purpose, index, in_bytes * 8, out_bits)
        rows = np.array(self.rows, dtype=np.uint64).reshape(in_bytes, 8)
        values = np.arange(256, dtype=np.uint16)
        tables = np.zeros((in_bytes, 256), dtype=np.uint64)
        for bit in range(8):
            sel = ((values >> bit) & 1).astype(bool)
            tables[:, sel] ^= rows[:, bit:bit + 1]
        if byte_mask is not None:
            byte_mask = np.asarray(byte_mask, dtype=bool)
            if byte_mask.shape != (in_bytes,):
                raise ValueError(f"byte mask has {byte_mask.size} entries, the input "
                                 f"has {in_bytes} bytes")
            tables[~byte_mask] = 0
            self.byte_mask = byte_mask
        else:
            self.byte_mask = np.ones(in_bytes, dtype=bool)
        self.tables = tables
        self._live = np.flatnonzero(self.byte_mask)
        self._pairs = None

    def scalar(self, data: bytes) -> int:
        """Reference evaluation, bit by bit, straight from the definition."""
        if len(data) != self.in_bytes:
            raise ValueError(f"H3 input is {self.in_bytes} bytes, got {len(data)}")
        h = 0
        for i, byte in enumerate(data):
            if not self.byte_mask[i]:
                continue
            for bit in range(8):
                if (byte >> bit) & 1:
                    h ^= self.rows[8 * i + bit]
        return h

    def __call__(self, data: np.ndarray) -> np.ndarray:
        """Hash each row of an ``(N, in_bytes)`` uint8 array; returns uint64 ``(N,)``."""
        data = np.asarray(data)
        if data.ndim != 2 or data.shape[1] != self.in_bytes or data.dtype != np.uint8:
            raise ValueError(f"expected an (N, {self.in_bytes}) uint8 array, got "
                             f"{data.shape} {data.dtype}")
        return table_xor(data, {int(b): self.tables[b] for b in self._live})

    def pair_tables(self) -> dict[int, np.ndarray]:
        """65536-entry tables for byte pairs ``(2j, 2j+1)``, by pair index ``j``.

        Entry ``v`` (the pair read as a little-endian 16-bit integer, i.e.
        ``byte[2j] | byte[2j+1] << 8``) is ``tables[2j][v & 255] ^ tables[2j+1][v >> 8]``.
        Pairs with both bytes masked are absent. Built on first use (512 KiB per pair);
        worth it for short inputs such as 64-bit IDs (for 64-byte windows the 256-entry
        byte tables, which stay in the first-level cache, are faster).
        """
        if self._pairs is None:
            if self.in_bytes % 2:
                raise ValueError(f"pair tables need an even input width, not {self.in_bytes}")
            pairs = {}
            for j in range(self.in_bytes // 2):
                lo, hi = 2 * j, 2 * j + 1
                if not (self.byte_mask[lo] or self.byte_mask[hi]):
                    continue
                pairs[j] = (self.tables[hi][:, None] ^ self.tables[lo][None, :]).reshape(-1)
            self._pairs = pairs
        return self._pairs

    def of_u64(self, values: np.ndarray) -> np.ndarray:
        """Hash 64-bit integers (their 8 little-endian bytes); requires ``in_bytes == 8``."""
        if self.in_bytes != 8:
            raise ValueError("of_u64 needs an H3 over 8 input bytes")
        values = np.ascontiguousarray(values, dtype=np.uint64).reshape(-1)
        if not np.little_endian:  # pragma: no cover
            values = values.byteswap()
        if len(values) >= PAIR_TABLE_MIN_ROWS:
            return table_xor(values.view(np.uint16).reshape(-1, 4), self.pair_tables())
        return self(values.view(np.uint8).reshape(-1, 8))  # the 8 little-endian bytes


# ---------------------------------------------------------------------------------------
# Header window and byte masks of invariant fields
# ---------------------------------------------------------------------------------------

class FrameClass(enum.IntEnum):
    """What the header tap decides about a frame (at its end)."""
    IPV4 = 0       # counted (if sampled); IPv4 masks
    IPV6 = 1       # counted (if sampled); IPv6 masks
    NON_IP = 2     # not counted; status counter
    RUNT = 3       # shorter than MIN_FRAME_BYTES; not counted; status counter
    ERRORED = 4    # error flag at end of frame; not counted; status counter
    CONTROL = 5    # EtherType 0x88B5: interval control/export, never counted


@dataclass(frozen=True)
class ByteMask:
    """A window-sized byte mask: ``True`` bytes take part in a hash."""
    bits: tuple[bool, ...]

    @classmethod
    def keep(cls, window_bytes: int, *, ranges) -> "ByteMask":
        bits = [False] * window_bytes
        for lo, hi in ranges:
            for i in range(lo, min(hi, window_bytes)):
                bits[i] = True
        return cls(tuple(bits))

    def as_int(self) -> int:
        """Bit ``i`` set when byte ``i`` is kept (the CSR encoding)."""
        return sum(1 << i for i, b in enumerate(self.bits) if b)

    @classmethod
    def from_int(cls, value: int, window_bytes: int) -> "ByteMask":
        return cls(tuple(bool((value >> i) & 1) for i in range(window_bytes)))

    def as_array(self) -> np.ndarray:
        return np.array(self.bits, dtype=bool)


def default_masks(window_bytes: int = DEFAULT_WINDOW_BYTES) -> dict[str, ByteMask]:
    """The default masks, by name: ``packet_ipv4``, ``packet_ipv6``, ``flow_ipv4``,
    ``flow_ipv6``.

    Packet masks keep every byte that no router on the path rewrites: they drop the MAC
    addresses (bytes 0–11), IPv4 TOS (15), TTL (22) and header checksum (24–25); IPv6
    bytes 14–15 (version/traffic class/flow-label top, byte-granular) and hop limit (21).
    Flow masks keep the 5-tuple of an option-less IPv4 header / an IPv6 header: protocol
    or next header, addresses and the two L4 ports.

    Any window size (``docs/SPEC.md`` §2, "Windows other than 64 bytes"): the packet masks
    keep every byte from 26 (IPv4) / 22 (IPv6) to the window's end — those bytes are L4
    header and payload, which no router rewrites — so a 72-byte window hashes bytes 64–71
    too; the flow masks are the same bytes whatever the window. A window shorter than a
    range cuts it: bytes at or past ``window_bytes`` are never kept (a window below
    :data:`FLOW_KEY_BYTES` cuts the IPv6 flow key, which an LDS or RLI configuration
    refuses unless its flow masks are given explicitly).
    """
    w = window_bytes
    return {
        "packet_ipv4": ByteMask.keep(w, ranges=[(12, 15), (16, 22), (23, 24), (26, w)]),
        "packet_ipv6": ByteMask.keep(w, ranges=[(12, 14), (16, 21), (22, w)]),
        "flow_ipv4": ByteMask.keep(w, ranges=[(23, 24), (26, 38)]),
        "flow_ipv6": ByteMask.keep(w, ranges=[(20, 21), (22, 58)]),
    }


def header_windows(frames, window_bytes: int = DEFAULT_WINDOW_BYTES) -> np.ndarray:
    """The header windows of a list of frames (bytes, without FCS): ``(N, window)``
    uint8, zero past the end of a shorter frame."""
    out = np.zeros((len(frames), window_bytes), dtype=np.uint8)
    for i, frame in enumerate(frames):
        head = bytes(frame[:window_bytes])
        out[i, :len(head)] = np.frombuffer(head, dtype=np.uint8)
    return out


def classify_frame(frame: bytes, *, error: bool = False,
                   min_frame_bytes: int = MIN_FRAME_BYTES) -> FrameClass:
    """The tap's decision, in priority order: errored, runt, control, IPv4, IPv6, non-IP.

    IPv4 needs EtherType 0x0800 and version nibble 4; IPv6 needs 0x86DD and version 6.
    """
    if error:
        return FrameClass.ERRORED
    if len(frame) < min_frame_bytes:
        return FrameClass.RUNT
    ethertype = (frame[12] << 8) | frame[13]
    if ethertype == ETHERTYPE_CONTROL:
        return FrameClass.CONTROL
    version = frame[14] >> 4
    if ethertype == ETHERTYPE_IPV4 and version == 4:
        return FrameClass.IPV4
    if ethertype == ETHERTYPE_IPV6 and version == 6:
        return FrameClass.IPV6
    return FrameClass.NON_IP


# ---------------------------------------------------------------------------------------
# The non-linear layer: nibble S-box, then H3
# ---------------------------------------------------------------------------------------

#: The 4-bit S-box of the PRESENT block cipher (Bogdanov et al., CHES 2007): the nonlinear
#: layer in front of the secondary hashes (module docstring).
RDA_SBOX = (0xC, 0x5, 0x6, 0xB, 0x9, 0x0, 0xA, 0xD, 0x3, 0xE, 0xF, 0x8, 0x4, 0x7, 0x1, 0x2)

_SBOX_BYTE = np.array([(RDA_SBOX[b >> 4] << 4) | RDA_SBOX[b & 0xF] for b in range(256)],
                      dtype=np.uint8)


def sbox_nibbles64(ids: np.ndarray) -> np.ndarray:
    """``S(ID)``: every nibble of each 64-bit ID through :data:`RDA_SBOX`."""
    ids = np.ascontiguousarray(ids, dtype=np.uint64)
    return _SBOX_BYTE[ids.view(np.uint8)].view(np.uint64).reshape(ids.shape)


def sbox_nibbles64_scalar(value: int) -> int:
    """``S(x)`` of one 64-bit integer (the reference of :func:`sbox_nibbles64`)."""
    substituted = 0
    for i in range(16):
        substituted |= RDA_SBOX[(value >> (4 * i)) & 0xF] << (4 * i)
    return substituted


def _sbox_xor_loop(ids, sbox, tables, out):
    """The loop :func:`sbox_table_xor` compiles (numba): per ID its eight substituted
    bytes, then every output's eight table lookups."""
    sb = np.empty(8, np.int64)
    for i in range(ids.shape[0]):
        v = ids[i]
        for k in range(8):
            sb[k] = sbox[np.int64((v >> np.uint64(8 * k)) & np.uint64(255))]
        for h in range(tables.shape[0]):
            acc = np.uint64(0)
            for k in range(8):
                acc ^= tables[h, k, sb[k]]
            out[h, i] = acc


def sbox_table_xor(ids: np.ndarray, tables: np.ndarray) -> np.ndarray | None:
    """``H3(S(ids))`` of every 64-bit ID for each of ``tables`` (uint64 ``(H, 8, 256)``:
    an H3 function's byte tables, :attr:`H3.tables`) as uint64 ``(H, N)``, in one
    compiled pass (the S-box layer and all lookups of an ID at once; numpy needs a
    gather per byte and table). ``None`` without numba or below
    :data:`COMPILED_MIN_ROWS` IDs (the callers' numpy paths give the same bits)."""
    ids = np.ascontiguousarray(ids, dtype=np.uint64).reshape(-1)
    kernel = compiled(_sbox_xor_loop) if len(ids) >= COMPILED_MIN_ROWS else None
    if kernel is None:
        return None
    out = np.empty((tables.shape[0], len(ids)), np.uint64)
    kernel(ids, _SBOX_BYTE, np.ascontiguousarray(tables, dtype=np.uint64), out)
    return out


class SboxH3:
    """``H3[purpose, index](S(x))`` of a 64-bit ``x``: the nibble S-box layer, then a
    second (linear) H3 layer — the non-linear hash of the packet hash ``P`` that the RDA
    bucket hashes, the field hash ``F`` and the LDS offset hashes share.

    ``of_u64`` hashes a uint64 array (returns uint64), :meth:`scalar` one Python int from
    the definition.
    """

    def __init__(self, *, seed: int, purpose: HashPurpose, index: int = 0,
                 out_bits: int):
        self.h3 = H3(seed=seed, purpose=purpose, index=index, in_bytes=8, out_bits=out_bits)

    def of_u64(self, values: np.ndarray) -> np.ndarray:
        got = sbox_table_xor(values, self.h3.tables[None])
        if got is not None:
            return got[0]
        return self.h3.of_u64(sbox_nibbles64(values))

    def scalar(self, value: int) -> int:
        """Reference evaluation from the definition (pure Python)."""
        return self.h3.scalar(sbox_nibbles64_scalar(value).to_bytes(8, "little"))
