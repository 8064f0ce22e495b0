# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl`` never shows a traceback: every sub-command, walked with hypothesis-generated
bad arguments and files, exits 0, 1 or 2 with at most one ``ldactl COMMAND: error: …``
line (issue 11, "No traceback, ever"; ``docs/CLI.md``, exit codes).

Each example is one in-process call of :func:`host_sw.cli.main` (its ``SystemExit`` and
output captured): a sub-command's usual arguments (devices are in-memory fakes,
``fake://?synopsis=lda``; files are small ones written once) with one option — every
option that takes a value, of every sub-command, found by walking the parser so that a
new option is fuzzed without editing this file — and up to two others (flags included)
replaced by generated values: junk text, huge, negative, nan and infinite numbers,
missing files, directories, empty files, malformed JSON, configurations and records of
the wrong types, and random bytes (or a pcap header and random bytes, or random JSON) as
captures, snapshots, records and configurations; and (issue 23, item 5) device URLs with
options past the CLI's bounds, pcapng files of hostile blocks (timestamps' high words of
2^31 and more, blocks shorter than their fixed fields, ``if_tsoffset`` 2^62, interfaces
of different link types), OPA record streams with changed and re-tagged bytes, and JSON
records (single, and streams of several) with impossible values. Values that would only
make a valid command run long (a huge ``--wait``, a free ``--serve`` port) are left out.
Two property tests beside the walk: ``export`` refuses a record stream holding an
impossible record, naming its line; ``estimate`` on generated capture pairs (cut,
duplicated, shifted, swapped, mixed with another stream) of every kind but OPA gives no
traceback and no valid row with a negative or > 100 % loss or a negative mean.

Figure: 131 options and ``estimate``'s two positional files, ``_EXAMPLES`` = 16 examples
each: 2112 generated invocations, 119 s in ``main`` and 213 s for the file on the shared
2-vCPU machine; ``pytest tests/cli/test_cli_fuzz.py -q -s`` prints the count, the time and
the exit codes (99 × 0, 200 × 1, 1813 × 2 when this was written; the examples are
derandomized, so the figure repeats).
"""

import argparse
import collections
import contextlib
import io
import json
import os
import struct
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from host_sw.cli import main
from host_sw.cli.main import INTERNAL_ERROR, build_parser
from host_sw.contracts.frames import control_frame as cf
from host_sw.contracts.config import LdaConfig, OpaConfig
from host_sw.contracts.opa.records import build_record_frames
from host_sw.contracts.siphash import TAG_BYTES, ZERO_KEY, siphash_tag
from host_sw.estimators.opa.run import opa_records
from host_sw.model.channel import Scenario, simulate_interval
from host_sw.model.golden_lda_rda_lds import Hashers
from host_sw.model.pcap import write_pcap

_EXAMPLES = 16

FAKE = "fake://?synopsis=lda"

#: Options whose valid values only make a run longer (waits, periods, counts, a server
#: that would run until interrupted): fuzzed with values that are not such.
_BOUNDED = {("read", "--wait"), ("watch", "--wait"), ("watch", "--period"),
            ("watch", "--intervals"), ("export", "--serve"), ("simulate", "--runs"),
            ("simulate", "--packets"), ("simulate", "--flows"), ("simulate", "--cells"),
            ("estimate", "--interval-ns"), ("info", "--timeout"), ("config", "--timeout"),
            ("read", "--timeout"), ("watch", "--timeout"), ("info", "--retries"),
            ("config", "--retries"), ("read", "--retries"), ("watch", "--retries")}
#: Never fuzzed: a hidden test switch that waits for one HTTP request.
_SKIPPED = {("export", "--serve-once")}

_COUNT = {"invocations": 0, "seconds": 0.0, "exit": collections.Counter()}


def _commands():
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices


_PARSERS = _commands()


def _options(command: str) -> list[tuple[str, bool]]:
    """The options of ``command``: (option string, takes a value)."""
    out = []
    for action in _PARSERS[command]._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        name = max(action.option_strings, key=len)
        if (command, name) not in _SKIPPED:
            out.append((name, action.nargs != 0))
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Named small inputs, good and bad, in one directory (also the working directory of
    every call, so that outputs written to generated names stay there)."""
    d = tmp_path_factory.mktemp("fuzz")
    (d / "adir").mkdir()
    (d / "empty").write_bytes(b"")
    (d / "rand.bin").write_bytes(np.random.default_rng(1).bytes(700))
    (d / "bad.json").write_text("{not json")
    (d / "deep.json").write_text("[" * 100_000)
    (d / "list.json").write_text("[1, 2]")
    (d / "nan.json").write_text('{"kind": "lda", "tick_ns": NaN}')
    (d / "latin1.json").write_bytes(b'{"kind": "\xe9"}')
    config = LdaConfig(banks=2, rows=64, thresholds=(0, 5))
    (d / "cfg.json").write_text(json.dumps(config.to_dict()))
    for name, change in (("cfg_float", {"count_bits": 32.5}),
                         ("cfg_thr", {"thresholds": [0, 6.7]}), ("cfg_bool", {"banks": True}),
                         ("cfg_unknown", {"colour": 1}), ("cfg_str", {"rows": "64"}),
                         ("cfg_range", {"rows": 3})):
        (d / f"{name}.json").write_text(json.dumps({**config.to_dict(), **change}))
    s, r = simulate_interval(packets=2000, loss=0.01, seed=3).synopses(config)
    with contextlib.chdir(d):
        for name, syn, mac, role in (("s", s, 1, 1), ("r", r, 3, 2)):   # two devices' exports
            frames = cf.build_synopsis_frames(syn, seq=0, src_mac=mac, dst_mac=2, role=role)
            write_pcap(f"{name}-export.pcap", frames, list(range(len(frames))))
        sim = Scenario(packets=300, flows=10, loss=0.02, delay="exponential:mean=2us",
                       seed=2).run()
        (iv,) = sim.intervals
        write_pcap("s.pcap", sim.trace.frames(), sim.trace.timestamps)
        order = np.argsort(iv.receiver.timestamps, kind="stable")
        write_pcap("r.pcap", sim.trace.frames(iv.receiver.indices[order]),
                   iv.receiver.timestamps[order])
        for name in ("s", "r"):
            assert _call(["read", "-d", FAKE, "--swap", "-o", f"{name}.json"])[0] == 0
        code, out, err = _call(["estimate", "s-export.pcap", "r-export.pcap", "--config",
                                "cfg.json", "--json"])
        assert code == 0, err
    good = json.loads(out)
    records = [good, {**good, "estimate": None, "valid": False}]
    (d / "rec.jsonl").write_text("".join(json.dumps(x) + "\n" for x in records))
    bad_records = [{"estimate": 5}, {"estimate": {"mean": "x"}}, {"estimate": {"ci": 3}},
                   {**good, "notes": "abc"}, {**good, "config_id": "zz"},
                   {**good, "interval": 1.5}, {**good, "synopsis": 'lda"}\nevil 1\n#'},
                   {**good, "estimate": {**good["estimate"], "ci": [5.0, 1.0]}},
                   {**good, "estimate": {**good["estimate"], "mean": 1e308}}, {"valid": 1}]
    for k, rec in enumerate(bad_records):
        (d / f"rec_bad{k}.jsonl").write_text(json.dumps(rec) + "\n")
    (d / "rec_nan.jsonl").write_text(
        json.dumps(good).replace('"mean": ', '"mean": NaN, "x": ', 1) + "\n")
    return d


_FILE_NAMES = ["missing.json", "missing.pcap", "adir", "empty", "rand.bin", "bad.json",
               "deep.json", "list.json", "nan.json", "latin1.json", "cfg.json",
               "cfg_float.json", "cfg_thr.json", "cfg_bool.json", "cfg_unknown.json",
               "cfg_str.json", "cfg_range.json", "s.pcap", "r.pcap", "s-export.pcap",
               "r-export.pcap", "s.json", "r.json", "rec.jsonl", "rec_nan.jsonl",
               *(f"rec_bad{k}.jsonl" for k in range(10))]

_JUNK = ["", " ", "nan", "NaN", "inf", "-inf", "1e309", "-1", "0", "-0", "0x10", "1_000",
         "1.5", "a,b", "0,6", "6,0", "0,6,7,8", "1%", "150%", "-5%", "02:00:00:00:00:01",
         "zz:zz", "fake://nobody", "fake://?synopsis=xyz", "tcp://127.0.0.1:1",
         "loop://?timeout=0.01&resync_delay=0", "fake://?synopsis=lda&timeout=abc",
         # URL options past the CLI's bounds (issue 23, item 5)
         "fake://?synopsis=lda&timeout=inf", "fake://?synopsis=lda&timeout=1e400",
         "fake://?synopsis=lda&resync_delay=inf", "fake://?synopsis=lda&retries=1000000",
         "fake://?synopsis=lda&max_burst=0", "fake://?synopsis=lda&baud=-1",
         "fake://?synopsis=lda&timeout=nan&retries=-1", "loop://?baud=1e9",
         "port1_to_port0", "time", "marker-send", "\x00", "☃", "-", "--", "-h"]

_TEXT = st.text(st.characters(blacklist_characters="/", blacklist_categories=("Cs",)),
                max_size=10)
_HUGE = st.integers(10 ** 18, 10 ** 40) | st.integers(-(10 ** 40), -(10 ** 18))


def _value(bounded: bool):
    """A generated option value (text); ``bounded``: none that is a number ≥ 0 (a long
    wait, many runs, a free port)."""
    numbers = st.integers(-10, 10).map(str) | _HUGE.map(str) | st.floats().map(repr)
    values = st.one_of(numbers, st.sampled_from(_JUNK), st.sampled_from(_FILE_NAMES), _TEXT)
    return values.filter(lambda t: not _non_negative(t)) if bounded else values


def _non_negative(text: str) -> bool:
    try:
        v = float(text)
    except ValueError:
        return False
    return v >= 0


def _pcapng_block(btype: int, body: bytes, length: int | None = None) -> bytes:
    body += bytes(-len(body) % 4)
    n = len(body) + 12 if length is None else length
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


_SHB = _pcapng_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))


def _idb(linktype: int, tsresol: int | None, tsoffset: int | None) -> bytes:
    opts = b"" if tsresol is None else struct.pack("<HHB3x", 9, 1, tsresol)
    opts += b"" if tsoffset is None else struct.pack("<HHq", 14, 8, tsoffset)
    return _pcapng_block(1, struct.pack("<HHI", linktype, 0, 65535) + opts + bytes(4))


def _epb(ticks: int, frame: bytes, iface: int, caplen: int | None) -> bytes:
    cap = len(frame) if caplen is None else caplen
    return _pcapng_block(6, struct.pack("<IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF,
                                        cap, len(frame)) + frame)


#: pcapng files of hostile blocks: timestamps' high words of 2^31 and more, blocks shorter
#: than their fixed fields, if_tsoffset up to 2^63, interfaces of several link types.
_PCAPNG = st.lists(st.one_of(
    st.builds(_idb, st.sampled_from([1, 1, 101, 0]), st.none() | st.integers(0, 255),
              st.none() | st.sampled_from([1 << 62, -(1 << 62), (1 << 63) - 1, 5])),
    st.builds(_epb, st.sampled_from([0, 1, 1 << 63, (1 << 64) - 1, 1 << 62, 10 ** 18]),
              st.binary(min_size=14, max_size=80), st.integers(0, 2),
              st.none() | st.integers(0, 200)),
    st.builds(_pcapng_block, st.sampled_from([1, 2, 6]), st.binary(max_size=24))),
    min_size=1, max_size=5).map(lambda blocks: _SHB + b"".join(blocks))

_OPA = OpaConfig()


def _opa_stream(frames: list, edits: list) -> bytes:
    """A capture of OPA record frames with bytes changed and the tag made again (so that
    the changed fields are parsed, not only the tag refused)."""
    frames = list(frames)
    for k, pos, byte in edits:
        f = bytearray(frames[k % len(frames)])
        f[pos % (len(f) - TAG_BYTES)] = byte
        f[-TAG_BYTES:] = siphash_tag(bytes(f[:-TAG_BYTES]), ZERO_KEY)
        frames[k % len(frames)] = bytes(f)
    head = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)    # ns, Ethernet
    return head + b"".join(struct.pack("<IIII", 1, k, len(f), len(f)) + f
                           for k, f in enumerate(frames))


def _opa_frames():
    sim = Scenario(packets=300, flows=5, seed=4).run()
    (iv,) = sim.intervals
    s, _ = opa_records(_OPA, iv, Hashers(_OPA))
    return build_record_frames(_OPA, "sender", seq=1, packet=s.packet,
                               timestamps=s.timestamps, src_mac=1, dst_mac=2)


_OPA_FRAMES = _opa_frames()
#: OPA record streams with changed (and re-tagged) header and record bytes.
_OPA_STREAMS = st.builds(lambda edits: _opa_stream(_OPA_FRAMES, edits), st.lists(
    st.tuples(st.integers(0, 20), st.integers(0, 2000), st.integers(0, 255)), max_size=4))

_GOOD_ESTIMATE = {"mean": 200.0, "std": 10.0, "ci": [190.0, 210.0], "lost": 1,
                  "loss_rate": 0.01, "samples": 99, "sent": 100, "received": 99}
_NUMBER = st.integers(-5, 200) | st.floats(-2, 2) | st.sampled_from([1e308, -1e308, 0.5])
#: JSON records with impossible values (CI upside down, a loss outside 0..1, more
#: received than sent) and OPA fields of the wrong shapes.
_RECORDS = st.builds(
    lambda change, kind: (json.dumps({"interval": 1, "valid": True, "synopsis": kind,
                                      "config_id": "0x1", "notes": [],
                                      "estimate": {**_GOOD_ESTIMATE, **change}}) + "\n").encode(),
    st.dictionaries(st.sampled_from(["ci", "loss_rate", "lost", "sent", "received", "p50",
                                     "p99.9", "max", "recovered_fraction", "histogram_s",
                                     "reordered", "samples"]),
                    _NUMBER | st.lists(_NUMBER, max_size=3) | st.fixed_dictionaries(
                        {"le": st.lists(_NUMBER, max_size=3),
                         "count": st.lists(_NUMBER, max_size=3), "sum": _NUMBER}),
                    max_size=3),
    st.sampled_from(["lda", "opa", "rli"]))
#: Record streams: several such records (and blank lines) in one JSON-lines file.
_RECORD_STREAMS = st.lists(_RECORDS | st.just(b"\n"), min_size=2, max_size=5).map(b"".join)

_GENERATED = _PCAPNG | _OPA_STREAMS | _RECORDS | _RECORD_STREAMS | st.binary(
    max_size=400) | st.builds(
    lambda j: json.dumps(j).encode(),
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                 lambda c: st.lists(c, max_size=4) | st.dictionaries(
                     st.sampled_from(["kind", "estimate", "config", "fields", "mean", "ci",
                                      "seq", "flags", "rows", "banks", "thresholds",
                                      "count_bits", "notes", "valid", "x"]), c, max_size=5),
                 max_leaves=12)) | st.builds(
    lambda tail: bytes.fromhex("d4c3b2a1020004000000000000000000ffff000001000000") + tail,
    st.binary(max_size=200))


#: Each sub-command's usual arguments (the fuzzed options are appended, and argparse
#: takes the last of a repeated option).
_BASE = {
    "simulate": ["--packets", "2000", "--fast", "--flows", "20"],
    "info": ["-d", FAKE],
    "config": ["-d", FAKE],
    "read": ["-d", FAKE, "--swap", "--wait", "0.05"],
    "watch": ["--sender", FAKE, "--receiver", FAKE, "--swap", "--period", "0",
              "--intervals", "1", "--wait", "0.05"],
    "estimate": ["s.json", "r.json"],
    "export": ["-i", "rec.jsonl"],
    "plan": ["--counters", "2048"],
    "plot": ["-i", "rec.jsonl", "-o", "out.png"],
}
#: Positional arguments (files) a sub-command takes, also replaced by generated ones.
_POSITIONAL = {"estimate": 2}
POSITIONAL = "(positional)"


def _call(argv):
    """``ldactl argv`` in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
    return (0 if code is None else code), out.getvalue(), err.getvalue()


def _option_value(draw, command, name, files):
    """A generated value of ``name``: a generated file's name (half of the time, for an
    option that may name a file) or a generated text."""
    if draw(st.booleans()) and (command, name) not in _BOUNDED:
        value = f"gen_{name.strip('-')}"
        files[value] = draw(_GENERATED)
        return value
    return draw(_value((command, name) in _BOUNDED))


@st.composite
def _invocation(draw, command: str, target: str):
    """The arguments of one call: the base ones with ``target`` (an option, or
    ``POSITIONAL``) and up to two other options replaced; and the generated files."""
    argv = list(_BASE[command])
    files = {}
    options = dict(_options(command))
    chosen = draw(st.lists(st.sampled_from(sorted(options)), max_size=2))
    if target == POSITIONAL:
        for k in range(_POSITIONAL[command]):
            choice = draw(st.sampled_from(["keep", "name", "generated"]))
            if choice == "name":
                argv[k] = draw(st.sampled_from(_FILE_NAMES))
            elif choice == "generated":
                argv[k] = f"gen{k}" + draw(st.sampled_from([".json", ".pcap", ".jsonl", ""]))
                files[argv[k]] = draw(_GENERATED)
    else:
        chosen.insert(draw(st.integers(0, len(chosen))), target)
    for name in chosen:
        if not options[name]:
            argv.append(name)
            continue
        value = _option_value(draw, command, name, files)
        argv += [f"{name}={value}"] if draw(st.booleans()) else [name, value]
    return argv, files


def _check(command, argv, code, out, err):
    where = f"ldactl {' '.join(map(repr, argv))}"
    assert code in (0, 1, 2), f"{where}: exit {code}\n{err}"
    assert "Traceback" not in out + err, f"{where}:\n{err}"
    assert INTERNAL_ERROR not in err, f"{where}:\n{err}"
    if code:
        assert f"ldactl {command}: error: " in err, f"{where}: exit {code}\n{err}"
        if code == 1:
            errors = [line for line in err.splitlines() if ": error: " in line]
            assert len(errors) == 1, f"{where}:\n{err}"
        if command != "watch":   # its table header precedes a failing interval
            assert out == "", f"{where}: printed before failing:\n{out}"


#: Every option that takes a value, of every sub-command, and their positional files.
_TARGETS = [(command, name) for command in sorted(_PARSERS)
            for name, takes_value in _options(command) if takes_value] + \
           [(command, POSITIONAL) for command in sorted(_POSITIONAL)]


@pytest.mark.parametrize("command, target", _TARGETS)
def test_no_traceback_on_any_argument(command, target, files):
    @settings(max_examples=_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data):
        argv, generated = data.draw(_invocation(command, target))
        argv = [command, *argv]
        with contextlib.chdir(files):
            for name, content in generated.items():
                with open(name, "wb") as f:
                    f.write(content)
            t0 = time.perf_counter()
            code, out, err = _call(argv)
            _COUNT["seconds"] += time.perf_counter() - t0
            _COUNT["invocations"] += 1
            _COUNT["exit"][code] += 1
            if os.environ.get("LDACTL_FUZZ_LOG"):
                print(code, argv, err.strip().splitlines()[-1:])
            for name in generated:
                os.remove(name)
        _check(command, argv, code, out, err)

    run()


#: Estimate values no record can hold (issue 23, item 5), each a change of a valid
#: record's estimate (sent 100): a confidence interval upside down, a loss rate outside
#: 0..1, more received or lost than sent, a negative or fractional count, a negative
#: standard deviation.
_IMPOSSIBLE = st.one_of(
    st.tuples(st.floats(-1e6, 1e6), st.floats(1e-3, 1e6)).map(
        lambda t: {"ci": [t[0] + t[1], t[0]]}),
    (st.floats(1.0, 1e6, exclude_min=True) | st.floats(-1e6, 0.0, exclude_max=True)).map(
        lambda v: {"loss_rate": v}),
    st.integers(1, 10 ** 6).map(lambda k: {"received": 100 + k}),
    st.integers(1, 10 ** 6).map(lambda k: {"lost": 100 + k, "loss_rate": None}),
    st.tuples(st.sampled_from(["lost", "samples", "sent", "received"]),
              st.integers(-(10 ** 6), -1) | st.sampled_from([0.5, 98.25])).map(
        lambda t: {t[0]: t[1]}),
    st.floats(-1e6, 0.0, exclude_max=True).map(lambda v: {"std": v}))


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(change=_IMPOSSIBLE, before=st.integers(0, 4), after=st.integers(0, 3),
       kind=st.sampled_from(["lda", "rda", "lds", "rli", "opa"]),
       fmt=st.sampled_from(["csv", "jsonl", "prometheus"]))
def test_a_record_stream_with_an_impossible_record_is_refused_naming_its_line(
        tmp_path_factory, change, before, after, kind, fmt):
    """A JSON-lines stream of valid records with one impossible record among them:
    ``export`` refuses it, naming the file and the line, and writes nothing."""
    good = {"interval": 1, "time": 1.0, "valid": True, "synopsis": kind,
            "config_id": "0x1", "notes": [], "estimate": dict(_GOOD_ESTIMATE)}
    bad = {**good, "estimate": {**_GOOD_ESTIMATE, **change}}
    lines = [good] * before + [bad] + [good] * after
    path = tmp_path_factory.mktemp("stream") / "records.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    code, out, err = _call(["export", "-i", str(path), "-f", fmt])
    assert code == 1 and out == "", (change, err)
    (line,) = err.splitlines()
    assert line.startswith(f"ldactl export: error: {path}:{before + 1}: "), (change, line)


@pytest.fixture(scope="module")
def two_runs():
    """A lossy run (trace, the receiver's rows and times in arrival order) and another
    stream's trace, for generated capture pairs."""
    sim = Scenario(packets=600, flows=10, loss=0.03, delay="exponential:mean=2us",
                   seed=8).run()
    (iv,) = sim.intervals
    order = np.argsort(iv.receiver.timestamps, kind="stable")
    other = Scenario(packets=600, flows=10, delay="exponential:mean=2us", seed=9).run()
    return sim.trace, iv.receiver.indices[order], iv.receiver.timestamps[order], other.trace


_FRACTION = st.floats(0.0, 1.0)


@st.composite
def _capture_pair(draw, runs):
    """A generated capture pair: each capture cut to a part, packets repeated, the
    receiver's clock shifted, the roles swapped, another stream's packets mixed in."""
    trace, r_rows, r_ts, other = runs
    sides = []
    for rows, ts in ((np.arange(len(trace)), trace.timestamps), (r_rows, r_ts)):
        if draw(st.booleans()):      # a part of the capture
            a, b = draw(st.floats(0.0, 0.6)), draw(st.floats(0.4, 1.0))
            a, b = int(min(a, b) * len(rows)), int(max(a, b) * len(rows))
            rows, ts = rows[a:max(b, a + 1)], ts[a:max(b, a + 1)]
        if draw(st.integers(0, 3)) == 3:     # some packets twice
            rng = np.random.default_rng(draw(st.integers(0, 9)))
            twice = np.flatnonzero(rng.random(len(rows)) < draw(
                st.sampled_from([0.005, 0.02, 0.5, 1.0])))
            rows, ts = np.r_[rows, rows[twice]], np.r_[ts, ts[twice]]
        sides.append([trace.frames(rows), ts])
    sides[1][1] = sides[1][1] + draw(st.sampled_from([0, 0, 0, 500, -500, 30_000, -30_000]))
    if draw(st.integers(0, 3)) == 3:         # another stream's packets in the receiver
        extra = np.arange(0, len(other), draw(st.integers(2, 200)))
        sides[1][0] = sides[1][0] + other.frames(extra)
        sides[1][1] = np.r_[sides[1][1], other.timestamps[extra] - other.timestamps[0]
                            + trace.timestamps[0] + draw(st.integers(0, 100_000))]
    if draw(st.integers(0, 3)) == 3:         # the roles swapped
        sides.reverse()
    return sides


@pytest.mark.parametrize("kind", ["lda", "rda", "lds", "rli"])
@settings(max_examples=15, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data(), interval=st.sampled_from([None, "20000", "50000"]))
def test_estimate_on_generated_capture_pairs_gives_no_impossible_row(
        tmp_path_factory, two_runs, data, kind, interval):
    d = tmp_path_factory.mktemp("pair")
    paths = []
    for name, (frames, ts) in zip(("s.pcap", "r.pcap"), data.draw(_capture_pair(two_runs))):
        order = np.argsort(ts, kind="stable")
        write_pcap(d / name, [frames[k] for k in order], np.asarray(ts)[order])
        paths.append(str(d / name))
    argv = ["estimate", *paths, "--synopsis", kind, "--json"]
    argv += [] if interval is None else ["--interval-ns", interval]
    code, out, err = _call(argv)
    _check("estimate", argv, code, out, err)
    if os.environ.get("LDACTL_FUZZ_LOG"):
        print(code, kind, interval, err.strip()[-80:], collections.Counter(
            (r["valid"], r.get("problem")) for r in map(json.loads, out.splitlines())))
    for line in out.splitlines():
        row = json.loads(line)
        if row["valid"]:
            e = row["estimate"]
            assert e["lost"] is None or e["lost"] >= 0, (argv, row)
            assert e["loss_rate"] is None or 0 <= e["loss_rate"] <= 1, (argv, row)
            assert e["mean"] is None or e["mean"] >= 0, (argv, row)


def test_every_command_is_walked():
    assert set(_BASE) == set(_PARSERS)


def teardown_module():
    print(f"\nCLI fuzz: {_COUNT['invocations']} generated invocations of ldactl, "
          f"{_COUNT['seconds']:.1f} s in main(); exit codes {dict(_COUNT['exit'])}")
