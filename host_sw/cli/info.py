# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl info`` and ``ldactl config``: what a device is, and its configuration —
shown, or programmed (thresholds, masks, CONFIG_ID, interval control, OPA's record
frames).

In the host data flow (``docs/DESIGN.md``) these talk to the driver
(:class:`~host_sw.device.driver.Device`) and print what it reports; no estimate.
"""

from __future__ import annotations

import argparse
import json

from host_sw.cli.args import (RunFailure, UsageError, check_output, dump, guard, int_in,
                              key_file, mac_address, threshold_list)
from host_sw.cli.files import write_output
from host_sw.cli.link import add_link_options, open_device
from host_sw.contracts.config import config_class
from host_sw.contracts.frames.frame_format import ROLE_SETTINGS
from host_sw.contracts.opa.records import DEFAULT_LOSSY_SHIFT, RICE_MAX_SHIFT
from host_sw.contracts.siphash import key_to_int
from host_sw.device.driver import INTERVAL_MODES

__all__ = ["add_info_parser", "add_config_parser"]

#: The configuration field holding the run-time sampling thresholds of each kind that
#: has them (``config --thresholds``).
_THRESHOLD_FIELDS = {"lda": "thresholds", "lds": "row_thresholds"}

#: INTERVAL_TICKS and INTERVAL_START are 64-bit registers.
_TICKS = int_in(0, 2 ** 64 - 1)


def add_info_parser(sub) -> None:
    p = sub.add_parser("info", help="show a device's ID, configuration and status",
                       description="Connect, check the ID and show the device.",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_link_options(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=guard(_cmd_info))


def add_config_parser(sub) -> None:
    p = sub.add_parser("config", help="show or program a device's configuration",
                       description="Show the configuration; with --program, --thresholds or "
                                   "--mode, program the device first.",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_link_options(p)
    p.add_argument("--program", action="store_true",
                   help="write the configuration's thresholds, masks and CONFIG_ID")
    p.add_argument("--thresholds", type=threshold_list, default=None, metavar="Z0,Z1,...",
                   help="new per-bank (LDA) / per-row (LDS) thresholds, then program")
    p.add_argument("--mode", default=None, choices=tuple(INTERVAL_MODES),
                   help="interval mode")
    p.add_argument("--interval-ticks", type=_TICKS, default=0, help="interval length, ticks")
    p.add_argument("--interval-start", type=_TICKS, default=0, help="time mode t0, ticks")
    p.add_argument("--export-inband", action="store_true")
    p.add_argument("--export-host", action="store_true")
    p.add_argument("--auto-release", action="store_true")
    p.add_argument("--local-mac", type=mac_address, default=None)
    p.add_argument("--export-dst-mac", type=mac_address, default=None)
    p.add_argument("--marker-src-mac", type=mac_address, default=None)
    p.add_argument("--role", default=None, choices=tuple(ROLE_SETTINGS),
                   help="this point's role, stamped into each interval as it freezes "
                        "(FROZEN_ROLE; auto: sender in marker-sender mode, receiver in "
                        "marker-receiver mode, else none); estimate refuses pairs whose "
                        "roles are not sender and receiver")
    auth = p.add_mutually_exclusive_group()
    auth.add_argument("--auth-key-file", type=key_file, default=None, metavar="FILE",
                      help="authenticated mode: write the key in FILE (32 hex digits) to "
                           "AUTH_KEY and enable AUTH_MODE (markers and exports tagged and "
                           "checked under it)")
    auth.add_argument("--no-auth", action="store_true",
                      help="leave authenticated mode (tags under the zero key)")
    p.add_argument("--records", default=None, choices=("off", "sender", "receiver"),
                   help="OPA: stream this point's per-packet record frames in-band from "
                        "the next interval on (OPA_RECORD_CONTROL)")
    p.add_argument("--record-coding", default="lossless",
                   choices=("lossless", "lossy", "fixed"),
                   help="OPA, with --records: the point's records Rice-coded, "
                        "lossless (default), or lossy (the sender's only: send ticks "
                        "quantised by --record-shift bits), or fixed-width "
                        "(docs/SPEC.md §8.7)")
    p.add_argument("--record-shift", type=int_in(1, RICE_MAX_SHIFT), default=DEFAULT_LOSSY_SHIFT,
                   metavar="S",
                   help="OPA, with --record-coding lossy: every send tick within "
                        f"2**(S-1) ticks (default {DEFAULT_LOSSY_SHIFT})")
    p.add_argument("--records-to", default="stream", choices=("stream", "export"),
                   help="OPA, with --records: where the record frames leave, into the "
                        "measured stream's output (default) or by the host export port "
                        "with the export frames (OPA_RECORD_CONTROL.to_export)")
    p.add_argument("--record-groups", type=int_in(0, 2 ** 24 - 1), default=0, metavar="N",
                   help="OPA, with --records: record groups G < N only, the same at both "
                        "points (0 = every group)")
    p.add_argument("--save", default=None, metavar="FILE", help="write the config as JSON")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=guard(_cmd_config))


def _cmd_info(args) -> int:
    dev = open_device(args, args.device)
    try:
        info = dev.info()
    finally:
        dev.close()
    if args.json:
        dump(info)
        return 0
    print(f"device      {args.device}" + (f", core {args.core}" if args.core else ""))
    print(f"ID          {info['id']}  (register map {info['version']})")
    s = info["static"]
    sums = "ts_sum" in config_class(info["kind"])().layout.names   # LDA/LDS sum ticks
    print(f"synopsis    {info['kind'].upper()} {s['dim0']} × {s['dim1']}, "
          f"{s['count_bits']}-bit counts, {s['ts_bits']}-bit "
          f"{'timestamp sums' if sums else 'timestamps'}, "
          f"{s['chunks']} bus words per counter; data path {info['data_width']} bits")
    print(f"config ID   device {info['config_id_device']}, expected "
          f"{info['config_id_expected']}")
    print(f"interval    seq {info['interval_seq']}, mode {info['interval_mode']}")
    print(f"status      {info['status']}")
    print(f"timebase    {info['timebase']}")
    for k, v in info["counters"].items():
        print(f"  {k:<18} {v}")
    return 0


def _with_thresholds(config, values: tuple[int, ...]):
    """``config`` with the thresholds of ``--thresholds``; thresholds that do not fit the
    device's configuration are a usage error."""
    name = _THRESHOLD_FIELDS.get(config.kind)
    if name is None:
        raise UsageError(f"a {config.kind.upper()} device has no thresholds", "--thresholds")
    try:
        return config.replace(**{name: values})
    except ValueError as e:
        raise UsageError(str(e), "--thresholds") from None


def _check_config_options(args) -> None:
    """What can be checked before the device is opened (exit 2, nothing written)."""
    if args.mode == "time" and args.interval_ticks == 0:
        raise UsageError("time mode needs an interval length (> 0)", "--interval-ticks")
    if args.records == "receiver" and args.record_coding == "lossy":
        raise UsageError("the receiver's arrival ticks are never quantised: its records "
                         "are coded lossless or fixed-width", "--record-coding")


def _set_intervals(dev, args) -> None:
    try:
        dev.set_intervals(mode=args.mode, ticks=args.interval_ticks,
                          start=args.interval_start, export_inband=args.export_inband,
                          export_host=args.export_host, auto_release=args.auto_release,
                          local_mac=args.local_mac, export_dst_mac=args.export_dst_mac,
                          marker_src_mac=args.marker_src_mac)
    except ValueError as e:
        raise RunFailure(str(e)) from None


def _role_name(setting: int) -> str:
    return {v: k for k, v in ROLE_SETTINGS.items()}[setting]


def _set_auth(dev, args) -> None:
    """AUTH_KEY (write-only, not read back) then AUTH_MODE.enable (read back)."""
    if args.auth_key_file is not None:
        dev.write("auth_key", key_to_int(args.auth_key_file), verify=False)
        dev.write("auth_mode", enable=1)
    elif args.no_auth:
        dev.write("auth_mode", enable=0)


def _set_records(dev, args) -> None:
    """OPA_RECORD_CONTROL from ``--records`` / ``--record-coding`` / ``--record-shift`` /
    ``--record-groups`` / ``--records-to`` (OPA cores only)."""
    if args.records is None:
        return
    if "opa_record_control" not in dev.map:
        raise UsageError(f"the device is {dev.config.kind.upper()}: record frames are "
                         "OPA's", "--records")
    coded = args.records in ("sender", "receiver") and args.record_coding != "fixed"
    lossy = coded and args.records == "sender" and args.record_coding == "lossy"
    dev.write("opa_record_control", enable=int(args.records != "off"),
              receiver=int(args.records == "receiver"), rice=int(coded),
              shift=args.record_shift if lossy else 0,
              record_groups=args.record_groups,
              to_export=int(args.records_to == "export"))


def _cmd_config(args) -> int:
    _check_config_options(args)
    check_output(args.save)
    dev = open_device(args, args.device)
    try:
        config = dev.config
        if args.thresholds is not None:
            config = _with_thresholds(config, args.thresholds)
        if args.program or args.thresholds is not None:
            dev.program(config)
        if args.mode is not None:
            _set_intervals(dev, args)
        if args.role is not None:
            dev.write("role", role=ROLE_SETTINGS[args.role])
        _set_auth(dev, args)
        _set_records(dev, args)
        out = {"config": dev.config.to_dict(), "config_id": f"{dev.config.config_id:#010x}",
               "device_config_id": f"{dev.read('config_id'):#010x}",
               "interval_mode": dev.read_fields("interval_mode"),
               "interval_ticks": dev.read("interval_ticks"),
               "role": _role_name(dev.read_fields("role")["role"])}
        if "opa_record_control" in dev.map:
            out["opa_records"] = dev.read_fields("opa_record_control")
    finally:
        dev.close()
    if args.save:
        write_output(args.save, json.dumps(out["config"], indent=2) + "\n")
    if args.json:
        dump(out)
    else:
        for k, v in out["config"].items():
            print(f"{k:<18} {v:#x}" if k.startswith("mask") or k == "seed"
                  else f"{k:<18} {v}")
        print(f"{'config_id':<18} {out['config_id']} (device: {out['device_config_id']})")
        print(f"{'interval_mode':<18} {out['interval_mode']}, ticks {out['interval_ticks']}")
        print(f"{'role':<18} {out['role']}")
        if "opa_records" in out:
            print(f"{'opa_records':<18} {out['opa_records']}")
    return 0
