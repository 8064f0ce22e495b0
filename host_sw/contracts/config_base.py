# SPDX-License-Identifier: BSD-2-Clause
"""The base of every synopsis configuration: :class:`SynopsisConfig` (the parameters every
kind has, their canonical form and the configuration ID), the threshold-register facts and
:func:`canonical_json` (``docs/SPEC.md`` §5). The kinds and their registry
(:data:`~host_sw.contracts.config.CONFIG_CLASSES`) are in :mod:`host_sw.contracts.config`,
which re-exports these names; import them from there.

The configuration ID is the first 4 bytes (big-endian) of SHA-256 over the canonical JSON
of :meth:`~SynopsisConfig.to_dict` (keys sorted, no spaces). So that configurations that
compare equal get one ID, every field is brought to its canonical type on construction
(integer fields to ``int``, ``tick_ns`` to ``float``, tuples of ``int``): ``tick_ns=1``
and ``tick_ns=1.0`` are one configuration. The default byte masks follow the window
(:func:`~host_sw.contracts.hashing.default_masks` of ``window_bytes``, SPEC §2).
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
from host_sw.contracts.layouts import WordLayout

__all__ = ["SynopsisConfig", "ConfigMismatch", "ThresholdRegister", "THRESHOLD_BITS",
           "MASK_FIELDS", "canonical_json", "canonical_json_text", "canonical_int",
           "canonical_value",
           "is_power_of_two", "threshold_for_rate"]


class ConfigMismatch(ValueError):
    """Raised when two synopses with different configurations are compared."""


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


def canonical_int(name: str, value) -> int:
    """``value`` as a Python int: integers (numpy's too) and integral floats (a JSON
    ``1024.0``) are accepted, so that values that compare equal hash equally."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, not {value!r}")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        return int(value)
    raise ValueError(f"{name} must be an integer, not {value!r}")


def canonical_value(name: str, annotation: str, value):
    """A field's value in its canonical type (docs/SPEC.md §5, "Canonical form")."""
    if annotation == "float":
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError(f"{name} must be a number, not {value!r}")
        return float(value)
    if annotation.startswith("tuple"):
        if isinstance(value, (str, bytes)):
            raise ValueError(f"{name} must be a sequence of integers, not {value!r}")
        return tuple(canonical_int(name, v) for v in value)
    return canonical_int(name, value)


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
        defaulted = [n for n in MASK_FIELDS if n.startswith("mask_flow")
                     and getattr(self, n) is None]
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
        # A kind with flow hashes (LDS's cells, RLI's cell and digest) keys them on the
        # 5-tuple; the default flow masks cut to a shorter window would drop the IPv6
        # destination's last bytes and the ports, so flows would share counters unseen.
        if (self.hash_count(HashPurpose.LDS_FLOW) and defaulted
                and self.window_bytes < FLOW_KEY_BYTES):
            raise ValueError(
                f"a {self.window_bytes}-byte window cannot hold the {self.kind.upper()} flow "
                f"key (the default flow masks reach byte {FLOW_KEY_BYTES - 1}, the IPv6 "
                f"destination port): use a window of at least {FLOW_KEY_BYTES} bytes or give "
                f"{' and '.join(defaulted)} explicitly")

    def _canonicalise(self) -> None:
        """Every field to its canonical type; unset masks to the window's defaults."""
        defaults = None
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name in MASK_FIELDS:
                if defaults is None:
                    defaults = default_masks(canonical_int("window_bytes", self.window_bytes))
                value = defaults[f.name.removeprefix("mask_")].as_int()
            annotation = f.type if isinstance(f.type, str) else getattr(
                f.type, "__name__", str(f.type))
            object.__setattr__(self, f.name, canonical_value(f.name, annotation, value))

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


def canonical_json_text(obj) -> str:
    """Any JSON value as canonical text (keys sorted, no spaces, no NaN)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def canonical_json(config: SynopsisConfig) -> str:
    """The configuration's canonical JSON text, the input of its ID (docs/SPEC.md §5):
    ``to_dict()`` with keys sorted, no spaces, integers in decimal, ``tick_ns`` as the
    shortest decimal that reads back as the same double (Python's ``repr``)."""
    return canonical_json_text(config.to_dict())
