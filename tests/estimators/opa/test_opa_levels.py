# SPDX-License-Identifier: BSD-2-Clause
"""OPA search levels: each level's candidates are exactly its definition
(``host_sw/estimators/opa/levels.py``), within the stated size, and the false-match
budget asks for the checks SPEC §8.5 states."""

from itertools import combinations, permutations

import pytest

from host_sw.estimators.opa.levels import (candidate_chunks, combination_chunks, level_size,
                                           required_matches)


def _brute(n, w, a, m, d):
    out = set()
    for aside in combinations(range(n), m):
        for lost in combinations(range(1, w + 1), a):
            near = [[abs(x - (e + 1)) <= d for x in lost] for e in aside]
            if m == 1 and a and not any(near[0]):
                continue
            if m >= 2 and a > m:   # every set-aside packet near a distinct position
                if not any(all(near[q][i] for q, i in enumerate(perm))
                           for perm in permutations(range(a), m)):
                    continue
            elif m >= 2:   # distinct set-aside packets for the positions
                if not any(all(near[q][i] for i, q in enumerate(perm))
                           for perm in permutations(range(m), a)):
                    continue
            out.add((aside, lost))
    return out


@pytest.mark.parametrize("n,w,a,m,d", [(6, 8, 3, 0, 2), (6, 8, 3, 1, 2), (7, 7, 1, 1, 1),
                                       (6, 6, 2, 2, 1), (6, 6, 3, 3, 1), (7, 6, 2, 3, 2),
                                       (6, 7, 3, 2, 1)])
def test_candidates_are_the_definition(n, w, a, m, d):
    got = [(tuple(s), tuple(l)) for aside, lost in candidate_chunks(n, w, a, m, d)
           for s, l in zip(aside.tolist(), lost.tolist())]
    assert set(got) == _brute(n, w, a, m, d)
    assert len(got) <= level_size(n, w, a, m, d)
    if m <= 1:
        assert len(got) == len(set(got))       # each once


def test_near_pairs_are_the_pairs_within_2d():
    got = {(tuple(s), tuple(l)) for aside, lost in candidate_chunks(9, 9, 2, 2, 1, near=True)
           for s, l in zip(aside.tolist(), lost.tolist())}
    want = {c for c in _brute(9, 9, 2, 2, 1) if c[0][1] - c[0][0] <= 2}
    assert got == want
    assert level_size(9, 9, 2, 2, 1, near=True) >= len(got)


def test_combination_chunks_cover_every_subset():
    got = [tuple(r) for c in combination_chunks(30, 4) for r in c.tolist()]
    assert got == list(combinations(range(1, 31), 4))


def test_required_matches_follow_the_budget():
    # k = 4, |L| = 3: one checking row; 2 024 candidates · 2^-31 < 1e-6, 2 300 not
    assert required_matches(2024, 4, 3, 0, 1e-6) == 0
    assert required_matches(2300, 4, 3, 0, 1e-6) is None
    assert required_matches(2300, 4, 3, 1, 1e-6) == 1      # a set-aside match: 2 checks
    assert required_matches(2_000_000, 4, 2, 0, 1e-6) == 0
    assert required_matches(10, 4, 2, 2, 1e-6) == 2        # m ≥ 2: all matched
