# SPDX-License-Identifier: BSD-2-Clause
"""The ``ldactl`` command line: the top layer of the host package (``docs/DESIGN.md``)."""

from host_sw.cli.main import main

__all__ = ["main"]
