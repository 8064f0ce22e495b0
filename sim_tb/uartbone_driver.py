# SPDX-License-Identifier: BSD-2-Clause
"""The host side of the bus inside a cocotb simulation: UARTBone bytes into the core's
bridge, register access by name, and reading the frozen synopsis.

Where it sits (``DESIGN.md``): "CSR register bank ◄── bus bridge ◄── byte stream
(simulation) ◄── host". :class:`ByteStreamPort` drives the exported core's ``bus_rx_*``
(host → bridge) and collects ``bus_tx_*`` (bridge → host) bytes one per clock; the
command bytes come from :mod:`host_sw.contracts.uartbone` (the one definition of the protocol) and
the addresses from :mod:`host_sw.contracts.regmap` (the one definition of the register map).

:class:`CoreBus` is what the cocotb tests use: ``read_reg``/``write_reg`` by register
name and field, ``swap``/``release``, ``status``, the status counters and
:meth:`CoreBus.read_frozen_synopsis`, which returns a :class:`host_sw.contracts.synopsis.Synopsis`
built with :meth:`~host_sw.contracts.synopsis.Synopsis.from_words`, ready to compare with the golden
model.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import RisingEdge

__all__ = ["ByteStreamPort", "UartBoneDriver", "CoreBus", "BusTimeout"]


class BusTimeout(AssertionError):
    """The bridge did not accept or answer within the allowed clocks."""


class ByteStreamPort:
    """The byte-stream side of the UARTBone bridge (``bus_rx_*`` in, ``bus_tx_*`` out).

    Ports are sampled at rising edges (as cocotbext-axi does): a byte moves on an edge
    where ``tvalid`` and ``tready`` are both high.
    """

    def __init__(self, dut):
        self.dut = dut
        self.clk = dut.clk
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
        """Collect exactly ``count`` bytes from ``bus_tx`` (``tready`` held high while
        collecting, low otherwise)."""
        dut = self.dut
        out = bytearray()
        idle = 0
        dut.bus_tx_tready.value = 1
        try:
            while len(out) < count:
                await RisingEdge(self.clk)
                if dut.bus_tx_tvalid.value:
                    out.append(int(dut.bus_tx_tdata.value))
                    idle = 0
                else:
                    idle += 1
                    if idle > timeout_cycles:
                        raise BusTimeout(f"bus_tx gave {len(out)} of {count} bytes, then "
                                         f"nothing for {timeout_cycles} cycles")
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

    async def transact(self, request: bytes, reply_bytes: int, *,
                       timeout_cycles: int = 100_000) -> bytes:
        """Send a request and collect exactly ``reply_bytes`` reply bytes (the reader
        runs from the first request byte on, so an early reply is not lost)."""
        reader = cocotb.start_soon(self.read(reply_bytes, timeout_cycles=timeout_cycles)) \
            if reply_bytes else None
        await self.write(request, timeout_cycles=timeout_cycles)
        return await reader if reader is not None else b""


class UartBoneDriver:
    """Word reads and writes over the UARTBone byte protocol (``host_sw.contracts.uartbone``).

    Reads longer than the protocol's 255 words are split into several commands.
    """

    MAX_WORDS = 255

    def __init__(self, port: ByteStreamPort, *, timeout_cycles: int = 100_000):
        from host_sw.contracts import uartbone
        self.protocol = uartbone
        self.port = port
        self.timeout_cycles = timeout_cycles
        self.bytes_sent = 0
        self.bytes_received = 0

    async def read(self, address: int, count: int = 1, *,
                   incrementing: bool = True) -> list[int]:
        """``count`` 32-bit words from word ``address`` (incrementing or fixed)."""
        words: list[int] = []
        while count > 0:
            n = min(count, self.MAX_WORDS)
            request = self.protocol.encode_read(address, n, incrementing=incrementing)
            reply = await self.port.transact(request, self.protocol.read_reply_length(n),
                                             timeout_cycles=self.timeout_cycles)
            self.bytes_sent += len(request)
            self.bytes_received += len(reply)
            words += self.protocol.decode_read_reply(reply, n)
            count -= n
            if incrementing:
                address += n
        return words

    async def write(self, address: int, words, *, incrementing: bool = True):
        """Write 32-bit words from word ``address`` (incrementing or fixed)."""
        words = list(words)
        while words:
            chunk, words = words[:self.MAX_WORDS], words[self.MAX_WORDS:]
            request = self.protocol.encode_write(address, chunk, incrementing=incrementing)
            await self.port.write(request, timeout_cycles=self.timeout_cycles)
            self.bytes_sent += len(request)
            if incrementing:
                address += len(chunk)


class CoreBus:
    """Register-level access to the core, by the names of :mod:`host_sw.contracts.regmap`.

    Parameters
    ----------
    driver : UartBoneDriver
    config : SynopsisConfig
        The core's configuration (the map is :func:`host_sw.contracts.regmap.register_map` of it).
    data_width : int
        The core's frame data path width (part of the map's ID).
    """

    def __init__(self, driver: UartBoneDriver, config, *, data_width: int):
        from host_sw.contracts.regmap import register_map
        self.driver = driver
        self.config = config
        self.map = register_map(config, data_width=data_width)
        self.window = self.map.window

    # -- registers -----------------------------------------------------------------------
    async def read_reg(self, name: str) -> int:
        """A register's value (its words read in one burst, first word first, so the
        read is atomic)."""
        reg = self.map[name]
        return reg.from_words(await self.driver.read(reg.address, reg.words))

    async def read_fields(self, name: str) -> dict[str, int]:
        return self.map[name].decode(await self.read_reg(name))

    async def write_reg(self, name: str, value: int | None = None, **fields):
        """Write a register: a whole value, or field values (other fields at reset)."""
        reg = self.map[name]
        if value is None:
            value = reg.encode(**fields)
        elif fields:
            raise ValueError("give a value or fields, not both")
        await self.driver.write(reg.address, reg.to_words(value))

    async def status(self) -> dict[str, int]:
        return await self.read_fields("status")

    async def swap(self):
        """CONTROL.swap: end the current interval at the next frame boundary."""
        await self.write_reg("control", swap=1)

    async def release(self):
        """CONTROL.release: release (clear) the frozen copy."""
        await self.write_reg("control", release=1)

    async def wait_status(self, field: str, value: int = 1, *, polls: int = 200,
                          gap_cycles: int = 16) -> dict[str, int]:
        """Poll STATUS until ``field`` equals ``value``; returns the last status."""
        for _ in range(polls):
            st = await self.status()
            if st[field] == value:
                return st
            for _ in range(gap_cycles):
                await RisingEdge(self.driver.port.clk)
        raise BusTimeout(f"STATUS.{field} did not become {value}: {st}")

    async def status_counters(self) -> dict[str, int]:
        """The tap's per-class status counters and the overrun counter."""
        names = ("frames_seen", "frames_counted", "frames_errored", "frames_runt",
                 "frames_non_ip", "frames_control", "overruns")
        regs = [self.map[n] for n in names]
        lo = min(r.address for r in regs)
        hi = max(r.address + r.words for r in regs)
        words = await self.driver.read(lo, hi - lo)
        return {r.name: r.from_words(words[r.address - lo:r.address - lo + r.words])
                for r in regs}

    async def frozen_info(self) -> dict[str, int]:
        """Sequence number, packet count and config ID of the frozen interval."""
        return {n: await self.read_reg(n) for n in ("frozen_seq", "frozen_packets",
                                                    "frozen_config_id")}

    # -- counter window ------------------------------------------------------------------
    async def read_counter_words(self, first: int = 0, count: int | None = None) -> list[int]:
        """Counter words ``first .. first + count - 1`` of the frozen copy."""
        count = self.window.buckets - first if count is None else count
        bus = await self.driver.read(self.window.address_of(first), count * self.window.chunks)
        return self.window.words_from_bus(bus)

    async def read_frozen_synopsis(self):
        """The frozen copy as a :class:`host_sw.contracts.synopsis.Synopsis`."""
        from host_sw.contracts.synopsis import Synopsis
        return Synopsis.from_words(self.config, await self.read_counter_words())
