# SPDX-License-Identifier: BSD-2-Clause
"""OPA on the host: Algorithm 1's search levels, per-packet recovery and the estimate
from exports or a simulation."""
