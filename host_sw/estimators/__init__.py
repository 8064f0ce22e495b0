# SPDX-License-Identifier: BSD-2-Clause
"""Estimators: pure functions from a sender's and a receiver's
:class:`~host_sw.contracts.synopsis.Synopsis` (plus, for RDA, the two caches of
``(ID, timestamp)``) to delay and loss estimates with confidence intervals. Exact integer
arithmetic up to the final division.

Data flow (docs/DESIGN.md, "Data flow of a counter"): snapshot of an interval ►
**estimators** ► CLI/export. The estimators layer imports the contracts and the model
(docs/DESIGN.md, "Layers and the import rule"); each kind's estimator is its own module
(:mod:`~host_sw.estimators.lda`, :mod:`~host_sw.estimators.rda.estimate`,
:mod:`~host_sw.estimators.lds`).
"""

from host_sw.estimators.baselines import (FineCombEstimate, ProbeEstimate, finecomb_ideal,
                                          poisson_probes)
from host_sw.estimators.lda import (LdaEstimate, estimate_lda, expected_samples,
                                    sampling_rate_for_loss, tuned_threshold, tuned_thresholds)
from host_sw.estimators.rda.estimate import (RdaDecoding, RdaEstimate, decode, estimate_rda, repair,
                                    subtract)
from host_sw.estimators.rda.late import (estimate_set_difference, late_binding_buckets,
                                         rda_from_caches)

__all__ = ["LdaEstimate", "estimate_lda", "expected_samples", "sampling_rate_for_loss",
           "tuned_threshold", "tuned_thresholds", "RdaDecoding", "RdaEstimate", "decode",
           "estimate_rda", "estimate_set_difference", "late_binding_buckets",
           "rda_from_caches", "repair", "subtract", "FineCombEstimate", "ProbeEstimate",
           "finecomb_ideal", "poisson_probes"]
