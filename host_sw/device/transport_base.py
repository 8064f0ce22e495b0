# SPDX-License-Identifier: BSD-2-Clause
"""The transport interface: 32-bit word reads and writes, and UARTBone over a byte link.

In ``docs/DESIGN.md``'s data flow this is the host end of "CSR register bank ◄── bus bridge
◄── UART / byte stream ◄── host": the device driver (:mod:`host_sw.device.driver`) calls
:meth:`Transport.read_words` / :meth:`Transport.write_words`; :class:`ByteTransport`
encodes them with :mod:`host_sw.contracts.uartbone` and moves the bytes through two link
hooks (``_send`` and ``_receive_some``) that each concrete link provides:
:mod:`host_sw.device.serial_transport`, :mod:`host_sw.device.socket_transport`,
:mod:`host_sw.device.fake_transport`. :mod:`host_sw.device.transport` opens one from a URL.

By default (``framing="checked"``, the URL's ``?framing=checked``) every request carries a
new tag and a CRC and every reply echoes the tag under a CRC over tag and words (the
checked framing of :mod:`host_sw.contracts.uartbone`): a reply is taken only when it is
exactly its length, nothing more arrives within ``settle`` seconds, and tag and CRC are
its request's; anything else is discarded (resynchronisation, below) and the read retried.
Writes are one word per command, each acknowledged (tag and CRC) once done.

Plain UARTBone (``framing="plain"``, what LiteX's tools speak) replies carry no tag,
length or checksum, so the only thing that ties a reply to
its command is the byte stream's order. A reply is therefore accepted only when it is
exactly ``4 × length`` bytes, nothing more arrives within ``settle`` seconds after it, and
(once the driver has installed a probe, :meth:`ByteTransport.set_resync_probe`) a *fence*
word read in the same transmission — a known constant register — comes back where it
belongs, so a stray byte before a reply or a reply shifted by a late one is seen. After
any timeout, garbled or unexpected byte the link is *resynchronised* before the next
command: wait until the line has been quiet for longer than the longest reply plus the
bridge's half-command timeout (``bridge_timeout``, LiteX's 100 ms by default), discard what
came, read the probe registers (a length that changes from one probe to the next, so a
stale probe reply cannot pass for a new one) and compare; then retry. Writes are never
repeated: one whose sending failed is read back and compared (:class:`WriteUncertain` when
the read-back differs or is impossible). ``docs/TRUST.md`` states the fault model and the
figures.

Time comes from an injectable clock (``now()``, ``sleep(s)``): real links use
:class:`MonotonicClock`; the in-memory link runs on simulated time, so the fault tests
take no wall time.
"""

from __future__ import annotations

import time

from host_sw.contracts import uartbone

__all__ = ["TransportError", "TransportTimeout", "GarbledReply", "LinkClosed",
           "WriteUncertain", "Transport", "ByteTransport", "MonotonicClock",
           "DEFAULT_BRIDGE_TIMEOUT", "PROBE_TRIES", "FRAMINGS"]

FRAMINGS = uartbone.FRAMINGS

#: The bus bridge's half-command timeout the host assumes by default (LiteX's UARTBone).
DEFAULT_BRIDGE_TIMEOUT = 0.1
#: Probes one resynchronisation tries (each after a quiet line) before it fails.
PROBE_TRIES = 3


class TransportError(RuntimeError):
    """A bus access failed (after the configured retries)."""


class TransportTimeout(TransportError):
    """The device's reply did not arrive (completely) within the timeout."""


class GarbledReply(TransportError):
    """The reply had unexpected bytes, a misplaced fence word, a failed resynchronisation
    probe, or two reads of the same words disagreed."""


class LinkClosed(TransportError):
    """The link went away (connection closed); retrying cannot help."""


class WriteUncertain(TransportError):
    """Sending a write failed part-way and reading back could not confirm its effect."""


class MonotonicClock:
    """Wall time for real links (``time.monotonic``, ``time.sleep``)."""

    @staticmethod
    def now() -> float:
        return time.monotonic()

    @staticmethod
    def sleep(seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class Transport:
    """The interface every transport implements (word addresses, 32-bit words)."""

    def read_words(self, address: int, n: int = 1, *, incrementing: bool = True) -> list[int]:
        """``n`` words from word ``address`` (``address, address + 1, …`` or the same
        address ``n`` times)."""
        raise NotImplementedError

    def write_words(self, address: int, words, *, incrementing: bool = True) -> None:
        """Write 32-bit ``words`` from word ``address``."""
        raise NotImplementedError

    def set_resync_probe(self, address: int, words) -> None:
        """Known constant words from word ``address`` (the driver passes ID, VERSION and
        CONFIG once it has checked them): the link reads them to prove it is in step
        again after a fault. Transports without a byte stream ignore it."""

    def close(self) -> None:
        """Release the link."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _check_options(timeout, retries, resync_delay, max_burst, bridge_timeout, settle,
                   framing="checked"):
    if framing not in uartbone.FRAMINGS:
        raise ValueError(f"framing must be one of {', '.join(uartbone.FRAMINGS)}, not "
                         f"{framing!r}")
    if not timeout > 0:
        raise ValueError(f"timeout must be positive, not {timeout}")
    if not (isinstance(retries, int) and retries >= 0):
        raise ValueError(f"retries must be a non-negative integer, not {retries!r}")
    if not resync_delay >= 0:
        raise ValueError(f"resync_delay must be non-negative, not {resync_delay}")
    if not 1 <= max_burst <= uartbone.MAX_BURST:
        raise ValueError(f"max_burst must be 1..{uartbone.MAX_BURST}, not {max_burst}")
    if not bridge_timeout >= 0:
        raise ValueError(f"bridge_timeout must be non-negative, not {bridge_timeout}")
    if not settle >= 0:
        raise ValueError(f"settle must be non-negative, not {settle}")


class ByteTransport(Transport):
    """UARTBone over a byte link; subclasses provide :meth:`_send` and
    :meth:`_receive_some` (and set :attr:`byte_time` when the line has a rate).

    Parameters
    ----------
    timeout : float
        Seconds to wait for a complete reply to one command (plus the reply's time on the
        line at :attr:`byte_time`).
    retries : int
        Further attempts after a timeout or garbled reply (0 = none); each is preceded by
        a resynchronisation.
    resync_delay : float
        Margin added to the quiet time (:attr:`quiet_time`) a resynchronisation waits for.
    max_burst : int
        Words per command (1..255).
    verify : bool
        Read every burst twice and compare (catches a flipped bit, which no framing
        check can).
    bridge_timeout : float
        The bus bridge's half-command timeout in seconds (a quiet line longer than this
        has made it drop a partial command). The gateware's is about 100 ms, as LiteX's.
    settle : float
        Seconds after a complete reply during which nothing else may arrive (bytes that do
        make the reply suspect).
    quiet_limit : float, optional
        Give up resynchronising when the line has not been quiet for :attr:`quiet_time`
        within this many seconds (default: 10 quiet times, at least 2 s).
    fence : bool
        Once a probe is installed, follow every read burst by a one-word read of the first
        probe register in the same transmission and check it (about 10 bytes more per
        burst).
        Plain framing only (the checked framing's tags make it unnecessary).
    framing : str
        ``"checked"`` (default: tagged, CRC-checked requests and replies) or ``"plain"``
        (LiteX's UARTBone; the bridge answers both).
    clock :
        ``now()`` and ``sleep(s)`` (default :class:`MonotonicClock`).
    name : str
        Shown in error messages (the URL).
    """

    #: Seconds one byte takes on the line (a serial port: 10 bits at the baud rate).
    byte_time = 0.0

    def __init__(self, *, timeout: float = 1.0, retries: int = 2, resync_delay: float = 0.05,
                 max_burst: int = uartbone.MAX_BURST, verify: bool = False,
                 bridge_timeout: float = DEFAULT_BRIDGE_TIMEOUT, settle: float = 0.002,
                 quiet_limit: float | None = None, fence: bool = True,
                 framing: str = "checked", clock=None, name: str = "device"):
        _check_options(timeout, retries, resync_delay, max_burst, bridge_timeout, settle,
                       framing)
        self.framing = framing
        self._tag = 0
        self.timeout = float(timeout)
        self.retries = retries
        self.resync_delay = float(resync_delay)
        self.max_burst = max_burst
        self.verify = bool(verify)
        self.bridge_timeout = float(bridge_timeout)
        self.settle = float(settle)
        self._quiet_limit = quiet_limit
        self.fence = bool(fence)
        self.clock = clock if clock is not None else MonotonicClock()
        self.name = name
        self.stats = {"commands": 0, "retries": 0, "bytes_sent": 0, "bytes_received": 0,
                      "resyncs": 0, "discarded": 0, "rejected": 0}
        self._rx = bytearray()
        self._suspect = False          # a fault was seen: resynchronise before the next command
        self._probe: tuple[int, list[int]] | None = None
        self._probes = 0

    # -- link primitives (subclasses) ----------------------------------------------------
    def _send(self, data: bytes) -> None:
        """Send all of ``data`` (an ``OSError`` if the link refuses part of it)."""
        raise NotImplementedError

    def _receive_some(self, deadline: float) -> bytes:
        """The bytes received so far, waiting until at least one has arrived or the clock
        has reached ``deadline`` (then ``b""``); :class:`LinkClosed` if the link is
        gone. A deadline in the past polls."""
        raise NotImplementedError

    # -- timing --------------------------------------------------------------------------
    @property
    def quiet_time(self) -> float:
        """Seconds of silence after which no reply is still coming and the bridge holds no
        half command: the longest reply (255 words and a fence word) on the line, plus the
        bridge's timeout, plus ``resync_delay``."""
        longest = uartbone.read_reply_length(uartbone.MAX_BURST + 1)
        return self.bridge_timeout + longest * self.byte_time + self.resync_delay

    @property
    def quiet_limit(self) -> float:
        if self._quiet_limit is not None:
            return float(self._quiet_limit)
        return max(2.0, 10 * self.quiet_time)

    # -- the interface -------------------------------------------------------------------
    def set_resync_probe(self, address: int, words) -> None:
        words = [int(w) for w in words]
        if not 1 <= len(words) <= uartbone.MAX_BURST:
            raise ValueError(f"a probe is 1..{uartbone.MAX_BURST} words, not {len(words)}")
        uartbone.encode_read(address, len(words))        # validates the address range
        self._probe = (address, words)
        self._probes = 0

    def read_words(self, address: int, n: int = 1, *, incrementing: bool = True) -> list[int]:
        if n < 1:
            raise ValueError(f"a read needs at least one word, not {n}")
        uartbone.encode_read(address, n, incrementing=incrementing)   # validates
        out: list[int] = []
        done = 0
        while done < n:
            size = min(self.max_burst, n - done)
            a = address + done if incrementing else address
            out += self._attempts(lambda: self._read_burst(a, size, incrementing),
                                  f"read of {size} word(s) at {a:#x}")
            done += size
        return out

    def write_words(self, address: int, words, *, incrementing: bool = True) -> None:
        """Write ``words``; never repeated. If sending fails part-way the registers are
        read back: equal means done, anything else is :class:`WriteUncertain`."""
        words = [int(w) for w in words]
        data = uartbone.encode_write(address, words, incrementing=incrementing,
                                     max_burst=self.max_burst)
        what = f"write of {len(words)} word(s) at {address:#x}"
        if self.framing == "checked":
            for k, word in enumerate(words):
                self._write_checked(address + k if incrementing else address, word,
                                    incrementing, what)
            return
        self._attempts(lambda: None, what)      # resynchronise first if the line is suspect
        try:
            self._send_checked(data)
        except LinkClosed as e:
            raise LinkClosed(f"{self.name}: {what} failed: {e}") from e
        except TransportError as e:
            self._suspect = True
            self._confirm_write(address, words, incrementing, what, e)

    # -- internals -----------------------------------------------------------------------
    def _next_tag(self) -> int:
        """A new tag for every checked request (256 requests before one comes back)."""
        self._tag = (self._tag + 1) % (1 << uartbone.TAG_BITS)
        return self._tag

    def _write_checked(self, address: int, word: int, incrementing: bool, what: str) -> None:
        """One acknowledged word write; never repeated. Without its acknowledgement (lost,
        late, garbled, or the command not sent whole) the word is read back: equal means
        done, anything else is :class:`WriteUncertain`."""
        self._attempts(lambda: None, what)      # resynchronise first if the line is suspect
        tag = self._next_tag()
        try:
            self._send_checked(uartbone.encode_checked_write(address, word, tag))
            ack = self._take_reply(uartbone.checked_reply_length(0))
            try:
                uartbone.decode_checked_ack(ack, tag)
            except uartbone.BadReply as e:
                self.stats["rejected"] += 1
                raise GarbledReply(f"the write's acknowledgement: {e}") from e
        except LinkClosed as e:
            raise LinkClosed(f"{self.name}: {what} failed: {e}") from e
        except TransportError as e:
            self._suspect = True
            self._confirm_write(address, [word], True, what, e)   # one word: readable

    def _take_reply(self, expected: int) -> bytes:
        """Exactly ``expected`` reply bytes with nothing after them within ``settle``."""
        wait = self.timeout + expected * self.byte_time
        reply = self._receive(expected, self.clock.now() + wait)
        if len(reply) < expected:
            raise TransportTimeout(f"got {len(reply)} of {expected} reply bytes within "
                                   f"{wait:g} s")
        extra = self._settle()
        if extra:
            raise GarbledReply(f"{extra} unexpected byte(s) after the {expected}-byte reply")
        return reply

    def _exchange_checked(self, address: int, n: int, incrementing: bool) -> list[int]:
        """One checked read: a new tag, the reply's tag and CRC verified."""
        tag = self._next_tag()
        self._send_checked(uartbone.encode_checked_read(address, n, tag,
                                                        incrementing=incrementing))
        reply = self._take_reply(uartbone.checked_reply_length(n))
        try:
            return uartbone.decode_checked_reply(reply, tag, n)
        except uartbone.BadReply as e:
            self.stats["rejected"] += 1
            raise GarbledReply(str(e)) from e
    def _attempts(self, attempt, what: str):
        """``attempt()`` with resynchronisation before it when the line is suspect (a
        fault was seen, or bytes arrived unasked), retried after failures."""
        last = None
        tries = self.retries + 1
        for k in range(tries):
            if k:
                self.stats["retries"] += 1
            try:
                if self._suspect or self._stale():
                    self._resync()
                return attempt()
            except LinkClosed as e:
                raise LinkClosed(f"{self.name}: {what} failed: {e}") from e
            except TransportError as e:
                self._suspect = True
                last = e
        raise type(last)(f"{self.name}: {what} failed after {tries} attempt"
                         f"{'s' if tries > 1 else ''}: {last}") from last

    def _fill(self, deadline: float) -> int:
        data = self._receive_some(deadline)
        self._rx += data
        self.stats["bytes_received"] += len(data)
        return len(data)

    def _receive(self, n: int, deadline: float) -> bytes:
        """Up to ``n`` bytes, waiting until ``deadline`` at most."""
        while len(self._rx) < n and self._fill(deadline):
            pass
        out = bytes(self._rx[:n])
        del self._rx[:n]
        return out

    def _waiting(self) -> int:
        """Bytes received and not yet read (polls the link)."""
        self._fill(self.clock.now())
        return len(self._rx)

    def _discard_input(self) -> None:
        self.stats["discarded"] += len(self._rx)
        self._rx.clear()

    def _stale(self) -> bool:
        """Bytes that arrived while no command was outstanding: the line is out of step."""
        return self._waiting() > 0

    def _send_checked(self, data: bytes) -> None:
        try:
            self._send(data)
        except OSError as e:
            raise TransportError(f"cannot send {len(data)} bytes: {e}") from e
        self.stats["commands"] += 1
        self.stats["bytes_sent"] += len(data)

    def _resync(self) -> None:
        """Quiet line, nothing kept, probe registers read back right: in step again. A
        probe that fails has usually met the rest of a stale reply, which it has then
        drawn out: the line is waited quiet and probed again, :data:`PROBE_TRIES` times."""
        self.stats["resyncs"] += 1
        self._suspect = True
        for k in range(PROBE_TRIES):
            self._wait_quiet()
            if self._probe is None:
                break
            try:
                self._run_probe()
                break
            except LinkClosed:
                raise
            except TransportError:
                if k == PROBE_TRIES - 1:
                    raise
        self._suspect = False

    def _wait_quiet(self) -> None:
        quiet = self.quiet_time
        start = last = self.clock.now()
        limit = start + self.quiet_limit
        while True:
            until = last + quiet
            if until > limit:
                raise GarbledReply(f"the line did not stay quiet for {quiet:.3g} s within "
                                   f"{self.quiet_limit:.3g} s (the device keeps sending)")
            if not self._fill(until):
                break
            self._discard_input()
            last = self.clock.now()
        self._discard_input()

    def _settle(self) -> int:
        """Bytes that arrive within ``settle`` seconds after a reply (discarded)."""
        end = self.clock.now() + self.settle
        extra = len(self._rx)
        while self._fill(end):
            extra = len(self._rx)
            if self.clock.now() >= end:
                break
        self._discard_input()
        return extra

    def _run_probe(self) -> None:
        address, words = self._probe
        n = len(words) - self._probes % len(words)     # a new length each time
        self._probes += 1
        try:
            if self.framing == "checked":
                got = self._exchange_checked(address, n, True)
            else:
                got = self._exchange(uartbone.encode_read(address, n), n, fence=False)
        except TransportError as e:
            raise type(e)(f"resynchronising: {e}") from e
        if got != words[:n]:
            bad = next(k for k in range(n) if got[k] != words[k])
            raise GarbledReply(f"resynchronising: word {address + bad:#x} reads "
                               f"{got[bad]:#010x}, not its known {words[bad]:#010x}")

    def _exchange(self, request: bytes, n: int, *, fence: bool) -> list[int]:
        """Send ``request`` (a read of ``n`` words), take exactly its reply, check it."""
        fence = fence and self.fence and self._probe is not None
        if fence:
            request += uartbone.encode_read(self._probe[0], 1, incrementing=False)
        expected = uartbone.read_reply_length(n + fence)
        self._send_checked(request)
        reply = self._take_reply(expected)
        words = uartbone.decode_read_reply(reply, n + fence)
        if fence:
            known = self._probe[1][0]
            if words[-1] != known:
                raise GarbledReply(f"the fence word after the reply reads {words[-1]:#010x}, "
                                   f"not {known:#010x}: the reply is misaligned")
            words.pop()
        return words

    def _read_burst(self, address: int, n: int, incrementing: bool) -> list[int]:
        if self.framing == "checked":
            def exchange():
                return self._exchange_checked(address, n, incrementing)
        else:
            request = uartbone.encode_read(address, n, incrementing=incrementing)

            def exchange():
                return self._exchange(request, n, fence=True)
        words = exchange()
        if self.verify:
            again = exchange()
            if again != words:
                bad = next(k for k in range(n) if again[k] != words[k])
                raise GarbledReply(f"two reads disagree at word {bad} "
                                   f"({words[bad]:#010x} vs {again[bad]:#010x})")
        return words

    def _confirm_write(self, address, words, incrementing, what, error) -> None:
        """A write whose sending failed: read back, never repeat it."""
        head = f"{self.name}: {what}: sending failed ({error})"
        if not incrementing:
            raise WriteUncertain(f"{head}; a fixed-address write cannot be read back, its "
                                 f"effect is unknown") from error
        try:
            back = self.read_words(address, len(words))
        except TransportError as e:
            raise WriteUncertain(f"{head}, and reading back failed, its effect is unknown: "
                                 f"{e}") from e
        if back != words:
            bad = next(k for k in range(len(words)) if back[k] != words[k])
            raise WriteUncertain(f"{head}; word {address + bad:#x} reads back "
                                 f"{back[bad]:#010x}, not the written {words[bad]:#010x}: "
                                 f"the write's effect is unknown (it was not repeated)")
