# SPDX-License-Identifier: BSD-2-Clause
"""The cocotb harness of the exported core (``hw.lda_pipeline``): the bench, the host
driver on its bus, and the golden model.

Where it sits (``docs/SIMULATION.md``; ``docs/DESIGN.md``, "One host driver"): on top of
:class:`sim_tb.lib.tb.CoreTB` (clock, reset, AXI4-Stream source/sink/monitor), the harness
reaches the core's bus as a board's host does — :class:`host_sw.device.driver.Device` on
a simulation transport (:mod:`sim_tb.lib.uartbone_driver`) — and compares what the device
reads with :mod:`host_sw.model.golden_lda_rda_lds`. The tests of every kind's core use it:
:mod:`sim_tb.benches.test_core` (LDA, RDA, LDS, RLI) and :mod:`sim_tb.benches.test_opa_core` (OPA,
with its own golden model). ``LDA_SIM_LONG=1`` multiplies the frame counts
(:func:`sized`).
"""

from __future__ import annotations

import contextlib
import io
import threading

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles

from host_sw.cli import main as ldactl
from host_sw.model.golden_lda_rda_lds import Hashers, bucket_indices, hash_frames
from host_sw.contracts.check_value import RecordHeader, check_value, plausibility_problem
from host_sw.contracts.frames.frame_format import ROLE_SETTINGS, effective_role
from host_sw.contracts.synopsis import Synopsis
from host_sw.device.driver import Device
from host_sw.device.snapshot import Snapshot

from hw.lda_pipeline import MeasurementCore
from sim_tb.lib.frames import min_size_burst
from sim_tb.lib.runner import CoreParams, long_run
from sim_tb.lib.scoreboard import (counted_mask, expected_status, expected_synopsis,
                                   synopsis_difference)
from sim_tb.lib.tb import CoreTB
from sim_tb.lib.uartbone_driver import run_host, simulation_transport

__all__ = ["ldactl_while_simulating", "SWAP_SETTLE", "LONG", "SCALE", "TIMEOUT_MS", "sized", "frozen_info",
           "golden_header", "golden_identity", "HARNESS_MAC",
           "read_frozen_info", "CoreHarness"]

#: Cycles between the last frame out and a host swap (see ``settle``).
SWAP_SETTLE = MeasurementCore.TAP_WATCH_DELAY + 2

#: LOCAL_MAC of the core under test (its FROZEN_SRC_MAC and export frames' source).
HARNESS_MAC = 0x02_00_5E_10_20_31

LONG = long_run()
SCALE = 10 if LONG else 1
TIMEOUT_MS = 2000 if LONG else 200


def sized(tb, wide: int, narrow: int, single_beat: int | None = None) -> int:
    """A frame count for the data width: ``single_beat`` where a minimum-size frame is
    one beat (512 bits and more; default ``wide``), ``wide`` at 64 bits and more,
    ``narrow`` below (a minimum-size frame costs 8 beats at 64 bits, 60 at 8), times the
    long-run scale.

    Icarus spends most of its time re-evaluating the H3 trees while a frame's first
    ``window_bytes`` stream in, so the cost of a run is about frames × window beats; the
    default counts keep the whole cocotb suite within a few minutes on two cores."""
    if tb.bytes_per_beat >= 60:
        n = wide if single_beat is None else single_beat
    else:
        n = wide if tb.bytes_per_beat >= 8 else narrow
    return n * SCALE


def frozen_info(snapshot: Snapshot) -> dict:
    """Sequence number, packet count, config ID, check value and header (as the device
    stamped it) of a frozen interval's snapshot."""
    return {"frozen_seq": snapshot.seq, "frozen_packets": snapshot.packets,
            "frozen_config_id": snapshot.config_id, "frozen_check": snapshot.check_value,
            "header": snapshot.header}


def golden_header(header: RecordHeader, config_id: int, packets: int, *, role: int,
                  src_mac: int, rli: dict | None = None) -> RecordHeader:
    """The header the golden model implies for an interval of ``packets`` counted frames
    begun with CONFIG_ID ``config_id`` (the configuration's once programmed; 0 after a
    reset), frozen by a point of ``role`` (:func:`golden_identity`) and LOCAL_MAC
    ``src_mac``, with RLI's frozen counts ``rli`` (``references`` … ``refused``; RLI
    cores only); the sequence number, flags and timestamp the device read (``header``),
    which the benches check on their own."""
    return RecordHeader(seq=header.seq, flags=header.flags, packets=packets,
                        config_id=config_id, timestamp=header.timestamp, role=role,
                        src_mac=src_mac,
                        **{f"rli_{k}": v for k, v in (rli or {}).items()})


def golden_identity(device: Device) -> dict:
    """Host code: the role and source MAC the contract says the core stamps into an
    interval freezing now (:func:`host_sw.contracts.frames.frame_format.effective_role`
    of ROLE and INTERVAL_MODE.mode, and LOCAL_MAC), from the registers the host wrote."""
    role = effective_role(device.read_fields("role")["role"],
                          device.read_fields("interval_mode")["mode"])
    return {"role": int(role), "src_mac": device.read("local_mac")}


def read_frozen_info(device: Device) -> dict:
    """Host code: the frozen interval's sequence number, packet count and config ID."""
    return {n: device.read(n) for n in ("frozen_seq", "frozen_packets", "frozen_config_id")}


#: The calibrated timestamp offset of the first test (compared in every later test).
_FIRST_TS_OFFSET: dict[str, int] = {}


class CoreHarness(CoreTB):
    """:class:`sim_tb.lib.tb.CoreTB` plus the host driver on the core's bus, the
    configuration and the golden model.

    The bus is reached as a board is: :attr:`device` is a
    :class:`host_sw.device.driver.Device` on a simulation transport
    (:mod:`sim_tb.lib.uartbone_driver`); :meth:`host` runs host code — a ``Device`` method
    or a function using one — in a bridge thread.
    """

    def __init__(self, dut):
        super().__init__(dut)
        self.params = CoreParams.from_env()
        if self.params is None:
            raise RuntimeError("LDA_SIM_PARAMS is not set (run through sim_tb.lib.runner)")
        if self.params.data_width != self.data_width:
            raise RuntimeError(f"parameters say {self.params.data_width}-bit data, the DUT "
                               f"has {self.data_width}")
        self.config = self.params.config()
        self.hashers = Hashers(self.config)
        self.transport = simulation_transport(self.bus_port)
        self.device: Device | None = None
        self.ts_offset: int | None = None
        self.rng = np.random.default_rng(cocotb.RANDOM_SEED)
        # every frame offered since reset with its SOF cycle, in order
        self.history: list = []
        self.history_sof: list[int] = []

    # -- setup ---------------------------------------------------------------------------
    async def start(self, *, calibrate: bool = True):
        """Reset, check the ID, program the run-time registers, calibrate timestamps."""
        await self.reset()
        self.device = await self.host(Device, self.transport, config=self.config)
        ident = self.device.id_value
        assert ident == self.device.map.id_value, (
            f"ID register {ident:#010x} != register map ID {self.device.map.id_value:#010x}")
        await self.program_runtime()
        await self.clear_both_copies()
        if calibrate:
            await self.calibrate()

    async def host(self, func, *args, **kwargs):
        """Host code ``func(*args, **kwargs)`` in a bridge thread (its bus commands drive
        the simulation)."""
        return await run_host(func, *args, **kwargs)

    async def program_runtime(self):
        """Write thresholds, masks and CONFIG_ID from the configuration (what a host does
        on connect: :meth:`Device.program`), and read them back."""
        cfg = self.config
        await self.host(self.device.program)
        assert await self.host(self.device.read, "config_id") == cfg.config_id
        # the point's identity, stamped into each interval (FROZEN_ROLE, FROZEN_SRC_MAC)
        await self.host(self.device.write, "local_mac", mac=HARNESS_MAC)
        await self.host(self.device.write, "role", role=ROLE_SETTINGS["receiver"])
        masks = await self.host(self.device.read_fields, "masks")
        assert masks["packet_ipv4"] == cfg.mask_packet_ipv4, masks

    async def clear_both_copies(self):
        """Wait for the clearing sweep after reset (``hw.counters.copy_control``: block RAM keeps
        its contents over ``rst``, so the core clears both copies then; STATUS.other_clean
        rises when it is done), then swap and release twice as the benches always did
        (their intervals' numbering starts after these two)."""
        st = await self.wait_status("other_clean", 1)
        assert st["active_copy"] == 0 and st["frozen_ready"] == 0, f"status after reset: {st}"
        for _ in range(2):
            await self.freeze()
            await self.release_and_wait()

    async def calibrate(self):
        """Find the constant ``timestamp - SOF cycle`` from one counted frame: offer it,
        end the interval, read its counter's timestamp sum, release."""
        frame = min_size_burst(self.rng, 1)
        sofs = await self.offer(frame)
        syn = (await self.end_interval()).synopsis
        hashes = hash_frames(self.config, [frame[0].data], hashers=self.hashers)
        lane, col, _ = bucket_indices(self.config, hashes, self.hashers)
        assert len(lane), "the calibration frame is not sampled"
        ts = int(syn.ts_sum[lane[0], col[0]])
        assert int(syn.count.sum()) == len(lane), (
            f"calibration: {int(syn.count.sum())} counts for one frame in {len(lane)} "
            f"lanes")
        self.ts_offset = ts - sofs[0]
        self.log.info("timestamp = SOF cycle %+d", self.ts_offset)
        # the timebase restarts at reset: the offset is the same after every reset
        first = _FIRST_TS_OFFSET.setdefault("offset", self.ts_offset)
        assert self.ts_offset == first, (
            f"timestamp offset {self.ts_offset} after this reset, {first} after the first")
        expected = expected_synopsis(self.config, frame, [ts], self.hashers)
        assert syn == expected, synopsis_difference(expected, syn)
        await self.release_and_wait()

    # -- traffic -------------------------------------------------------------------------
    async def offer(self, frames, *, check: bool = True) -> list[int]:
        """Offer frames, collect them at the output (checking each against its input
        when ``check``) and return their SOF cycles."""
        self.send_nowait(frames)
        received = await self.receive(len(frames))
        seen = await self.monitored(len(frames))
        if check:
            for i, (sent, got) in enumerate(zip(frames, received)):
                self.check_frame(sent, got, i)
        sofs = [c for _, c in seen]
        self.history += frames
        self.history_sof += sofs
        return sofs

    def timestamps(self, sofs) -> list[int]:
        return [c + self.ts_offset for c in sofs]

    def golden(self, frames, sofs) -> Synopsis:
        return expected_synopsis(self.config, frames, self.timestamps(sofs), self.hashers)

    # -- intervals -----------------------------------------------------------------------
    async def wait_status(self, field: str, value: int = 1, *, polls: int = 200,
                          gap_cycles: int = 16) -> dict:
        """Poll STATUS (``gap_cycles`` clocks apart) until ``field`` equals ``value``."""
        for _ in range(polls):
            st = await self.host(self.device.status)
            if st[field] == value:
                return st
            await self.cycles(gap_cycles)
        raise AssertionError(f"STATUS.{field} did not become {value}: {st}")

    async def settle(self):
        """Let the frames that have left the core reach the counters' tap, which watches
        the stream ``MeasurementCore.TAP_WATCH_DELAY`` cycles late (a marker's tag is
        checked before its boundary): a host swap ends the interval at the tap, so a frame still in
        the delay line would count in the next one."""
        await ClockCycles(self.dut.clk, SWAP_SETTLE)

    async def freeze(self) -> dict:
        """CONTROL.swap, then wait for the frozen copy; returns its sequence number,
        packet count and config ID (the counters are not read)."""
        await self.settle()
        await self.host(self.device.swap)
        await self.wait_status("frozen_ready", 1)
        return await self.host(read_frozen_info, self.device)

    async def end_interval(self) -> Snapshot:
        """CONTROL.swap, wait for the frozen copy, and read it as the host does
        (:meth:`Device.read_snapshot`, not released)."""
        await self.settle()
        await self.host(self.device.swap)
        await self.wait_status("frozen_ready", 1)
        return await self.host(self.device.read_snapshot, release=False, poll=0)

    async def release_and_wait(self):
        await self.host(self.device.release)
        await self.wait_status("other_clean", 1, polls=2000)

    async def status_counters(self) -> dict:
        return await self.host(self.device.status_counters)

    async def check_status_moved(self, before: dict, frames):
        """The status counters moved from ``before`` (:meth:`status_counters`) by the
        frame classes of ``frames`` (:func:`sim_tb.lib.scoreboard.expected_status`; the
        32-bit counters wrap)."""
        after = await self.status_counters()
        expected = expected_status(frames)
        delta = {k: (after[k] - before[k]) & 0xFFFFFFFF for k in expected}
        assert delta == expected, f"status counters moved by {delta}, expected {expected}"

    async def read_frozen_synopsis(self) -> Synopsis:
        """The frozen copy's counters, read again."""
        words = await self.host(self.device.read_counter_words)
        return Synopsis.from_words(self.config, words)

    async def check_frozen(self, frames, sofs, what: str, snapshot: Snapshot | None = None):
        """The frozen copy (``snapshot``'s, or read again) equals the golden model, its
        header's packets and config ID are the golden ones, and the device's FROZEN_CHECK /
        FROZEN_UPDATES are the contract's over the golden record: the golden model's
        words and header (``host_sw.contracts.check_value``, docs/SPEC.md §4.4)."""
        got = snapshot.synopsis if snapshot is not None else await self.read_frozen_synopsis()
        expected = self.golden(frames, sofs)
        diff = synopsis_difference(expected, got)
        assert not diff, f"{what}: frozen copy differs from the golden model\n{diff}"
        check = await self.host(self.device.read, "frozen_check")
        updates = await self.host(self.device.read, "frozen_updates")
        header = await self.host(self.device.read_record_header)
        config_id = await self.host(self.device.read, "config_id")   # not written since
        identity = await self.host(golden_identity, self.device)     # nor these
        want_header = golden_header(header, config_id, int(counted_mask(frames).sum()),
                                    **identity)
        assert header == want_header, f"{what}: header {header}, golden {want_header}"
        want = check_value(self.config, expected.words(), want_header)
        assert check == want, f"{what}: FROZEN_CHECK {check:#010x}, golden {want:#010x}"
        problem = plausibility_problem(self.config, expected.count, updates)
        assert problem is None, f"{what}: {problem}"
        return got


async def ldactl_while_simulating(clk, argv) -> tuple[int, str]:
    """``ldactl argv`` in a thread (its socket reaches the simulation through a core's
    bridge) while the simulation runs on ``clk``; its exit code and standard output."""
    out, result = io.StringIO(), {}

    def run():
        with contextlib.redirect_stdout(out):
            result["rc"] = ldactl(argv)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    while thread.is_alive():
        await ClockCycles(clk, 64)
    return result.get("rc"), out.getvalue()
