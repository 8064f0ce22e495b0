# SPDX-License-Identifier: BSD-2-Clause
"""Streaming capture reader: a pcap or pcapng file as a sequence of vectorised chunks
(timestamps, header windows, frame classes), in memory bounded by the chunk size
whatever the capture's size.

Data flow (docs/DESIGN.md, "offline analysis"; model layer): capture file ► **this
module** ► :class:`CaptureChunk` ► golden hashes and synopses
(:mod:`host_sw.estimators.offline_stream`). :mod:`host_sw.model.pcap` keeps the
whole-file reader (:func:`~host_sw.model.pcap.read_pcap`, every frame's bytes) for small
captures and for writing.

Why hand-written: the published readers hand out one packet per Python call (dpkt's
``Reader``, scapy's ``RawPcapReader``, libpcap bindings), which costs 1–5 µs a packet
before any hashing: 20 million packets would take a minute just to be listed. Here a
block of the file (``chunk_bytes``, 16 MiB by default) is read at once and the record
offsets are found with numpy, the record headers and the first ``window_bytes`` of every
frame gathered in one fancy-indexing step (``docs/BENCHMARKS.md``, "Offline analysis of
two captures", has the measured figures of the candidates).

Finding the records of a classic pcap block is a chain (each header gives the length of
its record). The fast path guesses the record starts as the positions whose bytes match
the first record's seconds field in its two high bytes (constant for 18 hours; too common
a value — zero, in captures timed from 0 — and it walks instead) and whose
fraction, captured and original length are plausible; it accepts the guess only when
the guessed records chain exactly (every record ends where the next guessed one starts,
the last one at the block's end), and otherwise walks the block header by header (a
Python loop, about 3 million records a second). The result is exact either way: a guess
is used only when it is the chain. With the compiled loops
(:func:`~host_sw.contracts.hashing.compiled`: C, or numba), blocks of a MiB or more are
walked and their records' headers and windows extracted by two compiled loops instead
(:func:`_walk_loop`, :func:`_extract_loop`: one pass each, where numpy needs a pass per
gather and per window byte past the shortest frame; the same records and bytes,
``tests/model/test_pcap_stream.py``). Given :class:`WindowHashes`, the compiled extraction
also classifies each frame and computes its H3 hashes from the block's bytes in the same
pass, copying no window unless asked (:func:`_extract_hash_loop`; the offline analysis'
packet and LDS row hashes). pcapng blocks are walked the same way (their own
lengths; 4-byte aligned). Timestamps are exact int64 ns (as :mod:`host_sw.model.pcap`).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from host_sw.contracts.hashing import (
    COMPILED_MIN_ROWS, DEFAULT_WINDOW_BYTES, ETHERTYPE_CONTROL, ETHERTYPE_IPV4,
    ETHERTYPE_IPV6, MIN_FRAME_BYTES, FrameClass, compiled, sbox_table_xor,
)
from host_sw.model.pcap import MAGIC_NS, MAGIC_US, PCAPNG_BOM, PCAPNG_SHB, CaptureError

__all__ = ["CaptureChunk", "WindowHashes", "iter_capture", "warm_compiled",
           "capture_linktype", "classify_windows",
           "DEFAULT_CHUNK_BYTES", "walk_classic", "walk_pcapng", "PcapngInterface",
           "ByteRange", "classic_ranges", "record_start", "ranges_chain"]

#: Bytes of the file read at once (the reader's memory is a few times this).
DEFAULT_CHUNK_BYTES = 16 << 20

_MAX_CAPLEN = 1 << 18
#: Above this mean record size the header-by-header walk is cheaper than the guess
#: (which looks at every byte).
_GUESS_MAX_MEAN_RECORD = 400
#: The guess gives up when more than one byte position in this many matches the seconds'
#: high bytes: records are at least 16 + 14 bytes apart, so most matches would be payload
#: (captures whose seconds are below 65 536 match every pair of zero bytes), and
#: gathering a header at each of them costs more memory and time than the walk.
_GUESS_MAX_DENSITY = 32


#: int64's bound: every timestamp is int64 ns.
_INT64 = 1 << 63
#: The fixed fields' bytes (with the 12 bytes of type, length and trailing length) of
#: pcapng blocks: Enhanced Packet (6), Packet (2), Interface Description (1), Section
#: Header (``PCAPNG_SHB``).
_PCAPNG_MIN_LENGTH = {6: 32, 2: 32, 1: 20, PCAPNG_SHB: 28}


def _capture_error(message: str) -> CaptureError:
    return CaptureError(message)


@dataclass(eq=False)
class CaptureChunk:
    """Consecutive records of a capture.

    Attributes
    ----------
    timestamps_ns:
        int64 ``(n,)`` — ns since the epoch.
    windows:
        uint8 ``(n, window_bytes)`` — the first bytes of each frame, zero past its end
        (``None`` when :func:`iter_capture` was given hashes that keep no windows and
        computed them from the block).
    classes:
        int64 ``(n,)`` — :class:`~host_sw.contracts.hashing.FrameClass` (the tap's
        decision, :func:`~host_sw.contracts.hashing.classify_frame`).
    lengths:
        int64 ``(n,)`` — captured length of each frame.
    original_lengths:
        int64 ``(n,)`` — on-wire length.
    hashes:
        uint64 ``(H, n)`` — the :class:`WindowHashes` of each window, when
        :func:`iter_capture` was given some, else ``None``.
    """
    timestamps_ns: np.ndarray
    windows: np.ndarray | None
    classes: np.ndarray
    lengths: np.ndarray
    original_lengths: np.ndarray
    hashes: np.ndarray | None = None

    def __len__(self):
        return len(self.timestamps_ns)


def classify_windows(windows: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """:func:`~host_sw.contracts.hashing.classify_frame` of every frame, vectorised
    (from its window and captured length; no frame of a capture is errored)."""
    ethertype = (windows[:, 12].astype(np.int64) << 8) | windows[:, 13]
    version = windows[:, 14] >> 4
    cls = np.full(len(windows), int(FrameClass.NON_IP), np.int64)
    cls[(ethertype == ETHERTYPE_IPV6) & (version == 6)] = FrameClass.IPV6
    cls[(ethertype == ETHERTYPE_IPV4) & (version == 4)] = FrameClass.IPV4
    cls[ethertype == ETHERTYPE_CONTROL] = FrameClass.CONTROL
    cls[lengths < MIN_FRAME_BYTES] = FrameClass.RUNT
    return cls


def _gather(buf: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """``(n, width)`` bytes from ``starts``; ``buf`` must extend ``width`` bytes past
    the last start (:class:`_Blocks` pads). Each row is one ``width``-byte void item of
    a view with a 1-byte stride: one copy per row (about ten times faster than indexing
    a ``(positions, width)`` uint8 view)."""
    rows = np.ndarray(shape=(len(buf) - width + 1,), dtype=np.dtype((np.void, width)),
                      buffer=buf, strides=(1,))
    return rows[starts].view(np.uint8).reshape(len(starts), width)


def _clear_past_end(windows: np.ndarray, lengths: np.ndarray) -> None:
    """Zero the window bytes past each frame's captured end (the next record's bytes)."""
    if not len(lengths):
        return
    for j in range(int(lengths.min()), windows.shape[1]):   # a frame ends before j
        windows[:, j] *= lengths > j


def _fields(head: np.ndarray, le: bool) -> np.ndarray:
    """The uint32 fields of ``(n, 4k)`` header bytes: ``(n, k)`` int64."""
    words = np.ascontiguousarray(head).view("<u4" if le else ">u4")
    return words.astype(np.int64)


class _Blocks:
    """The file read block by block into one reused buffer: the unread tail of the last
    block (a record cut by the block's end) moves to the front, the next block is read
    after it, and ``pad`` zero bytes follow the data (reads past a frame's end give
    zeros, masked anyway). No per-block copy of the data. The buffer has room for a
    tail of one record of up to :data:`_MAX_CAPLEN` bytes besides the block, so it is
    made once a pass: grown for every tail, each block's buffer was mapped and faulted
    in anew (4,096 page faults a 16 MiB block, about 10 ms of system time here)."""

    def __init__(self, f, chunk_bytes: int, pad: int, first: bytes, progress):
        self.f, self.chunk, self.pad, self.progress = f, chunk_bytes, pad, progress
        self.buf = np.zeros(len(first) + 16 + _MAX_CAPLEN + chunk_bytes + pad, np.uint8)
        self.buf[:len(first)] = np.frombuffer(first, np.uint8)
        self.end = len(first)

    def read(self) -> int:
        """Append the next block; the bytes read (0 at the end of the file)."""
        if self.end + self.chunk + self.pad > len(self.buf):   # a record > one block
            grown = np.zeros(self.end + self.chunk + self.pad, np.uint8)
            grown[:self.end] = self.buf[:self.end]
            self.buf = grown
        got = self.f.readinto(memoryview(self.buf)[self.end:self.end + self.chunk])
        if self.progress is not None:
            self.progress(got)
        self.end += got
        self.buf[self.end:self.end + self.pad] = 0
        return got

    def data(self) -> memoryview:
        return memoryview(self.buf)[:self.end]

    def consume(self, cut: int) -> None:
        """Drop the first ``cut`` bytes (the records handed out)."""
        tail = self.buf[cut:self.end].copy()
        self.buf[:len(tail)] = tail
        self.end = len(tail)


# ---------------------------------------------------------------------------------------
# classic pcap
# ---------------------------------------------------------------------------------------

def walk_classic(data: bytes, le: bool) -> tuple[np.ndarray, int]:
    """Record starts of complete records, header by header; and where the rest starts."""
    unpack = struct.Struct("<I" if le else ">I").unpack_from
    starts = []
    push = starts.append
    off, end = 0, len(data)
    while off + 16 <= end:
        nxt = off + 16 + unpack(data, off + 8)[0]
        if nxt > end:
            break
        push(off)
        off = nxt
    return np.array(starts, dtype=np.int64), off


def _chain(cand: np.ndarray, nxt: np.ndarray, end: int):
    """The records reachable from ``cand[0]`` when each record ``i`` ends at ``nxt[i]``:
    ``(starts, rest)``, or ``None`` when the chain leaves the guessed starts before the
    block's end. One Python step per guessed start that is not a record (rare)."""
    succ = np.searchsorted(cand, nxt)
    succ_ok = (succ < len(cand)) & (cand[np.minimum(succ, len(cand) - 1)] == nxt)
    straight = succ_ok & (succ == np.arange(1, len(cand) + 1))
    breaks = np.flatnonzero(~straight)
    runs, i = [], 0
    while True:
        j = int(breaks[np.searchsorted(breaks, i)])   # the last record of this run
        runs.append((i, j))
        if not succ_ok[j]:
            break
        i = int(succ[j])
    rest = int(nxt[j])
    if rest <= end - 16:               # a header after the last guess was missed
        return None
    if rest > end:                     # the last record continues in the next block
        last_i, last_j = runs[-1]
        runs[-1] = (last_i, last_j - 1)
        rest = int(cand[j])
    starts = np.concatenate([cand[a:b + 1] for a, b in runs])
    return starts, rest


def _guess_classic(buf: np.ndarray, end: int, le: bool, frac_limit: int):
    """The fast path of the module docstring: record starts, or ``None`` (walk)."""
    n = end - 15
    if n <= 0:
        return None
    at = 2 if le else 0           # the seconds' two high bytes, compared as one uint16
    value = buf[at:at + 2].view(np.uint16)[0]
    m = n // 2 * 2
    even = np.flatnonzero(buf[at:at + m].view(np.uint16) == value) * 2
    odd = np.flatnonzero(buf[at + 1:at + 1 + m].view(np.uint16) == value) * 2 + 1
    if len(even) + len(odd) > n // _GUESS_MAX_DENSITY:
        return None     # a common value (seconds < 65 536: zero bytes): walk instead
    cand = np.sort(np.concatenate([even, odd[odd < n], np.arange(m, n)]), kind="stable")
    fields = _fields(_gather(buf, cand, 16), le)
    frac, cap, orig = fields[:, 1], fields[:, 2], fields[:, 3]
    ok = (frac < frac_limit) & (cap <= _MAX_CAPLEN) & (orig >= cap)
    cand, cap = cand[ok], cap[ok].astype(np.int64)
    if not len(cand) or cand[0] != 0:
        return None
    return _chain(cand, cand + 16 + cap, end)


def _walk_loop(buf, end, le, out):
    """:func:`walk_classic` as a loop numba compiles: ``(records, rest)``, the starts
    in ``out``."""
    off = 0
    n = 0
    while off + 16 <= end:
        b = off + 8
        if le:
            cap = (np.int64(buf[b]) | (np.int64(buf[b + 1]) << 8)
                   | (np.int64(buf[b + 2]) << 16) | (np.int64(buf[b + 3]) << 24))
        else:
            cap = ((np.int64(buf[b]) << 24) | (np.int64(buf[b + 1]) << 16)
                   | (np.int64(buf[b + 2]) << 8) | np.int64(buf[b + 3]))
        nxt = off + 16 + cap
        if nxt > end:
            break
        out[n] = off
        n += 1
        off = nxt
    return n, off


def _extract_loop(buf, starts, le, fields, windows):
    """The four header fields of each record and its window, zero past its captured
    end (:func:`_gather`, :func:`_fields` and :func:`_clear_past_end` in one pass;
    unsigned indices: no negative-index check per byte)."""
    width = windows.shape[1]
    one, two, three = np.uint64(1), np.uint64(2), np.uint64(3)
    for i in range(starts.shape[0]):
        o = np.uint64(starts[i])
        for f in range(4):
            b = o + np.uint64(4 * f)
            if le:
                v = (np.int64(buf[b]) | (np.int64(buf[b + one]) << 8)
                     | (np.int64(buf[b + two]) << 16) | (np.int64(buf[b + three]) << 24))
            else:
                v = ((np.int64(buf[b]) << 24) | (np.int64(buf[b + one]) << 16)
                     | (np.int64(buf[b + two]) << 8) | np.int64(buf[b + three]))
            fields[i, f] = v
        m = min(fields[i, 2], width)
        row = windows[i]
        src = o + np.uint64(16)
        for j in range(m):
            row[j] = buf[src + np.uint64(j)]
        for j in range(m, width):
            row[j] = 0


def _extract_hash_loop(buf, starts, le, fields, classes, windows, keep_windows, which,
                       count, tables, hashes):
    """:func:`_extract_loop` and the frame class, with H3 hashes of each counted frame's
    window computed from the block's bytes in the same pass (:class:`WindowHashes`): no
    window is copied unless ``keep_windows``, and bytes past a frame's captured end are
    skipped (their table entry, the hash of a zero byte, is 0). numba: numpy would need
    one gather of the block and one XOR pass per live window byte and hash."""
    width = windows.shape[1]
    one, two, three = np.uint64(1), np.uint64(2), np.uint64(3)
    for i in range(starts.shape[0]):
        o = np.uint64(starts[i])
        for f in range(4):
            b = o + np.uint64(4 * f)
            if le:
                v = (np.int64(buf[b]) | (np.int64(buf[b + one]) << 8)
                     | (np.int64(buf[b + two]) << 16) | (np.int64(buf[b + three]) << 24))
            else:
                v = ((np.int64(buf[b]) << 24) | (np.int64(buf[b + one]) << 16)
                     | (np.int64(buf[b + two]) << 8) | np.int64(buf[b + three]))
            fields[i, f] = v
        cap = fields[i, 2]
        m = min(cap, width)
        src = o + np.uint64(16)
        if keep_windows:
            row = windows[i]
            for j in range(m):
                row[j] = buf[src + np.uint64(j)]
            for j in range(m, width):
                row[j] = 0
        ethertype = np.int64(0)
        if m > 13:
            ethertype = (np.int64(buf[src + np.uint64(12)]) << 8) | np.int64(
                buf[src + np.uint64(13)])
        version = np.int64(buf[src + np.uint64(14)]) >> 4 if m > 14 else np.int64(0)
        cls = np.int64(2)                                   # FrameClass.NON_IP
        if ethertype == 0x86DD and version == 6:
            cls = np.int64(1)                               # IPV6
        elif ethertype == 0x0800 and version == 4:
            cls = np.int64(0)                               # IPV4
        elif ethertype == 0x88B5:
            cls = np.int64(5)                               # CONTROL
        if cap < 60:
            cls = np.int64(3)                               # RUNT (MIN_FRAME_BYTES)
        classes[i] = cls
        for h in range(hashes.shape[0]):
            acc = np.uint64(0)
            if cls <= 1:
                for t in range(count[cls, h]):
                    j = which[cls, h, t]
                    if j < m:
                        acc ^= tables[cls, h, t, buf[src + np.uint64(j)]]
            hashes[h, i] = acc


@dataclass(frozen=True)
class WindowHashes:
    """H3 functions of the header window that :func:`iter_capture` computes while it
    extracts the records (:attr:`CaptureChunk.hashes`), per counted frame class
    (``0`` IPv4, ``1`` IPv6) and output ``h``: the live window bytes ``which[c, h,
    :count[c, h]]`` and their 256-entry tables ``tables[c, h, t]`` (the XOR of the
    tables of a frame's live bytes is the hash). Uncounted frames hash to 0."""
    which: np.ndarray       # int64 (2, H, L)
    count: np.ndarray       # int64 (2, H)
    tables: np.ndarray      # uint64 (2, H, L, 256)
    keep_windows: bool = True

    @classmethod
    def of(cls, per_class: list, keep_windows: bool = True) -> "WindowHashes":
        """From ``per_class[c][h]``: a dict ``{window byte: 256-entry table}`` per class
        (IPv4, IPv6) and output."""
        outputs = len(per_class[0])
        longest = max([len(t) for c in per_class for t in c] + [1])
        which = np.zeros((2, outputs, longest), np.int64)
        count = np.zeros((2, outputs), np.int64)
        tables = np.zeros((2, outputs, longest, 256), np.uint64)
        for c in range(2):
            for h, items in enumerate(per_class[c]):
                for t, (j, table) in enumerate(sorted(items.items())):
                    which[c, h, t], tables[c, h, t] = j, table
                count[c, h] = len(items)
        return cls(which, count, tables, keep_windows)

    def __call__(self, windows: np.ndarray, classes: np.ndarray) -> np.ndarray:
        """The hashes ``(H, n)`` of extracted windows (the same bits as the compiled
        pass; for blocks it does not run on)."""
        out = np.zeros((self.count.shape[1], len(windows)), np.uint64)
        for c in range(2):
            sel = np.flatnonzero(classes == c)
            if not len(sel):
                continue
            sub = windows[sel]
            for h in range(out.shape[0]):
                acc = np.zeros(len(sel), np.uint64)
                for t in range(self.count[c, h]):
                    acc ^= self.tables[c, h, t][sub[:, self.which[c, h, t]]]
                out[h, sel] = acc
        return out


#: Bytes of a block from which the compiled loops (C, or numba) find and
#: extract its records; numpy's guess and gathers otherwise (the same records and
#: bytes).
_COMPILED_MIN_BYTES = 1 << 20
#: Records of a block from which they are extracted (and hashed) by a compiled loop.
_COMPILED_MIN_RECORDS = 1024


def _compiled_reader():
    """The compiled ``(walk, extract, extract and hash)`` loops, or ``None`` without
    any (:func:`~host_sw.contracts.hashing.compiled`)."""
    walk = compiled(_walk_loop)
    return None if walk is None else (walk, compiled(_extract_loop),
                                      compiled(_extract_hash_loop))


def warm_compiled() -> None:
    """Load the compiled loops of a capture pass now (the C library in a millisecond;
    numba's cached code, where it runs them, in about 0.4 s of CPU time at a process's
    first call), so that worker processes forked afterwards share them instead of each
    loading them again."""
    reader = _compiled_reader()
    if reader is None:
        return
    buf = np.zeros(256, np.uint8)
    reader[0](buf, 0, True, np.zeros(1, np.int64))
    spec = WindowHashes.of([[{0: np.zeros(256, np.uint64)}]] * 2, keep_windows=False)
    for keep in (False, True):
        reader[2](buf, np.zeros(1, np.int64), True, np.zeros((1, 4), np.int64),
                  np.zeros(1, np.int64), np.zeros((1, 64), np.uint8), keep, spec.which,
                  spec.count, spec.tables, np.zeros((1, 1), np.uint64))
    sbox_table_xor(np.zeros(COMPILED_MIN_ROWS, np.uint64), np.zeros((1, 8, 256), np.uint64))


def _classic_records(blocks: _Blocks, le: bool, frac_limit: int, guess: bool):
    reader = _compiled_reader() if blocks.end >= _COMPILED_MIN_BYTES else None
    if reader is not None:
        out = np.empty(blocks.end // 16 + 1, np.int64)
        n, rest = reader[0](blocks.buf, blocks.end, le, out)
        return out[:n], int(rest)
    found = _guess_classic(blocks.buf, blocks.end, le, frac_limit) if guess else None
    return found if found is not None else walk_classic(blocks.data(), le)


def _classic_chunk(buf, starts, le, frac_ns, frac_limit, window_bytes, where,
                   hashes=None):
    reader = _compiled_reader() if len(starts) >= _COMPILED_MIN_RECORDS else None
    if reader is not None and hashes is not None:
        n = len(starts)
        fields = np.empty((n, 4), np.int64)
        classes = np.empty(n, np.int64)
        keep = hashes.keep_windows
        windows = np.empty((n if keep else 0, window_bytes), np.uint8)
        out = np.empty((hashes.count.shape[1], n), np.uint64)
        reader[2](buf, starts, le, fields, classes, windows, keep, hashes.which,
                  hashes.count, hashes.tables, out)
        sec, frac, cap, orig = fields.T
        _check_fraction(frac, frac_limit, starts, where)
        return CaptureChunk(sec * 1_000_000_000 + frac * frac_ns, windows if keep else None,
                            classes, cap, orig, out)
    if reader is not None:
        fields = np.empty((len(starts), 4), np.int64)
        windows = np.empty((len(starts), window_bytes), np.uint8)
        reader[1](buf, starts, le, fields, windows)
        sec, frac, cap, orig = fields.T
    else:
        sec, frac, cap, orig = _fields(_gather(buf, starts, 16), le).T
    _check_fraction(frac, frac_limit, starts, where)
    if reader is None:
        windows = _gather(buf, starts + 16, window_bytes)
        _clear_past_end(windows, cap)
    classes = classify_windows(windows, cap)
    return CaptureChunk(sec * 1_000_000_000 + frac * frac_ns, windows, classes, cap, orig,
                        None if hashes is None else hashes(windows, classes))


def _check_fraction(frac, frac_limit, starts, where) -> None:
    bad = np.flatnonzero(frac >= frac_limit)
    if len(bad):
        raise _capture_error(f"{where}: corrupt timestamp fraction {int(frac[bad[0]])} "
                             f"in the record at byte offset {int(starts[bad[0]])} of a block")


def _classic_format(head: bytes) -> tuple[bool, int, int]:
    """``(little-endian, ns per fraction unit, fraction limit)`` of a classic pcap."""
    magic_le = struct.unpack("<I", head[:4])[0]
    le = magic_le in (MAGIC_US, MAGIC_NS)
    magic = magic_le if le else struct.unpack(">I", head[:4])[0]
    frac_ns = 1 if magic == MAGIC_NS else 1000
    return le, frac_ns, 1_000_000_000 if frac_ns == 1 else 1_000_000


def _iter_classic(f, path, head, window_bytes, chunk_bytes, progress, hashes=None,
                  byte_range: "ByteRange | None" = None):
    le, frac_ns, frac_limit = _classic_format(head)
    first, reads = b"", None
    if byte_range is not None:         # the blocks of a one-pass reading (ByteRange)
        at = _CLASSIC_HEAD + byte_range.first_block * chunk_bytes
        f.seek(byte_range.start)
        first = f.read(at - byte_range.start)
        if len(first) != at - byte_range.start:    # (the previous range's to report)
            raise _capture_error(f"{path!r}: shorter than its byte range")
        reads = byte_range.blocks
    blocks = _Blocks(f, chunk_bytes, 16 + window_bytes, first, progress)
    mean_record = 0.0
    while True:
        if reads == 0:                 # the range's blocks are read: where the rest starts
            byte_range.end = f.tell() - blocks.end
            return
        got = blocks.read()
        if reads is not None:
            reads -= 1
            if got < chunk_bytes:
                raise _capture_error(f"{path!r}: shorter than its byte range")
        if not got:
            if blocks.end:
                what = "record header" if blocks.end < 16 else "packet record"
                raise _capture_error(f"{path!r}: truncated {what} at the end of the file "
                                     f"({blocks.end} bytes left)")
            if byte_range is not None:
                byte_range.end = f.tell()
            return
        starts, cut = _classic_records(blocks, le, frac_limit,
                                       mean_record < _GUESS_MAX_MEAN_RECORD)
        if len(starts):
            mean_record = cut / len(starts)
            yield _classic_chunk(blocks.buf, starts, le, frac_ns, frac_limit,
                                 window_bytes, path, hashes)
        blocks.consume(cut)
        if byte_range is not None and blocks.end > 16 + _MAX_CAPLEN:
            # a record this long is rare, and a range started at a wrong guess would
            # read its blocks into one growing buffer: its reader reads in one pass
            raise _capture_error(f"{path!r}: a record of {blocks.end} bytes or more in a "
                                 f"byte range")


#: Bytes of a classic pcap's file header (its records start after it).
_CLASSIC_HEAD = 24
#: Records after a guessed record start that must look like record headers too
#: (:func:`record_start`).
_SYNC_RECORDS = 16
#: Bytes looked at after a split point to check the chains of guessed record starts.
_SYNC_AHEAD = 1 << 20


@dataclass
class ByteRange:
    """A part of a classic pcap read by one task (:func:`classic_ranges`): the records
    a one pass reading of ``chunk_bytes`` blocks finds in its blocks ``first_block`` to
    ``first_block + blocks - 1`` (``blocks`` ``None``: to the end of the file), so the
    chunks are those of the one pass. ``start`` is the byte where its first record
    starts; ``end``, set by :func:`iter_capture` when the range is read, where the
    first record it leaves to the next range starts (the next range's ``start`` when
    the split point's record was found right: :func:`ranges_chain`)."""
    start: int
    first_block: int
    blocks: int | None
    end: int | None = None


def record_start(data: np.ndarray, pos: int, le: bool, frac_limit: int,
                 at_eof: bool) -> int | None:
    """The start (an index of ``data``) of the record holding byte ``pos`` of ``data``,
    a stretch of a classic pcap's records that begins at most ``16 + 2**18`` bytes
    before ``pos`` (at the byte after a record's end, or anywhere in one); ``None`` when
    no start is found. ``at_eof``: ``data`` ends where the file ends.

    A start is a position from which :data:`_SYNC_RECORDS` records in a row
    have plausible headers (fraction below its limit, 1 to 2**18 captured bytes, an
    on-wire length at least that) or the chain ends exactly at the end of the file; the
    chains from these starts are followed to ``pos`` and the record most of them reach
    is the answer. Payload can imitate headers, so this is a guess: the reader of the
    previous range checks it (:func:`ranges_chain`)."""
    n = len(data) - 15                      # positions with a whole header
    if n <= 0 or pos >= len(data):
        return None
    dt = np.dtype("<u4" if le else ">u4")

    def word(k):
        return np.ndarray((n,), dt, data, k, (1,)).astype(np.int64)

    frac, cap, orig = word(4), word(8), word(12)
    ok = (frac < frac_limit) & (cap >= 1) & (cap <= _MAX_CAPLEN) & (orig >= cap)
    nxt = np.arange(n, dtype=np.int64) + 16 + cap
    cand = np.flatnonzero(ok[:pos + 1])
    good = np.ones(len(cand), bool)
    at = cand.copy()
    for _ in range(_SYNC_RECORDS):
        inside = at < n
        step = np.minimum(at, n - 1)
        at = np.where(inside, nxt[step], at)
        good &= ~inside | ok[step]
        good &= (at < n) | (at == len(data)) | (not at_eof)
    found = cand[good]
    if not len(found) or pos >= n:
        return None
    # each start's chain followed to the record holding pos (pointer doubling), and the
    # record most chains reach wins: every real start before pos reaches the real one,
    # a false start (payload) mostly only itself
    m = pos + 1
    hop = np.arange(m, dtype=np.int64)
    adv = ok[:m] & (nxt[:m] <= pos)
    hop[adv] = nxt[:m][adv]
    for _ in range(m.bit_length()):
        again = hop[hop]
        if np.array_equal(again, hop):
            break
        hop = again
    reached = hop[found]
    plausible = np.zeros(m, bool)
    plausible[found] = True
    reached = reached[plausible[reached]]
    if not len(reached):
        return None
    values, counts = np.unique(reached, return_counts=True)
    return int(values[np.argmax(counts)])


def classic_ranges(path, parts: int,
                   chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> list[ByteRange] | None:
    """Split a classic pcap into up to ``parts`` :class:`ByteRange` of whole blocks of
    a one-pass reading (each read by a task of its own); ``None`` for pcapng, one part
    or a file of less than two blocks. Each split point is a block's first byte; the
    range after it starts at the record holding that byte (:func:`record_start`)."""
    f, path, fmt, head = _open(path)
    with f:
        if fmt != "pcap":
            return None
        size = os.fstat(f.fileno()).st_size
        n_blocks = max(0, size - _CLASSIC_HEAD + chunk_bytes - 1) // chunk_bytes
        parts = min(int(parts), n_blocks)
        if parts < 2:
            return None
        le, _, frac_limit = _classic_format(head)
        firsts = [n_blocks * i // parts for i in range(parts)] + [n_blocks]
        out = [ByteRange(_CLASSIC_HEAD, 0, firsts[1])]
        for i in range(1, parts):
            pos = _CLASSIC_HEAD + firsts[i] * chunk_bytes
            lo = max(_CLASSIC_HEAD, pos - 16 - _MAX_CAPLEN)
            hi = min(size, pos + _SYNC_AHEAD)
            f.seek(lo)
            data = np.frombuffer(f.read(hi - lo), np.uint8)
            got = record_start(data, pos - lo, le, frac_limit, hi == size)
            start = pos if got is None else lo + got     # pos: the check will refuse it
            out.append(ByteRange(start, firsts[i],
                                 None if i == parts - 1 else firsts[i + 1] - firsts[i]))
        return out


def ranges_chain(ranges: list[ByteRange]) -> bool:
    """Whether the ranges, read, chain: each one ended where the next one started (the
    first starts after the file header: by induction every start was a record's)."""
    return all(a.end == b.start for a, b in zip(ranges, ranges[1:]))


# ---------------------------------------------------------------------------------------
# pcapng
# ---------------------------------------------------------------------------------------

@dataclass
class PcapngInterface:
    linktype: int
    num: int = 10        # resolution num ** -pow seconds
    pow: int = 6
    offset_s: int = 0

    def exact_ns(self, ticks: int) -> int:
        """One timestamp in ns, exact in Python integers (rounded to the nearest ns)."""
        d = self.num ** self.pow
        return (ticks * 10 ** 9 + d // 2) // d + self.offset_s * 1_000_000_000

    def ns(self, ticks: np.ndarray, where: str = "capture") -> np.ndarray:
        """The ns of non-negative ticks (int64); :class:`CaptureError` when one is beyond
        int64 ns (after the year 2262, or an absurd ``if_tsoffset``)."""
        if len(ticks):
            for t in (int(ticks.min()), int(ticks.max())):
                if not -_INT64 <= self.exact_ns(t) < _INT64:
                    raise _capture_error(
                        f"{where}: timestamp of {t} ticks (resolution {self.num}^-{self.pow} "
                        f"s, offset {self.offset_s} s) is beyond the 64-bit ns range")
        if self.num == 10 and self.pow <= 9:
            ns = ticks * 10 ** (9 - self.pow)
        else:   # rounded to the nearest ns, exact in Python integers
            d = self.num ** self.pow
            ns = np.array([(int(t) * 10 ** 9 + d // 2) // d for t in ticks], np.int64)
        return ns + self.offset_s * 1_000_000_000


def _idb(body: bytes, le: bool) -> PcapngInterface:
    e = "<" if le else ">"
    iface = PcapngInterface(struct.unpack(e + "H", body[:2])[0])
    off = 8
    while off + 4 <= len(body):
        code, length = struct.unpack(e + "HH", body[off:off + 4])
        value = body[off + 4:off + 4 + length]
        if code == 0:
            break
        if len(value) < length:
            raise _capture_error(f"pcapng interface option {code} of {length} bytes runs "
                                 f"past its block")
        if code == 9 and length >= 1:
            iface.num, iface.pow = (2 if value[0] & 0x80 else 10), value[0] & 0x7F
        elif code == 14 and length >= 8:
            iface.offset_s = struct.unpack(e + "q", value[:8])[0]
        off += 4 + (length + 3) // 4 * 4
    return iface


def walk_pcapng(data: bytes, le: bool, path, ifaces: list, linktypes: set | None = None):
    """EPB/PB record positions ``(starts, kind)`` of the complete blocks, the interfaces
    they name, and where the rest starts; SHB/IDB update ``ifaces`` (and ``linktypes``,
    the link types of every interface seen, of every section)."""
    e = "<" if le else ">"
    unpack = struct.Struct(e + "II").unpack_from
    starts, kinds = [], []
    off, end = 0, len(data)
    while off + 8 <= end:
        btype, blen = unpack(data, off)
        if blen < 12 or blen % 4:
            raise _capture_error(f"{path!r}: corrupt pcapng block length {blen}")
        if off + blen > end:
            break
        if blen < _PCAPNG_MIN_LENGTH.get(btype, 12):
            raise _capture_error(f"{path!r}: pcapng block of type {btype:#x} at byte {off} "
                                 f"is {blen} bytes, shorter than its fixed fields")
        if btype == 6 or btype == 2:
            caplen = unpack(data, off + 20)[0]
            if caplen > blen - 32:
                raise _capture_error(f"{path!r}: pcapng packet block at byte {off} "
                                     f"announces {caplen} captured bytes in {blen - 32}")
            starts.append(off)
            kinds.append(btype)
        elif btype == 1:
            ifaces.append(_idb(bytes(data[off + 8:off + blen - 4]), le))
            if linktypes is not None:
                linktypes.add(ifaces[-1].linktype)
        elif btype == PCAPNG_SHB:
            ifaces.clear()
        off += blen
    return np.array(starts, np.int64), np.array(kinds, np.int64), off


def _pcapng_chunk(buf, starts, kinds, le, ifaces, window_bytes, path, hashes=None):
    words = _fields(_gather(buf, starts + 8, 20), le).T
    is_pb = kinds == 2
    iface = np.where(is_pb, words[0] & 0xFFFF if le else words[0] >> 16, words[0])
    if (words[1] >= 1 << 31).any():
        raise _capture_error(f"{path!r}: a pcapng timestamp of 2^63 ticks or more (high "
                             f"word {int(words[1].max()):#x})")
    ticks = (words[1] << 32) | words[2]
    cap, orig = words[3], words[4]
    if not ifaces or iface.max(initial=0) >= len(ifaces):
        raise _capture_error(f"{path!r}: a packet names an interface the file does not "
                             f"describe")
    ts = np.empty(len(starts), np.int64)
    for k, itf in enumerate(ifaces):
        sel = iface == k
        if sel.any():
            ts[sel] = itf.ns(ticks[sel], repr(path))
    windows = _gather(buf, starts + 28, window_bytes)
    _clear_past_end(windows, cap)
    classes = classify_windows(windows, cap)
    return CaptureChunk(ts, windows, classes, cap, orig,
                        None if hashes is None else hashes(windows, classes))


def _iter_pcapng(f, path, head, window_bytes, chunk_bytes, progress, hashes=None):
    bom = head[8:12]
    if len(bom) < 4:
        raise _capture_error(f"{path!r}: truncated pcapng block header")
    le = struct.unpack("<I", bom)[0] == PCAPNG_BOM
    if not le and struct.unpack(">I", bom)[0] != PCAPNG_BOM:
        raise _capture_error(f"{path!r}: corrupt pcapng section header")
    ifaces: list[PcapngInterface] = []
    linktypes: set[int] = set()         # of every interface of every section
    blocks = _Blocks(f, chunk_bytes, 28 + window_bytes, head, progress)
    while True:
        if not blocks.read():
            if blocks.end:
                raise _capture_error(f"{path!r}: truncated pcapng block at the end of "
                                     f"the file ({blocks.end} bytes left)")
            return
        starts, kinds, cut = walk_pcapng(blocks.data(), le, path, ifaces, linktypes)
        if len(linktypes) > 1:
            raise _capture_error(f"{path!r}: interfaces of different link types "
                                 f"({', '.join(map(str, sorted(linktypes)))})")
        if len(starts):
            yield _pcapng_chunk(blocks.buf, starts, kinds, le, ifaces, window_bytes, path,
                                hashes)
        blocks.consume(cut)


# ---------------------------------------------------------------------------------------
# entry points
# ---------------------------------------------------------------------------------------

def _open(path):
    path = os.fspath(path)
    if not os.path.exists(path):
        raise _capture_error(f"capture file {path!r} does not exist")
    f = open(path, "rb")
    head = f.read(24)
    if len(head) < 4:
        f.close()
        raise _capture_error(f"{path!r} is too short to be a capture ({len(head)} bytes)")
    magic_le, magic_be = struct.unpack("<I", head[:4])[0], struct.unpack(">I", head[:4])[0]
    if magic_le == PCAPNG_SHB:
        return f, path, "pcapng", head
    if magic_le in (MAGIC_US, MAGIC_NS) or magic_be in (MAGIC_US, MAGIC_NS):
        if len(head) < 24:
            f.close()
            raise _capture_error(f"{path!r}: truncated pcap file header")
        return f, path, "pcap", head
    f.close()
    raise _capture_error(f"{path!r} is not a pcap or pcapng file (magic {magic_le:#010x})")


def capture_linktype(path) -> int:
    """The link-layer type of a capture (of its first interface, for pcapng)."""
    f, path, fmt, head = _open(path)
    with f:
        if fmt == "pcap":
            le = struct.unpack("<I", head[:4])[0] in (MAGIC_US, MAGIC_NS)
            return struct.unpack("<I" if le else ">I", head[20:24])[0] & 0x0FFFFFFF
        f.seek(0)
        data = f.read(1 << 16)
    le = struct.unpack("<I", data[8:12])[0] == PCAPNG_BOM
    ifaces: list[PcapngInterface] = []
    walk_pcapng(data, le, path, ifaces)
    if not ifaces:
        raise _capture_error(f"{path!r}: no interface description in the first 64 KiB")
    return ifaces[0].linktype


def iter_capture(path, *, window_bytes: int = DEFAULT_WINDOW_BYTES,
                 chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                 progress: Callable[[int], None] | None = None,
                 hashes: "WindowHashes | None" = None,
                 byte_range: ByteRange | None = None) -> Iterator[CaptureChunk]:
    """The records of a pcap or pcapng file as :class:`CaptureChunk` objects, in file
    order. ``progress(n)`` is called with the bytes read after each read. ``hashes``
    (:class:`WindowHashes`): hash every counted frame's window as it is extracted
    (:attr:`CaptureChunk.hashes`; its windows are then kept only when it says so, and
    always on the paths that extract them first). ``byte_range`` (classic pcap only):
    only the records of that :class:`ByteRange`, in the chunks of a one-pass reading
    with the same ``chunk_bytes``; its ``end`` is set when the iteration is over.

    Raises :class:`~host_sw.model.pcap.CaptureError` for a missing, truncated or
    unrecognised file (a truncated tail only when the iteration reaches it).
    """
    if chunk_bytes < 1 << 16:
        raise ValueError(f"chunk_bytes must be at least 64 KiB, not {chunk_bytes}")
    f, path, fmt, head = _open(path)
    with f:
        if byte_range is not None and fmt != "pcap":
            raise ValueError(f"{path!r}: byte ranges are read from classic pcap files only")
        if progress is not None and (byte_range is None or byte_range.first_block == 0):
            progress(len(head))
        if fmt == "pcap":
            yield from _iter_classic(f, path, head, window_bytes, chunk_bytes, progress,
                                     hashes, byte_range)
        else:
            yield from _iter_pcapng(f, path, head, window_bytes, chunk_bytes, progress,
                                    hashes)
