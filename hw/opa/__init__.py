# SPDX-License-Identifier: BSD-2-Clause
"""OPA in gateware: the sender's per-group words, their read-out, and the per-packet
record frames."""
