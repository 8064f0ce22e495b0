# SPDX-License-Identifier: BSD-2-Clause
"""UARTBone bytes into an in-memory device, and the names ``fake://NAME`` URLs open.

In ``docs/DESIGN.md``'s data flow this replaces the whole "UART ► bus bridge ► CSR bank"
path by a :class:`~host_sw.device.fake_device.FakeDevice` (or anything with its
``feed``/``take``/``pending``/``reset_bridge`` bridge interface), so the driver and the CLI
are tested, with injected faults, without gateware. :class:`FakeDevices` is the table of
named devices that :func:`host_sw.device.transport.open_transport` looks ``fake://NAME`` up
in: pass one explicitly (``fakes=``), or register in the process-wide
:data:`FAKE_DEVICES` (what the CLI, which takes only URLs, sees).
"""

from __future__ import annotations

from host_sw.device.transport_base import ByteTransport, TransportError

__all__ = ["FakeTransport", "FakeDevices", "FAKE_DEVICES", "register_fake_device"]


class FakeTransport(ByteTransport):
    """UARTBone bytes into an in-memory :class:`~host_sw.device.fake_device.FakeDevice`.

    Replies are immediate, so a missing reply is a timeout without waiting; the default
    ``resync_delay`` is 0.
    """

    def __init__(self, device, **options):
        options.setdefault("resync_delay", 0.0)
        super().__init__(name=options.pop("name", "fake://"), **options)
        self.device = device
        self.sent = bytearray()   # every byte sent (protocol tests)

    def _send(self, data: bytes) -> None:
        self.sent += data
        self.device.feed(data)

    def _receive(self, n: int, deadline: float) -> bytes:
        return self.device.take(n)

    def _waiting(self) -> int:
        return self.device.pending

    def _discard_input(self) -> None:
        self.device.reset_bridge()


class FakeDevices:
    """In-memory devices by name, for ``fake://NAME`` URLs.

    Parameters
    ----------
    devices :
        Initial ``name=device`` entries.
    """

    def __init__(self, **devices):
        self._devices: dict[str, object] = dict(devices)

    def register(self, name: str, device) -> None:
        """Make ``fake://name`` open ``device``; ``device=None`` removes the name."""
        if device is None:
            self._devices.pop(name, None)
        else:
            self._devices[name] = device

    def __contains__(self, name: str) -> bool:
        return name in self._devices

    def lookup(self, name: str):
        """The device registered as ``name`` (a :class:`TransportError` if none is)."""
        if name not in self._devices:
            raise TransportError(f"no fake device {name!r} is registered")
        return self._devices[name]


#: The devices ``fake://NAME`` opens when no ``fakes=`` table is given (the CLI's URLs).
FAKE_DEVICES = FakeDevices()


def register_fake_device(name: str, device) -> None:
    """Make ``fake://name`` open ``device`` in :data:`FAKE_DEVICES` (tests and demos that
    run the CLI); ``device=None`` removes."""
    FAKE_DEVICES.register(name, device)
