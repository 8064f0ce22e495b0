# SPDX-License-Identifier: BSD-2-Clause
"""OPA golden model: the vectorised sender words equal the per-packet definition of
SPEC §8 (:func:`host_sw.contracts.opa.words.cah_scalar`), and the timestamp block carries the
grouped send timestamps."""

import numpy as np

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.opa.words import cah_scalar, group_of
from host_sw.contracts.opa.timestamps import decode_timestamps
from host_sw.contracts.synopsis import Synopsis
from host_sw.model.golden_opa import PacketRecords, opa_sender, opa_synopsis


def test_words_equal_definition():
    config = OpaConfig(groups=8, rows=3, seed=0xABC)
    rng = np.random.default_rng(11)
    p = rng.integers(0, 2 ** 64, 300, dtype=np.uint64)
    syn = opa_synopsis(config, p)
    groups = group_of(p, 8)
    for g in range(8):
        w, b = cah_scalar([int(x) for x in p[groups == g]], 3, config.seed)
        assert int(syn.count[0, g]) == w
        assert [int(syn[f"b{r}"][0, g]) for r in range(3)] == b
    # the words pack and unpack as any synopsis does (SPEC §4)
    assert Synopsis.from_words(config, syn.words()) == syn


def test_timestamp_block_holds_grouped_send_times():
    config = OpaConfig(groups=4)
    rng = np.random.default_rng(12)
    p = rng.integers(0, 2 ** 64, 500, dtype=np.uint64)
    ts = np.cumsum(rng.integers(1, 1000, 500))
    syn, block = opa_sender(config, PacketRecords(p, ts))
    out, bound = decode_timestamps(block, syn.count.reshape(-1))
    groups = group_of(p, 4)
    assert bound == 0
    assert np.array_equal(out, np.concatenate([ts[groups == g] for g in range(4)]))
