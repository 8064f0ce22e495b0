# SPDX-License-Identifier: BSD-2-Clause
"""Suite-wide pytest hooks."""


def pytest_collection_modifyitems(config, items):
    """Run the longest tests first: the gate-level tests (their netlist's synthesis and
    Verilator build take minutes on a clean clone), then the other cocotb benches (a core
    export and a simulator build each). Started first, they overlap with the many short
    tests on the other worker instead of running alone at the suite's end."""
    items.sort(key=lambda item: (item.get_closest_marker("gate_level") is None,
                                 item.get_closest_marker("cocotb") is None))


def pytest_runtest_protocol(item, nextitem):
    """With ``LDA_TEST_CPU_LOG=FILE``: append each test's CPU seconds (this process and
    the simulators it waited for) and wall seconds to FILE, tab-separated — the suite's
    budget is CPU on two cores, which wall-clock durations on a loaded machine do not
    show."""
    import os

    path = os.environ.get("LDA_TEST_CPU_LOG")
    if not path:
        return None
    import resource
    import time

    def cpu():
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

    start_cpu, start_wall = cpu(), time.monotonic()
    from _pytest.runner import runtestprotocol

    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    runtestprotocol(item, nextitem=nextitem)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    with open(path, "a") as log:
        log.write(f"{cpu() - start_cpu:.2f}\t{time.monotonic() - start_wall:.2f}\t"
                  f"{item.nodeid}\n")
    return True
