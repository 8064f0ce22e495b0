# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl``'s errors, case by case (issue 11, "No traceback, ever"): every bad option
value exits 2 naming the option, every run-time failure exits 1 with one
``ldactl COMMAND: error: …`` line and nothing on stdout; JSON configurations and records
are checked by type; Prometheus label values are escaped. ``tests/test_cli_fuzz.py``
walks the same ground with generated inputs.
"""

import importlib
import json
import re

import numpy as np
import pytest

from host_sw.cli import main
from host_sw.cli.export import label_value, prometheus_text
from host_sw.contracts.config import LdaConfig, RdaConfig, config_from_dict
from host_sw.device.fake_device import FakeDevice
from host_sw.device.fake_transport import register_fake_device
from host_sw.estimators.record import IntervalRecord
from host_sw.model.channel import Scenario
from host_sw.model.pcap import write_pcap

FAKE = "fake://?synopsis=lda"
main_module = importlib.import_module("host_sw.cli.main")


def run(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def usage_error(capsys, *argv, option):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "", err
    assert f"ldactl {argv[0]}: error: argument {option}" in err, err
    return err


def run_failure(capsys, *argv):
    code, out, err = run(capsys, *argv)
    assert code == 1 and out == "", (out, err)
    (line,) = err.splitlines()
    assert line.startswith(f"ldactl {argv[0]}: error: "), err
    return line


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    d = tmp_path_factory.mktemp("caps")
    sim = Scenario(packets=400, flows=10, loss=0.02, delay="exponential:mean=2us",
                   seed=4).run()
    (iv,) = sim.intervals
    write_pcap(d / "s.pcap", sim.trace.frames(), sim.trace.timestamps)
    order = np.argsort(iv.receiver.timestamps, kind="stable")
    write_pcap(d / "r.pcap", sim.trace.frames(iv.receiver.indices[order]),
               iv.receiver.timestamps[order])
    return d


# -- bad option values: exit 2, naming the option ---------------------------------------

@pytest.mark.parametrize("argv, option", [
    (["config", "-d", FAKE, "--thresholds", "a,b"], "--thresholds"),
    (["config", "-d", FAKE, "--thresholds", "0,99"], "--thresholds"),
    (["config", "-d", FAKE, "--thresholds", "0,6,7"], "--thresholds"),
    (["config", "-d", FAKE, "--mode", "bogus"], "--mode"),
    (["config", "-d", FAKE, "--mode", "time"], "--interval-ticks"),
    (["config", "-d", FAKE, "--interval-ticks", "-1"], "--interval-ticks"),
    (["config", "-d", FAKE, "--local-mac", "zz:zz"], "--local-mac"),
    (["info", "-d", FAKE, "--timeout", "nan"], "--timeout"),
    (["info", "-d", FAKE, "--retries", "-1"], "--retries"),
    (["info", "-d", FAKE, "--seed", "-1"], "--seed"),
    (["info", "-d", FAKE, "--tick-ns", "0"], "--tick-ns"),
    (["read", "-d", FAKE, "--wait", "-1"], "--wait"),
    (["watch", "--sender", FAKE, "--receiver", FAKE, "--period", "-1"], "--period"),
    (["watch", "--sender", FAKE, "--receiver", FAKE, "--confidence", "2"], "--confidence"),
    (["estimate", "a.json", "b.json", "--confidence", "2"], "--confidence"),
    (["estimate", "a.json", "b.json", "--interval-ns", "0"], "--interval-ns"),
    (["export", "-i", "r.jsonl", "--serve", "99999"], "--serve"),
    (["export", "-i", "r.jsonl", "--serve", "-1"], "--serve"),
    (["plan", "--counters", "2048", "--count-bits", "0"], "--count-bits"),
    (["plan", "--counters", "2048", "--ts-bits", "99"], "--ts-bits"),
    (["plan", "--counters", "2048", "--packets", "nan"], "--packets"),
    (["plan", "--counters", "2048", "--packets", "inf"], "--packets"),
    (["plan", "--counters", "2048", "--packets", "-5"], "--packets"),
    (["plan", "--counters", "2048", "--confidence", "2"], "--confidence"),
    (["plan", "--counters", "2048", "--cv", "nan"], "--cv"),
    (["plan", "--counters", "2048", "--max-banks", "1000000000"], "--max-banks"),
    (["plan", "--bytes", "1"], "--bytes"),
    (["plan", "--counters", "2048", "--loss-min", "0.3", "--loss-max", "0.1"], "--loss-min"),
    (["simulate", "--confidence", "nan"], "--confidence"),
    (["simulate", "--packets", str(10 ** 30)], "--packets"),
    (["simulate", "--clock-offset", str(10 ** 30)], "--clock-offset"),
    (["read", "-d", FAKE, "--timeout=--"], "--timeout"),
    (["plan", "--counters", "2048", "--packets=--"], "--packets"),
])
def test_bad_option_values_exit_2_naming_the_option(capsys, argv, option):
    usage_error(capsys, *argv, option=option)


def test_thresholds_for_a_device_without_them_exit_2(capsys):
    register_fake_device("rda", FakeDevice(RdaConfig()))
    try:
        usage_error(capsys, "config", "-d", "fake://rda", "--thresholds", "0,6",
                    option="--thresholds")
    finally:
        register_fake_device("rda", None)


# -- configuration files: types checked, never truncated --------------------------------

@pytest.mark.parametrize("change, message", [
    ({"count_bits": 32.5}, "count_bits must be an integer, not 32.5"),
    ({"thresholds": [0, 6.7]}, "thresholds must be a list of integers, not [0, 6.7]"),
    ({"thresholds": [0, True]}, "thresholds must be a list of integers"),
    ({"banks": True}, "banks must be an integer, not True"),
    ({"rows": "1024"}, "rows must be an integer, not '1024'"),
    ({"tick_ns": "1"}, "tick_ns must be a finite number"),
    ({"tick_ns": float("nan")}, "tick_ns must be a finite number"),
    ({"colour": 1}, "unknown lda parameters: ['colour']"),
    ({"kind": 5}, "needs a 'kind'"),
    ({"kind": ["lda"]}, "needs a 'kind'"),
    ({"rows": 1000}, "power of two"),
    ({"tick_ns": 10 ** 400}, "tick_ns must be a finite number"),
    ({"window_bytes": 10 ** 12}, "too large"),
])
def test_configuration_files_are_checked(capsys, tmp_path, change, message):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({**LdaConfig().to_dict(), **change}))
    line = run_failure(capsys, "info", "-d", FAKE, "--config", str(path))
    assert f"{path}: not a configuration: " in line and message in line


@pytest.mark.parametrize("content, message", [
    (b"[1, 2]", "a configuration is a JSON object, not list"),
    (b"{not json", "is not JSON"),
    (b"\x80\x81", "is not a text file"),
    (b"[" * 100_000, "nested too deeply"),
    (b"", "is not JSON"),
])
def test_configuration_files_that_are_not_configurations(capsys, tmp_path, content, message):
    path = tmp_path / "c.json"
    path.write_bytes(content)
    assert message in run_failure(capsys, "info", "-d", FAKE, "--config", str(path))


def test_config_from_dict_keeps_integral_numbers_and_widens_tick():
    config = LdaConfig(banks=3, rows=512, thresholds=(0, 4, 9))
    assert config_from_dict(json.loads(json.dumps(config.to_dict()))) == config
    assert config_from_dict({"kind": "lda", "tick_ns": 8}).tick_ns == 8.0
    with pytest.raises(ValueError, match="thresholds must be a list of integers"):
        config_from_dict({"kind": "lda", "thresholds": [0, 6.7]})


# -- estimate ---------------------------------------------------------------------------

def test_a_capture_compared_with_itself_is_an_error(capsys, captures, tmp_path):
    s = str(captures / "s.pcap")
    assert "are the same input" in run_failure(capsys, "estimate", s, s)
    copy = tmp_path / "copy.pcap"
    copy.write_bytes((captures / "s.pcap").read_bytes())
    assert "are the same input" in run_failure(capsys, "estimate", s, str(copy))


@pytest.mark.parametrize("interval_ns", ["1", "1000"])
def test_short_capture_intervals_do_not_crash(capsys, captures, interval_ns):
    # Intervals shorter than the delay hold packets whose delay is zero or unknown; the
    # truth column of an interval whose true mean is 0 has no relative error.
    code, out, err = run(capsys, "estimate", str(captures / "s.pcap"),
                         str(captures / "r.pcap"), "--interval-ns", interval_ns)
    assert code == 0, err
    assert out.startswith("interval ")


def test_snapshot_files_of_the_wrong_types(capsys, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"config": LdaConfig().to_dict(), "seq": 1e999}))
    b.write_text(json.dumps({"config": {"kind": "lda", "rows": 2.5}}))
    assert "not a snapshot" in run_failure(capsys, "estimate", str(a), str(b))


# -- records: export and plot -----------------------------------------------------------

GOOD = {"interval": 3, "time": 1.0, "valid": True, "synopsis": "lda",
        "config_id": "0x0000abcd", "sender": {}, "receiver": {},
        "estimate": {"mean": 200.0, "std": 10.0, "ci": [190.0, 210.0], "lost": 1,
                     "loss_rate": 0.01, "samples": 99, "sent": 100, "received": 99},
        "notes": []}


@pytest.mark.parametrize("line, message", [
    ("{not json", "is not JSON"),
    ("[1, 2]", "no 'estimate' key"),
    (json.dumps({"valid": True}), "no 'estimate' key"),
    (json.dumps({**GOOD, "estimate": 5}), "'estimate' must be an object or null"),
    (json.dumps({**GOOD, "estimate": {"mean": "x"}}), "'estimate.mean' must be a finite"),
    (json.dumps({**GOOD, "estimate": {"ci": 3}}), "'estimate.ci' must be [low, high]"),
    (json.dumps({**GOOD, "notes": "abc"}), "'notes' must be a list of strings"),
    (json.dumps({**GOOD, "config_id": "zz"}), "'config_id' must be a hexadecimal string"),
    (json.dumps({**GOOD, "interval": 1.5}), "'interval' must be an integer"),
    (json.dumps({**GOOD, "valid": "yes"}), "'valid' must be true or false"),
    (json.dumps({**GOOD, "estimate": {**GOOD["estimate"], "mean": float("nan")}}),
     "'estimate.mean' must be a finite number"),
    # impossible values (issue 23, item 5)
    (json.dumps({**GOOD, "estimate": {**GOOD["estimate"], "ci": [250.0, 150.0]}}),
     "'estimate.ci' low 250.0 is above its high 150.0"),
    (json.dumps({**GOOD, "estimate": {**GOOD["estimate"], "loss_rate": 1.5}}),
     "'estimate.loss_rate' must be 0..1, not 1.5"),
    (json.dumps({**GOOD, "estimate": {**GOOD["estimate"], "loss_rate": -0.01}}),
     "'estimate.loss_rate' must be 0..1, not -0.01"),
    (json.dumps({**GOOD, "estimate": {**GOOD["estimate"], "received": 101}}),
     "'estimate.received' 101 is more than 'estimate.sent' 100"),
    (json.dumps({**GOOD, "estimate": {**GOOD["estimate"], "lost": -3}}),
     "'estimate.lost' must be a count (an integer >= 0), not -3"),
    (json.dumps({**GOOD, "estimate": {**GOOD["estimate"], "lost": 101}}),
     "'estimate.lost' 101 is more than 'estimate.sent' 100"),
    (json.dumps({**GOOD, "estimate": {**GOOD["estimate"], "std": -1.5}}),
     "'estimate.std' must be >= 0, not -1.5"),
    (json.dumps({**GOOD, "synopsis": "opa", "estimate": {**GOOD["estimate"], "p99": "x"}}),
     "'estimate.p99' must be a finite number, not 'x'"),
    (json.dumps({**GOOD, "synopsis": "opa", "estimate": {
        **GOOD["estimate"], "recovered_fraction": 2}}),
     "'estimate.recovered_fraction' must be 0..1, not 2"),
    (json.dumps({**GOOD, "synopsis": "opa", "estimate": {
        **GOOD["estimate"], "histogram_s": {"le": [1e-6], "count": [1, 2], "sum": 0.1}}}),
     "'estimate.histogram_s' must be {le: [bounds], count: [cumulative counts], sum}"),
    (json.dumps({**GOOD, "synopsis": "opa", "estimate": {
        **GOOD["estimate"], "histogram_s": {"le": [2e-6, 1e-6], "count": [1, 2],
                                            "sum": 0.1}}}),
     "bounds increasing, counts not decreasing"),
    (json.dumps({**GOOD, "synopsis": "opa", "estimate": {
        **GOOD["estimate"], "histogram_s": {"le": [1e-6], "count": [500], "sum": 0.1}}}),
     "'estimate.histogram_s' counts 500 delays of 99 samples"),
    (json.dumps({**GOOD, "synopsis": "opa", "estimate": {**GOOD["estimate"],
                                                         "histogram_s": 7}}),
     "'estimate.histogram_s' must be"),
])
@pytest.mark.parametrize("command", [["export", "-f", "prometheus"], ["export", "-f", "csv"],
                                     ["plot"]])
def test_malformed_records_name_the_line(capsys, tmp_path, line, message, command):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + line + "\n")
    extra = ["-o", str(tmp_path / "p.png")] if command == ["plot"] else []
    err = run_failure(capsys, *command, "-i", str(path), *extra)
    assert f"{path}:2" in err and message in err


def test_plot_draws_a_confidence_interval_that_misses_its_mean(capsys, tmp_path):
    path = tmp_path / "r.jsonl"
    odd = {**GOOD, "estimate": {**GOOD["estimate"], "ci": [150.0, 160.0]}}
    path.write_text(json.dumps(odd) + "\n")
    code, out, err = run(capsys, "plot", "-i", str(path), "-o", str(tmp_path / "p.png"))
    assert code == 0, err
    line = run_failure(capsys, "plot", "-i", str(path), "-o", str(tmp_path / "p.notaformat"))
    assert "cannot draw" in line


def test_an_unwritable_output_fails_before_the_device_is_read(capsys, tmp_path):
    # The fake's interval would be released by the read: nothing is read at all.
    line = run_failure(capsys, "read", "-d", FAKE, "--swap", "-o", str(tmp_path))
    assert "it is a directory" in line
    line = run_failure(capsys, "config", "-d", FAKE, "--save", str(tmp_path / "no" / "c.json"))
    assert "no directory" in line


def test_unreadable_records_and_outputs(capsys, tmp_path):
    assert "cannot read records" in run_failure(capsys, "export", "-i", str(tmp_path))
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"\xff\xfe junk")
    assert "is not a text file" in run_failure(capsys, "export", "-i", str(path))


# -- Prometheus label values ------------------------------------------------------------

_SAMPLE = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*'
                     r'(\{([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*\})? \S+$')


def test_label_values_are_escaped():
    assert label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'


def test_a_record_cannot_inject_metric_lines():
    evil = 'lda"} 1\nldactl_loss_ratio{synopsis="x"} 0\n# \\'
    rec = IntervalRecord.from_json({**GOOD, "synopsis": evil})
    text = prometheus_text([rec])
    lines = text.splitlines()
    assert all(line.startswith("# ") or _SAMPLE.match(line) for line in lines), text
    # Exactly the metrics of one valid record, each once: nothing injected.
    names = [line.split("{")[0].split(" ")[0] for line in lines if not line.startswith("#")]
    assert names.count("ldactl_loss_ratio") == 1
    assert len(names) == 10
    assert 'synopsis="lda\\"} 1\\nldactl_loss_ratio{synopsis=\\"x\\"} 0\\n# \\\\"' in text


# -- the last resort ----------------------------------------------------------------------

def test_an_unexpected_error_is_one_line_not_a_traceback(capsys, monkeypatch):
    def broken(args):
        raise ZeroDivisionError("a bug")
    parser = main_module.build_parser()
    monkeypatch.setattr(main_module, "build_parser", lambda: parser)
    parser._subparsers._group_actions[0].choices["plan"].set_defaults(handler=broken)
    code, out, err = run(capsys, "plan", "--counters", "2048")
    assert code == 1 and out == ""
    assert err == ("ldactl plan: error: internal error (ZeroDivisionError: a bug); "
                   "please report it\n")


def test_a_bad_choice_of_compiled_loops_exits_2_naming_it(capsys, monkeypatch):
    """``LDA_LOOPS`` (which compiled loops run: ``host_sw.kernels``) other than auto, c,
    numba or numpy is a usage error naming the variable, not an internal error."""
    monkeypatch.setenv("LDA_LOOPS", "fortran")
    code, out, err = run(capsys, "plan", "--counters", "2048")
    assert code == 2 and out == "", err
    assert err.strip() == ("ldactl plan: error: LDA_LOOPS must be auto, c, numba or numpy, "
                           "not 'fortran'"), err
