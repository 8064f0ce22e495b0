# SPDX-License-Identifier: BSD-2-Clause
"""Host side of the LDA/RDA/LDS measurement product: the shared contracts (hash, word
layouts, configuration), the golden model, the estimators, the traffic simulator, bus
transports, the device driver and the ``ldactl`` CLI."""
