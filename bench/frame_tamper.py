# SPDX-License-Identifier: BSD-2-Clause
"""Tampered export captures: does ``ldactl estimate`` print numbers from them?

Reproduces the frame figure of ``docs/TRUST.md`` (issue 11, item 4). A sender's and a
receiver's capture of exported control frames (an LDA 1 × 512 core, four intervals,
1 % loss and a 200 ns delay) are written as pcap files; then, ``--trials`` times, one byte
of one frame of one capture (chosen at random; the frames only, not the pcap record
headers) is XORed with a random non-zero value and ``ldactl estimate`` (in process, the
same code as the command) runs on the pair. A trial *prints numbers* when the command
exits 0 with records on stdout; the goal is that none does. The same is done for the
issue's other cases: an interval of the receiver replaced by a replay of another
source's, an interval's frames duplicated, and, in authenticated mode (``--key-file``),
an export without the key's tags (one made with the zero key, one with another key).

Prints the figures and writes them to ``docs/benchmarks/frame_tamper.json`` (``--out``).

Run: ``.venv/bin/python -m bench.frame_tamper`` (from the repository root; about a
minute for 300 trials per mode).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
import tempfile
from pathlib import Path

import numpy as np

from host_sw.cli.main import main as ldactl
from host_sw.contracts.config import LdaConfig
from host_sw.contracts.frames.control_frame import build_synopsis_frames
from host_sw.contracts.frames.frame_format import Role
from host_sw.contracts.synopsis import Synopsis
from host_sw.model.pcap import write_pcap

SRC, RCV, OTHER = "02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:0b"
CONFIG = LdaConfig(banks=1, rows=512, thresholds=(0,))
KEY = bytes(range(16))


def interval_pair(rng: np.random.Generator):
    """A sender's and a receiver's synopsis of one interval: ~1 % loss, 200 ns delay."""
    sent = rng.poisson(40, size=CONFIG.shape).astype(np.uint64)
    lost = rng.binomial(sent.astype(np.int64), 0.01).astype(np.uint64)
    got = sent - lost
    t = rng.integers(0, 1 << 20, size=CONFIG.shape, dtype=np.uint64)
    return (Synopsis(CONFIG, {"count": sent, "ts_sum": sent * t}),
            Synopsis(CONFIG, {"count": got, "ts_sum": got * (t + np.uint64(200))}))


def export_frames(key=None, seed=0, intervals=4, receiver_mac=RCV):
    """``(sender frames, receiver frames)`` of ``intervals`` exported intervals."""
    rng = np.random.default_rng(seed)
    s_frames, r_frames = [], []
    for seq in range(1, intervals + 1):
        s, r = interval_pair(rng)
        keyed = {} if key is None else {"key": key}     # --no-auth: code without keys
        s_frames += build_synopsis_frames(s, seq=seq, src_mac=SRC, dst_mac=RCV,
                                          role=Role.SENDER, **keyed)
        r_frames += build_synopsis_frames(r, seq=seq, src_mac=receiver_mac, dst_mac=SRC,
                                          role=Role.RECEIVER, **keyed)
    return s_frames, r_frames


def run_estimate(tmp: Path, s_frames, r_frames, key=None):
    """``(exit code, stdout, stderr)`` of ``ldactl estimate`` on the two captures."""
    paths = []
    for name, frames in (("s.pcap", s_frames), ("r.pcap", r_frames)):
        write_pcap(tmp / name, frames, np.arange(len(frames), dtype=np.int64) * 1000)
        paths.append(str(tmp / name))
    argv = ["estimate", *paths, "--config", str(tmp / "config.json"), "--json"]
    if key is not None:
        argv += ["--key-file", str(tmp / "key.txt")]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = ldactl(argv)
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


def printed_numbers(result) -> bool:
    code, out, _ = result
    return code == 0 and bool(out.strip())


def flip_trials(tmp: Path, trials: int, rng: random.Random, key=None) -> dict:
    """``trials`` captures with one byte flipped; how many printed numbers."""
    s_frames, r_frames = export_frames(key)
    printed, codes, examples = 0, {}, []
    for _ in range(trials):
        side = rng.randrange(2)
        frames = [list(s_frames), list(r_frames)][side]
        i = rng.randrange(len(frames))
        b = bytearray(frames[i])
        b[rng.randrange(len(b))] ^= rng.randrange(1, 256)
        frames[i] = bytes(b)
        pair = (frames, r_frames) if side == 0 else (s_frames, frames)
        result = run_estimate(tmp, *pair, key=key)
        printed += printed_numbers(result)
        codes[result[0]] = codes.get(result[0], 0) + 1
        if len(examples) < 3 and result[2]:
            examples.append(result[2].strip())
    return {"trials": trials, "printed_numbers": printed, "exit_codes": codes,
            "example_errors": examples}


def case_trials(tmp: Path, auth: bool = True) -> dict:
    """The issue's other cases, one run each: whether each printed numbers."""
    s_frames, r_frames = export_frames()
    per = len(s_frames) // 4
    # Genuine frames of another device (its own MAC, valid tags) put in place of interval 2.
    _, other = export_frames(seed=9, receiver_mac=OTHER)
    cases = {
        "interval from another source": (
            s_frames, r_frames[:per] + other[per:2 * per] + r_frames[2 * per:]),
        "interval duplicated": (s_frames, r_frames + r_frames[:per]),
        "old interval replayed after newer ones": (s_frames, r_frames + r_frames[per:2 * per]),
    }
    out = {name: printed_numbers(run_estimate(tmp, *pair)) for name, pair in cases.items()}
    out["untouched pair (control: must print)"] = printed_numbers(
        run_estimate(tmp, s_frames, r_frames))
    if not auth:
        return out
    keyed_s, keyed_r = export_frames(KEY)
    other_key_r = export_frames(bytes(range(1, 17)))[1]
    out["unauthenticated export, key given"] = printed_numbers(
        run_estimate(tmp, keyed_s, r_frames, key=KEY))
    out["export under another key"] = printed_numbers(
        run_estimate(tmp, keyed_s, other_key_r, key=KEY))
    out["authenticated pair (control: must print)"] = printed_numbers(
        run_estimate(tmp, keyed_s, keyed_r, key=KEY))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=300)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default="docs/benchmarks/frame_tamper.json")
    p.add_argument("--no-auth", action="store_true",
                   help="skip the authenticated runs (for code before issue 11, which "
                        "has no keys: run with PYTHONPATH at such a tree)")
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "config.json").write_text(json.dumps(CONFIG.to_dict()))
        (tmp / "key.txt").write_text(KEY.hex() + "\n")
        result = {"config": CONFIG.to_dict(), "seed": args.seed,
                  "integrity (zero key)": flip_trials(tmp, args.trials, rng)}
        if not args.no_auth:
            result["authenticated (key)"] = flip_trials(tmp, args.trials, rng, key=KEY)
        result["cases"] = case_trials(tmp, auth=not args.no_auth)
    for mode in ("integrity (zero key)", "authenticated (key)")[:1 if args.no_auth else 2]:
        r = result[mode]
        print(f"{mode}: {r['trials']} captures with one byte flipped, "
              f"{r['printed_numbers']} printed numbers; exit codes {r['exit_codes']}")
    for name, printed in result["cases"].items():
        print(f"{name}: {'printed numbers' if printed else 'error'}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
