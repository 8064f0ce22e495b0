# SPDX-License-Identifier: BSD-2-Clause
"""cocotb test of two exported RLI cores (``hw.lda_pipeline`` of kind ``rli``): a sender
that inserts reference frames into its output, a channel that delays each frame by a
varying amount (a queue: the delay wanders, the order is kept), and a receiver whose
per-flow counters, read over its bus after the interval, equal the golden model's
(:func:`host_sw.model.golden_rli.receiver_synopsis`) word for word, with its RLI status registers.

This file is both the cocotb test module and the pytest module:
``test_rli_sender_to_receiver`` at the bottom exports the RLI core
(:data:`sim_tb.lib.runner.RLI_PARAMS`) and runs the cocotb test above on it twice in the
two-core top of :func:`sim_tb.demo.two_device.write_wrapper` (ports ``snd_*`` /
``rcv_*``); the channel is :class:`sim_tb.demo.two_device_wire.Wire`. One reference on the
wire has its tag altered: the receiver must not use it and must count it in
RLI_REFERENCES_BAD_TAG.

Ticks: both cores count the same clock from the same reset, so one constant maps a clock
of the harness to a tick of either. The sender stamps a reference with the tick its first
beat leaves its merger when nothing delays it (``hw.rli.reference_source``), so the constant
is the largest ``stamp − SOF cycle at snd_m_axis`` over the references; the receiver's
tap stamps a frame with the tick its SOF was accepted, one clock before its SOF leaves
``rcv_m_axis`` (the receiver inserts nothing).

Where it sits (``docs/DESIGN.md``, "Testing"): the second test level for the RLI kind,
whose core (``hw/rli/rli_path.py``) needs frames from a sender core.
"""

from __future__ import annotations

import os
import shutil

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ClockCycles

from host_sw.contracts.check_value import check_value
from host_sw.contracts.frames.reference_frame import TYPE_REFERENCE, parse_reference
from host_sw.model.golden_lda_rda_lds import Hashers, hash_frames
from host_sw.model.golden_rli import receiver_synopsis
from host_sw.model.traffic import synthetic_trace
from hw.hash_h3 import COMPACT_HASH_FAN_IN

from sim_tb.demo.cocotb_two_device import SimulatedCore, start_pair
from sim_tb.lib.core_harness import golden_header, golden_identity
from sim_tb.demo.two_device import run_pair_bench
from sim_tb.demo.two_device_wire import Wire, is_control, wandering_delays
from sim_tb.lib.runner import RLI_PARAMS, CoreParams
from sim_tb.lib.tb import start_clocks
from sim_tb.lib.verilator_build import verilator_env

SENDER_MAC = 0x02_00_00_00_00_01
RECEIVER_MAC = 0x02_00_00_00_00_02
#: One reference after every EVERY-th data frame.
EVERY = 8
FRAMES = 240
#: The reference (in send order) whose tag the channel alters.
TAMPERED = 5


class _RliWire(Wire):
    """The channel, keeping the sender's control frames with their SOF cycles and
    altering one reference's tag on the way."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sent_refs: list[tuple[bytes, int]] = []
        self.tampered: bytes | None = None

    def _sender_output(self, frame: bytes, sof: int):
        if is_control(frame) and frame[15] == TYPE_REFERENCE:
            self.sent_refs.append((frame, sof))
            if len(self.sent_refs) == TAMPERED + 1:
                frame = frame[:48] + bytes([frame[48] ^ 0x01]) + frame[49:]
                self.tampered = frame
        super()._sender_output(frame, sof)


def _golden(config, wire: _RliWire, frames, refs_in):
    """The receiver's events in arrival order → the golden synopsis and statistics."""
    ticks = max(parse_reference(f).timestamp - sof for f, sof in wire.sent_refs)
    events = [(int(wire.rcv_sof[i]), i, False, 0) for i in range(len(frames))]
    events += [(sof, -1, True, parse_reference(f).timestamp)
               for f, sof in refs_in if f != wire.tampered]
    events.sort()
    flow = hash_frames(config, frames, hashers=Hashers(config)).flow
    n = len(events)
    hashes = np.zeros((2, n), np.uint64)
    arrival = np.array([sof - 1 + ticks for sof, _, _, _ in events], np.int64)
    is_ref = np.array([r for _, _, r, _ in events], bool)
    send = np.array([s for _, _, _, s in events], np.int64)
    for k, (_, i, r, _) in enumerate(events):
        if not r:
            hashes[:, k] = flow[:, i]
    return receiver_synopsis(config, hashes, arrival, is_ref, send, ~is_ref)


@cocotb.test()
async def references_through_a_queue(dut):
    params = CoreParams.from_env()
    config = params.config()
    start_clocks(dut, 10)           # and ctrl_clk, on a two-clock core
    snd, rcv = SimulatedCore(dut, "snd", "sender"), SimulatedCore(dut, "rcv", "receiver")
    rng = np.random.default_rng(cocotb.RANDOM_SEED)
    frames = synthetic_trace(packets=FRAMES, flows=12, frame_bytes="imix",
                             window_bytes=config.window_bytes,
                             seed=int(rng.integers(1 << 30))).frames()
    gaps = np.rint(rng.exponential(30.0, FRAMES)).astype(np.int64)
    delays = wandering_delays(rng, FRAMES, start=300, step=40.0, low=20, high=1500)
    wire = _RliWire(dut, params.data_width, frames, gaps, np.zeros(FRAMES, bool), delays,
                    control_delay=lambda r: int(delays[min(wire.exited, FRAMES - 1)])
                    + int(r.integers(0, 20)), rng=rng)
    refs_in: list[tuple[bytes, int]] = []
    wire.on_receiver_control = lambda frame, sof: refs_in.append((frame, sof))
    wire.watch_outputs = True
    await start_pair(dut, config, (snd, rcv))
    await snd.call(snd.device.set_intervals, local_mac=SENDER_MAC)
    await snd.call(snd.device.write, "rli_reference_rate", every_packets=EVERY,
                   period_ticks=0)
    await rcv.call(rcv.device.set_intervals, local_mac=RECEIVER_MAC,
                   marker_src_mac=SENDER_MAC)
    await rcv.call(rcv.device.write, "role", role=2)      # receiver (FROZEN_ROLE)
    await rcv.call(rcv.device.write, "rli_reference_rate", every_packets=0, period_ticks=0)
    cocotb.start_soon(wire.run())
    wire.release_upto = FRAMES
    await wire.wait_idle()
    await ClockCycles(dut.clk, 400)        # a last reference, the receiver's tap
    await wire.wait_idle()
    await ClockCycles(dut.clk, 200)
    await rcv.call(rcv.device.swap)
    await rcv.wait_status(dut.clk, "frozen_ready", 1)
    words = await rcv.call(rcv.device.read_counter_words)
    got = {name: await rcv.call(rcv.device.read, name) for name in (
        "rli_frozen_references", "rli_frozen_overflowed", "rli_frozen_unreferenced",
        "rli_frozen_refused", "rli_references_bad_tag", "frozen_packets")}
    header = await rcv.call(rcv.device.read_record_header)
    check = await rcv.call(rcv.device.read, "frozen_check")
    sent = await snd.call(snd.device.read, "rli_references_sent")
    # the sender's own references pass its tap, from its LOCAL_MAC, not MARKER_SRC_MAC
    own_refused = await snd.call(snd.device.read, "rli_references_bad_tag")
    golden, stats = _golden(config, wire, frames, refs_in)

    assert wire.mismatches == 0, "a data frame was altered on its way"
    assert wire.tampered is not None and sent == len(wire.sent_refs) == len(refs_in), (
        f"sender: {sent} references counted, {len(wire.sent_refs)} seen, "
        f"{len(refs_in)} arrived")
    assert own_refused == sent, f"sender: {own_refused} of its {sent} references refused"
    want = [int(w) for w in golden.words()]
    bad = [c for c, (a, b) in enumerate(zip(words, want)) if a != b]
    assert not bad and len(words) == len(want), (
        f"cells {bad} differ: got {[hex(words[c]) for c in bad]}, golden "
        f"{[hex(want[c]) for c in bad]} (stats {stats})")
    assert np.any(golden.fields["delay_sum"] != 0) and stats.references >= 10
    assert got == {"rli_frozen_references": stats.references,
                   "rli_frozen_overflowed": stats.overflowed,
                   "rli_frozen_unreferenced": stats.unreferenced,
                   "rli_frozen_refused": 0, "rli_references_bad_tag": 1,
                   "frozen_packets": stats.counted}, (got, stats)
    # FROZEN_CHECK: the contract's value over the golden words and header (SPEC §4.4)
    identity = await rcv.call(golden_identity, rcv.device)
    assert identity == {"role": 2, "src_mac": RECEIVER_MAC}
    want_header = golden_header(header, config.config_id, stats.counted, **identity,
                                rli={"references": stats.references,
                                     "overflowed": stats.overflowed,
                                     "unreferenced": stats.unreferenced, "refused": 0})
    assert header == want_header, (header, want_header)
    assert check == check_value(config, want, want_header), f"FROZEN_CHECK {check:#010x}"


# pytest: export the RLI core, put it twice in the two-core top, run the cocotb test above

pytestmark = [
    pytest.mark.cocotb,
    pytest.mark.skipif(shutil.which("iverilog") is None and verilator_env() is None,
                       reason="no HDL simulator (Icarus Verilog or Verilator)"),
]


@pytest.mark.parametrize("params", RLI_PARAMS, ids=lambda p: p.param_id)
def test_rli_sender_to_receiver(params):
    results = run_pair_bench(params, __name__, "rli_pair")
    assert "references_through_a_queue" in results.tests, sorted(results.tests)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("LDA_SLOW"), reason="minutes; LDA_SLOW=1")
def test_rli_sender_to_receiver_ecp5():
    """The same on the core the Versa board builds: the ECP5 primitives
    (``memory="ecp5"``: the receiver's products in MULT18X18D blocks with their own
    registers, ``sim_tb/models/mult18x18d.v``, its counters in DP16KD blocks) and the
    compact hasher (:data:`hw.hash_h3.COMPACT_HASH_FAN_IN`), word for word."""
    params = CoreParams(kind="rli", data_width=64, size=16, control_domain="ctrl",
                        memory="ecp5", hash_fan_in=COMPACT_HASH_FAN_IN)
    results = run_pair_bench(params, __name__, "rli_pair_ecp5")
    assert "references_through_a_queue" in results.tests, sorted(results.tests)
