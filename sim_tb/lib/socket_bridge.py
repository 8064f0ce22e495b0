# SPDX-License-Identifier: BSD-2-Clause
"""A simulated core's UARTBone byte stream served on a local TCP port.

Where it sits (``DESIGN.md``): "CSR register bank ◄── bus bridge ◄── byte stream
(simulation) ◄── host". The host software reaches a board through a serial port; it
reaches a core running under cocotb through ``tcp://127.0.0.1:PORT``
(:class:`host_sw.device.socket_transport.SocketTransport`). :class:`SocketBridge` is the simulator-side
end: a thread accepts one connection at a time on 127.0.0.1 and appends every received
byte to a thread-safe buffer; the cocotb side (no threads there: cocotb is single
threaded) polls :meth:`SocketBridge.pop_command` between clocks, plays the command into
the core's ``bus_rx`` and answers with :meth:`SocketBridge.send`.

Commands are framed here (:class:`CommandFramer`, the byte protocol of
:mod:`host_sw.contracts.uartbone`) so a harness can interleave its own bus accesses *between* the
host's commands, never inside one. Bytes that start no known command are passed on one
at a time (the core drops them); a half command that waits longer than ``stale_s``
seconds of wall time is passed on as it is, so the core's half-command timeout drops it
just as it would on a board when the host resynchronises.

Nothing here imports cocotb: the bridge is tested without a simulator
(``tests/sim_tb/lib/test_sim_socket_bridge.py``).
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass

from host_sw.contracts import uartbone

__all__ = ["BusCommand", "CommandFramer", "SocketBridge"]

_READS = (uartbone.CMD_READ_INCR, uartbone.CMD_READ_FIXED)
_WRITES = (uartbone.CMD_WRITE_INCR, uartbone.CMD_WRITE_FIXED)
_HEADER = 6  # command, length, 32-bit address
_CHECKED = uartbone.CHECKED_COMMANDS


@dataclass(frozen=True)
class BusCommand:
    """One host command for the bridge: its bytes and how many reply bytes it expects
    (``reply_bytes`` 0 for writes, stray bytes and half commands)."""
    data: bytes
    reply_bytes: int = 0


class CommandFramer:
    """Split a UARTBone byte stream into whole commands.

    Parameters
    ----------
    stale_s : float
        A half command older than this (wall time) is given out as it is.
    """

    def __init__(self, *, stale_s: float = 0.2):
        if not stale_s > 0:
            raise ValueError(f"stale_s must be positive, not {stale_s}")
        self.stale_s = stale_s
        self._buffer = bytearray()
        self._since: float | None = None
        self._lock = threading.Lock()

    def feed(self, data: bytes, now: float | None = None) -> None:
        """Append received bytes (any thread)."""
        with self._lock:
            if not self._buffer:
                self._since = time.monotonic() if now is None else now
            self._buffer += data

    def pending(self) -> int:
        with self._lock:
            return len(self._buffer)

    def pop(self, now: float | None = None) -> BusCommand | None:
        """The next whole command, a stray byte, a stale half command, or ``None``."""
        with self._lock:
            buf = self._buffer
            if not buf:
                return None
            cmd = buf[0]
            if cmd not in _READS and cmd not in _WRITES and cmd not in _CHECKED:
                return self._take(1, 0)
            if len(buf) >= 2:
                n = buf[1]
                if n == 0 and cmd not in _CHECKED:  # the bridge drops the byte pair
                    return self._take(2, 0)
                size, reply = uartbone.command_extent(buf)
                if len(buf) >= size:
                    return self._take(size, reply if n else 0)
            now = time.monotonic() if now is None else now
            if self._since is not None and now - self._since > self.stale_s:
                return self._take(len(buf), 0)
            return None

    def _take(self, n: int, reply: int) -> BusCommand:
        data = bytes(self._buffer[:n])
        del self._buffer[:n]
        self._since = time.monotonic() if self._buffer else None
        return BusCommand(data, reply)


class SocketBridge:
    """Serve one simulated device's bridge bytes on ``127.0.0.1:port``.

    Parameters
    ----------
    port : int
        0 picks a free port (see :attr:`port` and :attr:`url`).
    name : str
        For messages (``sender``/``receiver``).
    stale_s : float
        See :class:`CommandFramer`.
    """

    def __init__(self, *, port: int = 0, name: str = "device", stale_s: float = 0.2):
        if not 0 <= port < 65536:
            raise ValueError(f"port must be in 0..65535, not {port}")
        self.name = name
        self.framer = CommandFramer(stale_s=stale_s)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", port))
        self._listener.listen(1)
        self.port = self._listener.getsockname()[1]
        self.url = f"tcp://127.0.0.1:{self.port}"
        self._conn: socket.socket | None = None
        self._conn_lock = threading.Lock()
        self._closed = threading.Event()
        self.bytes_in = 0
        self.bytes_out = 0
        self.connections = 0
        self._thread = threading.Thread(target=self._serve, name=f"bridge-{name}",
                                        daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._conn_lock:
                self._conn = conn
                self.connections += 1
            try:
                while True:
                    try:
                        data = conn.recv(65536)
                    except OSError:
                        break
                    if not data:
                        break
                    self.bytes_in += len(data)
                    self.framer.feed(data)
            finally:
                with self._conn_lock:
                    if self._conn is conn:
                        self._conn = None
                conn.close()

    def pop_command(self) -> BusCommand | None:
        """The next host command to play into the core (simulator side)."""
        return self.framer.pop()

    def send(self, data: bytes) -> None:
        """Reply bytes to the host (dropped when nobody is connected)."""
        with self._conn_lock:
            conn = self._conn
        if conn is None or not data:
            return
        try:
            # Counted before the bytes leave: the host may act on the reply (and read
            # the counter) before sendall returns in this thread.
            self.bytes_out += len(data)
            conn.sendall(data)
        except OSError:
            self.bytes_out -= len(data)

    @property
    def connected(self) -> bool:
        return self._conn is not None

    def close(self) -> None:
        self._closed.set()
        try:
            self._listener.close()
        except OSError:
            pass
        with self._conn_lock:
            if self._conn is not None:
                try:
                    self._conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
