# SPDX-License-Identifier: BSD-2-Clause
"""Imports run one way (``docs/DESIGN.md``, "Layers"): the import-linter contracts of
``pyproject.toml`` (``[tool.importlinter]``) hold, the modules of ``host_sw`` and ``hw``
import each other in no cycle, and nothing in the product imports a test module.

A failure names every broken import: the contract and the chain of imports with line
numbers as import-linter reports them, or the modules of a cycle with the imports that
close it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp  # import-linter's graph library (the test extra)
import pytest

ROOT = Path(__file__).resolve().parent.parent
#: The product, which imports no test module.
PRODUCT = ("host_sw", "hw", "boards")
#: The packages whose modules must form no import cycle.
ACYCLIC = ("host_sw", "hw")

_LINT = ("import sys; from importlinter.cli import lint_imports_command; "
         "sys.exit(lint_imports_command())")


def _broken_section(report: str) -> str:
    """The "Broken contracts" part of an import-linter report (every broken import with
    its chain), or the whole report when it has no such part (a configuration error)."""
    marker = "Broken contracts"
    return report[report.index(marker):] if marker in report else report


def test_import_linter_contracts_are_kept():
    """lint-imports reads [tool.importlinter] of the pyproject.toml in its working
    directory."""
    result = subprocess.run([sys.executable, "-c", _LINT, "--no-cache"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        pytest.fail("import-linter contracts broken (pyproject.toml [tool.importlinter]):\n"
                    + _broken_section(result.stdout + result.stderr), pytrace=False)


def _strongly_connected(graph, modules: set[str]) -> list[list[str]]:
    """Tarjan's strongly connected components of the import graph restricted to
    ``modules``, iteratively (no recursion limit); only those with more than one module
    (a module importing itself is not a cycle between modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components = []
    counter = 0
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & modules)
             for m in modules}
    for start in sorted(modules):
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            if i < len(edges[node]):
                work.append((node, i + 1))
                succ = edges[node][i]
                if succ not in index:
                    work.append((succ, 0))
                elif succ in on_stack:
                    low[node] = min(low[node], index[succ])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return components


def _describe_cycle(graph, component: list[str]) -> str:
    members = set(component)
    lines = [f"cycle among {', '.join(component)}:"]
    for importer in component:
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & members):
            details = graph.get_import_details(importer=importer, imported=imported)
            where = ", ".join(f"l.{d['line_number']}" for d in details)
            lines.append(f"  {importer} -> {imported} ({where})")
    return "\n".join(lines)


def test_no_import_cycle_in_host_sw_and_hw():
    graph = grimp.build_graph(*ACYCLIC, cache_dir=None)
    modules = {m for m in graph.modules if m.split(".")[0] in ACYCLIC}
    cycles = _strongly_connected(graph, modules)
    if cycles:
        pytest.fail("import cycles:\n" + "\n".join(_describe_cycle(graph, c) for c in cycles),
                    pytrace=False)


def test_strongly_connected_components_finds_a_cycle():
    """The cycle finder itself, on a small graph: a -> b -> c -> a and d alone."""
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c", "p.d"):
        graph.add_module(module)
    for importer, imported in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"),
                               ("p.d", "p.a")):
        graph.add_import(importer=importer, imported=imported, line_number=1,
                         line_contents=f"import {imported}")
    assert _strongly_connected(graph, {"p.a", "p.b", "p.c", "p.d"}) == [["p.a", "p.b", "p.c"]]


def test_product_imports_no_test_module():
    """``tests`` is no package, so the contracts cannot name it: no product module imports
    ``tests``, ``conftest`` or a ``test_*`` module (``sim_tb`` and ``bench`` are the
    contracts' business)."""
    graph = grimp.build_graph(*PRODUCT, include_external_packages=True, cache_dir=None)
    bad = []
    for module in sorted(graph.modules):
        if module.split(".")[0] not in PRODUCT:
            continue
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            top = imported.split(".")[0]
            if top in ("tests", "conftest") or top.startswith("test_"):
                bad.append(f"{module} -> {imported}")
    if bad:
        pytest.fail("the product imports test code:\n" + "\n".join(bad), pytrace=False)
