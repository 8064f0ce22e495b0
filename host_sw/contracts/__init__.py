# SPDX-License-Identifier: BSD-2-Clause
"""The contracts every side shares, each defined once: the hash and its field split, the
counter word layouts, the configurations and their ID, the snapshot of a synopsis, the
register map, the control/export frame format and the bus protocol (``docs/SPEC.md``).

The bottom layer of the project (``docs/DESIGN.md``): it imports neither Amaranth nor the
golden model nor anything above it; the gateware (``hw``) imports only this package.
"""
