# SPDX-License-Identifier: BSD-2-Clause
"""Bucket selection (hw.counters.bucket_select) against the golden field split: LDA leading-zero
bank selection vs host_sw.contracts.hash_fields.lda_bank, LDA/RDA/LDS addresses vs
host_sw.model.golden_lda_rda_lds.bucket_indices."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from host_sw.contracts.config import LdaConfig, LdsConfig, RdaConfig
from host_sw.model.golden_lda_rda_lds import Hashers, PacketHashes, bucket_indices
from host_sw.contracts.hash_fields import field_hash, lda_bank, lda_row, leading_zeros32
from hw.counters.bucket_select import BucketSelector


def skewed_hashes(rng, n, seed):
    """Packet hashes whose field hash's sampling word has 0..20 leading zeros, roughly
    uniformly (found among 2**22 random ones: F is not invertible by hand)."""
    pool = rng.integers(0, 1 << 63, size=1 << 22, dtype=np.uint64) * np.uint64(2)
    lz = leading_zeros32(field_hash(pool, seed))
    targets = rng.integers(0, 21, size=n)
    return np.array([pool[np.flatnonzero(lz == t)[0]] for t in targets], dtype=np.uint64)


def run_selector(config, hashes: PacketHashes, *, thresholds=None):
    """Feed one hashed record per clock (with a gap every 5th), return the requests."""
    dut = BucketSelector(config=config)
    hashers = Hashers(config)
    bucket = offset = field = None
    if isinstance(config, RdaConfig):
        bucket = [h.of_u64(hashes.packet) for h in hashers.rda_bucket]
    else:
        field = field_hash(hashes.packet, config.seed)
    if isinstance(config, LdsConfig):
        offset = hashers.lds_offset_hashes(hashes.packet)
    requests = []
    counted_seen = []

    async def testbench(ctx):
        if thresholds is not None:
            member = dut.thresholds if isinstance(config, LdaConfig) else dut.row_thresholds
            for j, t in enumerate(thresholds):
                ctx.set(member[j], t)
        schedule = []
        for i in range(len(hashes)):
            if i % 5 == 4:
                schedule.append(None)
            schedule.append(i)
        for item in schedule + [None] * (dut.latency + 1):
            p = dut.hashed.payload
            if item is None:
                ctx.set(dut.hashed.valid, 0)
            else:
                ctx.set(dut.hashed.valid, 1)
                ctx.set(p.packet_hash, int(hashes.packet[item]))
                ctx.set(p.counted, int(hashes.counted[item]))
                ctx.set(p.timestamp, 1000 + item)
                ctx.set(p.copy, item & 1)
                if bucket is not None:
                    for l in range(config.banks):
                        ctx.set(p.bucket_hash[l], int(bucket[l][item]))
                if field is not None:
                    ctx.set(p.field_hash, int(field[item]))
                if offset is not None:
                    for r in range(config.rows):
                        ctx.set(p.offset_hash[r], int(offset[r][item]))
                if hashes.flow is not None:
                    for r in range(config.rows):
                        ctx.set(p.flow_hash[r], int(hashes.flow[r, item]))
            await ctx.tick()
            req = dut.request
            if ctx.get(dut.counted):
                counted_seen.append(ctx.get(req.timestamp) - 1000)
            if ctx.get(req.valid):
                lanes = len(req.lane_enable)
                requests.append({
                    "packet": ctx.get(req.timestamp) - 1000,
                    "copy": ctx.get(req.copy),
                    "enable": ctx.get(req.lane_enable),
                    "address": [ctx.get(req.lane_address[k]) for k in range(lanes)],
                    "xor": ctx.get(req.xor_value) if hasattr(req, "xor_value") else None,
                })

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    return requests, counted_seen


def golden_requests(config, hashes):
    """The golden (lane, address) pairs grouped per packet."""
    lane, col, who = bucket_indices(config, hashes)
    out = {}
    for l, c, w in zip(lane, col, who):
        out.setdefault(int(w), {})[int(l)] = int(c)
    return out


@pytest.mark.parametrize("thresholds", [(0, 6), (3, 7), (1, 2, 5, 32), (4,)])
def test_lda_bank_and_row(thresholds):
    rng = np.random.default_rng(len(thresholds) * 100 + thresholds[0])
    config = LdaConfig(banks=len(thresholds), rows=64, thresholds=thresholds)
    n = 60
    packet = skewed_hashes(rng, n, config.seed)
    counted = rng.random(n) < 0.85
    hashes = PacketHashes(packet, None, counted)
    requests, counted_seen = run_selector(config, hashes, thresholds=thresholds)
    field = field_hash(packet, config.seed)
    bank = lda_bank(field, thresholds)
    row = lda_row(field, config.rows)
    expect = [(i, int(bank[i]) * config.rows + int(row[i]))
              for i in range(n) if counted[i] and bank[i] >= 0]
    assert [(r["packet"], r["address"][0]) for r in requests] == expect
    assert all(r["enable"] == 1 and r["copy"] == r["packet"] & 1 for r in requests)
    assert counted_seen == [i for i in range(n) if counted[i]]
    # the same through the golden model's bucket_indices
    gold = golden_requests(config, hashes)
    flat = {w: [bank * config.rows + row for bank, row in lanes.items()]
            for w, lanes in gold.items()}
    assert {r["packet"]: [r["address"][0]] for r in requests} == flat
    assert len(requests) >= 10


def test_lda_thresholds_are_run_time():
    """The same hashes with other thresholds written at run time pick other banks."""
    rng = np.random.default_rng(9)
    config = LdaConfig(banks=2, rows=16, thresholds=(0, 6))
    packet = skewed_hashes(rng, 30, config.seed)
    hashes = PacketHashes(packet, None, np.ones(30, bool))
    req_a, _ = run_selector(config, hashes, thresholds=(0, 6))
    req_b, _ = run_selector(config, hashes, thresholds=(2, 20))
    bank_b = lda_bank(field_hash(packet, config.seed), (2, 20))
    assert [(r["packet"], r["address"][0] // 16) for r in req_b] == [
        (i, int(bank_b[i])) for i in range(30) if bank_b[i] >= 0]
    assert req_a != req_b


@pytest.mark.parametrize("buckets", [1000, 256])
def test_rda_buckets(buckets):
    rng = np.random.default_rng(buckets)
    config = RdaConfig(banks=3, buckets_per_bank=buckets, seed=99)
    n = 40
    packet = rng.integers(0, 1 << 63, size=n, dtype=np.uint64) * np.uint64(2) + \
        rng.integers(0, 2, size=n, dtype=np.uint64)
    counted = rng.random(n) < 0.9
    hashes = PacketHashes(packet, None, counted)
    requests, _ = run_selector(config, hashes)
    gold = golden_requests(config, hashes)
    assert {r["packet"]: dict(enumerate(r["address"])) for r in requests} == gold
    assert all(r["enable"] == 0b111 and r["xor"] == int(packet[r["packet"]])
               for r in requests)


@pytest.mark.parametrize("cells,vlda,row_thresholds", [
    (100, 7, (0, 2, 5)), (64, 1, (0, 0, 0)), (1000, 1000, (1, 3, 32))])
def test_lds_cells_and_row_sampling(cells, vlda, row_thresholds):
    rng = np.random.default_rng(cells + vlda)
    config = LdsConfig(rows=3, cells=cells, vlda_cells=vlda, row_thresholds=row_thresholds,
                       digest_bits=20)
    n = 40
    packet = skewed_hashes(rng, n, config.seed)
    flow = rng.integers(0, 1 << 32, size=(3, n), dtype=np.uint64)
    counted = rng.random(n) < 0.9
    hashes = PacketHashes(packet, flow, counted)
    requests, _ = run_selector(config, hashes, thresholds=row_thresholds)
    gold = golden_requests(config, hashes)
    got = {r["packet"]: {k: a for k, a in enumerate(r["address"]) if (r["enable"] >> k) & 1}
           for r in requests}
    assert got == gold
    field = field_hash(packet, config.seed)
    assert all(r["xor"] == int(field[r["packet"]]) & 0xFFFFF for r in requests)
    assert len(gold) >= 10
