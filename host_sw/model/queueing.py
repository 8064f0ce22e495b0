# SPDX-License-Identifier: BSD-2-Clause
"""A single FIFO queue between the two measurement points: the channel whose delays and
losses come out of the traffic itself, so that they are temporally correlated.

Data flow (docs/DESIGN.md, "Data flow of a packet"; model layer): a
:class:`~host_sw.model.traffic.Trace`'s send times and frame lengths ► **queue** ► each
packet's sojourn time (waiting plus its own transmission) and whether the queue dropped
it. :class:`host_sw.model.channel.Channel` adds the sojourn to the packet's path delay and
ORs the drops into its loss when it is given a :class:`QueueSpec` (``Scenario(queue=...)``,
``ldactl simulate --channel queue``). This is the setting RLI was designed for (the RLI
evaluation simulates CAIDA arrivals through such a queue, §4.2 of the excerpt in
``/work/shared/papers``) and the one where it is judged (``bench/accuracy_rli.py``).

The queue drains ``drain_Bps`` bytes per second (frame bytes without FCS; preamble and
inter-frame gap are not modelled). The drain rate is given directly or derived from a
target *utilisation* ``u`` of the trace: ``drain = offered bytes per second / u``.
Active queue management, per arrival, with ``q`` the packets in the system (waiting and in
service):

* ``droptail`` — drop when ``q >= capacity``;
* ``red`` — RED of Floyd and Jacobson (1993) with the RLI evaluation's parameters by
  default (capacity 10 000 packets, ``min_th`` 4 000, ``max_th`` 9 000, ``w_q`` 0.002,
  ``max_p`` 1/50): ``avg ← (1 − w_q)·avg + w_q·q`` when the queue is busy, and
  ``avg ← (1 − w_q)^m·avg`` with ``m`` = idle time / mean transmission time after an idle
  period; between the thresholds drop with ``p_a = p_b / (1 − count·p_b)``,
  ``p_b = max_p·(avg − min_th)/(max_th − min_th)``; drop every arrival when
  ``avg >= max_th`` and when the buffer is full.

Speed: the queue is a sequential recursion (no compiled loop of :mod:`host_sw.kernels`
covers it), so the common case is vectorised and only the rest runs a Python loop.
Without drops the departure times follow Lindley's recursion in closed form,
``D_n = C_n + max_{k<=n}(A_k − C_{k−1})`` with ``C`` the cumulative transmission times
(``numpy.maximum.accumulate``); the queue length at each arrival is then
``n − #{k : D_k <= A_n}`` (``searchsorted``, since FIFO departures are sorted). When that
queue never reaches the drop-tail capacity — or, for RED, never reaches ``min_th``
(``avg`` is a weighted mean of past queue lengths, so it stays below their maximum) — no
packet can be dropped and the closed form is the answer. Otherwise :func:`_queue_loop`
runs the exact per-packet recursion. Figures in docs/BENCHMARKS.md.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from host_sw.model.impairments import _parse_number, _parse_spec

__all__ = ["QueueSpec", "QueueResult", "offered_bytes_per_s", "run_queue", "lindley"]

_AQMS = ("red", "droptail")


@dataclass(frozen=True, kw_only=True)
class QueueSpec:
    """A FIFO queue: its drain rate (or target utilisation) and its drop policy.

    ``"red:utilisation=0.55"``, ``"droptail:utilisation=0.88,capacity=500"``,
    ``"red:drain=1.25e8"`` (bytes per second) parse with :meth:`parse`.
    """
    aqm: str = "red"
    utilisation: float | None = 0.55
    drain_Bps: float | None = None
    capacity: int = 10_000
    min_th: float = 4_000
    max_th: float = 9_000
    w_q: float = 0.002
    max_p: float = 1 / 50

    def __post_init__(self):
        if self.aqm not in _AQMS:
            raise ValueError(f"queue policy must be 'red' or 'droptail', not {self.aqm!r}")
        if (self.utilisation is None) == (self.drain_Bps is None):
            raise ValueError("a queue needs exactly one of utilisation and drain rate")
        if self.utilisation is not None and not 0 < self.utilisation <= 10:
            raise ValueError(f"utilisation must be in (0, 10], not {self.utilisation}")
        if self.drain_Bps is not None and not (self.drain_Bps > 0
                                               and math.isfinite(self.drain_Bps)):
            raise ValueError(f"drain rate must be positive, not {self.drain_Bps}")
        if int(self.capacity) != self.capacity or self.capacity < 1:
            raise ValueError(f"queue capacity must be a positive integer, not {self.capacity}")
        if not 0 <= self.min_th < self.max_th:
            raise ValueError(f"RED needs 0 <= min_th < max_th, not {self.min_th}, "
                             f"{self.max_th}")
        if not 0 < self.w_q <= 1 or not 0 < self.max_p <= 1:
            raise ValueError(f"RED w_q and max_p must be in (0, 1], not {self.w_q}, "
                             f"{self.max_p}")

    @classmethod
    def parse(cls, spec: "str | QueueSpec") -> "QueueSpec":
        """A queue from ``"<red|droptail>:key=value,..."`` (keys: ``utilisation``,
        ``drain`` in bytes/s, ``capacity``, ``min_th``, ``max_th``, ``w_q``, ``max_p``)."""
        if isinstance(spec, QueueSpec):
            return spec
        aqm, raw = _parse_spec(spec, "queue")
        names = {"utilisation": "utilisation", "drain": "drain_Bps", "capacity": "capacity",
                 "min_th": "min_th", "max_th": "max_th", "w_q": "w_q", "max_p": "max_p"}
        unknown = set(raw) - set(names)
        if unknown:
            raise ValueError(f"unknown queue parameter(s) {sorted(unknown)} in {spec!r}")
        kw = {names[k]: _parse_number(v, k) for k, v in raw.items()}
        if "drain_Bps" in kw:
            kw.setdefault("utilisation", None)
        if "capacity" in kw:
            kw["capacity"] = int(kw["capacity"]) if float(kw["capacity"]).is_integer() \
                else kw["capacity"]
        return cls(aqm=aqm, **kw)

    def drain_for(self, send_ns: np.ndarray, frame_bytes: np.ndarray) -> float:
        """The drain rate (bytes/s) of this queue for the given traffic."""
        if self.drain_Bps is not None:
            return float(self.drain_Bps)
        return offered_bytes_per_s(send_ns, frame_bytes) / self.utilisation

    def __str__(self):
        rate = (f"utilisation={self.utilisation:g}" if self.utilisation is not None
                else f"drain={self.drain_Bps:g}")
        return f"{self.aqm}:{rate},capacity={self.capacity}"


@dataclass(frozen=True)
class QueueResult:
    """What the queue did: per packet the sojourn (int64 ns, rounded; meaningless where
    dropped) and the drop flag; the drain rate used and the largest queue seen."""
    sojourn_ns: np.ndarray
    dropped: np.ndarray
    drain_Bps: float
    max_queue: int
    looped: bool


def offered_bytes_per_s(send_ns: np.ndarray, frame_bytes: np.ndarray) -> float:
    """Offered load of a trace: its bytes over its duration (``n`` packets span ``n − 1``
    gaps, so the duration is stretched by ``n / (n − 1)``)."""
    n = len(send_ns)
    if n < 2 or send_ns[-1] <= send_ns[0]:
        raise ValueError("a utilisation needs at least two packets sent at different times")
    span_s = (float(send_ns[-1] - send_ns[0])) * n / (n - 1) * 1e-9
    return float(np.sum(frame_bytes)) / span_s


def lindley(arrival_ns: np.ndarray, service_ns: np.ndarray) -> np.ndarray:
    """Departure times (float ns) of a FIFO queue without drops, in closed form."""
    c = np.cumsum(service_ns)
    return c + np.maximum.accumulate(arrival_ns - (c - service_ns))


def _queue_lengths(arrival_ns: np.ndarray, departure_ns: np.ndarray) -> np.ndarray:
    """Packets in the system just before each arrival (FIFO: departures are sorted)."""
    n = len(arrival_ns)
    return np.arange(n) - np.searchsorted(departure_ns, arrival_ns, side="right")


def run_queue(spec: QueueSpec, send_ns: np.ndarray, frame_bytes: np.ndarray,
              rng: np.random.Generator) -> QueueResult:
    """Carry packets arriving at ``send_ns`` (non-decreasing int64) with ``frame_bytes``
    through the queue (module docstring for the model and the fast path)."""
    send_ns = np.asarray(send_ns, dtype=np.int64)
    frame_bytes = np.asarray(frame_bytes, dtype=np.int64)
    n = len(send_ns)
    if n == 0:
        return QueueResult(np.zeros(0, np.int64), np.zeros(0, bool), 0.0, 0, False)
    drain = spec.drain_for(send_ns, frame_bytes)
    arrival = (send_ns - send_ns[0]).astype(np.float64)
    service = frame_bytes * (1e9 / drain)
    departure = lindley(arrival, service)
    qlen = _queue_lengths(arrival, departure)
    peak = int(qlen.max())
    limit = spec.capacity if spec.aqm == "droptail" else min(spec.capacity, spec.min_th)
    if peak < limit:
        return QueueResult(np.rint(departure - arrival).astype(np.int64),
                           np.zeros(n, bool), drain, peak, False)
    uniforms = rng.random(n) if spec.aqm == "red" else None
    departure, dropped, peak = _queue_loop(spec, arrival, service, uniforms)
    sojourn = np.where(dropped, 0, np.rint(departure - arrival)).astype(np.int64)
    return QueueResult(sojourn, dropped, drain, peak, True)


def _queue_loop(spec: QueueSpec, arrival: np.ndarray, service: np.ndarray,
                uniforms: np.ndarray | None):
    """The exact per-packet recursion with drops (drop-tail or RED), in plain Python over
    lists (about a microsecond per packet)."""
    red = spec.aqm == "red"
    cap, min_th, max_th = spec.capacity, float(spec.min_th), float(spec.max_th)
    w_q, max_p = spec.w_q, spec.max_p
    keep = 1.0 - w_q
    mean_s = float(np.mean(service))
    a_list, s_list = arrival.tolist(), service.tolist()
    u_list = uniforms.tolist() if red else None
    out = [0.0] * len(a_list)
    drop = [False] * len(a_list)
    in_system = deque()
    last_dep = 0.0
    avg, count, idle_since, peak = 0.0, -1, 0.0, 0
    for i, a in enumerate(a_list):
        while in_system and in_system[0] <= a:
            idle_since = in_system.popleft()
        q = len(in_system)
        if q > peak:
            peak = q
        if red:
            if q:
                avg = keep * avg + w_q * q
            else:
                avg *= keep ** ((a - idle_since) / mean_s) if a > idle_since else 1.0
            lost = False
            if q >= cap or avg >= max_th:
                lost = True
            elif avg >= min_th:
                count += 1
                p_b = max_p * (avg - min_th) / (max_th - min_th)
                p_a = 1.0 if count * p_b >= 1 else p_b / (1 - count * p_b)
                lost = u_list[i] < p_a
            else:
                count = -1
            if lost:
                count = 0
        else:
            lost = q >= cap
        if lost:
            drop[i] = True
            continue
        last_dep = (a if a > last_dep else last_dep) + s_list[i]
        out[i] = last_dep
        in_system.append(last_dep)
    return np.array(out), np.array(drop, dtype=bool), peak
