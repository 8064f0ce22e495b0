# SPDX-License-Identifier: BSD-2-Clause
"""Arithmetic and pipeline primitives: carry-chain select-add, divider, multiplier,
register stages."""
