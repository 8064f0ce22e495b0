# SPDX-License-Identifier: BSD-2-Clause
"""The counter path of LDA, RDA and LDS: bucket selection, the double-buffered counter
bank, its copies' life cycle and their check value."""
