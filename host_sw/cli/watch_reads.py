# SPDX-License-Identifier: BSD-2-Clause
"""One device's side of ``ldactl watch``: read an interval's snapshot with bounded retries,
release it (or the copy that could not be read) safely, and end intervals from the host.

In the host data flow (``docs/DESIGN.md``) this sits between the device driver
(:class:`~host_sw.device.driver.Device`, whose public API it uses) and the pairing of
``watch`` (:mod:`host_sw.cli.watch`). Why it exists: a monitoring run must outlive a
transient fault. A failure of the bus (:class:`~host_sw.device.transport_base.TransportError`,
after the transport's own retries) or of a snapshot's checks
(:class:`~host_sw.device.driver.SnapshotError`) is retried a few times with a short,
doubling back-off — never past the device's next interval boundary when its interval
length is known (time mode), because past it the frozen copy would make the next interval
an overrun. Snapshots are read without releasing them, so that ``watch`` releases both
points' copies only once both have been read (or given up). Writes whose effect is
unknown (a swap or release whose reply was lost) are retried only after reading back that
they did not take effect. Other errors (the device is another build, a configuration
mismatch) are not caught here: they end the run.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

from host_sw.contracts.frames.frame_format import IntervalFlags
from host_sw.device.driver import Device, SnapshotError
from host_sw.device.snapshot import Snapshot
from host_sw.device.transport_base import TransportError

__all__ = ["TRANSIENT_ERRORS", "RetryPolicy", "ReadOutcome", "PointReader",
           "RLI_FROZEN_REGISTERS"]

#: Failures of one read that a later attempt may not have.
TRANSIENT_ERRORS = (TransportError, SnapshotError)
#: Fraction of a known interval length that retries may use (the rest is margin before
#: the next boundary).
_BOUNDARY_MARGIN = 0.8
#: The longest pause between two attempts, s.
_MAX_PAUSE = 1.0
#: The driver's note on a sequence number that skipped since its last snapshot.
_HOST_GAP_NOTE = "sequence gap:"
#: An RLI receiver's registers of the frozen interval (docs/SPEC.md "RLI", "Receiver
#: interval"): references taken, data frames overflowed and unreferenced, references
#: refused.
RLI_FROZEN_REGISTERS = ("rli_frozen_references", "rli_frozen_overflowed",
                        "rli_frozen_unreferenced", "rli_frozen_refused")


@dataclass(frozen=True)
class RetryPolicy:
    """How hard one point's interval is tried.

    attempts : reads of one interval (1 = no retry).
    delay : seconds before the second attempt; doubled before each further one.
    wait : seconds to wait, in all, for the device to freeze an interval.
    """
    attempts: int = 3
    delay: float = 0.05
    wait: float = 60.0
    sleep: object = time.sleep
    clock: object = time.monotonic

    def pause(self, k: int) -> float:
        """Seconds before attempt ``k + 2``."""
        return min(self.delay * 2 ** k, _MAX_PAUSE)


@dataclass
class ReadOutcome:
    """What one point gave of one interval: its snapshot, or why there is none."""
    snapshot: Snapshot | None = None
    reason: str | None = None
    attempts: int = 0
    errors: list = field(default_factory=list)
    #: The frozen copy's sequence number when the snapshot could not be read but the copy
    #: was seen (found when releasing it).
    seq: int | None = None
    #: What became of the frozen copy (``released``, ``released unread``, …).
    release: str | None = None
    #: The sequence number of a copy read again: one that already has its row (it
    #: could not be released then); it is no snapshot of this interval.
    stale_seq: int | None = None
    stale_snapshot: Snapshot | None = None
    #: An RLI receiver's per-interval registers of the frozen copy read
    #: (:data:`RLI_FROZEN_REGISTERS`, without the ``rli_frozen_`` prefix), or None.
    rli: dict | None = None

    def set_stale(self) -> None:
        """Mark the snapshot read as a copy that already has its row."""
        self.stale_seq = self.snapshot.seq
        self.stale_snapshot, self.snapshot = self.snapshot, None
        self.reason = (f"read interval {self.stale_seq} again (its row is above; it could "
                       f"not be released then): this interval was merged into the next "
                       f"(an overrun)")

    @property
    def ok(self) -> bool:
        return self.snapshot is not None

    def meta(self) -> dict:
        """What a record keeps of how the read went (beside :func:`snapshot_meta`)."""
        read = "ok" if self.ok else "stale" if self.stale_seq is not None else "failed"
        d = {"read": read, "attempts": self.attempts}
        if self.stale_seq is not None:
            d["stale_seq"] = self.stale_seq
        if self.errors:
            d["errors"] = list(self.errors)
        if self.release:
            d["release"] = self.release
        return d


class PointReader:
    """One device's intervals, read with the :class:`RetryPolicy`.

    Parameters
    ----------
    device : Device
    policy : RetryPolicy
    """

    def __init__(self, device: Device, policy: RetryPolicy):
        self.device = device
        self.policy = policy
        self.interval_s = self._interval_seconds()
        #: The sequence number of this point's last interval that ``watch`` has a row
        #: for (read or not); set by the caller.
        self.last_seq: int | None = None

    def _interval_seconds(self) -> float | None:
        """The interval length in seconds when the device ends intervals by its timer
        (time mode), else None (boundaries from markers or the host: not known)."""
        try:
            if self.device.read_fields("interval_mode")["mode"] != 1:
                return None
            ticks = self.device.read("interval_ticks")
        except (TransportError, KeyError):
            return None
        return ticks * self.device.config.tick_ns * 1e-9 if ticks else None

    def _attempt_bus(self, action, what: str):
        """``action()`` with the policy's attempts on transport errors; (result, error)."""
        error = None
        for k in range(self.policy.attempts):
            try:
                return action(), None
            except TransportError as e:
                error = f"{what}: {e}"
                if k + 1 < self.policy.attempts:
                    self.policy.sleep(self.policy.pause(k))
        return None, error

    def swap(self) -> str | None:
        """End the current interval (manual mode); None, or why it could not be done.
        A swap whose reply was lost is repeated only when INTERVAL_SEQ shows it did not
        take effect."""
        before, error = self._attempt_bus(lambda: self.device.read("interval_seq"),
                                          "reading INTERVAL_SEQ before the swap")
        if error:
            return error
        for k in range(self.policy.attempts):
            try:
                self.device.swap()
                return None
            except TransportError as e:
                error = f"swap: {e}"
            after, read_error = self._attempt_bus(lambda: self.device.read("interval_seq"),
                                                  "reading INTERVAL_SEQ after the swap")
            if read_error:
                return f"{error}; {read_error}"
            if after != before:
                return None
            if k + 1 < self.policy.attempts:
                self.policy.sleep(self.policy.pause(k))
        return error

    def read(self) -> ReadOutcome:
        """The frozen interval's snapshot, not released; transient failures retried."""
        p = self.policy
        start = p.clock()
        wait_until = start + p.wait
        boundary = start + self.interval_s * _BOUNDARY_MARGIN if self.interval_s else None
        out = ReadOutcome()
        stop = ""
        for k in range(p.attempts):
            out.attempts = k + 1
            try:
                snap = self.device.read_snapshot(
                    release=False, timeout=max(0.0, wait_until - p.clock()))
                out.rli = self._rli_registers()
                out.snapshot = self._accounted_gap(snap)
                return out
            except TRANSIENT_ERRORS as e:
                out.errors.append(f"{type(e).__name__}: {e}")
            pause = p.pause(k)
            if k + 1 == p.attempts:
                break
            end = min(wait_until, boundary) if boundary is not None else wait_until
            if p.clock() + pause >= end:
                stop = ("; no time left to retry before the "
                        + ("next boundary" if end != wait_until else "--wait ends"))
                break
            p.sleep(pause)
        out.reason = (f"could not be read ({out.attempts} attempt"
                      f"{'s' if out.attempts > 1 else ''}): {out.errors[-1]}{stop}")
        return out

    def _rli_registers(self) -> dict | None:
        """An RLI device's counts of the frozen interval (read while the copy is still
        frozen, before its release: they belong to it), or None for other kinds."""
        if self.device.config.kind != "rli":
            return None
        return {name[len("rli_frozen_"):]: self.device.read(name)
                for name in RLI_FROZEN_REGISTERS}

    def _accounted_gap(self, snap: Snapshot) -> Snapshot:
        """``snap`` without the driver's sequence-gap mark when the intervals it missed
        are the ones ``watch`` already has rows for (read attempts that failed) and the
        device itself flagged no gap (FROZEN_FLAGS, read again): the counters of this
        interval are then as good as any."""
        gap_notes = [n for n in snap.notes if n.startswith(_HOST_GAP_NOTE)]
        if (not gap_notes or self.last_seq is None
                or snap.seq != (self.last_seq + 1) & 0xFFFFFFFF):
            return snap
        try:
            device_flags = self.device.read("frozen_flags")
        except TransportError:
            return snap
        if device_flags & IntervalFlags.SEQUENCE_GAP:
            return snap
        return dataclasses.replace(snap, flags=snap.flags & ~IntervalFlags.SEQUENCE_GAP,
                                   notes=[n for n in snap.notes if n not in gap_notes])

    def release(self, outcome: ReadOutcome) -> None:
        """Release the copy ``outcome`` read (or could not read), so the device does not
        overrun forever; say in ``outcome.release`` what happened. A release whose
        reply was lost is repeated only while the same copy is still frozen."""
        snap = outcome.snapshot
        error = None
        for k in range(self.policy.attempts):
            try:
                if not self.device.status()["frozen_ready"]:
                    outcome.release = self._gone(snap, outcome.seq, k)
                    return
                seq = self.device.read("frozen_seq")
                if snap is not None and seq != snap.seq:
                    outcome.release = f"released (interval {seq} is frozen now)"
                    return
                if snap is None and outcome.seq is None:
                    outcome.seq = seq
                self.device.release()
                outcome.release = "released" if snap else f"interval {seq} released unread"
                return
            except TransportError as e:
                error = str(e)
            if k + 1 < self.policy.attempts:
                self.policy.sleep(self.policy.pause(k))
        outcome.release = (f"not released ({error}): the device's next interval will be "
                           f"an overrun")

    @staticmethod
    def _gone(snap, seq, k: int) -> str:
        """What became of a copy found no longer frozen (after ``k`` release attempts)."""
        if k == 0:
            return "already released" if snap else "nothing frozen"
        if snap is not None:
            return "released"
        return f"interval {seq} released unread" if seq is not None else "released unread"
