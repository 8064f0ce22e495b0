# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl plot``: a PNG of the estimates in a records file, per interval — the mean
delay with its confidence interval (and the truth when the records carry it) above, the
loss rate below; for OPA records or a per-packet delay file (``--delays``) the delay
distribution and the delay over time with the tail events marked
(:mod:`host_sw.cli.opa.plot`).

In the host data flow (``docs/DESIGN.md``) an output stage, records ► picture.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from host_sw.cli.args import RunFailure, check_output, guard, nonneg_int
from host_sw.cli.opa.plot import draw_delays, draw_opa_records, read_delays
from host_sw.cli.records import read_records

__all__ = ["add_plot_parser"]


def add_plot_parser(sub) -> None:
    p = sub.add_parser("plot", help="PNG of estimates against intervals",
                       description="Plot the mean delay with its confidence interval (and "
                                   "the truth when known) and the loss per interval; for "
                                   "OPA records or --delays FILE the delay CDF and the "
                                   "delay over time, the largest delays marked.",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--input", "-i", help="records (JSON lines)")
    src.add_argument("--delays", metavar="FILE",
                     help="per-packet delays (simulate/estimate --delays: CSV or JSON lines)")
    p.add_argument("--output", "-o", default="estimates.png")
    p.add_argument("--title", default=None)
    p.add_argument("--top", type=nonneg_int, default=10,
                   help="largest delays marked (OPA records, --delays)")
    p.set_defaults(handler=guard(_cmd_plot))


def _save(fig, path) -> None:
    """Save to exactly ``path``: its suffix is the format (an unknown one is matplotlib's
    ValueError), none is PNG (matplotlib itself would append ``.png`` to the name)."""
    fmt = Path(path).suffix.lower().lstrip(".") or "png"
    try:
        fig.savefig(path, dpi=100, format=fmt)
    except OSError as e:
        raise RunFailure(f"cannot write {path}: {e.strerror or e}") from None


def _draw(good, args, plt) -> None:
    """The two panels of the records with an estimate, saved to ``--output``."""
    x = [r.interval if r.interval is not None else k for k, r in enumerate(good)]
    mean = [r.estimate["mean"] for r in good]
    ci = [r.estimate.get("ci") or [None, None] for r in good]
    # A confidence interval that does not hold its mean (a hand-edited record) draws as
    # no bar on that side rather than a negative one, which matplotlib refuses.
    yerr = [[max(m - c[0], 0) if c[0] is not None else 0 for m, c in zip(mean, ci)],
            [max(c[1] - m, 0) if c[1] is not None else 0 for m, c in zip(mean, ci)]]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    try:
        ax1.errorbar(x, mean, yerr=yerr, fmt="o-", capsize=3, label="estimate (CI)")
        truth = [(xi, r.true["mean"]) for xi, r in zip(x, good)
                 if r.true and r.true.get("mean") is not None]
        if truth:
            ax1.plot(*zip(*truth), "k--", label="true mean")
        ax1.set_ylabel("mean delay (ns)")
        ax1.legend()
        ax1.set_title(args.title or f"{(good[0].synopsis or '').upper()} estimates")
        loss = [(xi, r.estimate["loss_rate"] * 100) for xi, r in zip(x, good)
                if r.estimate.get("loss_rate") is not None]
        if loss:
            ax2.plot(*zip(*loss), "s-", color="tab:red")
        ax2.set_ylabel("loss (%)")
        ax2.set_xlabel("interval")
        fig.tight_layout()
        _save(fig, args.output)
    except (ValueError, OverflowError, RuntimeError) as e:
        # matplotlib's refusals: an unknown file type, values it cannot lay out.
        raise RunFailure(f"cannot draw {args.output}: {e}") from None
    finally:
        plt.close(fig)


def _draw_two(args, plt, draw, *data) -> str:
    """Two stacked panels drawn by ``draw(*data, axes, top)``, saved to ``--output``."""
    fig, axes = plt.subplots(2, 1, figsize=(8, 6))
    try:
        line = draw(*data, axes, args.top)
        axes[0].set_title(args.title or "per-packet delays")
        fig.tight_layout()
        _save(fig, args.output)
    except (ValueError, OverflowError, RuntimeError) as e:
        raise RunFailure(f"cannot draw {args.output}: {e}") from None
    finally:
        plt.close(fig)
    return line


#: Kinds whose records draw otherwise than mean and loss per interval.
_RECORD_DRAWERS = {"opa": draw_opa_records}


def _cmd_plot(args) -> int:
    check_output(args.output)
    # matplotlib is an optional, heavy dependency: imported only when a plot is drawn.
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if args.delays is not None:
        line = _draw_two(args, plt, draw_delays, *read_delays(args.delays))
        print(f"wrote {args.output} ({line})")
        return 0
    good = [r for r in read_records(args.input)
            if r.estimate and r.estimate.get("mean") is not None]
    if not good:
        raise RunFailure(f"{args.input} has no interval with an estimate")
    drawer = _RECORD_DRAWERS.get(good[0].synopsis)
    if drawer is not None:
        line = _draw_two(args, plt, drawer, good)
        print(f"wrote {args.output} ({line})")
        return 0
    _draw(good, args, plt)
    print(f"wrote {args.output} ({len(good)} intervals)")
    return 0
