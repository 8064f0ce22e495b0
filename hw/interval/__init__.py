# SPDX-License-Identifier: BSD-2-Clause
"""Interval control: when an interval ends, and the ledger that swaps the copies and
keeps each copy's status."""
