# SPDX-License-Identifier: BSD-2-Clause
"""Two captures of any size, streamed: per-interval golden synopses of both points, the
truth and the pairing checks, in memory bounded independently of the captures' size.

In the host data flow (``docs/DESIGN.md``, "offline analysis") this is the engine of
:func:`host_sw.estimators.offline.capture_records`: capture files ►
:func:`host_sw.model.pcap_stream.iter_capture` (chunks) ► hashes ► synopses per interval
(updated chunk by chunk: counters are sums and XORs, order does not matter) and, for
the truth, each counted packet's match key, timestamp, interval and flow spilled into
hash partitions (:class:`_Spill`: in memory while small, in temporary files beyond
:data:`SPILL_MEMORY_BYTES`). The partitions are matched one at a time, so the pairing
needs the memory of one partition, not of the captures. RDA's packet caches (each
counted packet's ID and ticks: the decoder repairs from them) are spilled the same way,
by ID range, then sorted a partition at a time into two files per capture that the
decoder searches through ``np.memmap`` (:func:`_build_cache`, one task per capture).
OPA's per-packet records are written by each partition's pairing by ranges of intervals
(:class:`OpaSpill`) and read back a range at a time
(:mod:`host_sw.estimators.offline_opa`).

Speed: the packet hashes come from the reader's compiled pass
(:class:`~host_sw.model.pcap_stream.WindowHashes`), spill records are built in partition
order (by compiled loops, :func:`_scatter_records`; numpy's path a field at a time), the
pairing sorts keys with their positions packed in (:func:`_sort_keys`) and counts each
side's repeats from that one sort, and LDS's known flows are found by one compiled pass
that folds, probes and checks (:func:`_fold_probe_loop`). Compiled loops (C, or numba) only
where numpy needs a pass per partition, field or row, or a data-dependent probe.

Tasks: the two captures' passes (:func:`_side_pass`, each with its own interval grid,
flow table and spill; with several workers one per byte range of a classic pcap,
:func:`_side_passes`), then one pairing per partition (:func:`_pair_partition`), run by
a runner of :mod:`host_sw.estimators.offline_jobs` (this process, worker processes, a
Dask cluster). Their results are merged in a fixed order — a capture's ranges in file
order (:func:`_merge_ranges`: their chunks are those of one pass, so their flow tables
merge into the one pass's), the receiver's intervals clipped to the sender's range, its
flows appended to the sender's table in the order one table would have given them, the
partitions' truth combined in partition order — so the records are byte for byte those
of one process.

What grows with the input instead: the synopses (one pair per interval) and the flows of
an LDS configuration (one entry per flow).

The same definitions as the in-memory :func:`host_sw.model.pcap.pair_captures`: a packet
of one capture matches the packet of the other with the same invariant bytes (default
packet masks; a repeated window matches its first unmatched occurrence in order); the
sender's intervals start at ``start_ns`` (default: the sender's first timestamp) and its
first and last intervals are open towards the captures' ends.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass, field

import numpy as np

from host_sw.contracts.config import LdaConfig
from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.hashing import (COMPILED_MIN_ROWS, HashPurpose, compiled,
                                      default_masks, mix64_array)
from host_sw.contracts.synopsis import Synopsis
from host_sw.model.pcap import CaptureError
from host_sw.model.golden_lda_rda_lds import (Hashers, PacketHashes, hash_windows, hashers_for,
                                              split_window_hashes, update)
from host_sw.model.pcap_stream import (DEFAULT_CHUNK_BYTES, ByteRange, WindowHashes,
                                       classic_ranges, iter_capture, ranges_chain,
                                       warm_compiled)
from host_sw.estimators.offline_jobs import inline_runner
from host_sw.estimators.rda.decode import PacketCache

__all__ = ["StreamedPair", "FlowTable", "OpaSpill", "stream_pair", "mapped_cache",
           "SPILL_MEMORY_BYTES"]

#: Spilled records kept in memory before they go to temporary files.
SPILL_MEMORY_BYTES = 64 << 20
#: Counted packets per spill partition and capture (the pairing's working set).
_PART_PACKETS = 1_000_000
#: The smallest pcap record of a counted packet (16-byte header, 60-byte frame).
_MIN_RECORD = 76
_NONE = np.iinfo(np.int64).min


class _Spill:
    """Records of one or two sides partitioned by key; appended in order, read per
    partition. In memory up to ``budget`` bytes, then in files ``<side><p>.bin`` of
    ``folder`` (the caller's, removed by the caller) or of a temporary folder made in
    ``directory`` (removed by :meth:`close`)."""

    def __init__(self, parts: int, dtypes: dict, directory=None, *, folder=None,
                 budget: int | None = None, partition=None):
        self.parts, self.dtypes, self.folder = parts, dtypes, folder
        self.budget = SPILL_MEMORY_BYTES if budget is None else budget
        self.partition = partition or _key_partition
        self.buffers = {side: [[] for _ in range(parts)] for side in dtypes}
        self.buffered = 0
        self.written = False
        self._dir = None
        self._directory = directory

    def add(self, side: str, columns: dict) -> None:
        """Add records given as columns (``field: array`` of one row per record, or a
        scalar for all), written straight in partition order (numpy copies whole
        structured items one by one, about 50 ns an item: the records are never
        reordered once built)."""
        dtype = self.dtypes[side]
        n = len(columns[dtype.names[0]])
        order = None
        if self.parts > 1 and n >= COMPILED_MIN_ROWS and compiled(_positions_loop):
            recs, bounds = _scatter_records(dtype, columns,
                                            self.partition(columns, self.parts), self.parts)
            self._keep(side, recs, bounds)
            return
        if self.parts > 1:
            part = self.partition(columns, self.parts)
            if self.parts <= 4:     # a pass per partition: faster than the radix sort
                order = np.concatenate([np.flatnonzero(part == p)
                                        for p in range(self.parts)])
            else:
                order = np.argsort(part, kind="stable")     # a radix sort (16-bit keys)
            bounds = np.r_[0, np.cumsum(np.bincount(part, minlength=self.parts))]
        recs = np.empty(n, dtype)
        for name in dtype.names:
            value = columns[name]
            recs[name] = value if order is None or np.ndim(value) == 0 else value[order]
        self._keep(side, recs, None if order is None else bounds)

    def _keep(self, side, recs, bounds):
        """Buffer ``recs`` (in partition order, partition ``p`` at
        ``bounds[p]:bounds[p + 1]``; one partition when ``bounds`` is None), flushing to
        the files past the memory budget."""
        if bounds is None:
            self.buffers[side][0].append(recs)
        else:
            for p in range(self.parts):
                if bounds[p + 1] > bounds[p]:
                    self.buffers[side][p].append(recs[bounds[p]:bounds[p + 1]])
        self.buffered += recs.nbytes
        if self.buffered > self.budget:
            self.flush()

    def _path(self, side, p):
        return os.path.join(self.folder, f"{side}{p}.bin")

    def flush(self) -> None:
        if self.folder is None:
            self._dir = tempfile.TemporaryDirectory(prefix="ldactl-pair-",
                                                    dir=self._directory)
            self.folder = self._dir.name
        for side, parts in self.buffers.items():
            for p, bufs in enumerate(parts):
                if bufs:
                    with open(self._path(side, p), "ab") as f:
                        for b in bufs:
                            b.tofile(f)
                    bufs.clear()
                    self.written = True
        self.buffered = 0

    def load(self, side: str, p: int) -> np.ndarray:
        parts = []
        if self.written and os.path.exists(self._path(side, p)):
            parts.append(np.fromfile(self._path(side, p), dtype=self.dtypes[side]))
        parts += self.buffers[side][p]
        self.buffers[side][p] = []
        if not parts:
            return np.zeros(0, self.dtypes[side])
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def close(self) -> None:
        if self._dir is not None:
            self._dir.cleanup()


def _positions_loop(part, parts, pos, bounds):
    """Each record's row in partition order (stable: a partition's records keep their
    order) in ``pos``, and the partitions' bounds (``parts + 1``) in ``bounds``: a
    counting sort, two passes."""
    for i in range(part.shape[0]):
        bounds[np.int64(part[i]) + 1] += 1
    for p in range(parts):
        bounds[p + 1] += bounds[p]
    at = bounds[:parts].copy()
    for i in range(part.shape[0]):
        q = np.int64(part[i])
        pos[i] = at[q]
        at[q] += 1


def _put_loop(dst, col, src, pos):
    """``dst[pos[i], col] = src[i]``: one 8-byte field of every record, put in place."""
    for i in range(src.shape[0]):
        dst[pos[i], col] = src[i]


def _scatter_records(dtype: np.dtype, columns: dict, part: np.ndarray, parts: int):
    """:meth:`_Spill.add`'s records in partition order, built by compiled loops
    (numba): the records' rows by a counting sort of their partitions, then each
    8-byte field put straight into its place (numpy needs a pass per partition to
    order them, then a gather and a strided copy per field). Every field of the spill's
    records is 8 bytes wide (a scalar or a row of them). ``(records, bounds)``."""
    n = len(part)
    pos = np.empty(n, np.int64)
    bounds = np.zeros(parts + 1, np.int64)
    compiled(_positions_loop)(part, parts, pos, bounds)
    recs = np.empty(n, dtype)
    words = recs.view(np.uint64).reshape(n, dtype.itemsize // 8)
    put = compiled(_put_loop)
    for name in dtype.names:
        value = columns[name]
        if np.ndim(value) == 0:
            recs[name] = value
            continue
        sub, offset = dtype.fields[name][:2]
        value = np.asarray(value)
        if value.dtype != sub.base:             # (numpy's unsafe cast, as a field's)
            value = value.astype(sub.base)
        value = value.reshape(n, -1).view(np.uint64)
        for j in range(value.shape[1]):
            put(words, offset // 8 + j, value[:, j], pos)
    return recs, bounds


def warm_loops() -> None:
    """Load the compiled loops of a capture analysis now
    (:func:`~host_sw.model.pcap_stream.warm_compiled`, the spill's and the synopsis
    update's), so that worker processes forked afterwards share them instead of each
    loading them again (a few ms each)."""
    from host_sw.model.golden_lda_rda_lds import _add_at_loop, _xor_at_loop
    warm_compiled()
    if compiled(_positions_loop) is None:
        return
    n = np.arange(4, dtype=np.uint64)
    _scatter_records(np.dtype([("key", "<u8"), ("ts", "<i8")]), {"key": n, "ts": 0},
                     (n % np.uint64(2)).astype(np.uint16), 2)
    flat = np.arange(4, dtype=np.int64)
    compiled(_add_at_loop)(np.zeros(4, np.uint64), flat, n)
    compiled(_xor_at_loop)(np.zeros(4, np.int64), flat, flat)


def _take(recs: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``recs[index]`` of structured records, a field at a time (:meth:`_Spill.add`)."""
    out = np.empty(len(index), recs.dtype)
    for name in recs.dtype.names:
        out[name] = recs[name][index]
    return out


def _key_partition(recs: np.ndarray, parts: int) -> np.ndarray:
    """The pairing's partition of each record: its key modulo the partitions."""
    return (recs["key"] % np.uint64(parts)).astype(
        np.uint16 if parts <= 1 << 16 else np.int64)


def _id_range_partition(recs: np.ndarray, parts: int) -> np.ndarray:
    """The RDA cache's partition of each record: increasing with its ID (the partitions
    sorted one by one and concatenated are sorted)."""
    high = recs["id"] >> np.uint64(32)
    return ((high * np.uint64(parts)) >> np.uint64(32)).astype(
        np.uint16 if parts <= 1 << 16 else np.int64)


@dataclass
class FlowTable:
    """The flows of an LDS configuration seen in the captures: per-row flow hashes
    ``(R, F)``, one header window and frame class per flow (to name it).

    The flows' hashes, windows and classes are kept as blocks of rows (one per chunk's
    new flows), joined when read: a worker's table reaches its parent pickled, and a
    list of an array per flow took about 85 ms to pickle and unpickle for 10,000
    flows, against a few for a few arrays."""
    rows: int
    window_bytes: int
    index: dict = field(default_factory=dict)
    blocks: dict = field(default_factory=lambda: {"hashes": [], "windows": [],
                                                  "classes": []})

    def __len__(self):
        return len(self.index)

    def _rows(self, name: str, empty: np.ndarray) -> np.ndarray:
        """The flows' ``name`` rows in flow order (the blocks joined, and kept so)."""
        got = self.blocks[name]
        if not got:
            return empty
        if len(got) > 1:
            got[:] = [np.concatenate(got)]
        return got[0]

    @property
    def hashes(self) -> np.ndarray:
        """uint64 ``(F, R)``: each flow's row hashes."""
        return self._rows("hashes", np.zeros((0, self.rows), np.uint64))

    @property
    def windows(self) -> np.ndarray:
        """uint8 ``(F, window_bytes)``: a header window of each flow."""
        return self._rows("windows", np.zeros((0, self.window_bytes), np.uint8))

    @property
    def classes(self) -> np.ndarray:
        """int64 ``(F,)``: each flow's frame class."""
        return self._rows("classes", np.zeros(0, np.int64))

    def __getstate__(self):
        """Pickled without the known flows' lookup (:meth:`_known`, remade when needed)."""
        state = dict(self.__dict__)
        state.pop("_lookup", None)
        return state

    def _add(self, hashes: np.ndarray, windows: np.ndarray, classes: np.ndarray) -> None:
        """Append new flows' rows (in index order)."""
        self.blocks["hashes"].append(np.ascontiguousarray(hashes, dtype=np.uint64))
        self.blocks["windows"].append(np.ascontiguousarray(windows, dtype=np.uint8))
        self.blocks["classes"].append(np.asarray(classes, dtype=np.int64))
        self.__dict__.pop("_lookup", None)

    def assign(self, flow: np.ndarray, windows: np.ndarray, classes: np.ndarray,
               counted: np.ndarray) -> np.ndarray:
        """The flow index of each packet (``-1`` for uncounted ones), new flows added (in
        the order of their row hashes' bytes within a chunk). Packets of known flows are
        found by a search of the known flows' 64-bit folds, checked exact; the others go
        through :func:`_unique_rows` and the index."""
        out = np.full(flow.shape[1], -1, np.int64)
        sel = np.flatnonzero(counted)
        if not len(sel):
            return out
        fused = compiled(_fold_probe_loop)
        if fused is not None:   # fold, probe and exact check in one compiled pass
            folds, ids, known_rows, slots = self._known()
            found = np.empty(len(sel), np.int64)
            fold = np.empty(len(sel), np.uint64)
            fused(flow, sel, slots[0], slots[1], known_rows, fold, found)
            if len(sel) == len(out):            # every packet counted (the usual chunk)
                out = found
                rest = np.flatnonzero(found < 0)
            else:
                hit = found >= 0
                out[sel[hit]] = found[hit]
                rest = np.flatnonzero(~hit)
            if not len(rest):
                return out
            sel, fold = sel[rest], fold[rest]
            rows = np.ascontiguousarray(flow[:, sel].T.astype(np.uint32))
        else:
            rows = np.ascontiguousarray(flow[:, sel].T.astype(np.uint32))
            fold = _fold(rows)
        if self.index and fused is None:
            folds, ids, known_rows, slots = self._known()
            if slots is not None:            # a compiled probe of the folds' hash table
                found = np.empty(len(fold), np.int64)
                compiled(_probe_loop)(fold, slots[0], slots[1], found)
                hit = found >= 0
                hit[hit] = (known_rows[found[hit]] == rows[hit]).all(axis=1)
            else:
                pos = np.minimum(np.searchsorted(folds, fold), len(folds) - 1)
                found = ids[pos]
                hit = (folds[pos] == fold) & (known_rows[found] == rows).all(axis=1)
            out[sel[hit]] = found[hit]
            rest = np.flatnonzero(~hit)
            if not len(rest):
                return out
            sel, rows, fold = sel[rest], np.ascontiguousarray(rows[rest]), fold[rest]
        keys = rows.view(np.dtype((np.void, 4 * self.rows))).ravel()
        uniq, first, inverse = _unique_rows(rows, keys, fold)
        ids = np.empty(len(uniq), np.int64)
        new = []                      # each new flow's first packet, in key order
        for k, (key, i) in enumerate(zip(uniq.tolist(), sel[first].tolist())):
            got = self.index.get(key)
            if got is None:
                got = self.index[key] = len(self.index)
                new.append(i)
            ids[k] = got
        if new:                       # gathered at once: one copy, not one per flow
            self._add(flow[:, new].T, windows[new], np.asarray(classes)[new])
        out[sel] = ids[inverse.ravel()]
        return out

    def _known(self):
        """The known flows' folds (sorted), their flow indices, rows (uint32 ``(F, R)``)
        and, with numba, an open-addressing table of the folds (``(keys, flow
        indices)``; -1 marks an empty slot) for :func:`_probe_loop`."""
        got = self.__dict__.get("_lookup")
        if got is None or len(got[1]) != len(self.index):
            known_rows = np.ascontiguousarray(self.table().T.astype(np.uint32))
            folds = _fold(known_rows)
            ids = np.argsort(folds, kind="stable")
            slots = None
            insert = compiled(_insert_loop)
            if insert is not None:
                size = 1 << max(4, (4 * len(folds)).bit_length())   # at most 1/4 full
                slots = (np.zeros(size, np.uint64), np.full(size, -1, np.int64))
                insert(folds, slots[0], slots[1])
            got = self.__dict__["_lookup"] = (folds[ids], ids, known_rows, slots)
        return got

    def table(self) -> np.ndarray:
        """uint64 ``(R, F)`` per-row flow hashes."""
        return np.ascontiguousarray(self.hashes.T)


def _insert_loop(folds, keys, ids):
    """Put flow ``i``'s fold in the first free slot from ``fold & (size - 1)`` on (the
    first flow of a fold stays where two share it: the exact row check sends the other
    to the index). numba: a probe is a short data-dependent loop per flow."""
    mask = np.uint64(keys.shape[0] - 1)
    for i in range(folds.shape[0]):
        j = np.int64(folds[i] & mask)
        while ids[j] >= 0 and keys[j] != folds[i]:
            j = np.int64((np.uint64(j) + np.uint64(1)) & mask)
        if ids[j] < 0:
            keys[j], ids[j] = folds[i], i


def _probe_loop(folds, keys, ids, out):
    """The flow of each packet's fold from :func:`_insert_loop`'s table, or -1
    (numba: numpy's alternative, a binary search of the sorted folds, costs about
    90 ns a packet; a probe of this table, mostly in cache, a few)."""
    mask = np.uint64(keys.shape[0] - 1)
    for i in range(folds.shape[0]):
        j = np.int64(folds[i] & mask)
        while ids[j] >= 0 and keys[j] != folds[i]:
            j = np.int64((np.uint64(j) + np.uint64(1)) & mask)
        out[i] = ids[j]


def _fold_probe_loop(flow, sel, keys, ids, known_rows, fold, out):
    """For each counted packet ``sel[k]``: the :func:`_fold` of its row hashes' low 32
    bits (``flow[:, sel[k]]``) in ``fold[k]``, and in ``out[k]`` the known flow of
    :func:`_probe_loop`'s table whose rows equal them exactly, else -1. numba: numpy
    needs a copy of the rows, a pass per row for the fold and a gather of the known rows
    to check; this is one pass, about a third of the time."""
    mask = np.uint64(keys.shape[0] - 1)
    low = np.uint64(0xFFFFFFFF)
    m1, m2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
    s30, s27, s31 = np.uint64(30), np.uint64(27), np.uint64(31)
    rows = flow.shape[0]
    for k in range(sel.shape[0]):
        i = sel[k]
        z = flow[0, i] & low
        for r in range(1, rows):
            z ^= z >> s30
            z *= m1
            z ^= z >> s27
            z *= m2
            z ^= z >> s31
            z ^= flow[r, i] & low
        fold[k] = z
        j = np.int64(z & mask)
        while ids[j] >= 0 and keys[j] != z:
            j = np.int64((np.uint64(j) + np.uint64(1)) & mask)
        got = ids[j]
        if got >= 0:
            for r in range(rows):
                if np.uint64(known_rows[got, r]) != flow[r, i] & low:
                    got = -1
                    break
        out[k] = got


def _fold(rows: np.ndarray) -> np.ndarray:
    """A 64-bit fold of each row of uint32 flow hashes (equal rows, equal folds)."""
    fold = rows[:, 0].astype(np.uint64)
    for j in range(1, rows.shape[1]):
        fold = mix64_array(fold) ^ rows[:, j].astype(np.uint64)
    return fold


def _group_loop(fold, rows, keys, slot_group, first, group):
    """Group packets by equal ``rows`` (``(n, R)`` uint32), found by their ``fold`` in
    an open-addressing table (``keys``, ``slot_group``: -1 where empty; a power of two
    of slots): ``first[g]`` group ``g``'s first packet, ``group[i]`` packet ``i``'s group,
    numbered in order of first occurrence; the number of groups, -1 when two packets of
    one fold have different rows, -2 when the groups fill half the table. Compiled:
    numpy's way is a sort of the folds (about 60 ms for a block of 370,000 packets of
    new flows, against a few for this pass)."""
    mask = np.uint64(keys.shape[0] - 1)
    groups = 0
    for i in range(fold.shape[0]):
        j = np.int64(fold[i] & mask)
        while slot_group[j] >= 0 and keys[j] != fold[i]:
            j = np.int64((np.uint64(j) + np.uint64(1)) & mask)
        g = slot_group[j]
        if g < 0:
            if 2 * (groups + 1) > keys.shape[0]:
                return -2
            keys[j] = fold[i]
            g = groups
            slot_group[j] = g
            first[g] = i
            groups += 1
        else:
            for r in range(rows.shape[1]):
                if rows[first[g], r] != rows[i, r]:
                    return -1
        group[i] = g
    return groups


def _groups(rows: np.ndarray, fold: np.ndarray):
    """``(first, group)`` of :func:`_group_loop` (first occurrences, each packet's group),
    or ``None`` without a compiled loop, below :data:`COMPILED_MIN_ROWS` packets or on a
    fold collision (the callers' sort then). The table starts at 16 Ki slots (a chunk's
    new flows are seldom more than 8 Ki) and grows eightfold when they fill half of it."""
    loop = compiled(_group_loop) if len(fold) >= COMPILED_MIN_ROWS else None
    if loop is None:
        return None
    rows = np.ascontiguousarray(rows, dtype=np.uint32)
    first, group = np.empty(len(fold), np.int64), np.empty(len(fold), np.int64)
    size = 1 << 14
    while True:
        groups = loop(fold, rows, np.zeros(size, np.uint64), np.full(size, -1, np.int64),
                      first, group)
        if groups != -2:
            return None if groups < 0 else (first[:groups], group)
        size *= 8


def _unique_rows(rows: np.ndarray, keys: np.ndarray, fold=None):
    """``np.unique(keys, return_index=True, return_inverse=True)`` of the rows' void
    ``keys``, faster: grouped by a 64-bit fold of each row (a compiled pass,
    :func:`_group_loop`, or numpy's sort of the folds), checked exact (else numpy's
    unique of the void keys), the distinct rows then put in the void keys' order (a sort
    of the distinct rows only)."""
    fold = _fold(rows) if fold is None else fold
    got = _groups(rows, fold)
    if got is not None:
        first, gid = got
        order = None
    else:
        order = np.argsort(fold, kind="stable")
        f = fold[order]
        start = np.ones(len(f), bool)
        start[1:] = f[1:] != f[:-1]
        gid = np.cumsum(start) - 1
        first = order[start]                          # each group's first packet
        if not np.array_equal(rows[order], rows[first[gid]]):   # a fold collision
            return np.unique(keys, return_index=True, return_inverse=True)
    rank = np.argsort(keys[first], kind="stable")  # the distinct keys in numpy's order
    where = np.empty(len(rank), np.int64)
    where[rank] = np.arange(len(rank))
    if order is None:
        inverse = where[gid]
    else:
        inverse = np.empty(len(rows), np.int64)
        inverse[order] = where[gid]
    return keys[first[rank]], first[rank], inverse


def _counts(iv: np.ndarray) -> list[tuple[int, int]]:
    """``(interval, packets)`` of the intervals present in ``iv``, in order (a count
    over the range when it is narrow, else a sort)."""
    if not len(iv):
        return []
    lo, hi = int(iv.min()), int(iv.max())
    if lo == hi:                               # one interval (the default)
        return [(lo, len(iv))]
    if hi - lo <= 4 * len(iv) + 1024:
        c = np.bincount(iv - lo)
        at = np.flatnonzero(c)
        return list(zip((at + lo).tolist(), c[at].tolist()))
    u, c = np.unique(iv, return_counts=True)
    return list(zip(u.tolist(), c.tolist()))


def _by_interval(iv: np.ndarray, values: np.ndarray):
    """``(interval, values of the packets of that interval)`` for each interval present
    in ``iv``, in increasing order (the packets' order kept within an interval)."""
    if not len(iv):
        return
    lo = int(iv.min())
    if lo == int(iv.max()):                    # one interval: no sort, no copy
        yield lo, values
        return
    order = np.argsort(iv, kind="stable")
    iv, values = iv[order], values[order]
    bounds = np.flatnonzero(np.diff(iv)) + 1
    for a, b in zip(np.r_[0, bounds], np.r_[bounds, len(iv)]):
        yield int(iv[a]), values[a:b]


def delay_stats(iv: np.ndarray, delays: np.ndarray) -> list[tuple]:
    """``(interval, n, sum, mean, m2)`` of the delays of each interval present."""
    out = []
    for k, d in _by_interval(iv, delays):
        n, s = len(d), int(d.sum())
        mean = s / n
        out.append((k, n, s, mean, float(((d - mean) ** 2).sum())))
    return out


@dataclass
class _Truth:
    """Per-interval truth sums (exact integer delay sum; variance by Chan's update)."""
    sent: dict = field(default_factory=dict)
    received: dict = field(default_factory=dict)
    lost: dict = field(default_factory=dict)
    both: dict = field(default_factory=dict)      # iv -> [n, sum, mean, m2]

    def add_counts(self, target: dict, iv: np.ndarray) -> None:
        for k, n in _counts(iv):
            target[k] = target.get(k, 0) + n

    def add_delays(self, iv: np.ndarray, delays: np.ndarray) -> None:
        for stats in delay_stats(iv, delays):
            self.combine(*stats)

    def combine(self, k: int, n: int, s: int, mean: float, m2: float) -> None:
        """Add one partition's ``(n, sum, mean, m2)`` of interval ``k`` (Chan's update;
        partitions combined in their order give the same bits however they ran)."""
        got = self.both.setdefault(k, [0, 0, 0.0, 0.0])
        n0, mean0 = got[0], got[2]
        tot = n0 + n
        delta = mean - mean0
        got[3] += m2 + delta * delta * n0 * n / tot
        got[2] = mean0 + delta * n / tot
        got[0], got[1] = tot, got[1] + s

    def json(self, iv: int) -> dict:
        n, s, _, m2 = self.both.get(iv, [0, 0, 0.0, 0.0])
        return {"mean": s / n if n else None, "std": math.sqrt(m2 / n) if n else None,
                "sent": self.sent.get(iv, 0), "received": self.received.get(iv, 0),
                "lost": self.lost.get(iv, 0)}


@dataclass
class StreamedPair:
    """Everything :func:`stream_pair` learnt of two captures."""
    config: SynopsisConfig
    synopses: dict            # side -> {interval: Synopsis}
    meta: dict                # side -> {interval: [packets, first_ns, last_ns]}
    truth: _Truth
    sent: int                 # counted packets of each capture
    received: int
    matched: int
    negative: int
    zero: int
    caches: dict              # side -> PacketCache of counted packets (RDA) or None
    flows: FlowTable | None
    flow_truth: dict          # interval -> {"packets", "delay_sum", "lost"} arrays
    # what the pairing shows (issue 23: pairs that must make sense)
    delay_min: int | None = None     # of the matched packets, ns
    delay_max: int | None = None
    delay_sum: int = 0
    duplicates: dict = field(default_factory=lambda: {"sender": 0, "receiver": 0})
    unmatched: int = 0        # receiver packets not in the sender capture (kept ones)
    window: tuple | None = None      # (lo, hi, margin) ns: the window both saw
    left_out: dict = field(default_factory=lambda: {"sender": 0, "receiver": 0})
    start_ns: int | None = None      # the interval grid's origin
    opa: "OpaSpill | None" = None    # OPA: each point's records, spilled by interval
    cache_files: dict | None = None  # RDA: side -> the caches' files (mapped_cache)

    def ends(self, side: str) -> tuple[int, int] | None:
        """First and last timestamp (ns) of a capture's packets in the intervals."""
        metas = [m for m in self.meta[side].values() if m[1] is not None]
        if not metas:
            return None
        return min(m[1] for m in metas), max(m[2] for m in metas)

    @property
    def intervals(self) -> list[int]:
        if self.opa is not None:          # OPA's words come from its records, later
            return sorted(set(self.meta["sender"]) | set(self.meta["receiver"]))
        return sorted(set(self.synopses["sender"]) | set(self.synopses["receiver"]))

    def synopsis(self, side: str, iv: int) -> Synopsis:
        got = self.synopses[side].get(iv)
        return got if got is not None else Synopsis.empty(self.config)

    def side_meta(self, side: str, iv: int) -> dict:
        m = self.meta[side].get(iv)
        if m is None:
            return {"packets": 0}
        return {"packets": m[0], "first_ns": m[1], "last_ns": m[2]}


def _ticks(ts: np.ndarray, tick) -> np.ndarray:
    """As :meth:`host_sw.model.observation.Observation.ticks`."""
    if tick == 1:
        return ts
    if float(tick).is_integer():
        return ts // int(tick)
    return np.floor(ts / tick).astype(np.int64)


class _Pass:
    """One capture's pass: hash each chunk, update its synopses, spill its packets (and,
    for RDA, its cache records: ID and ticks, partitioned by ID range)."""

    def __init__(self, config, spill, options, keep: tuple[int, int] | None = None,
                 cache_spill=None):
        self.config, self.spill, self.options = config, spill, options
        self.hashers = hashers_for(config)
        self.key_hashers = _key_hashers(config)
        rows = config.hash_count(HashPurpose.LDS_FLOW)
        self.flows = FlowTable(rows, config.window_bytes) if rows else None
        # hashed as the records are extracted (the windows kept only for the flow table)
        self.window_hashes = None if self.key_hashers is not None else WindowHashes.of(
            self.hashers.window_tables(), keep_windows=self.flows is not None)
        self.grid = _Grid(options.get("interval_ns"), options.get("start_ns"))
        self.keep = keep            # (lo, hi) ns: only the packets of this window
        self.synopses, self.meta = {}, {}
        self.counted = self.left_out = 0
        self.cache_spill = cache_spill
        self.opa = config.kind == "opa"     # no golden update: words from the records
        self.seq = 0                        # records of the capture before this chunk

    def _meta(self, iv, ts):
        _add_meta(self.meta, iv, ts)

    def update(self, iv, hashes: PacketHashes, ticks) -> None:
        _update_synopses(self.config, self.hashers, self.synopses, iv, hashes, ticks)

    def run(self, path, side: str, *, deferred: bool,
            byte_range: ByteRange | None = None) -> None:
        config = self.config
        for chunk in iter_capture(path, window_bytes=config.window_bytes,
                                  chunk_bytes=self.options.get("chunk_bytes",
                                                               DEFAULT_CHUNK_BYTES),
                                  progress=self.options.get("progress"),
                                  hashes=self.window_hashes, byte_range=byte_range):
            ts, windows, classes = chunk.timestamps_ns, chunk.windows, chunk.classes
            hashed = chunk.hashes
            seq = np.arange(self.seq, self.seq + len(ts), dtype=np.int64)
            self.seq += len(ts)
            if self.keep is not None:
                inside = (ts >= self.keep[0]) & (ts <= self.keep[1])
                self.left_out += int(len(ts) - inside.sum())
                ts, classes, seq = ts[inside], classes[inside], seq[inside]
                windows = None if windows is None else windows[inside]
                hashed = None if hashed is None else hashed[:, inside]
            iv = self.grid.assign(ts)
            hashes = (hash_windows(config, windows, classes, self.hashers) if hashed is None
                      else split_window_hashes(config, hashed, classes))
            ticks = _ticks(ts, config.tick_ns)
            if not deferred:
                if not self.opa:
                    self.update(iv, hashes, ticks)
                self._meta(iv, ts)
            counted = hashes.counted
            sel = np.flatnonzero(counted)
            self.counted += len(sel)
            if self.cache_spill is not None:
                self.cache_spill.add(side, {"id": hashes.packet[sel], "tick": ticks[sel]})
            key = hashes.packet if self.key_hashers is None else hash_windows(
                self.key_hashers.config, windows, classes, self.key_hashers).packet
            flow = (self.flows.assign(hashes.flow, windows, classes, counted)
                    if self.flows is not None else None)
            recs = {"key": key[sel], "ts": ts[sel], "iv": iv[sel],
                    "flow": -1 if flow is None else flow[sel]}
            if deferred or self.opa:
                recs["p"] = hashes.packet[sel]
            if self.opa:
                recs["seq"] = seq[sel]
            if deferred:
                if hashes.flow is not None:
                    recs["rows"] = hashes.flow[:, sel].T
                unc = np.flatnonzero(~counted)
                if len(unc):
                    self._meta(iv[unc], ts[unc])
            self.spill.add(side, recs)


def _update_synopses(config, hashers, synopses: dict, iv, hashes: PacketHashes,
                     ticks) -> None:
    """Add packets to the synopses of their intervals (new ones made as needed)."""
    groups = _counts(iv)
    for k, _ in groups:
        sel = slice(None) if len(groups) == 1 else np.flatnonzero(iv == k)
        syn = synopses.get(k)
        if syn is None:
            syn = synopses[k] = Synopsis.empty(config)
        update(config, hashes.select(sel), ticks[sel], synopsis=syn, hashers=hashers)


def _add_meta(meta: dict, iv, ts) -> None:
    """Count packets and widen the first and last timestamps of their intervals."""
    for k, part in _by_interval(iv, ts):
        m = meta.setdefault(k, [0, None, None])
        m[0] += len(part)
        lo, hi = int(part.min()), int(part.max())
        m[1] = lo if m[1] is None else min(m[1], lo)
        m[2] = hi if m[2] is None else max(m[2], hi)


class _Grid:
    """Interval assignment by time (module docstring); remembers the range of intervals
    it gave (the sender's bound the receiver's: :func:`_stream_once`)."""

    def __init__(self, interval_ns, start_ns):
        self.delta = None if interval_ns is None else int(interval_ns)
        self.t0 = None if start_ns is None else int(start_ns)
        self.lo = self.hi = None

    def assign(self, ts: np.ndarray, side: str | None = None) -> np.ndarray:
        """The intervals of timestamps ``ts``; a ``"receiver"``'s clipped to the range
        the grid gave before (the sender's, read first)."""
        if self.t0 is None and len(ts):
            self.t0 = int(ts.min())
        if self.delta is None:
            iv = np.zeros(len(ts), np.int64)
        else:
            iv = np.floor_divide(ts - self.t0, self.delta)
        if side == "receiver":
            return iv if self.lo is None else np.clip(iv, self.lo, self.hi)
        if len(iv):
            lo, hi = int(iv.min()), int(iv.max())
            self.lo = lo if self.lo is None else min(self.lo, lo)
            self.hi = hi if self.hi is None else max(self.hi, hi)
        return iv


def _stable_order(keys: np.ndarray, order: np.ndarray, same: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` from an unstable ``order`` (``same``: the
    sorted keys' neighbours that are equal): the positions of repeated keys put back
    in increasing order (one ``lexsort`` of those positions only)."""
    start = np.ones(len(order), bool)
    start[1:] = ~same
    gid = np.cumsum(start) - 1
    at = np.flatnonzero(np.bincount(gid)[gid] > 1)
    sub = order[at]
    order = order.copy()
    order[at] = sub[np.lexsort((sub, gid[at]))]
    return order


def _sort_keys(keys: np.ndarray) -> tuple[np.ndarray, bool, np.ndarray | None]:
    """An argsort of uint64 ``keys``, whether it is stable, and (when it is) which
    sorted neighbours are equal (``same[i]``: the ``i``-th and ``i+1``-th). Fast path:
    each key's low bits replaced by its position, the values sorted (numpy's sort of
    plain uint64, vectorised, about four times faster than its argsort) and the positions
    read back; that order is the stable argsort unless two different keys share their
    high bits (checked; then numpy's argsort). Checked, equal high bits are equal keys:
    ``same`` comes from the sorted values, no second gather of the keys."""
    n = len(keys)
    bits = max(1, (n - 1).bit_length())
    if bits <= 32:
        low = np.uint64((1 << bits) - 1)
        packed = keys & ~low
        packed |= np.arange(n, dtype=np.uint64)
        packed.sort()
        order = (packed & low).astype(np.int64)
        packed &= ~low
        k = keys[order]
        same = packed[1:] == packed[:-1]
        if not (same & (k[1:] != k[:-1])).any():
            return order, True, same
    return np.argsort(keys), False, None


def _match(s_keys: np.ndarray, r_keys: np.ndarray, counts: dict | None = None):
    """Index pairs ``(si, ri)``: the ``t``-th receiver packet of a key (in file order)
    matches the ``t``-th sender packet of that key. One sort of both sides (numpy's
    unstable sort; when no key occurs more than twice a pair is two neighbours, else
    the positions of repeated keys are put back in file order). ``counts``, when given,
    receives ``dup_sender`` and ``dup_receiver`` (:func:`_duplicates` of each side,
    read from the same sort: equal neighbours of one side)."""
    if not len(s_keys) or not len(r_keys):
        if counts is not None:
            counts["dup_sender"], counts["dup_receiver"] = (_duplicates(s_keys),
                                                            _duplicates(r_keys))
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    ns = len(s_keys)
    keys = np.concatenate([s_keys, r_keys])
    order, stable, same = _sort_keys(keys)
    if same is None:
        k = keys[order]
        same = k[1:] == k[:-1]
    if not (same[1:] & same[:-1]).any():         # no key thrice: neighbours pair up
        at = np.flatnonzero(same)
        a, b = order[at], order[at + 1]
        one = (a >= ns) != (b >= ns)
        if counts is not None:                   # a pair of one side: one repeat
            counts["dup_sender"] = int(np.count_nonzero(~one & (a < ns)))
            counts["dup_receiver"] = int(np.count_nonzero(~one & (a >= ns)))
        a, b = a[one], b[one]
        return np.minimum(a, b), np.maximum(a, b) - ns
    if not stable:
        order = _stable_order(keys, order, same)     # senders first within a key
    k = keys[order]
    is_r = order >= ns
    if counts is not None:    # each side's copies of a key are neighbours: the repeats
        counts["dup_sender"] = int(np.count_nonzero(same & ~is_r[:-1] & ~is_r[1:]))
        counts["dup_receiver"] = int(np.count_nonzero(same & is_r[:-1] & is_r[1:]))
    start = np.ones(len(k), bool)
    start[1:] = k[1:] != k[:-1]
    gid = np.cumsum(start) - 1
    gstart = np.flatnonzero(start)
    senders = np.bincount(gid, weights=~is_r).astype(np.int64)[gid]
    occ = np.arange(len(k)) - gstart[gid] - senders     # receivers: their occurrence
    ok = is_r & (occ < senders)
    at = np.flatnonzero(ok)
    return order[gstart[gid[at]] + occ[at]], order[at] - ns


def _key_hashers(config: SynopsisConfig) -> Hashers | None:
    """The truth's match key is the packet hash over the default packet masks: the
    configuration's own packet hash when its masks are the default ones (no second
    pass), else an LDA hash with the default masks."""
    masks = default_masks(config.window_bytes)
    if (config.mask_packet_ipv4 == masks["packet_ipv4"].as_int()
            and config.mask_packet_ipv6 == masks["packet_ipv6"].as_int()):
        return None
    return hashers_for(LdaConfig(window_bytes=config.window_bytes, seed=config.seed))


def _dtypes(config: SynopsisConfig, marker: bool) -> dict:
    """The spilled records' fields: the flow index only where flows are tracked (LDS's
    flow rows); a quarter less to write and read back for the others."""
    rows = config.hash_count(HashPurpose.LDS_FLOW)
    base = [("key", "<u8"), ("ts", "<i8"), ("iv", "<i8")]
    if rows:
        base.append(("flow", "<i8"))
    if config.kind == "opa":          # each packet's record, in its capture's order
        base += [("p", "<u8"), ("seq", "<i8")]
    receiver = list(base)
    if marker and config.kind != "opa":
        receiver.append(("p", "<u8"))
        if rows:
            receiver.append(("rows", "<u8", (rows,)))
    return {"sender": np.dtype(base), "receiver": np.dtype(receiver)}


def _partitions(paths) -> int:
    size = max(os.path.getsize(os.fspath(p)) for p in paths)
    return max(1, math.ceil(size / _MIN_RECORD / _PART_PACKETS))


@dataclass
class _PartResult:
    """What one partition's pairing adds to the pair (:func:`_merge_part`)."""
    counts: dict = field(default_factory=lambda: {"sent": {}, "received": {}, "lost": {}})
    delays: list = field(default_factory=list)        # delay_stats(...)
    numbers: dict = field(default_factory=dict)       # sums: matched, negative, ...
    delay_min: int | None = None
    delay_max: int | None = None
    flow_truth: dict = field(default_factory=dict)
    r_synopses: dict = field(default_factory=dict)    # deferred receiver updates
    r_meta: dict = field(default_factory=dict)


def _flow_truth(out: _PartResult, n: int, s, si, both, delays) -> None:
    """Per interval of the partition's sender packets, per flow: packets received in
    the interval, their delay sum and packets lost (one grouping by interval, not a
    pass over the partition per interval; none for one interval). ``si[both]`` are the
    sender packets received in their interval, ``delays[both]`` their delays."""
    s_iv, s_flow = s["iv"], s["flow"]
    got = si[both]
    delays = delays[both]
    gone = np.ones(len(s), bool)
    gone[got] = False
    intervals = _counts(s_iv)
    if len(intervals) == 1:         # one interval (the default): no grouping, no copy
        received = {intervals[0][0]: (s_flow[got], delays)}
        lost = {intervals[0][0]: s_flow[gone]}
    else:
        received = {k: (v[:, 0], v[:, 1]) for k, v in _by_interval(
            s_iv[got], np.stack([s_flow[got], delays], axis=1))}
        lost = dict(_by_interval(s_iv[gone], s_flow[gone]))
    for iv, _ in intervals:
        acc = out.flow_truth.setdefault(iv, {"packets": np.zeros(n, np.int64),
                                             "delay_sum": np.zeros(n, np.int64),
                                             "lost": np.zeros(n, np.int64)})
        if iv in received:
            fl, d = received[iv]
            acc["packets"] += np.bincount(fl, minlength=n)
            np.add.at(acc["delay_sum"], fl, d)
        if iv in lost:
            acc["lost"] += np.bincount(lost[iv], minlength=n)


def _duplicates(keys: np.ndarray) -> int:
    """Packets whose key an earlier packet of the same capture has (repeated copies)."""
    k = np.sort(keys)
    return int(np.count_nonzero(k[1:] == k[:-1]))


def _count_into(target: dict, iv: np.ndarray) -> None:
    _add_counts(target, _counts(iv))


def _add_counts(target: dict, counts: list) -> None:
    for k, n in counts:
        target[k] = target.get(k, 0) + n


#: An OPA record as spilled by interval: interval, place in its capture, timestamp (ns),
#: packet hash P and match key.
_OPA_DTYPE = np.dtype([("iv", "<i8"), ("seq", "<i8"), ("ts", "<i8"), ("p", "<u8"),
                       ("key", "<u8")])


@dataclass
class OpaSpill:
    """OPA's per-packet records of both captures after the pairing (the receiver's
    intervals as the pairing gives them, its trimmed packets left out), spilled by
    ranges of intervals: bucket ``q`` of key partition ``p`` in ``<side>-<q>-<p>.bin``
    of ``folder``. Read back a bucket at a time (:meth:`intervals`), so the memory is
    that of the intervals of one bucket, not of the captures."""
    folder: str
    parts: int                    # key partitions (files per bucket and side)
    clip: tuple | None            # the sender's interval range (every record's)

    @property
    def buckets(self) -> int:
        if self.clip is None:
            return 1
        return int(min(self.parts, self.clip[1] - self.clip[0] + 1))

    def _bucket(self, iv: np.ndarray) -> np.ndarray:
        lo, hi = self.clip if self.clip is not None else (0, 0)
        span = hi - lo + 1
        return ((np.clip(iv, lo, hi) - lo) * self.buckets) // span

    def write(self, p: int, s: np.ndarray, r: np.ndarray) -> None:
        """Write a key partition's records of both sides (a pairing task)."""
        for side, recs in (("sender", s), ("receiver", r)):
            if not len(recs):
                continue
            out = np.empty(len(recs), _OPA_DTYPE)
            q = self._bucket(recs["iv"])
            order = None if self.buckets == 1 else np.argsort(q, kind="stable")
            for name in _OPA_DTYPE.names:
                out[name] = recs[name] if order is None else recs[name][order]
            q = q if order is None else q[order]
            bounds = np.flatnonzero(np.diff(q)) + 1
            for a, b in zip(np.r_[0, bounds], np.r_[bounds, len(q)]):
                out[a:b].tofile(os.path.join(self.folder, f"{side}-{q[a]}-{p}.bin"))

    def _load(self, side: str, q: int) -> np.ndarray:
        got = [np.fromfile(path, _OPA_DTYPE) for p in range(self.parts)
               if os.path.exists(path := os.path.join(self.folder, f"{side}-{q}-{p}.bin"))]
        return np.concatenate(got) if got else np.zeros(0, _OPA_DTYPE)

    def intervals(self):
        """``(interval, sender records, receiver records)`` in increasing interval
        order for every interval with records: the sender's in capture order, the
        receiver's in arrival order (timestamp, then capture order) as the taps saw
        them (:func:`host_sw.model.pcap.pair_captures`' order)."""
        for q in range(self.buckets):
            yield from self.bucket(q)

    def bucket_of(self, intervals) -> np.ndarray:
        """The bucket of each interval."""
        return self._bucket(np.asarray(intervals, np.int64))

    def bucket(self, q: int):
        """:meth:`intervals` of bucket ``q``."""
        s, r = self._load("sender", q), self._load("receiver", q)
        s = _columns(s, np.lexsort((s["seq"], s["iv"])))
        r = _columns(r, np.lexsort((r["seq"], r["ts"], r["iv"])))
        ivs = np.union1d(s["iv"], r["iv"])
        s_at = np.searchsorted(s["iv"], ivs)
        r_at = np.searchsorted(r["iv"], ivs)
        s_end = np.searchsorted(s["iv"], ivs, side="right")
        r_end = np.searchsorted(r["iv"], ivs, side="right")
        for k, iv in enumerate(ivs.tolist()):
            yield (iv, {n: c[s_at[k]:s_end[k]] for n, c in s.items()},
                   {n: c[r_at[k]:r_end[k]] for n, c in r.items()})


def _columns(recs: np.ndarray, order: np.ndarray) -> dict:
    """The fields of ``recs[order]`` as contiguous arrays (no structured copy)."""
    return {name: recs[name][order] for name in recs.dtype.names}


@dataclass
class _PartJob:
    """One partition's pairing (a task): both sides' spilled records of partition ``p``,
    the receiver's intervals clipped to the sender's range ``clip`` and its flow indices
    mapped by ``flow_map`` (its own flow table's onto the pair's)."""
    p: int
    s_spill: _Spill
    r_spill: _Spill
    config: SynopsisConfig
    marker: bool
    trim: tuple | None
    clip: tuple | None
    flow_map: np.ndarray | None
    flows: int
    opa: "OpaSpill | None" = None


def _pair_partition(job: _PartJob) -> _PartResult:
    s, r = job.s_spill.load("sender", job.p), job.r_spill.load("receiver", job.p)
    if job.clip is not None and len(r):
        r["iv"] = np.clip(r["iv"], *job.clip)
    if job.flow_map is not None and len(r):
        have = r["flow"] >= 0
        r["flow"][have] = job.flow_map[r["flow"][have]]
    out = _PartResult()
    num = out.numbers
    si, ri = _match(s["key"], r["key"], num)
    if job.trim is not None and len(r):
        # The receiver's packets of the window: those of its sender packets, and those
        # the sender capture does not hold that arrived where no edge explains them.
        lo, hi, margin = job.trim
        matched = np.zeros(len(r), bool)
        matched[ri] = True
        inside = (r["ts"] >= lo + margin) & (r["ts"] <= hi)
        keep = matched | inside
        num["left_out"] = int(len(r) - keep.sum())
        r = _take(r, np.flatnonzero(keep))
        si, ri = _match(s["key"], r["key"], num)
    num["unmatched"] = len(r) - len(ri)
    if job.trim is not None:
        num["received"] = len(r)
    deferred = job.marker or job.trim is not None
    if deferred and len(r):
        r_iv = r["iv"].copy()
        if job.marker:
            r_iv[ri] = s["iv"][si]
        flow = r["rows"].T if "rows" in r.dtype.names else None
        if job.opa is None:
            _update_synopses(job.config, hashers_for(job.config), out.r_synopses, r_iv,
                             PacketHashes(r["p"], None if flow is None
                                          else np.ascontiguousarray(flow)),
                             _ticks(r["ts"], job.config.tick_ns))
        _add_meta(out.r_meta, r_iv, r["ts"])
        r = r.copy()
        r["iv"] = r_iv
    delays = r["ts"][ri] - s["ts"][si]
    if len(delays):
        out.delay_min, out.delay_max = int(delays.min()), int(delays.max())
        num["delay_sum"] = int(delays.sum())
    num["matched"] = len(si)
    num["negative"] = int((delays < 0).sum())
    num["zero"] = int((delays == 0).sum())
    sent, received = _counts(s["iv"]), _counts(r["iv"])
    _add_counts(out.counts["sent"], sent)
    _add_counts(out.counts["received"], received)
    if len(sent) == 1 and [k for k, _ in received] == [sent[0][0]]:
        # one interval on both sides (the default): every match is in it; no gathers
        both = slice(None)
        out.delays = delay_stats(np.full(len(si), sent[0][0], np.int64), delays)
    else:
        both = r["iv"][ri] == s["iv"][si]
        out.delays = delay_stats(s["iv"][si[both]], delays[both])
    lost = np.ones(len(s), bool)
    lost[si[both]] = False
    _count_into(out.counts["lost"], s["iv"][lost])
    if job.flows:
        _flow_truth(out, job.flows, s, si, both, delays)
    if job.opa is not None:
        job.opa.write(job.p, s, r)
    return out


def _merge_synopses(target: dict, new: dict, clip=None) -> None:
    for k, syn in new.items():
        if clip is not None:
            k = min(max(k, clip[0]), clip[1])
        got = target.get(k)
        target[k] = syn if got is None else got.merged(syn)


def _merge_meta(target: dict, new: dict, clip=None) -> None:
    for k, (n, lo, hi) in new.items():
        if clip is not None:
            k = min(max(k, clip[0]), clip[1])
        m = target.setdefault(k, [0, None, None])
        m[0] += n
        if lo is not None:
            m[1] = lo if m[1] is None else min(m[1], lo)
            m[2] = hi if m[2] is None else max(m[2], hi)


def _merge_part(pair: StreamedPair, res: _PartResult) -> None:
    """Add a partition's result to the pair (in partition order: the truth's variance
    is combined in that order)."""
    num = res.numbers
    if res.delay_min is not None:
        pair.delay_min = (res.delay_min if pair.delay_min is None
                          else min(pair.delay_min, res.delay_min))
        pair.delay_max = (res.delay_max if pair.delay_max is None
                          else max(pair.delay_max, res.delay_max))
    pair.delay_sum += num.get("delay_sum", 0)
    pair.matched += num["matched"]
    pair.negative += num["negative"]
    pair.zero += num["zero"]
    pair.duplicates["sender"] += num["dup_sender"]
    pair.duplicates["receiver"] += num["dup_receiver"]
    pair.unmatched += num["unmatched"]
    pair.received += num.get("received", 0)
    pair.left_out["receiver"] += num.get("left_out", 0)
    t = pair.truth
    for name in ("sent", "received", "lost"):
        target = getattr(t, name)
        for k, n in res.counts[name].items():
            target[k] = target.get(k, 0) + n
    for stats in res.delays:
        t.combine(*stats)
    for iv, acc in res.flow_truth.items():
        got = pair.flow_truth.get(iv)
        if got is None:
            pair.flow_truth[iv] = acc
        else:
            for k in got:
                got[k] += acc[k]
    _merge_synopses(pair.synopses["receiver"], res.r_synopses)
    _merge_meta(pair.meta["receiver"], res.r_meta)


def common_window(pair: StreamedPair) -> tuple[int, int, int] | None:
    """``(lo, hi, margin)``: the sender times both captures saw, when a capture started
    late or stopped early (or the receiver holds packets the sender capture does not),
    else None (the whole captures). ``margin`` is the largest delay the pair shows: a
    receiver that started more than it after the sender's first packet started late
    (sender packets from its first one on), one that stopped more than it before the
    sender's last packet stopped early (sender packets up to its last one minus the
    margin); receiver packets the sender capture does not hold are left out within the
    margin of the window's edges."""
    s_ends, r_ends = pair.ends("sender"), pair.ends("receiver")
    if s_ends is None or r_ends is None or pair.delay_max is None:
        return None
    margin = max(pair.delay_max, 0)
    lo, hi = s_ends
    if r_ends[0] > s_ends[0] + margin:
        lo = r_ends[0]
    if r_ends[1] + margin < s_ends[1]:
        hi = r_ends[1] - margin
    if (lo, hi) == s_ends and not pair.unmatched:
        return None
    return lo, hi, margin


def stream_pair(sender, receiver, config: SynopsisConfig, *, mode: str = "time",
                interval_ns: int | None = None, start_ns: int | None = None,
                chunk_bytes: int = DEFAULT_CHUNK_BYTES, progress=None,
                spill_dir=None, trim: bool = True, run=None) -> StreamedPair:
    """Stream two capture files (paths) into per-interval synopses of both points, the
    truth and the pairing counts (module docstring). ``progress(n)`` is told the bytes
    read (not by a Dask cluster's workers). When the captures saw different windows
    (:func:`common_window`) and ``trim``, they are read again keeping the window both
    saw; the pair's ``window`` and ``left_out`` say what was left out. ``run`` runs the
    tasks (:mod:`host_sw.estimators.offline_jobs`: worker processes, a Dask cluster;
    default in this process); ``spill_dir`` must then be a folder every worker reaches.
    Raises :class:`~host_sw.model.pcap.CaptureError` for unreadable captures."""
    pair = _stream_once(sender, receiver, config, mode=mode, interval_ns=interval_ns,
                        start_ns=start_ns, chunk_bytes=chunk_bytes, progress=progress,
                        spill_dir=spill_dir, run=run)
    window = common_window(pair) if trim else None
    if window is None or window[0] > window[1]:
        pair.window = window          # an empty window: the pair is refused
        return pair
    again = _stream_once(sender, receiver, config, mode=mode, interval_ns=interval_ns,
                         start_ns=pair.start_ns, chunk_bytes=chunk_bytes, progress=None,
                         spill_dir=spill_dir, window=window, run=run)
    again.window = window
    return again


@dataclass
class _SideJob:
    """One capture's pass (a task)."""
    path: object
    side: str
    config: SynopsisConfig
    options: dict             # chunk_bytes, interval_ns, start_ns (, progress inline)
    deferred: bool
    keep: tuple | None
    dtype: np.dtype
    parts: int
    directory: str
    cache_parts: int          # RDA: partitions of the cache records, else 0
    flush: bool               # spill everything to files (a task in another process)
    byte_range: ByteRange | None = None    # a part of the capture (its own folder)


@dataclass
class _SideResult:
    synopses: dict
    meta: dict
    counted: int
    left_out: int
    lo: int | None            # the range of intervals the pass gave
    hi: int | None
    t0: int | None
    flows: FlowTable | None
    spill: _Spill
    cache: _Spill | None
    records: int = 0          # records read (OPA's places in the capture)
    end: int | None = None    # a byte range's end (ByteRange.end)


def _side_pass(job: _SideJob) -> _SideResult:
    """Read one capture, or one byte range of it (:class:`_Pass`); its spill on files
    when ``job.flush``."""
    share = max(1, SPILL_MEMORY_BYTES // 2)
    folder = job.directory
    if job.byte_range is not None:
        folder = os.path.join(job.directory, f"range-{job.side}-{job.byte_range.start}")
        os.makedirs(os.path.join(folder, "cache"), exist_ok=True)
    spill = _Spill(job.parts, {job.side: job.dtype}, folder=folder, budget=share)
    cache = (_Spill(job.cache_parts, {job.side: _CACHE_DTYPE},
                    folder=os.path.join(folder, "cache"), budget=share,
                    partition=_id_range_partition)
             if job.cache_parts else None)
    one = _Pass(job.config, spill, job.options, keep=job.keep, cache_spill=cache)
    try:
        one.run(job.path, job.side, deferred=job.deferred, byte_range=job.byte_range)
    except CaptureError:
        if job.byte_range is None:
            raise
        # a range from a wrongly guessed start reads nonsense: the capture is read
        # again in one pass (_side_passes), which raises the error if it is the file's
        return _SideResult({}, {}, 0, 0, None, None, None, None, spill, cache, 0, -1)
    if job.flush:
        spill.flush()
        if cache is not None:
            cache.flush()
    return _SideResult(one.synopses, one.meta, one.counted, one.left_out, one.grid.lo,
                       one.grid.hi, one.grid.t0, one.flows, spill, cache, one.seq,
                       None if job.byte_range is None else job.byte_range.end)


class _RangeSpills:
    """The spills of one capture's byte ranges read as one spill, partition by
    partition in range order (the capture's order); each range's flow indices mapped
    onto the pair's table and its OPA places moved by the records before it."""

    def __init__(self, spills: list, flow_maps: list | None = None,
                 seq_offsets: list | None = None):
        self.spills, self.parts = spills, spills[0].parts
        self.flow_maps, self.seq_offsets = flow_maps, seq_offsets

    def load(self, side: str, p: int) -> np.ndarray:
        got = []
        for i, spill in enumerate(self.spills):
            recs = spill.load(side, p)
            if not len(recs):
                continue
            names = recs.dtype.names
            fmap = None if self.flow_maps is None else self.flow_maps[i]
            if fmap is not None and "flow" in names:
                have = recs["flow"] >= 0
                recs["flow"][have] = fmap[recs["flow"][have]]
            if self.seq_offsets is not None and self.seq_offsets[i] and "seq" in names:
                recs["seq"] += self.seq_offsets[i]
            got.append(recs)
        if not got:
            return self.spills[0].load(side, p)      # an empty array of the dtype
        return np.concatenate(got) if len(got) > 1 else got[0]


def _merge_ranges(results: list, pair_flows: FlowTable | None) -> _SideResult:
    """One capture's result from its byte ranges' results (in range order): synopses
    and counts added, the interval range widened, the first range's grid origin, the
    spills read as one (:class:`_RangeSpills`). The ranges' flows are added to
    ``pair_flows`` (the pair's table; the first range's own when ``None``) in range
    order: the order one pass over the capture gives them, since the ranges' chunks are
    those of one pass."""
    first = results[0]
    synopses, meta = {}, {}
    for res in results:
        _merge_synopses(synopses, res.synopses)
        _merge_meta(meta, res.meta)
    lows = [r.lo for r in results if r.lo is not None]
    flows = first.flows if pair_flows is None else pair_flows
    flow_maps = None
    if flows is not None:
        flow_maps = [None if res.flows is flows else _flow_map(flows, res.flows)
                     for res in results]
    offsets = np.cumsum([0] + [r.records for r in results[:-1]]).tolist()
    spill = _RangeSpills([r.spill for r in results], flow_maps, offsets)
    cache = (None if first.cache is None
             else _RangeSpills([r.cache for r in results]))
    return _SideResult(synopses, meta, sum(r.counted for r in results),
                       sum(r.left_out for r in results),
                       min(lows) if lows else None,
                       max(r.hi for r in results if r.hi is not None) if lows else None,
                       next((r.t0 for r in results if r.t0 is not None), None),
                       flows, spill, cache, sum(r.records for r in results), results[-1].end)


#: An RDA cache record: a counted packet's ID and timestamp (ticks).
_CACHE_DTYPE = np.dtype([("id", "<u8"), ("tick", "<u8")])


def _first_time(path, config, chunk_bytes, keep) -> int | None:
    """The earliest timestamp of the first chunk with packets (in ``keep``): where a
    pass's interval grid starts when no start is given."""
    for chunk in iter_capture(path, window_bytes=config.window_bytes,
                              chunk_bytes=chunk_bytes):
        ts = chunk.timestamps_ns
        if keep is not None:
            ts = ts[(ts >= keep[0]) & (ts <= keep[1])]
        if len(ts):
            return int(ts.min())
    return None


def _build_cache(job: tuple) -> tuple:
    """A side's RDA cache from its cache records (a task: ``(spill, side, directory)``):
    the IDs seen once, sorted, with their ticks, written to two files; returns
    ``(ids path, ticks path, count)`` for :func:`mapped_cache`. One cache partition is
    in memory while it is built. IDs seen more than once are left out (the paper discards
    duplicates; :func:`host_sw.estimators.offline.capture_cache`)."""
    spill, side, directory = job
    paths = {k: os.path.join(directory, f"{side}-{k}.bin") for k in ("ids", "ticks")}
    n = 0
    with open(paths["ids"], "wb") as f_ids, open(paths["ticks"], "wb") as f_ticks:
        for q in range(spill.parts):
            recs = spill.load(side, q)
            if not len(recs):
                continue
            order, _, _ = _sort_keys(recs["id"])   # equal IDs are dropped: any order
            ids, ticks = recs["id"][order], recs["tick"][order]
            once = np.ones(len(ids), bool)
            same = ids[1:] == ids[:-1]
            once[1:] &= ~same
            once[:-1] &= ~same
            ids[once].tofile(f_ids)
            ticks[once].tofile(f_ticks)
            n += int(once.sum())
    return paths["ids"], paths["ticks"], n


def mapped_cache(built: tuple) -> PacketCache:
    """The :class:`PacketCache` of :func:`_build_cache`'s files, mapped (``np.memmap``):
    only the pages the decoder searches are resident."""
    ids, ticks, n = built
    if not n:
        return PacketCache(np.zeros(0, np.uint64), np.zeros(0, np.uint64))
    return PacketCache(np.memmap(ids, np.uint64, "r", shape=(n,)),
                       np.memmap(ticks, np.uint64, "r", shape=(n,)))


def _flow_map(table: FlowTable | None, other: FlowTable | None) -> np.ndarray | None:
    """Add ``other``'s flows to ``table`` (new ones in ``other``'s order: the order one
    table filled by both passes in turn would have); the index in ``table`` of each of
    ``other``'s flows."""
    if table is None or other is None:
        return None
    out = np.empty(len(other), np.int64)
    new = []
    for key, j in other.index.items():
        got = table.index.get(key)
        if got is None:
            got = table.index[key] = len(table.index)
            new.append(j)
        out[j] = got
    if new:
        table._add(other.hashes[new], other.windows[new], other.classes[new])
    return out


def _stream_once(sender, receiver, config: SynopsisConfig, *, mode, interval_ns,
                 start_ns, chunk_bytes, progress, spill_dir, window=None,
                 run=None) -> StreamedPair:
    """One reading of the two captures (of the sender times ``window[:2]`` only, the
    receiver's packets trimmed as :func:`common_window` says, when given). The two
    passes, then the partitions' pairings, are tasks of ``run``
    (:mod:`host_sw.estimators.offline_jobs`; in this process by default): results are
    merged in a fixed order, so they are the same however the tasks ran."""
    if mode not in ("marker", "time"):
        raise ValueError(f"mode must be 'marker' or 'time', not {mode!r}")
    if interval_ns is not None and int(interval_ns) <= 0:
        raise ValueError(f"interval_ns must be positive, not {interval_ns}")
    run = run or inline_runner()
    marker = mode == "marker"
    deferred = marker or window is not None
    dtypes = _dtypes(config, deferred)
    parts = _partitions((sender, receiver))
    keep = None if window is None else window[:2]
    directory = tempfile.mkdtemp(prefix="ldactl-pair-", dir=spill_dir)
    os.mkdir(os.path.join(directory, "cache"))
    os.mkdir(os.path.join(directory, "opa"))
    try:
        t0 = start_ns
        if t0 is None and interval_ns is not None:    # one interval: each pass's own
            t0 = _first_time(sender, config, chunk_bytes, keep)
            if t0 is None:
                t0 = _first_time(receiver, config, chunk_bytes, None)
        options = {"chunk_bytes": chunk_bytes, "interval_ns": interval_ns, "start_ns": t0,
                   "progress": run.task_progress(progress)}
        cache_parts = parts if config.kind == "rda" else 0
        side_jobs = [
            _SideJob(sender, "sender", config, options, False, keep, dtypes["sender"],
                     parts, directory, cache_parts, not run.inline),
            _SideJob(receiver, "receiver", config, options, deferred, None,
                     dtypes["receiver"], parts, directory, cache_parts, not run.inline)]
        s_list, r_list = _side_passes(run, side_jobs, chunk_bytes)
        s_res = s_list[0] if len(s_list) == 1 else _merge_ranges(s_list, None)
        flows = s_res.flows
        if len(r_list) == 1:
            r_res = r_list[0]
            flow_map = _flow_map(flows, r_res.flows)
        else:                   # the ranges' flows mapped onto the pair's as they load
            r_res = _merge_ranges(r_list, flows)
            flow_map = None
        clip = None if s_res.lo is None else (s_res.lo, s_res.hi)
        r_synopses, r_meta = {}, {}
        _merge_synopses(r_synopses, r_res.synopses, clip)
        _merge_meta(r_meta, r_res.meta, clip)
        caches = {side: None for side in ("sender", "receiver")}
        cache_files = None
        if cache_parts:
            built = run.map(_build_cache, [(s_res.cache, "sender", directory),
                                           (r_res.cache, "receiver", directory)])
            caches = {"sender": mapped_cache(built[0]), "receiver": mapped_cache(built[1])}
            cache_files = {"sender": built[0], "receiver": built[1]}
        pair = StreamedPair(config, {"sender": s_res.synopses, "receiver": r_synopses},
                            {"sender": s_res.meta, "receiver": r_meta}, _Truth(),
                            s_res.counted, 0 if window else r_res.counted, 0, 0, 0,
                            caches, flows, {},
                            start_ns=next((x for x in (t0, s_res.t0, r_res.t0)
                                           if x is not None), None))
        pair.left_out["sender"] = s_res.left_out
        pair.cache_files = cache_files
        if config.kind == "opa":
            pair.opa = OpaSpill(os.path.join(directory, "opa"), parts, clip)
        n_flows = 0 if flows is None else len(flows)
        jobs = [_PartJob(p, s_res.spill, r_res.spill, config, marker, window, clip,
                         flow_map, n_flows, pair.opa) for p in range(parts)]
        for res in run.map(_pair_partition, jobs):
            _merge_part(pair, res)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    pair._directory = directory       # the RDA caches' files live as long as the pair
    weakref.finalize(pair, shutil.rmtree, directory, True)
    _remove_spill(directory)
    return pair


def _range_count(run) -> int:
    """Byte ranges each capture is read in: one per worker of ``run``."""
    return max(1, int(getattr(run, "workers", 1)))


def _side_passes(run, jobs: list, chunk_bytes: int) -> tuple[list, list]:
    """Both captures' passes (``jobs``: the sender's and the receiver's) as tasks of
    ``run``: each classic pcap in :func:`_range_count` byte ranges of whole blocks
    (:func:`~host_sw.model.pcap_stream.classic_ranges`), so that every worker reads
    from the start; the results of each capture's ranges, in order. A capture whose
    ranges do not chain (a split point's record guessed wrong) is read again in one
    task."""
    tasks, counts = [], []
    n = _range_count(run)
    # the split points of both captures found at once, one task each
    found = (run.map(_classic_ranges_task, [(job.path, n, chunk_bytes) for job in jobs])
             if n > 1 else [None] * len(jobs))
    for job, ranges in zip(jobs, found):
        part = ([job] if ranges is None else
                [dataclasses.replace(job, byte_range=r) for r in ranges])
        tasks += part
        counts.append(len(part))
    results = run.map(_side_pass, tasks)
    out, at = [], 0
    for job, k in zip(jobs, counts):
        got, part = results[at:at + k], tasks[at:at + k]
        at += k
        if k > 1 and (any(g.end == -1 for g in got) or not ranges_chain(
                [dataclasses.replace(t.byte_range, end=g.end) for t, g in zip(part, got)])):
            got = run.map(_side_pass, [job])
        out.append(got)
    return out[0], out[1]


def _classic_ranges_task(job: tuple):
    """:func:`~host_sw.model.pcap_stream.classic_ranges` of ``(path, parts, chunk_bytes)``
    (a task: about 25 ms a split point)."""
    return classic_ranges(*job)


def _remove_spill(directory: str) -> None:
    """Delete the spilled partitions (the RDA caches' files stay)."""
    for name in os.listdir(directory):
        if name.startswith("range-"):
            shutil.rmtree(os.path.join(directory, name), ignore_errors=True)
    for root in (directory, os.path.join(directory, "cache")):
        for name in os.listdir(root):
            path = os.path.join(root, name)
            if os.path.isfile(path) and (root != directory or not name.endswith(
                    ("-ids.bin", "-ticks.bin"))):
                os.remove(path)
