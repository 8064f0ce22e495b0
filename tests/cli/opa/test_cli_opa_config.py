# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl config --records`` / ``--record-groups`` / ``--records-to`` on in-memory devices (fake://): an
OPA device's OPA_RECORD_CONTROL is written and shown; a device of another kind refuses
the option (exit 2, naming it)."""

import json

import pytest

from host_sw.cli import main
from host_sw.contracts.config import LdaConfig, OpaConfig
from host_sw.contracts.synopsis import Synopsis
from host_sw.device.fake_transport import register_fake_device

OPA = OpaConfig(groups=16, rows=4)
LDA = LdaConfig(banks=2, rows=256, thresholds=(0, 5))


@pytest.fixture
def devices(scripted_device):
    register_fake_device("opa", scripted_device(OPA, [Synopsis.empty(OPA)]))
    register_fake_device("lda", scripted_device(LDA, [Synopsis.empty(LDA)]))
    yield
    register_fake_device("opa", None)
    register_fake_device("lda", None)


def test_records_written_and_shown(capsys, devices):
    code = main(["config", "-d", "fake://opa", "--records", "receiver",
                 "--record-groups", "4", "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert json.loads(out)["opa_records"] == {"enable": 1, "receiver": 1, "rice": 1,
                                              "shift": 0, "record_groups": 4,
                                              "to_export": 0}
    assert main(["config", "-d", "fake://opa", "--records", "off"]) == 0
    assert "'enable': 0" in capsys.readouterr().out


@pytest.mark.parametrize("extra, rice, shift", [
    ([], 1, 0), (["--record-coding", "lossy"], 1, 16),
    (["--record-coding", "lossy", "--record-shift", "9"], 1, 9),
    (["--record-coding", "fixed"], 0, 0)])
def test_sender_coding_written(capsys, devices, extra, rice, shift):
    """The sender's records Rice-coded by default, lossy at a stated shift, or fixed."""
    code = main(["config", "-d", "fake://opa", "--records", "sender", "--json"] + extra)
    out = capsys.readouterr().out
    assert code == 0, out
    assert json.loads(out)["opa_records"] == {"enable": 1, "receiver": 0, "rice": rice,
                                              "shift": shift, "record_groups": 0,
                                              "to_export": 0}


@pytest.mark.parametrize("extra, rice", [([], 1), (["--record-coding", "fixed"], 0)])
def test_receiver_coding_written(capsys, devices, extra, rice):
    """The receiver's records Rice-coded (lossless) by default, or fixed-width."""
    code = main(["config", "-d", "fake://opa", "--records", "receiver", "--json"] + extra)
    out = capsys.readouterr().out
    assert code == 0, out
    assert json.loads(out)["opa_records"] == {"enable": 1, "receiver": 1, "rice": rice,
                                              "shift": 0, "record_groups": 0,
                                              "to_export": 0}


@pytest.mark.parametrize("where, bit", [("export", 1), ("stream", 0)])
def test_records_to_written(capsys, devices, where, bit):
    """``--records-to export`` sets OPA_RECORD_CONTROL.to_export, ``stream`` clears it
    (the default, checked above)."""
    code = main(["config", "-d", "fake://opa", "--records", "sender", "--records-to",
                 where, "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert json.loads(out)["opa_records"] == {"enable": 1, "receiver": 0, "rice": 1,
                                              "shift": 0, "record_groups": 0,
                                              "to_export": bit}


@pytest.mark.parametrize("value", ["host", "Export", ""])
def test_records_to_bad_value_is_a_usage_error(capsys, devices, value):
    with pytest.raises(SystemExit) as e:
        main(["config", "-d", "fake://opa", "--records", "sender", "--records-to", value])
    out, err = capsys.readouterr()
    assert e.value.code == 2 and out == ""
    assert "--records-to" in err and "invalid choice" in err


def test_lossy_receiver_refused(capsys, devices):
    with pytest.raises(SystemExit) as e:
        main(["config", "-d", "fake://opa", "--records", "receiver", "--record-coding",
              "lossy"])
    out, err = capsys.readouterr()
    assert e.value.code == 2 and out == ""
    assert "--record-coding" in err and "never quantised" in err


def test_records_refused_by_another_kind(capsys, devices):
    with pytest.raises(SystemExit) as e:
        main(["config", "-d", "fake://lda", "--records", "sender"])
    out, err = capsys.readouterr()
    assert e.value.code == 2 and out == ""
    assert "--records" in err and "LDA" in err
