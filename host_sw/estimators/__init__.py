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
