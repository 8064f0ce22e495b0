# SPDX-License-Identifier: BSD-2-Clause
"""The frame stream through the core: its beats, the timebase, the header tap in front
and the frame merger behind (``docs/DESIGN.md``, "Data flow of a packet")."""
