# SPDX-License-Identifier: BSD-2-Clause
"""The shape of the tree that ``docs/DESIGN.md`` ("The layout") describes: product
folders of at most 15 modules, and every name imported from the module that defines it
(no import through a re-export, apart from a package ``__init__``'s deliberate public
face)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("hw", "host_sw", "boards", "sim_tb")
SOURCES = PRODUCT + ("bench", "tests")
MAX_MODULES = 15
#: ``from PACKAGE import NAME`` kept on purpose: the console script's entry point.
PUBLIC_FACES = {("host_sw.cli", "main")}


def _modules():
    mods = {}
    for top in SOURCES:
        for f in (ROOT / top).rglob("*.py"):
            parts = list(f.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            mods[".".join(parts)] = f
    return mods


def _bindings(tree):
    """Names a module defines at its top level, and the names it imports
    (``{name: (module, original name)}``)."""
    defined, imported = set(), {}

    def scan(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                imported[a.asname or a.name] = (node.module, a.name)
        elif isinstance(node, ast.Import):
            defined.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For)):
            for sub in ast.iter_child_nodes(node):
                if isinstance(sub, ast.stmt):
                    scan(sub)
            for handler in getattr(node, "handlers", []):
                for sub in handler.body:
                    scan(sub)

    for node in tree.body:
        scan(node)
    return defined, imported


def test_product_folders_hold_at_most_15_modules():
    crowded = []
    for top in PRODUCT:
        for folder in [ROOT / top, *(d for d in (ROOT / top).rglob("*") if d.is_dir())]:
            count = len(list(folder.glob("*.py")))
            if count > MAX_MODULES:
                crowded.append(f"{folder.relative_to(ROOT)}: {count} modules")
    assert not crowded, crowded


def test_no_import_through_a_re_export():
    mods = _modules()
    trees = {m: ast.parse(f.read_text("utf-8")) for m, f in mods.items()}
    bindings = {m: _bindings(t) for m, t in trees.items()}

    def home(mod, name):
        for _ in range(20):
            if f"{mod}.{name}" in mods or mod not in mods:
                return mod
            defined, imported = bindings[mod]
            if name in defined or name not in imported or imported[name][0] not in mods:
                return mod
            mod, name = imported[name]
        return mod

    through = []
    for mod, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in mods:
                for a in node.names:
                    if (node.module, a.name) in PUBLIC_FACES:
                        continue
                    h = home(node.module, a.name)
                    if h != node.module:
                        through.append(f"{mods[mod].relative_to(ROOT)}:{node.lineno}: "
                                       f"{a.name} from {node.module}, defined in {h}")
    assert not through, "\n".join(through)
