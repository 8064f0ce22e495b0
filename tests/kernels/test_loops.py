# SPDX-License-Identifier: BSD-2-Clause
"""The C loops of :mod:`host_sw.kernels` against the Python loops they stand in for
(run as plain Python: the reference) and numba's compilation of them (the fallback),
bit for bit: records cut short, big- and little-endian headers, strided views, repeated
indices, fold collisions. Also: the library is built by the set-up, ``ldactl estimate``
starts without numba, and a wrapper refuses an output it would write past."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from host_sw import kernels
from host_sw.contracts import hashing
from host_sw.contracts.config import LdsConfig
from host_sw.estimators import offline_stream
from host_sw.model import golden_lda_rda_lds as golden
from host_sw.model import pcap_stream
from host_sw.model.golden_lda_rda_lds import Hashers

REFERENCE = {
    "_walk_loop": pcap_stream._walk_loop,
    "_extract_loop": pcap_stream._extract_loop,
    "_extract_hash_loop": pcap_stream._extract_hash_loop,
    "_table_xor_loop": hashing._table_xor_loop,
    "_sbox_xor_loop": hashing._sbox_xor_loop,
    "_add_at_loop": golden._add_at_loop,
    "_xor_at_loop": golden._xor_at_loop,
    "_positions_loop": offline_stream._positions_loop,
    "_put_loop": offline_stream._put_loop,
    "_insert_loop": offline_stream._insert_loop,
    "_probe_loop": offline_stream._probe_loop,
    "_fold_probe_loop": offline_stream._fold_probe_loop,
    "_group_loop": offline_stream._group_loop,
}


def test_every_compiled_loop_has_its_c_loop_and_the_library_is_built():
    """The set-up builds the library (``pip install -e .``: a C compiler is needed for
    the fast start), of the version the wrappers call, with a C loop for every loop
    the package compiles."""
    assert kernels.library() is not None, (
        "host_sw/kernels/_loops*.so is missing or stale: run pip install -e . (needs cc)")
    assert set(kernels.LOOPS) == set(REFERENCE)
    for name, fn in REFERENCE.items():
        assert fn.__name__ == name


def _numba(fn):
    numba = pytest.importorskip("numba")
    return numba.njit(cache=True, nogil=True)(fn)


def _both(name):
    """``[("c", loop), ("numba", loop)]`` for a loop."""
    return [("c", kernels.LOOPS[name]), ("numba", _numba(REFERENCE[name]))]


def _records(rng, count, le, width, snap=None):
    """A classic pcap block of ``count`` records (frames from 0 to 140 bytes captured,
    IPv4, IPv6, control and other EtherTypes) and the zero pad a block has."""
    order = "<" if le else ">"
    parts = []
    for i in range(count):
        cap = int(rng.integers(0, 141)) if snap is None else snap
        frame = rng.integers(0, 256, cap).astype(np.uint8)
        kind = i % 4
        if cap >= 15:
            frame[12:14] = [(0x08, 0x00), (0x86, 0xDD), (0x88, 0xB5), (0x08, 0x06)][kind]
            frame[14] = (4 if kind == 0 else 6) << 4 | 5
        head = np.array([i, i * 7, cap, cap + 4], order + "u4").view(np.uint8)
        parts += [head, frame]
    data = np.concatenate(parts)
    return np.concatenate([data, np.zeros(16 + width, np.uint8)]), len(data)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), le=st.booleans(), cut=st.integers(0, 40))
def test_walk_extract_and_extract_hash_equal_the_python_loops(seed, le, cut):
    rng = np.random.default_rng(seed)
    width = LdsConfig().window_bytes
    buf, end = _records(rng, 60, le, width)
    end -= cut                                    # a record cut by the block's end
    want_starts = np.zeros(end // 16 + 1, np.int64)
    want = REFERENCE["_walk_loop"](buf, end, le, want_starts)
    n = want[0]
    spec = pcap_stream.WindowHashes.of(Hashers(LdsConfig()).window_tables())
    outputs = spec.count.shape[1]

    def extract_hash(fn, keep):
        f, c = np.empty((n, 4), np.int64), np.empty(n, np.int64)
        w = np.empty((n if keep else 0, width), np.uint8)
        h = np.empty((outputs, n), np.uint64)
        fn(buf, want_starts[:n], le, f, c, w, keep, spec.which, spec.count, spec.tables, h)
        return f, c, w, h

    ref = {keep: extract_hash(REFERENCE["_extract_hash_loop"], keep) for keep in (0, 1)}
    assert {0, 1, 2, 3, 5} >= set(ref[1][1].tolist()) and 0 in ref[1][1]
    starts = np.zeros_like(want_starts)
    assert kernels.LOOPS["_walk_loop"](buf, end, le, starts) == want
    assert np.array_equal(starts[:n], want_starts[:n])
    extract = kernels.LOOPS["_extract_loop"]
    fields, windows = np.empty((n, 4), np.int64), np.empty((n, width), np.uint8)
    extract(buf, want_starts[:n], le, fields, windows)
    assert np.array_equal(fields, ref[1][0]) and np.array_equal(windows, ref[1][2])
    for keep in (0, 1):
        got = extract_hash(kernels.LOOPS["_extract_hash_loop"], keep)
        for a, b in zip(got, ref[keep]):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("le", [True, False], ids=["little", "big"])
def test_numba_fallback_reads_records_as_the_c_loops(le):
    rng = np.random.default_rng(5)
    width = LdsConfig().window_bytes
    buf, end = _records(rng, 3000, le, width)
    spec = pcap_stream.WindowHashes.of(Hashers(LdsConfig()).window_tables())
    results = []
    for _, walk in _both("_walk_loop"):
        starts = np.zeros(end // 16 + 1, np.int64)
        results.append((walk(buf, end - 3, le, starts), starts.copy()))
    assert results[0][0] == results[1][0] and np.array_equal(results[0][1], results[1][1])
    n, starts = results[0][0][0], results[0][1][:results[0][0][0]]
    got = []
    for _, fn in _both("_extract_hash_loop"):
        out = (np.empty((n, 4), np.int64), np.empty(n, np.int64),
               np.empty((n, width), np.uint8), np.empty((spec.count.shape[1], n), np.uint64))
        fn(buf, starts, le, out[0], out[1], out[2], True, spec.which, spec.count,
           spec.tables, out[3])
        got.append(out)
    for a, b in zip(*got):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("dtype,size", [(np.uint8, 256), (np.uint16, 65536)])
def test_table_xor_of_strided_columns(dtype, size):
    rng = np.random.default_rng(1)
    big = rng.integers(0, size, (2000, 24)).astype(dtype)
    columns = big[::3, 2:20:2]                    # strided rows and columns
    which = np.array([0, 3, 4, 8], np.int64)
    tables = rng.integers(0, 2**64, (4, size), dtype=np.uint64)
    want = np.empty(len(columns), np.uint64)
    REFERENCE["_table_xor_loop"](columns, which, tables, want)
    for _, fn in _both("_table_xor_loop"):
        out = np.empty_like(want)
        fn(columns, which, tables, out)
        assert np.array_equal(out, want)


def test_sbox_xor_add_at_xor_at():
    rng = np.random.default_rng(2)
    ids = rng.integers(0, 2**64, 5000, dtype=np.uint64)
    tables = rng.integers(0, 2**64, (3, 8, 256), dtype=np.uint64)
    want = np.empty((3, len(ids)), np.uint64)
    REFERENCE["_sbox_xor_loop"](ids[:300], hashing._SBOX_BYTE, tables, want[:, :300])
    flat = rng.integers(0, 64, 5000).astype(np.int64)        # many repeats
    values = rng.integers(0, 2**64, 5000, dtype=np.uint64)
    add, xor = np.zeros(64, np.uint64), np.zeros(64, np.int64)
    np.add.at(add, flat, values)
    np.bitwise_xor.at(xor, flat, values.view(np.int64))
    for _, fn in _both("_sbox_xor_loop"):
        out = np.empty((3, len(ids)), np.uint64)
        fn(ids, hashing._SBOX_BYTE, tables, out)
        assert np.array_equal(out[:, :300], want[:, :300])
    for (_, a), (_, x) in zip(_both("_add_at_loop"), _both("_xor_at_loop")):
        t, u = np.zeros(64, np.uint64), np.zeros(64, np.int64)
        a(t, flat, values)
        x(u, flat, values.view(np.int64))
        assert np.array_equal(t, add) and np.array_equal(u, xor)


@pytest.mark.parametrize("dtype", [np.uint16, np.int64])
def test_positions_and_put_build_the_partitioned_records(dtype):
    rng = np.random.default_rng(3)
    parts = 7
    part = rng.integers(0, parts, 4000).astype(dtype)
    want_pos, want_bounds = np.empty(4000, np.int64), np.zeros(parts + 1, np.int64)
    REFERENCE["_positions_loop"](part, parts, want_pos, want_bounds)
    assert np.array_equal(want_pos, np.argsort(np.argsort(part, kind="stable"),
                                               kind="stable"))
    src = rng.integers(0, 2**64, (4000, 3), dtype=np.uint64)[:, 1]   # strided
    want_dst = np.zeros((4000, 4), np.uint64)
    REFERENCE["_put_loop"](want_dst, 2, src, want_pos)
    for (_, positions), (_, put) in zip(_both("_positions_loop"), _both("_put_loop")):
        pos, bounds = np.empty(4000, np.int64), np.zeros(parts + 1, np.int64)
        positions(part, parts, pos, bounds)
        assert np.array_equal(pos, want_pos) and np.array_equal(bounds, want_bounds)
        dst = np.zeros((4000, 4), np.uint64)
        put(dst, 2, src, pos)
        assert np.array_equal(dst, want_dst)


def test_fold_table_insert_probe_and_fold_probe():
    """Known flows in the folds' table, probed by folds and by packets' row hashes
    (strided), with two flows of one fold (the second is not in the table) and
    packets of unknown flows."""
    rng = np.random.default_rng(4)
    rows = 4
    known = rng.integers(0, 2**32, (300, rows), dtype=np.uint64).astype(np.uint32)
    folds = offline_stream._fold(known)
    folds[7] = folds[3]                           # a fold shared by two flows
    size = 1 << 11
    pick = rng.integers(0, 400, 5000)             # >= 300: a flow not known
    hashes = rng.integers(0, 2**64, (rows, 5000), dtype=np.uint64)
    hit = pick < 300
    hashes[:, hit] = (hashes[:, hit] & np.uint64(0xFFFFFFFF00000000)) | known[pick[hit]].T
    big = np.zeros((rows, 10000), np.uint64)
    big[:, ::2] = hashes
    flow = big[:, ::2]                            # a strided view
    sel = np.flatnonzero(rng.random(5000) < 0.8).astype(np.int64)
    results = []
    for name, fns in [("ref", [REFERENCE[n] for n in ("_insert_loop", "_probe_loop",
                                                     "_fold_probe_loop")])] + [
            (b, [dict(_both(n))[b] for n in ("_insert_loop", "_probe_loop",
                                             "_fold_probe_loop")]) for b in ("c", "numba")]:
        keys, ids = np.zeros(size, np.uint64), np.full(size, -1, np.int64)
        fns[0](folds, keys, ids)
        found = np.empty(len(folds), np.int64)
        fns[1](folds, keys, ids, found)
        fold, out = np.empty(len(sel), np.uint64), np.empty(len(sel), np.int64)
        with np.errstate(over="ignore"):        # the Python loop's wrapping multiplies
            fns[2](flow, sel, keys, ids, known, fold, out)
        results.append((keys, ids, found, fold, out))
    for got in results[1:]:
        for a, b in zip(got, results[0]):
            assert np.array_equal(a, b)
    keys, ids, found, fold, out = results[0]
    assert found[7] == 3 and (out >= 0).sum() > 1000 and (out == -1).sum() > 500


@pytest.mark.parametrize("size", [1 << 6, 1 << 12])
def test_group_by_folds_with_a_collision_and_a_full_table(size):
    """Packets grouped by their rows' folds in first-occurrence order; -1 when two rows
    share a fold; -2 when the groups fill half the table (the caller grows it)."""
    rng = np.random.default_rng(6)
    flows = rng.integers(0, 2**32, (40, 3), dtype=np.uint64).astype(np.uint32)
    rows = np.ascontiguousarray(flows[rng.integers(0, 40, 3000)])
    fold = offline_stream._fold(rows)
    results = []
    for name, fn in [("ref", REFERENCE["_group_loop"])] + _both("_group_loop"):
        first, group = np.empty(3000, np.int64), np.empty(3000, np.int64)
        keys, slots = np.zeros(size, np.uint64), np.full(size, -1, np.int64)
        groups = fn(fold, rows, keys, slots, first, group)
        results.append((groups, first[:max(groups, 0)], group if groups >= 0 else None))
        other = int(np.flatnonzero((rows != rows[0]).any(axis=1))[0])
        bad = fold.copy()
        bad[(rows == rows[other]).all(axis=1)] = fold[0]   # another flow on packet 0's fold
        if size > 80:
            assert fn(bad, rows, np.zeros(size, np.uint64), np.full(size, -1, np.int64),
                      np.empty(3000, np.int64), np.empty(3000, np.int64)) == -1
    if size < 80:
        assert all(r[0] == -2 for r in results)
        return
    want_first = np.unique(fold, return_index=True)[1]
    for groups, first, group in results:
        assert groups == 40 and np.array_equal(np.sort(first), np.sort(want_first))
        assert np.array_equal(first[group], np.array([first[g] for g in group]))
        assert (rows[first[group]] == rows).all() and (np.diff(first) > 0).all()


def test_wrappers_refuse_outputs_they_would_write_past():
    ids = np.zeros(10, np.uint64)
    tables = np.zeros((2, 8, 256), np.uint64)
    with pytest.raises(TypeError):
        kernels.LOOPS["_sbox_xor_loop"](ids, hashing._SBOX_BYTE, tables,
                                        np.empty((2, 9), np.uint64))
    with pytest.raises(TypeError):
        kernels.LOOPS["_sbox_xor_loop"](ids, hashing._SBOX_BYTE, tables,
                                        np.empty((2, 10), np.int32))
    with pytest.raises(IndexError):
        kernels.LOOPS["_add_at_loop"](np.zeros(4, np.uint64), np.array([0, 4]),
                                      np.ones(2, np.uint64))
    with pytest.raises(IndexError):
        kernels.LOOPS["_put_loop"](np.zeros((3, 2), np.uint64), 1, np.ones(2, np.uint64),
                                   np.array([0, 3]))
    with pytest.raises(TypeError):
        kernels.LOOPS["_table_xor_loop"](np.zeros((4, 2), np.int64), np.zeros(1, np.int64),
                                         np.zeros((1, 256), np.uint64), np.empty(4, np.uint64))
    with pytest.raises(ValueError):
        kernels.LOOPS["_probe_loop"](np.zeros(3, np.uint64), np.zeros(4, np.uint64),
                                     np.zeros(4, np.int64), np.empty(3, np.int64))


def test_an_estimate_starts_without_numba():
    """``ldactl estimate``'s start (its imports and every compiled loop loaded) imports
    no numba where the C library is built: numba's import and first load were two
    thirds of the start's CPU time. ``LDA_LOOPS=numba`` runs numba's loops, ``numpy``
    none (numpy's paths)."""
    code = ("import sys, host_sw.cli.main\n"
            "from host_sw.contracts.hashing import compiled\n"
            "from host_sw.kernels import implementation\n"
            "from host_sw.model.pcap_stream import _walk_loop\n"
            "from host_sw.estimators.offline_stream import warm_loops\n"
            "warm_loops()\nloop = compiled(_walk_loop)\n"
            "print('numba' in sys.modules, implementation(),\n"
            "      'none' if loop is None else 'C' if loop.__module__ == 'host_sw.kernels'\n"
            "      else 'numba')")
    for choice, want in (("auto", "False c C"), ("numba", "True numba numba"),
                         ("numpy", "False numpy none")):
        env = dict(os.environ, LDA_LOOPS=choice)
        got = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True).stdout.strip()
        assert got == want, choice
