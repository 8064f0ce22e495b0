# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl``: the command line of the product, a composition root that registers one
parser per sub-command and runs the chosen handler.

The CLI is the top layer of the host package (``docs/DESIGN.md``): contracts < model <
estimators < device < cli. Sub-commands (``docs/CLI.md``), each in its own module:

* ``simulate`` (:mod:`host_sw.cli.simulate`) — a measurement scenario through the golden
  model and the estimators; a table, or JSON lines with ``--json``;
* ``info``, ``config`` (:mod:`host_sw.cli.info`) — a device and its configuration;
* ``read``, ``watch`` (:mod:`host_sw.cli.watch`) — frozen intervals read from devices;
* ``estimate`` (:mod:`host_sw.cli.estimate`) — offline, from files and captures;
* ``export`` (:mod:`host_sw.cli.export`), ``plan`` (:mod:`host_sw.cli.plan`), ``plot``
  (:mod:`host_sw.cli.plot`).

Exit codes: 0 success, 1 a run failed (e.g. a file could not be read), 2 bad usage or bad
option values (argparse's convention; :mod:`host_sw.cli.args`). Never a traceback: an
error no handler expected is still one ``ldactl COMMAND: error: internal error …`` line
and exit 1 (``LDACTL_TRACEBACK=1`` in the environment shows the traceback instead, for
debugging); ``tests/test_cli_fuzz.py`` asserts that no generated input reaches it.
"""

from __future__ import annotations

import argparse
import os
import sys

from host_sw import kernels
from host_sw.cli.args import UsageError
from host_sw.cli.estimate import add_estimate_parser
from host_sw.cli.export import add_export_parser
from host_sw.cli.info import add_config_parser, add_info_parser
from host_sw.cli.plan import add_plan_parser
from host_sw.cli.plot import add_plot_parser
from host_sw.cli.simulate import add_simulate_parser
from host_sw.cli.watch import add_read_parser, add_watch_parser

__all__ = ["main", "build_parser"]

#: The sub-commands in the order ``ldactl --help`` lists them.
_PARSERS = (add_simulate_parser, add_info_parser, add_config_parser, add_read_parser,
            add_watch_parser, add_estimate_parser, add_export_parser, add_plan_parser,
            add_plot_parser)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ldactl",
        description="Passive latency and loss measurement with LDA, RDA, LDS, OPA and RLI.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add_parser in _PARSERS:
        add_parser(sub)
    for command_parser in sub.choices.values():
        command_parser.set_defaults(command_parser=command_parser)
    return parser


def _check_single_values(args) -> None:
    """Python 3.11's argparse takes ``--option=--`` as an empty list of values (it drops
    the ``--`` as the end of options) without calling the option's type; refuse it as
    argparse refuses a missing value."""
    for action in args.command_parser._actions:
        if (action.option_strings and action.nargs is None
                and isinstance(getattr(args, action.dest, None), list)):
            args.command_parser.error(f"argument {'/'.join(action.option_strings)}: "
                                      f"expected one argument")


#: The start of the one line an unexpected error prints (a bug to report).
INTERNAL_ERROR = "internal error"


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _check_single_values(args)
    try:
        kernels.choice()            # LDA_LOOPS, read where a loop is first compiled
    except ValueError as e:
        parser.exit(2, f"ldactl {args.command}: error: {e}\n")
    try:
        return args.handler(args)
    except UsageError as e:
        parser.exit(2, f"ldactl {args.command}: error: {e}\n")
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader of stdout went away (``ldactl … | head``): nothing left to tell it.
        return 1
    except Exception as e:
        if os.environ.get("LDACTL_TRACEBACK"):
            raise
        print(f"ldactl {args.command}: error: {INTERNAL_ERROR} "
              f"({type(e).__name__}: {e}); please report it", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
