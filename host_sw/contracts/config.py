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

import json
from dataclasses import dataclass, fields
from typing import ClassVar

from host_sw.contracts.config_base import (ConfigMismatch,
                                           SynopsisConfig, ThresholdRegister, canonical_json,
                                           canonical_json_text, is_power_of_two)
from host_sw.contracts.hashing import HashPurpose
from host_sw.contracts.layouts import Field, WordLayout

__all__ = ["KIND_CODES", "CONFIG_CLASSES", "config_class", "LdaConfig", "RdaConfig",
           "LdsConfig", "OpaConfig", "RliConfig", "check_comparable", "config_from_dict"]

#: The synopsis kind codes of the CONFIG register and of the control frames' kind field.
KIND_CODES = {"lda": 1, "rda": 2, "lds": 3, "opa": 4, "rli": 5}

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
        super().__post_init__()
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
    updates its group's word (contract: :mod:`host_sw.contracts.opa.words`, SPEC §8)."""
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
        return {"dim0": 1, "dim1": self.cells, "xor_bits": self.digest_bits, "vlda_cells": 0}


#: The configuration class of each synopsis kind: the one registry of kinds (a new kind
#: adds its class here; every layer reaches the kind's facts from its configuration).
CONFIG_CLASSES: dict[str, type[SynopsisConfig]] = {
    c.kind: c for c in (LdaConfig, RdaConfig, LdsConfig, OpaConfig, RliConfig)}


def config_class(kind: str) -> type[SynopsisConfig]:
    """The configuration class of ``kind`` (a key of :data:`CONFIG_CLASSES`)."""
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
    """Raise :class:`ConfigMismatch` unless both synopses share one configuration.

    The message names the differing parameters with both values; it is never empty (two
    canonical forms with equal values cannot hash differently, but a mismatch of kinds or
    of canonical text is named as such)."""
    if sender.config_id == receiver.config_id:
        return
    a, b = sender.to_dict(), receiver.to_dict()
    names = [k for k in sorted(set(a) | set(b))
             if canonical_json_text({k: a.get(k)}) != canonical_json_text({k: b.get(k)})]
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
