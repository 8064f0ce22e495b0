# SPDX-License-Identifier: BSD-2-Clause
"""LDA accuracy: the LDA paper's Figs. 4, 5 and 6 (Kompella et al., §IV-A, B, C)
reproduced with our golden model and estimators.

Data flow (``docs/DESIGN.md``): :class:`host_sw.model.channel.Scenario` (fast-mode trace, delays,
loss, exact truth) ► :func:`host_sw.model.golden_lda_rda_lds.update` (sender and receiver synopses) ►
:func:`host_sw.estimators.lda.estimate_lda` / :func:`host_sw.estimators.baselines.poisson_probes`
► CSV + PNG in ``bench/out/accuracy/`` and a summary table (``docs/ACCURACY.md``).

Setups (the paper's; see ``docs/ACCURACY.md`` for the discussion):

* **Fig. 4** — N = 5 000 000 packets at 5 Mpps (a 1 s interval), one bank of 1024
  counters tuned for the true loss, ``p = αm/(L+1)`` with α = 0.5 and ``L = N·loss``.
  The sampler only does ``p = 2**-z``, so ``z`` is the nearest power of two in log scale
  (:func:`~host_sw.estimators.lda.tuned_threshold`) — the ``pow2`` rows. The ``exact-p``
  rows emulate the paper's any-``p`` sampler: a packet enters the (threshold-0) bank iff
  the top 53 bits of its hash, as a fraction, are below ``p`` (independent of the row
  bits), then the same golden model and estimator. Delays: Weibull (shape 0.6, mean
  0.2 µs → scale 0.1329 µs, the paper's α = 0.133) and Pareto (shape 3, mean 0.2 µs);
  uniform loss. 10 runs: one trace and one delay/loss draw per loss rate, a different
  LDA seed (``config.seed``) per run, as in the paper.
* **Fig. 5** — multi-bank LDAs of 1024 counters in total (§IV-B): 2 × 512 tuned for
  0.5 % and 10 %; 3 banks tuned for 0.1 %, 1 %, 10 % (the paper's "roughly a third" of
  1024 each; our rows are a power of two, so 3 × 256 = 768 counters); 4 × 256 tuned for
  0.1 %, 1 %, 5 %, 10 % — against the optimal single bank of Fig. 4 (Weibull, uniform loss).
* **Fig. 6** — the two-bank LDA against Poisson probes at 7, 144 and 10 000 Hz (and
  1 Hz), bursty loss (episodes of mean 100 packets, exponential gaps), same 1 s interval.

Usage::

    .venv/bin/python -m bench.accuracy_lda            # full run (~5–10 min on 2 cores)
    .venv/bin/python -m bench.accuracy_lda --quick    # smoke run (seconds)
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from host_sw.model.channel import Scenario
from host_sw.contracts.config import LdaConfig
from host_sw.estimators.baselines import poisson_probes
from host_sw.estimators.lda import (estimate_lda, expected_samples,
                                    sampling_rate_for_loss, tuned_threshold,
                                    tuned_thresholds)
from host_sw.model.golden_lda_rda_lds import update

from bench.accuracy_common import (
    DEFAULT_OUT, Progress, format_table, packet_hashes, pyplot, relative_error, select,
    write_csv,
)
from bench.machine import machine

LOSSES = (1e-4, 1e-3, 5e-3, 1e-2, 5e-2, 0.1, 0.2)
DELAYS = {"weibull": "weibull:shape=0.6,mean=0.2us",
          "pareto": "pareto:shape=3,mean=0.2us"}
ROWS = 1024
ALPHA = 0.5
#: §IV-B: (label, rows per bank, target loss rates)
MULTIBANK = (("2-bank", 512, (0.005, 0.1)),
             ("3-bank", 256, (0.001, 0.01, 0.1)),
             ("4-bank", 256, (0.001, 0.01, 0.05, 0.1)))
PROBE_RATES = (1.0, 7.0, 144.0, 10_000.0)
BASE_SEED = 0x1DA5EED
TRACE_SEED = 4


def lda_seed(run: int) -> int:
    """The LDA hash seed of run ``run`` (the paper: same trace, new LDA seed per run)."""
    return BASE_SEED + 7919 * run


def _record(figure, delay, loss_model, loss, label, run, truth, est, extra=None) -> dict:
    """One run's record; ``truth`` has ``mean``, ``std`` and ``lost`` (computed once per
    interval: each is a pass over millions of delays)."""
    row = {"figure": figure, "delay": delay, "loss_model": loss_model, "loss": loss,
           "config": label, "run": run, "true_mean_ns": truth.mean,
           "true_std_ns": truth.std, "true_lost": truth.lost,
           "est_mean_ns": est.get("mean", math.nan), "est_std_ns": est.get("std", math.nan),
           "rel_err_mean": relative_error(est.get("mean"), truth.mean),
           "rel_err_std": relative_error(est.get("std"), truth.std),
           "samples": est.get("samples", 0),
           "ci_low_ns": est.get("ci_low", math.nan), "ci_high_ns": est.get("ci_high", math.nan)}
    lo, hi = row["ci_low_ns"], row["ci_high_ns"]
    row["ci_covers"] = (int(lo <= truth.mean <= hi) if lo is not None and hi is not None
                        and math.isfinite(lo) else "")
    row.update(extra or {})
    for k in ("est_mean_ns", "est_std_ns", "ci_low_ns", "ci_high_ns"):
        if row[k] is None:
            row[k] = math.nan
    return row


def lda_estimate(config: LdaConfig, iv, packet: np.ndarray, keep=None) -> dict:
    """Golden-model synopses of both points under ``config`` and the LDA estimate.

    ``packet`` holds the packet hashes of the whole trace under ``config``'s seed;
    ``keep`` (bool over the trace) pre-filters packets (the exact-``p`` emulation).
    """
    sides = []
    for obs in (iv.sender, iv.receiver):
        idx, ts = obs.indices, obs.timestamps
        if keep is not None:
            k = keep[idx]
            idx, ts = idx[k], ts[k]
        sides.append(update(config, select(packet, idx), ts))
    e = estimate_lda(*sides, confidence=0.98)
    return {"mean": e.mean_ns, "std": e.std_ns, "samples": e.samples,
            "ci_low": e.ci_low_ns, "ci_high": e.ci_high_ns, "lost_sampled": e.lost}


def exact_p_filter(packet: np.ndarray, p: float) -> np.ndarray:
    """bool — packets whose hash's top 53 bits, read as a fraction in [0, 1), are
    below ``p`` (sampling with any probability, independent of the row bits)."""
    if p >= 1:
        return np.ones(packet.shape, dtype=bool)
    return (packet >> np.uint64(11)) < np.uint64(int(p * (1 << 53)))


def interval(trace, *, delay: str, loss: str | float, seed: int = TRACE_SEED):
    """One 1-interval run (channel run 0) of ``trace`` over the given path."""
    sc = Scenario(packets=len(trace), fast=True, delay=delay, loss=loss, seed=seed)
    return sc.run(0, trace=trace).intervals[0]


def run_lda(*, packets: int = 5_000_000, losses=LOSSES, runs: int = 10,
            delays=tuple(DELAYS), figures=(4, 5, 6), probe_rates=PROBE_RATES,
            progress=None) -> list[dict]:
    """Every run of Figs. 4–6 as a list of per-run records (see :func:`_record`)."""
    progress = progress or (lambda msg: None)
    trace = Scenario(packets=packets, fast=True, seed=TRACE_SEED).trace()
    progress(f"trace of {packets} packets")
    hashes = {}

    def packet_for(run):
        if run not in hashes:
            hashes[run] = packet_hashes(trace, LdaConfig(banks=1, rows=ROWS, thresholds=(0,),
                                                         seed=lda_seed(run)))
        return hashes[run]

    rows = []
    jobs = []
    if 4 in figures or 5 in figures:
        for d in delays:
            if 4 in figures or d == "weibull":
                jobs += [(d, "uniform", loss) for loss in losses]
    if 6 in figures:
        jobs += [("weibull", "episodes", loss) for loss in losses]
    for delay, loss_model, loss in jobs:
        spec = loss if loss_model == "uniform" else f"episodes:rate={loss},length=100"
        iv = interval(trace, delay=DELAYS[delay], loss=spec)
        lost = len(trace) * loss
        p = sampling_rate_for_loss(ROWS, lost, ALPHA)
        z = tuned_threshold(ROWS, lost, ALPHA)
        single = LdaConfig(banks=1, rows=ROWS, thresholds=(z,))
        bound = expected_samples(ROWS, iv.truth.received, iv.truth.lost, ALPHA)
        truth = SimpleNamespace(mean=iv.truth.mean, std=iv.truth.std, lost=iv.truth.lost)
        for run in range(runs):
            packet = packet_for(run)
            seed = lda_seed(run)
            if loss_model == "uniform" and (4 in figures or 5 in figures):
                cfg = single.replace(seed=seed)
                est = lda_estimate(cfg, iv, packet)
                rows.append(_record(4, delay, loss_model, loss, "1-bank pow2", run, truth, est,
                                    {"p": 2.0 ** -z, "counters": ROWS,
                                     "expected_samples_bound": bound}))
                if 4 in figures:
                    cfg0 = LdaConfig(banks=1, rows=ROWS, thresholds=(0,), seed=seed)
                    est = lda_estimate(cfg0, iv, packet, exact_p_filter(packet, p))
                    rows.append(_record(4, delay, loss_model, loss, "1-bank exact-p", run,
                                        truth, est, {"p": p, "counters": ROWS,
                                                  "expected_samples_bound": bound}))
                if 5 in figures and delay == "weibull":
                    for label, m, targets in MULTIBANK:
                        z_banks = tuned_thresholds(m, [t * len(trace) for t in targets], ALPHA)
                        cfg = LdaConfig(banks=len(targets), rows=m, thresholds=z_banks,
                                        seed=seed)
                        est = lda_estimate(cfg, iv, packet)
                        rows.append(_record(5, delay, loss_model, loss, label, run, truth, est,
                                            {"p": 2.0 ** -z_banks[0],
                                             "counters": m * len(targets),
                                             "expected_samples_bound": ""}))
            if loss_model == "episodes":
                label, m, targets = MULTIBANK[0]
                z_banks = tuned_thresholds(m, [t * len(trace) for t in targets], ALPHA)
                cfg = LdaConfig(banks=2, rows=m, thresholds=z_banks, seed=seed)
                est = lda_estimate(cfg, iv, packet)
                rows.append(_record(6, delay, loss_model, loss, label, run, truth, est,
                                    {"p": 2.0 ** -z_banks[0], "counters": 2 * m,
                                     "expected_samples_bound": ""}))
                delays_ns = np.zeros(len(trace), dtype=np.int64)
                delays_ns[iv.truth.both_ids] = iv.truth.delays
                lost_mask = np.zeros(len(trace), dtype=bool)
                lost_mask[iv.truth.lost_ids] = True
                for rate in probe_rates:
                    pr = poisson_probes(trace.timestamps, delays_ns, lost_mask, rate_hz=rate,
                                        rng=np.random.default_rng([TRACE_SEED, run, int(rate)]))
                    est = {"mean": pr.mean_ns, "std": pr.std_ns, "samples": pr.samples}
                    rows.append(_record(6, delay, loss_model, loss, f"probes {rate:g} Hz", run,
                                        truth, est, {"p": "", "counters": "",
                                                  "expected_samples_bound": ""}))
        progress(f"{delay} {loss_model} loss {loss:g}: true mean {truth.mean:.2f} ns, "
                 f"std {truth.std:.2f} ns, lost {truth.lost}; {runs} runs")
    return rows


def summarise(rows: list[dict]) -> list[dict]:
    """Per (figure, delay, loss model, loss, configuration): mean and max relative error
    of the mean over the runs, mean relative error of the std, mean and min effective
    sample size, the widest 98 % half-width relative to the true mean (the paper's
    "most conservative bound") and the fraction of runs whose interval covers the truth."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["figure"], r["delay"], r["loss_model"], r["loss"], r["config"]),
                          []).append(r)
    out = []
    for (fig, delay, lm, loss, label), rs in groups.items():
        err = np.array([r["rel_err_mean"] for r in rs], dtype=float)
        serr = np.array([r["rel_err_std"] for r in rs], dtype=float)
        samples = np.array([r["samples"] for r in rs], dtype=float)
        half = np.array([(r["ci_high_ns"] - r["ci_low_ns"]) / 2 / r["true_mean_ns"]
                         for r in rs], dtype=float)
        covers = [r["ci_covers"] for r in rs if r["ci_covers"] != ""]
        out.append({
            "figure": fig, "delay": delay, "loss_model": lm, "loss": loss, "config": label,
            "runs": len(rs), "true_lost": rs[0]["true_lost"],
            "rel_err_mean_avg": float(np.nanmean(err)) if np.isfinite(err).any() else math.nan,
            "rel_err_mean_max": float(np.nanmax(err)) if np.isfinite(err).any() else math.nan,
            "runs_without_mean": int(np.isnan(err).sum()),
            "rel_err_std_avg": float(np.nanmean(serr)) if np.isfinite(serr).any() else math.nan,
            "samples_avg": float(samples.mean()), "samples_min": int(samples.min()),
            "expected_samples_bound": rs[0].get("expected_samples_bound", ""),
            "ci98_rel_halfwidth_max": (float(np.nanmax(half)) if np.isfinite(half).any()
                                       else math.nan),
            "ci98_coverage": (sum(covers) / len(covers)) if covers else math.nan,
        })
    return out


def _series(summary: list[dict], fig: int, **match) -> list[dict]:
    """The summary rows of figure ``fig`` matching ``match``, by loss rate."""
    s = [r for r in summary if r["figure"] == fig
         and all(r[k] == v for k, v in match.items())]
    return sorted(s, key=lambda r: r["loss"])


def _positive(values):
    """Zeros and negatives as NaN (not drawn on a log axis)."""
    return [x if x > 0 else np.nan for x in values]


def _plot_fig4(plt, rows: list[dict], summary: list[dict], path: Path) -> None:
    """Fig. 4: one-bank errors of the mean and std per delay model, and the estimates of
    a few runs with the 98 % bound."""
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    for delay, color in (("weibull", "C0"), ("pareto", "C1")):
        for label, style in (("1-bank pow2", "-o"), ("1-bank exact-p", "--s")):
            s = _series(summary, 4, delay=delay, config=label)
            if not s:
                continue
            x = [r["loss"] for r in s]
            ax[0].plot(x, _positive([r["rel_err_mean_avg"] for r in s]), style, color=color,
                       label=f"{delay}, {label}")
            ax[2].plot(x, _positive([r["rel_err_std_avg"] for r in s]), style, color=color,
                       label=f"{delay}, {label}")
    runs = [r for r in rows if r["figure"] == 4 and r["delay"] == "weibull"
            and r["config"] == "1-bank pow2"]
    if runs:
        truth = np.mean([r["true_mean_ns"] for r in runs])
        s = _series(summary, 4, delay="weibull", config="1-bank pow2")
        for run in range(min(5, max(r["run"] for r in runs) + 1)):
            rr = sorted((r for r in runs if r["run"] == run), key=lambda r: r["loss"])
            ax[1].plot([r["loss"] for r in rr], [r["est_mean_ns"] for r in rr], "o-",
                       ms=3, lw=0.8, label=f"run {run}")
        ax[1].errorbar([r["loss"] for r in s], [truth] * len(s),
                       yerr=[r["ci98_rel_halfwidth_max"] * truth for r in s], fmt="none",
                       ecolor="k", capsize=3, label="98% bound (fewest samples)")
        ax[1].axhline(truth, color="k", lw=0.5)
        ax[1].set_ylabel("estimated mean delay (ns)")
        ax[1].set_title("(b) Weibull, 1-bank pow2: estimates and bounds")
    for a, t in ((ax[0], "(a) relative error of the mean"),
                 (ax[2], "(c) relative error of the std")):
        a.set_yscale("log")
        a.set_title(t)
        a.set_ylabel("average relative error (10 runs)")
    for a in ax:
        a.set_xscale("log")
        a.set_xlabel("loss rate")
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=7)
    fig.suptitle("LDA Fig. 4 reproduction: N = 5M, 1 bank × 1024, α = 0.5")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _plot_comparison(plt, src: list[dict], configs: list[str], title: str,
                     path: Path) -> None:
    """Figs. 5 and 6: sample size and errors of ``configs`` against the loss rate."""
    fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
    for label in configs:
        s = sorted((r for r in src if r["config"] == label), key=lambda r: r["loss"])
        if not s:
            continue
        x = [r["loss"] for r in s]
        name = "1-bank optimal (pow2)" if label == "1-bank pow2" else label
        ax[0].plot(x, [r["samples_avg"] for r in s], "o-", label=name)
        ax[1].plot(x, _positive([r["rel_err_mean_avg"] for r in s]), "o-", label=name)
        ax[2].plot(x, _positive([r["rel_err_std_avg"] for r in s]), "o-", label=name)
    for a, t in zip(ax, ("(a) effective sample size", "(b) relative error of the mean",
                         "(c) relative error of the std")):
        a.set_xscale("log")
        a.set_yscale("log")
        a.set_xlabel("loss rate")
        a.set_title(t)
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot(rows: list[dict], summary: list[dict], out: Path) -> list[Path]:
    """fig4.png, fig5.png, fig6.png (those with data)."""
    plt = pyplot()
    paths = []
    if any(r["figure"] == 4 for r in summary):
        paths.append(out / "lda_fig4.png")
        _plot_fig4(plt, rows, summary, paths[-1])
    for fignum, configs, title in (
            (5, ["1-bank pow2", "2-bank", "3-bank", "4-bank"],
             "LDA Fig. 5 reproduction: multi-bank LDAs (Weibull, uniform loss)"),
            (6, ["2-bank"] + [f"probes {r:g} Hz" for r in PROBE_RATES],
             "LDA Fig. 6 reproduction: 2-bank LDA vs Poisson probes (bursty loss)")):
        src = [r for r in summary if r["figure"] == fignum
               or (fignum == 5 and r["figure"] == 4 and r["delay"] == "weibull"
                   and r["config"] == "1-bank pow2")]
        if not any(r["figure"] == fignum for r in summary):
            continue
        paths.append(out / f"lda_fig{fignum}.png")
        _plot_comparison(plt, src, configs, title, paths[-1])
    return paths


COLUMNS = [("figure", "fig"), ("delay", "delay"), ("loss_model", "loss"), ("loss", "rate"),
           ("config", "configuration"), ("samples_avg", "samples"),
           ("rel_err_mean_avg", "relerr mean"), ("rel_err_mean_max", "max"),
           ("ci98_rel_halfwidth_max", "98% half/true"), ("ci98_coverage", "covered"),
           ("rel_err_std_avg", "relerr std")]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 200 000 packets, 3 runs, 3 loss rates")
    ap.add_argument("--packets", type=int, default=5_000_000)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--figures", default="4,5,6", help="comma-separated subset of 4,5,6")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    losses = LOSSES
    if args.quick:
        args.packets, args.runs, losses = 200_000, 3, (1e-3, 1e-2, 0.1)
    figures = tuple(int(f) for f in args.figures.split(","))
    progress = Progress()
    rows = run_lda(packets=args.packets, losses=losses, runs=args.runs, figures=figures,
                   progress=progress)
    summary = summarise(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(args.out / "lda_runs.csv", rows)
    write_csv(args.out / "lda_summary.csv", summary)
    paths = plot(rows, summary, args.out)
    meta = {"packets": args.packets, "runs": args.runs, "losses": list(losses),
            "figures": list(figures), "machine": machine(),
            "seconds": round(time.perf_counter() - progress.start, 1),
            "cpu_seconds": round(time.process_time(), 1)}
    (args.out / "lda_meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(format_table(summary, COLUMNS))
    print(f"\nwrote {args.out / 'lda_runs.csv'}, {args.out / 'lda_summary.csv'}, "
          + ", ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
