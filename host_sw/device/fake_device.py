# SPDX-License-Identifier: BSD-2-Clause
"""An in-memory device: the UARTBone bridge and CSR bank of a core, emulated from the
register map, with fault injection.

In DESIGN.md's data flow this stands in for "CSR register bank ◄── bus bridge" so that
the host's transport, driver and CLI can be tested without gateware: it consumes the
command bytes of :mod:`host_sw.contracts.uartbone` and produces the reply bytes a real bridge would,
with the register semantics of :mod:`host_sw.contracts.regmap` (constant ID/VERSION/CONFIG, ``rw``
registers committed on their last word, CONTROL pulses, the counter window of the frozen
copy, least significant chunk first). Intervals are driven by the test: it sets the
synopsis the next swap freezes (:meth:`FakeDevice.set_active`) and the status counters.

Faults (:meth:`FakeDevice.inject`) act on the next read replies: ``"drop"`` (no reply),
``"short"`` (the last bytes missing), ``"extra"`` (junk bytes after the reply), ``"flip"``
(one bit flipped — undetectable by the protocol; only read verification catches it);
``"none"`` passes one reply unchanged (to interleave faults).
``hooks`` are called after every command (to change state mid-read, e.g. a swap).
"""

from __future__ import annotations

import socket
import threading

from host_sw.contracts.config import SynopsisConfig
from host_sw.contracts.control_frame import IntervalFlags
from host_sw.contracts.synopsis import Synopsis
from host_sw.contracts.regmap import Register, register_map
from host_sw.contracts.uartbone import CMD_READ_FIXED, CMD_READ_INCR, CMD_WRITE_FIXED, CMD_WRITE_INCR

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
    """

    def __init__(self, config: SynopsisConfig, *, data_width: int = 64,
                 id_value: int | None = None):
        self.config = config
        self.map = register_map(config, data_width=data_width)
        self.values: dict[str, int] = {r.name: r.reset for r in self.map}
        if id_value is not None:
            self.values["id"] = int(id_value)
        self._write_shadow: dict[str, list[int]] = {}
        self._read_shadow: dict[str, list[int]] = {}
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
        self._refresh()

    # -- test controls -------------------------------------------------------------------
    def set(self, name: str, value: int) -> None:
        """Set a register's value (status counters, ro values)."""
        self.values[self.map[name].name] = int(value)

    def get(self, name: str) -> int:
        return self.values[self.map[name].name]

    def set_active(self, synopsis: Synopsis, flags: int = 0) -> None:
        """The counters the next swap freezes (and flags of that interval)."""
        if synopsis.config.config_id != self.config.config_id:
            raise ValueError("the synopsis has another configuration than the device")
        self.active = synopsis
        self.active_flags = IntervalFlags(flags)

    def swap(self, timestamp: int | None = None) -> None:
        """An interval boundary (as CONTROL.swap or a marker would cause)."""
        if timestamp is not None:
            self.values["timebase"] = int(timestamp)
        boundary_ts = self.values["timebase"]
        self.interval_seq = (self.interval_seq + 1) & _M32
        if self.frozen is not None:   # overrun: no swap, the interval continues, flagged
            self.values["overruns"] = (self.values["overruns"] + 1) & _M32
            self.active_flags |= IntervalFlags.OVERRUN
        else:
            self.frozen = self.active
            self._frozen_words = self.active.words()
            self.values["frozen_seq"] = (self.interval_seq - 1) & _M32
            self.values["frozen_flags"] = int(self.active_flags)
            self.values["frozen_packets"] = int(self.active.count.sum()) & _M32
            self.values["frozen_config_id"] = self.values["config_id"]
            self.values["frozen_timestamp"] = boundary_ts
            self.active = Synopsis.empty(self.config)
            self.active_flags = IntervalFlags.NONE
            self.active_copy ^= 1
        self._refresh()

    def release(self) -> None:
        self.frozen = None
        self._frozen_words = []
        self._refresh()

    def inject(self, kind: str, times: int = 1) -> None:
        """Make the next ``times`` read replies faulty (see the module docstring)."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"fault kind must be one of {FAULT_KINDS}, not {kind!r}")
        self.faults += [kind] * times

    def _refresh(self) -> None:
        st = self.map["status"]
        self.values["status"] = st.encode(
            active_copy=self.active_copy, frozen_ready=int(self.frozen is not None),
            clearing=0, frozen_overrun=int(bool(self.values["frozen_flags"]
                                                & IntervalFlags.OVERRUN)
                                           and self.frozen is not None),
            other_clean=int(self.frozen is None))
        self.values["interval_seq"] = self.interval_seq

    # -- the bridge ----------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        """Bytes from the host; complete commands execute and queue their replies."""
        self._rx += data
        while self._rx:
            cmd = self._rx[0]
            if cmd not in (CMD_WRITE_INCR, CMD_READ_INCR, CMD_WRITE_FIXED, CMD_READ_FIXED):
                del self._rx[0]            # the bridge drops unknown command bytes
                continue
            if len(self._rx) < 6:
                return
            length = self._rx[1]
            address = int.from_bytes(self._rx[2:6], "big")
            writing = cmd in (CMD_WRITE_INCR, CMD_WRITE_FIXED)
            need = 6 + (4 * length if writing else 0)
            if len(self._rx) < need:
                return
            body = bytes(self._rx[6:need])
            del self._rx[:need]
            if length == 0:
                continue
            incr = cmd in (CMD_WRITE_INCR, CMD_READ_INCR)
            addrs = [(address + k) & _M32 if incr else address for k in range(length)]
            self.commands.append((cmd, length, address))
            if writing:
                for a, k in zip(addrs, range(0, len(body), 4)):
                    self._bus_write(a, int.from_bytes(body[k:k + 4], "big"))
            else:
                reply = b"".join(self._bus_read(a).to_bytes(4, "big") for a in addrs)
                self._tx += self._fault(reply)
            for hook in list(self.hooks):
                hook(self, cmd, length, address)

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

    # -- register semantics --------------------------------------------------------------
    def _bus_read(self, address: int) -> int:
        target = self.map.at(address)
        if target is None:
            return 0
        if not isinstance(target, Register):          # the counter window
            index, chunk = target.locate(address)
            if self.frozen is None or index >= len(self._frozen_words):
                return 0
            return target.layout.to_chunks(self._frozen_words[index])[chunk]
        k = target.word_index(address)
        if k == 0:   # reading the first word captures the whole value
            self._read_shadow[target.name] = target.to_words(
                self.values[target.name] & ((1 << target.width) - 1))
        shadow = self._read_shadow.get(target.name) or target.to_words(
            self.values[target.name] & ((1 << target.width) - 1))
        value = shadow[k]
        if target.access == "rw":  # pulse fields read 0
            pulse = sum(f.mask for f in target.fields if f.access == "pulse")
            value &= ~(pulse >> (32 * (target.words - 1 - k))) & _M32
        return value

    def _bus_write(self, address: int, value: int) -> None:
        target = self.map.at(address)
        if not isinstance(target, Register) or target.access != "rw":
            return
        k = target.word_index(address)
        shadow = self._write_shadow.setdefault(target.name, [0] * target.words)
        shadow[k] = value
        if k != target.words - 1:
            return
        full = target.from_words(shadow)
        if target.name == "control":
            f = target.decode(full)
            if f["swap"]:
                self.swap()
            if f["release"]:
                self.release()
            return
        if target.name == "config_id" and self.values["config_id"] != full:
            self.active_flags |= IntervalFlags.CONFIG_CHANGED
        self.values[target.name] = full


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
