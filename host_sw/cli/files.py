# SPDX-License-Identifier: BSD-2-Clause
"""The files ``ldactl`` reads and writes: every input option's file is checked for its
kind and read with a size bound (so that ``/dev/zero``, a FIFO nobody writes or a huge
file fails in a line within seconds instead of blocking or filling memory), and every
output that fails after an interval was read and released keeps the data in a rescue
file the error names (issue 23, item 4; outputs are checked writable beforehand by
:func:`host_sw.cli.args.check_output`).

All failures are :class:`FileRefused` (an ``OSError``: one of the CLI's run-time
errors, exit 1) naming the file.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


__all__ = ["FileRefused", "SMALL_BYTES", "TEXT_BYTES", "FIFO_WAIT_S", "check_input", "read_input",
           "read_input_text", "write_output", "write_or_rescue", "rescue"]

class FileRefused(OSError):
    """A file that cannot be read or written as asked; the message names it."""

    def __str__(self) -> str:
        return str(self.args[0])


#: Size bound of small inputs: configurations, keys, flow keys, csr.csv.
SMALL_BYTES = 1 << 20
#: Size bound of text inputs read whole: records, per-packet delays, snapshots.
TEXT_BYTES = 1 << 30
#: Seconds a named pipe allowed as an input may stay without a writer.
FIFO_WAIT_S = 5.0


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _label(what: str, path) -> str:
    return f"{what} {path}" if what else str(path)


def check_input(path, what: str = "", *, pipe: bool = False) -> int:
    """The mode of an input file, which must be a regular file (or a named pipe when
    ``pipe``): anything else (a directory, ``/dev/zero``, a socket) is a
    :class:`FileRefused` naming it, before it is opened."""
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise FileRefused(f"cannot read {_label(what, path)}: {e.strerror or e}") from None
    if stat.S_ISREG(mode) or (pipe and stat.S_ISFIFO(mode)):
        return mode
    raise FileRefused(f"cannot read {_label(what, path)}: it is {_kind(mode)}, not a file")


def read_input(path, what: str = "", limit: int = SMALL_BYTES) -> bytes:
    """The bytes of a regular input file of at most ``limit`` bytes."""
    check_input(path, what)
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise FileRefused(f"cannot read {_label(what, path)}: {e.strerror or e}") from None
    if len(data) > limit:
        raise FileRefused(f"cannot read {_label(what, path)}: larger than {limit} bytes "
                         f"(not such a file)")
    return data


def read_input_text(path, what: str = "", limit: int = SMALL_BYTES) -> str:
    """The UTF-8 text of a regular input file of at most ``limit`` bytes."""
    data = read_input(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FileRefused(f"{path} is not a text file (byte {e.start} is not UTF-8)") from None


def write_output(path, text: str, mode: str = "w") -> None:
    """Write (or append, ``mode="a"``) ``text`` to ``path``; a failure names the file."""
    try:
        with open(path, mode, encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise FileRefused(f"cannot write {path}: {e.strerror or e}") from None


def _rescue(path, text: str, tag: str) -> str | None:
    """Write ``text`` beside ``path`` (``NAME.rescued-TAG.json``; not beside a device
    such as ``/dev/full``), else in the temporary directory; the name written, or None
    when neither could be."""
    beside = Path(f"{path}.rescued-{tag}.json")
    try:
        if not Path(path).exists() or Path(path).is_file():
            with open(beside, "x", encoding="utf-8") as f:
                f.write(text)
            return str(beside)
    except OSError:
        pass
    try:
        fd, name = tempfile.mkstemp(prefix=f"ldactl-rescued-{tag}-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return name
    except OSError:
        return None


def write_or_rescue(path, text: str, tag, *, mode: str = "w", what: str = "data is") -> None:
    """Write ``text`` (data that cannot be read again: a released interval) to ``path``;
    when that fails, keep it in a rescue file and fail naming both files."""
    try:
        with open(path, mode, encoding="utf-8") as f:
            f.write(text)
        return
    except OSError as e:
        rescue(path, text, tag, e, what)


def rescue(path, text: str, tag, error: OSError, what: str = "data is") -> None:
    """After ``error`` writing ``text`` to ``path``: keep the text in a rescue file
    (``PATH.rescued-TAG.json`` beside it, else in the temporary directory) and raise the
    :class:`FileRefused` naming both."""
    reason = error.strerror or str(error)
    kept = _rescue(path, text, tag)
    where = f"kept in {kept}" if kept else "lost: no rescue file could be written either"
    raise FileRefused(f"cannot write {path}: {reason}; the {what} {where}")
