# SPDX-License-Identifier: BSD-2-Clause
"""UARTBone over a serial port: the link to a board (or a pty, ``loop://``, ``socket://``).

In ``docs/DESIGN.md``'s data flow this is the "UART" between the host and a board's bus
bridge (LiteX keeps the same link in ``litex/tools/remote/comm_uart.py``). It implements the
byte hooks of :class:`~host_sw.device.transport_base.ByteTransport` with pyserial's
``serial_for_url``; :func:`host_sw.device.transport.open_transport` makes one for any URL
that is not ``fake://`` or ``tcp://``.
"""

from __future__ import annotations

import serial

from host_sw.device.transport_base import ByteTransport, LinkClosed, TransportError

__all__ = ["SerialTransport"]


class SerialTransport(ByteTransport):
    """UARTBone over a pyserial port.

    Parameters
    ----------
    url : str
        Anything :func:`serial.serial_for_url` opens: a device path (``/dev/ttyUSB0``, a
        pty such as ``/dev/pts/5``), ``loop://``, ``socket://host:port``, ``rfc2217://…``.
    baudrate : int
        Line rate (default 115200).
    Other keyword arguments: :class:`ByteTransport`.
    """

    def __init__(self, url: str, *, baudrate: int = 115200, **options):
        super().__init__(name=options.pop("name", url), **options)
        if baudrate < 1:
            raise ValueError(f"baudrate must be positive, not {baudrate}")
        try:
            self.port = serial.serial_for_url(url, baudrate=baudrate, timeout=0)
        except (serial.SerialException, ValueError, OSError) as e:
            raise TransportError(f"cannot open serial port {url!r}: {e}") from e
        self.byte_time = 10.0 / baudrate      # start, 8 data, stop bits

    def _send(self, data: bytes) -> None:
        try:
            self.port.write(data)
            self.port.flush()
        except serial.SerialException as e:
            raise OSError(str(e)) from e

    def _receive_some(self, deadline: float) -> bytes:
        while True:
            try:
                waiting = self.port.in_waiting
                if waiting:
                    return self.port.read(waiting)
            except (serial.SerialException, OSError) as e:
                raise LinkClosed(f"the serial port failed: {e}") from e
            left = deadline - self.clock.now()
            if left <= 0:
                return b""
            self.clock.sleep(min(left, 0.0005))

    def close(self) -> None:
        self.port.close()
