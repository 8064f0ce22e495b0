# SPDX-License-Identifier: BSD-2-Clause
"""What ``ldactl`` prints and watches for RLI."""
