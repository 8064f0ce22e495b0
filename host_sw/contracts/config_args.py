# SPDX-License-Identifier: BSD-2-Clause
"""A synopsis configuration from command-line options: the options every command that
builds or exports a core takes (``python -m hw.lda_pipeline``, the board commands, the
synthesis benches), declared once with their defaults (``docs/DESIGN.md``)."""

from __future__ import annotations

import argparse

from host_sw.contracts.config import LdaConfig, config_class
from host_sw.contracts.config_base import SynopsisConfig

__all__ = ["add_config_arguments", "config_from_args", "default_config_namespace"]


def add_config_arguments(parser: argparse.ArgumentParser, *, seed_flag: str = "--seed") -> None:
    """Add the configuration options (``--synopsis``, dimensions, thresholds, window, seed)
    that :func:`config_from_args` reads. ``seed_flag``: the hash seed's option name (the
    board commands call it ``--hash-seed``, their ``--seed`` being nextpnr's placement
    seed); it is read as ``args.seed`` whatever its name."""
    parser.add_argument("--synopsis", choices=tuple(KIND_PARAMETERS), default="lda")
    parser.add_argument("--banks", type=int, help="LDA/RDA banks (default 2)")
    parser.add_argument("--rows", type=int, help="LDA rows (default 1024) / LDS rows "
                        "(default 4) / OPA combination rows k (default 4)")
    parser.add_argument("--cells", type=int, help="LDS cells per row (default 1024) / RLI "
                        "cells (default 4096)")
    parser.add_argument("--buckets", type=int, help="RDA buckets per bank (default 1024)")
    parser.add_argument("--groups", type=int, help="OPA groups (default 1024)")
    parser.add_argument("--vlda-cells", type=int, default=1, help="LDS virtual-LDA cells")
    parser.add_argument("--thresholds", help="LDA bank / LDS row thresholds, comma separated")
    parser.add_argument("--digest-bits", type=int, help="LDS/RLI digest bits (default 32)")
    parser.add_argument("--window-bytes", type=int, help="header window bytes (default 64)")
    parser.add_argument(seed_flag, dest="seed", type=lambda s: int(s, 0),
                        default=LdaConfig().seed, help="hash seed")


def default_config_namespace(**overrides) -> argparse.Namespace:
    """The options of :func:`add_config_arguments` at their defaults, with ``overrides``."""
    parser = argparse.ArgumentParser(add_help=False)
    add_config_arguments(parser)
    return argparse.Namespace(**{**vars(parser.parse_args([])), **overrides})


def _int_list(text):
    return tuple(int(t) for t in text.split(",") if t.strip())


def _lda_parameters(args) -> dict:
    banks = args.banks if args.banks is not None else 2
    kw = {"banks": banks, "rows": args.rows if args.rows is not None else 1024}
    if args.thresholds is not None:
        kw["thresholds"] = _int_list(args.thresholds)
    elif banks != 2:
        kw["thresholds"] = tuple(range(0, 3 * banks, 3))[:banks]
    return kw


def _rda_parameters(args) -> dict:
    buckets = args.buckets if args.buckets is not None else args.rows
    return {"banks": args.banks if args.banks is not None else 2,
            "buckets_per_bank": buckets if buckets is not None else 1024}


def _lds_parameters(args) -> dict:
    rows = args.rows if args.rows is not None else 4
    kw = {"rows": rows, "cells": args.cells if args.cells is not None else 1024,
          "vlda_cells": args.vlda_cells, "row_thresholds": (0,) * rows}
    if args.thresholds is not None:
        kw["row_thresholds"] = _int_list(args.thresholds)
    if args.digest_bits is not None:
        kw["digest_bits"] = args.digest_bits
    return kw


def _opa_parameters(args) -> dict:
    return {"groups": args.groups if args.groups is not None else 1024,
            "rows": args.rows if args.rows is not None else 4}


def _rli_parameters(args) -> dict:
    kw = {"cells": args.cells if args.cells is not None else 4096}
    if args.digest_bits is not None:
        kw["digest_bits"] = args.digest_bits
    return kw


#: How each kind reads its dimensions and thresholds from the options (one row per kind).
KIND_PARAMETERS = {"lda": _lda_parameters, "rda": _rda_parameters, "lds": _lds_parameters,
                   "opa": _opa_parameters, "rli": _rli_parameters}


def config_from_args(args) -> SynopsisConfig:
    """The synopsis configuration named by the command-line arguments."""
    common = {"seed": args.seed}
    if args.window_bytes is not None:
        common["window_bytes"] = args.window_bytes   # masks: the window's defaults
    return config_class(args.synopsis)(**common, **KIND_PARAMETERS[args.synopsis](args))
