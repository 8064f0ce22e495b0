# SPDX-License-Identifier: BSD-2-Clause
"""Scoreboard: what the core's counters and status registers must hold for the frames it
was offered, according to the golden model.

Where it sits (``DESIGN.md``): the golden model is the executable specification; this
module feeds it the same frames the testbench offered to ``s_axis`` (with their error
flags) and the core's timestamps (the timebase value at each frame's start of frame, from
the input monitor's SOF cycle plus a constant offset), and compares the result word for
word with the frozen copy read over the bus.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from host_sw.contracts.config_base import SynopsisConfig
from host_sw.model.golden_lda_rda_lds import Hashers, hash_frames, update
from host_sw.contracts.synopsis import Synopsis
from host_sw.contracts.hashing import FrameClass

from .frames import OfferedFrame

__all__ = ["expected_synopsis", "expected_status", "synopsis_difference",
           "counted_mask"]

#: Status counter register name of each frame class.
_STATUS_OF_CLASS = {
    FrameClass.ERRORED: "frames_errored",
    FrameClass.RUNT: "frames_runt",
    FrameClass.NON_IP: "frames_non_ip",
    FrameClass.CONTROL: "frames_control",
}


def expected_synopsis(config: SynopsisConfig, frames: list[OfferedFrame], timestamps,
                      hashers: Hashers | None = None) -> Synopsis:
    """The golden synopsis of ``frames`` with integer ``timestamps`` (ticks at SOF)."""
    if not frames:
        return Synopsis.empty(config)
    hashers = hashers or Hashers(config)
    hashes = hash_frames(config, [f.data for f in frames], [f.error for f in frames],
                         hashers)
    ts = np.asarray(timestamps, dtype=np.int64)
    if (ts < 0).any():
        raise ValueError("timestamps must be non-negative")
    mask = np.uint64((1 << config.ts_bits) - 1)
    return update(config, hashes, ts.astype(np.uint64) & mask, hashers=hashers)


def counted_mask(frames: list[OfferedFrame]) -> np.ndarray:
    """Which frames the tap counts (IPv4/IPv6, not errored, not runt)."""
    return np.array([f.frame_class in (FrameClass.IPV4, FrameClass.IPV6) for f in frames],
                    dtype=bool)


def expected_status(frames: list[OfferedFrame]) -> dict[str, int]:
    """The status counters (``host_sw.contracts.regmap`` names) after ``frames``, from zero."""
    classes = Counter(f.frame_class for f in frames)
    out = {"frames_seen": len(frames),
           "frames_counted": classes[FrameClass.IPV4] + classes[FrameClass.IPV6]}
    for cls, name in _STATUS_OF_CLASS.items():
        out[name] = classes[cls]
    return out


def synopsis_difference(expected: Synopsis, got: Synopsis, limit: int = 6) -> str:
    """A readable account of where two synopses differ (empty when equal)."""
    lines = []
    for name in expected.config.layout.names:
        a, b = expected.fields[name], got.fields[name]
        bad = np.argwhere(a != b)
        if len(bad):
            lines.append(f"{name}: {len(bad)} of {a.size} words differ; first at "
                         + ", ".join(f"{tuple(int(i) for i in idx)} expected "
                                     f"{int(a[tuple(idx)]):#x} got {int(b[tuple(idx)]):#x}"
                                     for idx in bad[:limit]))
    if lines:
        lines.append(f"totals: count expected {int(expected.count.sum())} got "
                     f"{int(got.count.sum())}")
    return "\n".join(lines)
