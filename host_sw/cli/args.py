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
import sys
from pathlib import Path

from host_sw.contracts.config import ConfigMismatch, SynopsisConfig, config_from_dict
from host_sw.contracts.control_frame import ControlFrameError
from host_sw.device.driver import DeviceError
from host_sw.device.transport import TransportError
from host_sw.model.pcap import CaptureError

__all__ = ["UsageError", "RunFailure", "RUNTIME_ERRORS", "int_at_least", "positive_int",
           "nonneg_int", "probability", "seed", "guard", "dump", "load_config"]


class UsageError(Exception):
    """A bad option value found after parsing; reported like argparse does (exit 2)."""


class RunFailure(Exception):
    """A run-time failure with a message for the user (exit 1)."""


#: Failures of a run (device, bus, frames, captures, files): exit 1 with their message.
RUNTIME_ERRORS = (TransportError, DeviceError, ControlFrameError, CaptureError,
                  ConfigMismatch, OSError)


def int_at_least(minimum: int, what: str):
    """An argparse type: an integer (``_`` separators allowed) of at least ``minimum``."""
    def parse(text: str) -> int:
        try:
            v = int(text.replace("_", ""))
        except ValueError:
            v = None
        if v is None or v < minimum:
            raise argparse.ArgumentTypeError(f"expected a {what} integer, not {text!r}")
        return v
    return parse


positive_int = int_at_least(1, "positive")
nonneg_int = int_at_least(0, "non-negative")


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


def load_config(path) -> SynopsisConfig:
    """The configuration in a JSON file: a config dict (``config --save``) or any
    document with one under ``"config"`` (a snapshot)."""
    try:
        d = json.loads(Path(path).read_text())
    except OSError as e:
        raise RunFailure(f"cannot read configuration {path}: {e}") from None
    except json.JSONDecodeError as e:
        raise RunFailure(f"{path} is not JSON: {e}") from None
    if isinstance(d, dict) and "config" in d and isinstance(d["config"], dict):
        d = d["config"]
    try:
        return config_from_dict(d)
    except (TypeError, ValueError) as e:
        raise RunFailure(f"{path}: not a configuration: {e}") from None
