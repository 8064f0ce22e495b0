# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: offline analysis of a large capture pair (``ldactl estimate s.pcap
r.pcap``), packets per second and peak memory.

Generates a sender's and a receiver's classic pcap (nanosecond) of ``--packets`` packets
(default 20 million) with numpy, a chunk at a time: ``--flows`` IPv4 TCP/UDP flows from
:func:`host_sw.model.traffic.synthetic_trace`'s header builder, every packet made unique
by a counter in window bytes 38–41 (TCP sequence number; UDP length and checksum),
on-wire lengths in the 7:4:1 IMIX, captured with a ``--snaplen`` (96 by default, as a
header capture), a send rate of
5 Mpps, ``--loss`` lost and an exponential delay. Then runs ``ldactl estimate`` on
the pair in a child process (``--json``, one interval) for each ``--synopsis`` (default
LDA, RDA, LDS and OPA) and each ``--jobs`` (default 1 and 2 worker processes) and
measures its wall-clock time, CPU time (of the child and its worker processes) and peak
resident memory (the sum of the ``VmHWM`` of the child and its workers, polled). The
child's records are checked: valid. The load average before and after each run is saved
with it (the machine is shared: wall-clock scaling is only meaningful when it is low).
The CPU time every run pays before it reads a byte — the interpreter, the package's
imports and the compiled loops (:mod:`host_sw.kernels`' C library; numba's import and
cached code where it is not built, ``"loops"`` in the output) — is measured in a child of
its own (the best of three) and the rate is also given without it
(``pairs_per_cpu_s_work``: what a longer capture approaches). The children run with
Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` removed from their environment,
``--no-bytecode`` keeps it): an installed package has its ``.pyc`` files, and compiling
the package's modules from source costs every run about 0.3 s of CPU time here. With
``--jobs N`` the CPU time is also split between the child (``parent_cpu_s``, its own
``utime + stime`` read from ``/proc`` every 50 ms, so up to 50 ms short) and its workers
(``workers_cpu_s``, the rest), and ``wall_idle_s`` projects the wall-clock time on an
idle machine with N cores: the parent's CPU time plus the workers' divided by N (a
lower bound: it assumes the workers' tasks split evenly and the parent waits for no
straggler). ``--threads`` adds a run with ``--jobs N --threads`` for each N > 1 (the
tasks on threads of the child: its CPU time is all its own, and ``wall_idle_s`` is the
start's CPU time plus the rest divided by N, a bound that ignores the GIL).
``--repeat N`` runs each kind's configurations in N rounds, each configuration once a
round, and reports each configuration's run of median CPU time (every run's CPU and wall
times are saved with it): on this shared VM single runs of the same command differ by up
to about 20 % (OPA's 2 M pair: 2.12–2.56 s), and the machine's speed drifts over minutes.

Prints the figures and writes them to ``bench/out/offline_stream.json`` (``--out``).

Run: ``.venv/bin/python -m bench.offline_stream`` (from the repository root; 2 × 10⁶
packets by default, about 360 MB of captures under ``--dir``, default ``build/bench``,
deleted unless ``--keep``; ``--packets 20000000`` for the 20 M pair, 3.6 GB).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dpkt
import numpy as np
try:     # a candidate measured only where it is installed (not a dependency)
    from scapy.utils import RawPcapReader
except ImportError:  # pragma: no cover
    RawPcapReader = None

from host_sw.kernels import implementation
from host_sw.model.pcap_stream import iter_capture
from host_sw.model.traffic import synthetic_trace

from bench import OUT
from bench.machine import machine

_CHUNK = 1_000_000
_IMIX = np.array([60] * 7 + [590] * 4 + [1514], dtype=np.int64)


def _records(windows, lengths, ts, snaplen) -> bytes:
    """Classic pcap records (16-byte header + captured bytes) of a chunk."""
    n, w = windows.shape
    cap = np.minimum(lengths, snaplen)
    size = 16 + cap
    start = np.r_[0, np.cumsum(size)[:-1]]
    out = np.zeros(int(size.sum()), np.uint8)
    head = np.zeros((n, 4), "<u4")
    head[:, 0], head[:, 1] = ts // 1_000_000_000, ts % 1_000_000_000
    head[:, 2], head[:, 3] = cap, lengths
    out[start[:, None] + np.arange(16)] = head.view(np.uint8).reshape(n, 16)
    k = min(w, int(cap.min()))
    out[start[:, None] + 16 + np.arange(k)] = windows[:, :k]
    for j in range(k, w):        # window bytes past the shortest capture
        sel = np.flatnonzero(cap > j)
        out[start[sel] + 16 + j] = windows[sel, j]
    return out.tobytes()


def generate(directory: Path, packets: int, flows: int, loss: float, snaplen: int,
             seed: int) -> tuple[Path, Path, dict]:
    """Write the capture pair; return the paths and the truth (lost, mean delay)."""
    rng = np.random.default_rng(seed)
    flow_windows = synthetic_trace(packets=flows, flows=flows, seed=seed).flow_windows
    header = (0xA1B23C4D, 2, 4, 0, 0, 65535, 1)
    file_head = np.array(header[:1], "<u4").tobytes() + np.array(header[1:3], "<u2").tobytes() \
        + np.array(header[3:], "<u4").tobytes()
    s_path, r_path = directory / "s.pcap", directory / "r.pcap"
    t = 1_700_000_000 * 10 ** 9
    lost = 0
    delay_sum = 0
    received = 0
    with open(s_path, "wb") as fs, open(r_path, "wb") as fr:
        fs.write(file_head)
        fr.write(file_head)
        for a in range(0, packets, _CHUNK):
            n = min(_CHUNK, packets - a)
            win = flow_windows[rng.integers(0, flows, n)].copy()
            counter = (np.arange(a, a + n, dtype=np.uint64)).astype(">u4")
            win[:, 38:42] = counter.view(np.uint8).reshape(n, 4)   # TCP seq / UDP length+checksum
            lengths = _IMIX[rng.integers(0, len(_IMIX), n)]
            win[:, 16:18] = (lengths - 14).astype(">u2").view(np.uint8).reshape(n, 2)
            gaps = np.maximum(1, rng.exponential(200.0, n)).astype(np.int64)
            ts = t + np.cumsum(gaps)
            t = int(ts[-1])
            fs.write(_records(win, lengths, ts, snaplen))
            keep = rng.random(n) >= loss
            delay = 10_000 + rng.exponential(2_000.0, n).astype(np.int64)
            rts = ts + delay
            lost += int((~keep).sum())
            received += int(keep.sum())
            delay_sum += int(delay[keep].sum())
            order = np.flatnonzero(keep)[np.argsort(rts[keep], kind="stable")]
            fr.write(_records(win[order], lengths[order], rts[order], snaplen))
    return s_path, r_path, {"sent": packets, "lost": lost, "received": received,
                            "mean": delay_sum / received}


def _vm_hwm_kb(pid: int) -> int | None:
    """The process's peak resident set (``VmHWM``, of its own image since exec)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from ``/proc/<pid>/task/*/children``)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _cpu_ticks(pid: int) -> int | None:
    """The process's own ``utime + stime`` in clock ticks (``/proc/<pid>/stat``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])      # fields 14 and 15 of proc(5)


def _child_env(bytecode: bool) -> dict:
    """The children's environment: with the bytecode cache on when ``bytecode``."""
    env = dict(os.environ)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def table(saved: dict) -> str:
    """The markdown table of a saved run (``--out``): one row per kind, jobs and worker
    kind, with the columns ``docs/BENCHMARKS.md`` shows."""
    lines = ["| kind | jobs | wall s | CPU s | parent + workers CPU s | M packet pairs / CPU s "
             "| … without the start | peak RSS (sum) | wall speed-up | idle bound |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in saved["results"]:
        jobs = f"{r['jobs']}{' threads' if r['workers'] == 'threads' else ''}"
        split = (f"{r['cpu_s']:.2f}" if r["jobs"] == 1 or r["workers"] == "threads"
                 else f"{r['parent_cpu_s']:.2f} + {r['workers_cpu_s']:.2f}")
        lines.append(f"| {r['synopsis'].upper()} | {jobs} | {r['wall_s']:.2f} | "
                     f"{r['cpu_s']:.2f} | {split} | {r['pairs_per_cpu_s']:.2f} | "
                     f"{r['pairs_per_cpu_s_work']:.2f} | {r['peak_rss_mb']:.0f} MB | "
                     f"{r.get('speedup_wall', 1.0):.2f} | {r.get('speedup_idle', 1.0):.2f} |")
    return "\n".join(lines)


def run_estimate(s_path: Path, r_path: Path, synopsis: str, jobs: int = 1,
                 bytecode: bool = True, threads: bool = False) -> dict:
    """``ldactl estimate --jobs N`` in a child process: wall and CPU seconds, peak RSS,
    records.

    Peak RSS is the sum over the child and its worker processes of each one's
    ``VmHWM``, polled every 50 ms (the child's ``ru_maxrss`` would also count the image
    of this process it was forked from), and ``ru_maxrss`` as a bound. The child's own
    CPU time is polled too (``parent_cpu_s``); its workers' is the rest."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "host_sw.cli", "estimate",
                                 str(s_path), str(r_path), "--synopsis", synopsis, "--json",
                                 "--jobs", str(jobs)] + (["--threads"] if threads else []),
                                stdout=out, stderr=err, text=True,
                                env=_child_env(bytecode))
        peaks, own = {}, 0
        while proc.poll() is None:
            for p in _tree(proc.pid):
                peaks[p] = max(peaks.get(p, 0), _vm_hwm_kb(p) or 0)
            own = max(own, _cpu_ticks(proc.pid) or 0)
            time.sleep(0.05)
        hwm = sum(peaks.values())
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        raise SystemExit(f"ldactl estimate failed ({proc.returncode}): {stderr}")
    records = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    parent = min(cpu, own / os.sysconf("SC_CLK_TCK"))
    return {"wall_s": wall, "cpu_s": cpu, "parent_cpu_s": parent,
            "workers_cpu_s": cpu - parent if jobs > 1 and not threads else 0.0,
            "wall_idle_s": parent + (cpu - parent) / jobs if jobs > 1 and not threads
            else cpu,
            "peak_rss_mb": hwm / 1024, "maxrss_bound_mb": after.ru_maxrss / 1024,
            "records": records}


_STARTUP = ("import host_sw.cli.main; from host_sw.estimators.offline_stream import warm_loops; "
            "warm_loops()")


def startup_cpu_s(bytecode: bool = True) -> float:
    """CPU seconds of a child that only starts as ``ldactl estimate`` does (interpreter,
    imports and the compiled loops loaded): the best of three."""
    best = None
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", _STARTUP], check=True,
                       env=_child_env(bytecode))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = cpu if best is None else min(best, cpu)
    return best


_WORK = """
import resource, sys
from host_sw.contracts.config import config_class
from host_sw.estimators.offline import capture_records
from host_sw.model.pcap_stream import warm_compiled
try:
    from host_sw.estimators.offline_jobs import no_hugepage_advice
    no_hugepage_advice()             # as ldactl estimate does (trees that have it)
except ImportError:
    pass
try:
    from host_sw.estimators.offline_jobs import reuse_freed_memory
    reuse_freed_memory()             # likewise
except ImportError:
    pass
warm_compiled()
kind, s, r = sys.argv[1:4]
def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime
t = cpu()
(rec,) = capture_records(s, r, config_class(kind)())
print(cpu() - t)
"""


def work_cpu_s(tree: Path, kind: str, s_path: Path, r_path: Path,
               bytecode: bool = True) -> float:
    """CPU seconds of ``capture_records`` (one job, one interval) on the pair in a child
    run in ``tree`` (its package first on the path), after its imports and compiled
    loops are loaded: the analysis alone."""
    got = subprocess.run([sys.executable, "-c", _WORK, kind, str(s_path.resolve()),
                          str(r_path.resolve())], check=True, capture_output=True,
                         text=True, cwd=tree, env=_child_env(bytecode))
    return float(got.stdout.split()[-1])


def run_cpu_s(tree: Path, kind: str, s_path: Path, r_path: Path,
              bytecode: bool = True) -> float:
    """CPU seconds of a whole ``ldactl estimate --json --jobs 1`` on the pair (start
    included) in a child run in ``tree`` (its package first on the path)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "host_sw.cli", "estimate", str(s_path.resolve()),
                    str(r_path.resolve()), "--synopsis", kind, "--json", "--jobs", "1"],
                   check=True, capture_output=True, cwd=tree, env=_child_env(bytecode))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def compare_trees(other: Path, kinds, s_path, r_path, rounds: int = 3) -> list[dict]:
    """:func:`work_cpu_s` (the analysis alone) and :func:`run_cpu_s` (a whole run) of
    ``other`` (another checkout, e.g. the tree before a change) and of this tree,
    alternately ``rounds`` times per kind: the best of each (the load inflates CPU time
    too; alternating exposes both to the same load)."""
    here = Path(__file__).resolve().parents[1]
    out = []
    for kind in kinds:
        best = {}
        for _ in range(rounds):
            for name, tree in (("other", other), ("this", here)):
                for what, fn in (("cpu_s", work_cpu_s), ("run_cpu_s", run_cpu_s)):
                    t = fn(tree, kind, s_path, r_path)
                    key = f"{name}_{what}"
                    best[key] = t if key not in best else min(best[key], t)
        row = {"synopsis": kind, **{k: round(v, 2) for k, v in sorted(best.items())},
               "load": round(os.getloadavg()[0], 2)}
        out.append(row)
        print(f"{kind} (best of {rounds}): the analysis alone {best['other_cpu_s']:.2f} s CPU "
              f"in {other}, {best['this_cpu_s']:.2f} s here; a whole run "
              f"{best['other_run_cpu_s']:.2f} s there, {best['this_run_cpu_s']:.2f} s here "
              f"(load {row['load']})")
    return out


def compare_readers(path: Path) -> list[dict]:
    """CPU seconds to list every record's timestamp and first 64 bytes of ``path`` with
    each candidate reader: dpkt's ``pcap.Reader``, scapy's ``RawPcapReader`` and
    :func:`host_sw.model.pcap_stream.iter_capture` (which also classifies the frames)."""
    def with_dpkt():
        with open(path, "rb") as f:
            return sum(1 for _ts, buf in dpkt.pcap.Reader(f) if buf[:64] is not None)

    def with_scapy():
        return sum(1 for buf, _meta in RawPcapReader(str(path)) if buf[:64] is not None)

    def with_stream():
        return sum(len(c) for c in iter_capture(path))

    out = []
    candidates = [("iter_capture (this package)", with_stream),
                  ("dpkt pcap.Reader", with_dpkt)]
    if RawPcapReader is not None:
        candidates.append(("scapy RawPcapReader", with_scapy))
    for name, fn in candidates:
        t0 = time.process_time()
        n = fn()
        cpu = time.process_time() - t0
        out.append({"reader": name, "records": n, "cpu_s": round(cpu, 2),
                    "mpps_cpu": round(n / cpu / 1e6, 3)})
        print(f"{name}: {n:,} records in {cpu:.2f} s CPU ({n / cpu / 1e6:.2f} Mpps)")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=2_000_000)
    ap.add_argument("--flows", type=int, default=10_000)
    ap.add_argument("--loss", type=float, default=0.01)
    ap.add_argument("--snaplen", type=int, default=96)
    ap.add_argument("--synopsis", nargs="+", default=["lda", "rda", "lds", "opa"])
    ap.add_argument("--jobs", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", default="build/bench")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--out", default=str(OUT / "offline_stream.json"))
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="run each kind's configurations in N rounds (each once a round) "
                         "and report each one's run of median CPU time (every run's times "
                         "are saved)")
    ap.add_argument("--threads", action="store_true",
                    help="also run each --jobs N > 1 with --threads")
    ap.add_argument("--no-bytecode", action="store_true",
                    help="keep PYTHONDONTWRITEBYTECODE in the runs' environment")
    ap.add_argument("--generate-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--compare", default=None, metavar="TREE",
                    help="only time the analysis alone in TREE (another checkout) and "
                         "here, alternately (compare_trees)")
    ap.add_argument("--table", default=None, metavar="JSON",
                    help="only print the markdown table of a saved run (docs/BENCHMARKS.md's "
                         "tables are these: tests/bench/test_offline_stream_table.py)")
    ap.add_argument("--readers", default=None, metavar="PCAP",
                    help="only compare the candidate readers on this capture")
    args = ap.parse_args(argv)
    if args.table:
        print(table(json.loads(Path(args.table).read_text())))
        return
    if args.readers:
        out = Path(args.out).with_name("offline_stream_readers.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"benchmark": "offline_stream_readers",
                                   "machine": machine(), "capture": args.readers,
                                   "results": compare_readers(Path(args.readers))},
                                  indent=2) + "\n")
        print(f"wrote {out}")
        return
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    if args.generate_only:
        s_path, r_path, truth = generate(directory, args.packets, args.flows, args.loss,
                                         args.snaplen, args.seed)
        (directory / "truth.json").write_text(json.dumps(truth))
        return
    t0 = time.perf_counter()
    # generated in a child: this process stays small, so the estimate's child (forked
    # from it) starts small too
    subprocess.run([sys.executable, "-m", "bench.offline_stream", "--generate-only",
                    "--packets", str(args.packets), "--flows", str(args.flows),
                    "--loss", str(args.loss), "--snaplen", str(args.snaplen),
                    "--seed", str(args.seed), "--dir", str(directory)], check=True)
    s_path, r_path = directory / "s.pcap", directory / "r.pcap"
    truth = json.loads((directory / "truth.json").read_text())
    gen_s = time.perf_counter() - t0
    # the captures written out now, not by the kernel's writeback threads during the
    # runs (3.6 GB for the 20 M pair: their CPU time on this 2-vCPU machine slowed the
    # first runs with two workers by up to a fifth)
    os.sync()
    if args.compare:
        try:
            rows = compare_trees(Path(args.compare), args.synopsis, s_path, r_path)
        finally:
            if not args.keep:
                for p in (s_path, r_path, directory / "truth.json"):
                    p.unlink(missing_ok=True)
        out = Path(args.out).with_name("offline_stream_compare.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"benchmark": "offline_stream_compare",
                                   "machine": machine(), "packets": args.packets,
                                   "other": args.compare, "results": rows}, indent=2) + "\n")
        print(f"wrote {out}")
        return
    sizes = {"sender_bytes": s_path.stat().st_size, "receiver_bytes": r_path.stat().st_size}
    print(f"generated {args.packets:,} + {truth['received']:,} packets in {gen_s:.1f} s "
          f"({sizes['sender_bytes'] / 2**30:.2f} + {sizes['receiver_bytes'] / 2**30:.2f} GiB)")
    results = []
    bytecode = not args.no_bytecode
    startup = startup_cpu_s(bytecode)
    loops = implementation()
    print(f"start of a run (imports, compiled loops: {loops}): {startup:.2f} s CPU")
    try:
        runs = [(jobs, False) for jobs in args.jobs] + (
            [(jobs, True) for jobs in args.jobs if jobs > 1] if args.threads else [])
        for kind in args.synopsis:
            # in rounds, each configuration once a round: this VM's speed drifts by several
            # per cent over minutes, and three runs of one configuration in a row, then
            # three of the next, put that drift into their ratio (RDA's --jobs 2 measured
            # 1.62x that way, 1.71-1.78x alternated with --jobs 1 the same hour)
            runs_by = {config: [] for config in runs}
            loads = {}
            for _ in range(max(1, args.repeat)):
                for jobs, threads in runs:
                    loads.setdefault((jobs, threads), os.getloadavg()[0])
                    runs_by[jobs, threads].append(
                        run_estimate(s_path, r_path, kind, jobs, bytecode, threads))
            for jobs, threads in runs:
                load_before = loads[jobs, threads]
                runs_of = runs_by[jobs, threads]
                got = sorted(runs_of, key=lambda g: g["cpu_s"])[len(runs_of) // 2]
                repeats = {"cpu_s_runs": [round(g["cpu_s"], 2) for g in runs_of],
                           "wall_s_runs": [round(g["wall_s"], 2) for g in runs_of]}
                (rec,) = got.pop("records")
                records = args.packets + truth["received"]
                est = rec["estimate"] or {}
                row = {"synopsis": kind, "jobs": jobs,
                       "workers": "threads" if threads else "processes",
                       **{k: round(v, 2) for k, v in got.items()},
                       "packets_read": records,
                       "mpps_wall": round(records / got["wall_s"] / 1e6, 3),
                       "mpps_cpu": round(records / got["cpu_s"] / 1e6, 3),
                       "pairs_per_cpu_s": round(args.packets / got["cpu_s"] / 1e6, 3),
                       # the workers are forked from the started parent: one start
                       "pairs_per_cpu_s_work": round(
                           args.packets / max(got["cpu_s"] - startup, 1e-9) / 1e6, 3),
                       **(repeats if args.repeat > 1 else {}),
                       "load_before": round(load_before, 2),
                       "load_after": round(os.getloadavg()[0], 2),
                       "valid": rec["valid"], "est_lost": est.get("lost"),
                       "true": rec.get("true"), "est_mean": est.get("mean")}
                if threads:   # the start is the parent's alone; the rest on N threads
                    row["wall_idle_s"] = round(
                        min(startup, got["cpu_s"]) + max(got["cpu_s"] - startup, 0) / jobs, 2)
                results.append(row)
                flag = " --threads" if threads else ""
                print(f"{kind} --jobs {jobs}{flag}: {records:,} records in "
                      f"{got['wall_s']:.1f} s "
                      f"wall ({row['mpps_wall']} M/s), {got['cpu_s']:.2f} s CPU "
                      f"({row['mpps_cpu']} M records/s, {row['pairs_per_cpu_s']} M pairs/s "
                      f"of CPU time; {row['pairs_per_cpu_s_work']} M without the start), "
                      f"parent {got['parent_cpu_s']:.2f} s + workers "
                      f"{got['workers_cpu_s']:.2f} s CPU (idle {jobs}-core wall >= "
                      f"{row['wall_idle_s']:.2f} s); "
                      f"peak RSS {got['peak_rss_mb']:.0f} MB; load "
                      f"{row['load_before']} -> {row['load_after']}; valid {rec['valid']}, "
                      f"lost {est.get('lost')} (true {truth['lost']}), mean "
                      f"{est.get('mean')} ns (true {truth['mean']:.2f})")
        for kind in args.synopsis:
            rows = {(r["jobs"], r["workers"]): r for r in results if r["synopsis"] == kind}
            if (1, "processes") in rows:
                one = rows[1, "processes"]
                for (jobs, workers), r in sorted(rows.items()):
                    r["speedup_wall"] = round(one["wall_s"] / r["wall_s"], 2)
                    r["speedup_idle"] = round(one["wall_idle_s"] / r["wall_idle_s"], 2)
                    if jobs != 1:
                        print(f"{kind}: --jobs {jobs} ({workers}) is {r['speedup_wall']}x "
                              f"--jobs 1 in "
                              f"wall-clock time (load {r['load_before']}); at most "
                              f"{r['speedup_idle']}x projected from the CPU times on an "
                              f"idle machine")
    finally:
        if not args.keep:
            for p in (s_path, r_path, directory / "truth.json"):
                p.unlink(missing_ok=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "offline_stream", "machine": machine(),
                               "packets": args.packets, "flows": args.flows,
                               "loss": args.loss, "snaplen": args.snaplen,
                               "generate_s": round(gen_s, 1), **sizes, "truth": truth,
                               "startup_cpu_s": round(startup, 2), "loops": loops,
                               "bytecode_cache": bytecode,
                               "results": results}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
