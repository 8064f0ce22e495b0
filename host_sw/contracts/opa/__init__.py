# SPDX-License-Identifier: BSD-2-Clause
"""The OPA contract: groups and words (§8), the timestamp layer and the per-packet
record frames."""
