# SPDX-License-Identifier: BSD-2-Clause
"""cocotb side of the board testbench (:mod:`sim_tb.board.board_sim`): one board top under
cocotbext-eth's RGMII PHY models and cocotbext-uart's UART models.

One test, :func:`board_top`, on ``board_sim_top`` (the board top's own pins). It

1. starts the board clock (its frequency from the platform), one 125 MHz receive clock
   per RGMII port (the PHYs' clocks: independent of the board clock and of each other,
   here with a phase offset), holds the board's reset button released and waits out
   the power-on reset;
2. serves a :class:`sim_tb.lib.socket_bridge.SocketBridge`: each host command is played
   into the UART receive pin by a ``UartSource`` and the reply is taken from the UART
   transmit pin by a ``UartSink`` — the host (``ldactl``) reaches the board's UARTBone,
   and on a two-port board both cores through the router, as it would through a
   USB-serial bridge; the URL goes to ``ports.json``;
3. on each ``go-<n>`` file sends traffic phase ``n`` — ``frames`` frames into port 0 at
   line rate (``bad_frames`` of them with a bad FCS) — through ``RgmiiSource``; on a
   two-port board what leaves port 1 (``RgmiiSink``) is sent back into port 1 (a
   loopback plug: core 1 measures what core 0 forwarded) and what leaves port 0 is
   collected; while the phase runs, each core's frame input is watched (its clock cycle
   at each frame's start: the timestamps of the golden model, as the clock-domain
   crossing from the PHY clock makes them vary by a cycle);
4. writes ``traffic-<n>.json``: the frames sent and received on each port (hex, with
   their FCS) and, per core, its frames and SOF cycles — the test compares them with
   what ``ldactl read`` returns, through :func:`sim_tb.lib.scoreboard.expected_synopsis`;
5. ends on the ``done`` file.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import zlib
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, Timer
from cocotb.utils import get_sim_time
from cocotbext.eth import GmiiFrame, RgmiiSink, RgmiiSource
from cocotbext.uart import UartSink, UartSource

from host_sw.model.traffic import synthetic_trace
from hw.frames.frame import frame_beat_layout

from sim_tb.board.board_sim import (DONE_FILE, GO_FILE, PORTS_FILE, BoardSimParams,
                                    traffic_file)
from sim_tb.lib.socket_bridge import SocketBridge

log = logging.getLogger("cocotb.board")

#: Transport options of the published URL: a simulated UART is slow in wall time.
HOST_OPTIONS = "?timeout=600"
#: Core port names as the board tops wire them (``boards.top``): the direction's
#: receiving port.
CORE_PORT = {"port0_to_port1": 0, "port1_to_port0": 1, "port0": 0}


class CoreWatch:
    """Records the clock cycle of each frame start at one core's frame input (the
    ``s_axis`` stream the board top connects from the port's receive FIFO)."""

    def __init__(self, clk, period_ns: float, valid, ready, payload):
        self.clk, self.period_ns = clk, period_ns
        self.valid, self.ready, self.payload = valid, ready, payload
        self.last_bit = frame_beat_layout(64)["last"].offset
        self.sof: list[int] = []
        self.running = False

    async def run(self):
        in_frame = False
        self.running = True
        while self.running:
            await RisingEdge(self.clk)
            if int(self.valid.value) and int(self.ready.value):
                if not in_frame:
                    self.sof.append(round(get_sim_time("ns") / self.period_ns))
                in_frame = not (int(self.payload.value) >> self.last_bit) & 1


def _core_handles(dut, index: int, ports_of_core: dict):
    """valid, ready, payload of core ``index``'s frame input (names from the export)."""
    inst = getattr(dut.dut, f"core{index}")
    names = ports_of_core[str(index)]
    return (getattr(inst, names["valid"]), getattr(inst, names["ready"]),
            getattr(inst, names["payload"]))


def _phase_frames(params: BoardSimParams, config, phase: int):
    """This phase's frames (no FCS) and which of them get a bad FCS."""
    trace = synthetic_trace(packets=params.frames, flows=max(4, params.frames // 4),
                            frame_bytes=80, window_bytes=config.window_bytes,
                            seed=params.seed * 100 + phase)
    frames = trace.frames()
    rng = np.random.default_rng(params.seed * 100 + phase)
    bad = set(int(i) for i in rng.choice(len(frames), params.bad_frames, replace=False))
    return frames, bad


def _wire_bytes(frame: bytes, bad: bool) -> bytes:
    fcs = zlib.crc32(frame) ^ (0xDEADBEEF if bad else 0)
    return frame + struct.pack("<I", fcs)


class Board:
    """The board's pins under the models."""

    def __init__(self, dut, params: BoardSimParams, info: dict):
        self.dut, self.params, self.info = dut, params, info
        self.clk = getattr(dut, info["clk_pin"])
        self.period_ns = 1e9 / info["clk_hz"]
        self.two_port = 1 in info["rgmii_ports"]
        self.sources, self.sinks, self.received = {}, {}, {}
        for k in info["rgmii_ports"]:
            pin = lambda s: getattr(dut, f"lda_rgmii_{k}__{s}__io")  # noqa: E731
            self.sources[k] = RgmiiSource(pin("rx_data"), pin("rx_ctl"), pin("rx_clk"))
            if self.two_port:
                self.sinks[k] = RgmiiSink(pin("tx_data"), pin("tx_ctl"), pin("tx_clk"))
            self.received[k] = []
        self.uart_rx = UartSource(dut.uart_0__rx__io, baud=info["uart_baud"])
        self.uart_tx = UartSink(dut.uart_0__tx__io, baud=info["uart_baud"])
        for model in (*self.sources.values(), *self.sinks.values(), self.uart_rx,
                      self.uart_tx):
            model.log.setLevel(logging.WARNING)      # a line per frame and per byte
        self.rx_clocks = {}

    async def start(self):
        Clock(self.clk, round(self.period_ns * 1000), unit="ps", impl="gpi").start()
        if self.info["rst_pin"]:
            getattr(self.dut, self.info["rst_pin"]).value = self.info["rst_inactive"]
        for k in self.info["rgmii_ports"]:
            pin = getattr(self.dut, f"lda_rgmii_{k}__rx_clk__io")
            pin.value = 0
            self.rx_clocks[k] = Clock(pin, round(self.params.rx_clk_ns[k] * 1000),
                                      unit="ps", impl="gpi")
        await self.phy_clocks(True)
        await ClockCycles(self.clk, 1100)      # the tops' power-on reset: 1024 clocks
        await self.phy_clocks(False)

    async def phy_clocks(self, run: bool):
        """Start or stop the PHYs' receive clocks (free-running on a board; here they
        run only while frames are on the wire: idle they were most of the events)."""
        for k, clock in self.rx_clocks.items():
            if run:
                if self.params.rx_phase_ns[k]:
                    await Timer(round(self.params.rx_phase_ns[k] * 1000), unit="ps")
                clock.start()
            else:
                clock.stop()

    async def serve(self, bridge: SocketBridge):
        """Play the host's commands into the UART pins, forever."""
        bit_clocks = self.params.uart_divisor * 10
        while True:
            command = bridge.pop_command()
            if command is None:
                await ClockCycles(self.clk, 64)
                continue
            self.uart_tx.clear()
            await self.uart_rx.write(command.data)
            reply = bytearray()
            budget = (len(command.data) + command.reply_bytes) * bit_clocks * 3 + 20_000
            while len(reply) < command.reply_bytes and budget > 0:
                if self.uart_tx.count():
                    reply += self.uart_tx.read_nowait(
                        min(self.uart_tx.count(), command.reply_bytes - len(reply)))
                else:
                    await ClockCycles(self.clk, bit_clocks)
                    budget -= bit_clocks
            if len(reply) < command.reply_bytes:
                log.warning("host command %s: %d of %d reply bytes", command.data[:6].hex(),
                            len(reply), command.reply_bytes)
            if not command.reply_bytes:
                await self.uart_rx.wait()
            bridge.send(bytes(reply))

    async def _collect(self, k: int, stop):
        """Frames leaving port ``k``; on a two-port board port 1's go back into it."""
        sink = self.sinks[k]
        while not stop():
            if sink.empty():
                await ClockCycles(self.clk, 16)
                continue
            frame = sink.recv_nowait()
            self.received[k].append(bytes(frame.get_payload(strip_fcs=False)))
            if k == 1 and self.params.loopback:
                await self.sources[1].send(GmiiFrame(frame.data))

    async def traffic(self, phase: int, config, watches: dict) -> dict:
        frames, bad = _phase_frames(self.params, config, phase)
        sent = [_wire_bytes(f, i in bad) for i, f in enumerate(frames)]
        for k in self.received:
            self.received[k] = []
        await self.phy_clocks(True)
        await ClockCycles(self.clk, 16)
        for w in watches.values():
            w.sof = []
            cocotb.start_soon(w.run())
        done = False
        collectors = [cocotb.start_soon(self._collect(k, lambda: done)) for k in self.sinks]
        for data in sent:
            await self.sources[0].send(GmiiFrame.from_raw_payload(data))
        n = len(sent)
        expect = {0: n, 1: n} if self.two_port and self.params.loopback else \
            ({1: n} if self.two_port else {})
        for _ in range(4000):
            await ClockCycles(self.clk, 64)
            if self.sources[0].empty() and self.sources[0].idle() and all(
                    len(self.received[k]) >= c for k, c in expect.items()) and all(
                    len(w.sof) >= n for name, w in watches.items()
                    if name != "port1_to_port0" or self.params.loopback):
                break
        await ClockCycles(self.clk, 256)       # the last updates reach the counters
        done = True
        for w in watches.values():
            w.running = False
        for c in collectors:
            await c
        await self.phy_clocks(False)
        return {"phase": phase, "sent": [s.hex() for s in sent], "bad": sorted(bad),
                "received": {str(k): [r.hex() for r in v] for k, v in self.received.items()},
                "sof": {name: w.sof for name, w in watches.items()}}


@cocotb.test()
async def board_top(dut):
    params = BoardSimParams.from_json(os.environ["LDA_BOARD_SIM"])
    info = json.loads(Path(os.environ["LDA_BOARD_INFO"]).read_text())
    workdir = Path(os.environ["LDA_BOARD_DIR"])
    config = params.config()
    board = Board(dut, params, info)
    await board.start()
    watches = {}
    for name in info["core_names"]:
        k = CORE_PORT[name]
        watches[name] = CoreWatch(board.clk, board.period_ns,
                                  *_core_handles(dut, k, info["core_inputs"]))
    bridge = SocketBridge(name=params.board)
    cocotb.start_soon(board.serve(bridge))
    (workdir / PORTS_FILE).write_text(json.dumps(
        {"url": bridge.url + HOST_OPTIONS, "cores": info["core_names"],
         "clk_hz": info["clk_hz"]}, indent=1))
    log.info("%s: UART on %s", params.board, bridge.url)
    phase = 0
    try:
        while not (workdir / DONE_FILE).exists():
            if (workdir / f"{GO_FILE}-{phase}").exists():
                record = await board.traffic(phase, config, watches)
                (workdir / (traffic_file(phase) + ".tmp")).write_text(json.dumps(record))
                os.replace(workdir / (traffic_file(phase) + ".tmp"),
                           workdir / traffic_file(phase))
                log.info("phase %d: %d frames sent", phase, len(record["sent"]))
                phase += 1
            await ClockCycles(board.clk, 512)
    finally:
        bridge.close()
