# SPDX-License-Identifier: BSD-2-Clause
"""How ``ldactl`` shows results on a terminal: the one table renderer of interval records,
and the progress bar of long offline runs."""
