# SPDX-License-Identifier: BSD-2-Clause
"""The transport interface: 32-bit word reads and writes, and UARTBone over a byte link.

In ``docs/DESIGN.md``'s data flow this is the host end of "CSR register bank ◄── bus bridge
◄── UART / byte stream ◄── host": the device driver (:mod:`host_sw.device.driver`) calls
:meth:`Transport.read_words` / :meth:`Transport.write_words`; :class:`ByteTransport`
encodes them with :mod:`host_sw.contracts.uartbone` and moves the bytes through four link
hooks (``_send``, ``_receive``, ``_waiting``, ``_discard_input``) that each concrete link
provides: :mod:`host_sw.device.serial_transport`, :mod:`host_sw.device.socket_transport`,
:mod:`host_sw.device.fake_transport`, and the simulation's own in ``sim_tb``.
:mod:`host_sw.device.transport` opens one from a URL.

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

import time

from host_sw.contracts import uartbone

__all__ = ["TransportError", "TransportTimeout", "GarbledReply", "Transport", "ByteTransport"]


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
