# SPDX-License-Identifier: BSD-2-Clause
"""The receiver's marker check (:class:`hw.inband.marker_watch.MarkerWatch`) on streams of
markers (tags right or wrong) and data frames, back to back or with gaps: every marker
has one outcome at its clock — checked (``accepted`` with its own fields, or
``bad_tag``) or ``rejected`` while the engine checks the one before — whatever the frames
that follow it while its tag is checked; and no LUT of its netlist drives the ~830
registers that follow the capture until a check starts."""

import random

import pytest
from amaranth.sim import Simulator

from host_sw.contracts.config import LdaConfig
from host_sw.contracts.frames.control_frame import build_marker
from host_sw.contracts.siphash import key_to_int
from hw.frames.frame import frame_to_beats
from hw.inband.marker_watch import MarkerWatch
from tests.hw.ecp5_netlist import drivers, loads, synthesized

SRC_MAC = 0x020000000001
DST_MAC = 0x020000000002
KEY = bytes(range(16))
CONFIG = LdaConfig(banks=2, rows=8, thresholds=(0, 2))
#: Clocks from a marker's EOF transfer to ``rejected`` (the header's decision).
REJECT_LATENCY = 3


def _stream(rng, count):
    """``(frame, gap_before, marker)`` with ``marker`` ``(seq, timestamp, flags,
    tag_ok)`` or ``None`` for a data frame. Gaps of 0 (back to back) are common, and
    a marker often follows the one before about when its check ends."""
    out = []
    for k in range(count):
        gap = rng.choice((0, 0, 0, 1, 3, rng.randint(0, 60)))
        if rng.random() < 0.5:
            seq, ts, flags = rng.getrandbits(32), rng.getrandbits(64), rng.getrandbits(8)
            frame = bytearray(build_marker(CONFIG, seq=seq, timestamp=ts,
                                           src_mac=SRC_MAC.to_bytes(6, "big"),
                                           dst_mac=DST_MAC.to_bytes(6, "big"),
                                           flags=flags, key=KEY))
            tag_ok = rng.random() < 0.8
            if not tag_ok:
                frame[48 + rng.randrange(8)] ^= 1 << rng.randrange(8)
            out.append((bytes(frame), gap, (seq, ts, flags, tag_ok)))
        else:
            out.append((rng.randbytes(rng.randint(60, 200)), gap, None))
    return out


def _run(stream):
    """Per marker (in order) its EOF clock; and the outcomes ``(clock, what, fields)``."""
    dut = MarkerWatch(data_width=64)
    eofs, events = [], []
    total = sum(gap + len(frame_to_beats(f, 64)) for f, gap, _ in stream) + 200

    async def bench(ctx):
        ctx.set(dut.config_id, CONFIG.config_id)
        ctx.set(dut.marker_src_mac, SRC_MAC)
        ctx.set(dut.key, key_to_int(KEY))
        ctx.set(dut.auth, 1)
        ctx.set(dut.watch.ready, 1)
        beats = []
        for frame, gap, marker in stream:
            beats += [None] * gap
            frame_beats = frame_to_beats(frame, 64)
            beats += [(b, marker is not None and n == len(frame_beats) - 1)
                      for n, b in enumerate(frame_beats)]
        beats += [None] * 200
        for clock in range(total):
            beat = beats[clock] if clock < len(beats) else None
            ctx.set(dut.watch.valid, beat is not None)
            if beat is not None:
                payload, marker_eof = beat
                for name, value in payload.items():
                    ctx.set(getattr(dut.watch.payload, name), value)
                if marker_eof:
                    eofs.append(clock)
            for what in ("accepted", "bad_tag", "rejected"):
                if ctx.get(getattr(dut, what)):
                    fields = (ctx.get(dut.seq), ctx.get(dut.timestamp), ctx.get(dut.flags))
                    events.append((clock, what, fields if what == "accepted" else None))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return eofs, events


@pytest.mark.parametrize("seed", range(4))
def test_every_marker_has_one_outcome_with_its_own_fields(seed):
    stream = _stream(random.Random(seed), 60)
    markers = [marker for _, _, marker in stream if marker is not None]
    eofs, events = _run(stream)
    assert len(eofs) == len(markers)
    by_clock = {}          # (clock, rejected or checked): outcomes
    for clock, what, fields in events:
        by_clock.setdefault((clock, what == "rejected"), []).append((what, fields))
    checked_eof = None        # the EOF of the marker whose tag was checked last
    outcomes = {"accepted": 0, "bad_tag": 0, "rejected": 0}
    for (seq, ts, flags, tag_ok), eof in zip(markers, eofs):
        rejected = by_clock.pop((eof + REJECT_LATENCY, True), [])
        checked = by_clock.pop((eof + MarkerWatch.VERIFY_LATENCY, False), [])
        assert len(rejected) + len(checked) == 1, (eof, rejected, checked)
        if rejected:
            assert rejected == [("rejected", None)]
            # only while the engine checks the marker before
            assert checked_eof is not None and eof - checked_eof < MarkerWatch.VERIFY_LATENCY
            outcomes["rejected"] += 1
            continue
        checked_eof = eof
        if tag_ok:
            assert checked == [("accepted", (seq, ts, flags))]
        else:
            assert checked == [("bad_tag", None)]
        outcomes[checked[0][0]] += 1
    assert by_clock == {}, "outcomes of no marker"
    # the streams reach every outcome
    assert all(outcomes.values()), outcomes


def test_no_lut_drives_the_whole_capture_copy(tmp_path):
    """After ``synth_ecp5`` no LUT output drives more than 130 cell inputs: the header's
    words and ``held`` (some 830 flip-flops) pause on copies of a register. As a LUT of
    ``checking`` and ``decided`` the pause reached 525 inputs, one net (4.9 ns on an LDA
    core's placement)."""
    module = synthesized(MarkerWatch(data_width=64), tmp_path)
    driven_by = drivers(module)
    widest = max(n for bit, n in loads(module).items()
                 if driven_by.get(bit, ("", ""))[0] == "LUT4")
    assert widest <= 130
