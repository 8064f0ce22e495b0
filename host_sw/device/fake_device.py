# SPDX-License-Identifier: BSD-2-Clause
"""An in-memory device: the UARTBone bridge and CSR bank of a core, built from the
register map, with fault injection.

In ``docs/DESIGN.md``'s data flow this stands in for "CSR register bank ◄── bus bridge" so
that the host's transport, driver and CLI can be tested without gateware. It takes the
command bytes of :mod:`host_sw.contracts.uartbone`
(:func:`~host_sw.contracts.uartbone.take_command`), plain or checked, and answers the reply
bytes a real bridge would (:meth:`~host_sw.contracts.uartbone.Command.reply`); the registers, their fields, resets,
wide-register shadows and the counter window are a
:class:`~host_sw.device.register_file.RegisterFile` walked from
:func:`~host_sw.contracts.regmap.register_map`. On top sits only what the core behind the
bank does, as the test drives it: the interval boundary (:meth:`FakeDevice.swap`: freeze
the synopsis set by :meth:`FakeDevice.set_active`, or count an overrun), the release of
the frozen copy (with its check value over the whole interval record and its update
count, :mod:`host_sw.contracts.check_value`), STATUS, and CONFIG_ID changes flagged in the
interval. Status counters
are set by the test (:meth:`FakeDevice.set`).

Faults (:meth:`FakeDevice.inject`) act on the next replies, one fault for all the reply
bytes of one :meth:`FakeDevice.feed` (a host transmission: a read and its fence word):
``"drop"`` (no reply), ``"short"`` (the last bytes missing), ``"extra"`` (junk bytes after the reply), ``"flip"``
(one bit flipped — undetectable by the plain framing, where the snapshot's check value or
read verification catches it; the checked framing's CRC rejects it);
``"none"`` passes one reply unchanged (to interleave faults). The acknowledgements of
checked writes are not read replies: they pass unchanged (the line's faults,
:class:`~host_sw.device.fake_transport.ScriptedLine`, hit them).
``hooks`` are called after every command (to change state mid-read, e.g. a swap).
:class:`DeviceServer` serves a device on a local TCP port, as a simulation harness does.
"""

from __future__ import annotations

import socket
import threading

from host_sw.contracts.check_value import (HEADER_REGISTERS, RecordHeader, check_value,
                                           count_total, header_fields)
from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.frames.frame_format import IntervalFlags, effective_role
from host_sw.contracts.regmap import register_map
from host_sw.contracts.synopsis import Synopsis
from host_sw.contracts.uartbone import take_command
from host_sw.device.register_file import RegisterFile

__all__ = ["FakeDevice", "FAULT_KINDS", "DeviceServer"]

FAULT_KINDS = ("none", "drop", "short", "extra", "flip")
_M32 = 0xFFFFFFFF


class FakeDevice:
    """The bus side of one core, in memory.

    Parameters
    ----------
    config : SynopsisConfig
        The core's configuration (its register map is built from it).
    data_width : int
        Frame data path width (part of the map's ID).
    id_value : int, optional
        Override the ID register (to emulate a different build).

    Attributes
    ----------
    map : RegisterMap
    registers : RegisterFile
    frozen : Synopsis or None
        The frozen copy (None when released).
    commands : list of (cmd, length, address)
        Every command received.
    """

    def __init__(self, config: SynopsisConfig, *, data_width: int = 64,
                 id_value: int | None = None):
        self.config = config
        self.map = register_map(config, data_width=data_width)
        self.registers = RegisterFile(self.map, window_word=self._frozen_word,
                                      sources={"status": self._status},
                                      on_write={"control": self._control,
                                                "config_id": self._config_id_written})
        if id_value is not None:
            self.registers.set("id", id_value)
        self.active: Synopsis = Synopsis.empty(config)
        self.active_flags = IntervalFlags.NONE
        self.frozen: Synopsis | None = None
        self._frozen_words: list[int] = []
        self.interval_seq = 0
        self.active_copy = 0
        self.faults: list[str] = []
        self.hooks: list = []
        self.commands: list[tuple[int, int, int]] = []   # (cmd, length, address)
        self._rx = bytearray()
        self._tx = bytearray()

    # -- test controls -------------------------------------------------------------------
    def set(self, name: str, value: int) -> None:
        """Set a register's value (status counters, ro values)."""
        self.registers.set(name, value)

    def get(self, name: str) -> int:
        return self.registers.value(name)

    def set_active(self, synopsis: Synopsis, flags: int = 0) -> None:
        """The counters the next swap freezes (and flags of that interval)."""
        if synopsis.config.config_id != self.config.config_id:
            raise ValueError("the synopsis has another configuration than the device")
        self.active = synopsis
        self.active_flags = IntervalFlags(flags)

    def swap(self, timestamp: int | None = None) -> None:
        """An interval boundary (as CONTROL.swap or a marker would cause)."""
        regs = self.registers
        if timestamp is not None:
            regs.set("timebase", timestamp)
        self.interval_seq = (self.interval_seq + 1) & _M32
        regs.set("interval_seq", self.interval_seq)
        if self.frozen is not None:   # overrun: no swap, the interval continues, flagged
            regs.set("overruns", (regs.value("overruns") + 1) & _M32)
            self.active_flags |= IntervalFlags.OVERRUN
            return
        self.frozen = self.active
        self._frozen_words = self.active.words()
        regs.set("frozen_seq", (self.interval_seq - 1) & _M32)
        regs.set("frozen_flags", int(self.active_flags))
        regs.set("frozen_packets", int(self.active.count.sum()) & _M32)
        regs.set("frozen_updates", count_total(self.config, self.active.count))
        regs.set("frozen_config_id", regs.value("config_id"))
        regs.set("frozen_timestamp", regs.value("timebase"))
        mode = self.map["interval_mode"].decode(regs.value("interval_mode"))["mode"]
        setting = self.map["role"].decode(regs.value("role"))["role"]
        regs.set("frozen_role", int(effective_role(setting, mode)))
        regs.set("frozen_src_mac", regs.value("local_mac"))
        # what the core computes while the copy freezes: the whole interval record
        regs.set("frozen_check", check_value(self.config, self._frozen_words,
                                             self.frozen_header()))
        self.active = Synopsis.empty(self.config)
        self.active_flags = IntervalFlags.NONE
        self.active_copy ^= 1

    def frozen_header(self) -> RecordHeader:
        """The frozen interval's header in the FROZEN_* registers (what the check value
        covers beside the words)."""
        v = self.registers.value
        return RecordHeader(**{name: v(HEADER_REGISTERS[name])
                               for name, _ in header_fields(self.config)})

    def release(self) -> None:
        self.frozen = None
        self._frozen_words = []

    def inject(self, kind: str, times: int = 1) -> None:
        """Make the next ``times`` read replies faulty (see the module docstring)."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"fault kind must be one of {FAULT_KINDS}, not {kind!r}")
        self.faults += [kind] * times

    # -- the core behind the bank --------------------------------------------------------
    def _status(self) -> int:
        frozen = self.frozen is not None
        overrun = bool(self.registers.values["frozen_flags"] & IntervalFlags.OVERRUN)
        return self.map["status"].encode(
            active_copy=self.active_copy, frozen_ready=int(frozen), clearing=0,
            frozen_overrun=int(overrun and frozen), other_clean=int(not frozen))

    def _frozen_word(self, index: int) -> int:
        if self.frozen is None or index >= len(self._frozen_words):
            return 0
        return self._frozen_words[index]

    def _control(self, value: int) -> None:
        strobes = self.map["control"].decode(value)
        if strobes["swap"]:
            self.swap()
        if strobes["release"]:
            self.release()

    def _config_id_written(self, value: int) -> None:
        if self.registers.values["config_id"] != value:
            self.active_flags |= IntervalFlags.CONFIG_CHANGED

    # -- the bridge ----------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        """Bytes from the host; complete commands execute and queue their replies."""
        self._rx += data
        replies = bytearray()
        reads = False
        while (command := take_command(self._rx)) is not None:
            if not command.executes:      # length 0, a bad CRC: ignored, as the bridge does
                continue
            self.commands.append((command.cmd, command.length, command.address))
            if command.writing:
                for address, word in zip(command.addresses, command.words):
                    self.bus_write(address, word)
                replies += command.reply([])          # a checked write's ack
            else:
                replies += command.reply([self.bus_read(a) for a in command.addresses])
                reads = True
            for hook in list(self.hooks):
                hook(self, command.cmd, command.length, command.address)
        if reads:
            self._tx += self._fault(bytes(replies))
        else:
            self._tx += replies        # write acks alone: the faults are for read replies

    def bus_read(self, address: int) -> int:
        """One bus word read (the CSR bank's side of the bridge)."""
        return self.registers.read(address)

    def bus_write(self, address: int, word: int) -> None:
        """One bus word written."""
        self.registers.write(address, word)

    def take(self, n: int | None = None) -> bytes:
        """Up to ``n`` reply bytes (all by default)."""
        n = len(self._tx) if n is None else min(n, len(self._tx))
        out = bytes(self._tx[:n])
        del self._tx[:n]
        return out

    @property
    def pending(self) -> int:
        return len(self._tx)

    def reset_bridge(self) -> None:
        """Drop a half-received command and unread replies (the bridge's timeout)."""
        self._rx.clear()
        self._tx.clear()

    def _fault(self, reply: bytes) -> bytes:
        if not self.faults:
            return reply
        kind = self.faults.pop(0)
        if kind == "none":
            return reply
        if kind == "drop":
            return b""
        if kind == "short":
            return reply[:max(0, len(reply) - 3)]
        if kind == "extra":
            return reply + b"\xA5\x5A"
        b = bytearray(reply)
        b[len(b) // 2] ^= 0x10
        return bytes(b)


class DeviceServer:
    """Serve a device's bridge bytes on a local TCP port (``tcp://127.0.0.1:PORT``), one
    connection at a time, as a simulation harness does for a simulated core.

    Parameters
    ----------
    device : FakeDevice
        Anything with ``feed(bytes)`` and ``take() -> bytes``.
    port : int
        0 picks a free port (see :attr:`port`).
    """

    def __init__(self, device, *, port: int = 0):
        self.device = device
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", port))
        self._sock.listen(1)
        self.port = self._sock.getsockname()[1]
        self.url = f"tcp://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with conn:
                while True:
                    try:
                        data = conn.recv(4096)
                    except OSError:
                        break
                    if not data:
                        break
                    self.device.feed(data)
                    out = self.device.take()
                    if out:
                        conn.sendall(out)

    def close(self) -> None:
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
