# SPDX-License-Identifier: BSD-2-Clause
"""Host transports: 32-bit word reads and writes over the UARTBone byte protocol.

In DESIGN.md's data flow this is "transport (serial port, or a socket/pty into a running
simulation)": the device driver (:mod:`host_sw.driver`) calls :meth:`Transport.read_words`
/ :meth:`Transport.write_words`; every implementation encodes them with
:mod:`host_sw.uartbone` and moves the bytes over its link:

* :class:`SerialTransport` — pyserial ``serial_for_url`` (a UART, a pty path, ``loop://``,
  ``socket://``, ``rfc2217://`` …);
* :class:`SocketTransport` — TCP to a local socket carrying the bridge's bytes (a running
  two-device simulation exposes one per device);
* :class:`FakeTransport` — an in-memory :class:`~host_sw.fake_device.FakeDevice` (driver
  and CLI tests; fault injection).

:func:`open_transport` picks one from a URL (``docs/TRANSPORTS.md``).

Errors: a reply that does not arrive completely within the timeout is a
:class:`TransportTimeout`; bytes beyond the expected reply, or a mismatch between two reads
when ``verify`` is on, are a :class:`GarbledReply`. Either is retried (``retries`` times,
after a pause longer than the bridge's command timeout and discarding stale input) before
it is raised — a read returns the right words or raises, never a wrong number. UARTBone
has no checksum: a flipped bit inside a reply of the right length is only caught with
``verify=True`` (every read burst is read twice and compared), which a noisy link should
use.
"""

from __future__ import annotations

import socket
import time
from urllib.parse import parse_qsl, urlsplit

from . import uartbone

__all__ = ["TransportError", "TransportTimeout", "GarbledReply", "Transport",
           "ByteTransport", "SerialTransport", "SocketTransport", "FakeTransport",
           "open_transport", "register_fake_device", "parse_options"]


class TransportError(RuntimeError):
    """A bus access failed (after the configured retries)."""


class TransportTimeout(TransportError):
    """The device's reply did not arrive (completely) within the timeout."""


class GarbledReply(TransportError):
    """The reply had unexpected bytes, or two reads of the same words disagreed."""


class Transport:
    """The interface every transport implements (word addresses, 32-bit words)."""

    def read_words(self, address: int, n: int = 1, *, incrementing: bool = True) -> list[int]:
        """``n`` words from word ``address`` (``address, address + 1, …`` or the same
        address ``n`` times)."""
        raise NotImplementedError

    def write_words(self, address: int, words, *, incrementing: bool = True) -> None:
        """Write 32-bit ``words`` from word ``address``."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the link."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ByteTransport(Transport):
    """UARTBone over a byte link; subclasses provide :meth:`_send`, :meth:`_receive`,
    :meth:`_waiting` and :meth:`_discard_input`.

    Parameters
    ----------
    timeout : float
        Seconds to wait for a complete reply to one command.
    retries : int
        Further attempts after a timeout or garbled reply (0 = none).
    resync_delay : float
        Pause before a retry, longer than the bridge's command timeout, so it drops any
        half-received command.
    max_burst : int
        Words per command (1..255).
    verify : bool
        Read every burst twice and compare (catches corruption the protocol cannot see).
    name : str
        Shown in error messages (the URL).
    """

    def __init__(self, *, timeout: float = 1.0, retries: int = 2, resync_delay: float = 0.05,
                 max_burst: int = uartbone.MAX_BURST, verify: bool = False,
                 name: str = "device"):
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout}")
        if not (isinstance(retries, int) and retries >= 0):
            raise ValueError(f"retries must be a non-negative integer, not {retries!r}")
        if resync_delay < 0:
            raise ValueError(f"resync_delay must be non-negative, not {resync_delay}")
        if not 1 <= max_burst <= uartbone.MAX_BURST:
            raise ValueError(f"max_burst must be 1..{uartbone.MAX_BURST}, not {max_burst}")
        self.timeout = float(timeout)
        self.retries = retries
        self.resync_delay = float(resync_delay)
        self.max_burst = max_burst
        self.verify = bool(verify)
        self.name = name
        self.stats = {"commands": 0, "retries": 0, "bytes_sent": 0, "bytes_received": 0}

    # -- link primitives (subclasses) ----------------------------------------------------
    def _send(self, data: bytes) -> None:
        raise NotImplementedError

    def _receive(self, n: int, deadline: float) -> bytes:
        """Up to ``n`` bytes, waiting until ``deadline`` (``time.monotonic()``) at most."""
        raise NotImplementedError

    def _waiting(self) -> int:
        """Bytes already received and not yet read."""
        raise NotImplementedError

    def _discard_input(self) -> None:
        raise NotImplementedError

    # -- the interface -------------------------------------------------------------------
    def read_words(self, address: int, n: int = 1, *, incrementing: bool = True) -> list[int]:
        if n < 1:
            raise ValueError(f"a read needs at least one word, not {n}")
        out: list[int] = []
        done = 0
        while done < n:
            size = min(self.max_burst, n - done)
            a = address + done if incrementing else address
            out += self._with_retries(lambda: self._read_burst(a, size, incrementing),
                                      f"read of {size} word(s) at {a:#x}")
            done += size
        return out

    def write_words(self, address: int, words, *, incrementing: bool = True) -> None:
        data = uartbone.encode_write(address, list(words), incrementing=incrementing,
                                     max_burst=self.max_burst)
        try:
            self._send(data)
        except OSError as e:
            raise TransportError(f"{self.name}: cannot write {len(data)} bytes: {e}") from e
        self.stats["commands"] += 1
        self.stats["bytes_sent"] += len(data)

    # -- internals -----------------------------------------------------------------------
    def _with_retries(self, attempt, what: str):
        last = None
        for k in range(self.retries + 1):
            if k:
                self.stats["retries"] += 1
                time.sleep(self.resync_delay)
                self._discard_input()
            try:
                return attempt()
            except TransportError as e:
                last = e
        tries = self.retries + 1
        raise type(last)(f"{self.name}: {what} failed after {tries} attempt"
                         f"{'s' if tries > 1 else ''}: {last}") from last

    def _read_once(self, address: int, n: int, incrementing: bool) -> list[int]:
        request = uartbone.encode_read(address, n, incrementing=incrementing)
        expected = uartbone.read_reply_length(n)
        stale = self._waiting()
        if stale:
            self._discard_input()
        try:
            self._send(request)
        except OSError as e:
            raise TransportError(f"cannot send the command: {e}") from e
        self.stats["commands"] += 1
        self.stats["bytes_sent"] += len(request)
        deadline = time.monotonic() + self.timeout
        reply = self._receive(expected, deadline)
        self.stats["bytes_received"] += len(reply)
        if len(reply) < expected:
            raise TransportTimeout(f"got {len(reply)} of {expected} reply bytes within "
                                   f"{self.timeout:g} s")
        extra = self._waiting()
        if extra:
            raise GarbledReply(f"{extra} unexpected byte(s) after the {expected}-byte reply")
        return uartbone.decode_read_reply(reply, n)

    def _read_burst(self, address: int, n: int, incrementing: bool) -> list[int]:
        words = self._read_once(address, n, incrementing)
        if self.verify:
            again = self._read_once(address, n, incrementing)
            if again != words:
                bad = next(k for k in range(n) if again[k] != words[k])
                raise GarbledReply(f"two reads disagree at word {bad} "
                                   f"({words[bad]:#010x} vs {again[bad]:#010x})")
        return words


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
        import serial
        super().__init__(name=options.pop("name", url), **options)
        if baudrate < 1:
            raise ValueError(f"baudrate must be positive, not {baudrate}")
        try:
            self.port = serial.serial_for_url(url, baudrate=baudrate, timeout=0)
        except (serial.SerialException, ValueError, OSError) as e:
            raise TransportError(f"cannot open serial port {url!r}: {e}") from e

    def _send(self, data: bytes) -> None:
        self.port.write(data)
        self.port.flush()

    def _receive(self, n: int, deadline: float) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.port.read(n - len(out))
            if chunk:
                out += chunk
                continue
            if time.monotonic() >= deadline:
                break
            time.sleep(0.0005)
        return bytes(out)

    def _waiting(self) -> int:
        return self.port.in_waiting

    def _discard_input(self) -> None:
        self.port.reset_input_buffer()

    def close(self) -> None:
        self.port.close()


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


class FakeTransport(ByteTransport):
    """UARTBone bytes into an in-memory :class:`~host_sw.fake_device.FakeDevice`.

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


# ---------------------------------------------------------------------------------------
# URLs
# ---------------------------------------------------------------------------------------

_FAKE_DEVICES: dict[str, object] = {}
_OPTION_TYPES = {"timeout": float, "retries": int, "resync_delay": float, "max_burst": int,
                 "verify": lambda v: v.lower() in ("1", "true", "yes", "on")}


def register_fake_device(name: str, device) -> None:
    """Make ``fake://name`` open ``device`` (tests and demos); ``device=None`` removes."""
    if device is None:
        _FAKE_DEVICES.pop(name, None)
    else:
        _FAKE_DEVICES[name] = device


def parse_options(query: str) -> tuple[dict, list[tuple[str, str]]]:
    """Split a URL query into transport options and the rest."""
    ours, rest = {}, []
    for key, value in parse_qsl(query, keep_blank_values=True):
        k = key.replace("-", "_")
        if k in _OPTION_TYPES:
            try:
                ours[k] = _OPTION_TYPES[k](value)
            except ValueError:
                raise ValueError(f"bad value {value!r} for the {key} option") from None
        elif k in ("baud", "baudrate"):
            try:
                ours["baudrate"] = int(value)
            except ValueError:
                raise ValueError(f"bad baud rate {value!r}") from None
        else:
            rest.append((key, value))
    return ours, rest


def open_transport(url: str, **overrides) -> Transport:
    """Open the transport a device URL names.

    * ``fake://NAME`` — a device registered with :func:`register_fake_device`;
      ``fake://`` with ``?synopsis=lda|rda|lds`` — a fresh default-configured fake;
    * ``tcp://HOST:PORT`` — :class:`SocketTransport`;
    * anything else (``/dev/ttyUSB0?baud=921600``, ``loop://``, ``socket://…``,
      ``serial:///dev/ttyUSB0``) — :class:`SerialTransport`.

    Query options for all: ``timeout`` (s), ``retries``, ``resync_delay`` (s),
    ``max_burst``, ``verify``; serial: ``baud``. Keyword ``overrides`` win over the URL.
    """
    if not url:
        raise ValueError("empty device URL")
    base, _, query = url.partition("?")
    options, rest = parse_options(query)
    options.update({k: v for k, v in overrides.items() if v is not None})
    scheme = urlsplit(base).scheme if "://" in base else ""
    if scheme == "fake":
        options.pop("baudrate", None)
        name = base[len("fake://"):]
        if name:
            if name not in _FAKE_DEVICES:
                raise TransportError(f"no fake device {name!r} is registered")
            device = _FAKE_DEVICES[name]
        else:
            from .config import LdaConfig, LdsConfig, RdaConfig
            from .fake_device import FakeDevice
            kinds = {"lda": LdaConfig, "rda": RdaConfig, "lds": LdsConfig}
            kind = dict(rest).get("synopsis", "lda")
            if kind not in kinds:
                raise ValueError(f"fake://?synopsis= must be one of {sorted(kinds)}")
            device = FakeDevice(kinds[kind]())
        return FakeTransport(device, name=url, **options)
    if scheme == "tcp":
        options.pop("baudrate", None)
        parts = urlsplit(base)
        if not parts.hostname or not parts.port:
            raise ValueError(f"a TCP device URL is tcp://HOST:PORT, not {url!r}")
        return SocketTransport(parts.hostname, parts.port, name=url, **options)
    if scheme == "serial":
        base = base[len("serial://"):]
    if rest:
        base += "?" + "&".join(f"{k}={v}" for k, v in rest)
    return SerialTransport(base, name=url, **options)
