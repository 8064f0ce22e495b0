# SPDX-License-Identifier: BSD-2-Clause
"""RLI's per-flow output for ``ldactl simulate --synopsis rli``: a table of the largest
flows (named by their 5-tuple) with the truth beside the estimate, and every flow as JSON
or CSV (``--flows-out FILE``).

In the host data flow (docs/DESIGN.md) this is the CLI end of "simulated interval ►
estimators ► record": the per-flow figures are the record's ``details["rli_flows"]``
(:func:`host_sw.estimators.simulate.rli_flow_table`). The columns and their JSON names:
``flow`` (key), ``packets`` (seen by both points), ``lost`` (sender − receiver count of
the flow's cell; ``null`` when collided), ``true_mean``/``mean``, ``true_std``/``std``
(ns), ``rel_err`` (|mean − true_mean| / true_mean) and ``collided`` (the flow's cell holds
another flow: no estimate).
"""

from __future__ import annotations

import csv
import json
import math

import numpy as np

from host_sw.estimators.rli import flow_key_text

__all__ = ["FLOW_COLUMNS", "flow_rows", "render_flows", "write_flows"]

#: The per-flow columns, in table, CSV and JSON order.
FLOW_COLUMNS = ("flow", "packets", "lost", "true_mean", "mean", "rel_err", "true_std",
                "std", "collided")


def _number(x):
    x = float(x)
    return None if math.isnan(x) else x


def flow_rows(table: dict) -> list[dict]:
    """One dict per flow (JSON-ready; :data:`FLOW_COLUMNS`), largest flows first."""
    order = np.argsort(-table["packets"], kind="stable")
    windows, classes = table.get("windows"), table.get("classes")
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
        rows.append({"flow": flow_key_text(None if windows is None else windows[i],
                                           -1 if classes is None else int(classes[i]), f),
                     "packets": int(table["packets"][i]), "lost": lost,
                     "true_mean": true_mean, "mean": mean, "rel_err": rel,
                     "true_std": _number(table["true_std"][i]),
                     "std": _number(table["std"][i]), "collided": collided})
    return rows


def _cell(value, spec=".1f") -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, float):
        return format(value, spec)
    return str(value)


def render_flows(rows: list[dict], top: int) -> list[str]:
    """The table of the ``top`` largest flows."""
    widths = (44, 8, 5, 10, 10, 8, 10, 10, 8)
    lines = ["  ".join(name.rjust(w) if k else name.ljust(w)
                       for k, (name, w) in enumerate(zip(FLOW_COLUMNS, widths)))]
    for row in rows[:top]:
        cells = []
        for k, (name, w) in enumerate(zip(FLOW_COLUMNS, widths)):
            v = row[name]
            text = (f"{v * 100:.2f}%" if name == "rel_err" and v is not None
                    else _cell(v))
            cells.append(text[:w].ljust(w) if k == 0 else text.rjust(w))
        lines.append("  ".join(cells))
    if len(rows) > top:
        lines.append(f"  … {len(rows) - top} smaller flows (--flows-out FILE for all)")
    return lines


def write_flows(path: str, runs: list[tuple[int, list[dict]]]) -> None:
    """Every flow of every run to ``path``: CSV when it ends in ``.csv`` (a ``run``
    column first), else one JSON object per run per line: ``{"run", "flows": [...]}``."""
    with open(path, "w", newline="", encoding="utf-8") as out:
        if path.lower().endswith(".csv"):
            w = csv.writer(out)
            w.writerow(("run",) + FLOW_COLUMNS)
            for run, rows in runs:
                for row in rows:
                    w.writerow((run,) + tuple("" if row[c] is None else row[c]
                                              for c in FLOW_COLUMNS))
        else:
            for run, rows in runs:
                out.write(json.dumps({"run": run, "flows": rows}) + "\n")
