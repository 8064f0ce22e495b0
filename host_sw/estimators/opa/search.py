# SPDX-License-Identifier: BSD-2-Clause
"""OPA Algorithm 1 for one group: the mapping σ of its received packets to sending
positions, found by enumeration (OPA §IV-D, §V-B), or ``None``.

Estimators layer, below :mod:`host_sw.estimators.opa.recovery` (which runs it for every group whose
count or CAH differs). The contract (field, nodes, augmented hash) is
:mod:`host_sw.contracts.opa.words`; the error model, its bounds and the false-match argument are
``docs/SPEC.md`` §8.5; the levels and their candidates :mod:`host_sw.estimators.opa.levels`;
the pure-loss levels' grid :mod:`host_sw.estimators.opa.grid`.

A candidate is ``(aside, L)``: the received packets set aside and the sorted sending
positions whose hashes are unknown. The other received packets, in arrival order, fill
the positions not in ``L``. Their known part of the CAH is a sum over at most
``(|L|+1)(m+1)`` runs of packets at one common shift of position, read from prefix sums
of the terms ``x**r · h(P, x)`` precomputed per shift — every candidate costs O(k·|L|·m)
whatever the group's size. The first ``|L|`` rows solve for the unknown hashes (mapping
equation, a Vandermonde system in the nodes ``L``); the other rows must hold (checking
equation). A set-aside packet must then be one of the solved hashes at a position of
``L`` (it was reordered; the shift bound ``d`` limits which candidates are tried, not the
match) or none of them (it belongs to another interval).
Candidates that pass are compared by the mapping they give: one mapping is the answer,
two or more are reported as ambiguous, never guessed.

Levels, in order: ``m = 0, 1, 2, …`` packets set aside with ``|L| = w − n + m``, each
only while ``|L| ≤ max_errors`` (at most ``k − 1``; for the levels of losses with two
reordered packets placed by their moves, the losses), its expected false matches within
``false_match_budget`` and its size within ``grid_limit`` (levels tested as a grid:
:mod:`host_sw.estimators.opa.grid`; levels searched by their moves:
:mod:`host_sw.estimators.opa.moves`, :mod:`host_sw.estimators.opa.compound`) or
``candidate_limit`` (the others); a level that cannot be searched ends the search (a
later level's answer could hide a simpler one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from host_sw.contracts.opa.words import (OPA_PRIME, augmented_hash, modinv, modmul,
                                   node_powers)
from host_sw.estimators.opa.grid import placed_two_losses, pure_loss, two_moves
from host_sw.estimators.opa.levels import (candidate_chunks, level_size,
                                           required_matches)
from host_sw.estimators.opa.compound import compound_pairs, pair_count, straddling
from host_sw.estimators.opa.moves import (MoveTable, loss_compounds, loss_one_move,
                                          loss_two_moves, move_count, three_moves,
                                          two_losses_two_moves)
from host_sw.estimators.opa.terms import Terms as _Terms
from host_sw.estimators.opa.terms import known_part as _known_part

__all__ = ["GroupSearch", "search_group", "FALSE_MATCH_BUDGET", "GRID_LIMIT"]

_P = np.uint64(OPA_PRIME)
#: Default bound of the expected false matches of one searched level (SPEC §8.5): with
#: ``k = 4`` one checking row (``|L| = 3``) allows ``budget·p ≈ 2 100`` candidates.
FALSE_MATCH_BUDGET = 1e-6
#: Default bound of a level tested as a grid (about 15–60 ns per candidate, against about
#: 1 µs for an enumerated one): about a second of one core at most per group.
GRID_LIMIT = 32_000_000


@dataclass(frozen=True)
class GroupSearch:
    """The outcome for one group: ``sigma`` (1-based sending position per received
    packet, 0 for a packet of another interval) or ``None`` with ``reason``
    (``beyond_bound``, ``ambiguous``, ``search_limit``, ``false_match_bound``);
    ``candidates`` tested."""
    sigma: np.ndarray | None
    reason: str = ""
    candidates: int = 0


def _solve(nodes: np.ndarray, rhs: np.ndarray, inverses: np.ndarray) -> np.ndarray:
    """Solve ``Σ_l nodes_l**r · h_l = rhs_r`` (r < a) mod p for every candidate by
    Gaussian elimination (a ≤ 7, distinct nodes: the Vandermonde matrix is invertible)."""
    c, a = nodes.shape
    if a == 1:
        return rhs[:1].T.copy()
    if a == 2:   # h2 = (R1 − x1·R0) / (x2 − x1), h1 = R0 − h2; x2 > x1 (sorted)
        x1, x2 = nodes[:, 0], nodes[:, 1]
        h2 = modmul((rhs[1] + _P - modmul(x1, rhs[0])) % _P, inverses[x2 - x1])
        return np.stack([(rhs[0] + _P - h2) % _P, h2], axis=1)
    m = np.empty((c, a, a + 1), dtype=np.uint64)
    m[:, :, :a] = np.moveaxis(node_powers(nodes, a), 0, 1)
    m[:, :, a] = rhs[:a].T
    for col in range(a):      # the pivot m[col, col] is non-zero for distinct nodes
        m[:, col] = modmul(m[:, col], modinv(m[:, col, col])[:, None])
        for row in range(a):
            if row != col:
                factor = m[:, row, col][:, None]
                m[:, row] = (m[:, row] + _P - modmul(factor, m[:, col])) % _P
    return m[:, :, a]


def _evaluate(terms, b, aside, lost, inverses) -> tuple[np.ndarray, np.ndarray]:
    """Pass mask of a batch of candidates and, per set-aside packet, the position of
    ``L`` whose solved hash it equals (0: none — a packet of another interval)."""
    rows, a = terms.rows, lost.shape[1]
    resid = (b[:, None] + _P - _known_part(terms, aside, lost)) % _P
    if a:
        h = _solve(lost, resid, inverses)
        powers = node_powers(lost, rows)                  # (rows, C, a)
        ok = np.ones(len(lost), dtype=bool)
        for r in range(a, rows):
            ok &= (modmul(powers[r], h).sum(axis=1) % _P) == resid[r]
    else:
        h = np.zeros((len(lost), 0), dtype=np.uint64)
        ok = (resid == 0).all(axis=0)
    matched = np.zeros(aside.shape, dtype=np.int64)
    for i in np.flatnonzero(ok) if aside.shape[1] else ():
        free = np.ones(a, dtype=bool)
        for q, e in enumerate(aside[i]):   # anywhere in L: d bounds the candidates only
            mine = augmented_hash(terms.packets[e], lost[i], terms.seed)
            hit = np.flatnonzero(free & (mine == h[i]))
            if len(hit):
                matched[i, q] = lost[i][hit[0]]
                free[hit[0]] = False
    return ok, matched


def _sigma(n: int, w: int, aside: np.ndarray, lost: np.ndarray,
           matched: np.ndarray) -> np.ndarray:
    """The mapping of a candidate that passed (module docstring)."""
    free = np.setdiff1d(np.arange(1, w + 1), lost)
    sigma = np.zeros(n, dtype=np.int64)
    keep = np.ones(n, dtype=bool)
    keep[aside] = False
    sigma[keep] = free[:keep.sum()]
    sigma[aside] = matched
    return sigma


def _search_level(terms, b, n, w, a, m, need, d, inverses, moves: str = "",
                  limits=(0, 0)) -> tuple[dict, int]:
    """The mappings of level ``(m, a)`` that pass with at least ``need`` set-aside
    packets matched (all of them for ``m ≥ 2``), keyed by σ's bytes; candidates tested.
    ``moves``: the level is searched by its moves (:func:`_by_moves`)."""
    found, tested = {}, 0
    if moves:    # the moves count slots: d less the losses
        return _by_moves(terms, b, n, w, d - max(0, w - n), moves, inverses, limits)
    if m == 0:
        for lost in pure_loss(terms, b, w, a):
            sigma = _sigma(n, w, np.zeros(0, np.int64), lost, np.zeros(0, np.int64))
            found.setdefault(sigma.tobytes(), sigma)
        return found, level_size(n, w, a, 0, d)
    if _placed(m, a, need):
        for e in range(n):
            homes = np.arange(max(1, e + 1 - d), min(w, e + 1 + d) + 1)
            for x, lost in placed_two_losses(terms, b, w, e, homes):
                sigma = _sigma(n, w, np.array([e]), lost, np.array([x]))
                found.setdefault(sigma.tobytes(), sigma)
        return found, level_size(n, w, a, m, d)
    if _two_moves(n, w, a, m):   # moves that do not overlap, met in the middle
        for e1, x1, e2, x2 in two_moves(terms, b, w, d):
            _put(found, n, w, ([(e1, x1), (e2, x2)], []))
        resid = (b.astype(np.int64) - terms.prefix(0)[n]) % OPA_PRIME
        for moves, delta, _, _ in compound_pairs(terms, n, d, crossed=True):  # … the others
            for i in np.flatnonzero((delta == resid).all(axis=1)):
                e1, t1, e2, t2 = (int(v) for v in moves[i])
                _put(found, n, w, ([(e1, t1 + 1), (e2, t2 + 1)], []))
        return found, level_size(n, w, a, m, d, near=True)
    return _enumerate(terms, b, n, w, a, m, need, d, inverses)


def _put(found: dict, n: int, w: int, placed) -> None:
    """Add the mapping of set-aside packets at known positions (``placed``: pairs
    ``(e, x)``) and ``lost`` positions: the others fill the rest in arrival order."""
    placed, lost = sorted(placed[0]), sorted(placed[1])
    aside = np.array([e for e, _ in placed], dtype=np.int64)
    xs = np.array([x for _, x in placed], dtype=np.int64)
    sigma = _sigma(n, w, aside, np.array(sorted(lost + list(xs)), dtype=np.int64), xs)
    found.setdefault(sigma.tobytes(), sigma)


def _by_moves(terms, b, n, w, d, moves, inverses, limits) -> tuple[dict, int]:
    """Levels searched by their moves (:mod:`host_sw.estimators.opa.moves`,
    :mod:`host_sw.estimators.opa.compound`), ``moves`` from :func:`_moves_kind`: two
    losses and two reordered packets (disjoint moves only), a loss and one reordered
    packet, three reordered packets, or a loss and two reordered packets (the disjoint
    moves; the pairs whose moves overlap as compounds against every lost position
    outside and inside them while their work is within ``grid_limit``)."""
    (_, grid_limit), found = limits, {}
    table = MoveTable(terms, d, losses=w - n)
    if moves == "losses2":   # the pairs of moves that overlap are not searched
        prefixes = [terms.prefix(s) for s in (0, 1, 2)]
        for l1, l2, *pair in two_losses_two_moves(table, b, prefixes, w):
            pos = np.delete(np.arange(1, w + 1), [l1 - 1, l2 - 1])
            _put(found, n, w, ([(e, int(pos[t])) for e, t in pair], [l1, l2]))
        return found, w * (w - 1) // 2 * move_count(n, d)
    if moves == "loss1":     # only a reordered packet (a foreign one: enumerated)
        for l, (e, t) in loss_one_move(table, b, terms.prefix(0), terms.prefix(1), w):
            _put(found, n, w, ([(e, t + 1 + (t >= l - 1))], [l]))
        return found, w * move_count(n, d)
    if moves == "three":
        resid = (b.astype(np.int64) - terms.prefix(0)[n]) % OPA_PRIME
        for triple in three_moves(table, resid, compound_pairs(terms, n, d)):
            _put(found, n, w, ([(e, t + 1) for e, t in triple], []))
        return found, move_count(n, d) ** 2 // 2
    for l, *pair in loss_two_moves(table, b, terms.prefix(0), terms.prefix(1), w):
        _put(found, n, w, ([(e, t + 1 + (t >= l - 1)) for e, t in pair], [l]))
    tested = w * move_count(n, d)
    if pair_count(n, d) * max(w, STRADDLE_COST) <= grid_limit:
        pairs = compound_pairs(terms, n, d, shifts=(0, 1))
        for l, *pair in loss_compounds(pairs, b, terms.prefix(0), terms.prefix(1), w):
            _put(found, n, w, ([(e, t + 1 + (t >= l - 1)) for e, t in pair], [l]))
        tested += w * pair_count(n, d)
        inside, count = straddling(terms, b, n, w, d)
        for l, *pair in inside:
            _put(found, n, w, ([(e, t + 1 + (t >= l - 1)) for e, t in pair], [l]))
        tested += count
    return found, tested


def _enumerate(terms, b, n, w, a, m, need, d, inverses, near=False) -> tuple[dict, int]:
    """Level ``(m, a)``'s candidates (``near``: of nearby set-aside packets) one by one."""
    found, tested = {}, 0
    for aside, lost in candidate_chunks(n, w, a, m, d, near):
        ok, matched = _evaluate(terms, b, aside, lost, inverses)
        if need:
            ok &= (matched > 0).sum(axis=1) >= need
        tested += len(lost)
        for i in np.flatnonzero(ok):
            sigma = _sigma(n, w, aside[i], lost[i], matched[i])
            found.setdefault(sigma.tobytes(), sigma)
    return found, tested


#: A loss and two reordered packets: searched by their moves from this many candidates
#: on (the enumeration's cost about 1 µs each, the moves' search less for all but the
#: smallest groups). The other levels searched by their moves are when their candidates
#: exceed ``candidate_limit`` (the enumeration holds patterns the moves do not: a foreign
#: packet with losses, three chained moves).
MOVES_FROM = 100_000
#: The work of the compound moves' search with a lost position, per compound, in units
#: of the grid's cells (about 8 lost positions inside each, at about 0.75 µs each).
STRADDLE_COST = 200


def _moves_kind(n: int, w: int, a: int, m: int) -> str:
    """How level ``(m, a)`` can be searched by its moves (``""``: it cannot): three
    reordered packets and no loss (``"three"``), one loss and one or two reordered
    packets (``"loss1"``, ``"loss"``), two losses and two (``"losses2"``, only so)."""
    if m == 3 and a == 3 and w == n:
        return "three"
    if w == n + 1 and (m, a) in ((2, 3), (1, 2)):
        return "loss" if m == 2 else "loss1"
    return "losses2" if w == n + 2 and (m, a) == (2, 4) else ""


def moves_cost(n: int, w: int, d: int, kind: str) -> int:
    """The work of a level searched by its moves, in units of :data:`GRID_LIMIT` (about
    30 ns): the pairs of moves summed, or per lost position the moves' table sorted."""
    moves = move_count(n, d)
    if kind == "three":
        return moves * moves // 2 + pair_count(n, d) * 40
    if kind == "losses2":
        return w * (w - 1) // 2 * moves * 8
    return w * moves * (8 if kind == "loss" else 1)


def _two_moves(n: int, w: int, a: int, m: int) -> bool:
    """Level ``(m, a)`` is two reordered packets and no loss: searched as non-overlapping
    moves met in the middle (:func:`~host_sw.estimators.opa.grid.two_moves`) plus the
    overlapping pairs as compound moves (:mod:`host_sw.estimators.opa.compound`)."""
    return m == 2 and a == 2 and w == n


def _placed(m: int, a: int, need: int) -> bool:
    """Level ``(m, a)`` is searched as a grid with its set-aside packet placed
    (:func:`~host_sw.estimators.opa.grid.placed_two_losses`)."""
    return m == 1 and a == 3 and need >= 1


def search_group(packets: np.ndarray, w: int, b: np.ndarray, *, seed: int,
                 max_errors: int | None = None, shift_bound: int = 8, max_aside: int = 3,
                 candidate_limit: int = 2_000_000, grid_limit: int = GRID_LIMIT,
                 false_match_budget: float = FALSE_MATCH_BUDGET) -> GroupSearch:
    """Algorithm 1 for one group: ``packets`` the received packet hashes in arrival
    order, ``w`` and ``b`` (uint64 ``(k,)``) the sender's word. Levels set aside
    ``m = 0 … max_aside`` packets (reordered or foreign), each with ``|L| = w − n + m``
    unknown positions, ``|L| ≤ max_errors`` (default and at most ``k − 1``). A level
    whose expected false matches exceed ``false_match_budget`` whatever it requires of
    its set-aside packets ends the search (``false_match_bound``); so does one of more
    candidates than ``grid_limit`` (levels tested as a grid: pure loss, and two losses
    with a placed packet; and the work of a level searched by its moves) or
    ``candidate_limit`` (the others) (``search_limit``)."""
    n, rows = len(packets), len(b)
    max_errors = rows - 1 if max_errors is None else min(max_errors, rows - 1)
    terms = _Terms(np.asarray(packets, dtype=np.uint64), w, rows, seed)
    b = np.asarray(b, dtype=np.uint64)
    tested, inverses = 0, None
    # d counts slots of the received packets: a loss before a reordered packet moves
    # its position one further from its arrival index
    dl = shift_bound + max(0, w - n)
    for m in range(min(max_aside, n) + 1):
        a = w - n + m
        placed = m == 2 and a == m + w - n and w - n in (1, 2)   # losses + two moves
        if (a < 0 or (a > max_errors and not (placed and w - n <= max_errors))
                or (a == 0 and m == 0) or (m >= 2 and a > m and not placed)):
            continue
        size = level_size(n, w, a, m, dl)
        need = required_matches(size, rows, a, m, false_match_budget)
        if need is None:
            return GroupSearch(None, "false_match_bound", tested)
        if _two_moves(n, w, a, m):
            size = level_size(n, w, a, m, dl, near=True)
        moves = _moves_kind(n, w, a, m)
        if moves != "losses2" and size <= (MOVES_FROM if moves == "loss" else candidate_limit):
            moves = ""     # enumerated: every candidate of the level
        if moves and moves_cost(n, w, shift_bound, moves) > grid_limit:
            return GroupSearch(None, "search_limit", tested)
        if not moves and size > (grid_limit if m == 0 or _placed(m, a, need)
                                 else candidate_limit):
            return GroupSearch(None, "search_limit", tested)
        if inverses is None and m:   # 1/(x2 − x1) for positions up to w (Fermat)
            inverses = modinv(np.arange(max(w, 1) + 1))
        found, count = _search_level(terms, b, n, w, a, m, need, dl, inverses,
                                     moves, (candidate_limit, grid_limit))
        tested += count
        if len(found) == 1:
            return GroupSearch(next(iter(found.values())), "", tested)
        if len(found) > 1:
            return GroupSearch(None, "ambiguous", tested)
    return GroupSearch(None, "beyond_bound", tested)
