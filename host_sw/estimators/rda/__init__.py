# SPDX-License-Identifier: BSD-2-Clause
"""RDA on the host: decoding, repair, late binding and the exact mean."""
