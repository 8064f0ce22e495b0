# SPDX-License-Identifier: BSD-2-Clause
"""The gateware's table of synopsis kinds: what each kind needs from the packet path.

The one place in ``hw/`` that tells the kinds apart (docs/DESIGN.md, "Adding a synopsis
kind"): the hasher (:mod:`hw.hash_h3`), the bucket selector (:mod:`hw.counters.bucket_select`) and
the counter bank (:mod:`hw.counters.counter_bank`) look their kind's facts up in :data:`KINDS` by
``config.kind`` (the configuration classes and their registry are in
:mod:`host_sw.contracts.config`). A new kind adds its entry here and its selection function
in :mod:`hw.counters.kind_select`.
"""

from dataclasses import dataclass
from typing import Callable

from host_sw.contracts.config import CONFIG_CLASSES
from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.hashing import HashPurpose
from hw.counters.kind_select import select_lda, select_lds, select_rda, select_rli

__all__ = ["KindGateware", "KINDS", "kind_gateware"]


@dataclass(frozen=True)
class KindGateware:
    """One kind's facts for the gateware; each callable takes the configuration.

    Attributes
    ----------
    lane_geometry : config → (lanes, depth)
        Counter words one request may update in parallel (one RAM per lane), and words per
        lane of one copy (``lanes * depth == config.buckets``).
    hashes : config → {HashPurpose: count}
        The H3 hashes the kind needs besides the packet hash:
        ``HashPurpose.RDA_BUCKET`` (32 bits of the S-boxed packet hash, one per bank),
        ``HashPurpose.FIELD`` (the 64-bit field hash ``F`` of the S-boxed packet hash),
        ``HashPurpose.LDS_OFFSET`` (32 bits of the S-boxed packet hash, one per row) and
        ``HashPurpose.LDS_FLOW`` (32 bits of the flow-masked window, one per row; these
        need the flow byte masks).
    thresholds : config → (port name, count) or None
        The selector's run-time leading-zero thresholds (CSRs), if the kind samples.
    select : function
        The kind's bucket selection (:mod:`hw.counters.kind_select`).
    field_bits : config → int
        The bits of ``F`` the kind's selection reads (a mask; the hasher builds only
        these output bits of the field hash, the others are 0; default
        none).
    """
    lane_geometry: Callable
    hashes: Callable
    thresholds: Callable
    select: Callable
    field_bits: Callable = lambda c: 0


#: ``F[63:32]``, the sampling word (leading zeros: LDA bank, LDS row sampling).
_SAMPLING_WORD = ((1 << 32) - 1) << 32


def _select_opa(m, config, rec, valid, thresholds, req):
    """OPA: no bucket selection; its words come from :class:`hw.opa.cah.OpaCah` on its
    own measurement path (:class:`hw.opa.opa_path.OpaPath`)."""
    raise ValueError("the OPA kind's words come from hw.opa.opa_path.OpaPath (hw.opa.cah); "
                     "the core's bucket selector does not build it")

#: The gateware facts of each synopsis kind, by ``config.kind``.
KINDS = {
    "lda": KindGateware(
        lane_geometry=lambda c: (1, c.banks * c.rows),
        hashes=lambda c: {HashPurpose.FIELD: 1},
        field_bits=lambda c: _SAMPLING_WORD | (c.rows - 1),
        thresholds=lambda c: ("thresholds", c.banks),
        select=select_lda),
    "rda": KindGateware(
        lane_geometry=lambda c: (c.banks, c.buckets_per_bank),
        hashes=lambda c: {HashPurpose.RDA_BUCKET: c.banks},
        thresholds=lambda c: None,
        select=select_rda),
    "lds": KindGateware(
        lane_geometry=lambda c: (c.rows, c.cells),
        hashes=lambda c: {HashPurpose.LDS_FLOW: c.rows, HashPurpose.FIELD: 1,
                          HashPurpose.LDS_OFFSET: c.rows},
        field_bits=lambda c: _SAMPLING_WORD | ((1 << c.digest_bits) - 1),
        thresholds=lambda c: ("row_thresholds", c.rows),
        select=select_lds),
    # RLI: one row of per-flow cells; the flow hashes 0 and 1 give cell and digest; the
    # bank's increments come from the interpolation (hw.rli.receiver), not the selector.
    "rli": KindGateware(
        lane_geometry=lambda c: (1, c.cells),
        hashes=lambda c: {HashPurpose.LDS_FLOW: 2},
        thresholds=lambda c: None,
        select=select_rli),
    # OPA: one word per group (w, B_0..B_{k-1}), the packet hash alone; the words come
    # from hw.opa.cah.OpaCah (hw.opa.opa_path), not the selector and counter bank.
    "opa": KindGateware(
        lane_geometry=lambda c: (1, c.groups),
        hashes=lambda c: {},
        thresholds=lambda c: None,
        select=_select_opa),
}


def kind_gateware(config) -> KindGateware:
    """The :class:`KindGateware` of ``config``'s kind (``ValueError`` for anything that
    is not a configuration of a kind in the table)."""
    if not isinstance(config, SynopsisConfig) or config.kind not in KINDS:
        raise ValueError(f"config must be one of the configurations "
                         f"{', '.join(c.__name__ for c in CONFIG_CLASSES.values())}, "
                         f"not {type(config).__name__}")
    return KINDS[config.kind]
