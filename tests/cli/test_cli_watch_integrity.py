# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl watch`` and ``read`` against a device whose counter window answers a wrong word
(issue 11, item 1): a word that is wrong once is read again and the interval is valid; a
word that is always wrong makes the interval an invalid row naming the check, and the run
goes on; ``read`` fails with one error line and writes no number."""

import json

import pytest

from host_sw.cli import main
from host_sw.contracts.config import LdaConfig
from host_sw.device.fake_transport import register_fake_device
from host_sw.model.channel import simulate_interval

CONFIG = LdaConfig(banks=2, rows=64, thresholds=(0, 5))


@pytest.fixture
def devices(scripted_device):
    """``devices(bad)``: sender fake://cs, receiver fake://cr; the receiver's window
    answers word 9 chunk 0 wrong on the reads of the intervals in ``bad`` (``bad[seq]``:
    how many window passes are wrong, None for all)."""
    pairs = [simulate_interval(packets=1500, loss=0.01, seed=s).synopses(CONFIG)
             for s in range(1, 4)]

    class WrongWord(scripted_device):
        def __init__(self, synopses, bad):
            super().__init__(CONFIG, synopses)
            self.set("config_id", CONFIG.config_id)
            self.bad, self.passes = dict(bad), {}

        def bus_read(self, address):
            word = super().bus_read(address)
            w = self.map.window
            if self.frozen is None or not w.address <= address < w.address + w.words:
                return word
            seq = self.get("frozen_seq")
            index, chunk = w.locate(address)
            if (index, chunk) == (0, 0):
                self.passes[seq] = self.passes.get(seq, 0) + 1
            wrong = self.bad.get(seq, 0)
            if (index, chunk) == (9, 0) and (wrong is None or self.passes[seq] <= wrong):
                return word ^ 4
            return word

    def make(bad):
        s = WrongWord([p[0] for p in pairs], {})
        r = WrongWord([p[1] for p in pairs], bad)
        register_fake_device("cs", s)
        register_fake_device("cr", r)
        return s, r

    yield make
    register_fake_device("cs", None)
    register_fake_device("cr", None)


def run_watch(capsys, intervals):
    code = main(["watch", "--sender", "fake://cs?retries=0", "--receiver",
                 "fake://cr?retries=0", "--swap", "--period", "0", "--intervals",
                 str(intervals), "--retry-delay", "0.001", "--wait", "5", "--json",
                 "--attempts", "2"])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def test_wrong_word_once_is_reread_and_valid(capsys, devices):
    _, r = devices({1: 1})
    code, rows, err = run_watch(capsys, 3)
    assert code == 0, err
    assert [(x["interval"], x["valid"]) for x in rows] == [(0, True), (1, True), (2, True)]
    assert r.passes[1] == 2 and r.passes[0] == 1


def test_wrong_word_always_is_an_invalid_row_and_the_run_goes_on(capsys, devices):
    _, r = devices({1: None})
    code, rows, err = run_watch(capsys, 3)
    assert code == 0, err
    assert [(x["interval"], x["valid"]) for x in rows] == [(0, True), (1, False), (2, True)]
    bad = rows[1]
    assert bad["estimate"] is None
    assert bad["receiver"]["errors"][-1].startswith(
        "SnapshotIntegrityError: the interval record read never matched the device's check")
    assert "check value mismatch" in bad["notes"][0]
    assert r.frozen is None                    # released unread, the next interval is whole


def test_read_refuses_words_that_never_match(capsys, devices, tmp_path):
    _, r = devices({0: None})
    r.swap()
    out = tmp_path / "snap.json"
    code = main(["read", "-d", "fake://cr?retries=0", "-o", str(out)])
    _, err = capsys.readouterr()
    assert code == 1 and err.count("\n") == 1 and "error:" in err
    assert "never matched the device's check" in err and not out.exists()
