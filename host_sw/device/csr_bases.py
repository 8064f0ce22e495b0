# SPDX-License-Identifier: BSD-2-Clause
"""Where one core of several sits on a shared link: its word base and window.

In ``docs/DESIGN.md``'s data flow this sits between the device URL and the transport: a
board with two measurement cores behind one UART
(:class:`boards.bus_router.UARTBoneRouter`) places core ``k`` at word base
``k × ROUTER_CORE_STRIDE`` (:mod:`host_sw.contracts.uartbone`), and its build lists the
same bases as LiteX ``csr_base`` rows of ``csr.csv``/``csr.json``. :func:`core_word_base`
turns a core index, a region name or a byte base into the word base and window that
:class:`host_sw.device.core_select.OffsetTransport` adds to every address.
"""

from __future__ import annotations

import csv
import os
import stat
from pathlib import Path

from host_sw.contracts.csr_export import parse_csr_csv, parse_csr_json
from host_sw.contracts.uartbone import ROUTER_CORE_STRIDE, ROUTER_MAX_CORES

__all__ = ["read_csr_bases", "core_word_base", "word_from_byte", "WORD_SPACE"]

#: Words in the 32-bit word address space.
WORD_SPACE = 1 << 32


def parse_int(text, what: str) -> int:
    """An integer from an int or a string (``0x…``, ``_`` separators allowed)."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    try:
        return int(str(text).replace("_", ""), 0)
    except ValueError:
        raise ValueError(f"{what} must be an integer (0x… allowed), not {text!r}") from None


def word_from_byte(byte: int, what: str) -> int:
    """The word address of a byte address (a multiple of 4 in the 32-bit word space)."""
    if byte < 0:
        raise ValueError(f"{what} must be non-negative, not {byte}")
    if byte % 4:
        raise ValueError(f"{what} must be a multiple of 4 (the byte address of a 32-bit "
                         f"word), not {byte:#x}")
    if byte >> 2 >= WORD_SPACE:
        raise ValueError(f"{what} {byte:#x} is beyond the 32-bit word address space")
    return byte >> 2


#: Size bound of a csr.csv/csr.json (a board's lists a few hundred rows).
_MAX_CSR_BYTES = 1 << 22


def read_csr_bases(path) -> dict[str, int]:
    """The ``csr_base`` rows of a LiteX ``csr.csv`` (or the ``csr_bases`` of a
    ``csr.json``): ``{region name: byte base}``, lowest base first.

    A board build (``boards.top.write_csr_exports``) lists one region per measurement core
    (``port0_to_port1,0x00000000``, ``port1_to_port0,0x00400000``).
    """
    path = Path(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):    # /dev/zero, a FIFO: never ends
            raise ValueError(f"cannot read {path}: not a regular file")
        with open(path, "rb") as f:
            data = f.read(_MAX_CSR_BYTES + 1)
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror or e}") from None
    if len(data) > _MAX_CSR_BYTES:
        raise ValueError(f"cannot read {path}: larger than {_MAX_CSR_BYTES} bytes")
    text = data.decode("utf-8", errors="replace")
    try:
        if path.suffix == ".json":
            d = parse_csr_json(text)
        else:
            d = parse_csr_csv(text)
        bases = {str(k): int(v) for k, v in d.get("csr_bases", {}).items()}
    except (ValueError, TypeError, AttributeError, csv.Error) as e:
        raise ValueError(f"{path} is not a LiteX csr.csv/csr.json: {e}") from None
    if not bases:
        raise ValueError(f"{path} has no csr_base row")
    return dict(sorted(bases.items(), key=lambda kv: (kv[1], kv[0])))


def _core_index(core) -> int | None:
    """``core`` as an index, or None when it is a name."""
    if isinstance(core, int) and not isinstance(core, bool):
        return core
    if isinstance(core, str) and core.strip().lstrip("+-").isdigit():
        return int(core)
    return None


def _router_base(core, index) -> tuple[int, int]:
    """Core ``index`` as :class:`boards.bus_router.UARTBoneRouter` lays the cores out."""
    if index is None:
        raise ValueError(f"core {core!r} is a name: give the board's csr.csv "
                         f"(--csr-csv FILE or csr_csv=FILE) to look it up, or an index")
    if not 0 <= index < ROUTER_MAX_CORES:
        raise ValueError(f"core must be 0..{ROUTER_MAX_CORES - 1} (a UARTBoneRouter "
                         f"serves at most {ROUTER_MAX_CORES} cores), not {index}")
    return index * ROUTER_CORE_STRIDE, ROUTER_CORE_STRIDE


def _listed_base(core, index, csr_csv) -> tuple[int, int | None]:
    """Core ``index`` (or the region named ``core``) of a board's ``csr.csv``; its window
    reaches the next base."""
    bases = read_csr_bases(csr_csv)
    names = list(bases)
    listing = ", ".join(f"{n} ({b:#010x})" for n, b in bases.items())
    if index is not None:
        if not 0 <= index < len(names):
            raise ValueError(f"core {index} is not in {csr_csv}: it lists {len(names)} "
                             f"core(s): {listing}")
        name = names[index]
    elif core in bases:
        name = core
    else:
        raise ValueError(f"no core {core!r} in {csr_csv}; its cores: {listing}")
    k = names.index(name)
    word = word_from_byte(bases[name], f"the csr_base of {name} in {csr_csv}")
    span = None
    if k + 1 < len(names) and bases[names[k + 1]] > bases[name]:
        span = (bases[names[k + 1]] - bases[name]) // 4
    return word, span


def core_word_base(core=None, *, csr_base=None, csr_csv=None) -> tuple[int, int | None]:
    """The word base (and the window in words, or None) of one core on a shared link.

    Parameters
    ----------
    core : int or str, optional
        A core index, or (with ``csr_csv``) a region name. Without ``csr_csv`` index ``k``
        is :class:`boards.bus_router.UARTBoneRouter`'s layout: word base
        ``k × ROUTER_CORE_STRIDE`` (``0x100000``; byte base ``k × 0x400000``), window one
        stride. With ``csr_csv`` it is the ``k``-th ``csr_base`` by address, a name is
        looked up, and the window reaches the next base.
    csr_base : int or str, optional
        A byte base as ``csr.csv`` lists it (a multiple of 4); no window limit.
    csr_csv : path, optional
        The board's ``csr.csv`` (or ``csr.json``).

    Returns ``(0, None)`` when neither ``core`` nor ``csr_base`` is given.
    """
    if core is not None and csr_base is not None:
        raise ValueError("give a core or a csr_base, not both")
    if csr_base is not None:
        byte = parse_int(csr_base, "csr_base")
        return word_from_byte(byte, "csr_base"), None
    if core is None or (isinstance(core, str) and core == ""):
        return 0, None
    index = _core_index(core)
    if csr_csv is None:
        return _router_base(core, index)
    return _listed_base(core, index, csr_csv)
