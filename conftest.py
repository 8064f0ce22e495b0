# SPDX-License-Identifier: BSD-2-Clause
"""Suite-wide pytest hooks."""


def pytest_collection_modifyitems(config, items):
    """Run the gate-level tests first: their netlist's synthesis and Verilator build take
    most of their time (minutes on a clean clone), and started first they overlap with the
    rest of the suite on the other worker instead of running alone at its end."""
    items.sort(key=lambda item: item.get_closest_marker("gate_level") is None)
