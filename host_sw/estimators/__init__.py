# SPDX-License-Identifier: BSD-2-Clause
"""Estimators: pure functions from a sender's and a receiver's :class:`~host_sw.golden.Synopsis`
(plus, for RDA, the two caches of ``(ID, timestamp)``) to delay and loss estimates with
confidence intervals. Exact integer arithmetic up to the final division.

Data flow (``DESIGN.md``, host side): snapshot of an interval ► **estimators** ► CLI/export.
"""
