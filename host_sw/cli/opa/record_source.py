# SPDX-License-Identifier: BSD-2-Clause
"""The live sources of OPA record frames of ``ldactl watch --records``: capture files or
standard input, each read by a background thread into one queue of events.

In the host data flow (``docs/DESIGN.md``, watch with records): ``tcpdump -U -w -`` on
the link the devices' data outputs feed, or the file it writes ► **this module**
(:class:`~host_sw.model.pcap_live.CaptureParser`: complete records as the bytes arrive)
► the control frames of type :data:`~host_sw.contracts.opa.records.TYPE_OPA_RECORDS`
► :class:`~host_sw.cli.opa.watch.OpaRecordWatch` (per-interval streams, estimate).

A regular file is followed like ``tail -f`` (at its end the thread waits and reads
again: tcpdump is still writing it); a pipe's end ends its source. A source that fails
(unreadable, not a capture, cut inside a record) ends with an ``error`` event; the watch
notes it and goes on with the others.
"""

from __future__ import annotations

import os
import queue
import stat
import sys
import threading
from dataclasses import dataclass

from host_sw.cli.args import UsageError
from host_sw.contracts.hashing import ETHERTYPE_CONTROL
from host_sw.contracts.opa.records import TYPE_OPA_RECORDS
from host_sw.model.pcap import CaptureError
from host_sw.model.pcap_live import CaptureParser

__all__ = ["SourceEvent", "RecordSources"]

#: Bytes asked for at once (a pipe's read returns what is there, up to this).
_READ_BYTES = 1 << 16


@dataclass(frozen=True)
class SourceEvent:
    """One thing a source reports: ``frame`` (an OPA record frame's bytes, ``data``),
    ``error`` (the source stopped: ``data`` says why) or ``end`` (a pipe ended)."""
    kind: str
    name: str
    data: bytes | str = b""


def _is_record_frame(frame: bytes) -> bool:
    return (len(frame) >= 16 and int.from_bytes(frame[12:14], "big") == ETHERTYPE_CONTROL
            and frame[15] == TYPE_OPA_RECORDS)


class _Source(threading.Thread):
    def __init__(self, name: str, f, follow: bool, out: queue.Queue, stop: threading.Event,
                 poll: float, close: bool):
        super().__init__(name=f"records {name}", daemon=True)
        self.source, self.f, self.follow, self.out = name, f, follow, out
        self.stop, self.poll, self.close_file = stop, poll, close

    def run(self) -> None:
        parser = CaptureParser(self.source)
        try:
            if isinstance(self.f, str):     # a named pipe: opening waits for its writer
                self.f = open(self.f, "rb")
            read = getattr(self.f, "read1", self.f.read)
            while not self.stop.is_set():
                data = read(_READ_BYTES)
                if not data:
                    if self.follow:
                        self.stop.wait(self.poll)
                        continue
                    parser.finish()
                    self.out.put(SourceEvent("end", self.source))
                    return
                for _, frame in parser.feed(data):
                    if _is_record_frame(frame):
                        self.out.put(SourceEvent("frame", self.source, frame))
        except (CaptureError, OSError, ValueError) as e:
            self.out.put(SourceEvent("error", self.source, str(e)))
        finally:
            if self.close_file and not isinstance(self.f, str):
                self.f.close()


def _open(path: str):
    """``(file, follow, close)`` of a ``--records`` value (a named pipe's path instead of
    its file: its thread opens it); :class:`UsageError` (exit 2) naming the option when
    it cannot be read or holds something else than a capture."""
    if path == "-":
        return sys.stdin.buffer, False, False
    try:
        if stat.S_ISFIFO(os.stat(path).st_mode):
            if not os.access(path, os.R_OK):
                raise PermissionError(13, "Permission denied")
            return path, False, True
        f = open(path, "rb")
        mode = os.fstat(f.fileno()).st_mode
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror or e}", "--records") from None
    follow = stat.S_ISREG(mode)
    if follow:
        head = f.read(64)
        f.seek(0)
        try:
            CaptureParser(path).feed(head)
        except CaptureError as e:
            f.close()
            raise UsageError(str(e), "--records") from None
    return f, follow, True


class RecordSources:
    """The ``--records`` sources, each read by its thread into :attr:`events`."""

    def __init__(self, paths, *, poll: float = 0.05):
        if list(paths).count("-") > 1:
            raise UsageError("standard input ('-') can be given once", "--records")
        self.events: queue.Queue[SourceEvent] = queue.Queue()
        self._stop = threading.Event()
        opened = []
        try:
            for p in paths:
                opened.append((p, *_open(p)))
        except UsageError:
            for _, f, _, close in opened:
                if close:
                    f.close()
            raise
        self._threads = [_Source("stdin" if p == "-" else p, f, follow, self.events,
                                 self._stop, poll, close)
                         for p, f, follow, close in opened]
        for t in self._threads:
            t.start()

    def get(self, timeout: float) -> SourceEvent | None:
        """The next event, waiting up to ``timeout`` seconds (0: only a waiting one)."""
        try:
            return self.events.get(timeout=timeout) if timeout > 0 else \
                self.events.get_nowait()
        except queue.Empty:
            return None

    @property
    def running(self) -> bool:
        """Whether a source may still report something."""
        return any(t.is_alive() for t in self._threads) or not self.events.empty()

    def close(self) -> None:
        """Stop following files (a thread blocked in a pipe's read ends with the
        process: its threads are daemons)."""
        self._stop.set()
        for t in self._threads:
            if t.follow:
                t.join(timeout=1.0)
