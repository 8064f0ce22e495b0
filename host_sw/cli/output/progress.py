# SPDX-License-Identifier: BSD-2-Clause
"""A progress bar on stderr for long offline runs (``ldactl estimate`` over captures).

In the host data flow (``docs/DESIGN.md``) it sits beside the output stage: the capture
reader (:func:`host_sw.model.pcap_stream.iter_capture`) reports the bytes it has read,
this prints them against the captures' total size, at most a few times a second, on one
line that it rewrites. It is on when stderr is a terminal or ``--progress`` is given;
stdout (the records) is never touched.
"""

from __future__ import annotations

import sys
import time

__all__ = ["ByteProgress"]


class ByteProgress:
    """Bytes read of ``total``, with rate and time left; call it with each increment."""

    def __init__(self, total: int, *, label: str = "reading", out=None,
                 min_interval: float = 0.25):
        self.total, self.label = max(int(total), 1), label
        self.out = out or sys.stderr
        self.done = 0
        self.start = time.monotonic()
        self.last = time.monotonic()      # the first line after min_interval
        self.min_interval = min_interval
        self.shown = False

    def __call__(self, n: int) -> None:
        self.done += int(n)
        now = time.monotonic()
        if now - self.last >= self.min_interval:
            self.last = now
            self._show(now)

    def _show(self, now: float) -> None:
        frac = min(self.done / self.total, 1.0)
        elapsed = max(now - self.start, 1e-9)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate > 0 else float("inf")
        bar = "#" * int(frac * 30)
        eta = f"{left:5.0f} s left" if left != float("inf") else " " * 11
        print(f"\r{self.label} [{bar:<30}] {frac * 100:5.1f}% "
              f"{self.done / 2**20:8.0f} MiB {rate / 2**20:6.1f} MiB/s {eta}",
              end="", file=self.out, flush=True)
        self.shown = True

    def close(self) -> None:
        """The final state, and the end of the line."""
        self._show(time.monotonic())
        print(file=self.out, flush=True)
