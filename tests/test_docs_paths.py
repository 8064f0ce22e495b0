# SPDX-License-Identifier: BSD-2-Clause
"""Every repository path the documentation names exists: ``docs/*.md`` and ``README.md``.

What counts as a named path:

* anywhere in the page (prose, inline code, fenced blocks), a word starting with one of
  ``hw/``, ``host_sw/``, ``sim_tb/``, ``bench/``, ``boards/``, ``tests/``, ``docs/``,
  ``scripts/`` and ending in a file extension or ``/`` (a pytest node id's ``::test`` and
  a ``:line`` suffix are cut off; ``{a,b}`` is expanded; ``<placeholder>`` and ``*`` match
  any name, and the glob must match at least one file);
* anywhere in the page, a dotted module name under ``hw``, ``host_sw``,
  ``sim_tb``, ``bench``, ``boards`` or ``scripts`` (``hw.lda_pipeline.MeasurementCore``,
  ``python -m bench.synth_core``): its leading components must be packages and a module
  (or a name a package's ``__init__.py`` defines); what follows the module is taken as an
  attribute and not checked (an all-capitals name after the package, ``bench.NAME``,
  is a placeholder);
* a Markdown link's target without a scheme, relative to the page's folder.

Not checked, because they are outputs and not repository files: paths under ``build/``
(not in the list above), under ``bench/out/`` and under ``sim_tb/sim_build``.

A failure lists every dead path with its page and line.
"""

from __future__ import annotations

import itertools
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
PREFIXES = ("hw", "host_sw", "sim_tb", "bench", "boards", "tests", "docs", "scripts")
MODULE_ROOTS = ("hw", "host_sw", "sim_tb", "bench", "boards", "scripts")
#: Generated outputs, not repository files.
OUTPUTS = ("bench/out/", "sim_tb/sim_build")

_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(PREFIXES) + r")/[^\s`'\"()\[\];|]*)")
_MODULE = re.compile(r"(?<![\w./-])((?:" + "|".join(MODULE_ROOTS) + r")(?:\.[A-Za-z_]\w*)+)")
_FILE_SUFFIXES = {"py", "md", "json", "csv", "v", "sv", "txt", "toml", "sh", "png", "yml",
                  "yaml", "cfg", "ini", "pcap", "bit", "lpf", "il"}


def _expand(path: str) -> list[str]:
    """``a{1,2}b`` → ``a1b``, ``a2b`` (every brace group)."""
    parts = re.split(r"\{([^{}]*)\}", path)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*choices)]


def _clean(path: str) -> str | None:
    """The path part of a named path (no node id, line suffix or trailing punctuation);
    ``None`` when it is not a file or folder path to check."""
    path = path.split("::")[0]
    path = re.sub(r":\d[\d.\-]*.*$", "", path)
    path = path.rstrip(".,:;")
    if any(path.startswith(out) for out in OUTPUTS):
        return None
    if not (path.endswith("/") or re.search(r"\.\w+$", path.split("/")[-1] or "")):
        return None
    return path


def _path_exists(path: str) -> bool:
    for candidate in _expand(path):
        if "<" in candidate or "*" in candidate:
            pattern = re.sub(r"<[^<>]*>", "*", candidate).rstrip("/")
            if not any(ROOT.glob(pattern)):
                return False
        elif not (ROOT / candidate).exists():
            return False
    return True


def _module_exists(name: str) -> bool:
    parts = name.split(".")
    if parts[-1] in _FILE_SUFFIXES:
        return True  # a file name such as hw.py, not a module
    if re.fullmatch(r"[A-Z]+", parts[1]):
        return True  # a placeholder: bench.NAME
    node = ROOT / parts[0]
    for part in parts[1:]:
        if (node / part / "__init__.py").exists():
            node = node / part
        elif (node / f"{part}.py").exists():
            return True
        elif (node / "__init__.py").exists():
            init = (node / "__init__.py").read_text()
            return re.search(rf"\b{re.escape(part)}\b", init) is not None
        else:
            return False
    return node.is_dir()


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def named_paths(page: Path):
    """``(line, kind, name)`` for every path or module ``page`` names."""
    text = page.read_text()
    for m in _PATH.finditer(text):
        path = _clean(m.group(1))
        if path:
            yield _line(text, m.start(1)), "path", path
    for m in _MODULE.finditer(text):
        yield _line(text, m.start(1)), "module", m.group(1)
    # links outside fenced blocks (blanked out, their newlines kept for the line numbers)
    outside = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for m in _LINK.finditer(outside):
        target = m.group(1).split("#")[0]
        if not target or re.match(r"^[a-z]+:", target) or not re.match(r"^[\w./-]+$", target):
            continue
        yield _line(outside, m.start(1)), "link", target


def dead_paths() -> list[str]:
    dead = []
    for page in PAGES:
        rel = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name
        for line, kind, name in named_paths(page):
            if kind == "path":
                ok = _path_exists(name)
            elif kind == "module":
                ok = _module_exists(name)
            else:
                ok = (page.parent / name).exists() or (ROOT / name).exists()
            if not ok:
                dead.append(f"{rel}:{line}: {kind} {name}")
    return dead


def test_named_paths_exist():
    dead = dead_paths()
    assert not dead, ("paths named in the docs that do not exist:\n  " + "\n  ".join(dead))


def test_the_check_finds_dead_paths(tmp_path, monkeypatch):
    """The check catches a dead file, folder, module and link, and passes live ones."""
    page = tmp_path / "PAGE.md"
    page.write_text("Live: `hw/arith/carry.py`, `tests/`, `hw.arith.carry.MuxAdd`, `docs/hardware/"
                    "counter_bank_seed{1,2}.json`, `bench/out/x.json`, [a](SPEC.md).\n"
                    "Dead: `host_sw/driver.py`, `tests/test_cli_fuzz.py::test_x`,\n"
                    "`hw.no_such_module`, `docs/hardware/counter_bank_seed{1,9}.json`,\n"
                    "```\npython -m bench.nothing_here\n```\n[b](NOPE.md)\n")
    (tmp_path / "SPEC.md").write_text("")
    monkeypatch.setitem(globals(), "PAGES", [page])
    assert sorted(dead_paths()) == [
        "PAGE.md:2: path host_sw/driver.py", "PAGE.md:2: path tests/test_cli_fuzz.py",
        "PAGE.md:3: module hw.no_such_module",
        "PAGE.md:3: path docs/hardware/counter_bank_seed{1,9}.json",
        "PAGE.md:5: module bench.nothing_here", "PAGE.md:7: link NOPE.md"]


def _commits(tokens: set[str]) -> set[str]:
    """The tokens that name a commit of this repository (``git cat-file --batch-check``
    answers one line per token, in order)."""
    ordered = sorted(tokens)
    proc = subprocess.run(["git", "cat-file", "--batch-check"], cwd=ROOT, text=True,
                          input="".join(f"{t}^{{commit}}\n" for t in ordered),
                          capture_output=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"git cat-file failed: {proc.stderr.strip()}")
    return {token for token, line in zip(ordered, proc.stdout.splitlines())
            if line.split()[1:2] == ["commit"]}


def test_no_commit_hashes_outside_changes():
    """Only ``docs/CHANGES.md`` cites commits; the other pages say which tree in words. A
    hexadecimal word of 7–40 digits is a citation when git knows it as a commit (so the
    hexadecimal constants of ``docs/SPEC.md`` are not)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    found = {}
    for page in PAGES:
        if page.name == "CHANGES.md":
            continue
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for token in re.findall(r"\b[0-9a-f]{7,40}\b", line):
                found.setdefault(token, []).append(f"{page.relative_to(ROOT)}:{number}")
    cited = _commits(set(found))
    assert not cited, "commit hashes outside docs/CHANGES.md:\n  " + "\n  ".join(
        f"{where} {token}" for token in sorted(cited) for where in found[token])


#: A test named by its node id (``tests/x.py::test_name``, parameters cut off) or, after
#: one, by ``::test_name`` alone (the same file as the last named one).
_NODE = re.compile(r"(?<![\w./-])((?:tests|sim_tb)/[\w/.-]+\.py)?::(\w+)")


def named_tests(page: Path):
    """``(line, file, name)`` for every test ``page`` names by node id; ``file`` is the
    last file named before a bare ``::name`` (None when there is none)."""
    text = page.read_text()
    current = None
    for m in _NODE.finditer(text):
        current = m.group(1) or current
        yield _line(text, m.start()), current, m.group(2)


def _defines(path: Path, name: str) -> bool:
    """Whether a test file defines ``name`` (a function, coroutine or class)."""
    pattern = rf"^\s*(?:async\s+def|def|class)\s+{re.escape(name)}\b"
    return re.search(pattern, path.read_text(), re.MULTILINE) is not None


def missing_tests(pages) -> list[str]:
    missing = []
    for page in pages:
        rel = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page.name
        for line, file, name in named_tests(page):
            if file is None or not (ROOT / file).is_file():
                missing.append(f"{rel}:{line}: {file}::{name} (no such file)")
            elif not _defines(ROOT / file, name):
                missing.append(f"{rel}:{line}: {file}::{name}")
    return missing


def test_every_test_the_docs_name_exists():
    """A claim's test (``docs/TRUST.md`` names one beside each claim) must exist: a
    renamed or removed test is a dead reference, not a check that still runs."""
    missing = missing_tests(PAGES)
    assert not missing, "tests named in the docs that do not exist:\n  " + "\n  ".join(
        missing)


def test_the_check_finds_missing_tests(tmp_path):
    page = tmp_path / "PAGE.md"
    page.write_text(
        "| a | `tests/test_docs_paths.py::test_named_paths_exist`, `::test_nothing` |\n"
        "| b | `tests/test_docs_paths.py::test_the_check_finds_dead_paths[x]` |\n"
        "| c | `tests/no_such_test.py::test_x` and `::test_named_paths_exist` |\n")
    assert missing_tests([page]) == [
        "PAGE.md:1: tests/test_docs_paths.py::test_nothing",
        "PAGE.md:3: tests/no_such_test.py::test_x (no such file)",
        "PAGE.md:3: tests/no_such_test.py::test_named_paths_exist (no such file)"]
