# SPDX-License-Identifier: BSD-2-Clause
"""The search levels of OPA Algorithm 1 for one group: which candidate mappings a level
holds, how many, and how many checks its passing candidate must satisfy so that the
chance of a false match stays within the budget (``docs/SPEC.md`` §8.5).

Estimators layer, used by :mod:`host_sw.estimators.opa.search`. A level is ``(m, a)``:
``m`` received packets set aside (reordered or foreign) and ``a = w − n + m`` sending
positions whose hashes are unknown. A candidate is ``(aside, lost)``: ``aside`` the sorted
arrival indices set aside, ``lost`` (``L``) the sorted unknown positions.

* ``m = 0``: every ``a``-subset of positions (pure loss);
* ``m = 1``: one position of ``L`` within ``d`` of the set-aside packet's arrival slot,
  the others anywhere (a reordered packet and losses, or a foreign packet and losses);
* ``m ≥ 2``: every position of ``L`` within ``d`` of one set-aside packet, distinct
  packets for distinct positions (``a ≤ m``): reordered packets, the rest foreign, no loss
  besides (a foreign packet and a lost one would explain the same residual as a packet
  reordered beyond ``d``);
* ``m = 2``, ``a = 3`` or ``4``: one or two losses anywhere and both set-aside packets
  reordered, each placed within ``d`` of its arrival slot (``a = 4`` is searched only by
  its moves, :mod:`host_sw.estimators.opa.moves`: placed, two unknowns remain).

The caller passes ``d`` = the shift bound plus the group's losses (``w − n``): a loss
before a reordered packet moves its position one further from its arrival index.

False matches. A wrong candidate passes the checking equation with probability
``p^−(k−a)`` (``k − a`` independent conditions on uniform values), and each set-aside
packet that must equal a solved hash adds a factor ``1/p``. :func:`required_matches` gives
the fewest such matches a level needs so that ``size · p^−(k − a + matches)`` stays within
``budget``; ``None`` when no number of them does (the level is not searched).

The candidates come in chunks of about :data:`CHUNK` rows, so memory does not grow with a
level's size; the caller bounds the size first (:func:`level_size`).
"""

from __future__ import annotations

from itertools import combinations
from math import comb, log

import numpy as np

from host_sw.contracts.opa.words import OPA_PRIME

__all__ = ["CHUNK", "level_size", "required_matches", "candidate_chunks", "combination_chunks"]

#: Candidates per numpy batch (bounds the memory of one batch).
CHUNK = 1 << 16
_EMPTY = np.zeros((0, 0), dtype=np.int64)


def level_size(n: int, w: int, a: int, m: int, d: int, near: bool = False) -> int:
    """Candidates of level ``(m, a)`` (an upper bound for ``m ≥ 1``); ``near``: of its
    pairs within ``2d`` only (``m = 2``)."""
    home = min(w, 2 * d + 1)
    if m == 0:
        return comb(w, a)
    if m == 1:
        return n if a == 0 else n * home * comb(w, a - 1)
    if m == 2 and a in (3, 4):     # one or two losses and two reordered packets
        sets = n * 2 * d if near else comb(n, 2)
        return sets * home ** 2 * comb(w, a - 2)
    if a > m:
        return 0
    sets = n * 2 * d if near and m == 2 else comb(n, m)
    return sets * comb(m, a) * home ** a


def required_matches(size: int, rows: int, a: int, m: int, budget: float) -> int | None:
    """The fewest set-aside packets that must match a solved hash so that the level's
    expected false matches ``size · p^−(rows − a + matches)`` are at most ``budget``
    (module docstring); ``None`` if even every possible match is not enough. Levels with
    ``m ≥ 2`` always require every set-aside packet matched, ``min(a, m)`` (their error
    model)."""
    if size == 0:
        return 0
    least = min(a, m) if m >= 2 else 0
    most = min(m, a)
    for need in range(least, most + 1):
        checks = rows - a + need
        if log(size) - checks * log(OPA_PRIME) <= log(budget):
            return need
    return None


def combination_chunks(w: int, a: int, start: int = 1):
    """Every sorted ``a``-subset of the positions ``start … w`` as ``(C, a)`` int64
    arrays of about :data:`CHUNK` rows: the last two columns a triangular grid, the
    first ``a − 2`` enumerated."""
    if a == 0:
        yield np.zeros((1, 0), dtype=np.int64)
        return
    if a == 1:
        yield np.arange(start, w + 1, dtype=np.int64)[:, None]
        return
    buf, size = [], 0
    for head in combinations(range(start, w + 1), a - 2):
        lo = head[-1] + 1 if head else start
        i, j = np.triu_indices(w - lo + 1, 1)
        if i.size == 0:
            continue
        block = np.empty((i.size, a), dtype=np.int64)
        block[:, :a - 2] = head
        block[:, a - 2], block[:, a - 1] = i + lo, j + lo
        buf.append(block)
        size += i.size
        if size >= CHUNK:
            yield np.concatenate(buf)
            buf, size = [], 0
    if buf:
        yield np.concatenate(buf)


def _homes(e: np.ndarray, w: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """``(index into e, position)`` of every position within ``d`` of ``e + 1``."""
    idx, off = np.meshgrid(np.arange(len(e)), np.arange(-d, d + 1), indexing="ij")
    pos = e[idx] + 1 + off
    ok = (pos >= 1) & (pos <= w)
    return idx[ok], pos[ok]


def _one_aside(n: int, w: int, a: int, d: int):
    """Level ``m = 1``: each candidate once — ``l0`` is the smallest position of ``L``
    within ``d`` of ``e + 1``, the others anywhere."""
    e = np.arange(n, dtype=np.int64)
    if a == 0:
        yield e[:, None], np.zeros((n, 0), dtype=np.int64)
        return
    idx, l0 = _homes(e, w, d)
    e, l0 = e[idx], l0
    for others in combination_chunks(w, a - 1):
        step = max(1, CHUNK // max(len(others), 1))
        for s in range(0, len(e), step):
            ee, ll = e[s:s + step], l0[s:s + step]
            ec = np.repeat(ee, len(others))
            lc = np.repeat(ll, len(others))
            oc = np.tile(others, (len(ee), 1))
            keep = ((oc != lc[:, None]) & ((np.abs(oc - (ec[:, None] + 1)) > d)
                                           | (oc > lc[:, None]))).all(axis=1)
            lost = np.sort(np.concatenate([lc[keep, None], oc[keep]], axis=1), axis=1)
            yield ec[keep, None], lost


def _near_pairs(n: int, span: int):
    """Pairs ``e1 < e2 ≤ e1 + span`` of arrival indices, in order."""
    for e1 in range(n):
        for e2 in range(e1 + 1, min(n, e1 + span + 1)):
            yield e1, e2


def _many_aside(n: int, w: int, a: int, m: int, d: int, near: bool = False):
    """Levels ``m ≥ 2``: for each set of ``m`` packets, each ``a``-subset of them placed
    at distinct positions within ``d`` of their arrival slots (a candidate may repeat
    when homes overlap; repeats give the same mapping). ``near`` (``m = 2``): only the
    pairs within ``2d`` of each other, whose moves can overlap."""
    offsets = np.stack(np.meshgrid(*([np.arange(-d, d + 1)] * a), indexing="ij"),
                       axis=-1).reshape(-1, a) if a else np.zeros((1, 0), np.int64)
    per_set = comb(m, a) * len(offsets)
    step = max(1, CHUNK // max(per_set, 1))
    sets = _near_pairs(n, 2 * d) if near else combinations(range(n), m)
    while True:
        block = np.array([s for _, s in zip(range(step), sets)], dtype=np.int64)
        if len(block) == 0:
            return
        for chosen in combinations(range(m), a):
            pos = block[:, None, list(chosen)] + 1 + offsets[None, :, :]   # (B, H, a)
            ok = ((pos >= 1) & (pos <= w)).all(axis=2)
            if a > 1:
                srt = np.sort(pos, axis=2)
                ok &= (np.diff(srt, axis=2) > 0).all(axis=2)
                pos = srt
            bi, hi = np.nonzero(ok)
            if len(bi):
                yield block[bi], pos[bi, hi]


def candidate_chunks(n: int, w: int, a: int, m: int, d: int, near: bool = False):
    """The candidates ``(aside (C, m), lost (C, a))`` of level ``(m, a)`` in chunks
    (``near``: :func:`_many_aside`'s)."""
    if m == 0:
        for lost in combination_chunks(w, a):
            yield np.zeros((len(lost), 0), dtype=np.int64), lost
    elif m == 1:
        yield from _one_aside(n, w, a, d)
    elif a <= m:
        yield from _many_aside(n, w, a, m, d, near)
    elif m == 2 and a == 3:
        yield from _loss_two_aside(n, w, d, near)


def _loss_two_aside(n: int, w: int, d: int, near: bool = False):
    """Level ``m = 2``, ``|L| = 3``: two set-aside packets placed within ``d`` of
    their arrival slots and one lost position anywhere else; ``near``: the pairs within
    ``2d`` only."""
    for aside, pos in _many_aside(n, w, 2, 2, d, near):
        step = max(1, CHUNK // w)
        for s in range(0, len(pos), step):
            aa, pp = aside[s:s + step], pos[s:s + step]
            ls = np.tile(np.arange(1, w + 1), len(pp))
            ai, pi = np.repeat(aa, w, axis=0), np.repeat(pp, w, axis=0)
            keep = (ls != pi[:, 0]) & (ls != pi[:, 1])
            lost = np.sort(np.concatenate([pi[keep], ls[keep, None]], axis=1), axis=1)
            yield ai[keep], lost
