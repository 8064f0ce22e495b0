# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl plan``: recommend LDA banks, rows and thresholds for a memory budget and a
range of expected loss.

In the host data flow (``docs/DESIGN.md``) this is a front end to
:mod:`host_sw.estimators.planning` (the mathematics); it prints the candidates, best
first, and the ``ldactl config`` line that programs the recommendation.
"""

from __future__ import annotations

import argparse

from host_sw.cli.args import (RunFailure, UsageError, confidence, dump, guard, int_in,
                              positive_int, probability, real)
from host_sw.estimators.planning import counter_word_bytes, plan_memory, size_for_loss

__all__ = ["add_plan_parser"]


def add_plan_parser(sub) -> None:
    p = sub.add_parser("plan", help="recommend LDA banks, rows and thresholds",
                       description="Given a memory budget and a range of expected loss, "
                                   "recommend banks, rows and thresholds (LDA §IV) and "
                                   "show the expected effective sample size and error.",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--counters", type=positive_int, default=None)
    g.add_argument("--bytes", type=positive_int, default=None)
    p.add_argument("--packets", type=real(minimum=0, open_min=True), default=5e6,
                   help="packets per interval")
    p.add_argument("--loss-min", type=probability, default=1e-4)
    p.add_argument("--loss-max", type=probability, default=0.2)
    p.add_argument("--max-banks", type=int_in(1, 16), default=8)
    p.add_argument("--cv", type=real(minimum=0), default=1.0,
                   help="expected std/mean of the delay (for the error figure)")
    p.add_argument("--confidence", type=confidence, default=0.98)
    p.add_argument("--observed-loss", type=probability, default=None, metavar="P",
                   help="the loss rate the records show (loss_rate): say which size it "
                        "needs for --error")
    p.add_argument("--observed-reorder", type=probability, default=0.0, metavar="P",
                   help="the reordered share the records show (RDA's set difference)")
    p.add_argument("--error", type=probability, default=0.01,
                   help="relative half-width of the mean to size for (with "
                        "--observed-loss)")
    # The widths a configuration allows (host_sw.contracts.config_base.SynopsisConfig).
    p.add_argument("--count-bits", type=int_in(8, 63), default=32)
    p.add_argument("--ts-bits", type=int_in(16, 63), default=40)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=guard(_cmd_plan))


def _print_plans(args, plans, counters: int, word_bytes: int) -> None:
    best = plans[0]
    print(f"# budget {counters} counters ({word_bytes}-byte words), {args.packets:g} packets "
          f"per interval, loss {args.loss_min:g}..{args.loss_max:g}, delay cv {args.cv:g}")
    print(f"{'banks':>5} {'rows':>7} {'thresholds':<24} {'efficiency':>10} {'at loss':>9} "
          f"{'worst E[S]':>11} {'rel. error':>10}")
    for p in plans:
        mark = "  <- recommended" if p is best else ""
        print(f"{p['banks']:>5} {p['rows']:>7} {','.join(map(str, p['thresholds'])):<24} "
              f"{p['efficiency_worst'] * 100:>9.1f}% {p['worst_loss']:>9.3g} "
              f"{p['expected_samples_worst']:>11.0f} "
              f"{p['relative_error_worst'] * 100:>9.3f}%{mark}")
    print(f"ldactl config --thresholds {','.join(map(str, best['thresholds']))} "
          f"(build: --banks {best['banks']} --rows {best['rows']})")
    if args.observed_loss is not None:
        print(_need_text(args, _need(args), counters))


def _need(args) -> dict:
    return size_for_loss(packets=args.packets, loss=args.observed_loss, error=args.error,
                         cv=args.cv, confidence=args.confidence,
                         reordered=args.observed_reorder * args.packets)


def _need_text(args, need: dict, counters: int) -> str:
    """The size line of ``--observed-loss``."""
    head = (f"# observed loss {need['loss']:.4g} ({need['lost']:.0f} packets per interval): "
            f"a mean within ±{need['error']:.3g} (cv {args.cv:g}) needs E[S] ≥ "
            f"{need['samples_needed']:.0f}")
    if need["rows"] is None:
        lda = (f"; no LDA size reaches it ({args.packets:g} packets per interval are too "
               f"few): lengthen the interval or accept a wider interval")
    else:
        verdict = ("the budget holds it" if need["rows"] <= counters else
                   f"the budget of {counters} counters is {need['rows'] / counters:.3g}× "
                   f"too small")
        lda = (f"; one bank of {need['rows']} rows at threshold {need['threshold']} "
               f"(E[S] {need['expected_samples']:.0f}): {verdict}")
    rda = (f"\n# RDA: the set difference (lost + reordered) needs "
           f"{need['rda_buckets']} buckets per bank (2d, Theorem 2) to decode")
    return head + lda + rda


def _cmd_plan(args) -> int:
    if args.loss_min > args.loss_max:
        raise UsageError(f"{args.loss_min:g} is above --loss-max {args.loss_max:g}",
                         "--loss-min")
    word_bytes = counter_word_bytes(count_bits=args.count_bits, ts_bits=args.ts_bits)
    counters = args.counters if args.counters is not None else args.bytes // word_bytes
    if counters < 2:
        option = "--counters" if args.counters is not None else "--bytes"
        raise UsageError(f"the budget must hold at least 2 counters ({word_bytes}-byte "
                         f"words), not {counters}", option)
    try:
        plans = plan_memory(counters=counters, packets=args.packets, loss_min=args.loss_min,
                            loss_max=args.loss_max, max_banks=args.max_banks, cv=args.cv,
                            confidence=args.confidence)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not plans:
        raise RunFailure(f"no LDA layout fits {counters} counters")
    if args.json:
        doc = {"counters": counters, "word_bytes": word_bytes, "recommended": plans[0],
               "candidates": plans}
        if args.observed_loss is not None:
            doc["observed"] = _need(args)
        dump(doc)
        return 0
    _print_plans(args, plans, counters, word_bytes)
    return 0
