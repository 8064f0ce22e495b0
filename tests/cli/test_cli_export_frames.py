# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl estimate`` on captures of exported control frames (issue 11, item 4): a
changed, unauthenticated, duplicated, replayed or foreign interval is one error line
naming the interval (exit 1), never a number; the key comes from ``--key-file``."""

import contextlib
import io
import json
import re

import pytest

from bench.frame_tamper import CONFIG, KEY, OTHER, export_frames
from host_sw.cli.main import main
from host_sw.model.pcap import write_pcap


def _call(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
    return (0 if code is None else code), out.getvalue(), err.getvalue()


@pytest.fixture
def run(tmp_path):
    (tmp_path / "cfg.json").write_text(json.dumps(CONFIG.to_dict()))
    (tmp_path / "key.txt").write_text(KEY.hex() + "\n")

    def estimate(s_frames, r_frames, *extra):
        for name, frames in (("s.pcap", s_frames), ("r.pcap", r_frames)):
            write_pcap(tmp_path / name, frames, list(range(len(frames))))
        return _call(["estimate", str(tmp_path / "s.pcap"), str(tmp_path / "r.pcap"),
                      "--config", str(tmp_path / "cfg.json"), "--json",
                      *[str(tmp_path / x) if x.endswith(".txt") else x for x in extra]])
    return estimate


def _flip(frames, i, pos):
    b = bytearray(frames[i])
    b[pos] ^= 0x40
    return frames[:i] + [bytes(b)] + frames[i + 1:]


def test_good_exports_print_every_interval(run):
    s, r = export_frames()
    code, out, err = run(s, r)
    assert code == 0, err
    assert [json.loads(x)["interval"] for x in out.splitlines()] == [1, 2, 3, 4]
    ks, kr = export_frames(KEY)
    code, out, err = run(ks, kr, "--key-file", "key.txt")
    assert code == 0 and len(out.splitlines()) == 4, err


@pytest.mark.parametrize("pos, message", [
    (60, r"r.pcap: frame 3: synopsis chunk 2 of interval 1: the tag does not match"),
    # A flip inside the sequence number: the frame (and the number it now shows) named.
    (20, r"r.pcap: frame 3: synopsis chunk 2 of interval 16385: the tag does not match"),
])
def test_a_flipped_byte_is_an_error_naming_the_interval(run, pos, message):
    s, r = export_frames()
    code, out, err = run(s, _flip(r, 2, pos))
    assert (code, out) == (1, "")
    assert err.startswith("ldactl estimate: error: ") and err.count("\n") == 1
    assert re.search(message, err), err


def test_replays_duplicates_and_foreign_intervals(run):
    s, r = export_frames()
    per = len(r) // 4
    _, other = export_frames(seed=9, receiver_mac=OTHER)
    for frames, message in (
            (r + r[:per], "interval 1 from 02:00:00:00:00:02: not after interval 4"),
            (r[:2 * per] + r[:per], "interval 1 .* not after interval 2"),
            (r[:per] + other[per:2 * per], "interval 2 comes from 02:00:00:00:00:0b")):
        code, out, err = run(s, frames)
        assert (code, out) == (1, ""), err
        assert re.search(message, err), err


def test_authenticated_mode(run, tmp_path):
    ks, kr = export_frames(KEY)
    s, r = export_frames()
    code, out, err = run(ks, r, "--key-file", "key.txt")
    assert (code, out) == (1, "") and "is not authenticated" in err
    code, out, err = run(ks, kr)
    assert (code, out) == (1, "") and "no key was given" in err
    (tmp_path / "other.txt").write_text(bytes(range(1, 17)).hex())
    code, out, err = run(ks, kr, "--key-file", "other.txt")
    assert (code, out) == (1, "") and "under the key given" in err
    # A bad key file: exit 2 naming the option, never showing the file's text.
    (tmp_path / "bad.txt").write_text("secret-but-not-hex-0123456789abcd")
    code, out, err = run(ks, kr, "--key-file", "bad.txt")
    assert code == 2 and "--key-file" in err and "secret" not in err
