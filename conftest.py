# SPDX-License-Identifier: BSD-2-Clause
"""Suite-wide pytest hooks."""


def pytest_collection_modifyitems(config, items):
    """Run the longest tests first: the gate-level tests (their netlist's synthesis and
    Verilator build take minutes on a clean clone), then the other cocotb benches (a core
    export and a simulator build each). Started first, they overlap with the many short
    tests on the other worker instead of running alone at the suite's end."""
    items.sort(key=lambda item: (item.get_closest_marker("gate_level") is None,
                                 item.get_closest_marker("cocotb") is None))
