# SPDX-License-Identifier: BSD-2-Clause
"""Counter word layouts: which fields a synopsis bucket holds, their widths and order.

One definition for the gateware (memory word layout, ``amaranth.lib.data`` is built from
:meth:`WordLayout.fields`), the golden model (array dtypes and wrap-around) and the host
(decoding bus words and control frames): docs/DESIGN.md, "Where each contract lives" and
"Data flow of a counter". Contracts layer; no Amaranth import here.

A word is packed LSB first in field order; on the bus and in export frames it travels as
``ceil(width / 32)`` 32-bit chunks, least significant chunk first (``docs/SPEC.md`` §4).

All sums are modulo ``2**width``: the sender/receiver difference of a field is exact as
long as the true difference fits, so the host reads differences as signed values of that
width (:func:`signed_difference`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Field", "WordLayout", "signed_difference", "wrap"]


@dataclass(frozen=True)
class Field:
    name: str
    width: int
    #: "sum" fields add (count, timestamp sum); "xor" fields XOR (ID, digest).
    combine: str


@dataclass(frozen=True)
class WordLayout:
    """The fields of one bucket, LSB first."""
    fields: tuple[Field, ...]

    @property
    def width(self) -> int:
        return sum(f.width for f in self.fields)

    @property
    def chunks(self) -> int:
        """32-bit bus words per counter word."""
        return (self.width + 31) // 32

    def offset(self, name: str) -> int:
        off = 0
        for f in self.fields:
            if f.name == name:
                return off
            off += f.width
        raise KeyError(name)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def pack(self, values: dict[str, np.ndarray]) -> list[int]:
        """Pack field arrays (same shape) into Python-int words (flattened, C order)."""
        arrays = {f.name: np.asarray(values[f.name]).ravel() for f in self.fields}
        n = len(next(iter(arrays.values())))
        words = []
        for i in range(n):
            w, off = 0, 0
            for f in self.fields:
                w |= (int(arrays[f.name][i]) & ((1 << f.width) - 1)) << off
                off += f.width
            words.append(w)
        return words

    def unpack(self, words, shape=None) -> dict[str, np.ndarray]:
        """Inverse of :meth:`pack`; fields come back as uint64 arrays."""
        out = {f.name: np.zeros(len(words), dtype=np.uint64) for f in self.fields}
        for i, w in enumerate(words):
            off = 0
            for f in self.fields:
                out[f.name][i] = (w >> off) & ((1 << f.width) - 1)
                off += f.width
        if shape is not None:
            out = {k: v.reshape(shape) for k, v in out.items()}
        return out

    def to_chunks(self, word: int) -> list[int]:
        """32-bit chunks of one word, least significant first."""
        return [(word >> (32 * c)) & 0xFFFFFFFF for c in range(self.chunks)]

    def from_chunks(self, chunks) -> int:
        if len(chunks) != self.chunks:
            raise ValueError(f"a {self.width}-bit word is {self.chunks} chunks, got {len(chunks)}")
        return sum((int(c) & 0xFFFFFFFF) << (32 * i) for i, c in enumerate(chunks))


def wrap(values: np.ndarray, width: int) -> np.ndarray:
    """Reduce integers modulo ``2**width`` (as uint64)."""
    values = np.asarray(values)
    if width >= 64:
        return values.astype(np.uint64)
    return values.astype(np.uint64) & np.uint64((1 << width) - 1)


def signed_difference(receiver: np.ndarray, sender: np.ndarray, width: int) -> np.ndarray:
    """``receiver - sender`` of two modulo-``2**width`` sums, read as a signed
    ``width``-bit integer (int64 for width ≤ 63; Python-int object array above)."""
    r = np.asarray(receiver, dtype=np.uint64)
    s = np.asarray(sender, dtype=np.uint64)
    if width <= 63:
        # Sign-extend the low `width` bits of the wrapped difference: shift them to the
        # top of the word, reinterpret as int64 and shift back arithmetically (exact for
        # every width up to 63; `d - 2**width` would overflow int64 at width 63).
        shift = 64 - width
        d = np.asarray(r - s, dtype=np.uint64) << np.uint64(shift)
        return d.view(np.int64) >> np.int64(shift)
    d = (r - s).astype(object)  # width 64: wraps naturally in uint64
    return np.array([int(x) - (1 << 64) if int(x) >= (1 << 63) else int(x) for x in d.ravel()],
                    dtype=object).reshape(r.shape)
