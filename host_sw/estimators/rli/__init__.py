# SPDX-License-Identifier: BSD-2-Clause
"""RLI on the host: per-flow estimates, and RLI from two captures."""
