# SPDX-License-Identifier: BSD-2-Clause
"""hw.opa.records.OpaRecordStreamer on Amaranth's simulator: every record frame equal,
byte for byte, to host_sw.contracts.opa.records.build_record_frames of the records it
kept — back-to-back packets across interval boundaries, sampling by group, an output
that cannot keep up (records dropped and counted, never silently), both points, gaps in
time beyond the offset field (a new frame and base)."""

import numpy as np
import pytest
from amaranth.hdl import Assert, Signal

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.opa.records import (RecordReassembler, build_record_frames,
                                           parse_record_frame, record_format)
from hw.opa.records import OpaRecordStreamer
from sim_tb.lib.amaranth_streams import Sink, simulate

W = 64
SRC, DST = 0x020000000001, 0x020000000002
CONFIG = OpaConfig(groups=16, rows=4)


class RoomChecked(OpaRecordStreamer):
    """The streamer with its registered room checked, in every clock of the run, against
    the entry FIFO's own level (``w_level < depth - 1``, what it stands for)."""

    def _room_for_record(self, m, fifo, write):
        room = super()._room_for_record(m, fifo, write)
        m.d.sync += Assert(room == (fifo.w_level < self.depth - 1), "room is not the FIFO's")
        return room


class _RoomALate(OpaRecordStreamer):
    """Planted bug: the room test registered as it is, so it is a clock late."""

    def _room_for_record(self, m, fifo, write):
        room = Signal(init=1)
        m.d.sync += room.eq(fifo.w_level < self.depth - 1)
        return room


class RoomALateChecked(RoomChecked, _RoomALate):
    """The planted bug under the same check."""


def _traffic(rng, intervals, per_interval, gap_p, step=40):
    """Per clock: (valid, hash, ts, boundary, next_seq); the intervals' packets. Each
    interval after the first starts with a boundary in its first packet's clock."""
    clocks, packets, seq, ts = [], [], 0, 1000
    for k in range(intervals):
        mine = []
        for i in range(per_interval):
            ts += int(rng.integers(1, step))
            if rng.random() < 0.04:       # beyond the offset field: a new frame
                ts += 1 << 33
            if rng.random() < gap_p:
                clocks.append((0, 0, ts, 0, 0))
            h = int(rng.integers(0, 1 << 63)) * 2 + int(rng.integers(0, 2))
            first = k > 0 and i == 0
            clocks.append((1, h, ts, int(first), seq if first else 0))
            mine.append((h, ts))
        packets.append((seq, mine))
        seq += 3                      # interval numbers need not be consecutive
    # the last interval ends in a clock of its own
    clocks.append((0, 0, ts + 1, 1, seq))
    return clocks, packets


def _run(point, clocks, *, record_groups=0, p_ready=1.0, depth=64, mtu=200, tail=2500,
         key=None, enables=None, runtime=False, receivers=None, from_reset=True,
         rice=0, shift=0, streamer=RoomChecked):
    dut = streamer(config=CONFIG, point=None if runtime else point, data_width=W,
                            mtu=mtu, depth=depth, record_from_reset=from_reset)
    out = Sink(dut.source, W, np.random.default_rng(3), p_ready=p_ready)
    counters = {}

    async def main(ctx):
        ctx.set(dut.src_mac, SRC)
        ctx.set(dut.dst_mac, DST)
        ctx.set(dut.config_id, CONFIG.config_id)
        per_clock = isinstance(record_groups, list)    # else one value for the run
        ctx.set(dut.record_groups, record_groups[0] if per_clock else record_groups)
        ctx.set(dut.rice, rice)
        if point == "sender" or runtime:
            ctx.set(dut.shift, shift)
        if runtime:
            ctx.set(dut.receiver, point == "receiver")
        if key is not None:
            ctx.set(dut.key, int.from_bytes(key, "big"))
            ctx.set(dut.auth, 1)
        for i, (valid, h, ts, boundary, nseq) in enumerate(clocks):
            ctx.set(dut.enable, 1 if enables is None else enables[i])
            if receivers is not None:
                ctx.set(dut.receiver, receivers[i])
            ctx.set(dut.valid, valid)
            ctx.set(dut.packet_hash, h)
            ctx.set(dut.timestamp, ts)
            ctx.set(dut.boundary, boundary)
            ctx.set(dut.next_seq, nseq)
            if per_clock:
                ctx.set(dut.record_groups, record_groups[i])
            await ctx.tick()
        ctx.set(dut.valid, 0)
        ctx.set(dut.boundary, 0)
        for _ in range(tail):
            await ctx.tick()
        counters.update(dropped=ctx.get(dut.dropped), merged=ctx.get(dut.merged),
                        frames=ctx.get(dut.frames))

    simulate(dut, main, out.run)
    return out.frames(), counters


def _by_interval(frames, point, mtu, key=None):
    r = RecordReassembler(CONFIG, mtu=mtu, key=key)
    done = [x for x in (r.add(f) for f in frames) if x is not None]
    assert not r.pending
    return done


def _check(frames, packets, point, *, record_groups=0, mtu=200, lossless=True, key=None,
           rice=False, shift=0):
    """Every frame equals the builder's for the records kept; returns drops seen."""
    done = _by_interval(frames, point, mtu, key)
    assert [d.seq for d in done] == [s for s, _ in packets]
    rebuilt, drops = [], 0
    rules = record_groups if isinstance(record_groups, list) else [record_groups] * len(done)
    for d, (seq, mine), rule in zip(done, packets, rules):
        h = np.array([p for p, _ in mine], dtype=np.uint64)
        ts = np.array([t for _, t in mine], dtype=np.int64)
        g = h >> np.uint64(60)
        keep = g < (rule or CONFIG.groups)
        h, ts, g = h[keep], ts[keep], g[keep]
        if point == "receiver":
            kept = np.isin(h, d.keys)            # the records kept, in order
            assert np.array_equal(d.keys, h[kept])
        elif rice and shift:
            # lossy: each quantum's records as a set (sorted by group); per group in order
            kept = np.ones(len(ts), dtype=bool)  # (checked without drops)
            mine, want = np.argsort(d.keys, kind="stable"), np.argsort(g, kind="stable")
            assert np.array_equal(d.keys[mine], g[want])
            err = d.timestamps[mine] - ts[want]
        else:
            # sender records carry (group, time): align by the (unique) timestamps
            kept = np.isin(ts, d.timestamps)
            assert np.array_equal(d.keys, g[kept])
        if not (rice and shift):
            err = d.timestamps - ts[kept]
        assert np.abs(err).max(initial=0) <= (1 << shift >> 1)
        assert not (shift == 0 and err.any())
        assert d.dropped == len(h) - int(kept.sum())
        if lossless:
            assert kept.all()
        drops += d.dropped
        rebuilt += build_record_frames(CONFIG, point, seq=seq, packet=h[kept],
                                       timestamps=ts[kept], src_mac=SRC, dst_mac=DST,
                                       record_groups=rule, dropped=d.dropped,
                                       mtu=mtu, key=key, rice=rice, shift=shift)
    assert frames == rebuilt
    return drops


@pytest.mark.parametrize("point", ["sender", "receiver"])
def test_back_to_back_frames_equal_the_contract(point):
    rng = np.random.default_rng(11)
    clocks, packets = _traffic(rng, intervals=3, per_interval=40, gap_p=0.0)
    frames, counters = _run(point, clocks, depth=256)
    assert counters["dropped"] == 0 and counters["merged"] == 0
    assert _check(frames, packets, point) == 0
    assert counters["frames"] == len(frames)


@pytest.mark.parametrize("shift", [0, 5])
@pytest.mark.parametrize("runtime", [False, True])
def test_coded_sender_frames_equal_the_contract(shift, runtime):
    """Coded sender records (Rice, lossless or lossy): frames cut by size and by gaps
    beyond the unary limit, the parameter adapting per frame, interval ends."""
    rng = np.random.default_rng(12 + shift)
    clocks, packets = _traffic(rng, intervals=3, per_interval=60, gap_p=0.2)
    frames, counters = _run("sender", clocks, depth=256, rice=1, shift=shift,
                            runtime=runtime, tail=4000)
    assert counters["dropped"] == 0 and counters["merged"] == 0
    assert all(f[16] & 0x04 for f in frames) and len({f[49] for f in frames}) > 1
    assert _check(frames, packets, "sender", rice=True, shift=shift) == 0
    assert counters["frames"] == len(frames) > 6


@pytest.mark.parametrize("runtime", [False, True])
def test_coded_receiver_frames_equal_the_contract(runtime):
    """Coded receiver records (each hash, then its arrival difference's Rice code):
    frames cut by size and by gaps beyond the unary limit, the parameter adapting per
    frame, interval ends — equal to the contract's word for word."""
    rng = np.random.default_rng(21)
    clocks, packets = _traffic(rng, intervals=3, per_interval=60, gap_p=0.2)
    frames, counters = _run("receiver", clocks, depth=256, rice=1, runtime=runtime,
                            tail=4000)
    assert counters["dropped"] == 0 and counters["merged"] == 0
    assert all(f[16] & 0x06 == 0x06 for f in frames) and len({f[49] for f in frames}) > 1
    assert _check(frames, packets, "receiver", rice=True) == 0
    assert counters["frames"] == len(frames) > 6


def test_coded_receiver_records_dropped_and_counted():
    """An output that cannot keep up with coded receiver records: the frames of the
    records kept are the contract's, the drops counted in the LAST frames."""
    rng = np.random.default_rng(22)
    clocks, packets = _traffic(rng, intervals=2, per_interval=120, gap_p=0.0)
    frames, counters = _run("receiver", clocks, depth=16, rice=1, p_ready=0.3, tail=8000)
    drops = _check(frames, packets, "receiver", rice=True, lossless=False)
    assert drops == counters["dropped"] > 0


def test_lossy_quanta_sorted_with_the_scan_behind():
    """Lossy coded records, several packets per quantum and quanta shorter than the
    scan of the 16 groups: records sorted per quantum as the contract sorts them, the
    FIFO holding the packets while the scan catches up, none dropped."""
    rng = np.random.default_rng(5)
    clocks, packets = _traffic(rng, intervals=2, per_interval=150, gap_p=0.0, step=3)
    frames, counters = _run("sender", clocks, depth=512, rice=1, shift=4, tail=6000)
    assert counters["dropped"] == 0 and counters["merged"] == 0
    assert _check(frames, packets, "sender", rice=True, shift=4) == 0


@pytest.mark.parametrize("point", ["sender", "receiver"])
def test_point_chosen_at_run_time(point):
    """``point=None``: the ``receiver`` input picks the format (held from reset, so the
    first interval too); the frames are the fixed streamer's, the contract's."""
    rng = np.random.default_rng(12)
    clocks, packets = _traffic(rng, intervals=3, per_interval=40, gap_p=0.1)
    frames, counters = _run(point, clocks, depth=256, runtime=True)
    assert counters["dropped"] == 0 and counters["merged"] == 0
    assert _check(frames, packets, point) == 0


def _edge_traffic(rng, bits, intervals=2):
    """Offsets at the edge of a ``bits``-bit offset field: the first interval's base
    just below a carry of its low bits, the second's just above (the offsets' low bits
    wrap either way), offsets ``2**bits - 1`` (fits) and ``2**bits`` (a new frame)."""
    clocks, packets, seq, field = [], [], 0, 1 << bits
    t = (5 << 40) + field - 3
    for k in range(intervals):
        mine = []
        for ts in (t, t + 1, t + 2, t + 3, t + field - 1, t + field, t + field + 4,
                   t + 2 * field - 1, t + 2 * field + field - 1, t + 4 * field):
            h = int(rng.integers(0, 1 << 63)) * 2 + int(rng.integers(0, 2))
            first = k > 0 and not mine
            clocks.append((1, h, ts, int(first), seq if first else 0))
            mine.append((h, ts))
        packets.append((seq, mine))
        seq += 1
        t += 6 * field + 7
    clocks.append((0, 0, t, 1, seq))
    return clocks, packets


@pytest.mark.parametrize("point", ["sender", "receiver"])
@pytest.mark.parametrize("runtime", [False, True])
def test_offsets_at_the_edge_of_the_field(point, runtime):
    """A record whose offset is ``2**bits - 1`` stays in its frame, one of ``2**bits``
    opens the next, whatever the base's low bits (the fit is decided on the low bits
    and a compare of the high ones)."""
    bits = record_format(CONFIG, point).offset_bits
    clocks, packets = _edge_traffic(np.random.default_rng(14), bits)
    frames, counters = _run(point, clocks, depth=256, runtime=runtime)
    assert counters["dropped"] == 0
    assert _check(frames, packets, point) == 0
    # per interval: frames from t (offsets 0-3, 2**bits - 1), t + 2**bits (0, 4,
    # 2**bits - 1), t + 3 * 2**bits - 1 and t + 4 * 2**bits
    counts = [len(parse_record_frame(f, CONFIG, mtu=200).keys) for f in frames]
    assert counts == [5, 3, 1, 1] * 2


@pytest.mark.parametrize("point", ["sender", "receiver"])
def test_frames_of_two_with_a_backlog(point):
    """Records in pairs a tick apart, each pair a whole offset field after the one
    before, back to back while the output is mostly stalled: every frame holds one pair.
    The framer's head waits with the next records queued behind it, and after a frame's
    first record its fit is computed again against the new base: the pair's second
    record fits, the next pair's first does not."""
    field = 1 << record_format(CONFIG, point).offset_bits
    rng = np.random.default_rng(16)
    mine, t = [], (7 << 40) + 5
    for i in range(40):
        for ts in (t, t + 1):
            mine.append((int(rng.integers(0, 1 << 63)) * 2 + 1, ts))
        t += field
    clocks = [(1, h, ts, 0, 0) for h, ts in mine] + [(0, 0, t, 1, 1)]
    frames, counters = _run(point, clocks, depth=256, p_ready=0.1, tail=20000)
    assert counters["dropped"] == 0
    assert _check(frames, [(0, mine)], point) == 0
    assert [len(parse_record_frame(f, CONFIG, mtu=200).keys) for f in frames] == [2] * 40


def test_point_switched_at_a_boundary():
    """The ``receiver`` input changes in the middle of interval 1: the change applies
    from the next boundary (interval 2), never inside an interval or a frame."""
    clocks, packets = _traffic(np.random.default_rng(13), intervals=3, per_interval=30,
                               gap_p=0.1)
    starts = [i for i, c in enumerate(clocks) if c[3]]
    flip = (starts[0] + starts[1]) // 2
    frames, counters = _run("sender", clocks, depth=256, runtime=True,
                            receivers=[int(i >= flip) for i in range(len(clocks))])
    assert counters["dropped"] == 0
    receiver = [f for f in frames if f[16] & 0x02]
    _check([f for f in frames if not f[16] & 0x02], packets[:2], "sender")
    _check(receiver, packets[2:], "receiver")


def test_nothing_before_the_first_boundary_without_record_from_reset():
    """``record_from_reset=False`` (a core's streamer): the interval running from reset
    sends no frame; the next ones record as ``enable`` says."""
    clocks, packets = _traffic(np.random.default_rng(14), intervals=3, per_interval=20,
                               gap_p=0.1)
    frames, counters = _run("receiver", clocks, depth=256, from_reset=False)
    assert counters["dropped"] == 0
    _check(frames, packets[1:], "receiver")


def test_sampling_by_group_and_an_empty_interval():
    rng = np.random.default_rng(5)
    clocks, packets = _traffic(rng, intervals=2, per_interval=30, gap_p=0.3)
    clocks.append((0, 0, 0, 1, 20))               # interval 6 holds no packet
    packets.append((6, []))
    frames, _ = _run("receiver", clocks, record_groups=5)
    # the rule is latched at each boundary: the first interval (from reset) records all
    _check(frames, packets, "receiver", record_groups=[0, 5, 5])
    empty = parse_record_frame(frames[-1], CONFIG, mtu=200)
    assert empty.last and len(empty.keys) == 0 and len(frames[-1]) == 60


@pytest.mark.parametrize("point", ["sender", "receiver"])
def test_a_rule_that_changes_every_clock_is_the_one_of_the_boundarys_clock(point):
    """The rule is latched in the boundary's clock: a value that changes every clock
    (0 and values past the groups meaning every group) rules the packets of the interval
    the boundary starts, the boundary's own packet included, and no other."""
    rng = np.random.default_rng(21)
    clocks, packets = _traffic(rng, intervals=5, per_interval=30, gap_p=0.2)
    values = rng.choice([0, 1, 3, 5, 8, 12, 15, 16, 40], size=len(clocks)).tolist()
    frames, counters = _run(point, clocks, record_groups=values, depth=256)
    rules = [0] + [v for (_, _, _, b, _), v in zip(clocks, values) if b][:len(packets) - 1]
    assert len(set(rules)) > 2
    assert counters["dropped"] == 0
    _check(frames, packets, point, record_groups=[r if r < CONFIG.groups else 0
                                                  for r in rules])


def test_overflow_drops_counted_never_silent():
    rng = np.random.default_rng(8)
    clocks, packets = _traffic(rng, intervals=2, per_interval=150, gap_p=0.0)
    frames, counters = _run("receiver", clocks, p_ready=0.3, depth=8, tail=6000)
    drops = _check(frames, packets, "receiver", lossless=False)
    assert drops > 0 and counters["dropped"] == drops


def test_the_room_check_refutes_a_late_room():
    """The check every run makes of the registered room fails on a room a clock late."""
    clocks, _ = _traffic(np.random.default_rng(8), intervals=1, per_interval=150, gap_p=0.0)
    with pytest.raises(AssertionError, match="room is not the FIFO's"):
        _run("receiver", clocks, p_ready=0.3, depth=8, tail=50, streamer=RoomALateChecked)


def test_authenticated_mode_tags_under_the_key():
    key = bytes(range(16))
    clocks, packets = _traffic(np.random.default_rng(2), intervals=1, per_interval=20,
                               gap_p=0.5)
    frames, _ = _run("sender", clocks, key=key)
    _check(frames, packets, "sender", key=key)


def test_stalled_output_ends_wait_and_merge():
    """The output stalls while three intervals end: a long first interval fills the
    output's and the framer's buffers and the FIFO (8 entries), which keeps a few records
    and the first end; the second end waits, the third merges into it (the interval
    between has no stream, counted in ``merged``); nothing is lost silently."""
    rng = np.random.default_rng(9)
    clocks, packets = _traffic(rng, intervals=3, per_interval=60, gap_p=0.0)
    # the intervals after the first: their first three packets only
    kept_clocks, interval, n = [], 0, 0
    for c in clocks:
        interval, n = (interval + 1, 0) if c[3] else (interval, n)
        n += c[0]
        if not (c[0] and interval > 0 and n > 3):
            kept_clocks.append(c)
    clocks = kept_clocks
    packets = [packets[0]] + [(seq, mine[:3]) for seq, mine in packets[1:]]
    dut_run = {}

    def stall_then_drain(point):
        dut = RoomChecked(config=CONFIG, point=point, data_width=W, mtu=200, depth=8)
        out = Sink(dut.source, W, np.random.default_rng(3), p_ready=0.0)

        async def main(ctx):
            ctx.set(dut.src_mac, SRC)
            ctx.set(dut.dst_mac, DST)
            ctx.set(dut.config_id, CONFIG.config_id)
            ctx.set(dut.enable, 1)
            for valid, h, ts, boundary, nseq in clocks:
                for name, v in (("valid", valid), ("packet_hash", h), ("timestamp", ts),
                                ("boundary", boundary), ("next_seq", nseq)):
                    ctx.set(getattr(dut, name), v)
                await ctx.tick()
            ctx.set(dut.valid, 0)
            ctx.set(dut.boundary, 0)
            out.p_ready = 1.0
            for _ in range(1500):
                await ctx.tick()
            dut_run.update(merged=ctx.get(dut.merged), dropped=ctx.get(dut.dropped))

        simulate(dut, main, out.run)
        return out.frames()

    frames = stall_then_drain("receiver")
    assert dut_run["merged"] == 1
    done = _by_interval(frames, "receiver", 200)
    (s0, first), (s1, second) = packets[0], packets[1]
    assert [d.seq for d in done] == [s0, s1]
    kept = [len(d.keys) for d in done]
    assert 0 < kept[0] < len(first) and done[0].dropped == len(first) - kept[0]
    assert kept[1] < len(second) and done[1].dropped == len(second) - kept[1]
    assert dut_run["dropped"] == 66 - sum(kept)      # interval 2's in the total only
    _check(frames, packets[:2], "receiver", lossless=False)


def test_enable_is_per_interval():
    """``enable`` low at the boundary that starts interval 3: it sends nothing (not even a
    last frame); raised again, interval 6 records, numbered right."""
    clocks, packets = _traffic(np.random.default_rng(6), intervals=3, per_interval=25,
                               gap_p=0.2)
    starts = [i for i, c in enumerate(clocks) if c[3]]          # the boundaries' clocks
    enables = [0 if starts[0] <= i < starts[1] else 1 for i in range(len(clocks))]
    frames, counters = _run("sender", clocks, enables=enables)
    assert counters["dropped"] == 0
    _check(frames, [packets[0], packets[2]], "sender")


def test_an_mtu_below_one_record_is_refused():
    """The streamer takes its frame size from ``records_per_frame``: below one record it
    refuses (a core's streamer builds both points' frames, so below 54)."""
    with pytest.raises(ValueError, match="cannot carry one 12-byte receiver record"):
        OpaRecordStreamer(config=OpaConfig(), point=None, data_width=8, mtu=53)
    assert OpaRecordStreamer(config=OpaConfig(), point=None, data_width=8,
                             mtu=54).per_frames == {"sender": 3, "receiver": 1}


@pytest.fixture(scope="module")
def streamer_netlist(tmp_path_factory):
    """The ``synth_ecp5`` netlist of a streamer with both points, as in the core
    (synthesised once for the tests that read it)."""
    from tests.hw.ecp5_netlist import synthesized

    return synthesized(OpaRecordStreamer(config=OpaConfig(), point=None, data_width=64,
                                         depth=512),
                       tmp_path_factory.mktemp("streamer"))


def test_coder_statistics_and_parameter_from_registers(streamer_netlist):
    """After ``synth_ecp5`` (both points, as in the core): the Rice parameter loads from
    registered comparisons, not through them from the statistics (8–9 LUT levels, the
    OPA core's datapath critical path on ECP5), and the statistics load on registered
    flags, not on the framer's decision from the head's select; the parameter's size tests
    are a few logic levels from registers; the code's tail is a shift of registers."""
    from tests.hw.ecp5_netlist import fan_in_registers, logic_levels, registers_of

    module = streamer_netlist
    k, total, n = (registers_of(module, name)
                   for name in ("coder_k", "coder_total", "coder_n"))
    first = registers_of(module, "head_first")
    assert k and total and n and first
    assert not fan_in_registers(module, k) & (total | n)
    assert not fan_in_registers(module, total | n) & first
    # the size tests of the statistics in 5-bit pieces: from registers, a few levels
    # (total's bit length as a priority chain was 10, the core's path on one seed)
    above = registers_of(module, "coder_above")
    assert above and logic_levels(module, above) <= 4
    # the code's unary part as one compare per bit, then the shift by ``k + 1`` from a
    # register: no carry chain (``(1 << u) - 1`` and ``k + 1``) in front of the shift
    # (14 levels, the coder's deepest)
    tail = registers_of(module, "tail")
    assert tail and logic_levels(module, tail) <= 8
    assert not fan_in_registers(module, tail, through="CCU2C")


def test_head_facts_chosen_after_their_arithmetic(streamer_netlist):
    """After ``synth_ecp5`` (both points, as in the core): the head registers' facts
    (``ts - base`` and its comparisons, carry chains) are formed from the entries and the
    choice of entry made after them, so the ring's load select (``head_free``,
    ``head_room``) reaches no fact register through a carry chain (it did, the OPA core's
    datapath critical path on one placement)."""
    from tests.hw.ecp5_netlist import fan_in_registers, registers_of

    module = streamer_netlist
    facts = set().union(*(registers_of(module, f"head_ring{i}_offset") for i in range(2)))
    select = registers_of(module, "head_free") | registers_of(module, "head_room")
    assert facts and select
    assert select & fan_in_registers(module, facts)
    assert not select & fan_in_registers(module, facts, through="CCU2C")


def test_frame_sender_counts_items_from_registers(streamer_netlist):
    """After ``synth_ecp5``: the frame sender's piece and item counters load from
    ``is_last`` and registered item counts, not through ``n_items - 1`` and its compare
    from the frame's held count and words (two carry chains into the counters' enables,
    the OPA core's datapath critical path on one seed)."""
    from tests.hw.ecp5_netlist import fan_in_registers, registers_of

    module = streamer_netlist
    counters = registers_of(module, "piece") | registers_of(module, "index")
    held = registers_of(module, "h_count") | registers_of(module, "h_words")
    is_last = registers_of(module, "send_is_last")
    assert counters and held and is_last
    assert is_last <= fan_in_registers(module, counters)
    assert not fan_in_registers(module, counters) & held
