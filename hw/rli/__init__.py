# SPDX-License-Identifier: BSD-2-Clause
"""RLI in gateware: the sender's reference frames, the receiver's reference check,
interpolation and per-flow counters."""
