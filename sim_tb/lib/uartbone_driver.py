# SPDX-License-Identifier: BSD-2-Clause
"""The host side of the bus inside a cocotb simulation: the core's UARTBone byte ports,
and the board's host driver (:class:`host_sw.device.driver.Device`) on them.

Where it sits (``docs/DESIGN.md``): "CSR register bank ◄── bus bridge ◄── byte stream
(simulation) ◄── transport ◄── device driver". :class:`ByteStreamPort` drives the exported
core's ``bus_rx_*`` (host → bridge) and collects ``bus_tx_*`` (bridge → host) bytes one
per clock, one whole command at a time under a lock (so a harness and a host behind a
socket bridge can share one core). :func:`simulation_transport` puts a
:class:`sim_tb.lib.sim_transport.SimulationTransport` on a port: host code running in a
thread started by :func:`run_host` (``cocotb.task.bridge``) reaches the port through
``cocotb.task.resume``, so the tests read registers, snapshots and status counters
with the same ``Device`` methods as ``ldactl`` does on a board.
"""

from __future__ import annotations

import cocotb
from cocotb.task import bridge, resume
from cocotb.triggers import Lock, RisingEdge

from sim_tb.lib.sim_transport import BusTimeout, SimulationTransport

__all__ = ["ByteStreamPort", "simulation_transport", "run_host"]


class ByteStreamPort:
    """The byte-stream side of the UARTBone bridge (``bus_rx_*`` in, ``bus_tx_*`` out).

    Ports are sampled at rising edges of the bridge's clock (``ctrl_clk`` when the core
    has one, else ``clk``; as cocotbext-axi does): a byte moves on an edge
    where ``tvalid`` and ``tready`` are both high. :meth:`transact` holds :attr:`lock`
    for a whole command.
    """

    def __init__(self, dut):
        self.dut = dut
        # a two-clock core's bridge runs on the control clock (``ctrl_clk``)
        self.clk = dut.ctrl_clk if hasattr(dut, "ctrl_clk") else dut.clk
        self.lock = Lock()
        dut.bus_rx_tvalid.setimmediatevalue(0)
        dut.bus_rx_tdata.setimmediatevalue(0)
        dut.bus_tx_tready.setimmediatevalue(0)

    async def write(self, data: bytes, *, timeout_cycles: int = 10_000):
        """Send ``data`` into ``bus_rx``, one byte per accepted transfer."""
        dut = self.dut
        for byte in data:
            dut.bus_rx_tdata.value = byte
            dut.bus_rx_tvalid.value = 1
            waited = 0
            while True:
                await RisingEdge(self.clk)
                if dut.bus_rx_tready.value:
                    break
                waited += 1
                if waited > timeout_cycles:
                    dut.bus_rx_tvalid.value = 0
                    raise BusTimeout(f"bus_rx not ready for {timeout_cycles} cycles")
        dut.bus_rx_tvalid.value = 0

    async def read(self, count: int, *, timeout_cycles: int = 100_000) -> bytes:
        """Collect up to ``count`` bytes from ``bus_tx`` (``tready`` held high while
        collecting, low otherwise); fewer when it stays silent for ``timeout_cycles``."""
        dut = self.dut
        out = bytearray()
        idle = 0
        dut.bus_tx_tready.value = 1
        try:
            while len(out) < count and idle <= timeout_cycles:
                await RisingEdge(self.clk)
                if dut.bus_tx_tvalid.value:
                    out.append(int(dut.bus_tx_tdata.value))
                    idle = 0
                else:
                    idle += 1
        finally:
            dut.bus_tx_tready.value = 0
        return bytes(out)

    async def drain(self, cycles: int) -> bytes:
        """Collect whatever ``bus_tx`` sends during ``cycles`` clocks (to prove a reply
        had no extra bytes)."""
        dut = self.dut
        out = bytearray()
        dut.bus_tx_tready.value = 1
        for _ in range(cycles):
            await RisingEdge(self.clk)
            if dut.bus_tx_tvalid.value:
                out.append(int(dut.bus_tx_tdata.value))
        dut.bus_tx_tready.value = 0
        return bytes(out)

    async def transact(self, request: bytes, reply_bytes: int,
                       timeout_cycles: int = 100_000) -> bytes:
        """Send one command and collect its ``reply_bytes`` reply bytes (fewer when the
        bridge falls silent for ``timeout_cycles``); the reader runs from the first
        request byte on. Raises :class:`BusTimeout` when ``bus_rx`` does not take the
        command."""
        async with self.lock:
            reader = cocotb.start_soon(self.read(reply_bytes, timeout_cycles=timeout_cycles)) \
                if reply_bytes else None
            try:
                await self.write(request, timeout_cycles=timeout_cycles)
            except BusTimeout:
                if reader is not None:
                    reader.cancel()
                    self.dut.bus_tx_tready.value = 0
                raise
            return await reader if reader is not None else b""


def simulation_transport(port: ByteStreamPort, *, timeout_cycles: int = 100_000,
                         name: str = "cocotb core",
                         framing: str = "checked") -> SimulationTransport:
    """A host transport on ``port`` for code run by :func:`run_host` (``framing``: the
    bus framing, :data:`host_sw.contracts.uartbone.FRAMINGS`)."""
    return SimulationTransport(resume(port.transact), timeout_cycles=timeout_cycles,
                               name=name, framing=framing)


async def run_host(func, *args, **kwargs):
    """Host code ``func(*args, **kwargs)`` (a blocking function using a ``Device``) run
    in a bridge thread while the calling task waits; the simulation advances only through
    the bus commands it sends."""
    return await bridge(func)(*args, **kwargs)
