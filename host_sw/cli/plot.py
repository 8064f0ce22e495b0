# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl plot``: a PNG of the estimates in a records file, per interval — the mean
delay with its confidence interval (and the truth when the records carry it) above, the
loss rate below.

In the host data flow (``docs/DESIGN.md``) an output stage, records ► picture.
"""

from __future__ import annotations

import argparse

from host_sw.cli.args import RunFailure, guard
from host_sw.cli.records import read_records

__all__ = ["add_plot_parser"]


def add_plot_parser(sub) -> None:
    p = sub.add_parser("plot", help="PNG of estimates against intervals",
                       description="Plot the mean delay with its confidence interval (and "
                                   "the truth when known) and the loss per interval.",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--input", "-i", required=True)
    p.add_argument("--output", "-o", default="estimates.png")
    p.add_argument("--title", default=None)
    p.set_defaults(handler=guard(_cmd_plot))


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
        fig.savefig(args.output, dpi=100)
    except (ValueError, OverflowError, RuntimeError) as e:
        # matplotlib's refusals: an unknown file type, values it cannot lay out.
        raise RunFailure(f"cannot draw {args.output}: {e}") from None
    finally:
        plt.close(fig)


def _cmd_plot(args) -> int:
    # matplotlib is an optional, heavy dependency: imported only when a plot is drawn.
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    good = [r for r in read_records(args.input)
            if r.estimate and r.estimate.get("mean") is not None]
    if not good:
        raise RunFailure(f"{args.input} has no interval with an estimate")
    _draw(good, args, plt)
    print(f"wrote {args.output} ({len(good)} intervals)")
    return 0
