# SPDX-License-Identifier: BSD-2-Clause
"""Synopsis configurations (LDA, RDA, LDS, OPA, RLI) and the configuration ID.

A configuration holds every parameter that decides which counter a packet updates and how:
the kind and its dimensions, the hash seed, the header window and byte masks, sampling
thresholds, and the counter widths. The gateware is elaborated from one (static part), the
host programs the run-time part (thresholds, masks) over the bus, and the golden model and
estimators take the same object. Two synopses are comparable only when their
:attr:`~SynopsisConfig.config_id` match (:func:`check_comparable`).

Each configuration class is also where its kind's facts live (docs/DESIGN.md, "Adding a
synopsis kind"): its shape and word layout, which hash functions it uses
(:attr:`~SynopsisConfig.hash_functions`), its part of the register map
(:attr:`~SynopsisConfig.config_register_values`, :attr:`~SynopsisConfig.threshold_register`).
The other layers ask these, or key a table of their own by :attr:`~SynopsisConfig.kind`;
:data:`CONFIG_CLASSES` is the one registry of kinds.

The configuration ID is the first 4 bytes (big-endian) of SHA-256 over the canonical JSON
of :meth:`~SynopsisConfig.to_dict` (keys sorted, no spaces) — ``docs/SPEC.md`` §5. So that
configurations that compare equal get one ID, every field is brought to its canonical type
on construction (integer fields to ``int``, ``tick_ns`` to ``float``, tuples of ``int``):
``tick_ns=1`` and ``tick_ns=1.0`` are one configuration, and so are ``rows=1024`` and
``rows=1024.0``. The default byte masks follow the window (:func:`default_masks`
of ``window_bytes``, SPEC §2), so every window byte past the fixed headers is hashed.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from dataclasses import dataclass, fields, replace
from typing import ClassVar

from host_sw.contracts.hashing import (DEFAULT_WINDOW_BYTES, FLOW_KEY_BYTES, HashPurpose,
                                      default_masks)
from host_sw.contracts.layouts import Field, WordLayout

__all__ = ["KIND_CODES", "CONFIG_CLASSES", "config_class", "SynopsisConfig", "LdaConfig",
           "RdaConfig", "LdsConfig", "OpaConfig", "RliConfig", "ConfigMismatch", "ThresholdRegister", "THRESHOLD_BITS",
           "MASK_FIELDS", "canonical_json", "check_comparable", "config_from_dict",
           "is_power_of_two", "threshold_for_rate"]


class ConfigMismatch(ValueError):
    """Raised when two synopses with different configurations are compared."""


#: The synopsis kind codes of the CONFIG register and of the control frames' kind field.
KIND_CODES = {"lda": 1, "rda": 2, "lds": 3, "opa": 4, "rli": 5}
#: Width of one run-time sampling threshold (a leading-zero count 0..32) in the
#: THRESHOLDS register and the bucket selector.
THRESHOLD_BITS = 6


@dataclass(frozen=True)
class ThresholdRegister:
    """A kind's run-time sampling thresholds: the THRESHOLDS register holds one
    :data:`THRESHOLD_BITS`-bit field per bank or row, programmed by the host.

    Attributes
    ----------
    config_field : str
        The configuration's tuple of thresholds (``"thresholds"``, ``"row_thresholds"``).
    field_prefix : str
        Register field ``j`` is named ``<field_prefix><j>`` (``bank0``, ``row3``).
    what : str
        What the thresholds are, for the register's description.
    """
    config_field: str
    field_prefix: str
    what: str


def is_power_of_two(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


def threshold_for_rate(rate: float) -> int:
    """The leading-zero threshold whose sampling probability ``2**-z`` is closest to
    ``rate`` in log scale, clipped to 0..32."""
    if rate >= 1:
        return 0
    if rate <= 0:
        return 32
    return max(0, min(32, round(-math.log2(rate))))


#: The configuration's byte-mask fields, in the MASKS register's order (``mask_<name>``).
MASK_FIELDS = ("mask_packet_ipv4", "mask_packet_ipv6", "mask_flow_ipv4", "mask_flow_ipv6")


def _canonical_int(name: str, value) -> int:
    """``value`` as a Python int: integers (numpy's too) and integral floats (a JSON
    ``1024.0``) are accepted, so that values that compare equal hash equally."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, not {value!r}")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        return int(value)
    raise ValueError(f"{name} must be an integer, not {value!r}")


def _canonical_value(name: str, annotation: str, value):
    """A field's value in its canonical type (docs/SPEC.md §5, "Canonical form")."""
    if annotation == "float":
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"{name} must be a number, not {value!r}")
        return float(value)
    if annotation.startswith("tuple"):
        if isinstance(value, (str, bytes)):
            raise ValueError(f"{name} must be a sequence of integers, not {value!r}")
        return tuple(_canonical_int(name, v) for v in value)
    return _canonical_int(name, value)


@dataclass(frozen=True, kw_only=True)
class SynopsisConfig:
    """Parameters shared by all kinds. Construct a subclass."""
    kind: ClassVar[str] = ""
    #: The kind's run-time thresholds register, or ``None`` when it samples every packet.
    threshold_register: ClassVar[ThresholdRegister | None] = None
    #: Whether the gateware builds this kind (a row in ``hw/kinds.py``); a kind that exists
    #: on the host only (golden model, estimator, simulation) says False.
    has_gateware: ClassVar[bool] = True

    seed: int = 0x1DA5EED
    window_bytes: int = DEFAULT_WINDOW_BYTES
    count_bits: int = 32
    ts_bits: int = 40
    #: Timestamp unit in nanoseconds (the timebase's tick); estimates are reported in ns.
    tick_ns: float = 1.0
    #: Byte masks (bit i = window byte i is hashed). ``None`` (the default) takes
    #: ``default_masks(window_bytes)``; after construction each is an int.
    mask_packet_ipv4: int | None = None
    mask_packet_ipv6: int | None = None
    mask_flow_ipv4: int | None = None
    mask_flow_ipv6: int | None = None

    def __post_init__(self):
        self._canonicalise()
        if not 0 <= self.seed < (1 << 64):
            raise ValueError(f"seed must be a 64-bit unsigned integer, not {self.seed}")
        if self.window_bytes < 16 or self.window_bytes % 8:
            raise ValueError(f"window_bytes must be a multiple of 8 and at least 16, "
                             f"not {self.window_bytes}")
        if not 8 <= self.count_bits <= 63:
            raise ValueError(f"count_bits must be 8..63, not {self.count_bits}")
        if not 16 <= self.ts_bits <= 63:
            raise ValueError(f"ts_bits must be 16..63, not {self.ts_bits}")
        if not (self.tick_ns > 0 and math.isfinite(self.tick_ns)):
            raise ValueError(f"tick_ns must be positive and finite, not {self.tick_ns}")
        for name in MASK_FIELDS:
            if not 0 <= getattr(self, name) < (1 << self.window_bytes):
                raise ValueError(f"{name} must fit the {self.window_bytes}-byte window")

    def _canonicalise(self) -> None:
        """Every field to its canonical type; unset masks to the window's defaults."""
        defaults = None
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name in MASK_FIELDS:
                if defaults is None:
                    defaults = default_masks(_canonical_int("window_bytes", self.window_bytes))
                value = defaults[f.name.removeprefix("mask_")].as_int()
            annotation = f.type if isinstance(f.type, str) else getattr(
                f.type, "__name__", str(f.type))
            object.__setattr__(self, f.name, _canonical_value(f.name, annotation, value))

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

    @property
    def hash_functions(self) -> dict[HashPurpose, int]:
        """How many H3 functions of each purpose the kind uses (the hasher builds them,
        the golden model computes them); the packet hash always."""
        return {HashPurpose.PACKET: 1}

    def hash_count(self, purpose: HashPurpose) -> int:
        """Number of H3 functions of ``purpose`` (0 when the kind does not use it)."""
        return self.hash_functions.get(purpose, 0)

    @property
    def config_register_values(self) -> dict[str, int]:
        """The kind's fields of the CONFIG register: ``dim0``, ``dim1`` (its shape),
        ``xor_bits`` (width of its XOR field, 0 if none) and ``vlda_cells``."""
        raise NotImplementedError

    @property
    def sampling_thresholds(self) -> tuple[int, ...]:
        """The values of :attr:`threshold_register` (empty when it has none)."""
        part = self.threshold_register
        return () if part is None else tuple(getattr(self, part.config_field))

    def to_dict(self) -> dict:
        d = {"kind": self.kind}
        for f in fields(self):
            v = getattr(self, f.name)
            d[f.name] = list(v) if isinstance(v, tuple) else v
        return d

    @property
    def config_id(self) -> int:
        """First 4 bytes (big-endian) of SHA-256 over :func:`canonical_json`."""
        digest = hashlib.sha256(canonical_json(self).encode("utf-8")).digest()
        return int.from_bytes(digest[:4], "big")

    def replace(self, **changes) -> "SynopsisConfig":
        """A copy with ``changes``. When ``window_bytes`` changes, masks that are the
        defaults of the old window (and not given in ``changes``) become the defaults of
        the new one, as if the configuration had been written with the new window."""
        if "window_bytes" in changes:
            old = default_masks(self.window_bytes)
            for name in MASK_FIELDS:
                if name not in changes and getattr(self, name) == old[
                        name.removeprefix("mask_")].as_int():
                    changes[name] = None
        return replace(self, **changes)


@dataclass(frozen=True, kw_only=True)
class LdaConfig(SynopsisConfig):
    """LDA: ``banks`` × ``rows``; one bank per sampled packet, chosen by leading zeros."""
    kind: ClassVar[str] = "lda"
    threshold_register: ClassVar = ThresholdRegister("thresholds", "bank",
                                                     "per-bank leading-zero")
    banks: int = 2
    rows: int = 1024
    #: Leading-zero threshold per bank, strictly increasing, 0..32 (bank j samples with
    #: probability 2**-z_j - 2**-z_{j+1}).
    thresholds: tuple[int, ...] = (0, 6)

    def __post_init__(self):
        super().__post_init__()
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
    def hash_functions(self) -> dict[HashPurpose, int]:
        return {HashPurpose.PACKET: 1, HashPurpose.FIELD: 1}

    @property
    def buckets(self) -> int:
        return self.banks * self.rows

    @property
    def shape(self):
        return (self.banks, self.rows)

    @property
    def config_register_values(self) -> dict[str, int]:
        return {"dim0": self.banks, "dim1": self.rows, "xor_bits": 0, "vlda_cells": 0}


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

    @property
    def hash_functions(self) -> dict[HashPurpose, int]:
        return {HashPurpose.PACKET: 1, HashPurpose.RDA_BUCKET: self.banks}

    @property
    def config_register_values(self) -> dict[str, int]:
        return {"dim0": self.banks, "dim1": self.buckets_per_bank, "xor_bits": self.id_bits,
                "vlda_cells": 0}


@dataclass(frozen=True, kw_only=True)
class LdsConfig(SynopsisConfig):
    """LDS: ``rows`` (R) × ``cells`` (C); each packet updates one cell per sampled row,
    ``(flow_base_r + offset) mod C`` with the offset in a virtual LDA of ``vlda_cells``."""
    kind: ClassVar[str] = "lds"
    threshold_register: ClassVar = ThresholdRegister("row_thresholds", "row",
                                                     "per-row sampling")
    rows: int = 4
    cells: int = 1024
    vlda_cells: int = 1
    digest_bits: int = 32
    #: Leading-zero sampling threshold per row (multi-bank LDS, §4.2); 0 = every packet.
    row_thresholds: tuple[int, ...] = (0, 0, 0, 0)

    def __post_init__(self):
        defaulted = [n for n in ("mask_flow_ipv4", "mask_flow_ipv6") if getattr(self, n) is None]
        super().__post_init__()
        if defaulted and self.window_bytes < FLOW_KEY_BYTES:
            raise ValueError(
                f"a {self.window_bytes}-byte window cannot hold the LDS flow key (the default "
                f"flow masks reach byte {FLOW_KEY_BYTES - 1}, the IPv6 destination port): use "
                f"a window of at least {FLOW_KEY_BYTES} bytes or give "
                f"{' and '.join(defaulted)} explicitly")
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

    @property
    def hash_functions(self) -> dict[HashPurpose, int]:
        return {HashPurpose.PACKET: 1, HashPurpose.LDS_FLOW: self.rows,
                HashPurpose.FIELD: 1, HashPurpose.LDS_OFFSET: self.rows}

    @property
    def config_register_values(self) -> dict[str, int]:
        return {"dim0": self.rows, "dim1": self.cells, "xor_bits": self.digest_bits,
                "vlda_cells": self.vlda_cells}


@dataclass(frozen=True, kw_only=True)
class OpaConfig(SynopsisConfig):
    """OPA: ``groups`` (g, a power of two) words of ``(w, B_0..B_{rows−1})``; every packet
    updates its group's word (contract: :mod:`host_sw.contracts.opa`, SPEC §8)."""
    kind: ClassVar[str] = "opa"
    groups: int = 1024
    #: k, the Vandermonde rows of the CAH (recovery solves up to k−1 unknowns).
    rows: int = 4

    def __post_init__(self):
        super().__post_init__()
        if not is_power_of_two(self.groups) or self.groups > (1 << 20):
            raise ValueError(f"groups must be a power of two in 1..2**20, not {self.groups}")
        if not 2 <= self.rows <= 8:
            raise ValueError(f"rows must be 2..8, not {self.rows}")

    @property
    def layout(self) -> WordLayout:
        return WordLayout((Field("count", self.count_bits, "sum"),) + tuple(
            Field(f"b{r}", 31, "mod_p") for r in range(self.rows)))

    @property
    def buckets(self) -> int:
        return self.groups

    @property
    def shape(self):
        return (1, self.groups)

    @property
    def config_register_values(self) -> dict[str, int]:
        return {"dim0": self.rows, "dim1": self.groups, "xor_bits": 0, "vlda_cells": 0}


@dataclass(frozen=True, kw_only=True)
class RliConfig(SynopsisConfig):
    """RLI (Lee, Duffield and Kompella, SIGCOMM 2010): reference packets at the sender,
    per-packet delays interpolated between them at the receiver, per-flow counters.

    The counters are ``cells`` hash-indexed per-flow cells (one row; the flow's cell is
    ``range_reduce32(flow hash 0, cells)``), each word ``count``, ``delay_sum``,
    ``delay_sq_sum`` and ``digest_sum`` (the sum of the packets' flow digests, flow hash 1
    — a cell shared by two flows is detected when ``digest_sum != count · digest``).
    Reference packets: exactly one of ``ref_packets`` (one after every N-th counted
    packet), ``ref_period_ticks`` (one per period) or ``adapt_link_Bps`` (adaptive to the
    sender link's utilisation, docs/SPEC.md "RLI"). ``buffer_packets`` bounds the
    receiver's interpolation buffer; ``slope_frac_bits`` the fixed-point slope.
    """
    kind: ClassVar[str] = "rli"
    has_gateware: ClassVar[bool] = False
    cells: int = 4096
    digest_bits: int = 32
    delay_bits: int = 48
    sq_bits: int = 64
    ref_packets: int = 100
    ref_period_ticks: int = 0
    adapt_link_Bps: float = 0.0
    adapt_window_ticks: int = 1_000_000
    ref_packets_low_util: int = 10
    ref_packets_high_util: int = 300
    util_low: float = 0.2
    util_high: float = 0.8
    buffer_packets: int = 4096
    slope_frac_bits: int = 16

    def __post_init__(self):
        super().__post_init__()
        if not 1 <= self.cells <= (1 << 24):
            raise ValueError(f"cells must be 1..2**24, not {self.cells}")
        for name, lo, hi in (("digest_bits", 1, 64), ("delay_bits", 16, 64),
                             ("sq_bits", 16, 64), ("slope_frac_bits", 0, 24)):
            if not lo <= getattr(self, name) <= hi:
                raise ValueError(f"{name} must be {lo}..{hi}, not {getattr(self, name)}")
        modes = [self.ref_packets > 0, self.ref_period_ticks > 0, self.adapt_link_Bps > 0]
        if sum(modes) != 1 or min(self.ref_packets, self.ref_period_ticks,
                                  self.adapt_link_Bps) < 0:
            raise ValueError("give exactly one reference rule: ref_packets (1 in N), "
                             "ref_period_ticks or adapt_link_Bps (adaptive), the others 0")
        if not 1 <= self.ref_packets_low_util <= self.ref_packets_high_util:
            raise ValueError("need 1 <= ref_packets_low_util <= ref_packets_high_util")
        if not 0 <= self.util_low < self.util_high:
            raise ValueError(f"need 0 <= util_low < util_high, not {self.util_low}, "
                             f"{self.util_high}")
        if self.adapt_window_ticks < 1 or not 1 <= self.buffer_packets <= (1 << 20):
            raise ValueError("adapt_window_ticks must be positive and buffer_packets "
                             "1..2**20")

    @property
    def layout(self) -> WordLayout:
        return WordLayout((Field("count", self.count_bits, "sum"),
                           Field("delay_sum", self.delay_bits, "sum"),
                           Field("delay_sq_sum", self.sq_bits, "sum"),
                           Field("digest_sum", self.digest_bits, "sum")))

    @property
    def buckets(self) -> int:
        return self.cells

    @property
    def shape(self):
        return (1, self.cells)

    @property
    def hash_functions(self) -> dict[HashPurpose, int]:
        # flow hash 0 picks the cell, flow hash 1 is the flow's digest
        return {HashPurpose.PACKET: 1, HashPurpose.LDS_FLOW: 2}

    @property
    def config_register_values(self) -> dict[str, int]:
        return {"dim0": 1, "dim1": self.cells, "xor_bits": 0, "vlda_cells": 0}


#: The configuration class of each synopsis kind: the one registry of kinds (a new kind
#: adds its class here; every layer reaches the kind's facts from its configuration).
CONFIG_CLASSES: dict[str, type[SynopsisConfig]] = {
    c.kind: c for c in (LdaConfig, RdaConfig, LdsConfig, OpaConfig, RliConfig)}


def config_class(kind: str) -> type[SynopsisConfig]:
    """The configuration class of ``kind`` (``"lda"``, ``"rda"``, ``"lds"``)."""
    if kind not in CONFIG_CLASSES:
        raise ValueError(f"unknown synopsis kind {kind!r}; expected one of "
                         f"{sorted(CONFIG_CLASSES)}")
    return CONFIG_CLASSES[kind]


def _canonical_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def canonical_json(config: SynopsisConfig) -> str:
    """The configuration's canonical JSON text, the input of its ID (docs/SPEC.md §5):
    ``to_dict()`` with keys sorted, no spaces, integers in decimal, ``tick_ns`` as the
    shortest decimal that reads back as the same double (Python's ``repr``)."""
    return _canonical_json(config.to_dict())


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
    """Raise :class:`ConfigMismatch` unless both synopses share one configuration.

    The message names the differing parameters with both values; it is never empty (two
    canonical forms with equal values cannot hash differently, but a mismatch of kinds or
    of canonical text is named as such)."""
    if sender.config_id == receiver.config_id:
        return
    a, b = sender.to_dict(), receiver.to_dict()
    names = [k for k in sorted(set(a) | set(b))
             if _canonical_json({k: a.get(k)}) != _canonical_json({k: b.get(k)})]
    if names:
        detail = "; ".join(f"{k} {_show(a.get(k))} vs {_show(b.get(k))}" for k in names)
        what = f"{', '.join(names)} ({detail})"
    else:
        what = (f"none by value; canonical forms {canonical_json(sender)} vs "
                f"{canonical_json(receiver)}")
    raise ConfigMismatch(
        f"synopses have different configurations (config ID {sender.config_id:#010x} "
        f"vs {receiver.config_id:#010x}); differing parameters: {what}")


def _show(value) -> str:
    if value is None:
        return "absent"
    if isinstance(value, int) and value > 0xFFFF:
        return f"{value:#x}"
    return json.dumps(value, separators=(",", ":"))
