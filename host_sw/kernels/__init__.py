# SPDX-License-Identifier: BSD-2-Clause
"""The compiled loops of capture analysis in C (``loops.c``), called through ctypes.

Each loop here is a Python function elsewhere in ``host_sw`` (named in :data:`LOOPS`),
written for numba, that :func:`host_sw.contracts.hashing.compiled` compiles; the Python
function is the reference and this C one computes the same bits. The C library comes
first: numba's import and its first load of cached code cost every ``ldactl estimate``
run about 0.36 s of CPU time and 130 MB of memory before a byte is read, two thirds of
its start (``docs/BENCHMARKS.md``), where the library loads in a millisecond. numba
stays the fallback where the library was not built (no C compiler at install), then
numpy.

Hand-written because no published package has these loops: they read this product's
record layouts (pcap records, spill records, the flow table's folds). The library is
plain C with no Python API (built by setuptools at install, an optional extension);
ctypes releases the GIL for each call, as numba's ``nogil`` did, so ``--threads`` runs
them in parallel. Every wrapper checks the shapes and dtypes it writes through before
the call: a C loop does not check its indices.

``LDA_LOOPS`` picks the implementation: ``auto`` (the default: C, else numba, else
numpy), ``c``, ``numba`` or ``numpy`` (for comparing them; ``c`` or ``numba`` where it
is missing means numpy).
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import os
from pathlib import Path

import numpy as np

__all__ = ["LOOPS", "VERSION", "library", "choice", "implementation"]

#: The version of ``loops.c`` this module calls (its ``lda_kernels_version()``): a
#: library built from another (a stale build of an editable install) is not used.
VERSION = 2

#: Python loop name → the wrapper of its C loop.
LOOPS: dict = {}

_I64, _U64, _U8, _U16, _U32 = (np.dtype(np.int64), np.dtype(np.uint64), np.dtype(np.uint8),
                               np.dtype(np.uint16), np.dtype(np.uint32))
_P, _N = ctypes.c_void_p, ctypes.c_int64
_SIGNATURES = {
    "lda_walk": (_N, [_P, _N, ctypes.c_int, _P, _P]),
    "lda_extract": (None, [_P, _P, _N, ctypes.c_int, _P, _P, _N]),
    "lda_extract_hash": (None, [_P, _P, _N, ctypes.c_int, _P, _P, _P, _N, ctypes.c_int,
                                _P, _P, _P, _N, _N, _P]),
    "lda_table_xor_u8": (None, [_P, _N, _N, _N, _P, _N, _P, _N, _P]),
    "lda_table_xor_u16": (None, [_P, _N, _N, _N, _P, _N, _P, _N, _P]),
    "lda_sbox_xor": (None, [_P, _N, _P, _P, _N, _P]),
    "lda_add_at": (None, [_P, _P, _P, _N]),
    "lda_xor_at": (None, [_P, _P, _P, _N]),
    "lda_positions_u16": (ctypes.c_int, [_P, _N, _N, _P, _P]),
    "lda_positions_i64": (ctypes.c_int, [_P, _N, _N, _P, _P]),
    "lda_put": (None, [_P, _N, _N, _P, _N, _P, _N]),
    "lda_insert": (None, [_P, _N, _P, _P, _N]),
    "lda_probe": (None, [_P, _N, _P, _P, _N, _P]),
    "lda_fold_probe": (None, [_P, _N, _N, _N, _P, _N, _P, _P, _N, _P, _P, _P]),
    "lda_group": (_N, [_P, _P, _N, _N, _P, _P, _N, _P, _P]),
}

_LIB: list = []          # [the loaded library or None], once looked for


def choice() -> str:
    """``LDA_LOOPS``: ``auto``, ``c``, ``numba`` or ``numpy``."""
    value = os.environ.get("LDA_LOOPS", "auto").strip().lower() or "auto"
    if value not in ("auto", "c", "numba", "numpy"):
        raise ValueError(f"LDA_LOOPS must be auto, c, numba or numpy, not {value!r}")
    return value


def library():
    """The loaded C library (``_loops`` beside this file), or ``None`` where it was not
    built, is of another :data:`VERSION` or is older than ``loops.c`` beside it (an
    editable install's source changed since the build: ``pip install -e .``)."""
    if not _LIB:
        lib = None
        here = Path(__file__).parent
        source = here / "loops.c"
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = here / f"_loops{suffix}"
            if not path.exists() or (source.exists()          # an editable install's
                                     and source.stat().st_mtime > path.stat().st_mtime + 1):
                continue
            try:
                got = ctypes.CDLL(str(path))
                got.lda_kernels_version.restype = ctypes.c_int64
                if got.lda_kernels_version() != VERSION:
                    continue
                for name, (restype, argtypes) in _SIGNATURES.items():
                    fn = getattr(got, name)
                    fn.restype, fn.argtypes = restype, argtypes
            except (OSError, AttributeError):
                continue
            lib = got
            break
        _LIB.append(lib)
    return _LIB[0]


def implementation() -> str:
    """What runs the compiled loops here (:func:`host_sw.contracts.hashing.compiled`
    asks): ``"c"`` (the :data:`LOOPS`), ``"numba"`` or ``"numpy"`` (none: numpy's paths),
    as ``LDA_LOOPS`` and what is installed allow."""
    import importlib.util
    pick = choice()
    if pick in ("auto", "c") and library() is not None:
        return "c"
    if pick in ("auto", "numba") and importlib.util.find_spec("numba") is not None:
        return "numba"
    return "numpy"


def _at(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _input(a, dtype: np.dtype) -> np.ndarray:
    """``a`` as a C-contiguous array of ``dtype`` (a copy only where it is not one)."""
    return np.ascontiguousarray(a, dtype=dtype)


def _output(a: np.ndarray, dtype: np.dtype, shape: tuple | None = None) -> np.ndarray:
    """``a`` itself, checked to be a writable C-contiguous array of ``dtype`` (and
    ``shape``): the C loop writes through its pointer."""
    if not isinstance(a, np.ndarray) or a.dtype != dtype or not a.flags.c_contiguous \
            or not a.flags.writeable or (shape is not None and a.shape != shape):
        got = (getattr(a, "dtype", type(a)), getattr(a, "shape", None))
        raise TypeError(f"a compiled loop's output must be a writable C-contiguous {dtype} "
                        f"array{'' if shape is None else f' of shape {shape}'}, not {got}")
    return a


def _strides(a: np.ndarray) -> tuple[int, ...]:
    """``a``'s strides in elements (numpy's views of one dtype: whole elements)."""
    if any(s % a.itemsize for s in a.strides):
        raise TypeError("a compiled loop's input must have whole-element strides")
    return tuple(s // a.itemsize for s in a.strides)


def _register(name):
    def wrap(fn):
        LOOPS[name] = fn
        return fn
    return wrap


@_register("_walk_loop")
def _walk(buf, end, le, out):
    buf = _input(buf, _U8)
    out = _output(out, _I64)
    if not 0 <= end <= len(buf) or len(out) < end // 16 + 1:
        raise ValueError("walk: end past the buffer or too few starts")
    rest = ctypes.c_int64()
    n = library().lda_walk(_at(buf), int(end), int(bool(le)), _at(out), ctypes.byref(rest))
    return n, rest.value


@_register("_extract_loop")
def _extract(buf, starts, le, fields, windows):
    buf, starts = _input(buf, _U8), _input(starts, _I64)
    n = len(starts)
    fields = _output(fields, _I64, (n, 4))
    windows = _output(windows, _U8)
    if windows.ndim != 2 or windows.shape[0] != n:
        raise TypeError("extract: windows must be (records, width)")
    library().lda_extract(_at(buf), _at(starts), n, int(bool(le)), _at(fields),
                          _at(windows), windows.shape[1])


@_register("_extract_hash_loop")
def _extract_hash(buf, starts, le, fields, classes, windows, keep_windows, which, count,
                  tables, hashes):
    buf, starts = _input(buf, _U8), _input(starts, _I64)
    which, count, tables = _input(which, _I64), _input(count, _I64), _input(tables, _U64)
    n = len(starts)
    outputs, longest = which.shape[1], which.shape[2]
    if which.shape[0] != 2 or count.shape != (2, outputs) \
            or tables.shape != (2, outputs, longest, 256) or (count > longest).any() \
            or (which < 0).any() or any(
                (np.diff(which[c, h, :count[c, h]]) <= 0).any()
                for c in range(2) for h in range(outputs)):
        raise TypeError("extract_hash: which (ascending), count and tables do not agree")
    fields = _output(fields, _I64, (n, 4))
    classes = _output(classes, _I64, (n,))
    windows = _output(windows, _U8)
    hashes = _output(hashes, _U64, (outputs, n))
    if windows.ndim != 2 or (keep_windows and windows.shape[0] != n):
        raise TypeError("extract_hash: windows must be (records, width)")
    library().lda_extract_hash(_at(buf), _at(starts), n, int(bool(le)), _at(fields),
                               _at(classes), _at(windows), windows.shape[1],
                               int(bool(keep_windows)), _at(which), _at(count), _at(tables),
                               outputs, longest, _at(hashes))


@_register("_table_xor_loop")
def _table_xor(columns, which, tables, out):
    if columns.dtype not in (_U8, _U16):
        raise TypeError(f"table_xor: columns must be bytes or byte pairs (uint8, uint16), "
                        f"not {columns.dtype}")
    which, tables = _input(which, _I64), _input(tables, _U64)
    n = columns.shape[0]
    out = _output(out, _U64, (n,))
    if len(which) != tables.shape[0] or (len(which) and (
            which.min() < 0 or which.max() >= columns.shape[1])) \
            or tables.shape[1] < (256 if columns.dtype == _U8 else 65536):
        raise TypeError("table_xor: which, tables and columns do not agree")
    rows, cols = _strides(columns)
    fn = library().lda_table_xor_u8 if columns.dtype == _U8 else library().lda_table_xor_u16
    fn(_at(columns), n, rows, cols, _at(which), len(which), _at(tables), tables.shape[1],
       _at(out))


@_register("_sbox_xor_loop")
def _sbox_xor(ids, sbox, tables, out):
    ids, sbox, tables = _input(ids, _U64), _input(sbox, _U8), _input(tables, _U64)
    if sbox.shape != (256,) or tables.ndim != 3 or tables.shape[1:] != (8, 256):
        raise TypeError("sbox_xor: sbox must be 256 bytes, tables (H, 8, 256)")
    out = _output(out, _U64, (tables.shape[0], len(ids)))
    library().lda_sbox_xor(_at(ids), len(ids), _at(sbox), _at(tables), tables.shape[0],
                           _at(out))


def _at_loop(fn, target, flat, values):
    target = _output(target, target.dtype if target.dtype in (_I64, _U64) else _U64)
    flat, values = _input(flat, _I64), _input(values, target.dtype)
    if len(flat) != len(values) or (len(flat) and (
            flat.min() < 0 or flat.max() >= target.size)):
        raise IndexError("add_at / xor_at: an index outside the target")
    fn(_at(target), _at(flat), _at(values), len(flat))


@_register("_add_at_loop")
def _add_at(target, flat, values):
    _at_loop(library().lda_add_at, target, flat, values)


@_register("_xor_at_loop")
def _xor_at(target, flat, values):
    _at_loop(library().lda_xor_at, target, flat, values)


@_register("_positions_loop")
def _positions(part, parts, pos, bounds):
    if part.dtype != _U16:
        part = _input(part, _I64)
    part = np.ascontiguousarray(part)
    pos = _output(pos, _I64, (len(part),))
    bounds = _output(bounds, _I64, (parts + 1,))
    if len(part) and (int(part.min()) < 0 or int(part.max()) >= parts):
        raise IndexError("positions: a partition outside 0..parts-1")
    fn = library().lda_positions_u16 if part.dtype == _U16 else library().lda_positions_i64
    if fn(_at(part), len(part), parts, _at(pos), _at(bounds)):
        raise MemoryError("positions: no memory for the partitions' cursors")


@_register("_put_loop")
def _put(dst, col, src, pos):
    dst = _output(dst, _U64)
    src = src if src.dtype == _U64 else _input(src, _U64)
    pos = _input(pos, _I64)
    if dst.ndim != 2 or not 0 <= col < dst.shape[1] or len(pos) != len(src) or (
            len(pos) and (pos.min() < 0 or pos.max() >= dst.shape[0])):
        raise IndexError("put: a position or column outside the records")
    library().lda_put(_at(dst), dst.shape[1], col, _at(src), _strides(src)[0], _at(pos),
                      len(src))


def _table(keys, ids):
    keys, ids = _output(keys, _U64), _output(ids, _I64, keys.shape)
    size = len(keys)
    if size & (size - 1) or not size:
        raise ValueError("the folds' table size must be a power of two")
    return keys, ids, size


@_register("_insert_loop")
def _insert(folds, keys, ids):
    folds = _input(folds, _U64)
    keys, ids, size = _table(keys, ids)
    if len(folds) >= size:
        raise ValueError("insert: more folds than the table has slots")
    library().lda_insert(_at(folds), len(folds), _at(keys), _at(ids), size)


@_register("_probe_loop")
def _probe(folds, keys, ids, out):
    folds = _input(folds, _U64)
    keys, ids, size = _table(keys, ids)
    out = _output(out, _I64, (len(folds),))
    if (ids >= 0).all():
        raise ValueError("probe: a full table")
    library().lda_probe(_at(folds), len(folds), _at(keys), _at(ids), size, _at(out))


@_register("_fold_probe_loop")
def _fold_probe(flow, sel, keys, ids, known_rows, fold, out):
    if flow.dtype != _U64:
        flow = _input(flow, _U64)
    sel, known_rows = _input(sel, _I64), _input(known_rows, _U32)
    keys, ids, size = _table(keys, ids)
    rows = flow.shape[0]
    n = len(sel)
    fold, out = _output(fold, _U64, (n,)), _output(out, _I64, (n,))
    if known_rows.ndim != 2 or known_rows.shape[1] != rows or (ids >= 0).all() or (
            ids.max(initial=-1) >= known_rows.shape[0]) or (n and (
                sel.min() < 0 or sel.max() >= flow.shape[1])):
        raise ValueError("fold_probe: flow, sel, the table and the known rows do not agree")
    row_stride, col_stride = _strides(flow)
    library().lda_fold_probe(_at(flow), rows, row_stride, col_stride, _at(sel), n, _at(keys),
                             _at(ids), size, _at(known_rows), _at(fold), _at(out))


@_register("_group_loop")
def _group(fold, rows, keys, slot_group, first, group):
    fold, rows = _input(fold, _U64), _input(rows, _U32)
    keys, slot_group, size = _table(keys, slot_group)
    n = len(fold)
    first, group = _output(first, _I64, (n,)), _output(group, _I64, (n,))
    if rows.ndim != 2 or rows.shape[0] != n or size < 2:
        raise ValueError("group: rows must be (packets, R), the table of 2 slots or more")
    return library().lda_group(_at(fold), _at(rows), n, rows.shape[1], _at(keys),
                               _at(slot_group), size, _at(first), _at(group))
