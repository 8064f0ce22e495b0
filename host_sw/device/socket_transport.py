# SPDX-License-Identifier: BSD-2-Clause
"""UARTBone over TCP: the link to a running simulation's bus bridge.

In ``docs/DESIGN.md``'s data flow this is the "socket into a running simulation" form of the
host's byte link: a simulation harness (``sim_tb.socket_bridge``) or
:class:`host_sw.device.fake_device.DeviceServer` serves a core's bridge bytes on
``tcp://127.0.0.1:PORT``, and this implements the byte hooks of
:class:`~host_sw.device.transport_base.ByteTransport` over that connection (as LiteX's
``comm_udp.py`` does for Etherbone).
"""

from __future__ import annotations

import socket
import time

from host_sw.device.transport_base import ByteTransport, TransportError

__all__ = ["SocketTransport"]


class SocketTransport(ByteTransport):
    """UARTBone over TCP (a simulation's bridge bytes on ``host:port``)."""

    def __init__(self, host: str, port: int, *, connect_timeout: float = 5.0, **options):
        super().__init__(name=options.pop("name", f"tcp://{host}:{port}"), **options)
        try:
            self.sock = socket.create_connection((host, port), timeout=connect_timeout)
        except OSError as e:
            raise TransportError(f"cannot connect to tcp://{host}:{port}: {e}") from e
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buffer = bytearray()

    def _pump(self, wait: float) -> None:
        if wait > 0:
            self.sock.settimeout(wait)
        else:
            self.sock.setblocking(False)
        try:
            data = self.sock.recv(65536)
        except (BlockingIOError, socket.timeout):
            return
        except OSError as e:
            raise TransportError(f"{self.name}: connection failed: {e}") from e
        if not data:
            raise TransportError(f"{self.name}: the device closed the connection")
        self._buffer += data

    def _send(self, data: bytes) -> None:
        self.sock.settimeout(self.timeout)
        self.sock.sendall(data)

    def _receive(self, n: int, deadline: float) -> bytes:
        while len(self._buffer) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._pump(left)
        out = bytes(self._buffer[:n])
        del self._buffer[:n]
        return out

    def _waiting(self) -> int:
        self._pump(0)
        return len(self._buffer)

    def _discard_input(self) -> None:
        self._buffer.clear()
        try:
            while True:
                before = len(self._buffer)
                self._pump(0)
                if len(self._buffer) == before:
                    break
                self._buffer.clear()
        finally:
            self._buffer.clear()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
