# SPDX-License-Identifier: BSD-2-Clause
"""Markdown tables of ``docs/ACCURACY.md`` from the accuracy benchmarks' summary CSVs.

Data flow (``docs/DESIGN.md``): ``bench/accuracy_{lda,rda,lds}.py`` ► ``*_summary.csv`` ►
**this script** ► the "Ours" tables of ``docs/ACCURACY.md`` (pasted by hand, so the
numbers in the page are exactly the CSVs').

Usage::

    .venv/bin/python -m bench.accuracy_tables [--dir docs/accuracy] [--only lda|rda|lds]
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

from bench import ROOT

LOSSES = (1e-4, 1e-3, 5e-3, 1e-2, 5e-2, 0.1, 0.2)
LDS_BINS = ("1-9", "10-99", "100-499", "500-999", "1000-9999", ">=10000")
LDS_BIN_NAMES = dict(zip(LDS_BINS, ("1–9", "10–99", "100–499", "500–999", "1 000–9 999",
                                    "≥ 10 000")))
PAPER_LDS_70K = {"500-999": "1.2 %", "1000-9999": "0.4 %", ">=10000": "0.06 %"}


def read(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def pct(x, digits: int = 2) -> str:
    """A fraction as a percentage; '–' when missing."""
    if x in ("", None) or math.isnan(float(x)):
        return "–"
    return f"{float(x) * 100:.{digits}f} %"


def sig(x) -> str:
    """Two significant digits; exactly 0 stays '0'."""
    v = float(x)
    return "0" if v == 0 else f"{v:.2g}"


def count(x) -> str:
    return f"{float(x):,.0f}"


def lda_tables(rows: list[dict]) -> str:
    def pick(fig, delay, model, config):
        return {float(r["loss"]): r for r in rows if r["figure"] == str(fig)
                and r["delay"] == delay and r["loss_model"] == model and r["config"] == config}

    out = ["#### Fig. 4", "",
           "| loss | delay | samples (pow2) | bound (2) | rel. err. mean, pow2: avg (max) "
           "| exact-p: avg (max) | 98 % half-width / mean (widest) | covered "
           "| rel. err. std pow2 | exact-p |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for delay in ("weibull", "pareto"):
        a = pick(4, delay, "uniform", "1-bank pow2")
        b = pick(4, delay, "uniform", "1-bank exact-p")
        for loss in LOSSES:
            if loss not in a:
                continue
            r, q = a[loss], b[loss]
            out.append(
                f"| {loss * 100:g} % | {delay} | {count(r['samples_avg'])} "
                f"| {count(r['expected_samples_bound'])} "
                f"| {pct(r['rel_err_mean_avg'], 3)} ({pct(r['rel_err_mean_max'])}) "
                f"| {pct(q['rel_err_mean_avg'], 3)} ({pct(q['rel_err_mean_max'])}) "
                f"| {pct(r['ci98_rel_halfwidth_max'])} "
                f"| {float(r['ci98_coverage']) * int(r['runs']):.0f}/{r['runs']} "
                f"| {pct(r['rel_err_std_avg'], 1)} | {pct(q['rel_err_std_avg'], 1)} |")
    out += ["", "#### Fig. 5", "",
            "| loss | optimal 1-bank (Fig. 4) | 2-bank (2×512) | 3-bank (3×256) "
            "| 4-bank (4×256) |", "|---|---|---|---|---|"]
    configs = {"opt": pick(4, "weibull", "uniform", "1-bank pow2")}
    configs.update({c: pick(5, "weibull", "uniform", c) for c in ("2-bank", "3-bank", "4-bank")})
    for loss in LOSSES:
        if any(loss not in v for v in configs.values()):
            continue
        cells = [f"{count(v[loss]['samples_avg'])} / {pct(v[loss]['rel_err_mean_avg'])} / "
                 f"{pct(v[loss]['rel_err_std_avg'], 1)}" for v in configs.values()]
        out.append(f"| {loss * 100:g} % | " + " | ".join(cells) + " |")
    probes = ["2-bank", "probes 1 Hz", "probes 7 Hz", "probes 144 Hz", "probes 10000 Hz"]
    out += ["", "#### Fig. 6", "",
            "| loss (bursty) | lost | 2-bank LDA | probes 1 Hz | probes 7 Hz | probes 144 Hz "
            "| probes 10 000 Hz |", "|---|---|---|---|---|---|---|"]
    configs = {c: pick(6, "weibull", "episodes", c) for c in probes}
    for loss in LOSSES:
        if any(loss not in v for v in configs.values()):
            continue
        cells = [f"{count(v[loss]['samples_avg'])} / {pct(v[loss]['rel_err_mean_avg'], 1)} "
                 f"({pct(v[loss]['rel_err_mean_max'], 1)}) / "
                 f"{pct(v[loss]['rel_err_std_avg'], 0)}" for v in configs.values()]
        out.append(f"| {loss * 100:g} % | {int(configs['2-bank'][loss]['true_lost']):,} | "
                   + " | ".join(cells) + " |")
    return "\n".join(out)


def rda_table(rows: list[dict]) -> str:
    out = ["| d | RDA | FineComb (ideal) | LDA 2 × 2048 |", "|---|---|---|---|"]
    for d in sorted({int(r["set_difference"]) for r in rows}):
        g = {r["method"]: r for r in rows if int(r["set_difference"]) == d}
        a, b, c = g["RDA"], g["FineComb"], g["LDA"]
        out.append(
            f"| {d:,} | {a['exact_runs']}/{a['runs']} / "
            f"{float(a['decoded_fraction_avg']) * 100:.1f} % / {sig(a['rel_err_mean_avg'])} "
            f"({sig(a['rel_err_mean_max'])}) / {pct(a['rel_err_std_avg'], 1)} "
            f"| {count(b['samples_avg'])} / {sig(b['rel_err_mean_avg'])} "
            f"({sig(b['rel_err_mean_max'])}) / {pct(b['rel_err_std_avg'], 1)} "
            f"| {count(c['samples_avg'])} / {sig(c['rel_err_mean_avg'])} / "
            f"{sig(c['rel_err_std_avg'])} |")
    return "\n".join(out)


def lds_table(rows: list[dict]) -> str:
    def p(x):
        v = float(x)
        if math.isnan(v):
            return "–"
        if v == 0:
            return "0"
        return f"{v * 100:.2g} %" if v < 0.1 else f"{v * 100:.0f} %"

    by = {(int(r["counters"]), r["bin"]): r for r in rows}
    out = ["| flow size | flows | 7 000 counters: median / 95-pct "
           "| 70 000: median / 95-pct (run medians) | 700 000: median / 95-pct "
           "| paper, 70 000: median |", "|---|---|---|---|---|---|"]
    for b in LDS_BINS:
        small, mid, big = by[(7000, b)], by[(70000, b)], by[(700000, b)]
        out.append(
            f"| {LDS_BIN_NAMES[b]} | {int(mid['flows_per_run']):,} "
            f"| {p(small['median'])} / {p(small['p95'])} "
            f"| {p(mid['median'])} / {p(mid['p95'])} ({p(mid['run_median_min'])} – "
            f"{p(mid['run_median_max'])}) | {p(big['median'])} / {p(big['p95'])} "
            f"| {PAPER_LDS_70K.get(b, '')} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", type=Path, default=ROOT / "docs" / "accuracy")
    ap.add_argument("--only", choices=("lda", "rda", "lds"))
    args = ap.parse_args(argv)
    if args.only in (None, "lda") and (args.dir / "lda_summary.csv").exists():
        print("### LDA\n\n" + lda_tables(read(args.dir / "lda_summary.csv")) + "\n")
    if args.only in (None, "rda") and (args.dir / "rda_summary.csv").exists():
        print("### RDA\n\n" + rda_table(read(args.dir / "rda_summary.csv")) + "\n")
    if args.only in (None, "lds"):
        for path in sorted(args.dir.glob("lds_*_summary.csv")):
            model = path.name[len("lds_"):-len("_summary.csv")]
            print(f"### LDS, {model}\n\n" + lds_table(read(path)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
