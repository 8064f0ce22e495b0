# SPDX-License-Identifier: BSD-2-Clause
"""What ``ldactl`` prints, plots and watches for OPA intervals."""
