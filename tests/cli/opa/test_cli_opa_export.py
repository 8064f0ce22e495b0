# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl estimate --synopsis opa`` on export captures: the sender's OPA words (synopsis
chunks) and send records, the receiver's receive records, built by the contract from
the golden model's records of simulated traffic, give the same estimate as the two
packet captures of that traffic; sampling by group, tampered and missing frames and
dropped records give clear errors or invalid intervals, never numbers."""

import json

import numpy as np
import pytest

from host_sw.cli.main import main
from host_sw.contracts.config import OpaConfig
from host_sw.contracts.frames.control_frame import build_synopsis_frames
from host_sw.contracts.opa.records import build_record_frames
from host_sw.estimators.opa.recovery import recover_pair, summary
from host_sw.estimators.opa.run import opa_records
from host_sw.model.channel import Scenario
from host_sw.model.golden_lda_rda_lds import Hashers
from host_sw.model.golden_opa import opa_synopsis
from host_sw.model.pcap import write_pcap

CONFIG = OpaConfig()
S_MAC, R_MAC, HOST = 0x020000000001, 0x020000000002, 0x02000000000f


@pytest.fixture(scope="module")
def traffic():
    sim = Scenario(packets=3000, flows=20, loss=0.002, delay="exponential:mean=2us",
                   seed=7).run()
    (iv,) = sim.intervals
    s, r = opa_records(CONFIG, iv, Hashers(CONFIG))
    return sim, iv, s, r


def _exports(tmp_path, s, r, *, seq=5, groups=0, s_dropped=0, mutate=None, rice=False):
    words = opa_synopsis(CONFIG, s.packet)
    s_frames = build_synopsis_frames(words, seq=seq, src_mac=S_MAC, dst_mac=HOST)
    s_frames += build_record_frames(CONFIG, "sender", seq=seq, packet=s.packet,
                                    timestamps=s.timestamps, src_mac=S_MAC, dst_mac=HOST,
                                    record_groups=groups, dropped=s_dropped, rice=rice)
    r_frames = build_record_frames(CONFIG, "receiver", seq=seq, packet=r.packet,
                                   timestamps=r.timestamps, src_mac=R_MAC, dst_mac=HOST,
                                   record_groups=groups, rice=rice)
    if mutate is not None:
        s_frames, r_frames = mutate(s_frames, r_frames)
    paths = []
    for name, frames in (("s.pcap", s_frames), ("r.pcap", r_frames)):
        write_pcap(tmp_path / name, frames, 10 ** 9 + np.arange(len(frames)))
        paths.append(str(tmp_path / name))
    return paths


def _estimate(capsys, paths, *extra):
    code = main(["estimate", *paths, "--synopsis", "opa", "--json", *extra])
    out = capsys.readouterr()
    return code, [json.loads(x) for x in out.out.splitlines()], out.err


@pytest.mark.parametrize("rice", [False, True], ids=["fixed", "coded"])
def test_export_estimate_equals_packet_captures_and_golden(capsys, tmp_path, traffic, rice):
    """Fixed-width or Rice-coded (lossless) records at both points: the same estimate."""
    sim, iv, s, r = traffic
    code, (rec,), _ = _estimate(capsys, _exports(tmp_path, s, r, rice=rice))
    assert code == 0 and rec["valid"] and rec["interval"] == 5
    # the packet captures of the same traffic
    tr = sim.trace
    write_pcap(tmp_path / "sp.pcap", tr.frames(), tr.timestamps)
    order = np.argsort(iv.receiver.timestamps, kind="stable")
    write_pcap(tmp_path / "rp.pcap", tr.frames(iv.receiver.indices[order]),
               iv.receiver.timestamps[order])
    code, (pcap_rec,), _ = _estimate(capsys, [str(tmp_path / "sp.pcap"),
                                              str(tmp_path / "rp.pcap")])
    assert code == 0
    assert rec["estimate"] == pcap_rec["estimate"]
    golden = summary(recover_pair(opa_synopsis(CONFIG, s.packet), s, r), CONFIG.tick_ns)
    for k in ("p50", "p90", "p99", "p99.9", "max", "lost", "reordered", "samples"):
        assert rec["estimate"][k] == golden[k], k
    assert rec["estimate"]["lost"] == iv.truth.lost
    # the table: the same rows as from the packet captures
    assert main(["estimate", *_exports(tmp_path, s, r, rice=rice), "--synopsis", "opa"]) == 0
    row = capsys.readouterr().out.splitlines()[1].split()
    assert main(["estimate", str(tmp_path / "sp.pcap"), str(tmp_path / "rp.pcap"),
                 "--synopsis", "opa"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[1:] == row[1:]


def test_sampled_groups_recover_the_recorded_groups(capsys, tmp_path, traffic):
    _, _, s, r = traffic
    code, (rec,), _ = _estimate(capsys, _exports(tmp_path, s, r, groups=256))
    assert code == 0 and rec["valid"]
    g = (s.packet >> np.uint64(54)) < 256
    gr = (r.packet >> np.uint64(54)) < 256
    assert rec["estimate"]["sent"] == int(g.sum())
    assert rec["estimate"]["received"] == int(gr.sum())
    assert any(n.startswith("sampled: groups 0..255 of 1024") for n in rec["notes"])


def test_dropped_records_make_the_interval_invalid(capsys, tmp_path, traffic):
    _, _, s, r = traffic
    code, (rec,), _ = _estimate(capsys, _exports(tmp_path, s, r, s_dropped=3))
    assert code == 0 and not rec["valid"] and rec["estimate"] is None
    assert "interval 5: the sender's device dropped 3 records" in rec["notes"][0]


def _flip(frames, i):
    f = bytearray(frames[i])
    f[60] ^= 1
    return frames[:i] + [bytes(f)] + frames[i + 1:]


@pytest.mark.parametrize("mutate, message", [
    (lambda s, r: (s, _flip(r, 2)), "frame 3: OPA record frame of interval 5, chunk 2: the "
                                    "tag does not match"),
    (lambda s, r: (s, r[:3] + r[4:]), "receiver's records of interval 5 are incomplete: "
                                      "chunks [3] missing"),
    (lambda s, r: (s, r[:-1]), "interval 5 are incomplete: no last chunk"),
    (lambda s, r: (s, r[:2] + r[1:]), "interval 5 from 02:00:00:00:00:02: chunk 1 arrived "
                                      "twice"),
    (lambda s, r: (s, r + r[:1]), "interval 5 from 02:00:00:00:00:02: not after interval 5"),
    (lambda s, r: (r, s), "give the sender's export first"),
])
def test_tampered_or_missing_frames_are_errors(capsys, tmp_path, traffic, mutate, message):
    _, _, s, r = traffic
    code, lines, err = _estimate(capsys, _exports(tmp_path, s, r, mutate=mutate))
    assert code == 1 and not lines
    assert err.startswith("ldactl estimate: error:") and message in err, err
