# SPDX-License-Identifier: BSD-2-Clause
"""RLI's per-flow output: for ``ldactl simulate --synopsis rli`` and ``ldactl estimate
--synopsis rli`` on two captures, a table of the largest flows (named by their 5-tuple)
with the truth beside the estimate, and every flow as JSON or CSV (``--flows-out FILE``);
for ``ldactl watch`` on an RLI receiver, the flows of a ``--flows`` file. Also the
reference options (``--ref-packets``, ``--ref-period``, ``--ref-adaptive``) that
``simulate`` and ``estimate`` share.

In the host data flow (docs/DESIGN.md) this is the CLI end of "interval ► estimators ►
record": the per-flow figures are the record's ``details["rli_flows"]``
(:func:`host_sw.estimators.simulate.rli_flow_table`,
:func:`host_sw.estimators.rli.offline.flow_table`). The columns and their JSON names:
``flow`` (key), ``packets`` (seen by both points; the receiver's count where the truth
is not known), ``lost`` (sender − receiver count of the flow's cell; ``null`` when
collided), ``true_mean``/``mean``, ``true_std``/``std`` (ns), ``rel_err`` (|mean −
true_mean| / true_mean) and ``collided`` (the flow's cell holds another flow: no
estimate); with a sample floor (``estimate``, ``watch``: ``--min-samples``) also
``unbacked``: why a flow has no figure (``null`` when it has one).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import math

import numpy as np

from host_sw.cli.args import UsageError, int_at_least
from host_sw.estimators.record import IntervalRecord
from host_sw.estimators.rli.estimate import estimate_flows, flow_key_text

__all__ = ["FLOW_COLUMNS", "flow_rows", "render_flows", "write_flows", "sort_rows",
           "add_reference_options", "reference_rule", "REFERENCE_OPTIONS", "with_rli_flows"]

#: The per-flow columns, in table, CSV and JSON order.
FLOW_COLUMNS = ("flow", "packets", "lost", "true_mean", "mean", "rel_err", "true_std",
                "std", "collided")


def _number(x):
    x = float(x)
    return None if math.isnan(x) else x


def _reason(row: dict, min_samples: int) -> str | None:
    """Why a flow's figures are not backed (None: they are)."""
    if row["collided"]:
        return "collided: its cell holds another flow (digest check failed)"
    if row["received"] == 0:
        return "no packets counted at the receiver"
    if row["received"] < min_samples:
        return f"too few samples ({row['received']} < {min_samples})"
    return None


def flow_rows(table: dict, *, min_samples: int | None = None) -> list[dict]:
    """One dict per flow (JSON-ready; :data:`FLOW_COLUMNS`), largest flows first. With
    ``min_samples`` each row has ``unbacked`` (the reason, or None) and an unbacked
    flow's ``mean``/``std``/``rel_err`` are None."""
    order = np.argsort(-np.asarray(table["packets"]), kind="stable")
    windows, classes = table.get("windows"), table.get("classes")
    names = table.get("names")
    rows = []
    for i in order:
        f = int(table["flow"][i])
        collided = bool(table["collided"][i])
        true_mean, mean = _number(table["true_mean"][i]), _number(table["mean"][i])
        rel = (abs(mean - true_mean) / abs(true_mean)
               if mean is not None and true_mean not in (None, 0.0) else None)
        lost = None
        if table["sent"] is not None and not collided:
            lost = int(table["sent"][i] - table["received"][i])
        name = names[i] if names is not None else flow_key_text(
            None if windows is None else windows[i],
            -1 if classes is None else int(classes[i]), f)
        row = {"flow": name, "packets": int(table["packets"][i]), "lost": lost,
               "true_mean": true_mean, "mean": mean, "rel_err": rel,
               "true_std": _number(table["true_std"][i]),
               "std": _number(table["std"][i]), "collided": collided}
        if min_samples is not None:
            row["received"] = int(table["received"][i])
            row["unbacked"] = _reason(row, min_samples)
            if row["unbacked"]:
                row.update(mean=None, std=None, rel_err=None)
            del row["received"]
        rows.append(row)
    return rows


#: ``--sort`` of the per-flow table: the row key ranked by (largest first).
_SORT_KEYS = {"packets": "packets", "loss": "lost", "delay": "mean"}


def sort_rows(rows: list[dict], sort: str) -> list[dict]:
    """``rows`` ranked by ``sort`` (``packets``, ``loss``, ``delay``; largest first,
    flows without the figure last, ties in the given order)."""
    key = _SORT_KEYS[sort]
    return sorted(rows, key=lambda r: (r[key] is None, -(r[key] or 0)))


def _cell(value, spec=".1f") -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, float):
        return format(value, spec)
    return str(value)


def render_flows(rows: list[dict], top: int, *, indent: str = "") -> list[str]:
    """The table of the first ``top`` rows; an unbacked flow shows dashes and the
    reason."""
    # the flow column fits the longest name shown: a cut 5-tuple would name another flow
    first = max([44] + [len(r["flow"]) for r in rows[:top]])
    widths = (first, 8, 5, 10, 10, 8, 10, 10, 8)
    lines = [indent + "  ".join(name.rjust(w) if k else name.ljust(w)
                                for k, (name, w) in enumerate(zip(FLOW_COLUMNS, widths)))]
    for row in rows[:top]:
        cells = []
        for k, (name, w) in enumerate(zip(FLOW_COLUMNS, widths)):
            v = row[name]
            text = (f"{v * 100:.2f}%" if name == "rel_err" and v is not None
                    else _cell(v))
            cells.append(text[:w].ljust(w) if k == 0 else text.rjust(w))
        line = indent + "  ".join(cells)
        if row.get("unbacked"):
            line += f"  not backed: {row['unbacked']}"
        lines.append(line)
    if len(rows) > top:
        lines.append(f"{indent}  … {len(rows) - top} smaller flows "
                     f"(--flows-out FILE for all)")
    return lines


def write_flows(path: str, runs: list[tuple[int, list[dict]]], *,
                column: str = "run") -> None:
    """Every flow of every run (or interval: ``column``) to ``path``: CSV when it ends in
    ``.csv`` (that column first), else one JSON object per run per line:
    ``{column, "flows": [...]}``."""
    with open(path, "w", newline="", encoding="utf-8") as out:
        if path.lower().endswith(".csv"):
            w = csv.writer(out)
            names = FLOW_COLUMNS + tuple(k for k in ("unbacked",)
                                         if any(k in r for _, rows in runs for r in rows))
            w.writerow((column,) + names)
            for run, rows in runs:
                for row in rows:
                    w.writerow((run,) + tuple("" if row.get(c) is None else row[c]
                                              for c in names))
        else:
            for run, rows in runs:
                out.write(json.dumps({column: run, "flows": rows}) + "\n")


#: The reference options and the RliConfig field each sets.
#: The bounds of the reference rule: the sender's 32-bit every-N register, and a period
#: of at most 10**15 ticks (11.6 days of 1 ns ticks; the simulation's int64 ns).
MAX_REF_PACKETS = 2 ** 32 - 1
MAX_REF_PERIOD = 10 ** 15

REFERENCE_OPTIONS = (("--ref-packets", "ref_packets"), ("--ref-period", "ref_period_ticks"),
                     ("--ref-adaptive", "adapt_link_Bps"))


def _rate(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a rate, not {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive rate, not {text}")
    return value


def add_reference_options(p, *, capture: bool = False) -> None:
    """RLI's reference rule options (each replaces the default rule, 1 in 100): where
    the simulated sender inserts references, or (``capture``) which packets of a
    sender capture without reference frames are taken as references."""
    helps = _CAPTURE_HELP if capture else _SIMULATE_HELP
    p.add_argument("--ref-packets", type=int_at_least(0, "non-negative", MAX_REF_PACKETS),
                   default=None, metavar="N",
                   help=helps[0])
    p.add_argument("--ref-period", type=int_at_least(1, "positive", MAX_REF_PERIOD),
                   default=None, metavar="NS",
                   help=helps[1])
    p.add_argument("--ref-adaptive", type=_rate, default=None, metavar="BYTES_PER_S",
                   help=helps[2] + " (1 in 10 below 20 %%, 1 in 300 above 80 %%)")


_SIMULATE_HELP = ("RLI: one reference packet after every N counted packets (default 100)",
                  "RLI: one reference packet per period instead",
                  "RLI: references adapted to the utilisation of a sender link of this "
                  "rate")
_CAPTURE_HELP = ("RLI: every N-th counted sender packet is a reference (default 100)",
                 "RLI: the last sender packet of each period is a reference instead",
                 "RLI: every N-th sender packet is a reference, N adapted to the "
                 "utilisation of a sender link of this rate")


def reference_rule(args) -> dict | None:
    """The RliConfig fields of the reference options given (None when none is);
    :class:`~host_sw.cli.args.UsageError` when two are given."""
    given = [(opt, name) for opt, name in REFERENCE_OPTIONS
             if getattr(args, name_of(opt)) is not None]
    if len(given) > 1:
        raise UsageError(f"{given[0][0]} and {given[1][0]} exclude each other")
    if not given:
        return None
    rule = {"ref_packets": 0, "ref_period_ticks": 0, "adapt_link_Bps": 0.0}
    opt, name = given[0]
    rule[name] = getattr(args, name_of(opt))
    if name == "ref_packets" and not rule[name]:
        raise UsageError("must be at least 1", opt)
    return rule


def name_of(option: str) -> str:
    """The argparse destination of an option (``--ref-packets`` → ``ref_packets``)."""
    return option.lstrip("-").replace("-", "_")


def with_rli_flows(rec: IntervalRecord, receiver, sender, flows,
                   min_samples: int) -> IntervalRecord:
    """``rec`` with the RLI per-flow figures of ``flows`` (``(flow hashes (2, F),
    names)``, a ``--flows`` file) from the receiver's synopsis (and the sender's, for
    loss) in ``details["rli_flows"]``; unchanged without flows or estimate."""
    if flows is None or rec.estimate is None:
        return rec
    hashes, names = flows
    est = estimate_flows(receiver, hashes, sender)
    table = {"flow": range(len(names)), "names": list(names), "packets": est.packets,
             "sent": est.sent, "received": est.packets,
             "true_mean": [float("nan")] * len(names),
             "true_std": [float("nan")] * len(names), "mean": est.mean_ns,
             "std": est.std_ns, "collided": est.collided}
    return dataclasses.replace(rec, details={**rec.details, "rli_flows": table,
                                             "min_samples": min_samples})
