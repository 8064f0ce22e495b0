# SPDX-License-Identifier: BSD-2-Clause
"""Synopsis configurations (LDA, RDA, LDS) and the configuration ID.

A configuration holds every parameter that decides which counter a packet updates and how:
the kind and its dimensions, the hash seed, the header window and byte masks, sampling
thresholds, and the counter widths. The gateware is elaborated from one (static part), the
host programs the run-time part (thresholds, masks) over the bus, and the golden model and
estimators take the same object. Two synopses are comparable only when their
:attr:`~SynopsisConfig.config_id` match (:func:`check_comparable`).

The configuration ID is the first 4 bytes (big-endian) of SHA-256 over the canonical JSON
of :meth:`~SynopsisConfig.to_dict` (keys sorted, no spaces) — ``docs/SPEC.md`` §5.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields, replace
from typing import ClassVar

from host_sw.contracts.hashing import DEFAULT_WINDOW_BYTES, default_masks
from host_sw.contracts.layouts import Field, WordLayout

__all__ = ["KIND_CODES", "CONFIG_CLASSES", "config_class", "SynopsisConfig", "LdaConfig", "RdaConfig", "LdsConfig", "ConfigMismatch",
           "check_comparable", "config_from_dict", "is_power_of_two", "threshold_for_rate"]


class ConfigMismatch(ValueError):
    """Raised when two synopses with different configurations are compared."""


#: The synopsis kind codes of the CONFIG register and of the control frames' kind field.
KIND_CODES = {"lda": 1, "rda": 2, "lds": 3}


def is_power_of_two(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


def threshold_for_rate(rate: float) -> int:
    """The leading-zero threshold whose sampling probability ``2**-z`` is closest to
    ``rate`` in log scale, clipped to 0..32."""
    import math
    if rate >= 1:
        return 0
    if rate <= 0:
        return 32
    return max(0, min(32, round(-math.log2(rate))))


def _default_mask(name):
    return lambda: default_masks(DEFAULT_WINDOW_BYTES)[name].as_int()


@dataclass(frozen=True, kw_only=True)
class SynopsisConfig:
    """Parameters shared by all kinds. Construct a subclass."""
    kind: ClassVar[str] = ""

    seed: int = 0x1DA5EED
    window_bytes: int = DEFAULT_WINDOW_BYTES
    count_bits: int = 32
    ts_bits: int = 40
    #: Timestamp unit in nanoseconds (the timebase's tick); estimates are reported in ns.
    tick_ns: float = 1.0
    mask_packet_ipv4: int = field(default_factory=_default_mask("packet_ipv4"))
    mask_packet_ipv6: int = field(default_factory=_default_mask("packet_ipv6"))
    mask_flow_ipv4: int = field(default_factory=_default_mask("flow_ipv4"))
    mask_flow_ipv6: int = field(default_factory=_default_mask("flow_ipv6"))

    def __post_init__(self):
        if not 0 <= self.seed < (1 << 64):
            raise ValueError(f"seed must be a 64-bit unsigned integer, not {self.seed}")
        if self.window_bytes < 16 or self.window_bytes % 8:
            raise ValueError(f"window_bytes must be a multiple of 8 and at least 16, "
                             f"not {self.window_bytes}")
        if not 8 <= self.count_bits <= 63:
            raise ValueError(f"count_bits must be 8..63, not {self.count_bits}")
        if not 16 <= self.ts_bits <= 63:
            raise ValueError(f"ts_bits must be 16..63, not {self.ts_bits}")
        if not self.tick_ns > 0:
            raise ValueError(f"tick_ns must be positive, not {self.tick_ns}")
        for name in ("mask_packet_ipv4", "mask_packet_ipv6", "mask_flow_ipv4",
                     "mask_flow_ipv6"):
            if not 0 <= getattr(self, name) < (1 << self.window_bytes):
                raise ValueError(f"{name} must fit the {self.window_bytes}-byte window")

    # -- derived -------------------------------------------------------------------------
    @property
    def layout(self) -> WordLayout:
        raise NotImplementedError

    @property
    def buckets(self) -> int:
        """Total counter words of one copy (all banks/rows)."""
        raise NotImplementedError

    @property
    def shape(self) -> tuple[int, int]:
        """(banks or rows, buckets per bank or cells per row)."""
        raise NotImplementedError

    def to_dict(self) -> dict:
        d = {"kind": self.kind}
        for f in fields(self):
            v = getattr(self, f.name)
            d[f.name] = list(v) if isinstance(v, tuple) else v
        return d

    @property
    def config_id(self) -> int:
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return int.from_bytes(hashlib.sha256(canonical.encode()).digest()[:4], "big")

    def replace(self, **changes) -> "SynopsisConfig":
        return replace(self, **changes)


@dataclass(frozen=True, kw_only=True)
class LdaConfig(SynopsisConfig):
    """LDA: ``banks`` × ``rows``; one bank per sampled packet, chosen by leading zeros."""
    kind: ClassVar[str] = "lda"
    banks: int = 2
    rows: int = 1024
    #: Leading-zero threshold per bank, strictly increasing, 0..32 (bank j samples with
    #: probability 2**-z_j - 2**-z_{j+1}).
    thresholds: tuple[int, ...] = (0, 6)

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "thresholds", tuple(int(t) for t in self.thresholds))
        if not 1 <= self.banks <= 16:
            raise ValueError(f"banks must be 1..16, not {self.banks}")
        if not is_power_of_two(self.rows) or self.rows < 2 or self.rows > (1 << 20):
            raise ValueError(f"rows must be a power of two in 2..2**20, not {self.rows}")
        if len(self.thresholds) != self.banks:
            raise ValueError(f"need one threshold per bank ({self.banks}), "
                             f"got {len(self.thresholds)}")
        if any(not 0 <= t <= 32 for t in self.thresholds):
            raise ValueError(f"thresholds must be 0..32, not {self.thresholds}")
        if any(b <= a for a, b in zip(self.thresholds, self.thresholds[1:])):
            raise ValueError(f"thresholds must increase strictly, not {self.thresholds}")

    @property
    def layout(self) -> WordLayout:
        return WordLayout((Field("count", self.count_bits, "sum"),
                           Field("ts_sum", self.ts_bits, "sum")))

    @property
    def buckets(self) -> int:
        return self.banks * self.rows

    @property
    def shape(self):
        return (self.banks, self.rows)


@dataclass(frozen=True, kw_only=True)
class RdaConfig(SynopsisConfig):
    """RDA: ``banks`` (k) × ``buckets_per_bank`` (m); every packet updates one bucket per
    bank, chosen by a hash of its 64-bit ID alone."""
    kind: ClassVar[str] = "rda"
    banks: int = 2
    buckets_per_bank: int = 1024
    id_bits: int = 64

    def __post_init__(self):
        super().__post_init__()
        if not 1 <= self.banks <= 8:
            raise ValueError(f"banks must be 1..8, not {self.banks}")
        if not 1 <= self.buckets_per_bank <= (1 << 24):
            raise ValueError(f"buckets_per_bank must be 1..2**24, not {self.buckets_per_bank}")
        if self.id_bits != 64:
            raise ValueError(f"id_bits must be 64 (the packet hash), not {self.id_bits}")

    @property
    def layout(self) -> WordLayout:
        return WordLayout((Field("count", self.count_bits, "sum"),
                           Field("ts_sum", self.ts_bits, "sum"),
                           Field("id_xor", self.id_bits, "xor")))

    @property
    def buckets(self) -> int:
        return self.banks * self.buckets_per_bank

    @property
    def shape(self):
        return (self.banks, self.buckets_per_bank)


@dataclass(frozen=True, kw_only=True)
class LdsConfig(SynopsisConfig):
    """LDS: ``rows`` (R) × ``cells`` (C); each packet updates one cell per sampled row,
    ``(flow_base_r + offset) mod C`` with the offset in a virtual LDA of ``vlda_cells``."""
    kind: ClassVar[str] = "lds"
    rows: int = 4
    cells: int = 1024
    vlda_cells: int = 1
    digest_bits: int = 32
    #: Leading-zero sampling threshold per row (multi-bank LDS, §4.2); 0 = every packet.
    row_thresholds: tuple[int, ...] = (0, 0, 0, 0)

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "row_thresholds", tuple(int(t) for t in self.row_thresholds))
        if not 1 <= self.rows <= 8:
            raise ValueError(f"rows must be 1..8, not {self.rows}")
        if not 1 <= self.cells <= (1 << 24):
            raise ValueError(f"cells must be 1..2**24, not {self.cells}")
        if not 1 <= self.vlda_cells <= self.cells:
            raise ValueError(f"vlda_cells must be 1..cells ({self.cells}), not {self.vlda_cells}")
        if not 1 <= self.digest_bits <= 64:
            raise ValueError(f"digest_bits must be 1..64, not {self.digest_bits}")
        if len(self.row_thresholds) != self.rows:
            raise ValueError(f"need one row threshold per row ({self.rows}), "
                             f"got {len(self.row_thresholds)}")
        if any(not 0 <= t <= 32 for t in self.row_thresholds):
            raise ValueError(f"row thresholds must be 0..32, not {self.row_thresholds}")

    @property
    def layout(self) -> WordLayout:
        return WordLayout((Field("count", self.count_bits, "sum"),
                           Field("ts_sum", self.ts_bits, "sum"),
                           Field("digest", self.digest_bits, "xor")))

    @property
    def buckets(self) -> int:
        return self.rows * self.cells

    @property
    def shape(self):
        return (self.rows, self.cells)


#: The configuration class of each synopsis kind: the one registry of kinds (a new kind
#: adds its class here; every layer reaches the kind's facts from its configuration).
CONFIG_CLASSES: dict[str, type[SynopsisConfig]] = {
    c.kind: c for c in (LdaConfig, RdaConfig, LdsConfig)}


def config_class(kind: str) -> type[SynopsisConfig]:
    """The configuration class of ``kind`` (``"lda"``, ``"rda"``, ``"lds"``)."""
    if kind not in CONFIG_CLASSES:
        raise ValueError(f"unknown synopsis kind {kind!r}; expected one of "
                         f"{sorted(CONFIG_CLASSES)}")
    return CONFIG_CLASSES[kind]


def _config_value(kind: str, name: str, annotation: str, value):
    """A configuration parameter read from JSON, checked against its field's type: an
    integer field takes only an integer (never a float, which would be truncated, nor a
    boolean), a float field any finite number, a tuple field a list of integers."""
    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool)
    if annotation == "int":
        if not is_int(value):
            raise ValueError(f"{kind} parameter {name} must be an integer, not {value!r}")
        return value
    if annotation == "float":
        try:
            number = float(value) if is_int(value) or isinstance(value, float) else None
        except OverflowError:
            number = None
        if number is None or number != number or abs(number) == float("inf"):
            raise ValueError(f"{kind} parameter {name} must be a finite number, "
                             f"not {value!r:.40}")
        return number
    if annotation.startswith("tuple[int"):
        if not isinstance(value, (list, tuple)) or not all(is_int(v) for v in value):
            raise ValueError(f"{kind} parameter {name} must be a list of integers, "
                             f"not {value!r}")
        return tuple(value)
    return value


def config_from_dict(d: dict) -> SynopsisConfig:
    """The configuration of a dict (:meth:`SynopsisConfig.to_dict`, or JSON read from a
    file): every value is checked for its type before the class checks its range, so a
    file cannot crash the reader or be silently truncated (``ValueError`` otherwise)."""
    if not isinstance(d, dict):
        raise ValueError(f"a configuration is a JSON object, not {type(d).__name__}")
    d = dict(d)
    kind = d.pop("kind", None)
    if not isinstance(kind, str):
        raise ValueError(f"a configuration needs a 'kind' "
                         f"({', '.join(sorted(CONFIG_CLASSES))}), not {kind!r}")
    cls = config_class(kind)
    types = {f.name: str(f.type) for f in fields(cls)}
    unknown = set(d) - set(types)
    if unknown:
        raise ValueError(f"unknown {kind} parameters: {sorted(unknown)}")
    return cls(**{k: _config_value(kind, k, types[k], v) for k, v in d.items()})


def check_comparable(sender: SynopsisConfig, receiver: SynopsisConfig) -> None:
    """Raise :class:`ConfigMismatch` unless both synopses share one configuration."""
    if sender.config_id != receiver.config_id:
        a, b = sender.to_dict(), receiver.to_dict()
        diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        raise ConfigMismatch(
            f"synopses have different configurations (config ID {sender.config_id:#010x} "
            f"vs {receiver.config_id:#010x}); differing parameters: {', '.join(diff)}")
