# SPDX-License-Identifier: BSD-2-Clause
"""Suite-wide pytest hooks."""


#: CPU seconds of the long test files (cocotb benches) in a clean-clone run of
#: ``./run_tests.sh`` (``LDA_TEST_CPU_LOG``); only the order of the tests depends on them.
LONG_FILE_CPU = {
    "sim_tb/benches/test_core.py": 521, "sim_tb/benches/test_gate_level.py": 317,
    "sim_tb/benches/test_rli_pair.py": 124, "sim_tb/benches/test_opa_core.py": 92,
    "sim_tb/benches/test_opa_pair.py": 110, "sim_tb/demo/test_two_device.py": 82,
    "sim_tb/benches/test_opa_cah.py": 38, "sim_tb/benches/test_standin.py": 33,
    "sim_tb/benches/test_ecp5_memory.py": 24,
}
#: Files whose tests use another file's export or build: run on the same worker, so
#: neither waits on the other's build lock.
SHARES_BUILD_OF = {"sim_tb/benches/test_core_ecp5.py": "sim_tb/benches/test_core.py",
                   "sim_tb/benches/test_opa_pair.py": "sim_tb/benches/test_opa_core.py"}


def pytest_collection_modifyitems(config, items):
    """Run the longest tests first: the gate-level tests (their netlist's synthesis and
    Verilator build take minutes on a clean clone), then the other cocotb benches (a core
    export and a simulator build each). Started first, they overlap with the many short
    tests instead of running alone at the suite's end.

    Under ``--dist worksteal`` (``run_tests.sh``) each worker first gets one contiguous
    share of the items, and an idle worker steals from the end of another's queue. So the
    long tests are split between the shares, a file (with the files that share its
    builds) on one worker, the largest first to the least loaded (:data:`LONG_FILE_CPU`),
    each share starting with its long tests; otherwise every long test sits in the first
    share and one worker runs them one after another while the other finishes the short
    tests and waits."""
    import os

    items.sort(key=lambda item: (item.get_closest_marker("gate_level") is None,
                                 item.get_closest_marker("cocotb") is None))
    # the order that counts is the workers' (each collects; the controller schedules the
    # indices of their collection), which see the run's options in ``workerinput``
    worker = getattr(config, "workerinput", None)
    if worker is None:
        return
    workers, argv = worker.get("workercount", 1), worker.get("mainargv", [])
    worksteal = "--dist=worksteal" in argv or any(
        a == "--dist" and b == "worksteal" for a, b in zip(argv, argv[1:]))
    if not worksteal or workers < 2:
        return

    def group(item):
        path = item.nodeid.split("::", 1)[0]
        return SHARES_BUILD_OF.get(path, path)

    def long_test(item):
        return (item.get_closest_marker("cocotb") is not None
                and (item.get_closest_marker("slow") is None or os.environ.get("LDA_SLOW")))

    long = [item for item in items if long_test(item)]
    short = [item for item in items if not long_test(item)]
    groups = {}
    for item in long:
        groups.setdefault(group(item), set()).add(item.nodeid.split("::", 1)[0])
    weight = {g: sum(LONG_FILE_CPU.get(path, 10) for path in paths)
              for g, paths in groups.items()}
    load, owner = [0] * workers, {}
    for g in sorted(groups, key=lambda g: (-weight[g], g)):
        w = min(range(workers), key=lambda w: (load[w], w))
        owner[g] = w
        load[w] += weight[g]
    # the shares xdist's work stealing deals out first: len // workers of what is left
    shares, left = [], len(items)
    for k in range(workers, 0, -1):
        shares.append(left // k)
        left -= shares[-1]
    ordered = []
    for w, size in enumerate(shares):
        mine = [item for item in long if owner[group(item)] == w]
        ordered += mine + short[:max(0, size - len(mine))]
        short = short[max(0, size - len(mine)):]
    items[:] = ordered + short


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
