# SPDX-License-Identifier: BSD-2-Clause
"""In-band frame formats (EtherType 0x88B5): the header and constants, markers and
synopsis chunks, RLI reference frames."""
