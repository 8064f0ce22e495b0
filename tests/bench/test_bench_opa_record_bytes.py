# SPDX-License-Identifier: BSD-2-Clause
"""``python -m bench.opa_record_bytes --json`` (issue 25 item 3): one JSON object whose
figures are those of the contract's record frames of the same packets."""

import json

import numpy as np

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.opa.records import RecordReassembler, build_record_frames

from bench.opa_common import make_workload
from bench.opa_record_bytes import main

KEYS = {"sender_bytes_per_packet", "sender_bytes_per_packet_lossy",
        "receiver_bytes_per_packet", "sender_frames_per_packet"}


def test_json_equals_the_contracts_frames(capsys):
    main(["--packets", "3000", "--groups", "64", "--json"])
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    got = json.loads(out)
    assert KEYS <= set(got)
    # the same packets through the contract's builder, counted here independently
    config = OpaConfig(groups=64)
    w = make_workload(packets=3000, seed=1)
    order = np.argsort(w.received.timestamps, kind="stable")
    sent = {"packet": w.sent.packet, "timestamps": w.sent.timestamps, "src_mac": 1,
            "dst_mac": 2, "rice": True}
    sender = build_record_frames(config, "sender", seq=1, **sent)
    lossy = build_record_frames(config, "sender", seq=1, shift=16, **sent)
    arrived = {"packet": w.received.packet[order],
               "timestamps": w.received.timestamps[order], "src_mac": 1, "dst_mac": 2}
    receiver = build_record_frames(config, "receiver", seq=1, rice=True, **arrived)
    receiver_fixed = build_record_frames(config, "receiver", seq=1, **arrived)
    assert got["packets"] == 3000
    assert got["sender_bytes_per_packet"] == sum(map(len, sender)) / 3000
    assert got["receiver_bytes_per_packet"] == sum(map(len, receiver)) / 3000
    assert got["receiver_fixed_bytes_per_packet"] == sum(map(len, receiver_fixed)) / 3000
    assert all(f[16] & 0x06 == 0x06 for f in receiver)            # RECEIVER | CODED
    assert got["receiver_bytes_per_packet"] < 0.8 * got["receiver_fixed_bytes_per_packet"]
    assert got["sender_bytes_per_packet_lossy"] == sum(map(len, lossy)) / 3000
    assert got["sender_frames_per_packet"] == len(lossy) / 3000
    assert got["sender_frames_per_packet_lossless"] == len(sender) / 3000
    assert got["sender_lossy_shift"] == 16 and got["sender_lossy_bound_ticks"] == 32768
    assert got["sender_bytes_per_packet_lossy"] < got["sender_bytes_per_packet"]
    # and those frames carry every packet's record, exactly or within the bound
    for frames, bound in ((sender, 0), (lossy, 32768)):
        r = RecordReassembler(config)
        done = [x for x in (r.add(f) for f in frames) if x is not None]
        assert len(done) == 1
        err = done[0].timestamps - w.sent.timestamps
        assert np.abs(err).max() <= bound and (bound or not err.any())
    r = RecordReassembler(config)
    (done,) = [x for x in (r.add(f) for f in receiver) if x is not None]
    assert np.array_equal(done.keys, arrived["packet"])
    assert np.array_equal(done.timestamps, arrived["timestamps"])
