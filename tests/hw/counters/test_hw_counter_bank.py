# SPDX-License-Identifier: BSD-2-Clause
"""Unit tests of hw.counters.counter_bank.CounterBank on Amaranth's simulator.

Update streams (random, same-address runs, A,B,A,B / A,A,B,A patterns, one request per
clock) are checked word for word against a dict model and against host_sw.model.golden_lda_rda_lds; swaps
mid-stream, drain window, frozen read-back, release/clearing and overrun refusal are
checked cycle by cycle.
"""

import collections
import random
from unittest.mock import patch

import numpy as np
import pytest
from amaranth import Shape
from amaranth.lib import data
from amaranth.sim import Simulator

from host_sw.contracts.check_value import plausibility_problem, words_check
from host_sw.model import golden_lda_rda_lds as golden
from host_sw.contracts.config import LdaConfig, LdsConfig, RdaConfig
from host_sw.contracts.hash_fields import field_hash, lds_digest
from hw.backends import write_slices
from hw.counters import counter_bank as counter_bank_module
from hw.counters.copy_control import CopyState
from hw.counters.counter_bank import CounterBank
from hw.counters.bank_layout import (
    frozen_read_signature, lane_geometry, update_request_signature, word_layout,
)

SMALL_LDA = LdaConfig(banks=2, rows=8, thresholds=(0, 1))
SMALL_RDA = RdaConfig(banks=2, buckets_per_bank=5)
SMALL_LDS = LdsConfig(rows=4, cells=6, vlda_cells=2, row_thresholds=(0, 1, 0, 2))
# narrow counters so that sums wrap within a short test
NARROW_LDA = LdaConfig(banks=1, rows=4, thresholds=(0,), count_bits=8, ts_bits=16)


class WordModel:
    """Expected words per (copy, lane, address), with the bank's modular arithmetic."""

    def __init__(self, config):
        self.config = config
        self.lanes, self.depth = lane_geometry(config)
        self.words = {}

    def apply(self, copy, req):
        for lane, addr in req["lanes"].items():
            old = self.words.get((copy, lane, addr), {})
            new = {}
            for f in self.config.layout.fields:
                v = old.get(f.name, 0)
                if f.combine == "xor":
                    v ^= req["xor"]
                elif f.name == "count":
                    v += 1
                else:
                    v += req["ts"]
                new[f.name] = v & ((1 << f.width) - 1)
            self.words[(copy, lane, addr)] = new

    def copy_words(self, copy):
        """Packed words of one copy in flat (lane-major) order."""
        out = []
        for lane in range(self.lanes):
            for addr in range(self.depth):
                fields = self.words.get((copy, lane, addr), {})
                out.append(sum(fields.get(f.name, 0) << self.config.layout.offset(f.name)
                               for f in self.config.layout.fields))
        return out

    def clear(self, copy):
        self.words = {k: v for k, v in self.words.items() if k[0] != copy}


class Bench:
    """Cycle-by-cycle driver: one call of :meth:`cycle` is one clock."""

    def __init__(self, ctx, dut):
        self.ctx, self.dut = ctx, dut
        self.now = 0
        self.reads = []        # (cycle of en, flat index) in flight
        self.responses = []    # (cycle of en, flat index, data, error, cycle of valid)
        self.dropped = []      # cycles with dropped == 1
        self.refused = []      # cycles with swap_refused == 1

    async def cycle(self, req=None, *, swap=False, release=False, read=None):
        ctx, dut = self.ctx, self.dut
        ctx.set(dut.update.valid, req is not None)
        if req is not None:
            ctx.set(dut.update.copy, req["copy"])
            ctx.set(dut.update.timestamp, req["ts"])
            enable = 0
            for lane, addr in req["lanes"].items():
                enable |= 1 << lane
                ctx.set(dut.update.lane_address[lane], addr)
            ctx.set(dut.update.lane_enable, enable)
            if "xor_value" in dut.update.signature.members:
                ctx.set(dut.update.xor_value, req.get("xor", 0))
        ctx.set(dut.swap, swap)
        ctx.set(dut.release, release)
        ctx.set(dut.frozen.en, read is not None)
        ctx.set(dut.frozen.addr, 0 if read is None else read)
        if read is not None:
            self.reads.append((self.now, read))
        if ctx.get(dut.dropped):
            self.dropped.append(self.now)
        if ctx.get(dut.swap_refused):
            self.refused.append(self.now)
        await ctx.tick()
        self.now += 1
        if ctx.get(dut.frozen.valid):
            t, index = self.reads.pop(0)
            self.responses.append((t, index, ctx.get(dut.frozen.data.as_value()),
                                   ctx.get(dut.frozen.error), self.now))

    async def idle(self, cycles):
        for _ in range(cycles):
            await self.cycle()

    def get(self, signal):
        return self.ctx.get(signal)

    async def wait_for(self, signal, limit=10_000):
        for _ in range(limit):
            if self.get(signal):
                return
            await self.cycle()
        raise AssertionError(f"{signal!r} did not rise in {limit} cycles")

    async def read_frozen(self):
        """Read every word of the frozen copy, one read per clock; return the words."""
        self.responses.clear()
        n = self.dut.lanes * self.dut.depth
        for index in range(n):
            await self.cycle(read=index)
        await self.idle(CounterBank.READ_LATENCY)
        assert [r[1] for r in self.responses] == list(range(n))
        assert not any(r[3] for r in self.responses), "frozen read flagged an error"
        words = [r[2] for r in self.responses]
        # the check value computed while the copy froze is the contract's over the words
        config = self.dut.config
        assert self.get(self.dut.frozen_check) == words_check(config, words)
        counts = np.array(config.layout.unpack(words)["count"], dtype=np.uint64)
        assert plausibility_problem(config, counts, self.get(self.dut.frozen_updates)) is None
        return words

    async def swap_and_read(self):
        """Swap, wait until the old copy is FROZEN, read it all."""
        await self.cycle(swap=True)
        await self.wait_for(self.dut.frozen_ready)
        return await self.read_frozen()

    async def release_and_wait_clean(self):
        await self.cycle(release=True)
        assert self.get(self.dut.clearing)
        await self.wait_for(self.dut.other_clean)


def run(dut, body):
    """Simulate ``body(bench)`` (an async function) on ``dut``, from the end of the
    clearing sweep after reset (cycle 0 of the bench)."""
    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def testbench(ctx):
        bench = Bench(ctx, dut)
        await bench.wait_for(dut.other_clean)
        bench.now = 0
        await body(bench)

    sim.add_testbench(testbench)
    sim.run()


def packet_hashes(config, rng, n):
    """Random packet hashes drawn from a small pool, arranged as back-to-back repeats
    (runs, A,B,A,B and A,A,B,A) and fresh random ones."""
    pool = rng.integers(0, 2**63, size=12, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    flow_pool = rng.integers(0, 2**32, size=(getattr(config, "rows", 1), 12), dtype=np.uint64)
    picks = []
    while len(picks) < n:
        a, b = rng.integers(0, len(pool), size=2)
        kind = rng.integers(0, 4)
        if kind == 0:
            picks += [a] * int(rng.integers(2, 12))
        elif kind == 1:
            picks += [a, b] * int(rng.integers(1, 5))
        elif kind == 2:
            picks += [a, a, b, a]
        else:
            picks += list(rng.integers(0, len(pool), size=int(rng.integers(1, 6))))
    picks = np.array(picks[:n])
    flow = flow_pool[:, picks] if isinstance(config, LdsConfig) else None
    return golden.PacketHashes(pool[picks], flow, np.ones(n, bool))


def requests_from_golden(config, hashes, timestamps, copy=0):
    """One update request per packet, from golden.bucket_indices (packets updating no
    lane produce no request)."""
    bank, col, who = golden.bucket_indices(config, hashes)
    lanes = {}
    for b, c, w in zip(bank, col, who):
        if isinstance(config, LdaConfig):
            lanes.setdefault(int(w), {})[0] = int(b) * config.rows + int(c)
        else:
            lanes.setdefault(int(w), {})[int(b)] = int(c)
    xor_field = [f for f in config.layout.fields if f.combine == "xor"]
    reqs = []
    for w in sorted(lanes):
        req = {"copy": copy, "ts": int(timestamps[w]), "lanes": lanes[w]}
        if xor_field and xor_field[0].name == "id_xor":
            req["xor"] = int(hashes.packet[w])
        elif xor_field:
            req["xor"] = int(lds_digest(field_hash(hashes.packet[w:w + 1], config.seed),
                                        xor_field[0].width)[0])
        reqs.append(req)
    return reqs


# -- static checks ----------------------------------------------------------------------

@pytest.mark.parametrize("config", [SMALL_LDA, SMALL_RDA, SMALL_LDS, LdaConfig()])
def test_word_layout_matches_contract(config):
    layout = word_layout(config)
    assert layout.size == config.layout.width
    for f in config.layout.fields:
        assert layout[f.name].offset == config.layout.offset(f.name)
        assert Shape.cast(layout[f.name].shape).width == f.width
    values = {f.name: (0x5A5A5A5A5A5A5A5A >> i) & ((1 << f.width) - 1)
              for i, f in enumerate(config.layout.fields)}
    packed = config.layout.pack({k: np.array([v], dtype=np.uint64) for k, v in values.items()})
    assert layout.const(values).as_value().value == packed[0]


def _width(member):
    return Shape.cast(member.shape).width


def test_signatures():
    sig = update_request_signature(SMALL_RDA).members
    assert _width(sig["timestamp"]) == SMALL_RDA.ts_bits
    assert _width(sig["lane_enable"]) == 2
    assert sig["lane_address"].shape == data.ArrayLayout(3, 2)
    assert _width(sig["xor_value"]) == 64
    assert "xor_value" not in update_request_signature(SMALL_LDA).members
    assert _width(update_request_signature(SMALL_LDS).members["xor_value"]) == 32
    lda = LdaConfig()
    assert update_request_signature(lda).members["lane_address"].shape == data.ArrayLayout(11, 1)
    assert _width(frozen_read_signature(lda).members["addr"]) == 11
    assert _width(frozen_read_signature(SMALL_LDS).members["addr"]) == 5
    assert lane_geometry(lda) == (1, 2048)
    assert lane_geometry(SMALL_LDS) == (4, 6)


def test_parameter_validation():
    with pytest.raises(ValueError, match="drain_cycles must be a non-negative integer"):
        CounterBank(config=SMALL_LDA, drain_cycles=-1)
    with pytest.raises(TypeError, match="config must be"):
        CounterBank(config={"kind": "lda"})


# -- update streams ---------------------------------------------------------------------

@pytest.mark.parametrize("config", [SMALL_LDA, SMALL_RDA, SMALL_LDS, NARROW_LDA],
                         ids=["lda", "rda", "lds", "lda-narrow"])
def test_random_stream_matches_golden(config):
    rng = np.random.default_rng(7)
    n = 700
    hashes = packet_hashes(config, rng, n)
    timestamps = rng.integers(0, 2**config.ts_bits, size=n, dtype=np.uint64)
    reqs = requests_from_golden(config, hashes, timestamps)
    expected = golden.update(config, hashes, timestamps).words()
    model = WordModel(config)
    for req in reqs:
        model.apply(0, req)
    assert model.copy_words(0) == expected  # the dict model agrees with the golden model
    dut = CounterBank(config=config, drain_cycles=2)
    gaps = random.Random(3)

    async def body(b):
        for i, req in enumerate(reqs):
            await b.cycle(req)
            # first half back to back, then occasional idle cycles
            if i > len(reqs) // 2 and gaps.random() < 0.2:
                await b.idle(gaps.randint(1, 4))
        assert b.dropped == []
        assert await b.swap_and_read() == expected

    run(dut, body)


def test_thousands_same_address_and_patterns():
    """2000 back-to-back updates of one word (wrapping the 8-bit count), then
    A,B,A,B and A,A,B,A patterns at every spacing the pipeline has in flight."""
    config = NARROW_LDA
    rng = random.Random(11)
    reqs = [{"copy": 0, "ts": rng.randrange(1 << 16), "lanes": {0: 2}} for _ in range(2000)]
    for pattern in ([0, 1] * 20, [0, 0, 1, 0] * 10, [3, 1, 3, 3, 1, 1, 3, 0, 3]):
        for spacing in range(0, 6):
            for a in pattern:
                reqs.append({"copy": 0, "ts": rng.randrange(1 << 16), "lanes": {0: a}})
                reqs.extend([None] * spacing)
    model = WordModel(config)
    for req in reqs:
        if req is not None:
            model.apply(0, req)
    assert model.words[(0, 0, 2)]["count"] == 2000 % 256  # the count wrapped
    dut = CounterBank(config=config, drain_cycles=0)

    async def body(b):
        for req in reqs:
            await b.cycle(req)
        assert await b.swap_and_read() == model.copy_words(0)

    run(dut, body)


# -- double buffering -------------------------------------------------------------------

@pytest.mark.parametrize("config", [SMALL_LDA, SMALL_RDA, SMALL_LDS,
                                    RdaConfig(banks=3, buckets_per_bank=1)],
                         ids=["lda", "rda", "lds", "rda-one-bucket"])
def test_swap_mid_stream_drain_window_and_clearing(config):
    drain = 5
    lanes, depth = lane_geometry(config)
    rng = random.Random(5)
    xor_bits = max([f.width for f in config.layout.fields if f.combine == "xor"], default=1)

    def random_req(copy):
        chosen = rng.sample(range(lanes), rng.randint(1, lanes))
        return {"copy": copy, "ts": rng.randrange(1 << config.ts_bits),
                "lanes": {lane: rng.randrange(depth) for lane in chosen},
                "xor": rng.randrange(1 << xor_bits)}

    model = WordModel(config)
    dut = CounterBank(config=config, drain_cycles=drain)

    async def body(b):
        assert b.get(dut.active_copy) == 0 and b.get(dut.other_clean)
        assert b.get(dut.copy_state[0]) == CopyState.ACTIVE
        assert b.get(dut.copy_state[1]) == CopyState.CLEAN
        # interval 1 in copy 0
        for _ in range(150):
            req = random_req(0)
            model.apply(0, req)
            await b.cycle(req)
        # swap with a request tagged with the new copy in the same cycle
        swap_cycle = b.now
        req = random_req(1)
        model.apply(1, req)
        await b.cycle(req, swap=True)
        assert b.get(dut.active_copy) == 1 and b.get(dut.draining)
        assert b.get(dut.copy_state[0]) == CopyState.DRAINING
        # late copy-0 requests (frames that started before the swap) mixed with copy-1
        # requests for the whole drain window, on the same few addresses
        for j in range(drain):
            copy = 0 if j in (0, drain - 1) else rng.randrange(2)
            req = random_req(copy)
            req["lanes"] = {lane: rng.randrange(min(2, depth)) for lane in req["lanes"]}
            model.apply(copy, req)
            await b.cycle(req)
        assert b.now == swap_cycle + drain + 1 and b.dropped == []
        # a copy-0 request after the window is dropped, not applied
        await b.cycle(random_req(0))
        assert b.dropped == [swap_cycle + drain + 1]
        # copy 1 keeps updating while copy 0 drains and freezes
        for _ in range(40):
            req = random_req(1)
            model.apply(1, req)
            await b.cycle(req)
        assert b.get(dut.frozen_ready) and b.get(dut.frozen_copy) == 0
        assert await b.read_frozen() == model.copy_words(0)
        # release: clearing, one word per clock per lane, while copy 1 keeps counting
        await b.cycle(release=True)
        clear_start = b.now
        assert b.get(dut.clearing) and b.get(dut.busy)
        while not b.get(dut.other_clean):
            req = random_req(1)
            model.apply(1, req)
            await b.cycle(req)
        assert b.now - clear_start == depth
        model.clear(0)
        # interval 3: copy 0 active again; copy 1 frozen and read back
        assert await b.swap_and_read() == model.copy_words(1)
        await b.release_and_wait_clean()
        model.clear(1)
        # copy 0 took no updates since it was cleared: swapping it out reads all zeros
        assert await b.swap_and_read() == [0] * (lanes * depth)

    run(dut, body)


def test_frozen_timing_and_last_request_in_window():
    """FROZEN starts exactly drain + UPDATE_LATENCY + 2 + check_cycles cycles after the swap
    (the freeze check reads every word once), and the
    last request accepted in the drain window is already in the frozen copy."""
    config = SMALL_LDA
    drain = 3
    dut = CounterBank(config=config, drain_cycles=drain)

    async def body(b):
        await b.cycle({"copy": 0, "ts": 1, "lanes": {0: 5}})
        swap_cycle = b.now
        # a request tagged with the old copy in the cycle of the swap drains into it
        await b.cycle({"copy": 0, "ts": 1000, "lanes": {0: 5}}, swap=True)
        await b.idle(drain - 1)
        await b.cycle({"copy": 0, "ts": 100, "lanes": {0: 5}})  # last cycle of the window
        assert b.now == swap_cycle + drain + 1 and b.dropped == []
        while not b.get(dut.frozen_ready):
            await b.cycle()
        assert b.now == swap_cycle + drain + CounterBank.UPDATE_LATENCY + 2 + dut.check_cycles
        assert dut.check_cycles == 16 + CounterBank.READ_LATENCY + 5
        await b.cycle(read=5)
        await b.idle(CounterBank.READ_LATENCY)
        (t, index, word, error, t_valid), = b.responses
        assert t_valid - t == CounterBank.READ_LATENCY
        assert not error and word == 3 | (1101 << config.count_bits)

    run(dut, body)


def test_overrun_refused_and_release_ignored():
    config = SMALL_RDA
    dut = CounterBank(config=config, drain_cycles=4)

    async def body(b):
        # copy 1 is CLEAN: a request tagged with it before any swap is dropped
        await b.cycle({"copy": 1, "ts": 9, "lanes": {0: 1, 1: 1}, "xor": 3})
        assert b.dropped == [0]
        # release while nothing is frozen: ignored
        await b.cycle(release=True)
        assert b.get(dut.other_clean) and not b.get(dut.clearing)
        await b.cycle({"copy": 0, "ts": 9, "lanes": {0: 4}, "xor": 3})
        await b.cycle(swap=True)
        assert b.get(dut.active_copy) == 1 and b.get(dut.draining)
        # swap while DRAINING: refused, nothing changes
        await b.cycle(swap=True)
        assert b.refused == [b.now - 1]
        assert b.get(dut.active_copy) == 1 and b.get(dut.draining)
        await b.wait_for(dut.frozen_ready)
        # swap while FROZEN: refused; the frozen copy stays readable and unchanged
        await b.cycle(swap=True)
        assert len(b.refused) == 2 and b.get(dut.active_copy) == 1
        assert b.get(dut.frozen_ready)
        words = await b.read_frozen()
        assert words[4] == 1 | (9 << 32) | (3 << 72)
        assert sum(1 for w in words if w) == 1
        # swap while CLEARING: refused
        await b.cycle(release=True)
        await b.cycle(swap=True)
        assert len(b.refused) == 3 and b.get(dut.active_copy) == 1
        await b.wait_for(dut.other_clean)
        await b.cycle(swap=True)
        assert len(b.refused) == 3 and b.get(dut.active_copy) == 0

    run(dut, body)


def test_frozen_read_errors():
    config = SMALL_RDA  # 2 lanes x 5 words: flat indices 10..15 are out of range
    dut = CounterBank(config=config, drain_cycles=0)

    async def body(b):
        await b.cycle({"copy": 0, "ts": 7, "lanes": {0: 0, 1: 4}, "xor": 1})
        # nothing frozen yet: error, zero data
        await b.cycle(read=0)
        await b.idle(CounterBank.READ_LATENCY)
        assert [(r[2], r[3]) for r in b.responses] == [(0, 1)]
        await b.cycle(swap=True)
        # DRAINING: still an error
        await b.cycle(read=0)
        assert b.get(dut.draining)
        await b.idle(CounterBank.READ_LATENCY)
        assert [(r[2], r[3]) for r in b.responses][-1] == (0, 1)
        await b.wait_for(dut.frozen_ready)
        b.responses.clear()
        for index in (0, 9, 10, 15, 4, 5):
            await b.cycle(read=index)
        await b.idle(CounterBank.READ_LATENCY)
        word = 1 | (7 << 32) | (1 << 72)
        assert [(r[1], r[2], r[3]) for r in b.responses] == [
            (0, word, 0), (9, word, 0), (10, 0, 1), (15, 0, 1), (4, 0, 0), (5, 0, 0)]

    run(dut, body)


# -- ECP5 memory mapping ----------------------------------------------------------------

def test_ecp5_memory_uses_dp16kd_with_output_register():
    from amaranth.back import rtlil

    text = rtlil.convert(CounterBank(config=SMALL_RDA, memory="ecp5"), name="counter_bank")
    # 2 copies x 2 lanes x ceil(136 / 18) = 8 blocks of 1024 x 18 (depth 5)
    assert SMALL_RDA.layout.width == 136
    assert text.count("cell \\DP16KD ") == 2 * 2 * 8
    assert text.count('parameter \\REGMODE_B "OUTREG"') == 32
    assert text.count("parameter \\DATA_WIDTH_B 18") == 32
    generic = rtlil.convert(CounterBank(config=SMALL_RDA, memory="generic"), name="cb")
    assert "DP16KD" not in generic
    with pytest.raises(ValueError, match="memory must be one of auto, generic, ecp5"):
        CounterBank(config=SMALL_RDA, memory="bram")
    with pytest.raises(ValueError, match="up to 16384 words per lane, not 32768"):
        CounterBank(config=LdaConfig(banks=2, rows=16384, thresholds=(0, 1)), memory="ecp5")


# -- the word in slices, each with write controls of its own ----------------------------

def _uneven_slices(width, depth, kind):
    """Three slices of unequal widths (the generic memory's words split as the ECP5
    one's are: each slice its own RAM, enable, address and clear select)."""
    return [(0, 5), (5, 17), (22, width - 22)]


@pytest.mark.parametrize("config", [SMALL_RDA, SMALL_LDS], ids=["rda", "lds"])
def test_sliced_words_update_swap_and_clear_as_whole_ones(config):
    """Updates, swaps, the drain, reads and the clearing, with each word in three RAMs
    whose write controls are registers of their own (the clears a clock behind the copy
    control): the same words as one RAM per lane (an update's write a clock late or
    early, or a slice cleared at the wrong address, fails the swap test's second
    interval)."""
    with patch.object(counter_bank_module, "write_slices", _uneven_slices):
        test_swap_mid_stream_drain_window_and_clearing(config)
        test_random_stream_matches_golden(config)


def test_write_slices_of_each_memory():
    # DP16KD x4 mode for 4 096 words: four blocks (16 bits) a slice; x18 for 1 024
    assert write_slices(176, 4096, "ecp5") == [(16 * i, 16) for i in range(11)]
    assert write_slices(104, 1024, "ecp5") == [(0, 72), (72, 32)]
    assert write_slices(72, 1024, "ecp5") == [(0, 72)]
    assert write_slices(176, 4096, "generic") == [(0, 176)]
    with pytest.raises(ValueError, match="kind must be one of"):
        write_slices(8, 8, "bram")


def test_ecp5_slices_have_write_address_registers_of_their_own():
    from amaranth.back import rtlil

    text = rtlil.convert(CounterBank(config=SMALL_RDA, memory="ecp5"), name="counter_bank")
    # 136-bit words: slices of 72 and 64 bits, each with its own address register
    for lane in range(2):
        for k in range(2):
            for i in range(2):
                assert f"wire width 3 \\l{lane}_copy{k}_w_addr{i}" in text
            assert f"\\l{lane}_copy{k}_w_addr2" not in text


def test_ecp5_slices_have_read_addresses_of_their_own(tmp_path):
    """Each slice's read address comes from registers of its own (S0's valid bit for the
    copy, S0's address, the frozen read's address) through its own multiplexer: after
    ``synth_ecp5`` no net reaches the read address pins of more block RAMs than one slice
    holds (one multiplexer for a lane's whole word, eight blocks here, was the two-clock
    RDA and RLI cores' datapath critical path on ECP5)."""
    from tests.hw.ecp5_netlist import synthesized

    module = synthesized(CounterBank(config=SMALL_RDA, memory="ecp5"), tmp_path)
    rams_of = collections.defaultdict(set)
    for name, cell in module["cells"].items():
        if cell["type"] == "DP16KD":
            for port, bits in cell["connections"].items():
                if port.startswith("ADB"):
                    for bit in bits:
                        if isinstance(bit, int):
                            rams_of[bit].add(name)
    # 2 copies x 2 lanes x 2 slices (72 and 64 bits) of four 1024 x 18 blocks each
    assert sum(cell["type"] == "DP16KD" for cell in module["cells"].values()) == 32
    assert rams_of and max(len(rams) for rams in rams_of.values()) == 4
