# SPDX-License-Identifier: BSD-2-Clause
"""UARTBone bytes into an in-memory device over a scripted line, on simulated time; and
the names ``fake://NAME`` URLs open.

In ``docs/DESIGN.md``'s data flow this replaces the whole "UART ► bus bridge ► CSR bank"
path by a :class:`~host_sw.device.fake_device.FakeDevice` (or anything with its
``feed``/``take``/``reset_bridge`` bridge interface), so the driver and the CLI are tested
without gateware. The device's own faults (:meth:`FakeDevice.inject`) garble reply bytes;
the line's (:class:`ScriptedLine`, one :class:`ReplyPlan` per host transmission) make
replies late, split them in pieces, add junk before / inside / after them, lose them, cut
a command short or close the connection, on a :class:`SimClock`, so the transport's
timeouts and resynchronisation (``docs/TRUST.md``) are tested without wall time.
:class:`FakeDevices` is the table of named devices that
:func:`host_sw.device.transport.open_transport` looks ``fake://NAME`` up in: pass one
explicitly (``fakes=``), or register in the process-wide :data:`FAKE_DEVICES` (what the
CLI, which takes only URLs, sees).
"""

from __future__ import annotations

from dataclasses import dataclass

from host_sw.device.transport_base import (DEFAULT_BRIDGE_TIMEOUT, ByteTransport, LinkClosed,
                                           TransportError)

__all__ = ["FakeTransport", "FakeDevices", "FAKE_DEVICES", "register_fake_device",
           "SimClock", "ReplyPlan", "ScriptedLine", "random_reply_plan", "random_fault_plan"]


class SimClock:
    """Simulated time: ``sleep`` only advances ``now`` (no wall time passes)."""

    def __init__(self, start: float = 0.0):
        self.t = float(start)

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.t += seconds

    def advance_to(self, t: float) -> None:
        self.t = max(self.t, t)


@dataclass(frozen=True)
class ReplyPlan:
    """How the line delivers the reply to one transmission (all times in seconds).

    Attributes
    ----------
    delay : float
        Before the first byte (a late reply when beyond the host's timeout).
    cuts : tuple of (int, float)
        The reply arrives in pieces: at each byte offset, a gap of that many seconds.
    junk_before, junk_after : bytes
        Stray bytes before the reply / after it (``junk_after_delay`` later).
    junk_inside : (int, bytes) or None
        Stray bytes inserted at a byte offset of the reply.
    drop : bool
        No reply at all.
    send_cut : int or None
        Only this many of the transmission's bytes reach the device, and sending fails
        (an ``OSError`` for the host).
    close : bool
        The connection closes instead (every later access fails).
    flips : tuple of (int, int)
        Bit errors on the line: at each byte offset of the reply, the bits of the mask
        inverted.
    """
    delay: float = 0.0
    cuts: tuple = ()
    junk_before: bytes = b""
    junk_inside: tuple | None = None
    junk_after: bytes = b""
    junk_after_delay: float = 0.0
    drop: bool = False
    send_cut: int | None = None
    close: bool = False
    flips: tuple = ()


class ScriptedLine:
    """A line that delivers replies by a script of :class:`ReplyPlan` (one per
    transmission, in order; plain delivery once the script runs out). Replies stay in
    order, as a bridge sends them: a late one holds back those after it."""

    def __init__(self, plans=()):
        self.plans = list(plans)
        self.used = 0          # transmissions delivered
        self.faulty = 0        # of which by a plan that is not plain delivery

    def next_plan(self) -> ReplyPlan:
        plan = self.plans.pop(0) if self.plans else ReplyPlan()
        self.used += 1
        self.faulty += plan != ReplyPlan()
        return plan

    @staticmethod
    def schedule(plan: ReplyPlan, reply: bytes, start: float) -> list[tuple[float, bytes]]:
        """Arrival times of the bytes of ``reply`` (and the junk) from ``start`` on."""
        if plan.drop:
            return [(start, plan.junk_before)] if plan.junk_before else []
        body = bytearray(reply)
        for at, mask in plan.flips:
            if body:
                body[min(max(0, at), len(body) - 1)] ^= mask & 0xFF
        if plan.junk_inside is not None:
            at, junk = plan.junk_inside
            at = min(max(0, at), len(body))
            body[at:at] = junk
        t = start + plan.delay
        out = [(t, plan.junk_before)] if plan.junk_before else []
        offset = 0
        for at, gap in sorted(plan.cuts):
            at = min(max(offset, at), len(body))
            out.append((t, bytes(body[offset:at])))
            offset, t = at, t + gap
        out.append((t, bytes(body[offset:])))
        if plan.junk_after:
            out.append((t + plan.junk_after_delay, plan.junk_after))
        return [(when, data) for when, data in out if data]


#: Delays and gaps (in host timeouts) that random plans pick from: on time, just inside,
#: just beyond and far beyond the timeout.
_LATENESS = (0.0, 0.001, 0.5, 0.99, 1.1, 1.3, 3.0)
_GAPS = (0.0005, 0.005, 0.016, 0.3, 1.1)


def random_reply_plan(rng, *, timeout: float = 1.0, fault_rate: float = 0.3,
                      close_rate: float = 0.0) -> ReplyPlan:
    """A random :class:`ReplyPlan` (``rng``: a :class:`random.Random`): with probability
    ``fault_rate`` some mix of lateness, pieces, junk before/inside/after, a lost reply or
    a half-sent command; with ``close_rate`` a closed connection."""
    if rng.random() < close_rate:
        return ReplyPlan(close=True)
    if rng.random() >= fault_rate:
        return ReplyPlan()

    def junk() -> bytes:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 3)))

    def maybe(p: float) -> bool:
        return rng.random() < p

    return ReplyPlan(
        delay=timeout * rng.choice(_LATENESS) if maybe(0.4) else 0.0,
        cuts=tuple((rng.randrange(1100), timeout * rng.choice(_GAPS))
                   for _ in range(rng.randint(1, 3))) if maybe(0.4) else (),
        junk_before=junk() if maybe(0.25) else b"",
        junk_inside=(rng.randrange(1100), junk()) if maybe(0.2) else None,
        junk_after=junk() if maybe(0.25) else b"",
        junk_after_delay=timeout * rng.choice(_LATENESS),
        drop=maybe(0.1),
        send_cut=rng.randrange(20) if maybe(0.08) else None)


def random_fault_plan(rng, *, timeout: float = 1.0) -> ReplyPlan:
    """A random :class:`ReplyPlan` that is always faulty: one to three of lateness (up to
    three timeouts), pieces, junk before / inside / after, a lost reply, a half-sent
    command, and bit flips (one to three bits, anywhere in the reply)."""
    kinds = rng.sample(("late", "split", "junk_before", "junk_inside", "junk_after", "drop",
                        "send_cut", "flip"), rng.randint(1, 3))

    def junk() -> bytes:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 3)))

    return ReplyPlan(
        delay=timeout * rng.choice(_LATENESS) if "late" in kinds else 0.0,
        cuts=tuple((rng.randrange(40), timeout * rng.choice(_GAPS))
                   for _ in range(rng.randint(1, 3))) if "split" in kinds else (),
        junk_before=junk() if "junk_before" in kinds else b"",
        junk_inside=(rng.randrange(40), junk()) if "junk_inside" in kinds else None,
        junk_after=junk() if "junk_after" in kinds else b"",
        junk_after_delay=timeout * rng.choice(_LATENESS),
        drop="drop" in kinds,
        send_cut=rng.randrange(14) if "send_cut" in kinds else None,
        flips=tuple((rng.randrange(40), 1 << rng.randrange(8))
                    for _ in range(rng.randint(1, 3))) if "flip" in kinds else ())


class FakeTransport(ByteTransport):
    """UARTBone bytes into an in-memory :class:`~host_sw.device.fake_device.FakeDevice`,
    on simulated time.

    Replies are immediate unless a ``line`` (:class:`ScriptedLine`) delays, splits,
    garbles or drops them; the clock is a :class:`SimClock` unless one is given, so
    timeouts and resynchronisation cost no wall time. The device drops a half command
    when nothing has been sent to it for ``device_bridge_timeout`` seconds, as the
    gateware bridge does.
    """

    def __init__(self, device, *, line: ScriptedLine | None = None,
                 device_bridge_timeout: float = DEFAULT_BRIDGE_TIMEOUT, **options):
        options.setdefault("clock", SimClock())
        super().__init__(name=options.pop("name", "fake://"), **options)
        self.device = device
        self.line = line if line is not None else ScriptedLine()
        self.device_bridge_timeout = device_bridge_timeout
        self.sent = bytearray()   # every byte sent (protocol tests)
        self.closed = False
        self._arrivals: list[tuple[float, bytes]] = []
        self._last_send = -float("inf")
        self._line_free = 0.0     # when the line has sent every scheduled byte

    def _send(self, data: bytes) -> None:
        if self.closed:
            raise LinkClosed("the device closed the connection")
        plan = self.line.next_plan()
        now = self.clock.now()
        if plan.close:
            self.closed = True
            raise LinkClosed("the device closed the connection")
        if now - self._last_send > self.device_bridge_timeout:
            self.device.reset_bridge()          # the bridge dropped a half command
        self._last_send = now
        given = data if plan.send_cut is None else data[:plan.send_cut]
        self.sent += given
        self.device.feed(given)
        reply = self.device.take()
        if reply or plan.junk_before:
            arrivals = ScriptedLine.schedule(plan, reply, max(now, self._line_free))
            self._arrivals += arrivals
            self._arrivals.sort(key=lambda a: a[0])
            if arrivals:
                self._line_free = max(self._line_free, max(t for t, _ in arrivals))
        if plan.send_cut is not None:
            raise OSError(f"the link took {len(given)} of {len(data)} bytes")

    def _receive_some(self, deadline: float) -> bytes:
        if self.closed:
            raise LinkClosed("the device closed the connection")
        now = self.clock.now()
        if self._arrivals and self._arrivals[0][0] <= max(now, deadline):
            self.clock.advance_to(self._arrivals[0][0])
            now = self.clock.now()
            out = bytearray()
            while self._arrivals and self._arrivals[0][0] <= now:
                out += self._arrivals.pop(0)[1]
            return bytes(out)
        self.clock.advance_to(deadline)
        return b""


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
