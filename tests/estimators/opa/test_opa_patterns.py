# SPDX-License-Identifier: BSD-2-Clause
"""OPA recovery of the patterns searched by their moves (``host_sw/estimators/opa/moves.py``,
``host_sw/estimators/opa/compound.py``; ``docs/SPEC.md`` §8.5): three reordered packets and one loss with one
reordered packet in groups larger than the enumeration reaches, one loss with two
reordered packets, two losses with two reordered packets — seeded random
groups with exactly that pattern, every mapping (and, end to end, every delay) equal to
the truth; a move's and a compound's change of the CAH equal to the brute-force
difference; patterns beyond the levels reported unrecovered, never mapped wrongly."""

import numpy as np
import pytest

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.opa.words import OPA_PRIME, augmented_hash, modmul, node_powers
from host_sw.estimators.opa.recovery import recover_interval
from host_sw.estimators.opa.compound import compound_pairs
from host_sw.estimators.opa.moves import MoveTable
from host_sw.estimators.opa.search import search_group
from host_sw.estimators.opa.terms import Terms
from host_sw.model.golden_opa import PacketRecords, opa_sender, opa_synopsis

ONE = OpaConfig(groups=1, rows=4)
SEED = ONE.seed
#: The reordering shift bound of these tests (the default 8 costs about 4x the time;
#: the searches do not depend on it otherwise).
D = 4


def _cah(packets, positions, rows=4):
    """The CAH (int64 ``(rows,)``) of ``packets`` at ``positions``, from the definition."""
    h = augmented_hash(packets, positions, SEED)
    return (modmul(node_powers(positions, rows), h[None]).astype(np.int64).sum(axis=1)
            % OPA_PRIME)


def _group(rng, w):
    p = rng.integers(0, 2 ** 64, w, dtype=np.uint64)
    syn = opa_synopsis(ONE, p)
    return p, np.array([syn[f"b{r}"][0, 0] for r in range(4)], dtype=np.uint64)


def _received(w, lost=(), moves=(), d=D, check=True):
    """Sending positions (1-based) in arrival order: ``lost`` positions dropped, then each
    ``(i, j)`` of ``moves``: the packet at arrival index ``i`` moved to index ``j``;
    ``check``: every packet ends within ``d`` of its slot (its rank among the received)."""
    order = [x for x in range(1, w + 1) if x not in set(lost)]
    for i, j in moves:
        order.insert(j, order.pop(i))
    order = np.array(order, dtype=np.int64)
    assert not check or np.abs(np.argsort(np.argsort(order)) - np.arange(len(order))).max() <= d
    return order


def _random_pattern(rng, w, lost, moved, d=D, spaced=True):
    """Positions in arrival order with ``lost`` random losses and ``moved`` packets each
    moved 1…d arrival places either way; ``spaced``: at least ``2d + 2`` places apart (so
    that each ends within ``d`` of its arrival slot: moves that chain can carry a packet
    further)."""
    gone = sorted(rng.choice(np.arange(1, w + 1), lost, replace=False).tolist())
    n = w - lost
    for _ in range(1000):
        starts = np.sort(rng.choice(n, moved, replace=False))
        if not spaced or moved < 2 or np.diff(starts).min() >= 2 * d + 2:
            break
    else:
        raise ValueError("no spaced pattern")
    moves = []
    for i in starts[::-1]:                  # the later first: the earlier keep their index
        step = int(rng.integers(1, d + 1)) * (1 if rng.random() < 0.5 else -1)
        moves.append((int(i), int(np.clip(i + step, 0, n - 1))))
    return _received(w, gone, moves, d, check=spaced)


def _mapped(p, b, w, truth, d=D):
    found = search_group(p[truth - 1], w, b, seed=SEED, shift_bound=d)
    return found.sigma is not None and np.array_equal(found.sigma, truth), found


@pytest.mark.parametrize("holes", [(), (1,), (9,), (23,), (40,), (5, 17), (12, 13)])
def test_move_deltas_are_the_cah_differences(holes):
    """Every move's Δ in the slots of the lost positions ``holes`` equals the CAH of the
    arrangement it makes less the arrival order's, computed from the definition."""
    rng = np.random.default_rng(70)
    w = 40
    n = w - len(holes)
    p = rng.integers(0, 2 ** 64, n, dtype=np.uint64)
    slots = np.delete(np.arange(1, w + 1), [h - 1 for h in holes])
    table = MoveTable(Terms(p, w, 4, SEED), 5, losses=len(holes))
    shift = (slots - np.arange(1, n + 1)).astype(np.int64)
    delta = table.deltas(shift)
    base = _cah(p, slots)
    for i in rng.choice(len(table.e), 60, replace=False):
        order = list(range(n))
        order.insert(int(table.t[i]), order.pop(int(table.e[i])))
        placed = np.empty(n, np.int64)
        placed[order] = slots            # packet order[s] sits at slot s
        assert np.array_equal((base + delta[i]) % OPA_PRIME, _cah(p, placed))


def test_compound_deltas_are_the_cah_differences():
    """A compound move's Δ below a lost position (shift 0) and from it on (shift 1)."""
    rng = np.random.default_rng(71)
    n = 30
    p = rng.integers(0, 2 ** 64, n, dtype=np.uint64)
    moves, d0, d1, _, _ = next(compound_pairs(Terms(p, n + 1, 4, SEED), n, 4, shifts=(0, 1)))
    for i in rng.choice(len(moves), 40, replace=False):
        e1, t1, e2, t2 = (int(v) for v in moves[i])
        rest = [e for e in range(n) if e not in (e1, e2)]
        free = [t for t in range(n) if t not in (t1, t2)]
        slot = np.empty(n, np.int64)
        slot[rest], slot[[e1, e2]] = free, [t1, t2]
        for s, delta in ((0, d0[i]), (1, d1[i])):
            before = _cah(p, np.arange(1, n + 1) + s)
            assert np.array_equal((before + delta) % OPA_PRIME, _cah(p, slot + 1 + s))


@pytest.mark.parametrize("w,seed", [(40, 2), (150, 3)])
def test_three_reorderings_beyond_the_enumeration(w, seed):
    """Three packets each moved up to d places, in groups of 40 and 150 (the enumeration
    of C(n, 3)·(2d + 1)^3 candidates stopped at 2·10^6: n = 14 at d = 8, 36 at d = 4):
    every mapping exact."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(2):
        p, b = _group(rng, w)
        ok, found = _mapped(p, b, w, _random_pattern(rng, w, 0, 3))
        assert ok, found.reason


def test_three_reorderings_disjoint_and_with_an_overlapping_pair():
    rng = np.random.default_rng(110)
    w = 80
    p, b = _group(rng, w)
    for moves in (((5, 9), (30, 26), (60, 64)),          # three ranges apart
                  ((10, 13), (14, 11), (50, 54))):       # two overlap, one apart
        ok, found = _mapped(p, b, w, _received(w, moves=moves))
        assert ok, found.reason


@pytest.mark.parametrize("w,seed", [(24, 1), (60, 2), (120, 4)])
def test_one_loss_two_reorderings(w, seed):
    """One loss anywhere and two packets each moved up to d places: every mapping exact
    (by the moves: before, never searched)."""
    rng = np.random.default_rng(200 + seed)
    for _ in range(2):
        p, b = _group(rng, w)
        ok, found = _mapped(p, b, w, _random_pattern(rng, w, 1, 2))
        assert ok, found.reason


def test_one_loss_one_reordering_in_a_large_group():
    """One loss and one packet moved up to d places in a group of 500 (the enumeration's
    n·(2d + 1)·w candidates stopped at w ≈ 340 for d = 8): every mapping exact."""
    rng = np.random.default_rng(230)
    w = 500
    for _ in range(2):
        p, b = _group(rng, w)
        ok, found = _mapped(p, b, w, _random_pattern(rng, w, 1, 1, d=8), d=8)
        assert ok, found.reason


@pytest.mark.parametrize("lost,moves", [
    ((20,), ((5, 9), (40, 36))),          # moves apart, the loss between them
    ((50,), ((20, 23), (24, 21))),        # moves overlapping, the loss after them
    ((3,), ((20, 23), (24, 21))),         # … the loss before them
    ((23,), ((20, 23), (24, 21))),        # … the loss inside their range
    ((10,), ((8, 12), (30, 34))),         # the loss inside one move's range
])
def test_one_loss_two_reorderings_placed(lost, moves):
    rng = np.random.default_rng(210)
    w = 60
    p, b = _group(rng, w)
    ok, found = _mapped(p, b, w, _received(w, lost, moves))
    assert ok, found.reason


def test_one_loss_two_reorderings_end_to_end():
    """recover_interval on an interval whose group 0 has a loss and two reordered packets
    and group 1 three reordered packets (about 60 packets each): every delay equals the
    truth."""
    config = OpaConfig(groups=4, rows=4)
    rng = np.random.default_rng(220)
    p = rng.integers(0, 2 ** 64, 240, dtype=np.uint64)
    send = np.cumsum(rng.integers(50, 150, 240)).astype(np.int64)
    recv = send + rng.integers(10, 5000, 240)
    g = (p >> np.uint64(62)).astype(int)
    idx0, idx1 = np.flatnonzero(g == 0), np.flatnonzero(g == 1)
    order = [i for i in range(240) if i != idx0[30]]
    for group, i, j in ((idx0, 10, 13), (idx0, 45, 41), (idx1, 5, 8), (idx1, 30, 27),
                        (idx1, 50, 53)):
        order.remove(group[i])
        order.insert(order.index(group[j]) + 1, group[i])
    order = np.array(order)
    syn, block = opa_sender(config, PacketRecords(p, send))
    r = recover_interval(syn, block, PacketRecords(p[order], recv[order]), shift_bound=D)
    assert r.recovered.all() and r.unrecovered_groups == 0 and r.searched_groups == 2
    assert np.array_equal(r.delays, (recv - send)[order])
    assert r.lost == 1 and r.reordered == 5


@pytest.mark.parametrize("w,seed", [(30, 1), (70, 2)])
def test_two_losses_two_reorderings(w, seed):
    """Two losses anywhere and two packets each moved up to d places apart: every mapping
    exact (before: never searched, four unknowns on k = 4 rows; placed, the two moves
    leave two unknowns and two checking rows)."""
    rng = np.random.default_rng(240 + seed)
    for _ in range(2):
        p, b = _group(rng, w)
        ok, found = _mapped(p, b, w, _random_pattern(rng, w, 2, 2))
        assert ok, found.reason


@pytest.mark.parametrize("lost,moved", [(1, 3), (2, 3), (0, 4)])
def test_beyond_the_levels_reported_not_guessed(lost, moved):
    """Patterns no level holds (k = 4: a loss and three reordered packets, two and three,
    four reordered) are reported unrecovered — never a wrong mapping."""
    rng = np.random.default_rng(300 + lost)
    w = 40
    for _ in range(2):
        p, b = _group(rng, w)
        truth = _random_pattern(rng, w, lost, moved, spaced=False)
        found = search_group(p[truth - 1], w, b, seed=SEED, shift_bound=D)
        assert found.sigma is None or np.array_equal(found.sigma, truth)
        assert found.sigma is None or moved - lost < 4   # four moves can collapse


def test_search_limit_of_the_moves():
    """Three reordered packets in a group whose moves' search exceeds grid_limit:
    reported (search_limit), not searched."""
    rng = np.random.default_rng(400)
    w = 50
    p, b = _group(rng, w)
    truth = _received(w, moves=((5, 12), (30, 24), (40, 46)), d=8)
    found = search_group(p[truth - 1], w, b, seed=SEED, grid_limit=10_000)
    assert found.sigma is None and found.reason == "search_limit"
    ok, _ = _mapped(p, b, w, truth, d=8)           # within the default limits
    assert ok
