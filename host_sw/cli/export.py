# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl export``: interval records (``watch --output``, the demo's ``records.jsonl``)
as JSON lines, CSV or the Prometheus text exposition, and a ``/metrics`` HTTP endpoint.

In the host data flow (``docs/DESIGN.md``) this is an output stage, records ► other
tools: :func:`csv_text` and :func:`prometheus_text` are the writers; ``--serve`` re-reads
the records file on every scrape.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path

from host_sw.cli.args import RunFailure, check_output, guard, port
from host_sw.cli.files import FileRefused, write_output
from host_sw.cli.opa.output import histogram_lines
from host_sw.cli.records import read_records

__all__ = ["add_export_parser", "csv_text", "label_value", "prometheus_text",
           "serve_metrics", "FlowWriter", "FLOW_CSV_COLUMNS"]

#: The columns of a per-flow CSV file (``--flows-out FILE.csv``); the JSON-lines form
#: holds the same keys (``true`` as an object, ``unbacked`` only when set).
FLOW_CSV_COLUMNS = ("interval", "flow", "packets", "received", "lost", "delay_ns",
                    "samples", "cells", "unbacked", "true_packets", "true_mean",
                    "true_lost")

_CSV_COLUMNS = ("interval", "time", "valid", "synopsis", "config_id", "mean", "std",
                "ci_low", "ci_high", "lost", "loss_rate", "samples", "sent", "received",
                "true_mean", "true_std", "notes")


def add_export_parser(sub) -> None:
    p = sub.add_parser("export", help="records as JSON lines, CSV or Prometheus text",
                       description="Convert JSON records (watch --output) to JSON lines, "
                                   "CSV or the Prometheus text exposition; --serve PORT "
                                   "serves /metrics on 127.0.0.1 (re-reading the file).",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--input", "-i", required=True)
    p.add_argument("--format", "-f", choices=("jsonl", "csv", "prometheus"), default="jsonl")
    p.add_argument("--output", "-o", default=None)
    p.add_argument("--serve", type=port, default=None, metavar="PORT",
                   help="serve /metrics on 127.0.0.1:PORT (0: any free port)")
    p.add_argument("--serve-once", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(handler=guard(_cmd_export))


def csv_text(records) -> str:
    """Records as CSV (one row per interval; empty cells for missing values)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(_CSV_COLUMNS)
    for rec in records:
        d = rec.to_json()
        e = d["estimate"] or {}
        ci = e.get("ci") or [None, None]
        row = {"interval": d["interval"], "time": d["time"], "valid": d["valid"],
               "synopsis": d["synopsis"], "config_id": d["config_id"], "mean": e.get("mean"),
               "std": e.get("std"), "ci_low": ci[0], "ci_high": ci[1], "lost": e.get("lost"),
               "loss_rate": e.get("loss_rate"), "samples": e.get("samples"),
               "sent": e.get("sent"), "received": e.get("received"),
               "true_mean": (d.get("true") or {}).get("mean"),
               "notes": " | ".join(d["notes"]),
               "true_std": (d.get("true") or {}).get("std")}
        w.writerow(["" if row[c] is None else row[c] for c in _CSV_COLUMNS])
    return buf.getvalue()


class FlowWriter:
    """Per-flow LDS estimates of every interval to a file (``--flows-out``): CSV when the
    name ends in ``.csv``, else JSON lines, one flow of one interval a line. A flow
    whose delay is not backed has an empty (null) ``delay_ns`` and its reason in
    ``unbacked``."""

    def __init__(self, path):
        self.path = Path(path)
        self.csv = self.path.suffix.lower() == ".csv"
        self.f = open(self.path, "w", newline="")
        self.writer = None
        if self.csv:
            self.writer = csv.writer(self.f, lineterminator="\n")
            self.writer.writerow(FLOW_CSV_COLUMNS)

    def write(self, interval, report) -> None:
        """Every flow of one interval's :class:`~host_sw.estimators.flows.FlowReport`."""
        if report is None:
            return
        for i in range(len(report)):
            row = {"interval": interval, **report.row(i)}
            if self.csv:
                true = row.pop("true", None) or {}
                row.update({f"true_{k}": v for k, v in true.items()})
                self.writer.writerow(["" if row.get(c) is None else row[c]
                                      for c in FLOW_CSV_COLUMNS])
            else:
                self.f.write(json.dumps(row) + "\n")
        self.f.flush()

    def close(self) -> None:
        self.f.close()


#: Seconds per nanosecond: records hold delays in ns, Prometheus asks for base units
#: (seconds) in both the values and the metric names.
_S_PER_NS = 1e-9


def _seconds(v):
    return None if v is None else float(v) * _S_PER_NS


_PROM_METRICS = (
    ("delay_mean_seconds", "Estimated average one-way delay of the last valid interval",
     lambda e: _seconds(e.get("mean"))),
    ("delay_stddev_seconds", "Estimated standard deviation of the delay",
     lambda e: _seconds(e.get("std"))),
    ("delay_ci_low_seconds", "Lower end of the confidence interval of the mean",
     lambda e: _seconds((e.get("ci") or [None, None])[0])),
    ("delay_ci_high_seconds", "Upper end of the confidence interval of the mean",
     lambda e: _seconds((e.get("ci") or [None, None])[1])),
    ("loss_ratio", "Lost / sent packets of the last valid interval",
     lambda e: e.get("loss_rate")),
    ("packets_lost", "Packets lost in the last valid interval", lambda e: e.get("lost")),
    ("effective_samples", "Effective sample size of the delay estimate",
     lambda e: e.get("samples")),
)


def label_value(text) -> str:
    """A label value of the text exposition format, escaped: backslash, double quote and
    line feed (so a record's text cannot end the label or start a metric line)."""
    return str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def prometheus_text(records, prefix: str = "ldactl") -> str:
    """Prometheus text exposition (0.0.4) of the last valid interval's estimate, the
    last interval number and the counts of valid and invalid intervals. Delays are in
    seconds (``*_seconds``), as the Prometheus naming conventions ask."""
    lines = []
    valid = [r.to_json() for r in records if r.valid and r.estimate]
    last = valid[-1] if valid else None
    if last:
        labels = (f'{{synopsis="{label_value(last["synopsis"])}",'
                  f'config_id="{label_value(last["config_id"])}"}}')
        for name, help_text, get in _PROM_METRICS:
            v = get(last["estimate"])
            if v is None:
                continue
            lines += [f"# HELP {prefix}_{name} {help_text}.", f"# TYPE {prefix}_{name} gauge",
                      f"{prefix}_{name}{labels} {float(v)!r}"]
        lines += histogram_lines(prefix, last["estimate"], labels)   # OPA's delays
        if last["interval"] is not None:
            lines += [f"# HELP {prefix}_interval Sequence number of the last valid interval.",
                      f"# TYPE {prefix}_interval gauge",
                      f"{prefix}_interval{labels} {last['interval']}"]
    n_valid = len(valid)
    lines += [f"# HELP {prefix}_intervals_total Intervals read, by validity.",
              f"# TYPE {prefix}_intervals_total counter",
              f'{prefix}_intervals_total{{valid="true"}} {n_valid}',
              f'{prefix}_intervals_total{{valid="false"}} {len(records) - n_valid}']
    return "\n".join(lines) + "\n"


def _metrics_handler(path):
    """An HTTP handler serving ``/metrics`` from the records file at ``path``."""
    # imported here: every ``ldactl`` command would pay for it (about 0.04 s)
    from http.server import BaseHTTPRequestHandler

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404, "only /metrics is served")
                return
            try:
                body = prometheus_text(read_records(path)).encode()
                code = 200
            except (RunFailure, FileRefused) as e:
                body, code = f"# error: {e}\n".encode(), 500
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    return Handler


def serve_metrics(path, port: int, once: bool = False) -> None:
    """Serve ``/metrics`` on 127.0.0.1:``port`` (one request when ``once``)."""
    from http.server import HTTPServer
    server = HTTPServer(("127.0.0.1", port), _metrics_handler(path))
    print(f"serving http://127.0.0.1:{server.server_address[1]}/metrics from {path}",
          file=sys.stderr, flush=True)
    try:
        if once:
            server.handle_request()
        else:
            server.serve_forever()
    finally:
        server.server_close()


def _cmd_export(args) -> int:
    if args.serve is not None:
        read_records(args.input)   # fail early on a bad file
        serve_metrics(args.input, args.serve, args.serve_once)
        return 0
    check_output(args.output)
    records = read_records(args.input)
    if args.format == "jsonl":
        text = "".join(json.dumps(r.to_json()) + "\n" for r in records)
    elif args.format == "csv":
        text = csv_text(records)
    else:
        text = prometheus_text(records)
    if args.output:
        write_output(args.output, text)
    else:
        sys.stdout.write(text)
    return 0
