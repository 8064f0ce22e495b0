# SPDX-License-Identifier: BSD-2-Clause
"""Helpers shared by the estimators (private): argument checks, exact ratios, the
Hoeffding half-width of the LDA paper's bound (1), and a vectorised 64-bit mixer.

Data flow (``DESIGN.md``, host side): used by the **estimators** only.
"""

from __future__ import annotations

import math
from dataclasses import fields
from fractions import Fraction

import numpy as np

from host_sw.contracts.config import SynopsisConfig, check_comparable

__all__ = ["check_pair", "check_confidence", "hoeffding_half_width", "fraction_to_float",
           "mix64_array", "jsonable", "dataclass_to_dict"]


def check_pair(sender, receiver, config_type: type, what: str) -> SynopsisConfig:
    """Check that both synopses share one configuration of ``config_type``; return it.

    Raises :class:`~host_sw.contracts.config.ConfigMismatch` when the configurations differ and a
    ``ValueError`` when they are of the wrong kind.
    """
    check_comparable(sender.config, receiver.config)
    config = sender.config
    if not isinstance(config, config_type):
        raise ValueError(f"{what} needs {config_type.kind.upper()} synopses, "
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


_C1 = np.uint64(0xBF58476D1CE4E5B9)
_C2 = np.uint64(0x94D049BB133111EB)


def mix64_array(values, salt: int = 0) -> np.ndarray:
    """SplitMix64's finaliser over a uint64 array (wrapping arithmetic), with an optional
    salt added first: a fast 64-bit mixer for sketches that need a hash independent of
    the bucket hashes (MinHash, FineComb buckets)."""
    z = np.asarray(values, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = z + np.uint64((0x9E3779B97F4A7C15 * (salt + 1)) & ((1 << 64) - 1))
        z = (z ^ (z >> np.uint64(30))) * _C1
        z = (z ^ (z >> np.uint64(27))) * _C2
        z = z ^ (z >> np.uint64(31))
    return z
