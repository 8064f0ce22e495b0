# SPDX-License-Identifier: BSD-2-Clause
"""Helpers shared by the estimators (private): argument checks, exact ratios, the
Hoeffding half-width of the LDA paper's bound (1), and a salted 64-bit mixer.

Data flow (docs/DESIGN.md, "Layers and the import rule"): used by the **estimators**
only; it imports the contracts.
"""

from __future__ import annotations

import math
from dataclasses import fields
from fractions import Fraction

import numpy as np

from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.config import check_comparable
from host_sw.contracts.hashing import GOLDEN_GAMMA, MASK64, mix64_array

__all__ = ["check_pair", "check_kind", "check_confidence", "hoeffding_half_width",
           "fraction_to_float", "salted_mix64", "jsonable", "dataclass_to_dict"]


def check_kind(config: SynopsisConfig, config_type: type, message: str) -> None:
    """Raise ``ValueError(message)`` unless ``config`` is of ``config_type``'s kind."""
    if config.kind != config_type.kind:
        raise ValueError(message)


def check_pair(sender, receiver, config_type: type, what: str) -> SynopsisConfig:
    """Check that both synopses share one configuration of ``config_type``; return it.

    Raises :class:`~host_sw.contracts.config_base.ConfigMismatch` when the configurations differ and a
    ``ValueError`` when they are of the wrong kind.
    """
    check_comparable(sender.config, receiver.config)
    config = sender.config
    check_kind(config, config_type, f"{what} needs {config_type.kind.upper()} synopses, "
               f"not {config.kind.upper()} ({type(config).__name__})")
    for side, syn in (("sender", sender), ("receiver", receiver)):
        for name in config.layout.names:
            arr = syn.fields.get(name)
            if arr is None:
                raise ValueError(f"the {side} synopsis has no {name!r} field")
            if np.shape(arr) != config.shape:
                raise ValueError(f"the {side} synopsis field {name!r} has shape "
                                 f"{np.shape(arr)}, the configuration says {config.shape}")
    return config


def check_confidence(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be strictly between 0 and 1, not {confidence}")
    return float(confidence)


def hoeffding_half_width(std: float, samples: int, confidence: float) -> float:
    """Half-width of the confidence interval of the mean from the LDA paper's bound (1).

    ``Pr[|D - mu| >= eps*mu] <= 2 exp(-eps^2 S mu^2 / (2 sigma^2))``; setting the right
    side to ``delta = 1 - confidence`` gives ``eps*mu = sigma * sqrt(2 ln(2/delta) / S)``.
    ``std`` is the *estimated* standard deviation (a plug-in for the unknown sigma).
    """
    delta = 1.0 - confidence
    return std * math.sqrt(2.0 * math.log(2.0 / delta) / samples)


def fraction_to_float(value: Fraction) -> float:
    return value.numerator / value.denominator


def jsonable(value):
    """Convert estimate fields to JSON-friendly values: a :class:`~fractions.Fraction`
    becomes ``"num/den"``, dataclasses with ``to_dict`` their dict, numpy scalars and
    arrays Python ints/floats/lists, tuples lists."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, Fraction):
        return f"{value.numerator}/{value.denominator}"
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, (tuple, list)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


def dataclass_to_dict(obj) -> dict:
    """``{field: jsonable(value)}`` for a dataclass instance."""
    return {f.name: jsonable(getattr(obj, f.name)) for f in fields(obj)}


def salted_mix64(values, salt: int) -> np.ndarray:
    """:func:`~host_sw.contracts.hashing.mix64_array` of ``values + (salt + 1) *
    GOLDEN_GAMMA`` (wrapping): a fast 64-bit mixer for sketches that need a hash
    independent of the bucket hashes (MinHash, FineComb buckets)."""
    with np.errstate(over="ignore"):
        z = np.asarray(values, dtype=np.uint64) + np.uint64((GOLDEN_GAMMA * (salt + 1)) & MASK64)
    return mix64_array(z)
