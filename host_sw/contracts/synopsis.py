# SPDX-License-Identifier: BSD-2-Clause
"""The snapshot of one synopsis: a measurement point's counters for one interval, as
arrays per word-layout field, and their packing into counter words in memory order
(``docs/SPEC.md`` §4). Gateware exports, device reads, the golden model and the
estimators all exchange this one type: it is the "snapshot of an interval" of
docs/DESIGN.md ("Data flow of a counter"), in the contracts layer so that the frame
reassembler and the driver decode into it without loading the golden model."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.config import check_comparable
from host_sw.contracts.layouts import wrap

__all__ = ["Synopsis"]


@dataclass
class Synopsis:
    """One measurement point's counters for one interval.

    ``fields`` maps each layout field name (``count``, ``ts_sum``, ``id_xor`` /
    ``digest``) to a uint64 array of shape ``config.shape``, already reduced modulo the
    field width.
    """
    config: SynopsisConfig
    fields: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def empty(cls, config: SynopsisConfig) -> "Synopsis":
        return cls(config, {name: np.zeros(config.shape, dtype=np.uint64)
                            for name in config.layout.names})

    def __getitem__(self, name) -> np.ndarray:
        return self.fields[name]

    @property
    def count(self) -> np.ndarray:
        return self.fields["count"]

    @property
    def ts_sum(self) -> np.ndarray:
        return self.fields["ts_sum"]

    def words(self) -> list[int]:
        """Packed counter words in memory order (bank/row major), as the gateware holds
        them (``docs/SPEC.md`` §4)."""
        return self.config.layout.pack(self.fields)

    @classmethod
    def from_words(cls, config: SynopsisConfig, words) -> "Synopsis":
        if len(words) != config.buckets:
            raise ValueError(f"{config.kind} synopsis has {config.buckets} words, "
                             f"got {len(words)}")
        return cls(config, config.layout.unpack(list(words), config.shape))

    def merged(self, other: "Synopsis") -> "Synopsis":
        """Counters of both (as if one synopsis saw both packet sets)."""
        check_comparable(self.config, other.config)
        out = {}
        for f in self.config.layout.fields:
            a, b = self.fields[f.name], other.fields[f.name]
            out[f.name] = wrap(a + b, f.width) if f.combine == "sum" else a ^ b
        return Synopsis(self.config, out)

    def __eq__(self, other):
        return (isinstance(other, Synopsis) and self.config == other.config
                and all(np.array_equal(self.fields[k], other.fields[k]) for k in self.fields))
