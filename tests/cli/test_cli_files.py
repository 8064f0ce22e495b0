# SPDX-License-Identifier: BSD-2-Clause
"""Nothing lost, nothing endless (issue 23, item 4): every input file option refuses a
file that never ends (``/dev/zero``, a FIFO with no writer) in one line within seconds;
an output that fails after an interval was released keeps the interval in a rescue file
the error names; ``plot -o`` writes the name given; a device URL's options are bounded
like the CLI's own."""

import contextlib
import io
import json
import os
import re
import threading

import pytest

from host_sw.cli import main
from host_sw.device.url import parse_options

FAKE = "fake://?synopsis=lda"


def _call(argv, limit_s: float = 20.0):
    """``ldactl argv`` in-process on a thread: (exit code, stdout, stderr); fails the test
    when it has not returned within ``limit_s`` seconds (it blocks)."""
    out, err, result = io.StringIO(), io.StringIO(), {}

    def run():
        try:
            result["code"] = main(argv)
        except SystemExit as e:
            result["code"] = e.code
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        t = threading.Thread(target=run, daemon=True)
        t.start()
        t.join(limit_s)
    assert not t.is_alive(), f"ldactl {argv} still runs after {limit_s} s"
    return result["code"] or 0, out.getvalue(), err.getvalue()


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return str(path)


#: Every option that names an input file, as ``(argv with FILE, exit code)``: 2 for the
#: options read while the command line is parsed (the key files), 1 for the others.
_INPUT_OPTIONS = [
    (["info", "-d", FAKE, "--config", "FILE"], 1),
    (["info", "-d", FAKE, "--core", "1", "--csr-csv", "FILE"], 1),
    (["config", "-d", FAKE, "--auth-key-file", "FILE"], 2),
    (["estimate", "a.pcap", "b.pcap", "--key-file", "FILE"], 2),
    (["estimate", "FILE", "b.pcap"], 1),
    (["estimate", "s.json", "FILE"], 1),
    (["estimate", "s.pcap", "r.pcap", "--config", "FILE"], 1),
    (["export", "-i", "FILE"], 1),
    (["plot", "-i", "FILE"], 1),
    (["plot", "--delays", "FILE"], 1),
    (["simulate", "--pcap", "FILE", "--packets", "100"], 1),
]


@pytest.mark.parametrize("argv, code", _INPUT_OPTIONS, ids=lambda v: " ".join(v)
                         if isinstance(v, list) else str(v))
@pytest.mark.parametrize("endless", ["/dev/zero", "fifo"])
def test_an_input_that_never_ends_is_refused_in_a_line(argv, code, endless, fifo,
                                                       tmp_path):
    path = fifo if endless == "fifo" else endless
    for name in ("s.json", "s.pcap", "r.pcap"):
        (tmp_path / name).write_bytes(name.encode())
    argv = [path if a == "FILE" else a for a in argv]
    with contextlib.chdir(tmp_path):
        got, out, err = _call(argv)
    assert got == code, err
    (line,) = [x for x in err.splitlines() if ": error: " in x]
    assert path in line
    kind = "character device" if endless == "/dev/zero" else "named pipe"
    assert f"{path}: it is a {kind}, not a file" in line or \
        f"{path}: not a regular file" in line, line


def test_an_input_larger_than_its_bound_is_refused(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:          # sparse: 2 MiB of nothing
        f.truncate(2 << 20)
    code, _, err = _call(["info", "-d", FAKE, "--config", str(big)])
    assert code == 1
    assert f"cannot read configuration {big}: larger than 1048576 bytes" in err


def _rescued(err: str, path: str) -> str:
    m = re.search(rf"cannot write {re.escape(path)}: No space left on device; the (.*) is "
                  rf"kept in (\S+)$", err.strip())
    assert m, err
    return m.group(2)


def test_read_output_failing_after_release_keeps_the_snapshot():
    code, out, err = _call(["read", "-d", FAKE, "--swap", "-o", "/dev/full"])
    assert code == 1 and out == ""
    rescue = _rescued(err, "/dev/full")
    assert "snapshot of interval 0 (released)" in err
    try:
        doc = json.loads(open(rescue).read())
        assert doc["seq"] == 0 and "config" in doc
    finally:
        os.remove(rescue)


def test_watch_output_failing_keeps_the_record():
    code, _, err = _call(["watch", "--sender", FAKE, "--receiver", FAKE, "--swap",
                          "--period", "0", "--intervals", "2", "--output", "/dev/full",
                          "--json"])
    assert code == 1
    rescue = _rescued(err, "/dev/full")
    try:
        (line,) = open(rescue).read().splitlines()
        assert json.loads(line)["interval"] is not None
    finally:
        os.remove(rescue)


def test_read_output_rescued_beside_a_regular_file(tmp_path, monkeypatch):
    """A regular output whose write fails: the rescue file is beside it."""
    target = tmp_path / "snap.json"
    real_open = open

    def failing_open(path, mode="r", *a, **kw):
        if str(path) == str(target):
            raise OSError(28, "No space left on device")
        return real_open(path, mode, *a, **kw)
    monkeypatch.setattr("builtins.open", failing_open)
    code, _, err = _call(["read", "-d", FAKE, "--swap", "-o", str(target)])
    monkeypatch.undo()
    assert code == 1
    assert _rescued(err, str(target)) == f"{target}.rescued-0.json"
    assert json.loads((tmp_path / "snap.json.rescued-0.json").read_text())["seq"] == 0


@pytest.mark.parametrize("output", ["read-only-dir/x.json", "nodir/x.json", "adir"])
def test_read_refuses_an_unwritable_output_before_reading(output, tmp_path):
    (tmp_path / "adir").mkdir()
    (tmp_path / "read-only-dir").mkdir()
    (tmp_path / "read-only-dir" / "x.json").mkdir()     # a directory: unwritable as root too
    with contextlib.chdir(tmp_path):
        code, out, err = _call(["read", "-d", FAKE, "--swap", "-o", output])
    assert code == 1 and out == ""
    assert f"cannot write {output}: " in err


def test_plot_writes_the_name_given(tmp_path):
    rec = {"interval": 0, "valid": True, "synopsis": "lda", "config_id": "0x1",
           "estimate": {"mean": 100.0, "ci": [90.0, 110.0], "loss_rate": 0.01},
           "notes": []}
    (tmp_path / "rec.jsonl").write_text(json.dumps(rec) + "\n")
    with contextlib.chdir(tmp_path):
        code, out, err = _call(["plot", "-i", "rec.jsonl", "-o", "figure"])
    assert code == 0, err
    assert out.startswith("wrote figure ")
    assert (tmp_path / "figure").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (tmp_path / "figure.png").exists()


@pytest.mark.parametrize("query, message", [
    ("timeout=inf", "bad value 'inf' for the timeout option (must be above 0 and at most 3600)"),
    ("timeout=1e400", "bad value '1e400' for the timeout option (must be above 0 and at most 3600)"),
    ("timeout=nan", "bad value 'nan' for the timeout option (must be above 0 and at most 3600)"),
    ("timeout=0", "bad value '0' for the timeout option (must be above 0 and at most 3600)"),
    ("resync_delay=inf", "bad value 'inf' for the resync_delay option (must be 0..60)"),
    ("resync_delay=-1", "bad value '-1' for the resync_delay option (must be 0..60)"),
    ("retries=1000000", "bad value '1000000' for the retries option (must be 0..100)"),
    ("max_burst=0", "bad value '0' for the max_burst option (must be 1..255)"),
    ("baud=0", "bad baud rate '0' (1..100000000)"),
    ("timeout=abc", "bad value 'abc' for the timeout option"),
])
def test_url_options_are_bounded_like_the_cli(query, message):
    with pytest.raises(ValueError) as e:
        parse_options(query)
    assert str(e.value) == message
    code, _, err = _call(["info", "-d", f"{FAKE}&{query}"])
    assert code == 1 and message in err


def test_url_options_in_bounds_are_kept():
    ours, rest = parse_options("timeout=3600&retries=100&resync_delay=0&max_burst=255"
                               "&baud=115200&x=1")
    assert ours == {"timeout": 3600.0, "retries": 100, "resync_delay": 0.0,
                    "max_burst": 255, "baudrate": 115200}
    assert rest == [("x", "1")]


@pytest.mark.parametrize("argv, message", [
    (["estimate", "s.pcap", "r.pcap", "--interval-ns", "1000000000000000001"],
     "argument --interval-ns: must be at most 1000000000000000000"),
    (["simulate", "--synopsis", "rli", "--ref-packets", "4294967296"],
     "argument --ref-packets: must be at most 4294967295"),
    (["estimate", "s.pcap", "r.pcap", "--synopsis", "rli", "--ref-period", "10" * 20],
     "argument --ref-period: must be at most 1000000000000000"),
    (["watch", "--sender", FAKE, "--receiver", FAKE, "--period", "1e300"],
     "argument --period: must be at most 86400"),
    (["read", "-d", FAKE, "--wait", "1e20"], "argument --wait: must be at most 86400"),
])
def test_huge_values_are_usage_errors(argv, message):
    code, out, err = _call(argv)
    assert code == 2 and out == ""
    assert message in err
