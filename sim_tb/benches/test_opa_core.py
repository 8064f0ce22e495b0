# SPDX-License-Identifier: BSD-2-Clause
"""cocotb tests of the exported OPA core (``hw.lda_pipeline`` of an ``OpaConfig``: the
frame path into :class:`hw.opa.opa_path.OpaPath`), one parameter set per run, and their
pytest entry.

This file is both the cocotb test module and the pytest module: the ``test_opa_core``
function at the bottom exports the core for each of :data:`sim_tb.lib.runner.OPA_PARAMS`,
passes it in ``LDA_SIM_PARAMS`` and runs the cocotb tests above on it. The harness is
:mod:`sim_tb.lib.core_harness`'s, with the OPA golden model: the counted frames' packet
hashes (:func:`host_sw.model.golden_lda_rda_lds.hash_frames`) in input order through
:func:`host_sw.model.golden_opa.opa_synopsis`.

* manual intervals: frames (random sizes, bad frames, back-to-back minimum-size frames
  of one group) in two intervals ended by ``CONTROL.swap``; each frozen copy read over the
  bus by the host driver equals the golden words word for word, FROZEN_CHECK is the
  contract's check value of them, FROZEN_UPDATES and FROZEN_PACKETS the counted frames;
* ``ldactl info`` and ``ldactl read`` (in-process, on a
  :class:`sim_tb.lib.socket_bridge.SocketBridge` URL as a board's host would use) discover the
  OPA core and read its frozen interval: the snapshot file's words equal the golden words;
* timer intervals: INTERVAL_MODE time with the host export and auto release: the
  interval timer ends intervals under back-to-back traffic, each frozen copy leaves as
  synopsis chunk frames on ``m_axis_export``; reassembled, the intervals are contiguous
  runs of the frames, each equal to the golden words of its run, numbered one after
  another.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiStreamBus, AxiStreamSink

from host_sw.contracts.frames.control_frame import parse_control_frame, reassemble
from host_sw.contracts.synopsis import Synopsis
from host_sw.device.snapshot import Snapshot
from host_sw.model.golden_lda_rda_lds import hash_frames
from host_sw.model.golden_opa import opa_synopsis

from sim_tb.lib.core_harness import TIMEOUT_MS, CoreHarness, ldactl_while_simulating
from sim_tb.lib.frames import OfferedFrame, bad_frames, min_size_burst, random_frames
from sim_tb.lib.runner import OPA_PARAMS, run_core_tests
from sim_tb.lib.scoreboard import counted_mask, synopsis_difference
from sim_tb.lib.socket_bridge import SocketBridge
from sim_tb.lib.tb import random_pause


class OpaHarness(CoreHarness):
    """:class:`sim_tb.lib.core_harness.CoreHarness` with the OPA golden model (no timestamps:
    the OPA words hold none)."""

    def golden(self, frames, sofs=None) -> Synopsis:
        if not frames:
            return Synopsis.empty(self.config)
        hashes = hash_frames(self.config, [f.data for f in frames],
                             [f.error for f in frames], self.hashers)
        return opa_synopsis(self.config, hashes.packet[hashes.counted])

    def group_of(self, frame: OfferedFrame) -> int:
        bits = self.config.groups.bit_length() - 1
        return int(hash_frames(self.config, [frame.data], hashers=self.hashers).packet[0]) \
            >> (64 - bits) if bits else 0

    def one_group_frames(self, count: int, group: int = 1) -> list[OfferedFrame]:
        """``count`` minimum-size IPv4 frames of one group: back to back at 512 bits
        (one beat each) they update one group's word on consecutive clocks, each reading
        the word the one before is still writing (the words' forwarding paths)."""
        out = []
        while len(out) < count:
            out += [f for f in min_size_burst(self.rng, 4 * self.config.groups)
                    if self.group_of(f) == group]
        return out[:count]


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def manual_intervals(dut):
    """Two intervals ended by CONTROL.swap: words, check value, updates and packets."""
    tb = OpaHarness(dut)
    await tb.start(calibrate=False)
    first = (random_frames(tb.rng, 12, max_size=600) + tb.one_group_frames(6)
             + bad_frames(tb.rng) + min_size_burst(tb.rng, 8))
    second = tb.one_group_frames(5, group=2) + random_frames(tb.rng, 6, max_size=300)
    for k, frames in enumerate((first, second)):
        sofs = await tb.offer(frames)
        snapshot = await tb.end_interval()
        got = await tb.check_frozen(frames, sofs, f"interval {k}", snapshot)
        counted = int(counted_mask(frames).sum())
        assert snapshot.integrity_problem is None, snapshot.integrity_problem
        assert int(got.count.sum()) == counted
        assert snapshot.packets == counted, (snapshot.packets, counted)
        assert await tb.host(tb.device.read, "frozen_updates") == counted
        await tb.release_and_wait()


async def _serve(tb, bridge: SocketBridge):
    """Play the host's commands from the socket into the core's bus, forever."""
    while True:
        command = bridge.pop_command()
        if command is None:
            await ClockCycles(tb.dut.clk, 8)
            continue
        bridge.send(await tb.bus_port.transact(command.data, command.reply_bytes,
                                               timeout_cycles=20_000))


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def ldactl_reads_opa_core(dut):
    """``ldactl info`` and ``ldactl read`` against the OPA core over TCP."""
    tb = OpaHarness(dut)
    await tb.start(calibrate=False)
    frames = tb.one_group_frames(3) + min_size_burst(tb.rng, 20)
    await tb.offer(frames)
    await tb.settle()
    with SocketBridge(name="opa") as bridge:
        server = cocotb.start_soon(_serve(tb, bridge))
        url = bridge.url + "?timeout=60"
        rc, text = await ldactl_while_simulating(tb.dut.clk, ["info", "--device", url])
        assert rc == 0 and "OPA" in text, text
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "snap.json"
            # --json: the text table of `read` assumes a ts_sum field (LDA/RDA/LDS)
            rc, text = await ldactl_while_simulating(tb.dut.clk, ["read", "--device", url, "--swap", "--json",
                                          "-o", str(path)])
            assert rc == 0, text
            snap = Snapshot.from_json(json.loads(path.read_text()))
        server.cancel()
    assert snap.synopsis.config == tb.config
    diff = synopsis_difference(tb.golden(frames), snap.synopsis)
    assert not diff, f"ldactl read's snapshot differs from the golden model:\n{diff}"
    assert snap.integrity_problem is None and snap.packets == len(frames)


def _exported_intervals(tb, frames) -> list:
    """The export frames received so far, reassembled per interval, in the order they
    left (an interval's chunks leave one after another; sequence numbers are not unique
    here: the first timer boundary renumbers the intervals from INTERVAL_START)."""
    runs: list[list] = []
    for frame in frames:
        chunk = parse_control_frame(frame, expected=tb.config)
        if chunk.chunk_index == 0:
            runs.append([])
        runs[-1].append(chunk)
    return [reassemble(chunks, tb.config) for chunks in runs
            if len(chunks) == chunks[0].chunk_count]


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def timer_intervals_exported(dut):
    """Time mode, host export, auto release: contiguous exported intervals equal the
    golden words of their runs of frames."""
    tb = OpaHarness(dut)
    await tb.start(calibrate=False)
    export = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_export"), dut.clk, dut.rst)
    # about three intervals of the traffic; at one beat per frame the traffic is paced
    # (an interval must outlast the freeze, the export and the clearing)
    single_beat = tb.bytes_per_beat >= 60
    # On two clocks the exporter runs on the control clock (10 ns against the datapath's
    # 6.4 ns, behind its crossing): the export takes about twice the datapath clocks, and
    # so do the intervals and the traffic that makes three of them.
    scale = 2 if tb.two_clocks else 1
    ticks = scale * (400 if single_beat else 1500)
    if single_beat:
        tb.set_idle_generator(random_pause(cocotb.RANDOM_SEED + 3, 0.7))
    now = await tb.host(tb.device.read, "timebase")
    await tb.host(tb.device.set_intervals, mode="time", ticks=ticks, start=now + ticks,
                  export_host=True, auto_release=True)
    frames = []
    for _ in range(6 * scale):
        frames += min_size_burst(tb.rng, 60) + tb.one_group_frames(4, group=3)
    sofs = await tb.offer(frames)
    counted = counted_mask(frames)
    received, intervals = [], []
    for _ in range(40):                  # until the last frame's interval is exported
        await tb.cycles(ticks // 2)
        while not export.empty():
            received.append(bytes((await export.recv()).tdata))
        intervals = _exported_intervals(tb, received)
        if sum(int(r.synopsis.count.sum()) for r in intervals) == counted.sum():
            break
    seqs = [r.seq for r in intervals]
    assert len(seqs) >= 3, f"only {len(seqs)} intervals exported"
    # the first interval keeps the number it began with; the timer's count from 0
    assert seqs[1:] == list(range(seqs[1], seqs[1] + len(seqs) - 1)), f"numbers {seqs}"
    start = 0
    for k, got in enumerate(intervals):
        seq = f"{k} (seq {got.seq})"
        n = int(got.synopsis.count.sum())
        end = start + int(np.searchsorted(np.cumsum(counted[start:]), n, side="left")) + 1 \
            if n else start
        expected = tb.golden(frames[start:end], sofs[start:end])
        diff = synopsis_difference(expected, got.synopsis)
        assert not diff, f"interval {seq} (frames {start}..{end - 1}) differs:\n{diff}"
        assert got.valid, f"interval {seq} flags {got.flags!r}"
        start = end
    assert start == len(frames) or not counted[start:].any()


# pytest: export the OPA core and run the cocotb tests above on it

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("params", OPA_PARAMS, ids=lambda p: p.param_id)
def test_opa_core(params):
    results = run_core_tests(params, __name__)
    assert set(results.tests) >= {"manual_intervals", "timer_intervals_exported",
                                 "ldactl_reads_opa_core"}, \
        sorted(results.tests)
