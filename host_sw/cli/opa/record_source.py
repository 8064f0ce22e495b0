# SPDX-License-Identifier: BSD-2-Clause
"""The live sources of OPA record frames of ``ldactl watch --records``: capture files or
standard input, each read by a background thread into one queue of events.

In the host data flow (``docs/DESIGN.md``, watch with records): ``tcpdump -U -w -`` on
the link the devices' data outputs feed, or the file it writes ► **this module**
(:class:`~host_sw.model.pcap_live.CaptureParser`: complete records as the bytes arrive)
► the control frames of type :data:`~host_sw.contracts.opa.records.TYPE_OPA_RECORDS`
► :class:`~host_sw.cli.opa.watch.OpaRecordWatch` (per-interval streams, estimate).

A regular file is followed like ``tail -f`` (at its end the thread waits and reads
again: tcpdump is still writing it), and on into the files tcpdump rotates to
(:class:`Rotation`: ``-C`` names the next files ``FILE1``, ``FILE2`` … — ``FILE0`` … with
``-W`` —, ``-G`` writes a new file per period, named by the ``strftime`` pattern given as
``-w``, which ``--records`` then takes as well); a pipe's end ends its source. A source
that fails (unreadable, not a capture, cut inside a record) ends with an ``error`` event;
the watch notes it and goes on with the others.
"""

from __future__ import annotations

import glob
import os
import queue
import re
import stat
import sys
import threading
from dataclasses import dataclass

from host_sw.cli.args import UsageError
from host_sw.contracts.hashing import ETHERTYPE_CONTROL
from host_sw.contracts.opa.records import TYPE_OPA_RECORDS
from host_sw.model.pcap import CaptureError
from host_sw.model.pcap_live import CaptureParser

__all__ = ["SourceEvent", "RecordSources", "Rotation"]

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


def _natural(path: str) -> tuple:
    """A name's sort key with its numbers as numbers (``FILE2`` before ``FILE10``)."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", path))


class Rotation:
    """The files tcpdump writes in turn for one ``-w`` name (``path``): the name itself
    and the name with a number appended (``-C``, with ``-W`` from 0), or, for a name with
    ``strftime`` directives (``-G``) that is no file, every file the pattern matches
    (with a number appended as well: ``-G`` with ``-C``). A file's successor is the one
    of them written after it: the next by last modification (then by name, numbers as
    numbers) — so ``-W``'s ring of files, rewritten in turn, is followed too."""

    def __init__(self, path: str):
        self.path = path
        self.pattern = "%" in os.path.basename(path) and not os.path.exists(path)
        if self.pattern:
            self._glob = re.sub(r"%%|%.", lambda m: "%" if m.group() == "%%" else "*",
                                glob.escape(path))
        else:
            self._glob = glob.escape(path)
            self._numbered = re.compile(re.escape(path) + r"\d+")

    def _keyed(self) -> list[tuple[tuple, str]]:
        """The series' files now with their :meth:`_key`, oldest first."""
        if self.pattern:
            found = set(glob.glob(self._glob)) | set(glob.glob(self._glob + "[0-9]*"))
        else:
            found = {p for p in glob.glob(self._glob + "[0-9]*")
                     if self._numbered.fullmatch(p)}
            if os.path.exists(self.path):
                found.add(self.path)
        keyed = []
        for p in found:
            try:
                keyed.append((self._key(p), p))
            except OSError:
                continue        # gone between the listing and the look
        return sorted(keyed)

    def files(self) -> list[str]:
        """The series' files now, oldest first."""
        return [p for _, p in self._keyed()]

    @staticmethod
    def _key(path: str) -> tuple:
        """When a file was last written (ns), then its name, numbers as numbers."""
        return os.stat(path).st_mtime_ns, _natural(path)

    def first(self) -> str | None:
        """The file to read first: the ``-w`` name itself, else the oldest of the series
        (None: none yet)."""
        if not self.pattern and os.path.exists(self.path):
            return self.path
        files = self.files()
        return files[0] if files else None

    def after(self, current: str) -> str | None:
        """The file written after ``current`` (which has stopped growing), or None."""
        try:
            mine = self._key(current)
        except OSError:
            mine = (0, _natural(current))
        return next((p for key, p in self._keyed() if p != current and key > mine), None)


class _Source(threading.Thread):
    def __init__(self, name: str, f, follow: bool, out: queue.Queue, stop: threading.Event,
                 poll: float, close: bool, rotation: tuple | None = None):
        super().__init__(name=f"records {name}", daemon=True)
        self.source, self.f, self.follow, self.out = name, f, follow, out
        self.stop, self.poll, self.close_file = stop, poll, close
        #: ``(Rotation, the file read now)`` of a followed file
        self.rotation = rotation

    def _frames(self, parser: CaptureParser, data: bytes) -> None:
        for _, frame in parser.feed(data):
            if _is_record_frame(frame):
                self.out.put(SourceEvent("frame", self.source, frame))

    def _next_file(self, parser: CaptureParser):
        """At the end of a followed file: when tcpdump has rotated to the next one, the
        rest of this one read and checked complete, and ``(parser, read)`` of the next;
        else None."""
        if self.rotation is None:
            return None
        series, current = self.rotation
        nxt = series.after(current)
        if nxt is None:
            return None
        self._frames(parser, self.f.read())        # what was written before the switch
        parser.finish()
        f = open(nxt, "rb")
        self.f.close()
        self.f, self.rotation = f, (series, nxt)
        return CaptureParser(nxt), getattr(f, "read1", f.read)

    def run(self) -> None:
        parser = CaptureParser(self.source if self.rotation is None else self.rotation[1])
        try:
            if isinstance(self.f, str):     # a named pipe: opening waits for its writer
                self.f = open(self.f, "rb")
            read = getattr(self.f, "read1", self.f.read)
            while not self.stop.is_set():
                data = read(_READ_BYTES)
                if not data:
                    if self.follow:
                        switched = self._next_file(parser)
                        if switched is not None:
                            parser, read = switched
                            continue
                        self.stop.wait(self.poll)
                        continue
                    parser.finish()
                    self.out.put(SourceEvent("end", self.source))
                    return
                self._frames(parser, data)
        except (CaptureError, OSError, ValueError) as e:
            self.out.put(SourceEvent("error", self.source, str(e)))
        finally:
            if self.close_file and not isinstance(self.f, str):
                self.f.close()


def _open(path: str):
    """``(file, follow, close, rotation)`` of a ``--records`` value (a named pipe's path
    instead of its file: its thread opens it; ``rotation``: ``(Rotation, the file
    opened)`` of a regular file); :class:`UsageError` (exit 2) naming the option when it
    cannot be read or holds something else than a capture."""
    if path == "-":
        return sys.stdin.buffer, False, False, None
    series = Rotation(path)
    name = series.first() or path   # -C -W or -G: the -w name is no file itself
    try:
        if stat.S_ISFIFO(os.stat(name).st_mode):
            if not os.access(name, os.R_OK):
                raise PermissionError(13, "Permission denied")
            return name, False, True, None
        f = open(name, "rb")
        mode = os.fstat(f.fileno()).st_mode
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror or e}", "--records") from None
    follow = stat.S_ISREG(mode)
    if follow:
        head = f.read(64)
        f.seek(0)
        try:
            CaptureParser(name).feed(head)
        except CaptureError as e:
            f.close()
            raise UsageError(str(e), "--records") from None
    return f, follow, True, (series, name) if follow else None


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
            for _, f, _, close, _ in opened:
                if close and not isinstance(f, str):
                    f.close()
            raise
        self._threads = [_Source("stdin" if p == "-" else p, f, follow, self.events,
                                 self._stop, poll, close, rotation)
                         for p, f, follow, close, rotation in opened]
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
