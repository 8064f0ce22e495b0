# SPDX-License-Identifier: BSD-2-Clause
"""UARTBone over TCP: the link to a running simulation's bus bridge.

In ``docs/DESIGN.md``'s data flow this is the "socket into a running simulation" form of the
host's byte link: a simulation harness (``sim_tb.lib.socket_bridge``) or
:class:`host_sw.device.fake_device.DeviceServer` serves a core's bridge bytes on
``tcp://127.0.0.1:PORT``, and this implements the byte hooks of
:class:`~host_sw.device.transport_base.ByteTransport` over that connection (as LiteX's
``comm_udp.py`` does for Etherbone).
"""

from __future__ import annotations

import socket

from host_sw.device.transport_base import ByteTransport, LinkClosed, TransportError

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

    def _send(self, data: bytes) -> None:
        self.sock.settimeout(self.timeout)
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError) as e:
            raise LinkClosed(f"the connection failed: {e}") from e

    def _receive_some(self, deadline: float) -> bytes:
        left = deadline - self.clock.now()
        if left > 0:
            self.sock.settimeout(left)
        else:
            self.sock.setblocking(False)
        try:
            data = self.sock.recv(65536)
        except (BlockingIOError, socket.timeout):
            return b""
        except OSError as e:
            raise LinkClosed(f"the connection failed: {e}") from e
        if not data:
            raise LinkClosed("the device closed the connection")
        return data

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
