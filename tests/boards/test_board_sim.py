# SPDX-License-Identifier: BSD-2-Clause
"""Each board top under independent models — cocotbext-eth's RGMII PHYs, cocotbext-uart
on the UART pins — with the real ``ldactl`` on the UART (:mod:`sim_tb.board.board_sim`).

Per board: ``ldactl info`` and ``config --program`` reach every core (both cores of a
two-port board through the router); a traffic phase at line rate with bad-FCS frames
passes the tap unaltered (a bad frame leaves with a bad FCS); ``ldactl read --swap``
returns, per core, the golden model's synopsis of the frames that core saw (timestamps:
each frame's start cycle at the core plus one constant, calibrated from the read) and
status counters that count the bad frames as errored, not measured; on the Versa (both
directions measured, ``--directions both``, port 1 looped back) ``ldactl watch`` pairs
the two cores: no loss.

Minutes of simulation per board on this machine (docs/SIMULATION.md): run with
``LDA_SIM_LONG=1``.
"""

import json
import shutil
import subprocess
import sys

import pytest

from host_sw.contracts.frames.frame_format import IntervalFlags
from host_sw.device.snapshot import Snapshot
from host_sw.model.golden_lda_rda_lds import Hashers

from sim_tb.board.board_sim import BOARDS, BoardSimParams, start_board_sim
from sim_tb.lib.frames import OfferedFrame
from sim_tb.lib.runner import REPO, long_run
from sim_tb.lib.scoreboard import expected_status, expected_synopsis

pytestmark = [
    pytest.mark.cocotb,
    pytest.mark.skipif(not long_run(), reason="minutes per board: LDA_SIM_LONG=1"),
    pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus Verilog missing"),
]

#: The core fed by each port (boards.top), and what it sees in a looped-back phase.
CORE_INPUT = {"port0_to_port1": "sent", "port1_to_port0": "looped", "port0": "sent"}


def ldactl(*args, timeout=1200):
    result = subprocess.run([sys.executable, "-m", "host_sw.cli", *args], cwd=REPO,
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"ldactl {' '.join(args[:1])}: {result.stderr[-2000:]}"
    return result.stdout


def _offered(wire_hex: list[str]) -> list[OfferedFrame]:
    """Frames as they were on the wire (with FCS) → frames the core sees."""
    import zlib
    out = []
    for h in wire_hex:
        raw = bytes.fromhex(h)
        data, fcs = raw[:-4], int.from_bytes(raw[-4:], "little")
        out.append(OfferedFrame(data, error=fcs != zlib.crc32(data)))
    return out


def _check_tap(record, two_port: bool, bad_frames: int):
    """Good frames leave unaltered, bad ones with their payload and a bad FCS."""
    sent = _offered(record["sent"])
    assert sum(f.error for f in sent) == bad_frames
    if not two_port:
        return
    for port, inputs in (("1", record["sent"]), ("0", record["received"]["1"])):
        out = record["received"][port]
        assert len(out) == len(inputs), f"port {port}: {len(out)} of {len(inputs)} frames"
        for a, b in zip(_offered(inputs), _offered(out)):
            assert b.data == a.data and b.error == a.error
        assert [h for h, f in zip(out, _offered(out)) if not f.error] == \
            [h for h, f in zip(inputs, _offered(inputs)) if not f.error]


def _check_snapshot(snap: Snapshot, frames: list[OfferedFrame], sof: list[int]):
    """The device's synopsis is the golden one with timestamp = SOF cycle + a constant."""
    config = snap.config
    hashers = Hashers(config)
    assert len(sof) == len(frames)
    zero = expected_synopsis(config, frames, sof, hashers)
    n = int(zero.count.sum())
    assert n == sum(not f.error for f in frames) and int(snap.synopsis.count.sum()) == n
    diff = int(snap.synopsis.ts_sum.astype(object).sum()) - \
        int(zero.ts_sum.astype(object).sum())
    assert diff % n == 0, "the timestamps are not SOF cycle + one constant"
    expected = expected_synopsis(config, frames, [s + diff // n for s in sof], hashers)
    assert snap.synopsis == expected
    want = expected_status(frames)
    for key in ("frames_seen", "frames_counted", "frames_errored"):
        assert snap.status[key] == want[key], key
    assert snap.packets == n
    # The first interval spans `config --program`: flagged as such, nothing else.
    assert snap.flags == IntervalFlags.CONFIG_CHANGED, snap.notes


@pytest.mark.parametrize("board", sorted(BOARDS))
def test_board_top_under_phy_and_uart_models(board, tmp_path):
    # The Versa with both directions measured (``--directions both``; its default
    # measures one): two cores behind the router, and ``ldactl watch`` between them.
    params = BoardSimParams(board=board, directions=(
        ("port0_to_port1", "port1_to_port0") if board == "versa_ecp5" else None))
    sim = start_board_sim(params, tmp_path / "sim")
    try:
        ports = sim.wait_ports(1200)
        dev = ["--device", ports["url"], "--csr-csv", str(sim.board.csr_csv)]
        cores = ports["cores"]
        for core in cores:
            info = json.loads(ldactl("info", *dev, "--core", core, "--json"))
            config = params.config()
            assert (info["kind"], info["static"]["dim0"], info["static"]["dim1"]) == \
                ("lda", config.banks, config.rows)
            # (the snapshots' validity below needs the programmed CONFIG_ID)
            ldactl("config", *dev, "--core", core, "--program")
        record = sim.run_traffic(0)
        two_port = "1" in record["received"]
        _check_tap(record, two_port, params.bad_frames)
        inputs = {"sent": record["sent"], "looped": record["received"].get("1", [])}
        for core in cores:
            path = tmp_path / f"{core}.json"
            ldactl("read", *dev, "--core", core, "--swap", "-o", str(path))
            snap = Snapshot.from_json(json.loads(path.read_text()))
            _check_snapshot(snap, _offered(inputs[CORE_INPUT[core]]), record["sof"][core])
        if len(cores) == 2:
            sim.run_traffic(1)
            out = ldactl(
                "watch", "--sender", ports["url"], "--receiver", ports["url"],
                "--sender-core", cores[0], "--receiver-core", cores[1],
                "--csr-csv", str(sim.board.csr_csv), "--intervals", "1", "--swap",
                "--period", "0.1", "--json")
            records = [json.loads(line) for line in out.splitlines()
                       if line.startswith("{")]
            assert records and records[-1]["valid"], out
            # Everything core 0 forwarded came back through the loopback to core 1.
            assert records[-1]["estimate"]["lost"] == 0, records[-1]
        assert sim.finish() == 0, sim.log_tail()
    finally:
        sim.stop()
