# SPDX-License-Identifier: BSD-2-Clause
"""What every ``ldactl`` sub-command shares: argument types, the two kinds of error and
their exit codes, JSON output and reading a configuration file.

The CLI is the top layer of the host package (``docs/DESIGN.md``); this module is the
bottom of the CLI: every sub-command module imports it, it imports none of them.

Exit codes: 0 success; 1 a run-time failure (:class:`RunFailure` or one of
:data:`RUNTIME_ERRORS`: one line on stderr, nothing more on stdout); 2 bad usage
(argparse's convention, also :class:`UsageError` for option values found bad after
parsing).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from host_sw.cli.files import TEXT_BYTES, FileRefused, read_input, read_input_text
from host_sw.contracts.config_base import ConfigMismatch, SynopsisConfig
from host_sw.contracts.config import config_from_dict
from host_sw.contracts.frames.frame_format import ControlFrameError, mac_to_bytes
from host_sw.contracts.hashing import HashPurpose
from host_sw.contracts.siphash import read_key_file
from host_sw.device.driver import DeviceError
from host_sw.device.transport_base import TransportError
from host_sw.estimators.flows import (DEFAULT_MIN_FLOW_SAMPLES, FLOW_SORT_KEYS,
                                      parse_flow_keys)
from host_sw.model.pcap import CaptureError

__all__ = ["UsageError", "RunFailure", "RUNTIME_ERRORS", "int_at_least", "int_in",
           "positive_int", "nonneg_int", "real", "confidence", "seconds", "port",
           "mac_address", "threshold_list", "probability", "seed", "seed64", "guard", "dump",
           "check_output", "read_text", "parse_json", "load_config", "add_flow_options",
           "load_flow_keys"]


#: Size bound of a configuration file (:func:`load_config`).
_SMALL_BYTES = 1 << 20


class UsageError(Exception):
    """A bad option value found after parsing; reported like argparse does (exit 2):
    ``argument --OPTION: message`` when ``option`` names it."""

    def __init__(self, message: str, option: str | None = None):
        super().__init__(f"argument {option}: {message}" if option else message)


class RunFailure(Exception):
    """A run-time failure with a message for the user (exit 1)."""


#: Failures of a run (device, bus, frames, captures, files): exit 1 with their message.
RUNTIME_ERRORS = (TransportError, DeviceError, ControlFrameError, CaptureError,
                  ConfigMismatch, OSError)


def int_at_least(minimum: int, what: str, maximum: int | None = None):
    """An argparse type: an integer (``_`` separators allowed) of at least ``minimum``
    (and at most ``maximum``)."""
    def parse(text: str) -> int:
        try:
            v = int(text.replace("_", ""))
        except ValueError:
            v = None
        if v is None or v < minimum:
            raise argparse.ArgumentTypeError(f"expected a {what} integer, not {text!r}")
        if maximum is not None and v > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}, not {text!r}")
        return v
    return parse


positive_int = int_at_least(1, "positive")
nonneg_int = int_at_least(0, "non-negative")


def int_in(minimum: int, maximum: int):
    """An argparse type: an integer (``_`` separators allowed) in ``minimum..maximum``."""
    def parse(text: str) -> int:
        try:
            v = int(text.replace("_", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, not {text!r}") from None
        if not minimum <= v <= maximum:
            raise argparse.ArgumentTypeError(f"must be {minimum}..{maximum}, not {text!r}")
        return v
    return parse


def real(*, minimum: float | None = None, maximum: float | None = None,
         open_min: bool = False, what: str = "number"):
    """An argparse type: a finite real number (never nan or inf) at least ``minimum``
    (above it when ``open_min``) and at most ``maximum``."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a {what}, not {text!r}") from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"expected a finite {what}, not {text!r}")
        if minimum is not None and (v <= minimum if open_min else v < minimum):
            bound = "above" if open_min else "at least"
            raise argparse.ArgumentTypeError(f"must be {bound} {minimum:g}, not {text!r}")
        if maximum is not None and v > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:g}, not {text!r}")
        return v
    return parse


#: The longest wait or sleep of an option (a day): a larger one overflows the clocks.
MAX_SECONDS = 86400
#: Seconds to wait or sleep: finite, not negative, at most :data:`MAX_SECONDS`.
seconds = real(minimum=0, maximum=MAX_SECONDS, what="number of seconds")


def confidence(text: str) -> float:
    """An argparse type: a confidence level strictly between 0 and 1 (0.98 or 98%)."""
    try:
        v = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a confidence level (0.98 or 98%), "
                                         f"not {text!r}") from None
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"must be strictly between 0 and 1, not {text!r}")
    return v


#: A TCP port (0: any free port).
port = int_in(0, 65535)


def mac_address(text: str) -> str:
    """An argparse type: a MAC address, ``02:00:00:00:00:01``."""
    try:
        mac_to_bytes(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def threshold_list(text: str) -> tuple[int, ...]:
    """An argparse type: comma-separated leading-zero thresholds, each 0..32."""
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers (0,6), "
                                         f"not {text!r}") from None
    if any(not 0 <= v <= 32 for v in values):
        raise argparse.ArgumentTypeError(f"thresholds must be 0..32, not {text!r}")
    return values


def probability(text: str) -> float:
    """An argparse type: a probability in [0, 1), as a fraction or a percentage."""
    try:
        v = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a probability (0.01 or 1%), not {text!r}") from None
    if not 0 <= v < 1:
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1), not {text!r}")
    return v


def seed(text: str) -> int:
    """An argparse type: a 63-bit seed, in any base Python's ``int(text, 0)`` reads."""
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, not {text!r}") from None
    if not 0 <= v < 2 ** 63:
        raise argparse.ArgumentTypeError(f"seed must be in 0..2**63-1, not {text!r}")
    return v


def seed64(text: str) -> int:
    """An argparse type: a configuration's 64-bit hash seed (``int(text, 0)``)."""
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, not {text!r}") from None
    if not 0 <= v < 2 ** 64:
        raise argparse.ArgumentTypeError(f"seed must be in 0..2**64-1, not {text!r}")
    return v


def key_file(path: str) -> bytes:
    """An argparse type: the 128-bit key of authenticated frames in a text file (32 hex
    digits, :func:`host_sw.contracts.siphash.read_key_file`). The key is given in a file,
    never on the command line (where ``ps`` and shell histories would show it); errors
    name the file, never its content."""
    try:
        read_input(path, "key file", 4096)      # a key file is a line: bounded
        return read_key_file(path)
    except FileRefused as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    except OSError as e:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def guard(handler):
    """Run a handler; run-time failures print one line on stderr and return 1."""
    def run(args):
        try:
            return handler(args)
        except (RunFailure, *RUNTIME_ERRORS) as e:
            print(f"ldactl {args.command}: error: {e}", file=sys.stderr)
            return 1
    run.__wrapped__ = handler
    return run


def dump(obj, out=None) -> None:
    """One JSON object on its own line (stdout by default), flushed."""
    print(json.dumps(obj), file=out or sys.stdout, flush=True)


def check_output(path) -> None:
    """Fail (:class:`RunFailure`) before any work when ``path`` cannot be written: a
    directory, in a directory that does not exist or is not writable, a read-only file
    — so that a snapshot is not read and released only to be lost."""
    if path is None:
        return
    p = Path(path)
    if p.is_dir():
        raise RunFailure(f"cannot write {path}: it is a directory")
    if not p.parent.is_dir():
        raise RunFailure(f"cannot write {path}: no directory {p.parent}")
    if p.exists():
        if not os.access(p, os.W_OK):
            raise RunFailure(f"cannot write {path}: permission denied")
    elif not os.access(p.parent, os.W_OK | os.X_OK):
        raise RunFailure(f"cannot write {path}: directory {p.parent} is not writable")


def read_text(path, what: str = "", limit: int | None = None) -> str:
    """The text of a regular file (UTF-8) of at most ``limit`` bytes (default
    :data:`host_sw.cli.files.TEXT_BYTES`); an unreadable, undecodable, too large file or
    one that is not a file (``/dev/zero``, a FIFO) is a
    :class:`~host_sw.cli.files.FileRefused` (exit 1) naming it."""
    return read_input_text(path, what, TEXT_BYTES if limit is None else limit)


def parse_json(text: str, where) -> object:
    """A JSON document; malformed (or absurdly nested) JSON is a :class:`RunFailure`
    naming ``where``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise RunFailure(f"{where} is not JSON: {e}") from None
    except RecursionError:
        raise RunFailure(f"{where} is not JSON this tool reads (nested too deeply)") from None


def load_config(path) -> SynopsisConfig:
    """The configuration in a JSON file: a config dict (``config --save``) or any
    document with one under ``"config"`` (a snapshot)."""
    d = parse_json(read_text(path, "configuration", _SMALL_BYTES), path)
    if isinstance(d, dict) and "config" in d and isinstance(d["config"], dict):
        d = d["config"]
    try:
        return config_from_dict(d)
    except (TypeError, ValueError) as e:
        raise RunFailure(f"{path}: not a configuration: {e}") from None
    except (OverflowError, MemoryError):
        # An absurd size (window_bytes 10**12): the masks it implies do not fit memory.
        raise RunFailure(f"{path}: not a configuration: a size in it is too large") from None


def add_flow_options(p, *, capture: bool) -> None:
    """The per-flow options of an LDS configuration (``watch``, ``estimate``)."""
    seen = " (default for captures: every flow seen in them)" if capture else ""
    g = p.add_argument_group("LDS per-flow output")
    g.add_argument("--flows", default=None, metavar="FILE",
                   help="flow keys to report, one a line: PROTO SRC SPORT DST DPORT" + seen)
    g.add_argument("--top", type=nonneg_int, default=10, metavar="N",
                   help="flows in the table below each interval (0: all)")
    g.add_argument("--sort", choices=FLOW_SORT_KEYS, default="packets",
                   help="what the flow table ranks by (largest first)")
    g.add_argument("--flows-out", default=None, metavar="FILE",
                   help="write every flow's estimate here: CSV when FILE ends in .csv, "
                        "else JSON lines")
    g.add_argument("--min-samples", type=positive_int, default=DEFAULT_MIN_FLOW_SAMPLES,
                   metavar="N", help="fewer samples than this back no per-flow delay")


def load_flow_keys(path, config: SynopsisConfig):
    """``(per-row flow hashes, names)`` of a flow-keys file under an LDS ``config``; a
    bad file is a :class:`RunFailure` naming the line."""
    if not config.hash_count(HashPurpose.LDS_FLOW):
        raise RunFailure(f"--flows needs an LDS configuration, not {config.kind}")
    try:
        return parse_flow_keys(read_text(path, "flow keys"), config, where=str(path))
    except ValueError as e:
        raise RunFailure(str(e)) from None
