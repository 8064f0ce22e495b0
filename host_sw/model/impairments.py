# SPDX-License-Identifier: BSD-2-Clause
"""Path impairments of the simulated channel: one-way delay distributions and loss models,
parsed from the specification strings of ``ldactl simulate`` and the benchmarks.

Model layer (docs/DESIGN.md, "Data flow of a packet"):
:class:`~host_sw.model.channel.Channel` samples these for every packet of a trace. Times are integer (or float) nanoseconds; a
specification value may carry a unit suffix (``ns``, ``us``/``µs``, ``ms``, ``s``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

__all__ = ["DelayDistribution", "LossModel", "parse_time_ns"]

_UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
_NUMBER = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([a-zµ]*)\s*$")


def parse_time_ns(text, *, what: str = "time") -> float:
    """A time in ns from a number (ns) or a string with an optional unit suffix
    (``"200"``, ``"0.2us"``, ``"1.5 ms"``)."""
    if isinstance(text, (int, float, np.integer, np.floating)):
        return float(text)
    m = _NUMBER.match(str(text))
    if not m:
        raise ValueError(f"{what} must be a number with an optional unit "
                         f"(ns, us, ms, s), not {text!r}")
    value, unit = float(m.group(1)), m.group(2) or "ns"
    if unit not in _UNITS:
        raise ValueError(f"unknown time unit {unit!r} in {what} {text!r}; "
                         f"use one of {', '.join(_UNITS)}")
    return value * _UNITS[unit]


def _parse_number(text, what):
    m = _NUMBER.match(str(text))
    if not m or m.group(2):
        raise ValueError(f"{what} must be a plain number, not {text!r}")
    return float(m.group(1))


def _parse_spec(spec: str, kind: str) -> tuple[str, dict[str, str]]:
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"{kind} specification must be a non-empty string like "
                         f"'family:key=value,...', not {spec!r}")
    family, _, rest = spec.strip().partition(":")
    params = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise ValueError(f"bad parameter {item!r} in {kind} {spec!r}; "
                             f"expected key=value")
        if key.strip() in params:
            raise ValueError(f"parameter {key.strip()!r} given twice in {kind} {spec!r}")
        params[key.strip()] = value.strip()
    return family.strip().lower(), params


# ---------------------------------------------------------------------------------------
# Delay
# ---------------------------------------------------------------------------------------

#: family → (time-valued parameters, dimensionless parameters, required parameters)
_DELAY_FAMILIES = {
    "weibull": (("scale",), ("shape",), ("shape",)),
    "pareto": (("scale",), ("shape",), ("shape",)),
    "constant": (("value",), (), ()),
    "bimodal": (("a", "b"), ("p",), ("a", "b", "p")),
    "exponential": ((), (), ()),
    "uniform": (("low", "high"), (), ("low", "high")),
    "lognormal": (("median",), ("sigma",), ("sigma",)),
}


@dataclass(frozen=True)
class DelayDistribution:
    """A one-way delay distribution in ns, parsed from a specification string.

    ``"weibull:scale=133,shape=0.6"`` — ``P(X≤x) = 1 − exp(−(x/scale)^shape)`` (LDA §IV);
    ``"pareto:scale=…,shape=…"`` — ``P(X≤x) = 1 − (x/scale)^−shape``, ``x ≥ scale``;
    ``"constant:value=…"``; ``"bimodal:a=…,b=…,p=…"`` — ``a`` with probability ``p``,
    else ``b``; ``"exponential:mean=…"``; ``"uniform:low=…,high=…"``;
    ``"lognormal:median=…,sigma=…"``.

    Time values are ns unless suffixed (``0.2us``). ``mean=`` (any family) rescales the
    time parameters so the distribution's mean is exactly that value — e.g.
    ``"weibull:shape=0.6,mean=0.2us"`` gives scale ≈ 133 ns, the LDA paper's setup.
    """
    family: str
    params: tuple[tuple[str, float], ...]

    @classmethod
    def parse(cls, spec: "str | DelayDistribution") -> "DelayDistribution":
        if isinstance(spec, DelayDistribution):
            return spec
        family, raw = _parse_spec(spec, "delay")
        if family not in _DELAY_FAMILIES:
            raise ValueError(f"unknown delay family {family!r} in {spec!r}; expected one "
                             f"of {', '.join(sorted(_DELAY_FAMILIES))}")
        times, plain, required = _DELAY_FAMILIES[family]
        allowed = set(times) | set(plain) | {"mean"}
        unknown = set(raw) - allowed
        if unknown:
            raise ValueError(f"unknown parameter(s) {sorted(unknown)} for {family} delay "
                             f"{spec!r}; allowed: {', '.join(sorted(allowed))}")
        missing = [k for k in required if k not in raw]
        if missing:
            raise ValueError(f"{family} delay {spec!r} needs {', '.join(missing)}")
        p = {}
        for k, v in raw.items():
            p[k] = (_parse_number(v, f"{family} {k}") if k in plain
                    else parse_time_ns(v, what=f"{family} {k}"))
        target = p.pop("mean", None)
        scale_keys = [k for k in times if k in p]
        if not scale_keys and family != "exponential":
            if target is None:
                raise ValueError(f"{family} delay {spec!r} needs "
                                 f"{' or '.join(times)} or mean=")
            for k in times:
                p[k] = 1.0
        if family == "exponential":
            if target is None:
                raise ValueError(f"exponential delay {spec!r} needs mean=")
            p["mean"] = target
            target = None
        dist = cls(family, tuple(sorted(p.items())))
        dist._validate(spec)
        if target is not None:
            if not target >= 0:
                raise ValueError(f"mean must be non-negative, not {target} ns")
            current = dist.mean()
            if not math.isfinite(current):
                raise ValueError(f"{family} delay {spec!r} has an infinite mean; "
                                 f"mean= needs shape > 1")
            if current == 0:
                raise ValueError(f"cannot rescale {spec!r}: its mean is 0")
            factor = target / current
            p.update({k: p[k] * factor for k in times})
            dist = cls(family, tuple(sorted(p.items())))
        return dist

    def _validate(self, spec):
        p = dict(self.params)
        for k, v in p.items():
            if k in ("scale", "shape", "sigma") and not v > 0:
                raise ValueError(f"{self.family} {k} must be positive, not {v} ({spec!r})")
            if k in ("value", "a", "b", "low", "high", "median", "mean") and not v >= 0:
                raise ValueError(f"{self.family} {k} must be non-negative, not {v} "
                                 f"({spec!r})")
        if "p" in p and not 0 <= p["p"] <= 1:
            raise ValueError(f"bimodal p must be in [0, 1], not {p['p']} ({spec!r})")
        if self.family == "uniform" and not p["low"] <= p["high"]:
            raise ValueError(f"uniform low must not exceed high ({spec!r})")

    def __getitem__(self, key: str) -> float:
        return dict(self.params)[key]

    def mean(self) -> float:
        """The distribution's mean in ns (``inf`` for a Pareto shape ≤ 1)."""
        p = dict(self.params)
        f = self.family
        if f == "weibull":
            return p["scale"] * math.gamma(1 + 1 / p["shape"])
        if f == "pareto":
            return math.inf if p["shape"] <= 1 else p["scale"] * p["shape"] / (p["shape"] - 1)
        if f == "constant":
            return p["value"]
        if f == "bimodal":
            return p["p"] * p["a"] + (1 - p["p"]) * p["b"]
        if f == "exponential":
            return p["mean"]
        if f == "uniform":
            return (p["low"] + p["high"]) / 2
        if f == "lognormal":
            return p["median"] * math.exp(p["sigma"] ** 2 / 2)
        raise AssertionError(f)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` float64 delays in ns."""
        p = dict(self.params)
        f = self.family
        if f == "weibull":
            return p["scale"] * rng.weibull(p["shape"], n)
        if f == "pareto":
            return p["scale"] * (1.0 - rng.random(n)) ** (-1.0 / p["shape"])
        if f == "constant":
            return np.full(n, p["value"])
        if f == "bimodal":
            return np.where(rng.random(n) < p["p"], p["a"], p["b"])
        if f == "exponential":
            return rng.exponential(p["mean"], n) if p["mean"] > 0 else np.zeros(n)
        if f == "uniform":
            return rng.uniform(p["low"], p["high"], n)
        if f == "lognormal":
            return p["median"] * rng.lognormal(0.0, p["sigma"], n)
        raise AssertionError(f)

    def sample_ns(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` int64 delays: :meth:`sample` rounded to the nearest ns, at least 0."""
        return np.maximum(np.rint(self.sample(n, rng)), 0).astype(np.int64)

    def __str__(self):
        return f"{self.family}:" + ",".join(f"{k}={v:g}" for k, v in self.params)


# ---------------------------------------------------------------------------------------
# Loss
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LossModel:
    """Which packets the path drops.

    ``"none"``; ``"uniform:rate=r"`` (or a bare number ``r``) — exactly ``round(r·N)``
    packets chosen uniformly at random (the LDA paper's ``L = N·l``);
    ``"episodes:rate=r,length=100"`` — bursty loss (LDA §IV-C): loss episodes of a
    geometric number of consecutive packets (mean ``length``) separated by exponential
    gaps of mean ``length·(1−r)/r`` packets, so the expected loss fraction is ``r``.
    """
    kind: str = "none"
    rate: float = 0.0
    length: float = 100.0

    @classmethod
    def parse(cls, spec) -> "LossModel":
        if isinstance(spec, LossModel):
            return spec
        if spec is None:
            return cls()
        if isinstance(spec, (int, float, np.integer, np.floating)):
            return cls._checked("uniform", float(spec), 100.0, spec)
        try:
            return cls._checked("uniform", _parse_number(spec, "loss"), 100.0, spec)
        except ValueError:
            pass
        kind, raw = _parse_spec(spec, "loss")
        if kind == "none":
            if raw:
                raise ValueError(f"loss 'none' takes no parameters, got {spec!r}")
            return cls()
        allowed = {"uniform": {"rate"}, "episodes": {"rate", "length"}}
        if kind not in allowed:
            raise ValueError(f"unknown loss model {kind!r} in {spec!r}; expected none, "
                             f"uniform or episodes")
        unknown = set(raw) - allowed[kind]
        if unknown:
            raise ValueError(f"unknown parameter(s) {sorted(unknown)} for {kind} loss "
                             f"{spec!r}")
        if "rate" not in raw:
            raise ValueError(f"{kind} loss {spec!r} needs rate=")
        rate = _parse_number(raw["rate"], "loss rate")
        length = _parse_number(raw.get("length", "100"), "episode length")
        return cls._checked(kind, rate, length, spec)

    @classmethod
    def _checked(cls, kind, rate, length, spec):
        if not 0 <= rate <= 1:
            raise ValueError(f"loss rate must be in [0, 1], not {rate} ({spec!r})")
        if kind == "episodes" and rate >= 1:
            raise ValueError(f"episodic loss rate must be below 1, not {rate} ({spec!r})")
        if not length >= 1:
            raise ValueError(f"episode length must be at least 1 packet, not {length}")
        return cls(kind if rate > 0 else "none", rate, length)

    def drops(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """bool ``(n,)`` — True for dropped packets."""
        dropped = np.zeros(n, dtype=bool)
        if self.kind == "none" or n == 0:
            return dropped
        if self.kind == "uniform":
            dropped[rng.choice(n, size=int(round(self.rate * n)), replace=False)] = True
            return dropped
        # alternating renewal process over packet indices
        gap_mean = self.length * (1 - self.rate) / self.rate
        expected = n / (gap_mean + self.length)
        m = int(expected * 1.5 + 10 * math.sqrt(expected) + 10)
        while True:
            gaps = np.rint(rng.exponential(gap_mean, m)).astype(np.int64)
            bursts = rng.geometric(1.0 / self.length, m).astype(np.int64)
            starts = np.cumsum(gaps + np.concatenate(([0], bursts[:-1])))
            if starts[-1] >= n or m > 4 * n + 100:
                break
            m *= 2
        starts = starts[starts < n]
        ends = np.minimum(starts + bursts[:len(starts)], n)
        edge = np.zeros(n + 1, dtype=np.int64)
        np.add.at(edge, starts, 1)
        np.add.at(edge, ends, -1)
        return np.cumsum(edge[:-1]) > 0

    def __str__(self):
        if self.kind == "none":
            return "none"
        if self.kind == "uniform":
            return f"uniform:rate={self.rate:g}"
        return f"episodes:rate={self.rate:g},length={self.length:g}"
