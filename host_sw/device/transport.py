# SPDX-License-Identifier: BSD-2-Clause
"""Host transports: 32-bit word reads and writes over the UARTBone byte protocol.

In DESIGN.md's data flow this is "transport (serial port, or a socket/pty into a running
simulation)": the device driver (:mod:`host_sw.device.driver`) calls :meth:`Transport.read_words`
/ :meth:`Transport.write_words`; every implementation encodes them with
:mod:`host_sw.contracts.uartbone` and moves the bytes over its link:

* :class:`SerialTransport` — pyserial ``serial_for_url`` (a UART, a pty path, ``loop://``,
  ``socket://``, ``rfc2217://`` …);
* :class:`SocketTransport` — TCP to a local socket carrying the bridge's bytes (a running
  two-device simulation exposes one per device);
* :class:`FakeTransport` — an in-memory :class:`~host_sw.device.fake_device.FakeDevice` (driver
  and CLI tests; fault injection).

* :class:`OffsetTransport` — one core of several behind a shared link (a two-port
  board's :class:`boards.bus_router.UARTBoneRouter`): adds the core's word base to every
  address.

:func:`open_transport` picks one from a URL (``docs/TRANSPORTS.md``; ``?core=N`` or
``?core=NAME&csr_csv=FILE`` selects a core); :func:`open_transports` opens several and
shares a link that two of them name.

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

from host_sw.contracts import uartbone

__all__ = ["TransportError", "TransportTimeout", "GarbledReply", "Transport",
           "ByteTransport", "SerialTransport", "SocketTransport", "FakeTransport",
           "OffsetTransport", "ROUTER_CORE_STRIDE", "ROUTER_MAX_CORES", "CORE_KEYS",
           "open_transport", "open_transports", "core_word_base", "read_csr_bases",
           "register_fake_device", "parse_options"]


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


# ---------------------------------------------------------------------------------------
# One core of several on a link
# ---------------------------------------------------------------------------------------

#: Word-address stride of the cores behind :class:`boards.bus_router.UARTBoneRouter` as the
#: boards use it (``select_bit`` 20, ``boards.top.ROUTER_SELECT_BIT``): core ``k`` at word
#: base ``k << 20`` (byte base ``k << 22`` in ``csr.csv``).
ROUTER_CORE_STRIDE = 1 << 20
#: The router serves 2 or 4 cores.
ROUTER_MAX_CORES = 4
_M32 = (1 << 32) - 1


class OffsetTransport(Transport):
    """One core behind a shared bus: every word address is offset by the core's base.

    A two-port board's UART reaches two measurement cores through
    :class:`boards.bus_router.UARTBoneRouter` (core ``k`` at word base ``k × 0x100000``);
    the driver addresses registers from 0 in either, and this adds the core's base. Several
    of these may share one ``inner`` link (:func:`open_transports`).

    Parameters
    ----------
    inner : Transport
        The link (closed by :meth:`close`).
    word_base : int
        Word address of the core's address 0 (``csr_base`` / 4).
    byte_base : int
        The same as a byte address, as ``csr.csv`` lists it (a multiple of 4); give one of
        ``word_base`` and ``byte_base``.
    span : int, optional
        Words in the core's window: an access at or beyond it (it would reach the next
        core) is a ValueError. None: up to the end of the 32-bit word space.
    name : str
        Shown in error messages.
    """

    def __init__(self, inner: Transport, *, word_base: int | None = None,
                 byte_base: int | None = None, span: int | None = None,
                 name: str | None = None):
        if not isinstance(inner, Transport):
            raise ValueError(f"inner must be a Transport, not {type(inner).__name__}")
        if (word_base is None) == (byte_base is None):
            raise ValueError("give exactly one of word_base and byte_base")
        for what, v in (("word_base", word_base), ("byte_base", byte_base),
                        ("span", span)):
            if v is not None and not (isinstance(v, int) and not isinstance(v, bool)):
                raise ValueError(f"{what} must be an integer, not {v!r}")
        if byte_base is not None:
            word_base = _word_from_byte(byte_base, "byte_base")
        if word_base < 0:
            raise ValueError(f"word_base must be non-negative, not {word_base}")
        if word_base > _M32:
            raise ValueError(f"word_base {word_base:#x} is beyond the 32-bit word address "
                             f"space")
        if span is not None and not 1 <= span <= (_M32 + 1) - word_base:
            raise ValueError(f"span must be 1..{(_M32 + 1) - word_base} words, not {span}")
        self.inner = inner
        self.word_base = word_base
        self.span = span if span is not None else (_M32 + 1) - word_base
        self.name = name or f"{getattr(inner, 'name', 'device')} @ word {word_base:#x}"
        self._closed = False

    @property
    def byte_base(self) -> int:
        """The base as a byte address (``csr.csv``'s ``csr_base``)."""
        return self.word_base * 4

    def _absolute(self, address: int, n: int, incrementing: bool) -> int:
        if not (isinstance(address, int) and address >= 0):
            raise ValueError(f"word address must be a non-negative integer, not {address!r}")
        last = address + (n - 1 if incrementing else 0)
        if last >= self.span:
            raise ValueError(f"{self.name}: word {last:#x} is beyond this core's window of "
                             f"{self.span:#x} words (it would reach another core)")
        return self.word_base + address

    def read_words(self, address: int, n: int = 1, *, incrementing: bool = True) -> list[int]:
        return self.inner.read_words(self._absolute(address, max(n, 1), incrementing), n,
                                     incrementing=incrementing)

    def write_words(self, address: int, words, *, incrementing: bool = True) -> None:
        words = list(words)
        self.inner.write_words(self._absolute(address, max(len(words), 1), incrementing),
                               words, incrementing=incrementing)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.inner.close()


# ---------------------------------------------------------------------------------------
# Core bases
# ---------------------------------------------------------------------------------------

def _parse_int(text, what: str) -> int:
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    try:
        return int(str(text).replace("_", ""), 0)
    except ValueError:
        raise ValueError(f"{what} must be an integer (0x… allowed), not {text!r}") from None


def read_csr_bases(path) -> dict[str, int]:
    """The ``csr_base`` rows of a LiteX ``csr.csv`` (or the ``csr_bases`` of a
    ``csr.json``): ``{region name: byte base}``, lowest base first.

    A board build (``boards.top.write_csr_exports``) lists one region per measurement core
    (``port0_to_port1,0x00000000``, ``port1_to_port0,0x00400000``).
    """
    from pathlib import Path

    from host_sw.contracts.regmap import parse_csr_csv, parse_csr_json
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        if path.suffix == ".json":
            d = parse_csr_json(text)
        else:
            d = parse_csr_csv(text)
        bases = {str(k): int(v) for k, v in d.get("csr_bases", {}).items()}
    except (ValueError, TypeError, AttributeError) as e:
        raise ValueError(f"{path} is not a LiteX csr.csv/csr.json: {e}") from None
    if not bases:
        raise ValueError(f"{path} has no csr_base row")
    return dict(sorted(bases.items(), key=lambda kv: (kv[1], kv[0])))


def core_word_base(core=None, *, csr_base=None, csr_csv=None) -> tuple[int, int | None]:
    """The word base (and the window in words, or None) of one core on a shared link.

    Parameters
    ----------
    core : int or str, optional
        A core index, or (with ``csr_csv``) a region name. Without ``csr_csv`` index ``k``
        is :class:`boards.bus_router.UARTBoneRouter`'s layout: word base
        ``k × ROUTER_CORE_STRIDE`` (``0x100000``; byte base ``k × 0x400000``), window one
        stride. With ``csr_csv`` it is the ``k``-th ``csr_base`` by address, a name is
        looked up, and the window reaches the next base.
    csr_base : int or str, optional
        A byte base as ``csr.csv`` lists it (a multiple of 4); no window limit.
    csr_csv : path, optional
        The board's ``csr.csv`` (or ``csr.json``).

    Returns ``(0, None)`` when neither ``core`` nor ``csr_base`` is given.
    """
    if core is not None and csr_base is not None:
        raise ValueError("give a core or a csr_base, not both")
    if csr_base is not None:
        byte = _parse_int(csr_base, "csr_base")
        return _word_from_byte(byte, "csr_base"), None
    if core is None or (isinstance(core, str) and core == ""):
        return 0, None
    index = None
    if isinstance(core, int) and not isinstance(core, bool):
        index = core
    elif isinstance(core, str) and core.strip().lstrip("+-").isdigit():
        index = int(core)
    if csr_csv is None:
        if index is None:
            raise ValueError(f"core {core!r} is a name: give the board's csr.csv "
                             f"(--csr-csv FILE or csr_csv=FILE) to look it up, or an index")
        if not 0 <= index < ROUTER_MAX_CORES:
            raise ValueError(f"core must be 0..{ROUTER_MAX_CORES - 1} (a UARTBoneRouter "
                             f"serves at most {ROUTER_MAX_CORES} cores), not {index}")
        return index * ROUTER_CORE_STRIDE, ROUTER_CORE_STRIDE
    bases = read_csr_bases(csr_csv)
    names = list(bases)
    listing = ", ".join(f"{n} ({b:#010x})" for n, b in bases.items())
    if index is not None:
        if not 0 <= index < len(names):
            raise ValueError(f"core {index} is not in {csr_csv}: it lists {len(names)} "
                             f"core(s): {listing}")
        name = names[index]
    elif core in bases:
        name = core
    else:
        raise ValueError(f"no core {core!r} in {csr_csv}; its cores: {listing}")
    k = names.index(name)
    word = _word_from_byte(bases[name], f"the csr_base of {name} in {csr_csv}")
    span = None
    if k + 1 < len(names) and bases[names[k + 1]] > bases[name]:
        span = (bases[names[k + 1]] - bases[name]) // 4
    return word, span


def _word_from_byte(byte: int, what: str) -> int:
    if byte < 0:
        raise ValueError(f"{what} must be non-negative, not {byte}")
    if byte % 4:
        raise ValueError(f"{what} must be a multiple of 4 (the byte address of a 32-bit "
                         f"word), not {byte:#x}")
    if byte >> 2 > _M32:
        raise ValueError(f"{what} {byte:#x} is beyond the 32-bit word address space")
    return byte >> 2


class _SharedLink(Transport):
    """One open link used by several :class:`OffsetTransport`\\ s; closed with the last."""

    def __init__(self, inner: Transport, users: int):
        self.inner = inner
        self.users = users

    def read_words(self, address, n=1, *, incrementing=True):
        return self.inner.read_words(address, n, incrementing=incrementing)

    def write_words(self, address, words, *, incrementing=True):
        self.inner.write_words(address, words, incrementing=incrementing)

    def close(self) -> None:
        self.users -= 1
        if self.users == 0:
            self.inner.close()


# ---------------------------------------------------------------------------------------
# URLs
# ---------------------------------------------------------------------------------------

_FAKE_DEVICES: dict[str, object] = {}
_OPTION_TYPES = {"timeout": float, "retries": int, "resync_delay": float, "max_burst": int,
                 "verify": lambda v: v.lower() in ("1", "true", "yes", "on")}
#: URL query keys that select a core on the link (not link options).
CORE_KEYS = ("core", "csr_base", "csr_csv")


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


def _split_url(url: str, core, csr_csv):
    """(link base, link options, other query items, core selection dict) of one URL;
    ``core``/``csr_csv`` from the command line must agree with the URL's."""
    if not url:
        raise ValueError("empty device URL")
    base, _, query = url.partition("?")
    options, rest = parse_options(query)
    select, other = {}, []
    for key, value in rest:
        k = key.replace("-", "_")
        if k in CORE_KEYS:
            if k in select and select[k] != value:
                raise ValueError(f"the URL gives {key} twice ({select[k]!r}, {value!r})")
            select[k] = value
        else:
            other.append((key, value))
    for k, given in (("core", core), ("csr_csv", csr_csv)):
        if given is None:
            continue
        given = str(given)
        if k in select and select[k] != given:
            raise ValueError(f"the URL selects {k}={select[k]} and the command line "
                             f"{k}={given}: give one")
        select[k] = given
    if base.startswith("serial://"):
        base = base[len("serial://"):]
    return base, options, other, select


def _open_link(base: str, options: dict, rest: list, name: str) -> Transport:
    scheme = urlsplit(base).scheme if "://" in base else ""
    if scheme == "fake":
        options.pop("baudrate", None)
        fake_name = base[len("fake://"):]
        if fake_name:
            if fake_name not in _FAKE_DEVICES:
                raise TransportError(f"no fake device {fake_name!r} is registered")
            device = _FAKE_DEVICES[fake_name]
        else:
            from host_sw.contracts.config import LdaConfig, LdsConfig, RdaConfig
            from host_sw.device.fake_device import FakeDevice
            kinds = {"lda": LdaConfig, "rda": RdaConfig, "lds": LdsConfig}
            kind = dict(rest).get("synopsis", "lda")
            if kind not in kinds:
                raise ValueError(f"fake://?synopsis= must be one of {sorted(kinds)}")
            device = FakeDevice(kinds[kind]())
        return FakeTransport(device, name=name, **options)
    if scheme == "tcp":
        options.pop("baudrate", None)
        parts = urlsplit(base)
        if not parts.hostname or not parts.port:
            raise ValueError(f"a TCP device URL is tcp://HOST:PORT, not {name!r}")
        return SocketTransport(parts.hostname, parts.port, name=name, **options)
    if rest:
        base += "?" + "&".join(f"{k}={v}" for k, v in rest)
    return SerialTransport(base, name=name, **options)


def open_transports(urls, *, cores=None, csr_csv=None, **overrides) -> list[Transport]:
    """Open several devices' transports; URLs that name the same link share it.

    Each URL is opened as :func:`open_transport` does. When two of them name the same
    link (``/dev/ttyUSB0?core=0`` and ``serial:///dev/ttyUSB0?core=1``: two cores behind
    one UART), the link is opened once and each gets an :class:`OffsetTransport` on it;
    the link is closed when the last of them is. This is safe because every access is one
    command and its complete reply (the router answers in order), and the host issues one
    at a time. A fresh ``fake://?synopsis=…`` is never shared.

    Parameters
    ----------
    urls : sequence of str
    cores : sequence, optional
        A core (index or name) per URL, or None; must agree with a ``core=`` in the URL.
    csr_csv : path, optional
        The board's ``csr.csv`` for every URL (core names and bases).
    overrides :
        Link options that win over the URLs' (``timeout``, ``retries``, …; None ignored).

    Raises ``ValueError`` for a bad URL or core, for two URLs that name the same link
    with different link options, and for two URLs that name the same core.
    """
    urls = list(urls)
    cores = list(cores) if cores is not None else [None] * len(urls)
    if len(cores) != len(urls):
        raise ValueError(f"{len(cores)} cores for {len(urls)} URLs")
    plans = []
    for k, (url, core) in enumerate(zip(urls, cores)):
        base, options, rest, select = _split_url(url, core, csr_csv)
        options.update({o: v for o, v in overrides.items() if v is not None})
        word_base, span = core_word_base(select.get("core"), csr_base=select.get("csr_base"),
                                         csr_csv=select.get("csr_csv"))
        fresh = base.rstrip("/") == "fake:"
        link_key = ("fresh", k) if fresh else (base, tuple(sorted(rest)))
        plans.append((url, link_key, options, rest, word_base, span, bool(select)))
    links: dict = {}
    for url, key, options, rest, word_base, span, _ in plans:
        if key in links:
            first_url, first_options, bases = links[key]
            if options != first_options:
                raise ValueError(f"{first_url!r} and {url!r} name the same link with "
                                 f"different options ({first_options} vs {options})")
            if word_base in bases:
                raise ValueError(f"{first_url!r} and {url!r} name the same core (word base "
                                 f"{word_base:#x}) of the same link")
            bases.append(word_base)
        else:
            links[key] = (url, options, [word_base])
    opened: dict = {}
    out: list[Transport] = []
    try:
        for url, key, options, rest, word_base, span, selected in plans:
            users = len(links[key][2])
            if key not in opened:
                link_name = links[key][0] if users == 1 else links[key][0].partition("?")[0]
                inner = _open_link(key[0] if key[0] != "fresh" else "fake://",
                                   dict(options), rest, link_name)
                opened[key] = _SharedLink(inner, users) if users > 1 else inner
            link = opened[key]
            if users > 1 or selected:
                out.append(OffsetTransport(link, word_base=word_base, span=span, name=url))
            else:
                out.append(link)
    except BaseException:
        for link in opened.values():
            getattr(link, "inner", link).close()
        raise
    return out


def open_transport(url: str, *, core=None, csr_csv=None, **overrides) -> Transport:
    """Open the transport a device URL names.

    * ``fake://NAME`` — a device registered with :func:`register_fake_device`;
      ``fake://`` with ``?synopsis=lda|rda|lds`` — a fresh default-configured fake;
    * ``tcp://HOST:PORT`` — :class:`SocketTransport`;
    * anything else (``/dev/ttyUSB0?baud=921600``, ``loop://``, ``socket://…``,
      ``serial:///dev/ttyUSB0``) — :class:`SerialTransport`.

    Query options for all: ``timeout`` (s), ``retries``, ``resync_delay`` (s),
    ``max_burst``, ``verify``; serial: ``baud``. Keyword ``overrides`` win over the URL.

    A core behind a shared bus (``docs/TRANSPORTS.md``): ``core=N`` (index; word base
    ``N × 0x100000`` as :class:`boards.bus_router.UARTBoneRouter` lays them out, or the
    ``N``-th ``csr_base`` of ``csr_csv``), ``core=NAME`` with ``csr_csv=FILE`` (the
    board's ``csr.csv`` region), or ``csr_base=0x400000`` (a byte base). The ``core`` and
    ``csr_csv`` arguments are the same as those keys (they must agree with the URL's).
    With any of them the result is an :class:`OffsetTransport`.
    """
    return open_transports([url], cores=[core], csr_csv=csr_csv, **overrides)[0]
