# SPDX-License-Identifier: BSD-2-Clause
"""The gateware's table of synopsis kinds: what each kind needs from the packet path.

The one place in ``hw/`` that tells the kinds apart (docs/DESIGN.md, "Adding a synopsis
kind"): the hasher (:mod:`hw.hash_h3`), the bucket selector (:mod:`hw.bucket_select`) and
the counter bank (:mod:`hw.counter_bank`) look their kind's facts up in :data:`KINDS` by
``config.kind`` (the configuration classes and their registry are in
:mod:`host_sw.contracts.config`). A new kind adds its entry here and its selection function
in :mod:`hw.kind_select`.
"""

from dataclasses import dataclass
from typing import Callable

from host_sw.contracts.config import CONFIG_CLASSES, SynopsisConfig
from host_sw.contracts.hashing import HashPurpose
from hw.kind_select import select_lda, select_lds, select_rda

__all__ = ["KindGateware", "KINDS", "OWN_GATEWARE", "kind_gateware"]


@dataclass(frozen=True)
class KindGateware:
    """One kind's facts for the gateware; each callable takes the configuration.

    Attributes
    ----------
    lane_geometry : config → (lanes, depth)
        Counter words one request may update in parallel (one RAM per lane), and words per
        lane of one copy (``lanes * depth == config.buckets``).
    hashes : config → {HashPurpose: count}
        The 32-bit H3 hashes the kind needs besides the packet hash:
        ``HashPurpose.RDA_BUCKET`` (of the S-boxed packet hash, one per bank) and
        ``HashPurpose.LDS_FLOW`` (of the flow-masked window, one per row; these need the
        flow byte masks).
    thresholds : config → (port name, count) or None
        The selector's run-time leading-zero thresholds (CSRs), if the kind samples.
    select : function
        The kind's bucket selection (:mod:`hw.kind_select`).
    """
    lane_geometry: Callable
    hashes: Callable
    thresholds: Callable
    select: Callable


#: Kinds whose gateware is not the counter-bank core (no row in :data:`KINDS`): the
#: module and component that compute their words.
OWN_GATEWARE = {"opa": "hw.opa_cah.OpaCah"}

#: The gateware facts of each synopsis kind, by ``config.kind``.
KINDS = {
    "lda": KindGateware(
        lane_geometry=lambda c: (1, c.banks * c.rows),
        hashes=lambda c: {},
        thresholds=lambda c: ("thresholds", c.banks),
        select=select_lda),
    "rda": KindGateware(
        lane_geometry=lambda c: (c.banks, c.buckets_per_bank),
        hashes=lambda c: {HashPurpose.RDA_BUCKET: c.banks},
        thresholds=lambda c: None,
        select=select_rda),
    "lds": KindGateware(
        lane_geometry=lambda c: (c.rows, c.cells),
        hashes=lambda c: {HashPurpose.LDS_FLOW: c.rows},
        thresholds=lambda c: ("row_thresholds", c.rows),
        select=select_lds),
}


def kind_gateware(config) -> KindGateware:
    """The :class:`KindGateware` of ``config``'s kind (``ValueError`` for anything that
    is not a configuration of a kind in the table)."""
    if not isinstance(config, SynopsisConfig) or config.kind not in KINDS:
        raise ValueError(f"config must be one of the configurations "
                         f"{', '.join(c.__name__ for c in CONFIG_CLASSES.values())}, "
                         f"not {type(config).__name__}")
    return KINDS[config.kind]
